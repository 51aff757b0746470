//! Streams as the control surface of a run: dropping the stream cancels the
//! run between steps and in flight, errors arrive after the chunks produced
//! before them, and the recursion limit stops runaway loops.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use stategraph_channels::LastValue;
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{NodeBuilder, NodeError, Pregel, PregelError, StreamMode};

/// `tick` increments a counter and feeds itself: an endless loop.
fn endless(counter: Arc<AtomicUsize>, delay: Duration) -> Pregel {
    Pregel::builder()
        .channel("n", LastValue::<i64>::new())
        .unwrap()
        .node(
            "tick",
            NodeBuilder::new()
                .subscribe_only("n")
                .func(move |n: Value, _| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(delay).await;
                        Ok::<_, NodeError>(Value::new(n.decode_owned::<i64>()? + 1))
                    }
                })
                .write_to(["n"]),
        )
        .unwrap()
        .input("n")
        .output("n")
        .build()
        .unwrap()
}

#[tokio::test]
async fn dropping_the_stream_stops_the_run() {
    let counter = Arc::new(AtomicUsize::new(0));
    let app = endless(counter.clone(), Duration::ZERO);
    let config = RunnableConfig::default().with_recursion_limit(1_000_000);
    let mut stream = app.stream(Value::new(0_i64), &config, StreamMode::Updates);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.to_json(), serde_json::json!({"tick": {"n": 1}}));
    drop(stream);
    let after_drop = counter.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        counter.load(Ordering::SeqCst),
        after_drop,
        "no node runs after the stream is dropped"
    );
    assert_eq!(
        after_drop, 1,
        "the loop yields after the step that produced the first chunk"
    );
}

#[tokio::test]
async fn dropping_the_stream_cancels_a_task_in_flight() {
    let counter = Arc::new(AtomicUsize::new(0));
    let app = endless(counter.clone(), Duration::from_secs(3600));
    let stream = app.stream(
        Value::new(0_i64),
        &RunnableConfig::default(),
        StreamMode::Updates,
    );
    let timed_out = tokio::time::timeout(Duration::from_millis(20), stream.into_future()).await;
    assert!(timed_out.is_err(), "the node is still sleeping");
    // The timeout dropped the stream, and with it the sleeping task.
    assert_eq!(counter.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_recursion_limit_stops_a_loop_after_its_chunks() {
    let app = endless(Arc::new(AtomicUsize::new(0)), Duration::ZERO);
    let config = RunnableConfig::default().with_recursion_limit(5);
    let items: Vec<_> = app
        .stream(Value::new(0_i64), &config, StreamMode::Values)
        .collect()
        .await;
    let (chunks, errors): (Vec<_>, Vec<_>) = items.into_iter().partition(Result::is_ok);
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        errors[0],
        Err(PregelError::GraphRecursion { limit: 5 })
    ));
    assert!(
        !chunks.is_empty(),
        "chunks produced before the error are delivered first"
    );
    let err = app.invoke(Value::new(0_i64), &config).await.unwrap_err();
    assert_eq!(err.class(), "GraphRecursionError");
    assert!(err.to_string().starts_with("Recursion limit of 5 reached"));
}

#[tokio::test]
async fn a_node_panicking_before_its_future_exists_fails_the_run_cleanly() {
    let app = Pregel::builder()
        .channel("n", LastValue::<i64>::new())
        .unwrap()
        .node(
            "boom",
            NodeBuilder::new()
                .subscribe_only("n")
                .func(|n: Value, _| {
                    if n.decode_owned::<i64>().is_ok() {
                        panic!("no future for you");
                    }
                    async { Ok::<_, NodeError>(Value::null()) }
                })
                .write_to(["n"]),
        )
        .unwrap()
        .input("n")
        .output("n")
        .build()
        .unwrap();
    let err = app
        .invoke(Value::new(1_i64), &RunnableConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "Panic");
    assert!(err.to_string().contains("no future for you"), "{err}");
}
