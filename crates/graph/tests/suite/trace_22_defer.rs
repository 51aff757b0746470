//! Golden trace 22: `defer=True`. A deferred join node runs only when the
//! graph would otherwise finish, so it sees the results of branches of
//! different lengths and runs once; without `defer` it runs early and twice.
//!
//! Every observation of the case is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompiledStateGraph, END, NodeError, NodeSpec, START, Schema, StateGraph, StreamMode,
};
use support::{assert_steps_eq, assert_trace, fixture, invoke, stream_ok};

fn expected(kind: &str, key: &str) -> Json {
    fixture("22_defer")[kind][key].clone()
}

/// The case's `mk(name, delay)`.
fn mk(name: &'static str, delay_ms: u64) -> NodeSpec {
    NodeSpec::new(move |s: Json| async move {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        let seen = s["log"].as_array().unwrap().len();
        Ok::<_, NodeError>(json!({"log": [format!("{name}(saw {seen})")]}))
    })
}

fn build(defer: bool) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("fan", mk("fan", 0)).unwrap();
    g.add_node_spec("short", mk("short", 0)).unwrap();
    g.add_node_spec("long1", mk("long1", 50)).unwrap();
    g.add_node_spec("long2", mk("long2", 0)).unwrap();
    let final_node = mk("final", 100);
    g.add_node_spec(
        "final",
        if defer {
            final_node.defer()
        } else {
            final_node
        },
    )
    .unwrap();
    g.add_edge(START, "fan").unwrap();
    g.add_edge("fan", "short").unwrap();
    g.add_edge("fan", "long1").unwrap();
    g.add_edge("long1", "long2").unwrap();
    g.add_edge("short", "final").unwrap();
    g.add_edge("long2", "final").unwrap();
    g.add_edge("final", END).unwrap();
    g.compile().unwrap()
}

async fn check_updates(defer: bool, kind: &str) {
    let streamed = stream_ok(
        &build(defer),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_steps_eq(&streamed.by_step(), &expected(kind, "updates"));
}

async fn check_final(defer: bool, kind: &str) {
    let out = invoke(
        &build(defer),
        json!({"log": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected(kind, "final"));
}

#[tokio::test]
async fn trace_22_defer_updates() {
    check_updates(true, "defer").await;
}

#[tokio::test]
async fn trace_22_defer_final() {
    check_final(true, "defer").await;
}

#[tokio::test]
async fn trace_22_no_defer_updates() {
    check_updates(false, "no_defer").await;
}

#[tokio::test]
async fn trace_22_no_defer_final() {
    check_final(false, "no_defer").await;
}
