//! The Server API's fixture graphs (`shared/server/fixture/graph.py`:
//! `hitl`, `parent`, `boom`) on the runtime, compared with what LangGraph
//! 1.2.22's library streams for them (`fixtures/fidelity/record/
//! server_fixtures.py`): the chunks a server's events will carry. Checked
//! on the way: a resumed run's first `values` chunk is the interrupted
//! state, and an unset messages key shows as `[]`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, MessageEvent, NodeError, RunOptions, START, State,
    StateGraph, StreamChunk, StreamMode, StreamedMessage, TaskContext,
};
use stategraph_llm::{AiMessage, CallOptions, ChatModel, FakeStreamingModel, Message};
use stategraph_store::{InMemoryStore, Store};

use crate::support;

/// The fixtures' state: `messages` merged with `add_messages`, `count`
/// and `approved` set by nodes.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fixture {
    #[state(reducer = stategraph_llm::add_messages)]
    messages: Vec<Message>,
    count: Option<i64>,
    approved: Option<String>,
}

/// `START -> agent -> review -> finish`: the agent streams a fake model's
/// answer and writes a custom chunk, review asks for approval, finish
/// puts the answer in the store.
fn hitl() -> CompiledStateGraph {
    let mut graph = StateGraph::typed::<Fixture>();
    graph
        .add_node("agent", |state: Fixture, ctx: TaskContext| async move {
            ctx.write_custom(json!({"progress": "agent-start"}));
            let model = FakeStreamingModel::new([AiMessage::new("Hello from the fake model")]);
            let reply = model
                .invoke(&state.messages, &CallOptions::default())
                .await?;
            let count = state.count.unwrap_or(0) + 1;
            Ok::<_, NodeError>(
                FixtureUpdate::default()
                    .messages(vec![reply.into()])
                    .count(Some(count)),
            )
        })
        .unwrap();
    graph
        .add_node("review", |state: Fixture, ctx: TaskContext| async move {
            let count = state.count.unwrap_or(0);
            let answer = ctx.interrupt(json!({"question": "approve?", "count": count}))?;
            let answer = answer.to_json()?;
            let answer = answer
                .as_str()
                .map_or_else(|| answer.to_string(), str::to_owned);
            Ok::<_, NodeError>(FixtureUpdate::default().approved(Some(answer)))
        })
        .unwrap();
    graph
        .add_node("finish", |state: Fixture, ctx: TaskContext| async move {
            let store = ctx.store().unwrap();
            store
                .put(
                    &["memories", "demo"],
                    "last",
                    json!({"approved": state.approved}),
                )
                .await
                .map_err(|err| NodeError::new("StoreError", err.to_string()))?;
            Ok::<_, NodeError>(FixtureUpdate::default().count(Some(state.count.unwrap_or(0) + 100)))
        })
        .unwrap();
    graph.add_edge(START, "agent").unwrap();
    graph.add_edge("agent", "review").unwrap();
    graph.add_edge("review", "finish").unwrap();
    graph
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .store(InMemoryStore::new()),
        )
        .unwrap()
}

