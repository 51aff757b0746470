//! The legal information agent of seed 000 (§6.1): a model calls tools that
//! extract the entities of a legal text (people, organisations, laws,
//! provisions), analyse the provisions it cites, and file the structured
//! result in a long-term knowledge store.
//!
//! What it shows:
//! - `#[inject(state = "knowledge_base")]`: `extract_legal_entities` reads
//!   one key of the graph state (LangGraph's `InjectedState("key")`); the
//!   model never sees that argument.
//! - The store (LangGraph's `InjectedStore`): `structure_legal_information`
//!   writes entities and the case through its `ToolContext`.
//! - A state of its own (messages plus a knowledge base) run by the prebuilt
//!   parts: `ToolNode` (the two analysis calls of one answer run
//!   concurrently) and `tools_condition`.
//!
//! The model is scripted (it reads the conversation and calls the tools in
//! order), so the example runs offline.
//!
//! ```text
//! cargo run -p legal_analysis
//! ```

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use anyhow::ensure;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use stategraph::graph::{CompileOptions, START, State, StateGraph};
use stategraph::llm::{
    AiMessage, ScriptedChatModel, SharedChatModel, SharedTool, ToolCall, ToolContext, ToolError,
};
use stategraph::prelude::*;
use stategraph::store::{ToolContextStore, ns};
use stategraph::tool;

/// The agent's state: the conversation and the knowledge base the entity
/// linker consults.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct LegalState {
    /// The conversation.
    #[state(reducer = stategraph::llm::add_messages)]
    messages: Vec<Message>,
    /// Known entities by type, with their attributes.
    knowledge_base: Json,
}

/// Entity names the scripted recogniser knows, with their types.
const LEXICON: [(&str, &str); 5] = [
    ("Supreme People's Court", "ORGANIZATION"),
    ("Acme Trading Co.", "ORGANIZATION"),
    ("Li Wei", "PERSON"),
    ("Civil Code", "LAW"),
    ("Contract Law", "LAW"),
];

/// Extracts the legal entities of a text and links them to the knowledge
/// base.
#[tool]
async fn extract_legal_entities(
    /// The legal text.
    text: String,
    /// The knowledge base (injected from the state, hidden from the model).
    #[inject(state = "knowledge_base")]
    knowledge_base: Json,
) -> String {
    let mut entities: Vec<Json> = LEXICON
        .iter()
        .filter(|(name, _)| text.contains(name))
        .map(|(name, kind)| {
            let known = &knowledge_base[kind.to_lowercase()][name];
            json!({
                "name": name,
                "type": kind,
                "attributes": known.get("attributes").cloned().unwrap_or_else(|| json!({})),
                "relationships": known.get("relationships").cloned().unwrap_or_else(|| json!([])),
            })
        })
        .collect();
    entities.extend(
        provisions(&text).into_iter().map(
            |p| json!({"name": p, "type": "PROVISION", "attributes": {}, "relationships": []}),
        ),
    );
    json!({"entities": entities}).to_string()
}

/// Analyses the provisions a text cites and whether they apply.
#[tool]
async fn analyze_legal_provisions(
    /// The legal text.
    document_text: String,
) -> String {
    let cited = provisions(&document_text);
    let contractual = document_text.to_lowercase().contains("contract");
    let analysis: Vec<Json> = cited
        .iter()
        .map(|p| {
            json!({"provision": p, "applies": contractual, "reason": if contractual {
                "the dispute is contractual"
            } else {
                "no contractual relationship is described"
            }})
        })
        .collect();
    json!({"provisions": cited, "applicability_analysis": analysis}).to_string()
}

/// Files the structured result in the knowledge store and returns it.
#[tool]
async fn structure_legal_information(
    /// What `extract_legal_entities` returned.
    entities: String,
    /// What `analyze_legal_provisions` returned.
    provisions: String,
    /// The call's context: the graph's store (LangGraph's `InjectedStore`).
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let parse = |name: &str, text: &str| {
        serde_json::from_str::<Json>(text)
            .map_err(|err| ToolError::invalid_args(format!("{name} is not JSON: {err}")))
    };
    let (entities, provisions) = (
        parse("entities", &entities)?,
        parse("provisions", &provisions)?,
    );
    let store = ctx
        .store()
        .ok_or_else(|| ToolError::failed("the agent has no store"))?;
    let list = entities["entities"].as_array().cloned().unwrap_or_default();
    for entity in &list {
        let name = entity["name"].as_str().unwrap_or_default();
        store
            .put(&["legal_kb", "entities"], name, entity.clone())
            .await
            .map_err(ToolError::from_source)?;
    }
    let case_id = format!("case-{}", ctx.tool_call_id.as_deref().unwrap_or("unknown"));
    let document = json!({
        "title": "analysis",
        "entities": list,
        "legal_provisions": provisions["provisions"],
        "applicability": provisions["applicability_analysis"],
    });
    store
        .put(&["legal_kb", "cases"], &case_id, document.clone())
        .await
        .map_err(ToolError::from_source)?;
    Ok(json!({"case_id": case_id, "document": document}).to_string())
}

/// "Article N" citations, in order, without repeats.
fn provisions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        let number: String = pair[1].chars().take_while(char::is_ascii_digit).collect();
        if pair[0] == "Article" && !number.is_empty() {
            let cited = format!("Article {number}");
            if !found.contains(&cited) {
                found.push(cited);
            }
        }
    }
    found
}

