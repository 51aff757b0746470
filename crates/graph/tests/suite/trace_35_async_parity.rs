//! Golden trace 35: async API parity. Our API is async only; the case's
//! observations (interrupt and resume, the `updates` and `custom` streams of
//! an async node, `update_state` as a node, the history's length, `invoke`
//! on a new thread) are what the async calls give. Every observation is
//! ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{InMemorySaver, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, NodeError, START, Schema, StateGraph, StreamMode, TaskContext,
};
use support::{assert_trace_ids, fixture, py_interrupts, snapshot_json, stream_ok};

#[tokio::test]
async fn trace_35_async_parity() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("a", |_s: Json, ctx: TaskContext| async move {
        ctx.write_custom("from-a");
        tokio::task::yield_now().await;
        Ok::<_, NodeError>(json!({"log": ["a"]}))
    })
    .unwrap();
    g.add_node("b", |_s: Json, ctx: TaskContext| async move {
        let answer = ctx.interrupt("b?")?.to_json()?;
        let answer = answer.as_str().unwrap_or_default().to_owned();
        Ok::<_, NodeError>(json!({"log": [format!("b={answer}")]}))
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();

    let cfg = RunnableConfig::thread("async");
    let run1 = support::stream(
        &app,
        json!({"log": []}),
        &cfg,
        StreamMode::Updates | StreamMode::Custom,
    )
    .await;
    let state1 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let resume = Command::new().resume(Value::from_json(json!("yes")));
    let run2 = stream_ok(&app, resume, &cfg, StreamMode::Updates).await;
    app.update_state(
        &cfg,
        Some(Value::from_json(json!({"log": ["patched"]}))),
        Some("b"),
    )
    .await
    .unwrap();
    let state2 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let history_len = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap()
        .len();
    let fresh = app
        .invoke(json!({"log": []}), &RunnableConfig::thread("async2"))
        .await
        .unwrap();

    let actual = json!({
        "run1": py_interrupts(&run1.tagged()),
        "state1": state1,
        "run2": run2.payloads(),
        "state2": state2,
        "history_len": history_len,
        "ainvoke_new_thread": py_interrupts(&fresh.to_json().unwrap()),
    });
    let mut recorded = fixture("35_async_parity");
    let recorded = recorded.as_object_mut().unwrap();
    recorded.remove("case");
    recorded.remove("langgraph_version");
    assert_trace_ids(&actual, &Json::Object(recorded.clone()));
}
