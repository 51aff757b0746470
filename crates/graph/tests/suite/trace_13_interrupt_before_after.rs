//! Golden trace 13: static breakpoints. `interrupt_before` / `interrupt_after`
//! given at compile time and per run (including `"*"`), resuming with no
//! input, the state at each breakpoint (`next` set; no tasks' interrupts),
//! `invoke` returning the plain state at a breakpoint, and new input on a
//! stopped thread starting again from START. Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, END, NodeError, RunOptions, START, Schema, StateGraph, StreamMode,
};
use stategraph_pregel::Input;
use support::{assert_trace_ids, fixture, py_interrupts, snapshot_json};

fn expected(key: &str) -> Json {
    fixture("13_interrupt_before_after")[key].clone()
}

fn graph() -> StateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
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
    g
}

async fn stream(
    app: &stategraph_graph::CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
    mode: StreamMode,
    options: RunOptions,
) -> Json {
    use futures::StreamExt;
    let chunks: Vec<Json> = app
        .stream_with(input, config, mode, options)
        .map(|chunk| chunk.unwrap().to_json())
        .collect()
        .await;
    py_interrupts(&Json::Array(chunks))
}

#[tokio::test]
async fn trace_13_compile_time_breakpoints() {
    let app = graph()
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .interrupt_before(["b"])
                .interrupt_after(["b"]),
        )
        .unwrap();
    let cfg = RunnableConfig::thread("compile-time");
    let none = RunOptions::new;
    let run1 = stream(&app, json!({"log": []}), &cfg, StreamMode::Updates, none()).await;
    let state1 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let run2 = stream(&app, Input::Resume, &cfg, StreamMode::Updates, none()).await;
    let state2 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let run3 = stream(&app, Input::Resume, &cfg, StreamMode::Updates, none()).await;
    let state3 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let run4 = stream(&app, Input::Resume, &cfg, StreamMode::Updates, none()).await;
    let actual = json!({
        "run1": run1, "state1": state1, "run2": run2, "state2": state2,
        "run3": run3, "state3": state3, "run4": run4,
    });
    assert_trace_ids(&actual, &expected("compile_time"));
}

#[tokio::test]
async fn trace_13_run_time_breakpoints_and_new_input() {
    let app = graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("run-time");
    let run1 = stream(
        &app,
        json!({"log": []}),
        &cfg,
        StreamMode::Values,
        RunOptions::new().interrupt_before(["*"]),
    )
    .await;
    let next1 = app.get_state(&cfg).await.unwrap().next;
    let run2 = stream(
        &app,
        Input::Resume,
        &cfg,
        StreamMode::Values,
        RunOptions::new().interrupt_after(["*"]),
    )
    .await;
    let next2 = app.get_state(&cfg).await.unwrap().next;
    let run3 = stream(
        &app,
        Input::Resume,
        &cfg,
        StreamMode::Values,
        RunOptions::new(),
    )
    .await;
    let actual = json!({"run1": run1, "next1": next1, "run2": run2, "next2": next2, "run3": run3});
    assert_eq!(actual, expected("run_time_all"));

    let cfg = RunnableConfig::thread("invoke");
    let out = app
        .invoke_with(
            json!({"log": []}),
            &cfg,
            RunOptions::new().interrupt_before(["c"]),
        )
        .await
        .unwrap();
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_eq!(out.to_json().unwrap(), expected("invoke_before_c"));
    assert_trace_ids(&state, &expected("invoke_before_c_state"));

    let restart = stream(
        &app,
        json!({"log": ["again"]}),
        &cfg,
        StreamMode::Updates,
        RunOptions::new(),
    )
    .await;
    assert_eq!(restart, expected("new_input_restarts"));
    let last = app.get_state(&cfg).await.unwrap().values.to_json().unwrap();
    assert_eq!(last, expected("new_input_final"));
}

#[tokio::test]
async fn unknown_breakpoint_nodes_are_rejected() {
    let err = graph()
        .compile_with(CompileOptions::new().interrupt_before(["nope"]))
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    let app = graph().compile().unwrap();
    let err = app
        .invoke_with(
            json!({"log": []}),
            &RunnableConfig::default(),
            RunOptions::new().interrupt_after(["zzz"]),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("zzz"), "{err}");
}