/// The scripted model: both analyses at once on a question, the filing once
/// both answered, then a summary. Ids count the conversation, so they are
/// unique in the thread.
fn scripted_model(messages: &[Message]) -> AiMessage {
    let id = format!("legal-ai-{}", messages.len());
    let call = |name: &str, args: Json, i: usize| {
        ToolCall::new(name, args).with_id(format!("{id}-call-{i}"))
    };
    let result_of = |tool: &str| {
        messages.iter().rev().find_map(|m| match m {
            Message::Tool(t) if t.name.as_deref() == Some(tool) => {
                Some(t.content.text().into_owned())
            }
            _ => None,
        })
    };
    let answer = match messages.last() {
        Some(Message::Human(question)) => {
            let text = question.content.text().into_owned();
            AiMessage::new("").with_tool_calls(vec![
                call("extract_legal_entities", json!({"text": text}), 0),
                call(
                    "analyze_legal_provisions",
                    json!({"document_text": text}),
                    1,
                ),
            ])
        }
        Some(Message::Tool(_)) => match result_of("structure_legal_information") {
            Some(filed) => {
                let filed: Json = serde_json::from_str(&filed).unwrap_or_default();
                AiMessage::new(format!(
                    "Filed as {}: {} entities, provisions {}.",
                    filed["case_id"].as_str().unwrap_or("?"),
                    filed["document"]["entities"].as_array().map_or(0, Vec::len),
                    filed["document"]["legal_provisions"]
                ))
            }
            None => AiMessage::new("").with_tool_calls(vec![call(
                "structure_legal_information",
                json!({
                    "entities": result_of("extract_legal_entities").unwrap_or_default(),
                    "provisions": result_of("analyze_legal_provisions").unwrap_or_default(),
                }),
                0,
            )]),
        },
        _ => AiMessage::new("Send me a legal text to analyse."),
    };
    answer.with_id(id)
}

fn agent(store: InMemoryStore) -> anyhow::Result<CompiledStateGraph> {
    let tools: Vec<SharedTool> = vec![
        Arc::new(ExtractLegalEntitiesTool),
        Arc::new(AnalyzeLegalProvisionsTool),
        Arc::new(StructureLegalInformationTool),
    ];
    let tool_node = ToolNode::new(tools);
    let schemas = tool_node.tools().iter().map(|tool| tool.dyn_schema());
    let model: SharedChatModel = ScriptedChatModel::from_fn(scripted_model)
        .bind_tools(schemas)
        .into_shared();
    let prompt = Message::system(
        "You are a legal analysis assistant: identify entities, analyse the provisions cited, \
         and file structured results. Use the tools.",
    );

    let mut graph = StateGraph::typed::<LegalState>();
    graph.add_node("agent", move |state: LegalStateView| {
        let model = model.clone();
        let mut messages = vec![prompt.clone()];
        messages.extend(state.messages.iter().cloned());
        async move {
            let answer = model.invoke(&messages, &CallOptions::default()).await?;
            Ok::<_, NodeError>(LegalStateUpdate::default().messages(vec![answer.into()]))
        }
    })?;
    graph.add_node("tools", tool_node)?;
    graph.add_edge(START, "agent")?;
    graph.add_conditional_edges(
        "agent",
        |state: &LegalStateView| tools_condition(&state.messages),
        None,
    )?;
    graph.add_edge("tools", "agent")?;
    Ok(graph.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .store(store)
            .name("LegalAnalysisAgent"),
    )?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let store = InMemoryStore::new();
    let app = agent(store.clone())?;
    let text = "Acme Trading Co. sued Li Wei before the Supreme People's Court for breach of \
                contract, citing Article 577 and Article 584 of the Civil Code.";
    let input = LegalState {
        messages: vec![Message::human(text)],
        knowledge_base: json!({
            "organization": {"Supreme People's Court": {"attributes": {"level": "national"}}},
            "law": {"Civil Code": {"attributes": {"enacted": "2020"}, "relationships": ["replaces Contract Law"]}},
        }),
    };
    let out = app
        .invoke(Value::new(input), &RunnableConfig::thread("case-1"))
        .await?;
    let out: LegalState = serde_json::from_value(out.to_json()?)?;
    for message in &out.messages[1..] {
        match message {
            Message::Ai(ai) if !ai.tool_calls.is_empty() => {
                let names: Vec<&str> = ai.tool_calls.iter().map(|c| c.name.as_str()).collect();
                println!("agent calls {names:?}");
            }
            Message::Tool(result) => println!(
                "  {} -> {} bytes",
                result.name.as_deref().unwrap_or("tool"),
                result.content.text().len()
            ),
            other => println!("agent: {}", other.text()),
        }
    }

    let entities = store
        .search(SearchOp::new(ns(["legal_kb", "entities"])))
        .await?;
    let mut names: Vec<&str> = entities.iter().map(|e| e.item.key.as_str()).collect();
    names.sort_unstable();
    println!("knowledge store entities: {names:?}");
    ensure!(
        names
            == [
                "Acme Trading Co.",
                "Article 577",
                "Article 584",
                "Civil Code",
                "Li Wei",
                "Supreme People's Court"
            ],
        "unexpected entities {names:?}"
    );
    let civil_code = entities.iter().find(|e| e.item.key == "Civil Code");
    ensure!(
        civil_code.is_some_and(|e| e.item.value["attributes"]["enacted"] == json!("2020")),
        "the Civil Code was not linked to the knowledge base"
    );
    let cases = store
        .search(SearchOp::new(ns(["legal_kb", "cases"])))
        .await?;
    ensure!(cases.len() == 1, "one case filed, found {}", cases.len());
    let last = out
        .messages
        .last()
        .map(|m| m.text().into_owned())
        .unwrap_or_default();
    ensure!(
        last.starts_with("Filed as case-"),
        "unexpected answer {last:?}"
    );
    Ok(())
}
