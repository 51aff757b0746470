//! Golden trace 26: the functional API. An entrypoint whose tasks run in
//! parallel and stream their results as updates; an interrupt in the
//! entrypoint, resumed without running the finished tasks again (their
//! saved results are replayed); `previous` and `Final` (a returned value
//! apart from the saved one); a retried task; no input on a fresh thread;
//! the drawn graph. Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, Entrypoint, Final, NodeError, StreamMode,
    TaskContext,
};
use stategraph_pregel::{Input, RetryPolicy};
use support::{
    assert_trace_ids, catch, fixture, history_json, py_interrupts, snapshot_json, stream_ok,
};

fn expected(key: &str) -> Json {
    fixture("26_functional_api")[key].clone()
}

type Log = Arc<Mutex<Vec<String>>>;

fn workflow(executions: &Log) -> CompiledStateGraph {
    let executions = executions.clone();
    Entrypoint::new(
        "workflow",
        move |inputs: Json, _previous: Option<Value>, ctx: TaskContext| {
            let executions = executions.clone();
            async move {
                let xs: Vec<i64> = inputs["xs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Json::as_i64)
                    .collect();
                let doubles = xs.into_iter().map(|x| {
                    let executions = executions.clone();
                    ctx.task("slow_double", &[], move || {
                        let executions = executions.clone();
                        async move {
                            executions.lock().unwrap().push(format!("double({x})"));
                            tokio::time::sleep(Duration::from_millis(50 * x.unsigned_abs())).await;
                            Ok::<_, NodeError>(2 * x)
                        }
                    })
                });
                let doubled = futures::future::try_join_all(doubles).await?;
                let seen = executions.clone();
                let joined: String = ctx
                    .task("join", &[], move || {
                        let seen = seen.clone();
                        let parts: Vec<String> = doubled.iter().map(ToString::to_string).collect();
                        async move {
                            seen.lock().unwrap().push("join".into());
                            Ok::<_, NodeError>(parts.join("+"))
                        }
                    })
                    .await?;
                let approved = ctx.interrupt(json!({"joined": joined}))?.to_json()?;
                Ok::<_, NodeError>(json!({"joined": joined, "approved": approved}))
            }
        },
    )
    .compile(CompileOptions::new().checkpointer(InMemorySaver::new()))
    .unwrap()
}

/// The executions with the first two (run in parallel) sorted.
fn executions_json(log: &Log) -> Json {
    let mut seen = log.lock().unwrap().clone();
    seen[..2].sort();
    json!(seen)
}

#[tokio::test]
async fn trace_26_tasks_interrupt_and_replay() {
    let executions = Log::default();
    let app = workflow(&executions);
    let cfg = RunnableConfig::thread("f1");
    let run1 = stream_ok(&app, json!({"xs": [1, 2]}), &cfg, StreamMode::Updates).await;
    let state1 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let executions1 = executions_json(&executions);
    let resume = Command::new().resume(Value::from_json(json!(true)));
    let run2 = stream_ok(&app, resume, &cfg, StreamMode::Updates).await;
    let executions2 = executions_json(&executions);
    let final_state = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let history: Vec<Json> = history_json(&app, &cfg)
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|h| json!([h["metadata"]["step"], h["metadata"]["source"], h["next"]]))
        .collect();

    // One document, so the interrupt id of run 1 and of state 1 compare.
    assert_trace_ids(
        &json!({
            "run1": py_interrupts(&run1.payloads()),
            "state1": state1,
            "final_state": final_state,
        }),
        &json!({
            "run1": expected("run1_updates"),
            "state1": expected("state1"),
            "final_state": expected("final_state"),
        }),
    );
    assert_eq!(executions1, expected("executions1"));
    assert_eq!(run2.payloads(), expected("run2_updates"));
    assert_eq!(
        executions2,
        expected("executions2"),
        "finished tasks are not run again"
    );
    assert_eq!(json!(history), expected("history_meta"));

    let values = stream_ok(
        &app,
        json!({"xs": [3]}),
        &RunnableConfig::thread("f2"),
        StreamMode::Values,
    )
    .await;
    assert_trace_ids(&py_interrupts(&values.payloads()), &expected("values_mode"));
}

