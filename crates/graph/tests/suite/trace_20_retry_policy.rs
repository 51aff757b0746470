//! Golden trace 20: retry policies. A node failing twice then succeeding on
//! the third attempt (only the successful attempt's writes are streamed);
//! `max_attempts` exhausted (the last exception surfaces); a `retry_on` that
//! does not match (fails at once); the default `retry_on` does not retry
//! `ValueError`; a list of policies (the first matching one applies); a
//! predicate `retry_on`.
//!
//! The Python graphs are compiled with an `InMemorySaver`; most
//! observations do not depend on it (each run uses a fresh thread). Two do:
//! the failed task's saved error in `get_state().tasks`
//! (`exhausted_state_tasks`), and resuming a failed thread with no input,
//! which runs the failed node again with a fresh retry budget
//! (`resume_after_failure`). Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, NodeError, NodeSpec, START, Schema, StateGraph, StreamMode,
};
use stategraph_pregel::{Input, RetryOn, RetryPolicy};
use support::{assert_trace, assert_trace_ids, catch_invoke, fixture, snapshot_json, stream};

fn expected(key: &str) -> Json {
    fixture("20_retry_policy")[key].clone()
}

/// The case's `flaky(name, fail_times, exc)`: raises `exc` on the first
/// `fail_times` attempts. `str(KeyError(m))` is `'m'` in Python, quotes
/// included.
fn flaky(
    name: &'static str,
    fail_times: usize,
    class: &'static str,
    attempts: &Arc<AtomicUsize>,
) -> NodeSpec {
    let attempts = attempts.clone();
    NodeSpec::new(move |_s: Json| {
        let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if attempt <= fail_times {
            let message = format!("{name} attempt {attempt}");
            let message = if class == "KeyError" {
                format!("'{message}'")
            } else {
                message
            };
            Err(NodeError::new(class, message))
        } else {
            Ok(json!({"log": [format!("{name} ok after {attempt}")]}))
        })
    })
}

/// `RetryPolicy(max_attempts=n, initial_interval=0.01, backoff_factor=1.0,
/// jitter=False, retry_on=...)`.
fn fast(max_attempts: u32, retry_on: RetryOn) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_interval: Duration::from_millis(10),
        backoff_factor: 1.0,
        jitter: false,
        retry_on,
        ..RetryPolicy::default()
    }
}

fn classes(names: &[&str]) -> RetryOn {
    RetryOn::Classes(names.iter().map(|c| (*c).to_owned()).collect())
}

fn build(spec: NodeSpec) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("n", spec).unwrap();
    g.add_edge(START, "n").unwrap();
    g.compile().unwrap()
}

/// `{"result": catch(invoke), "attempts": n}`.
async fn result_and_attempts(spec: NodeSpec, attempts: &Arc<AtomicUsize>) -> Json {
    let result = catch_invoke(&build(spec), json!({"log": []}), &RunnableConfig::default()).await;
    json!({"result": result, "attempts": attempts.load(Ordering::SeqCst)})
}

#[tokio::test]
async fn trace_20_third_attempt() {
    let attempts = Arc::default();
    let spec = flaky("third", 2, "ConnectionError", &attempts).retry(fast(3, RetryOn::Default));
    let streamed = stream(
        &build(spec),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    let out = json!({
        "updates": streamed.payloads(),
        "attempts": attempts.load(Ordering::SeqCst),
    });
    assert_trace(&out, &expected("third_attempt"));
}

#[tokio::test]
async fn trace_20_exhausted() {
    let attempts = Arc::default();
    let spec = flaky("never", 99, "ConnectionError", &attempts).retry(fast(3, RetryOn::Default));
    assert_trace(
        &result_and_attempts(spec, &attempts).await,
        &expected("exhausted"),
    );
}

#[tokio::test]
async fn trace_20_not_retryable() {
    let attempts = Arc::default();
    let spec =
        flaky("typed", 99, "KeyError", &attempts).retry(fast(3, classes(&["ConnectionError"])));
    assert_trace(
        &result_and_attempts(spec, &attempts).await,
        &expected("not_retryable"),
    );
}

#[tokio::test]
async fn trace_20_default_retry_on_valueerror() {
    let attempts = Arc::default();
    let spec = flaky("valueerr", 1, "ValueError", &attempts).retry(fast(3, RetryOn::Default));
    assert_trace(
        &result_and_attempts(spec, &attempts).await,
        &expected("default_retry_on_valueerror"),
    );
}

#[tokio::test]
async fn trace_20_policy_list() {
    let attempts = Arc::default();
    let spec = flaky("multi", 2, "KeyError", &attempts).retry_policies(vec![
        fast(2, classes(&["ConnectionError"])),
        fast(5, classes(&["KeyError"])),
    ]);
    assert_trace(
        &result_and_attempts(spec, &attempts).await,
        &expected("policy_list"),
    );
}

#[tokio::test]
async fn trace_20_predicate() {
    let attempts = Arc::default();
    let predicate = RetryOn::Predicate(Arc::new(|err: &NodeError| err.message().contains("pred")));
    let spec = flaky("pred", 1, "RuntimeError", &attempts).retry(fast(2, predicate));
    assert_trace(
        &result_and_attempts(spec, &attempts).await,
        &expected("predicate"),
    );
}

fn build_saved(spec: NodeSpec) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("n", spec).unwrap();
    g.add_edge(START, "n").unwrap();
    g.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test]
async fn trace_20_exhausted_state_tasks() {
    let attempts = Arc::default();
    let app = build_saved(
        flaky("never", 99, "ConnectionError", &attempts).retry(fast(3, RetryOn::Default)),
    );
    let cfg = RunnableConfig::thread("b");
    let failed = catch_invoke(&app, json!({"log": []}), &cfg).await;
    assert_trace(&failed, &expected("exhausted")["result"]);
    let state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&state["tasks"], &expected("exhausted_state_tasks"));
}

#[tokio::test]
async fn trace_20_resume_after_failure() {
    let attempts = Arc::default();
    let app = build_saved(
        flaky("never", 3, "ConnectionError", &attempts).retry(fast(3, RetryOn::Default)),
    );
    let cfg = RunnableConfig::thread("g");
    let first = catch_invoke(&app, json!({"log": []}), &cfg).await;
    let second = catch_invoke(&app, Input::Resume, &cfg).await;
    let out = json!({
        "first": first,
        "second": second,
        "attempts_total": attempts.load(Ordering::SeqCst),
    });
    assert_trace(&out, &expected("resume_after_failure"));
}
