//! Golden trace 03, its graph part: a `StateGraph` over `MessagesState`
//! whose `bot` node echoes the last message. `add_messages` gives the input
//! message an id (a fresh UUID, or the one it has) and the reply keeps the
//! `ai-<id>` the node derives from it. The reducer itself is traced in
//! `stategraph-llm`'s `trace_03_add_messages`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompiledStateGraph, MessagesState, MessagesStateUpdate, MessagesStateView, NodeError, START,
    StateGraph,
};
use stategraph_llm::Message;
use support::{assert_trace_ids, fixture};

fn app() -> CompiledStateGraph {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("bot", |state: MessagesStateView| {
        let last = state.messages.last().unwrap();
        let reply = Message::ai(format!("echo:{}", last.text()))
            .with_id(format!("ai-{}", last.id().unwrap_or_default()));
        async move { Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![reply])) }
    })
    .unwrap();
    g.add_edge(START, "bot").unwrap();
    g.compile().unwrap()
}

/// The messages in the trace's encoding (`{"$msg", "content", "id"}`).
async fn invoke(input: Json) -> Json {
    let out = app()
        .invoke(input, &RunnableConfig::default())
        .await
        .unwrap();
    let state: MessagesState = serde_json::from_value(out.to_json().unwrap()).unwrap();
    let messages: Vec<Json> = state
        .messages
        .iter()
        .map(|m| json!({"$msg": m.class_name(), "content": m.text(), "id": m.id()}))
        .collect();
    json!({"messages": messages})
}

#[tokio::test]
async fn trace_03_graph_invoke() {
    let out = invoke(json!({"messages": [["user", "yo"]]})).await;
    assert_trace_ids(&out, &fixture("03_add_messages")["graph_invoke"]);
}

#[tokio::test]
async fn trace_03_graph_invoke_ids() {
    let input = json!({"messages": [{"type": "human", "content": "yo", "id": "u1"}]});
    let out = invoke(input).await;
    assert_eq!(out, fixture("03_add_messages")["graph_invoke_ids"]);
}
