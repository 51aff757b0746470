//! Golden trace 05: `Send` map-reduce. Each `Send` becomes a PUSH task with its
//! own input (not the graph state); results are reduced in `Send` order, not
//! completion order; a router may return a `Send` and a node name together.
//!
//! The Python graph is compiled with an `InMemorySaver`, but `updates` and
//! `final` do not depend on it (each run uses a fresh thread), so they are
//! ported without a checkpointer. `history` (with each checkpoint's tasks and
//! their results, read from the saved pending writes) and `tasks` (the
//! `tasks` stream mode, whose task ids come from the checkpoints) run on an
//! `InMemorySaver`. Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, NodeError, Route, START, Schema, Send, StateGraph,
    StreamMode,
};
use support::{
    assert_steps_eq, assert_trace, assert_trace_ids, fixture, history_json, invoke, node, py_str,
    stream_ok,
};

fn expected(key: &str) -> Json {
    fixture("05_send_map_reduce")[key].clone()
}

fn graph() -> StateGraph {
    let mut g = StateGraph::new(
        Schema::new()
            .last_value("subjects")
            .append("jokes")
            .last_value("summary"),
    );
    g.add_node("joke", |s: Json| async move {
        let subject = s["subject"].as_str().unwrap().to_owned();
        // Later subjects finish first; the reduced order still follows Send order.
        let delay = match subject.as_str() {
            "cats" => 200,
            "eels" => 100,
            _ => 0,
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        Ok::<_, NodeError>(json!({"jokes": [format!("joke about {subject}")]}))
    })
    .unwrap();
    g.add_node(
        "summarize",
        node(|s| {
            let jokes: Vec<&str> = s["jokes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j.as_str().unwrap())
                .collect();
            json!({"summary": jokes.join(" | ")})
        }),
    )
    .unwrap();
    g.add_conditional_edges(
        START,
        |s: &Json| {
            s["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| Send::new("joke", json!({"subject": x})))
                .collect::<Vec<_>>()
        },
        None,
    )
    .unwrap();
    g.add_edge("joke", "summarize").unwrap();
    g.add_edge("summarize", END).unwrap();
    g
}

fn app() -> CompiledStateGraph {
    graph().compile().unwrap()
}

fn input() -> Json {
    json!({"subjects": ["cats", "dogs", "eels"], "jokes": []})
}

#[tokio::test]
async fn trace_05_updates() {
    let streamed = stream_ok(
        &app(),
        input(),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_steps_eq(&streamed.by_step(), &expected("updates"));
}

#[tokio::test]
async fn trace_05_final() {
    let out = invoke(&app(), input(), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("final"));
}

fn mixed() -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("entry", node(|_| json!({"log": ["entry"]})))
        .unwrap();
    g.add_node(
        "plain",
        node(|s| json!({"log": [format!("plain saw {}", s["log"].as_array().unwrap().len())]})),
    )
    .unwrap();
    g.add_node("pushed", |s: Json| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok::<_, NodeError>(json!({"log": [format!("pushed got {}", py_str(&s["log"]))]}))
    })
    .unwrap();
    g.add_edge(START, "entry").unwrap();
    g.add_conditional_edges(
        "entry",
        |_: &Json| {
            vec![
                Route::To("plain".to_owned()),
                Route::Send(Send::new("pushed", json!({"log": ["sent-arg"]}))),
            ]
        },
        None,
    )
    .unwrap();
    g.compile().unwrap()
}

#[tokio::test]
async fn trace_05_mixed_updates() {
    let streamed = stream_ok(
        &mixed(),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_steps_eq(&streamed.by_step(), &expected("mixed_updates"));
}

#[tokio::test]
async fn trace_05_mixed_final() {
    let out = invoke(&mixed(), json!({"log": []}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("mixed_final"));
}

#[tokio::test]
async fn trace_05_history() {
    let app = graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunnableConfig::thread("send");
    invoke(&app, input(), &config).await;
    assert_trace_ids(&history_json(&app, &config).await, &expected("history"));
}

#[tokio::test]
async fn trace_05_tasks() {
    let app = graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunnableConfig::thread("send-t");
    let streamed = stream_ok(&app, input(), &config, StreamMode::Tasks).await;
    // The jokes finish in the order their delays give (dogs, eels, cats).
    assert_trace_ids(&streamed.payloads(), &expected("tasks"));
}
