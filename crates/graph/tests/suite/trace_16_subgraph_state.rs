//! Golden trace 16: a subgraph as a node (shared `log` key, a child-only
//! `secret` key) inheriting the parent's checkpointer. An interrupt inside
//! the subgraph surfaces in the parent (its task shows the interrupt and the
//! child's checkpoint namespace); the child's state is read by that
//! namespace; resuming continues inside the child; the parent's history; a
//! subgraph invoked inside a node function streams under that task's
//! namespace. Every observation is ported.
//!
//! `checkpoint_map` (Python's record, in a config, of the checkpoint of each
//! enclosing namespace) has no Rust counterpart: `CheckpointConfig` names
//! one checkpoint; the recorded values are compared without it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, END, NodeError, RunOptions, START, Schema,
    StateGraph, StreamMode, TaskContext,
};
use stategraph_pregel::{Input, StreamModes};
use support::{assert_trace_ids, fixture, history_json, log_history, py_interrupts, snapshot_json};

fn expected(key: &str) -> Json {
    fixture("16_subgraph_state")[key].clone()
}

/// Removes Python's `checkpoint_map` from every config.
fn without_checkpoint_map(value: &Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .filter(|(key, _)| *key != "checkpoint_map")
                .map(|(key, item)| (key.clone(), without_checkpoint_map(item)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(without_checkpoint_map).collect()),
        other => other.clone(),
    }
}

fn app() -> CompiledStateGraph {
    let mut child = StateGraph::new(Schema::new().append("log").last_value("secret"));
    child
        .add_node("c1", |_s: Json| async {
            Ok::<_, NodeError>(json!({"log": ["c1"], "secret": "s"}))
        })
        .unwrap();
    child
        .add_node("c2", |_s: Json, ctx: TaskContext| async move {
            let answer = ctx.interrupt("child?")?.to_json()?;
            let answer = answer.as_str().unwrap_or_default().to_owned();
            Ok::<_, NodeError>(json!({"log": [format!("c2={answer}")]}))
        })
        .unwrap();
    child.add_edge(START, "c1").unwrap();
    child.add_edge("c1", "c2").unwrap();
    let child = child.compile().unwrap();

    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("p1", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["p1"]}))
    })
    .unwrap();
    g.add_node("sub", child).unwrap();
    g.add_node("p2", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["p2"]}))
    })
    .unwrap();
    g.add_edge(START, "p1").unwrap();
    g.add_edge("p1", "sub").unwrap();
    g.add_edge("sub", "p2").unwrap();
    g.add_edge("p2", END).unwrap();
    g.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// `stream(..., subgraphs=True)`: `[namespace, payload]`, or with several
/// modes `[namespace, mode, payload]`.
async fn stream_subgraphs(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
    modes: StreamModes,
    tagged: bool,
) -> Json {
    let chunks: Vec<Json> = app
        .stream_with(input, config, modes, RunOptions::new().subgraphs(true))
        .map(|chunk| {
            let chunk = chunk.unwrap();
            let namespace = json!(chunk.namespace.to_vec());
            if tagged {
                json!([namespace, chunk.mode.as_str(), chunk.to_json()])
            } else {
                json!([namespace, chunk.to_json()])
            }
        })
        .collect()
        .await;
    py_interrupts(&Json::Array(chunks))
}

#[tokio::test]
async fn trace_16_interrupt_in_a_subgraph_and_resume() {
    let app = app();
    let cfg = RunnableConfig::thread("sg");
    let run1 = stream_subgraphs(
        &app,
        json!({"log": []}),
        &cfg,
        StreamMode::Updates.into(),
        false,
    )
    .await;
    let parent = app.get_state(&cfg).await.unwrap();
    let with_subgraphs = app.get_state_with_subgraphs(&cfg).await.unwrap();
    let child_config = parent.tasks[0].state.clone().unwrap();
    let child_cfg = RunnableConfig::thread("sg").with_checkpoint_ns(child_config.checkpoint_ns);
    let child_state = snapshot_json(&app.get_state(&child_cfg).await.unwrap());
    let child_history = history_json(&app, &child_cfg).await;
    let resume = Command::new().resume(Value::from_json(json!("ok")));
    let modes = StreamMode::Updates | StreamMode::Values;
    let run2 = stream_subgraphs(&app, resume, &cfg, modes, true).await;
    let parent_history = log_history(&app, &cfg).await;

    // One document, so ids compare across observations (the task of `sub`
    // names the child's namespace, the interrupt is the child's).
    let actual = json!({
        "run1": run1,
        "parent_state": snapshot_json(&parent),
        "parent_state_with_subgraphs": snapshot_json(&with_subgraphs),
        "child_state_by_config": child_state,
        "child_history": child_history,
        "run2": run2,
    });
    let want = without_checkpoint_map(&json!({
        "run1": expected("run1"),
        "parent_state": expected("parent_state"),
        "parent_state_with_subgraphs": expected("parent_state_with_subgraphs"),
        "child_state_by_config": expected("child_state_by_config"),
        "child_history": expected("child_history"),
        "run2": expected("run2"),
    }));
    assert_trace_ids(&actual, &want);
    assert_eq!(parent_history, expected("parent_history_meta"));
    let names: Vec<String> = app
        .get_subgraphs(true)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(json!(names), expected("get_subgraphs"));
}

#[tokio::test]
async fn trace_16_subgraph_invoked_inside_a_node() {
    let mut other = StateGraph::new(Schema::new().last_value("text"));
    other
        .add_node("upper", |s: Json| async move {
            let text = s["text"].as_str().unwrap_or_default().to_uppercase();
            Ok::<_, NodeError>(json!({"text": text}))
        })
        .unwrap();
    other.add_edge(START, "upper").unwrap();
    let other = other.compile().unwrap();

    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("call_other", move |s: Json, ctx: TaskContext| {
        let other = other.clone();
        async move {
            let joined: Vec<&str> = s["log"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Json::as_str)
                .collect();
            // Python passes the task's config implicitly; here the task's
            // subgraph options carry its namespace.
            let out = other
                .invoke_with(
                    json!({"text": joined.join("-")}),
                    ctx.config(),
                    ctx.subgraph_options(),
                )
                .await
                .map_err(|err| NodeError::new(err.class().to_owned(), err.to_string()))?;
            Ok::<_, NodeError>(json!({"log": [out.to_json()?["text"]]}))
        }
    })
    .unwrap();
    g.add_edge(START, "call_other").unwrap();
    let app = g.compile().unwrap();
    let got = stream_subgraphs(
        &app,
        json!({"log": ["x", "y"]}),
        &RunnableConfig::default(),
        StreamMode::Updates.into(),
        false,
    )
    .await;
    assert_trace_ids(&got, &expected("inside_node_updates_subgraphs"));
}
