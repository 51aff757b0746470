//! A compiled graph given another saver and store after compiling
//! (`with_checkpointer`, `with_store`), as a server gives every graph its
//! own: runs, the state API and subgraph runs use them.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointSaver, InMemorySaver, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, NodeError, START, Schema, StateGraph, TaskContext};
use stategraph_store::{InMemoryStore, SharedStore, Store};

/// `START -> sub -> after`; `sub` runs `first` (when `with_first`), then
/// `inner`, which asks a question.
fn parent(with_first: bool) -> stategraph_graph::CompiledStateGraph {
    let mut sub = StateGraph::new(Schema::new().append("log"));
    sub.add_node("inner", |_: Json, ctx: TaskContext| async move {
        let answer = ctx.interrupt("q")?.to_json()?;
        Ok::<_, NodeError>(
            json!({"log": [format!("inner:{}", answer.as_str().unwrap_or_default())]}),
        )
    })
    .unwrap();
    if with_first {
        sub.add_node("first", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["first"]}))
        })
        .unwrap();
        sub.add_edge(START, "first").unwrap();
        sub.add_edge("first", "inner").unwrap();
    } else {
        sub.add_edge(START, "inner").unwrap();
    }
    let mut graph = StateGraph::new(Schema::new().append("log"));
    graph.add_node("sub", sub.compile().unwrap()).unwrap();
    graph
        .add_node("after", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["after"]}))
        })
        .unwrap();
    graph.add_edge(START, "sub").unwrap();
    graph.add_edge("sub", "after").unwrap();
    graph.compile().unwrap()
}

#[tokio::test]
async fn a_rebound_saver_keeps_runs_state_and_subgraphs() {
    let compiled = parent(true);
    let config = RunnableConfig::thread("t");
    // Compiled without a saver: the state API has none.
    assert!(compiled.get_state(&config).await.is_err());

    let saver = Arc::new(InMemorySaver::new());
    let app = compiled.with_checkpointer(saver.clone());
    app.invoke(json!({"log": []}), &config).await.unwrap();
    let paused = app.get_state_with_subgraphs(&config).await.unwrap();
    assert_eq!(paused.next, ["sub"]);
    let sub = paused.tasks[0].subgraph.as_ref().unwrap();
    assert_eq!(
        sub.next,
        ["inner"],
        "the subgraph checkpointed to the rebound saver"
    );

    // The subgraph's state is updated through the root's saver.
    let out = patch_subgraph_then_resume(&app, &sub.config, "first").await;
    assert_eq!(
        out,
        json!({"log": ["first", "patched", "inner:ok", "after"]})
    );
    let mut query = ListQuery::default();
    query.thread_id = Some("t".into());
    let saved = futures::StreamExt::count(saver.list(query)).await;
    assert!(
        saved > 4,
        "root and subgraph checkpoints are in the rebound saver"
    );
    // The graph it came from is unchanged.
    assert!(compiled.get_state(&config).await.is_err());
}

#[tokio::test]
async fn a_rebound_store_is_the_one_nodes_see() {
    let mut graph = StateGraph::new(Schema::new().last_value("seen"));
    graph
        .add_node("read", |_: Json, ctx: TaskContext| async move {
            let store = ctx.store().unwrap();
            let item = store.get(&["users"], "ann").await.unwrap().unwrap();
            Ok::<_, NodeError>(json!({"seen": item.value}))
        })
        .unwrap();
    graph.add_edge(START, "read").unwrap();
    let store = InMemoryStore::new();
    store
        .put(&["users"], "ann", json!({"lang": "en"}))
        .await
        .unwrap();
    let shared: SharedStore = Arc::new(store);
    let app = graph.compile().unwrap().with_store(shared);
    let out = app
        .invoke(json!({}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), json!({"seen": {"lang": "en"}}));
}

/// A subgraph whose state an update finished (acting as its last node):
/// the resumed parent task gets the subgraph's state without running it
/// again, as LangGraph 1.2.22 does (`{"log": ["patched", "after"]}`).
#[tokio::test]
async fn a_subgraph_an_update_finished_is_not_run_again() {
    let app = parent(false).with_checkpointer(Arc::new(InMemorySaver::new()));
    let config = RunnableConfig::thread("t");
    app.invoke(json!({"log": []}), &config).await.unwrap();
    let paused = app.get_state_with_subgraphs(&config).await.unwrap();
    let sub = paused.tasks[0].subgraph.as_ref().unwrap();
    let out = patch_subgraph_then_resume(&app, &sub.config, "inner").await;
    assert_eq!(out, json!({"log": ["patched", "after"]}));
}

/// Writes `{"log": ["patched"]}` into the subgraph's state at `sub` as
/// `as_node`, through the root graph, then resumes thread `t` with `ok`;
/// the output.
async fn patch_subgraph_then_resume(
    app: &stategraph_graph::CompiledStateGraph,
    sub: &stategraph_checkpoint::CheckpointConfig,
    as_node: &str,
) -> Json {
    let at_sub = RunnableConfig::thread("t").with_checkpoint_ns(sub.checkpoint_ns.clone());
    let patch = Some(Value::from_json(json!({"log": ["patched"]})));
    app.update_state(&at_sub, patch, Some(as_node))
        .await
        .unwrap();
    let resume = Command::new().resume(Value::from_json(json!("ok")));
    let out = app
        .invoke(resume, &RunnableConfig::thread("t"))
        .await
        .unwrap();
    out.to_json().unwrap()
}

/// A server drives runs and the state API from spawned tasks, so every
/// future a compiled graph returns must be `Send` (this fails to compile
/// otherwise; `update_state` once held a borrow of its loop, which is not
/// `Sync`, across an await).
#[test]
fn every_future_of_a_compiled_graph_is_send() {
    fn send<T: Send>(_: T) {}
    let graph = parent(true);
    let config = RunnableConfig::thread("t");
    send(graph.invoke(json!({"log": []}), &config));
    send(graph.get_state(&config));
    send(graph.get_state_with_subgraphs(&config));
    send(graph.get_state_history(&config, ListQuery::default()));
    send(graph.update_state(&config, None, None));
    send(graph.bulk_update_state(&config, Vec::new()));
    send(graph.stream(
        json!({"log": []}),
        &config,
        stategraph_graph::StreamMode::Values,
    ));
}
