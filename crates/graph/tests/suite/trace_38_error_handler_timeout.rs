//! Golden trace 38: a node-level error handler (it runs once the node's
//! retries are spent, sees the failure, and its `Command` replaces the failed
//! node's update and routing: the static edge to `next` does not fire), a
//! graph-wide default handler from `set_node_defaults`, and a per-node
//! timeout (`NodeTimeoutError`, retried by a retry policy).
//!
//! In Rust a handler reads the failure with `TaskContext::failure`; Python
//! injects it by parameter name, and its `misnamed_param_handler`
//! observation is a `TypeError` at run time for a handler whose parameter
//! is not named `error`. Ours is checked by the compiler: the
//! `compile_fail` doctests on `NodeSpec::error_handler` and
//! `NodeDefaults::error_handler` (crates/graph/src/builder.rs) show that a
//! handler taking the failure as a parameter does not compile, and
//! `trace_38_misnamed_param_handler` that a handler of the right shape,
//! set as the graph's default as in the case, receives the failure.

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
    Command, CompileOptions, END, NodeDefaults, NodeError, NodeSpec, RetryOn, RetryPolicy, START,
    Schema, StateGraph, StreamMode, TaskContext,
};
use support::{assert_trace, catch_invoke, fixture, node, stream};

fn expected(key: &str) -> Json {
    fixture("38_error_handler_timeout")[key].clone()
}

/// `RetryPolicy(max_attempts=n, initial_interval=0.01, jitter=False, ...)`.
fn fast(max_attempts: u32, retry_on: RetryOn) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_interval: Duration::from_millis(10),
        jitter: false,
        retry_on,
        ..RetryPolicy::default()
    }
}

/// What the Python handlers write: `repr` of the failure's exception.
fn failure_text(ctx: &TaskContext) -> (String, String, String) {
    let failure = ctx.failure().unwrap();
    (
        failure.node.to_string(),
        failure.error.class().to_owned(),
        failure.error.repr(),
    )
}

#[tokio::test]
async fn trace_38_node_error_handler() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let boom = NodeSpec::new(move |_s: Json| {
        let attempt = counter.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(Err::<Json, _>(NodeError::new(
            "ConnectionError",
            format!("boom #{attempt}"),
        )))
    })
    .retry(fast(2, RetryOn::Default))
    .error_handler(|_s: Json, ctx: TaskContext| {
        let (node, _, repr) = failure_text(&ctx);
        std::future::ready(Ok::<_, NodeError>(
            Command::new()
                .update_json(json!({"log": [format!("handled {node}: {repr}")]}))
                .goto("recover"),
        ))
    });
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("boom", boom).unwrap();
    g.add_node("recover", node(|_| json!({"log": ["recover"]})))
        .unwrap();
    g.add_node("next", node(|_| json!({"log": ["next (static edge)"]})))
        .unwrap();
    g.add_edge(START, "boom").unwrap();
    g.add_edge("boom", "next").unwrap();
    g.add_edge("recover", END).unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunnableConfig::thread("eh");
    let streamed = stream(&app, json!({"log": []}), &config, StreamMode::Updates).await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    assert_trace(&streamed.payloads(), &expected("updates"));
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        expected("attempts").as_u64().unwrap() as usize
    );
    let state = app.get_state(&config).await.unwrap();
    assert_trace(&state.values.to_json().unwrap(), &expected("final"));
    let mut nodes: Vec<String> = app
        .get_graph(false)
        .nodes()
        .iter()
        .map(|n| n.id.clone())
        .collect();
    nodes.sort_unstable();
    assert_eq!(json!(nodes), expected("nodes"));
}

#[tokio::test]
async fn trace_38_default_handler() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.set_node_defaults(
        NodeDefaults::new().error_handler(|_s: Json, ctx: TaskContext| {
            let (node, class, _) = failure_text(&ctx);
            std::future::ready(Ok::<_, NodeError>(
                json!({"log": [format!("default handler saw {class} in {node}")]}),
            ))
        }),
    )
    .unwrap();
    add_failing_node(&mut g);
    let out = catch_invoke(
        &g.compile().unwrap(),
        json!({"log": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("default_handler"));
}

/// The case's `misnamed_param_handler`: LangGraph fails the run with a
/// `TypeError` naming the handler's parameter; in Rust that handler does
/// not compile (see the module doc), and the one that does compile gets
/// the failure from its context.
#[tokio::test]
async fn trace_38_misnamed_param_handler() {
    let recorded = expected("misnamed_param_handler");
    assert_eq!(recorded["raised"]["$error"], "TypeError");
    let message = recorded["raised"]["message"].as_str().unwrap();
    assert!(message.ends_with("missing 1 required positional argument: 'err'"));

    let mut g = StateGraph::new(Schema::new().append("log"));
    g.set_node_defaults(
        NodeDefaults::new().error_handler(|_s: Json, ctx: TaskContext| {
            let failure = ctx.failure().map(|failure| {
                json!([
                    failure.node.as_ref(),
                    failure.error.class(),
                    failure.error.message()
                ])
            });
            std::future::ready(Ok::<_, NodeError>(json!({"log": [failure]})))
        }),
    )
    .unwrap();
    add_failing_node(&mut g);
    let out = g
        .compile()
        .unwrap()
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        json!({"log": [["bad", "ZeroDivisionError", "division by zero"]]})
    );
}

/// The case's `slow`: sleeps 0.3 s on its first call only.
fn slow(calls: &Arc<AtomicUsize>) -> NodeSpec {
    let calls = calls.clone();
    NodeSpec::new(move |_s: Json| {
        let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if call == 1 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Ok::<_, NodeError>(json!({"log": [format!("slow finished on call {call}")]}))
        }
    })
    .timeout(Duration::from_millis(100))
}

/// The message embeds the measured time: masked as the case masks it.
fn mask_elapsed(mut out: Json) -> Json {
    if let Some(message) = out["raised"]["message"].as_str() {
        let start = message.find("elapsed: ").map(|i| i + "elapsed: ".len());
        let end = message.rfind("s).");
        if let (Some(start), Some(end)) = (start, end) {
            let masked = format!("{}<t>{}", &message[..start], &message[end..]);
            out["raised"]["message"] = json!(masked);
        }
    }
    out
}

#[tokio::test]
async fn trace_38_timeout() {
    let calls = Arc::default();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("slow", slow(&calls)).unwrap();
    g.add_edge(START, "slow").unwrap();
    let out = catch_invoke(
        &g.compile().unwrap(),
        json!({"log": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&mask_elapsed(out), &expected("timeout_error"));
}

#[tokio::test]
async fn trace_38_timeout_then_retry() {
    let calls = Arc::default();
    let mut g = StateGraph::new(Schema::new().append("log"));
    let any = RetryOn::Predicate(Arc::new(|_: &NodeError| true));
    g.add_node_spec("slow", slow(&calls).retry(fast(2, any)))
        .unwrap();
    g.add_edge(START, "slow").unwrap();
    let out = catch_invoke(
        &g.compile().unwrap(),
        json!({"log": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("timeout_then_retry"));
}

/// `START -> bad`, where `bad` fails with Python's `ZeroDivisionError`.
fn add_failing_node(g: &mut StateGraph) {
    g.add_node("bad", |_s: Json| {
        std::future::ready(Err::<Json, _>(NodeError::new(
            "ZeroDivisionError",
            "division by zero",
        )))
    })
    .unwrap();
    g.add_edge(START, "bad").unwrap();
}
