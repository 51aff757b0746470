//! Golden trace 02: reducer keys (`operator.add` on lists and ints, custom
//! reducers, reducers applied to the input), reducer channels starting at
//! `typ()`, `Overwrite` bypassing the reducer, two `Overwrite`s in one step
//! raising, and parallel writes applied in task order, not completion order.
//!
//! Every observation of the case is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_channels::{BinaryOperatorAggregate, reducers};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompiledStateGraph, NodeError, START, Schema, StateGraph, StreamMode};
use support::{assert_trace, catch_invoke, fixture, invoke, node, stream_ok};

fn expected(key: &str) -> Json {
    fixture("02_reducers")[key].clone()
}

fn zero() -> Json {
    json!(0)
}

fn empty_map() -> Json {
    json!({})
}

/// `S`: `items: Annotated[list, operator.add]`, `best: Annotated[int, keep_max]`,
/// `meta: Annotated[dict, merge_dict]`, `total: Annotated[int, operator.add]`.
/// Each reducer channel starts at its type's `typ()`: `[]`, `0`, `{}`, `0`.
fn schema() -> Schema {
    let keep_max = |a: Json, b: Json| {
        if b.as_i64() > a.as_i64() { b } else { a }
    };
    Schema::new()
        .append("items")
        .key(
            "best",
            BinaryOperatorAggregate::with_initial(keep_max, zero),
        )
        .key(
            "meta",
            BinaryOperatorAggregate::with_initial(reducers::json_add, empty_map),
        )
        .key(
            "total",
            BinaryOperatorAggregate::with_initial(reducers::json_add, zero),
        )
}

fn app() -> CompiledStateGraph {
    let mut g = StateGraph::new(schema());
    g.add_node("a", |_s: Json| async {
        // Finishes last, but its write is applied first.
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok::<_, NodeError>(json!({"items": ["a"], "best": 3, "meta": {"a": 1}, "total": 1}))
    })
    .unwrap();
    g.add_node(
        "b",
        node(|_| json!({"items": ["b"], "best": 7, "meta": {"b": 2, "a": 0}, "total": 10})),
    )
    .unwrap();
    g.add_node("c", node(|_| json!({"items": ["c1", "c2"], "best": 5})))
        .unwrap();
    // Python's `Overwrite(v)`, written in its JSON form.
    g.add_node(
        "over",
        node(|_| json!({"items": {"__overwrite__": ["reset"]}, "total": {"__overwrite__": 0}})),
    )
    .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge(START, "b").unwrap();
    g.add_waiting_edge(["a", "b"], "c").unwrap();
    g.add_edge("c", "over").unwrap();
    g.compile().unwrap()
}

#[tokio::test]
async fn trace_02_values_stream() {
    let streamed = stream_ok(
        &app(),
        expected("input"),
        &RunnableConfig::default(),
        StreamMode::Values,
    )
    .await;
    assert_trace(&streamed.payloads(), &expected("values_stream"));
}

#[tokio::test]
async fn trace_02_final() {
    let out = invoke(&app(), expected("input"), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("final"));
}

#[tokio::test]
async fn trace_02_final_empty_input() {
    let out = invoke(&app(), json!({}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("final_empty_input"));
}

#[tokio::test]
async fn trace_02_two_overwrites_same_step() {
    let mut g = StateGraph::new(Schema::new().append("items"));
    g.add_node("o1", node(|_| json!({"items": {"__overwrite__": ["x"]}})))
        .unwrap();
    g.add_node("o2", node(|_| json!({"items": {"__overwrite__": ["y"]}})))
        .unwrap();
    g.add_edge(START, "o1").unwrap();
    g.add_edge(START, "o2").unwrap();
    let double_over = g.compile().unwrap();
    let out = catch_invoke(
        &double_over,
        json!({"items": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("two_overwrites_same_step"));
}
