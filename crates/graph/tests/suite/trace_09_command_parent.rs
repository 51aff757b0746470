//! Golden trace 09: `Command { graph: Parent }` from inside a subgraph node.
//! The subgraph stops (its remaining nodes never run, the commanding node
//! shows no update), the update goes through the *parent's* reducers, and
//! `goto` names a parent node.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_core::Value;
use stategraph_graph::{
    Command, CompiledStateGraph, END, NodeError, NodeSpec, RunOptions, START, Schema, StateGraph,
    StreamMode,
};
use support::{assert_trace_ids, fixture};

fn expected(key: &str) -> Json {
    fixture("09_command_parent")[key].clone()
}

fn schema() -> Schema {
    Schema::new().append("log").last_value("target")
}

fn app() -> CompiledStateGraph {
    let mut child = StateGraph::new(schema());
    child
        .add_node("child_a", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["child_a"]}))
        })
        .unwrap();
    child
        .add_node("child_jump", |s: Json| async move {
            let target = s["target"].as_str().unwrap_or_default().to_owned();
            Ok::<_, NodeError>(
                Command::new()
                    .to_parent()
                    .goto(target)
                    .update("log", Value::from_json(json!(["from-child"]))),
            )
        })
        .unwrap();
    child
        .add_node("child_never", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["child_never"]}))
        })
        .unwrap();
    child.add_edge(START, "child_a").unwrap();
    child.add_edge("child_a", "child_jump").unwrap();
    child.add_edge("child_jump", "child_never").unwrap();
    let child = child.compile().unwrap();

    let mut parent = StateGraph::new(schema());
    parent
        .add_node_spec("sub", NodeSpec::new(child).destinations(["x", "y"]))
        .unwrap();
    parent
        .add_node("x", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["x"]}))
        })
        .unwrap();
    parent
        .add_node("y", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["y"]}))
        })
        .unwrap();
    parent.add_edge(START, "sub").unwrap();
    parent.add_edge("x", END).unwrap();
    parent.add_edge("y", END).unwrap();
    parent.compile().unwrap()
}

#[tokio::test]
async fn trace_09_invoke_x() {
    let out = app()
        .invoke(
            json!({"log": [], "target": "x"}),
            &RunnableConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected("invoke_x"));
}

#[tokio::test]
async fn trace_09_updates_y_subgraphs() {
    let chunks: Vec<Json> = app()
        .stream_with(
            json!({"log": [], "target": "y"}),
            &RunnableConfig::default(),
            StreamMode::Updates,
            RunOptions::new().subgraphs(true),
        )
        .map(|c| {
            let c = c.unwrap();
            json!([c.namespace.to_vec(), c.to_json()])
        })
        .collect()
        .await;
    assert_trace_ids(&Json::Array(chunks), &expected("updates_y_subgraphs"));
}

#[test]
fn trace_09_mermaid() {
    assert_eq!(
        app().get_graph(false).draw_mermaid(),
        expected("mermaid").as_str().unwrap()
    );
}

#[tokio::test]
async fn a_parent_command_at_the_root_is_an_invalid_update() {
    let mut g = StateGraph::new(schema());
    g.add_node("n", |_: Json| async {
        Ok::<_, NodeError>(Command::new().to_parent().goto("n"))
    })
    .unwrap();
    g.add_edge(START, "n").unwrap();
    let err = g
        .compile()
        .unwrap()
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "InvalidUpdateError");
    assert_eq!(err.to_string(), "There is no parent graph");
}
