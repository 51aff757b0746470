//! Error handlers, node defaults and timeouts beyond trace 38: what a
//! handler does not catch, a handler that fails, handlers beside other
//! tasks, idle timeouts kept alive by heartbeats, and the build errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    END, GraphError, NODE_TIMEOUT_ERROR, NodeDefaults, NodeError, NodeSpec, RetryOn, RetryPolicy,
    START, Schema, StateGraph, TaskContext, TimeoutPolicy,
};
use stategraph_pregel::PregelError;

fn failing(class: &'static str) -> impl Fn(Json) -> std::future::Ready<Result<Json, NodeError>> {
    move |_| std::future::ready(Err(NodeError::new(class, "it broke")))
}

fn logging_handler(_s: Json, ctx: TaskContext) -> std::future::Ready<Result<Json, NodeError>> {
    let failure = ctx
        .failure()
        .map(|f| format!("{} failed: {}", f.node, f.error.class()));
    std::future::ready(Ok(
        json!({"log": [failure.unwrap_or_else(|| "no failure".into())]}),
    ))
}

async fn run(graph: &StateGraph) -> Result<Json, PregelError> {
    let out = graph
        .compile()
        .map_err(|err| PregelError::InvalidGraph(err.to_string()))?
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await?;
    Ok(out.to_json().unwrap_or(Json::Null))
}

#[tokio::test]
async fn a_handler_answers_beside_the_other_tasks_of_its_step() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec(
        "bad",
        NodeSpec::new(failing("ConnectionError")).error_handler(logging_handler),
    )
    .unwrap();
    g.add_node("good", |_s: Json| {
        std::future::ready(Ok::<_, NodeError>(json!({"log": ["good ran"]})))
    })
    .unwrap();
    g.add_node("after_bad", |_s: Json| {
        std::future::ready(Ok::<_, NodeError>(json!({"log": ["after_bad ran"]})))
    })
    .unwrap();
    g.add_edge(START, "bad").unwrap();
    g.add_edge(START, "good").unwrap();
    g.add_edge("bad", "after_bad").unwrap();
    let out = run(&g).await.unwrap();
    // Task order: the handler takes the failed task's place (path `bad`).
    assert_eq!(
        out["log"],
        json!(["bad failed: ConnectionError", "good ran"])
    );
}

#[tokio::test]
async fn a_failing_handler_fails_the_run_with_its_own_error() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec(
        "bad",
        NodeSpec::new(failing("ConnectionError")).error_handler(failing("HandlerError")),
    )
    .unwrap();
    g.add_edge(START, "bad").unwrap();
    let err = run(&g).await.unwrap_err();
    let PregelError::Node { node, error } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        (node.as_str(), error.class()),
        ("__error_handler__bad", "HandlerError")
    );
}

#[tokio::test]
async fn interrupts_are_not_failures() {
    let handled = Arc::new(AtomicUsize::new(0));
    let seen = handled.clone();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec(
        "ask",
        NodeSpec::new(|_s: Json, ctx: TaskContext| async move {
            let answer = ctx.interrupt(json!("question?"))?;
            Ok::<_, NodeError>(json!({"log": [answer.to_json().unwrap_or_default()]}))
        })
        .error_handler(move |_s: Json, _ctx: TaskContext| {
            seen.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok::<_, NodeError>(json!({})))
        }),
    )
    .unwrap();
    g.add_edge(START, "ask").unwrap();
    let out = run(&g).await.unwrap();
    assert!(out.get("__interrupt__").is_some(), "{out}");
    assert_eq!(handled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn defaults_apply_to_nodes_without_their_own() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.set_node_defaults(
        NodeDefaults::new()
            .retry(RetryPolicy {
                max_attempts: 3,
                initial_interval: Duration::from_millis(1),
                jitter: false,
                ..RetryPolicy::default()
            })
            .error_handler(logging_handler),
    )
    .unwrap();
    g.add_node("flaky", move |_s: Json| {
        counter.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err::<Json, _>(NodeError::new("ConnectionError", "down")))
    })
    .unwrap();
    // A node's own handler wins over the default.
    g.add_node_spec(
        "own",
        NodeSpec::new(failing("ValueError")).error_handler(|_s: Json, _ctx: TaskContext| {
            std::future::ready(Ok::<_, NodeError>(json!({"log": ["own handler"]})))
        }),
    )
    .unwrap();
    g.add_edge(START, "flaky").unwrap();
    g.add_edge("flaky", "own").unwrap();
    g.add_edge("own", END).unwrap();
    let out = run(&g).await.unwrap();
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    // The default handler's output replaces `flaky`'s routing: its edge to
    // `own` does not fire.
    assert_eq!(out["log"], json!(["flaky failed: ConnectionError"]));
}

#[tokio::test]
async fn heartbeats_keep_an_idle_timeout_from_firing() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec(
        "worker",
        NodeSpec::new(|_s: Json, ctx: TaskContext| async move {
            for _ in 0..6 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                ctx.heartbeat();
            }
            Ok::<_, NodeError>(json!({"log": ["done"]}))
        })
        .timeout(TimeoutPolicy::idle(Duration::from_millis(80))),
    )
    .unwrap();
    g.add_node_spec(
        "stuck",
        NodeSpec::new(|_s: Json| async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok::<_, NodeError>(json!({"log": ["never"]}))
        })
        .timeout(TimeoutPolicy::idle(Duration::from_millis(50)))
        .retry(RetryPolicy {
            retry_on: RetryOn::Classes(vec![]),
            ..RetryPolicy::default()
        }),
    )
    .unwrap();
    g.add_edge(START, "worker").unwrap();
    g.add_edge("worker", "stuck").unwrap();
    let err = run(&g).await.unwrap_err();
    let PregelError::Node { node, error } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        (node.as_str(), error.class()),
        ("stuck", NODE_TIMEOUT_ERROR)
    );
    assert!(
        error.message().contains("without making progress"),
        "{error}"
    );
}

#[test]
fn zero_timeouts_and_taken_names_are_build_errors() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    let err = g
        .add_node_spec("n", NodeSpec::new(failing("X")).timeout(Duration::ZERO))
        .err()
        .unwrap();
    assert!(
        matches!(err, GraphError::InvalidTimeout { ref node, .. } if node == "n"),
        "{err}"
    );
    let err = g
        .set_node_defaults(NodeDefaults::new().timeout(Duration::ZERO))
        .err()
        .unwrap();
    assert!(matches!(err, GraphError::InvalidTimeout { .. }), "{err}");

    g.add_node("__error_handler__m", failing("X")).unwrap();
    let err = g
        .add_node_spec(
            "m",
            NodeSpec::new(failing("X")).error_handler(logging_handler),
        )
        .err()
        .unwrap();
    assert!(matches!(err, GraphError::DuplicateErrorHandler(_)), "{err}");

    g.add_node("__default_error_handler__", failing("X"))
        .unwrap();
    let err = g
        .set_node_defaults(NodeDefaults::new().error_handler(logging_handler))
        .err()
        .unwrap();
    assert!(matches!(err, GraphError::DuplicateErrorHandler(_)), "{err}");
}
