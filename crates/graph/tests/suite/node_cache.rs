//! Node caching (LangGraph's `cache_policy` + `InMemoryCache`): a cached
//! node does not run again for the same input, its writes are applied as
//! if it had, and its `updates` chunk carries `"__metadata__": {"cached": true}`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CachePolicy, CompileOptions, END, InMemoryCache, NodeError, NodeSpec, START, Schema,
    StateGraph, StreamMode,
};

fn graph(
    runs: Arc<AtomicUsize>,
    policy: CachePolicy,
    cache: InMemoryCache,
) -> stategraph_graph::CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().last_value("x").append("log"));
    g.add_node_spec(
        "slow",
        NodeSpec::new(move |s: Json| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, NodeError>(json!({"log": [format!("x={}", s["x"])]}))
            }
        })
        .cache(policy),
    )
    .unwrap();
    g.add_edge(START, "slow").unwrap();
    g.add_edge("slow", END).unwrap();
    g.compile_with(CompileOptions::new().cache(cache)).unwrap()
}

async fn updates(app: &stategraph_graph::CompiledStateGraph, x: i64) -> Vec<Json> {
    app.stream(
        json!({"x": x}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .map(|c| c.unwrap().to_json())
    .collect()
    .await
}

#[tokio::test]
async fn the_same_input_is_served_from_the_cache() {
    let runs = Arc::new(AtomicUsize::new(0));
    let app = graph(runs.clone(), CachePolicy::new(), InMemoryCache::new());
    assert_eq!(
        updates(&app, 1).await,
        vec![json!({"slow": {"log": ["x=1"]}})]
    );
    assert_eq!(
        updates(&app, 1).await,
        vec![json!({"slow": {"log": ["x=1"]}, "__metadata__": {"cached": true}})]
    );
    let out = app
        .invoke(json!({"x": 1}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        json!({"x": 1, "log": ["x=1"]}),
        "cached writes are applied"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    updates(&app, 2).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "another input runs the node"
    );
}

#[tokio::test]
async fn entries_expire_after_their_ttl() {
    let runs = Arc::new(AtomicUsize::new(0));
    let app = graph(
        runs.clone(),
        CachePolicy::new().ttl(Duration::from_millis(20)),
        InMemoryCache::new(),
    );
    updates(&app, 1).await;
    updates(&app, 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(40)).await;
    updates(&app, 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_custom_key_decides_what_counts_as_the_same_input() {
    let runs = Arc::new(AtomicUsize::new(0));
    let policy = CachePolicy::new().key(|_| "always the same".into());
    let cache = InMemoryCache::new();
    let app = graph(runs.clone(), policy, cache.clone());
    updates(&app, 1).await;
    // A different input, the same key: the first run's writes come back.
    let second = updates(&app, 2).await;
    assert_eq!(second[0]["slow"], json!({"log": ["x=1"]}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(cache.len(), 1);
}

#[tokio::test]
async fn without_a_graph_cache_the_policy_is_inert() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut g = StateGraph::new(Schema::new().last_value("x"));
    let counter = runs.clone();
    g.add_node_spec(
        "n",
        NodeSpec::new(move |_: Json| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, NodeError>(json!(null)) }
        })
        .cache(CachePolicy::new()),
    )
    .unwrap();
    g.add_edge(START, "n").unwrap();
    let app = g.compile().unwrap();
    app.invoke(json!({"x": 1}), &RunnableConfig::default())
        .await
        .unwrap();
    app.invoke(json!({"x": 1}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// `clear_cache` (LangGraph's): the cleared node runs again; other graphs
/// sharing the cache keep their entries; unknown names are skipped, as
/// LangGraph skips them; a graph without a cache is an error.
#[tokio::test]
async fn clear_cache_drops_a_nodes_entries() {
    let (runs, other_runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let cache = InMemoryCache::new();
    let app = graph(runs.clone(), CachePolicy::new(), cache.clone());
    updates(&app, 1).await;
    updates(&app, 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "served from the cache");

    app.clear_cache(Some(&["slow"])).unwrap();
    updates(&app, 1).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "ran again after clear_cache"
    );
    app.clear_cache(None).unwrap();
    updates(&app, 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    // A graph whose nodes have other names keeps its entries.
    let mut other = StateGraph::new(Schema::new().last_value("x").append("log"));
    other
        .add_node_spec(
            "other",
            NodeSpec::new(move |_: Json| {
                let runs = other_runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, NodeError>(json!({"log": ["o"]}))
                }
            })
            .cache(CachePolicy::new()),
        )
        .unwrap();
    other.add_edge(START, "other").unwrap();
    let other = other
        .compile_with(CompileOptions::new().cache(cache.clone()))
        .unwrap();
    updates(&other, 1).await;
    let before = cache.len();
    app.clear_cache(None).unwrap();
    assert_eq!(cache.len(), before - 1, "only `slow`'s entry went");

    updates(&app, 1).await;
    app.clear_cache(Some(&["nope"])).unwrap();
    assert_eq!(cache.len(), before, "an unknown name clears nothing");
    let mut plain = StateGraph::new(Schema::new().last_value("x"));
    plain
        .add_node("n", |_: Json| async { Ok::<_, NodeError>(()) })
        .unwrap();
    plain.add_edge(START, "n").unwrap();
    let err = plain.compile().unwrap().clear_cache(None).unwrap_err();
    assert_eq!(err.class(), "ValueError");
    assert!(err.to_string().contains("No cache is set"), "{err}");
}
