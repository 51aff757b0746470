//! Golden trace 27: `create_react_agent` with a scripted
//! tool-calling model (`_fake_model.ScriptedToolModel`: on a human message
//! it calls every planned tool at once; on tool results it answers with
//! them joined) and two tools called in one turn. The agent's updates, what
//! the model saw (the prompt first, never stored), the graph's nodes, and a
//! call to a tool that does not exist.
//!
//! Both versions are ported: `v1` (one tools task) and `v2` (one `Send` per
//! call, the default), and `interrupt_before: ["tools"]` with a
//! checkpointer (two pending tool tasks, resumed with no input).
//! The Mermaid drawing is compared too (the tools node lists its tools).

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompiledStateGraph, StreamMode};
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{AgentVersion, create_react_agent};

fn fixture() -> Json {
    let path = format!(
        "{}/../../fixtures/traces/27_react_agent.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn add() -> SharedTool {
    Arc::new(FnTool::typed(
        "add",
        "Add two integers.",
        |args: Json, _ctx| async move {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            Ok::<_, ToolError>(sum.to_string())
        },
    ))
}

fn shout() -> SharedTool {
    Arc::new(FnTool::typed(
        "shout",
        "Upper-case a text.",
        |args: Json, _ctx| async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            Ok::<_, ToolError>(args["text"].as_str().unwrap_or_default().to_uppercase())
        },
    ))
}

/// The case's `ScriptedToolModel`, recording the classes of the messages
/// each call saw.
fn scripted(
    plan: Vec<(&'static str, Json)>,
    seen: Arc<Mutex<Vec<Vec<String>>>>,
) -> ScriptedChatModel {
    ScriptedChatModel::from_fn(move |messages| {
        seen.lock()
            .unwrap()
            .push(messages.iter().map(|m| m.class_name().to_owned()).collect());
        let count = |class: &str| messages.iter().filter(|m| m.class_name() == class).count();
        let id = format!("ai-{}-{}", count("AIMessage"), count("ToolMessage"));
        match messages.last() {
            Some(Message::Tool(_)) => {
                let results: Vec<String> = messages
                    .iter()
                    .filter(|m| m.class_name() == "ToolMessage")
                    .map(|m| m.text().into_owned())
                    .collect();
                AiMessage::new(format!("final: {}", results.join(" | "))).with_id(id)
            }
            _ => {
                let calls = plan
                    .iter()
                    .enumerate()
                    .map(|(i, (name, args))| {
                        ToolCall::new(*name, args.clone()).with_id(format!("call-{i}"))
                    })
                    .collect();
                AiMessage::new("").with_tool_calls(calls).with_id(id)
            }
        }
    })
}

/// A message as `(class, content, id or name, tool calls)` for comparison,
/// from our message or from the trace's `$msg` form. Tool messages are
/// named by their tool and call, since their ids are fresh uuids.
fn summary_of_json(message: &Json) -> Json {
    let class = message["$msg"].as_str().unwrap_or_default();
    let who = if class == "ToolMessage" {
        json!([message["name"], message["tool_call_id"]])
    } else {
        message["id"].clone()
    };
    let calls: Vec<Json> = message["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| json!([c["name"], c["args"], c["id"]]))
                .collect()
        })
        .unwrap_or_default();
    json!([class, message["content"], who, calls])
}

fn summary(message: &Message) -> Json {
    let mut encoded = serde_json::to_value(message).unwrap();
    encoded["$msg"] = json!(message.class_name());
    summary_of_json(&encoded)
}

fn input() -> Json {
    json!({"messages": [{"type": "human", "content": "do both", "id": "h-1"}]})
}

async fn updates(
    agent: &CompiledStateGraph,
    input: impl Into<stategraph_pregel::Input>,
    config: &RunnableConfig,
) -> Vec<Json> {
    use futures::StreamExt;
    agent
        .stream(input, config, StreamMode::Updates)
        .map(|chunk| {
            let chunk = chunk.unwrap().to_json();
            let (node, update) = chunk.as_object().unwrap().iter().next().unwrap();
            if node == "__interrupt__" {
                return json!({ node: update });
            }
            let messages: Vec<Json> = update["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let message: Message = serde_json::from_value(m.clone()).unwrap();
                    summary(&message)
                })
                .collect();
            json!({ node: messages })
        })
        .collect()
        .await
}

