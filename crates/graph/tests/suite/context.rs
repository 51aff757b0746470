//! A run's typed context (LangGraph's `context=` and `Runtime.context`):
//! every node reads it, subgraphs inherit it, and a run without one or with
//! another type reads `None`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{END, NodeError, RunOptions, START, Schema, StateGraph, TaskContext};

#[derive(Debug)]
struct UserContext {
    user_id: String,
}

fn greet(_state: Json, ctx: TaskContext) -> std::future::Ready<Result<Json, NodeError>> {
    let who = ctx
        .context::<UserContext>()
        .map_or("nobody".to_owned(), |c| c.user_id.clone());
    std::future::ready(Ok(json!({"log": [format!("{} saw {who}", ctx.node())]})))
}

fn graph() -> stategraph_graph::CompiledStateGraph {
    let mut child = StateGraph::new(Schema::new().append("log"));
    child.add_node("inner", greet).unwrap();
    child.add_edge(START, "inner").unwrap();
    child.add_edge("inner", END).unwrap();

    let mut parent = StateGraph::new(Schema::new().append("log"));
    parent.add_node("outer", greet).unwrap();
    parent.add_node("sub", child.compile().unwrap()).unwrap();
    parent.add_edge(START, "outer").unwrap();
    parent.add_edge("outer", "sub").unwrap();
    parent.compile().unwrap()
}

#[tokio::test]
async fn nodes_and_subgraphs_read_the_run_context() {
    let options = RunOptions::new().context(UserContext {
        user_id: "u-7".into(),
    });
    let out = graph()
        .invoke_with(json!({"log": []}), &RunnableConfig::default(), options)
        .await
        .unwrap();
    // The subgraph's whole state is its update, so `outer`'s entry appears twice.
    assert_eq!(
        out.to_json().unwrap()["log"],
        json!(["outer saw u-7", "outer saw u-7", "inner saw u-7"])
    );
}

#[tokio::test]
async fn no_context_or_another_type_reads_none() {
    let out = graph()
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap()["log"][0], json!("outer saw nobody"));
    let out = graph()
        .invoke_with(
            json!({"log": []}),
            &RunnableConfig::default(),
            RunOptions::new().context(42_u32),
        )
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap()["log"][0], json!("outer saw nobody"));
}
