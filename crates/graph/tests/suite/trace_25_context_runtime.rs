//! Golden trace 25: a run's typed context and store reach the nodes.
//! `greet` writes a custom chunk naming the context's type and puts the
//! user's language in the store; `peek` reads it back from the store. The
//! store keeps what both runs put; `node_attempt` is 1 on a first attempt.
//!
//! `peek` reads its task config: the configurable keys (the typed
//! `checkpoint_id`, `checkpoint_ns` and `thread_id` always exist, as
//! LangGraph's keys do even when `None`) and the `langgraph_*` metadata.
//! `context_jsonschema` is the schema of the context type the graph declares
//! with `StateGraph::with_context_schema::<Ctx>()`; the dict context is a
//! JSON context (`RunOptions::context_json`) the run decodes into `Ctx`
//! before its first step, its default filled in as the dataclass's.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{ErrorKind, RunnableConfig};
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, NodeError, RunOptions, START, Schema, StateGraph,
    StreamMode, TaskContext,
};
use stategraph_llm::schemars::{self, JsonSchema};
use stategraph_pregel::PregelError;
use stategraph_store::{InMemoryStore, SearchOp, Store, ns};
use support::fixture;

// LangGraph's `Ctx` dataclass: `lang` defaults to `"en"`. (No doc comment:
// schemars would make it the schema's `description`, as pydantic does with a
// docstring, and the case's dataclass has none.)
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars")]
struct Ctx {
    user: String,
    #[serde(default = "english")]
    lang: String,
}

fn english() -> String {
    "en".into()
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
    let mut g = StateGraph::new(Schema::new().last_value("out")).with_context_schema::<Ctx>();
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

    // LangGraph's `context={"user": "bob", "lang": "fr"}`, coerced into `Ctx`.
    let options = RunOptions::new().context_json(json!({"user": "bob", "lang": "fr"}));
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
async fn trace_25_context_jsonschema() {
    let app = app(InMemoryStore::new());
    assert_eq!(
        app.context_jsonschema(),
        Some(expected("context_jsonschema"))
    );
}

/// A JSON context takes the declared type's defaults; one that does not
/// decode fails the run before any step with a validation error naming
/// the type and the bad part; a graph that declared no type reads the JSON.
#[tokio::test]
async fn trace_25_json_context_decodes_or_fails_typed() {
    let store = InMemoryStore::new();
    let app = app(store.clone());
    let options = RunOptions::new().context_json(json!({"user": "cy"}));
    app.invoke_with(json!({"out": []}), &RunnableConfig::thread("d1"), options)
        .await
        .unwrap();
    let item = store.get(&["users"], "cy").await.unwrap().unwrap();
    assert_eq!(json!(item.value), json!({"lang": "en"}));

    for (context, path) in [
        (json!({"lang": "fr"}), "."),
        (json!({"user": 7}), "user"),
        (json!("ann"), "."),
    ] {
        let options = RunOptions::new().context_json(context.clone());
        let config = RunnableConfig::thread("d2");
        let err = app
            .invoke_with(json!({"out": []}), &config, options)
            .await
            .unwrap_err();
        assert!(matches!(err, PregelError::InvalidContext(_)), "{err:?}");
        assert_eq!(err.class(), "ValidationError");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let message = err.to_string();
        assert!(message.starts_with("invalid run context: cannot decode value as `Ctx`"));
        assert!(message.contains(&format!("at `{path}`")), "{message}");
        // Nothing ran: the thread has no checkpoint.
        let state = app.get_state(&config).await.unwrap();
        assert_eq!(state.values.to_json().unwrap(), json!({}));

        // A stream ends with the same error, before any chunk.
        let options = RunOptions::new().context_json(context);
        let chunks: Vec<_> = app
            .stream_with(json!({"out": []}), &config, StreamMode::Updates, options)
            .collect()
            .await;
        assert_eq!(chunks.len(), 1);
        assert!(matches!(&chunks[0], Err(PregelError::InvalidContext(_))));
    }

    let mut g = StateGraph::new(Schema::new().last_value("out"));
    g.add_node("echo", |_: Json, ctx: TaskContext| async move {
        let context = ctx.context::<Json>().cloned().unwrap_or_default();
        Ok::<_, NodeError>(json!({ "out": context }))
    })
    .unwrap();
    g.add_edge(START, "echo").unwrap();
    let out = g
        .compile()
        .unwrap()
        .invoke_with(
            json!({}),
            &RunnableConfig::default(),
            RunOptions::new().context_json(json!({"any": ["shape"]})),
        )
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), json!({"out": {"any": ["shape"]}}));
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
