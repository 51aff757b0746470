//! Golden trace 25: a run's typed context and store reach the nodes.
//! `greet` writes a custom chunk naming the context's type and puts the
//! user's language in the store; `peek` reads it back from the store. The
//! store keeps what both runs put; `node_attempt` is 1 on a first attempt.
//!
//! `peek` reads its task config: the configurable keys (the typed
//! `checkpoint_id`, `checkpoint_ns` and `thread_id` always exist, as
//! LangGraph's keys do even when `None`) and the `langgraph_*` metadata.
//! Not ported yet: `context_jsonschema` (a graph does not declare its
//! context type) and the coercion of a dict context into the dataclass (a
//! Python typing convenience: our context is a Rust value).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, NodeError, RunOptions, START, Schema, StateGraph,
    StreamMode, TaskContext,
};
use stategraph_store::{InMemoryStore, SearchOp, Store, ns};
use support::fixture;

#[derive(Debug)]
struct Ctx {
    user: String,
    lang: String,
}

impl Ctx {
    fn new(user: &str, lang: &str) -> Self {
        Self {
            user: user.into(),
            lang: lang.into(),
        }
    }
}

fn expected(key: &str) -> Json {
    fixture("25_context_runtime")[key].clone()
}

fn app(store: InMemoryStore) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().last_value("out"));
    g.add_node("greet", |state: Json, ctx: TaskContext| async move {
        let context = ctx.context::<Ctx>().unwrap();
        let type_name = std::any::type_name::<Ctx>().rsplit("::").next().unwrap();
        ctx.write_custom(json!({"ctx_type": type_name}));
        let store = ctx.store().unwrap();
        store
            .put(&["users"], &context.user, json!({"lang": context.lang}))
            .await
            .map_err(|err| NodeError::new("StoreError", err.to_string()))?;
        let mut out = state["out"].as_array().cloned().unwrap_or_default();
        out.push(json!(format!("hi {} ({})", context.user, context.lang)));
        Ok::<_, NodeError>(json!({ "out": out }))
    })
    .unwrap();
    g.add_node("peek", |state: Json, ctx: TaskContext| async move {
        let context = ctx.context::<Ctx>().unwrap();
        let store = ctx.store().unwrap();
        let item = store
            .get(&["users"], &context.user)
            .await
            .map_err(|err| NodeError::new("StoreError", err.to_string()))?
            .unwrap();
        let mut out = state["out"].as_array().cloned().unwrap_or_default();
        let config = ctx.config();
        let mut keys = vec!["checkpoint_id", "checkpoint_ns", "thread_id"];
        keys.extend(config.configurable.extra.keys().map(String::as_str));
        keys.sort_unstable();
        let metadata: serde_json::Map<String, Json> = config
            .metadata
            .iter()
            .filter(|(k, _)| k.starts_with("langgraph_") && *k != "langgraph_checkpoint_ns")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.push(json!({
            "configurable_keys": keys,
            "metadata": metadata,
            "stored": item.value,
            "run_has_execution_info": ctx.attempt() >= 1,
        }));
        Ok::<_, NodeError>(json!({ "out": out }))
    })
    .unwrap();
    g.add_edge(START, "greet").unwrap();
    g.add_edge("greet", "peek").unwrap();
    g.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .store(store),
    )
    .unwrap()
}

#[tokio::test]
async fn trace_25_context_and_store_reach_the_nodes() {
    let store = InMemoryStore::new();
    let app = app(store.clone());
    let options = RunOptions::new().context(Ctx::new("ann", "en"));
    let chunks: Vec<Json> = app
        .stream_with(
            json!({"out": []}),
            &RunnableConfig::thread("c1"),
            StreamMode::Custom | StreamMode::Updates,
            options,
        )
        .map(|chunk| {
            let chunk = chunk.unwrap();
            json!([chunk.mode.as_str(), chunk.to_json()])
        })
        .collect()
        .await;
    assert_eq!(json!(chunks), expected("dataclass_context"));

    let options = RunOptions::new().context(Ctx::new("bob", "fr"));
    let out = app
        .invoke_with(json!({"out": []}), &RunnableConfig::thread("c2"), options)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out, expected("dict_context"));

    let items: Vec<Json> = store
        .search(SearchOp::new(ns(["users"])))
        .await
        .unwrap()
        .into_iter()
        .map(|found| json!([found.item.key, found.item.value]))
        .collect();
    let mut sorted = items;
    sorted.sort_by_key(|pair| pair[0].as_str().unwrap_or_default().to_owned());
    assert_eq!(json!(sorted), expected("store_items"));
}

#[tokio::test]
async fn trace_25_execution_info() {
    let mut g = StateGraph::new(Schema::new().last_value("info"));
    g.add_node("show_exec", |_state: Json, ctx: TaskContext| async move {
        let info = json!({
            "node_attempt": ctx.attempt(),
            "has_thread": ctx.config().thread_id().is_some(),
        });
        Ok::<_, NodeError>(json!({ "info": info }))
    })
    .unwrap();
    g.add_edge(START, "show_exec").unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let out = app
        .invoke(json!({"info": {}}), &RunnableConfig::thread("e"))
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected("execution_info"));
}

/// Retries count attempts from 1, and a subgraph sees its parent's store.
#[tokio::test]
async fn attempts_count_up_and_subgraphs_share_the_store() {
    use stategraph_graph::NodeSpec;
    use stategraph_pregel::RetryPolicy;

    let mut child = StateGraph::new(Schema::new().last_value("out"));
    child
        .add_node("remember", |_state: Json, ctx: TaskContext| async move {
            let store = ctx.store().unwrap();
            store
                .put(&["child"], "k", json!({"seen": true}))
                .await
                .unwrap();
            Ok::<_, NodeError>(json!({"out": "stored"}))
        })
        .unwrap();
    child.add_edge(START, "remember").unwrap();

    let mut g = StateGraph::new(Schema::new().last_value("out").last_value("attempts"));
    g.add_node_spec(
        "flaky",
        NodeSpec::new(|_state: Json, ctx: TaskContext| async move {
            if ctx.attempt() < 3 {
                return Err(NodeError::new("ConnectionError", "try again"));
            }
            Ok(json!({"attempts": ctx.attempt()}))
        })
        .retry(RetryPolicy {
            initial_interval: std::time::Duration::ZERO,
            jitter: false,
            ..RetryPolicy::default()
        }),
    )
    .unwrap();
    g.add_node("child", child.compile().unwrap()).unwrap();
    g.add_edge(START, "flaky").unwrap();
    g.add_edge("flaky", "child").unwrap();
    let store = InMemoryStore::new();
    let app = g
        .compile_with(CompileOptions::new().store(store.clone()))
        .unwrap();
    let out = app
        .invoke(json!({}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap()["attempts"], 3);
    let item = store.get(&["child"], "k").await.unwrap().unwrap();
    assert_eq!(item.value["seen"], true);
}
