//! Golden trace 08: a node returning `Command(update, goto)` with a node name,
//! a list of nodes and a `Send`; `goto` combined with a static edge (both
//! run, writes applied in task-path order: `after` before `left`); a
//! `Command` as the graph input on a fresh thread (its update is applied
//! twice and `START`'s edges fire too: README semantics #9, copied on
//! purpose); `goto` to an unknown node (dropped, not an error).
//!
//! The Python graph is compiled with an `InMemorySaver`, and the `*_final` /
//! `command_input_state` observations read the end state of each run back
//! with `get_state`. Without a checkpointer we take the end state of the same
//! run from its last `values` chunk: the observation is the state the run
//! ended with, which `get_state` only reads back.
//!
//! Python draws the router's `Command` edges from its return type hint
//! (`Command[Literal["left", "right"]]`); the Rust port declares them with
//! `NodeSpec::destinations`.
//!
//! `command_input_history` runs the `Command` input on an `InMemorySaver`
//! and reads the checkpoints back: each one's `next` lists the tasks it
//! would run in node declaration order (`["router", "left"]`), as LangGraph
//! plans them from a stored checkpoint.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{InMemorySaver, ListQuery};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, NodeError, NodeSpec, START, Schema, Send,
    StateGraph, StreamMode,
};
use stategraph_pregel::Input;
use support::{Streamed, assert_steps_eq, assert_trace, catch_invoke, fixture, node, stream};

fn expected(key: &str) -> Json {
    fixture("08_command_goto")[key].clone()
}

fn schema() -> Schema {
    Schema::new().append("log").last_value("flag")
}

fn app() -> CompiledStateGraph {
    graph().compile().unwrap()
}

fn graph() -> StateGraph {
    let mut g = StateGraph::new(schema());
    let router = NodeSpec::new(|s: Json| async move {
        // When run next to `left` (Command input case), finish second.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let flag = s["flag"].as_str().unwrap().to_owned();
        Ok::<_, NodeError>(match flag.as_str() {
            "both" => Command::new()
                .update_json(json!({"log": ["router"]}))
                .goto("left")
                .goto("right"),
            "send" => Command::new()
                .update_json(json!({"log": ["router"]}))
                .goto(Send::new("right", json!({"log": ["sent"], "flag": "x"}))),
            _ => Command::new()
                .update_json(json!({"log": ["router"], "flag": format!("went-{flag}")}))
                .goto(flag),
        })
    })
    .destinations(["left", "right"]);
    g.add_node_spec("router", router).unwrap();
    g.add_node("left", node(|_| json!({"log": ["left"]})))
        .unwrap();
    g.add_node("right", |s: Json| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let flag = s["flag"].as_str().unwrap().to_owned();
        Ok::<_, NodeError>(json!({"log": [format!("right(flag={flag})")]}))
    })
    .unwrap();
    g.add_node("after", |_s: Json| async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok::<_, NodeError>(json!({"log": ["after"]}))
    })
    .unwrap();
    g.add_edge(START, "router").unwrap();
    // The static edge fires alongside the goto.
    g.add_edge("router", "after").unwrap();
    g
}

/// Streams `updates` and `values`; returns the run and its end state.
async fn run(input: impl Into<Input>) -> (Streamed, Json) {
    let streamed = stream(
        &app(),
        input,
        &RunnableConfig::default(),
        StreamMode::Updates | StreamMode::Values,
    )
    .await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    let last_values = streamed
        .chunks
        .iter()
        .rev()
        .find(|(_, mode, _)| *mode == StreamMode::Values)
        .map(|(_, _, data)| data.clone())
        .unwrap();
    (streamed, last_values)
}

fn updates_by_step(streamed: &Streamed) -> Vec<Vec<Json>> {
    let mut groups: Vec<Vec<Json>> = Vec::new();
    for (group, mode, data) in &streamed.chunks {
        if *mode == StreamMode::Updates {
            groups.resize_with(groups.len().max(group + 1), Vec::new);
            groups[*group].push(data.clone());
        }
    }
    groups.retain(|g| !g.is_empty());
    groups
}

async fn check_flag(flag: &str) {
    let (streamed, end_state) = run(json!({"log": [], "flag": flag})).await;
    assert_steps_eq(&updates_by_step(&streamed), &expected(flag));
    assert_trace(&end_state, &expected(&format!("{flag}_final")));
}

#[test]
fn trace_08_mermaid() {
    let mermaid = app().get_graph(false).draw_mermaid();
    assert_eq!(Json::String(mermaid), expected("mermaid"));
}

#[tokio::test]
async fn trace_08_left() {
    check_flag("left").await;
}

#[tokio::test]
async fn trace_08_both() {
    check_flag("both").await;
}

#[tokio::test]
async fn trace_08_send() {
    check_flag("send").await;
}

#[tokio::test]
async fn trace_08_command_input() {
    let command = Command::new()
        .update_json(json!({"log": ["injected"], "flag": "cmd"}))
        .goto("left");
    let (streamed, end_state) = run(Input::Command(command)).await;
    assert_steps_eq(&updates_by_step(&streamed), &expected("command_input"));
    assert_trace(&end_state, &expected("command_input_state"));
}

#[tokio::test]
async fn trace_08_command_input_history() {
    let app = graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunnableConfig::thread("cmd");
    let command = Command::new()
        .update_json(json!({"log": ["injected"], "flag": "cmd"}))
        .goto("left");
    app.invoke(Input::Command(command), &config).await.unwrap();
    let history: Vec<Json> = app
        .get_state_history(&config, ListQuery::default())
        .await
        .unwrap()
        .iter()
        .map(|snapshot| {
            let metadata = snapshot.metadata.as_ref().unwrap().to_json();
            json!([
                metadata["step"],
                metadata["source"],
                snapshot.next,
                snapshot.values.to_json().unwrap(),
            ])
        })
        .collect();
    assert_trace(&Json::Array(history), &expected("command_input_history"));
}

#[tokio::test]
async fn trace_08_goto_unknown() {
    let mut g = StateGraph::new(schema());
    g.add_node("bad", |_s: Json| async {
        Ok::<_, NodeError>(Command::new().goto("nowhere"))
    })
    .unwrap();
    g.add_edge(START, "bad").unwrap();
    let app = g.compile().unwrap();
    let out = catch_invoke(
        &app,
        json!({"log": [], "flag": ""}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("goto_unknown"));
}
