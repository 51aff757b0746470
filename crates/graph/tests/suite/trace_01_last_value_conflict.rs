//! Golden trace 01: `LastValue` keys. Sequential writers are fine (last write
//! wins); two writers in one superstep raise `InvalidUpdateError` at the end of
//! that step, after both nodes ran; input keys outside the schema are ignored.
//!
//! Every observation of the case is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompiledStateGraph, END, START, Schema, StateGraph, StreamMode};
use support::{assert_trace, catch_invoke, fixture, invoke, node, stream_ok};

fn expected(key: &str) -> Json {
    fixture("01_last_value_conflict")[key].clone()
}

type Ran = Arc<Mutex<Vec<String>>>;

fn build(concurrent: bool, ran: &Ran) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().last_value("v").last_value("log"));
    for name in ["a", "b"] {
        let ran = ran.clone();
        g.add_node(
            name,
            node(move |_| {
                ran.lock().unwrap().push(name.to_owned());
                json!({"v": name})
            }),
        )
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    if concurrent {
        g.add_edge(START, "b").unwrap();
    } else {
        g.add_edge("a", "b").unwrap();
        g.add_edge("b", END).unwrap();
    }
    g.compile().unwrap()
}

#[tokio::test]
async fn trace_01_sequential_invoke() {
    let seq = build(false, &Ran::default());
    let out = invoke(&seq, json!({"v": "in"}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("sequential_invoke"));
}

#[tokio::test]
async fn trace_01_sequential_updates() {
    let seq = build(false, &Ran::default());
    let streamed = stream_ok(
        &seq,
        json!({"v": "in"}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_trace(&streamed.payloads(), &expected("sequential_updates"));
}

#[tokio::test]
async fn trace_01_partial_input_invoke() {
    // `log` is a state key too, so it is kept; `v` stays unset in the input.
    let seq = build(false, &Ran::default());
    let out = invoke(&seq, json!({"log": "x"}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("partial_input_invoke"));
}

#[tokio::test]
async fn trace_01_concurrent_invoke() {
    let par = build(true, &Ran::default());
    let out = catch_invoke(&par, json!({"v": "in"}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("concurrent_invoke"));
}

#[tokio::test]
async fn trace_01_concurrent_nodes_ran() {
    // Both nodes ran before the step's writes were refused.
    let ran = Ran::default();
    let par = build(true, &ran);
    let _ = catch_invoke(&par, json!({"v": "in"}), &RunnableConfig::default()).await;
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_trace(&json!(ran), &expected("concurrent_nodes_ran"));
}