/// `START -> child`, a subgraph adding 10 to `count`.
fn parent() -> CompiledStateGraph {
    let mut inner = StateGraph::typed::<Fixture>();
    inner
        .add_node("inner", |state: Fixture| async move {
            Ok::<_, NodeError>(FixtureUpdate::default().count(Some(state.count.unwrap_or(0) + 10)))
        })
        .unwrap();
    inner.add_edge(START, "inner").unwrap();
    let mut graph = StateGraph::typed::<Fixture>();
    graph.add_node("child", inner.compile().unwrap()).unwrap();
    graph.add_edge(START, "child").unwrap();
    graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// `START -> explode`, which fails.
fn boom() -> CompiledStateGraph {
    let mut graph = StateGraph::typed::<Fixture>();
    graph
        .add_node("explode", |_: Json| async {
            Err::<Json, _>(NodeError::new(
                "ValueError",
                "boom: intentional failure for the error-event transcript",
            ))
        })
        .unwrap();
    graph.add_edge(START, "explode").unwrap();
    graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// A message as the recorder shows it; a model's ids made stable.
fn message_json(message: &Json) -> Json {
    let mut out = json!({
        "type": message["type"],
        "content": message["content"],
        "id": message["id"],
    });
    if out["type"] == "ai" {
        out["id"] = json!("<model-id>");
    }
    out
}

/// Messages inside a chunk's data (state values or an update) as the
/// recorder shows them, interrupts by the value they ask for.
fn plain(value: Json) -> Json {
    match value {
        Json::Object(map) => map
            .into_iter()
            .map(|(key, value)| {
                let value = match (key.as_str(), value) {
                    ("messages", Json::Array(items)) => items.iter().map(message_json).collect(),
                    ("__interrupt__", Json::Array(items)) => items
                        .iter()
                        .map(|i| json!({"interrupt": i["value"]}))
                        .collect(),
                    (_, value) => plain(value),
                };
                (key, value)
            })
            .collect(),
        other => other,
    }
}

fn chunk_json(chunk: StreamChunk) -> Json {
    let namespace: Vec<String> = chunk
        .namespace
        .iter()
        .map(|segment| segment.split(':').next().unwrap_or_default().to_owned())
        .collect();
    if chunk.mode == StreamMode::Messages {
        let event = chunk.data.downcast_ref::<MessageEvent>().unwrap();
        let message = match &event.message {
            StreamedMessage::Chunk(chunk) => {
                json!({"type": "AIMessageChunk", "content": chunk.content.text(), "id": "<id>"})
            }
            StreamedMessage::Message(message) => {
                message_json(&serde_json::to_value(message).unwrap())
            }
            other => panic!("a message event of another kind: {other:?}"),
        };
        let data = json!({"message": message, "node": event.metadata["langgraph_node"]});
        return json!([namespace, "messages", data]);
    }
    json!([namespace, chunk.mode.as_str(), plain(chunk.to_json())])
}

async fn stream(
    app: &CompiledStateGraph,
    input: impl Into<stategraph_pregel::Input>,
    config: &RunnableConfig,
    modes: stategraph_graph::StreamModes,
    subgraphs: bool,
) -> Json {
    let options = RunOptions::new().subgraphs(subgraphs);
    let chunks: Vec<Json> = app
        .stream_with(input, config, modes, options)
        .map(|chunk| chunk_json(chunk.unwrap()))
        .collect()
        .await;
    json!(chunks)
}

#[tokio::test]
async fn hitl_streams_to_its_interrupt_and_resumes() {
    let expected = support::fidelity("server_fixtures");
    let app = hitl();
    let config = RunnableConfig::thread("hitl");
    let modes =
        StreamMode::Values | StreamMode::Updates | StreamMode::Custom | StreamMode::Messages;
    let input = json!({"messages": [{"type": "human", "content": "hi", "id": "h1"}]});
    assert_eq!(
        stream(&app, input, &config, modes, false).await,
        expected["hitl_first"]
    );
    let state = app.get_state(&config).await.unwrap();
    let asked: Vec<Json> = state
        .interrupts
        .iter()
        .map(|i| i.value.to_json().unwrap())
        .collect();
    assert_eq!(json!(asked), expected["hitl_state"]["interrupts"]);
    assert_eq!(json!(state.next), expected["hitl_state"]["next"]);
    assert_eq!(
        plain(state.values.to_json().unwrap()),
        expected["hitl_state"]["values"]
    );
    let resume = Command::new().resume(Value::from_json(json!("yes")));
    assert_eq!(
        stream(&app, resume, &config, modes, false).await,
        expected["hitl_resumed"]
    );
}

#[tokio::test]
async fn parent_streams_its_subgraph_namespaced() {
    let expected = support::fidelity("server_fixtures");
    let modes = StreamMode::Values | StreamMode::Updates;
    let found = stream(
        &parent(),
        json!({"count": 1}),
        &RunnableConfig::thread("p"),
        modes,
        true,
    )
    .await;
    assert_eq!(found, expected["parent_subgraphs"]);
}

#[tokio::test]
async fn boom_fails_with_its_error() {
    let expected = support::fidelity("server_fixtures");
    let err = boom()
        .invoke(json!({"count": 0}), &RunnableConfig::thread("b"))
        .await
        .unwrap_err();
    let stategraph_pregel::PregelError::Node { error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        json!({"error": error.class(), "message": error.message()}),
        expected["boom"]
    );
}
