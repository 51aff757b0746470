//! Model hooks and tools that return directly, wired as LangGraph's
//! `create_react_agent` wires them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::NodeError;
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError, ToolMessage,
};
use stategraph_prebuilt::{
    AgentStateUpdate, AgentStateView, POST_MODEL_HOOK, PRE_MODEL_HOOK, create_react_agent,
};

fn lookup() -> SharedTool {
    Arc::new(FnTool::typed(
        "lookup",
        "Looks up.",
        |_args: Json, _ctx| async move { Ok::<_, ToolError>("found it".to_owned()) },
    ))
}

/// Calls `lookup` on a question, answers after a tool result.
fn model() -> Arc<ScriptedChatModel> {
    Arc::new(ScriptedChatModel::from_fn(|messages| {
        let id = format!("m{}", messages.len());
        match messages.last() {
            Some(Message::Human(_)) => AiMessage::new("").with_tool_calls(vec![
                ToolCall::new("lookup", json!({})).with_id(format!("{id}-c")),
            ]),
            Some(last) => AiMessage::new(format!("answer after: {}", last.text())),
            None => AiMessage::new("?"),
        }
        .with_id(id)
    }))
}

async fn run(agent: &stategraph_graph::CompiledStateGraph, input: Json) -> Json {
    agent
        .invoke(input, &RunnableConfig::default())
        .await
        .unwrap()
        .to_json()
        .unwrap()
}

#[tokio::test]
async fn a_pre_model_hook_chooses_what_the_model_reads() {
    let model = model();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let agent = create_react_agent(model.clone(), [lookup()])
        .pre_model_hook(move |state: AgentStateView| {
            counter.fetch_add(1, Ordering::SeqCst);
            // Only the current turn (from the newest question) goes to the
            // model.
            let from = state
                .messages
                .iter()
                .rposition(|m| matches!(m, Message::Human(_)))
                .unwrap_or(0);
            let turn = state.messages[from..].to_vec();
            async move { Ok::<_, NodeError>(AgentStateUpdate::default().llm_input_messages(turn)) }
        })
        .build()
        .unwrap();
    let out = run(
        &agent,
        json!({"messages": [["user", "old"], ["ai", "before"], ["user", "q"]]}),
    )
    .await;
    // The hook ran before both model calls (the loop comes back through it).
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let calls = model.calls();
    let sizes: Vec<usize> = calls.iter().map(|c| c.messages.len()).collect();
    assert_eq!(
        sizes,
        [1, 3],
        "the turn only: the question, then with the call and its result"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.messages.iter().all(|m| m.text() != "old"))
    );
    assert_eq!(
        out["messages"].as_array().unwrap().len(),
        6,
        "everything stays stored"
    );
    assert_eq!(out["messages"][5]["content"], "answer after: found it");
    let nodes: Vec<String> = agent
        .get_graph(false)
        .nodes()
        .iter()
        .map(|n| n.id.clone())
        .collect();
    assert!(nodes.contains(&PRE_MODEL_HOOK.to_owned()));
}

#[tokio::test]
async fn a_post_model_hook_can_answer_a_call_itself() {
    let model = model();
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    let counted: SharedTool = Arc::new(FnTool::typed(
        "lookup",
        "Looks up.",
        move |_args: Json, _ctx| {
            count.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>("found it".to_owned()) }
        },
    ));
    let agent = create_react_agent(model.clone(), [counted])
        .post_model_hook(|state: AgentStateView| {
            // A guardrail: answer every `lookup` call with a refusal.
            let refusals: Vec<Message> = match state.messages.last() {
                Some(Message::Ai(ai)) => ai
                    .tool_calls
                    .iter()
                    .map(|c| {
                        ToolMessage::new("lookups are disabled", c.id.clone().unwrap_or_default())
                            .into()
                    })
                    .collect(),
                _ => Vec::new(),
            };
            async move { Ok::<_, NodeError>(AgentStateUpdate::default().messages(refusals)) }
        })
        .build()
        .unwrap();
    let out = run(&agent, json!({"messages": [["user", "q"]]})).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the refused call never runs");
    let last = out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "answer after: lookups are disabled");
    let nodes: Vec<String> = agent
        .get_graph(false)
        .nodes()
        .iter()
        .map(|n| n.id.clone())
        .collect();
    assert!(nodes.contains(&POST_MODEL_HOOK.to_owned()));
}

#[tokio::test]
async fn a_tool_that_returns_directly_ends_the_run() {
    let model = model();
    let direct: SharedTool = Arc::new(
        FnTool::typed("lookup", "Looks up.", |_args: Json, _ctx| async move {
            Ok::<_, ToolError>("final from the tool".to_owned())
        })
        .with_return_direct(true),
    );
    let agent = create_react_agent(model.clone(), [direct]).build().unwrap();
    let out = run(&agent, json!({"messages": [["user", "q"]]})).await;
    let last = out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "tool");
    assert_eq!(last["content"], "final from the tool");
    assert_eq!(model.call_count(), 1, "no model call after a direct answer");
}