fn recorded_updates(recorded: &Json) -> Vec<Json> {
    recorded
        .as_array()
        .unwrap()
        .iter()
        .map(|chunk| {
            let (node, update) = chunk.as_object().unwrap().iter().next().unwrap();
            let messages: Vec<Json> = update["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(summary_of_json)
                .collect();
            json!({ node: messages })
        })
        .collect()
}

fn plan() -> Vec<(&'static str, Json)> {
    vec![
        ("add", json!({"a": 2, "b": 3})),
        ("shout", json!({"text": "hey"})),
    ]
}

#[tokio::test]
async fn trace_27_v1_and_v2_agent_loops() {
    for (version, key) in [(AgentVersion::V1, "v1"), (AgentVersion::V2, "v2")] {
        let expected = &fixture()[key];
        let seen = Arc::new(Mutex::new(Vec::new()));
        let agent = create_react_agent(scripted(plan(), seen.clone()), [add(), shout()])
            .prompt("be terse")
            .version(version)
            .build()
            .unwrap();
        let ours = updates(&agent, input(), &RunnableConfig::default()).await;
        assert_eq!(ours, recorded_updates(&expected["updates"]), "{key}");
        assert_eq!(json!(*seen.lock().unwrap()), expected["model_saw"], "{key}");
        let mut nodes: Vec<String> = agent
            .get_graph(false)
            .nodes()
            .iter()
            .map(|node| node.id.clone())
            .collect();
        nodes.sort();
        assert_eq!(json!(nodes), expected["nodes"], "{key}");
        assert_eq!(
            json!(agent.get_graph(false).draw_mermaid()),
            expected["mermaid"],
            "{key}"
        );
    }
}

/// Also through a saver that stores JSON, so the pending `Send`s of the v2
/// tool calls come back from their serialized form.
#[tokio::test]
async fn trace_27_interrupt_before_tools() {
    use stategraph_checkpoint::InMemorySaver;
    use stategraph_checkpoint::serde::JsonSerializer;
    use stategraph_graph::CompileOptions;

    let expected = &fixture()["interrupt_before_tools"];
    for saver in [
        InMemorySaver::new(),
        InMemorySaver::with_serializer(JsonSerializer),
    ] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let agent = create_react_agent(scripted(plan(), seen), [add(), shout()])
            .compile_options(
                CompileOptions::new()
                    .checkpointer(saver)
                    .interrupt_before(["tools"]),
            )
            .build()
            .unwrap();
        let config = RunnableConfig::thread("hitl");
        let run1 = updates(&agent, input(), &config).await;
        let recorded = expected["run1"].as_array().unwrap();
        assert_eq!(run1[..1], recorded_updates(&json!(recorded[..1])));
        assert_eq!(run1[1], json!({"__interrupt__": []}));
        let state = agent.get_state(&config).await.unwrap();
        assert_eq!(json!(state.next), expected["state"]["next"]);
        let run2 = updates(&agent, stategraph_pregel::Input::Resume, &config).await;
        assert_eq!(run2, recorded_updates(&expected["run2"]));
    }
}

#[tokio::test]
async fn trace_27_unknown_tool() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = create_react_agent(scripted(vec![("missing_tool", json!({}))], seen), [add()])
        .build()
        .unwrap();
    let out = agent
        .invoke(input(), &RunnableConfig::default())
        .await
        .unwrap();
    let messages: Vec<Message> =
        serde_json::from_value(out.to_json().unwrap()["messages"].clone()).unwrap();
    let ours: Vec<Json> = messages.iter().map(summary).collect();
    let recorded: Vec<Json> = fixture()["unknown_tool"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(summary_of_json)
        .collect();
    assert_eq!(ours, recorded);
}

/// With too few steps left for tools and another model call, the agent
/// answers LangGraph's "need more steps" instead of calling tools.
#[tokio::test]
async fn out_of_steps_the_agent_says_so() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = create_react_agent(
        scripted(vec![("add", json!({"a": 1, "b": 1}))], seen),
        [add()],
    )
    .build()
    .unwrap();
    let mut config = RunnableConfig::default();
    config.recursion_limit = Some(2);
    let out = agent.invoke(input(), &config).await.unwrap();
    let messages: Vec<Message> =
        serde_json::from_value(out.to_json().unwrap()["messages"].clone()).unwrap();
    assert_eq!(
        messages.last().unwrap().text(),
        stategraph_prebuilt::NEED_MORE_STEPS
    );
    assert!(messages.last().unwrap().tool_calls().is_empty());
}
