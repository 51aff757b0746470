//! Golden trace 14: `update_state`. Writes go through the reducers; `as_node`
//! decides which edges fire next; without it the node that ran last is
//! inferred; updating at a breakpoint then resuming; an update on a fresh
//! thread; an unknown `as_node`; `update_state(None, as_node)`;
//! `bulk_update_state`; `source: update` in the metadata. Every observation
//! is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointConfig, InMemorySaver};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, NodeError, START, Schema, StateGraph, StateUpdate,
    StreamMode,
};
use stategraph_pregel::Input;
use support::{assert_trace_ids, catch, fixture, log_history, snapshot_json, stream_ok};

fn expected(key: &str) -> Json {
    fixture("14_update_state")[key].clone()
}

fn app() -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log").last_value("note"));
    for n in ["a", "b", "c"] {
        g.add_node(n, move |_s: Json| async move {
            Ok::<_, NodeError>(json!({"log": [n]}))
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "c").unwrap();
    g.add_edge("c", END).unwrap();
    g.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .interrupt_before(["b"]),
    )
    .unwrap()
}

fn config_json(config: &CheckpointConfig) -> Json {
    json!({"configurable": {
        "thread_id": config.thread_id,
        "checkpoint_ns": config.checkpoint_ns,
        "checkpoint_id": config.checkpoint_id.as_ref().map(ToString::to_string),
    }})
}

fn values(v: Json) -> Option<Value> {
    Some(Value::from_json(v))
}

#[tokio::test]
async fn trace_14_inferred_update_at_a_breakpoint() {
    let app = app();
    let cfg = RunnableConfig::thread("u1");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let new_cfg = app
        .update_state(
            &cfg,
            values(json!({"log": ["patched"], "note": "n1"})),
            None,
        )
        .await
        .unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    // Compared together: the returned config names the new checkpoint.
    assert_trace_ids(
        &json!({"update_returns_config": config_json(&new_cfg), "after_update_state": state}),
        &json!({
            "update_returns_config": expected("update_returns_config"),
            "after_update_state": expected("after_update_state"),
        }),
    );
    let resumed = stream_ok(&app, Input::Resume, &cfg, StreamMode::Updates).await;
    assert_eq!(resumed.payloads(), expected("resume_updates"));
    let last = app.get_state(&cfg).await.unwrap().values.to_json().unwrap();
    assert_eq!(last, expected("final1"));
}

#[tokio::test]
async fn trace_14_as_node_decides_what_runs_next() {
    let app = app();
    let cfg = RunnableConfig::thread("u2");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    app.update_state(&cfg, values(json!({"log": ["as-b"]})), Some("b"))
        .await
        .unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&state, &expected("as_b_state"));
    let resumed = stream_ok(&app, Input::Resume, &cfg, StreamMode::Updates).await;
    assert_eq!(resumed.payloads(), expected("as_b_resume"));
    assert_eq!(log_history(&app, &cfg).await, expected("as_b_history"));

    let bad = app
        .update_state(&cfg, values(json!({"log": ["x"]})), Some("zzz"))
        .await
        .map(|_| Value::null());
    assert_eq!(catch(bad), expected("bad_as_node"));
}

#[tokio::test]
async fn trace_14_fresh_thread_and_none_values() {
    let app = app();
    let cfg = RunnableConfig::thread("u3");
    app.update_state(&cfg, values(json!({"log": ["seed"]})), Some("a"))
        .await
        .unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&state, &expected("fresh_thread_state"));
    let run = stream_ok(&app, Input::Resume, &cfg, StreamMode::Updates).await;
    assert_eq!(run.payloads(), expected("fresh_thread_run"));

    let cfg = RunnableConfig::thread("u5");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    app.update_state(&cfg, None, Some("b")).await.unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&state, &expected("none_values_state"));
}

#[tokio::test]
async fn trace_14_bulk_update_state() {
    let app = app();
    let cfg = RunnableConfig::thread("u6");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    app.bulk_update_state(
        &cfg,
        vec![
            vec![StateUpdate::new(Value::from_json(json!({"log": ["bulk1"]}))).as_node("b")],
            vec![StateUpdate::new(Value::from_json(json!({"log": ["bulk2"]}))).as_node("c")],
        ],
    )
    .await
    .unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&state, &expected("bulk_state"));
    assert_eq!(log_history(&app, &cfg).await, expected("bulk_history"));
}

#[tokio::test]
async fn update_state_errors_are_typed() {
    let app = app();
    let cfg = RunnableConfig::thread("u7");
    let err = app.bulk_update_state(&cfg, vec![]).await.unwrap_err();
    assert_eq!(err.to_string(), "No supersteps provided");
    let err = app.bulk_update_state(&cfg, vec![vec![]]).await.unwrap_err();
    assert_eq!(err.to_string(), "No updates provided");
    let two = vec![vec![StateUpdate::none(), StateUpdate::none()]];
    let err = app.bulk_update_state(&cfg, two).await.unwrap_err();
    assert!(err.to_string().contains("as_node is required"), "{err}");
    // A thread with no checkpoint has nothing to copy.
    let err = app
        .update_state(&cfg, None, Some("__copy__"))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Cannot copy a non-existent checkpoint");
    let plain = {
        let mut g = StateGraph::new(Schema::new().append("log"));
        g.add_node("a", |_s: Json| async { Ok::<_, NodeError>(json!({})) })
            .unwrap();
        g.add_edge(START, "a").unwrap();
        g.compile().unwrap()
    };
    let err = plain.update_state(&cfg, None, Some("a")).await.unwrap_err();
    assert_eq!(err.to_string(), "No checkpointer set");
}