#[tokio::test]
async fn trace_26_previous_and_final() {
    let counter = Entrypoint::new(
        "counter",
        |n: i64, previous: Option<Value>, _ctx: TaskContext| async move {
            let prev = previous.map_or(Ok(0), |p| p.decode::<i64>().map(|p| *p))?;
            Ok::<_, NodeError>(Final::new(prev + n, prev + 10 * n))
        },
    )
    .compile(CompileOptions::new().checkpointer(InMemorySaver::new()))
    .unwrap();
    let cfg = RunnableConfig::thread("ctr");
    let mut runs = Vec::new();
    for n in [1, 2, 3] {
        runs.push(
            counter
                .invoke(json!(n), &cfg)
                .await
                .unwrap()
                .to_json()
                .unwrap(),
        );
    }
    assert_eq!(json!(runs), expected("previous_runs"));
}

#[tokio::test]
async fn trace_26_task_retry_and_empty_input() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = attempts.clone();
    let app = Entrypoint::new(
        "uses_flaky",
        move |_: Json, _previous: Option<Value>, ctx: TaskContext| {
            let seen = seen.clone();
            async move {
                let policy = RetryPolicy {
                    max_attempts: 3,
                    initial_interval: Duration::from_millis(10),
                    jitter: false,
                    ..RetryPolicy::default()
                };
                let out: String = ctx
                    .task("flaky", &[policy], move || {
                        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                        async move {
                            if n < 3 {
                                return Err(NodeError::new("ConnectionError", "boom"));
                            }
                            Ok(format!("ok after {n}"))
                        }
                    })
                    .await?;
                Ok::<_, NodeError>(json!(out))
            }
        },
    )
    .compile(CompileOptions::new())
    .unwrap();
    let none = catch(app.invoke(Input::Resume, &RunnableConfig::default()).await);
    assert_eq!(none, expected("none_input_fresh"));
    let out = app
        .invoke(json!(0), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected("task_retry"));

    let mut nodes: Vec<String> = workflow(&Log::default())
        .get_graph(false)
        .nodes()
        .iter()
        .map(|n| n.id.clone())
        .collect();
    nodes.sort();
    assert_eq!(json!(nodes), expected("graph_nodes"));
}

/// An entrypoint's own retry, cache and timeout policies (LangGraph's
/// `@entrypoint(retry_policy=..., cache_policy=..., timeout=...)`).
#[tokio::test]
async fn entrypoint_retry_cache_and_timeout() {
    use stategraph_graph::{CachePolicy, InMemoryCache, TimeoutPolicy};

    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let flaky = Entrypoint::new("flaky", move |x: i64, _: Option<Value>, _: TaskContext| {
        let attempt = counted.fetch_add(1, Ordering::SeqCst);
        async move {
            if attempt == 0 {
                return Err(NodeError::new("ConnectionError", "try again"));
            }
            Ok::<_, NodeError>(json!(x * 2))
        }
    })
    .retry(RetryPolicy {
        initial_interval: Duration::from_millis(1),
        jitter: false,
        ..RetryPolicy::default()
    })
    .cache(CachePolicy::new())
    .compile(CompileOptions::new().cache(InMemoryCache::new()))
    .unwrap();
    let cfg = RunnableConfig::default();
    let doubled = |x: i64| {
        let (flaky, cfg) = (&flaky, &cfg);
        async move {
            flaky
                .invoke(json!(x), cfg)
                .await
                .unwrap()
                .to_json()
                .unwrap()
        }
    };
    assert_eq!(doubled(21).await, json!(42));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "failed once, retried once");
    // The same input again: served from the cache, the function not called.
    assert_eq!(doubled(21).await, json!(42));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    doubled(1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3, "a new input runs");

    let slow = Entrypoint::new("slow", |_: Json, _: Option<Value>, _: TaskContext| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, NodeError>(json!(null))
    })
    .timeout(TimeoutPolicy::run(Duration::from_millis(20)))
    .compile(CompileOptions::new())
    .unwrap();
    let err = slow.invoke(json!(1), &cfg).await.unwrap_err();
    assert!(err.to_string().contains("slow"), "{err}");
}
