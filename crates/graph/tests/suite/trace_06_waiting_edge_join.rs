//! Golden trace 06: a waiting edge `add_edge([a, b2], c)` runs `c` once, after
//! both sources finished (in different supersteps); two plain edges `a -> c`
//! and `b2 -> c` run `c` once per superstep in which a source finished.
//! Also the triggers each task's `debug` event names. Every observation is
//! ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompiledStateGraph, END, NodeError, START, Schema, StateGraph, StreamMode};
use support::{assert_steps_eq, assert_trace, fixture, invoke, stream_ok};

fn expected(kind: &str, key: &str) -> Json {
    fixture("06_waiting_edge_join")[kind][key].clone()
}

fn build(join: bool) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b", "b2", "c"] {
        g.add_node(name, move |s: Json| async move {
            // Stagger completion so parallel updates come out in a fixed order.
            let delay = match name {
                "b" => 50,
                "c" => 100,
                _ => 0,
            };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let seen = s["log"].as_array().unwrap().len();
            Ok::<_, NodeError>(json!({"log": [format!("{name}({seen})")]}))
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge(START, "b").unwrap();
    // The b-branch is one step longer.
    g.add_edge("b", "b2").unwrap();
    if join {
        g.add_waiting_edge(["a", "b2"], "c").unwrap();
    } else {
        g.add_edge("a", "c").unwrap();
        g.add_edge("b2", "c").unwrap();
    }
    g.add_edge("c", END).unwrap();
    g.compile().unwrap()
}

async fn check_updates(join: bool, kind: &str) {
    let streamed = stream_ok(
        &build(join),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_steps_eq(&streamed.by_step(), &expected(kind, "updates"));
}

async fn check_final(join: bool, kind: &str) {
    let out = invoke(&build(join), json!({"log": []}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected(kind, "final"));
}

#[tokio::test]
async fn trace_06_join_updates() {
    check_updates(true, "join").await;
}

#[tokio::test]
async fn trace_06_join_final() {
    check_final(true, "join").await;
}

#[tokio::test]
async fn trace_06_separate_edges_updates() {
    check_updates(false, "separate_edges").await;
}

#[tokio::test]
async fn trace_06_separate_edges_final() {
    check_final(false, "separate_edges").await;
}

/// `[step, name, triggers]` of the `debug` task events, sorted within a step.
async fn check_debug_triggers(join: bool, kind: &str) {
    let streamed = stream_ok(
        &build(join),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Debug,
    )
    .await;
    let mut tasks: Vec<Json> = streamed
        .payloads()
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "task")
        .map(|event| {
            json!([
                event["step"],
                event["payload"]["name"],
                event["payload"]["triggers"]
            ])
        })
        .collect();
    let mut want = expected(kind, "debug_task_triggers")
        .as_array()
        .unwrap()
        .clone();
    let key = |j: &Json| (j[0].as_i64(), j.to_string());
    tasks.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(tasks, want);
}

#[tokio::test]
async fn trace_06_join_debug_task_triggers() {
    check_debug_triggers(true, "join").await;
}

#[tokio::test]
async fn trace_06_separate_edges_debug_task_triggers() {
    check_debug_triggers(false, "separate_edges").await;
}
