//! Golden trace 19: the recursion limit. With limit L the run fails with
//! `GraphRecursionError` before superstep L+1 (nodes run in steps 1..=L after
//! the input step 0); the default limit is 10007; the `RemainingSteps` and
//! `IsLastStep` managed values (L-1 … 0, true only when one step remains)
//! let a router stop gracefully; managed keys are not part of the output.
//!
//! The state saved when the limit stops a checkpointed run
//! (`limit5_saved_state`, `limit5_saved_next`) is checked with a saver.
//!
//! Not ported:
//! - `is_recursion_error_subclass` — Python's exception class hierarchy
//!   (`GraphRecursionError` subclasses `RecursionError`); our errors are enum
//!   variants with a class name, so there is nothing to observe.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompileOptions, END, PathMap, START, Schema, StateGraph};
use support::{assert_trace, catch_invoke, fixture, invoke, node};

fn expected(key: &str) -> Json {
    fixture("19_recursion_limit")[key].clone()
}

/// `S`: `n: int`, `seen: Annotated[list, operator.add]`,
/// `remaining: RemainingSteps`, `last: IsLastStep`.
fn state_graph() -> StateGraph {
    StateGraph::new(Schema::new().last_value("n").append("seen"))
        .with_remaining_steps("remaining")
        .unwrap()
        .with_is_last_step("last")
        .unwrap()
}

/// The case's `loop` node: counts and records the managed values it saw.
fn add_loop(g: &mut StateGraph) {
    g.add_node(
        "loop",
        node(|s| {
            json!({
                "n": s["n"].as_i64().unwrap() + 1,
                "seen": [[s["remaining"], s["last"]]],
            })
        }),
    )
    .unwrap();
}

fn limit(n: usize) -> RunnableConfig {
    RunnableConfig::default().with_recursion_limit(n)
}

#[tokio::test]
async fn trace_19_limit5() {
    let mut g = state_graph();
    add_loop(&mut g);
    g.add_edge(START, "loop").unwrap();
    g.add_edge("loop", "loop").unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunnableConfig::thread("r1").with_recursion_limit(5);
    let out = catch_invoke(&app, json!({"n": 0, "seen": []}), &config).await;
    assert_trace(&out, &expected("limit5"));
    let saved = app.get_state(&RunnableConfig::thread("r1")).await.unwrap();
    assert_trace(
        &saved.values.to_json().unwrap(),
        &expected("limit5_saved_state"),
    );
    assert_eq!(json!(saved.next), expected("limit5_saved_next"));
}

/// Runs the case's endless `count` loop with the default limit; returns the
/// caught result and how many times the node ran.
async fn default_limit_run() -> (Json, usize) {
    let counter = Arc::new(AtomicUsize::new(0));
    let mut g = state_graph();
    let runs = counter.clone();
    g.add_node(
        "count",
        node(move |s| {
            runs.fetch_add(1, Ordering::Relaxed);
            json!({"n": s["n"].as_i64().unwrap() + 1})
        }),
    )
    .unwrap();
    g.add_edge(START, "count").unwrap();
    g.add_edge("count", "count").unwrap();
    let app = g.compile().unwrap();
    let out = catch_invoke(
        &app,
        json!({"n": 0, "seen": []}),
        &RunnableConfig::default(),
    )
    .await;
    (out, counter.load(Ordering::Relaxed))
}

#[tokio::test]
async fn trace_19_default_limit_error() {
    let (out, _) = default_limit_run().await;
    assert_trace(&out, &expected("default_limit_error"));
}

#[tokio::test]
async fn trace_19_default_limit_node_runs() {
    let (_, runs) = default_limit_run().await;
    assert_trace(&json!(runs), &expected("default_limit_node_runs"));
}

fn graceful() -> stategraph_graph::CompiledStateGraph {
    let mut g = state_graph();
    add_loop(&mut g);
    g.add_edge(START, "loop").unwrap();
    // Stop voluntarily when the managed value says this is the last step.
    g.add_conditional_edges(
        "loop",
        |s: &Json| {
            if s["last"] == json!(true) {
                END
            } else {
                "loop"
            }
        },
        Some(PathMap::from(["loop", END])),
    )
    .unwrap();
    g.compile().unwrap()
}

#[tokio::test]
async fn trace_19_graceful_limit4() {
    let out = invoke(&graceful(), json!({"n": 0, "seen": []}), &limit(4)).await;
    assert_trace(&out, &expected("graceful_limit4"));
}

#[tokio::test]
async fn trace_19_graceful_output_keys() {
    // Managed values are not part of the output.
    let out = invoke(&graceful(), json!({"n": 0, "seen": []}), &limit(3)).await;
    let mut keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    keys.sort();
    assert_trace(&json!(keys), &expected("graceful_output_keys"));
}
