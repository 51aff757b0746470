//! The tasks of one step run at once: async nodes on the caller's runtime,
//! synchronous ones (`blocking`) on tokio's blocking pool, so CPU-bound
//! nodes use several cores as on LangGraph's thread pool; and
//! `max_concurrency` caps how many run at once (issue 23 item 7).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{NodeError, START, Schema, StateGraph, blocking};

/// How many tasks run now, and the most that ever did.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

const NODES: [&str; 4] = ["a", "b", "c", "d"];

/// `START -> {a, b, c, d}`, each node built by `add`.
fn fan_out(add: impl Fn(&mut StateGraph, &str)) -> stategraph_graph::CompiledStateGraph {
    let mut graph = StateGraph::new(Schema::new().append("log"));
    for name in NODES {
        add(&mut graph, name);
        graph.add_edge(START, name).unwrap();
    }
    graph.compile().unwrap()
}

/// Four synchronous nodes meet at a barrier for four: they can only pass it
/// if they all run at once, each on a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_nodes_of_a_step_run_on_threads_of_their_own() {
    let barrier = Arc::new(Barrier::new(NODES.len()));
    let app = fan_out(|graph, name| {
        let barrier = barrier.clone();
        let name = name.to_owned();
        graph
            .add_node(
                &name.clone(),
                blocking(move |_: Json| {
                    barrier.wait();
                    Ok::<_, NodeError>(json!({"log": [name.clone()]}))
                }),
            )
            .unwrap();
    });
    let config = RunnableConfig::default();
    let run = app.invoke(json!({"log": []}), &config);
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the four nodes never met: they did not run at once")
        .unwrap();
    let mut log: Vec<String> =
        serde_json::from_value(out.to_json().unwrap()["log"].clone()).unwrap();
    log.sort();
    assert_eq!(log, NODES);
}

/// `max_concurrency` caps the tasks running at once, async and blocking
/// alike; without it all four run together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrency_caps_the_tasks_running_at_once() {
    for limit in [None, Some(2), Some(1)] {
        let gauge = Arc::new(Gauge::default());
        let app = fan_out(|graph, name| {
            let gauge = gauge.clone();
            graph
                .add_node(name, move |_: Json| {
                    let gauge = gauge.clone();
                    async move {
                        gauge.enter();
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        gauge.leave();
                        Ok::<_, NodeError>(json!({"log": ["x"]}))
                    }
                })
                .unwrap();
        });
        let mut config = RunnableConfig::default();
        if let Some(limit) = limit {
            config = config.with_max_concurrency(limit);
        }
        let out = app.invoke(json!({"log": []}), &config).await.unwrap();
        assert_eq!(out.to_json().unwrap()["log"], json!(["x", "x", "x", "x"]));
        assert_eq!(
            gauge.most.load(Ordering::SeqCst),
            limit.unwrap_or(4),
            "{limit:?}"
        );
    }

    let gauge = Arc::new(Gauge::default());
    let app = fan_out(|graph, name| {
        let gauge = gauge.clone();
        graph
            .add_node(
                name,
                blocking(move |_: Json| {
                    gauge.enter();
                    std::thread::sleep(Duration::from_millis(20));
                    gauge.leave();
                    Ok::<_, NodeError>(json!({"log": ["y"]}))
                }),
            )
            .unwrap();
    });
    let config = RunnableConfig::default().with_max_concurrency(2);
    app.invoke(json!({"log": []}), &config).await.unwrap();
    assert_eq!(gauge.most.load(Ordering::SeqCst), 2);
}

/// A panic in a blocking node is the node's `Panic` error, as in an async one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_blocking_node_fails_its_task() {
    let mut graph = StateGraph::new(Schema::new().append("log"));
    graph
        .add_node(
            "boom",
            blocking(|_: Json| -> Result<Json, NodeError> { panic!("kaboom") }),
        )
        .unwrap();
    graph.add_edge(START, "boom").unwrap();
    let err = graph
        .compile()
        .unwrap()
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("kaboom"), "{err}");
}
