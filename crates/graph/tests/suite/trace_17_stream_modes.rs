//! Golden trace 17 (root-graph part): the `values`, `updates` and `custom`
//! stream modes, several modes at once (`[mode, chunk]` pairs), and `invoke`
//! ignoring custom chunks, on a graph `a -> b -> sub` whose `sub` node is a
//! compiled subgraph (its custom chunks are not shown without
//! `subgraphs=True`; its whole final state is its update, so the parent's
//! `log` gets `a`, `b` again: README semantics #4).
//!
//! The Python graph is compiled with an `InMemorySaver`; most observations
//! do not depend on it (each run uses a fresh thread); `checkpoints` and
//! `debug` (its checkpoint events) are checked with a saver.
//!
//! `subgraphs_checkpoints` is compared without Python's `checkpoint_map`
//! config key (see trace 16).
//!
//! Not ported:
//! - `v2_parts` — LangGraph's v2 stream parts are a Python output format;
//!   our chunks already carry `namespace`, `mode` and `data`.
//! - `default_mode` — `stream` takes its modes explicitly; there is no
//!   default mode to observe.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, NodeError, START, Schema, StateGraph, StreamMode,
    TaskContext,
};
use support::{assert_trace, assert_trace_ids, fixture, invoke, stream_ok};

fn expected(key: &str) -> Json {
    fixture("17_stream_modes")[key].clone()
}

fn graph() -> StateGraph {
    let mut child = StateGraph::new(Schema::new().append("log"));
    child
        .add_node("inner", |_s: Json, ctx: TaskContext| async move {
            ctx.write_custom("from-inner");
            Ok::<_, NodeError>(json!({"log": ["inner"]}))
        })
        .unwrap();
    child.add_edge(START, "inner").unwrap();
    let child = child.compile().unwrap();

    let mut g = StateGraph::new(Schema::new().append("log"));
    // `get_stream_writer()` and the injected `writer` are both the task's
    // custom-stream writer.
    g.add_node("a", |_s: Json, ctx: TaskContext| async move {
        ctx.write_custom(json!({"progress": "a-1"}));
        ctx.write_custom("a-2");
        Ok::<_, NodeError>(json!({"log": ["a"]}))
    })
    .unwrap();
    g.add_node("b", |_s: Json, ctx: TaskContext| async move {
        ctx.write_custom(json!({"progress": "b"}));
        Ok::<_, NodeError>(json!({"log": ["b"]}))
    })
    .unwrap();
    g.add_node("sub", child).unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "sub").unwrap();
    g.add_edge("sub", END).unwrap();
    g
}

fn app() -> CompiledStateGraph {
    graph().compile().unwrap()
}

fn saved_app() -> CompiledStateGraph {
    graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

async fn check_mode(mode: StreamMode) {
    let streamed = stream_ok(&app(), json!({"log": []}), &RunnableConfig::default(), mode).await;
    // One task per superstep: the order is fixed, compare exactly.
    assert_trace(&streamed.payloads(), &expected(mode.as_str()));
}

#[tokio::test]
async fn trace_17_values() {
    check_mode(StreamMode::Values).await;
}

#[tokio::test]
async fn trace_17_updates() {
    check_mode(StreamMode::Updates).await;
}

#[tokio::test]
async fn trace_17_custom() {
    check_mode(StreamMode::Custom).await;
}

#[tokio::test]
async fn trace_17_multi() {
    let streamed = support::stream(
        &app(),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Updates | StreamMode::Custom | StreamMode::Values,
    )
    .await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    assert_trace(&streamed.tagged(), &expected("multi"));
}

#[tokio::test]
async fn trace_17_invoke_no_checkpointer_custom_ignored() {
    let out = invoke(&app(), json!({"log": []}), &RunnableConfig::default()).await;
    assert_trace(&out, &expected("invoke_no_checkpointer_custom_ignored"));
}

#[tokio::test]
async fn trace_17_tasks() {
    let streamed = stream_ok(
        &app(),
        json!({"log": []}),
        &RunnableConfig::default(),
        StreamMode::Tasks,
    )
    .await;
    // Task ids differ per run: compare their identity structure.
    assert_trace_ids(&streamed.payloads(), &expected("tasks"));
}

/// Streams with `subgraphs(true)` and returns `[namespace, (mode,) data]`.
async fn stream_subgraphs(modes: stategraph_pregel::StreamModes, tag_mode: bool) -> Json {
    use futures::StreamExt;
    let chunks: Vec<Json> = app()
        .stream_with(
            json!({"log": []}),
            &RunnableConfig::default(),
            modes,
            stategraph_graph::RunOptions::new().subgraphs(true),
        )
        .map(|chunk| {
            let chunk = chunk.unwrap();
            let ns = json!(chunk.namespace.to_vec());
            if tag_mode {
                json!([ns, chunk.mode.as_str(), chunk.to_json()])
            } else {
                json!([ns, chunk.to_json()])
            }
        })
        .collect()
        .await;
    Json::Array(chunks)
}

#[tokio::test]
async fn trace_17_subgraphs_single_mode() {
    let streamed = stream_subgraphs(StreamMode::Custom.into(), false).await;
    assert_trace_ids(&streamed, &expected("subgraphs_single_mode"));
}

#[tokio::test]
async fn trace_17_subgraphs_multi() {
    let streamed = stream_subgraphs(StreamMode::Updates | StreamMode::Custom, true).await;
    assert_trace_ids(&streamed, &expected("subgraphs_multi"));
}

#[tokio::test]
async fn trace_17_checkpoints() {
    let cfg = RunnableConfig::thread("m3");
    let streamed = stream_ok(
        &saved_app(),
        json!({"log": []}),
        &cfg,
        StreamMode::Checkpoints,
    )
    .await;
    assert_trace_ids(&streamed.payloads(), &expected("checkpoints"));
}

#[tokio::test]
async fn trace_17_debug() {
    let cfg = RunnableConfig::thread("m5");
    let streamed = stream_ok(&saved_app(), json!({"log": []}), &cfg, StreamMode::Debug).await;
    // Timestamps are run-dependent; the recording leaves them out.
    let mut events = streamed.payloads();
    for event in events.as_array_mut().unwrap() {
        event.as_object_mut().unwrap().remove("timestamp");
    }
    assert_trace_ids(&events, &expected("debug"));
}

#[tokio::test]
async fn trace_17_subgraphs_checkpoints() {
    use futures::StreamExt;
    let cfg = RunnableConfig::thread("sg3");
    let options = stategraph_graph::RunOptions::new().subgraphs(true);
    let chunks: Vec<Json> = saved_app()
        .stream_with(json!({"log": []}), &cfg, StreamMode::Checkpoints, options)
        .map(|chunk| {
            let chunk = chunk.unwrap();
            json!([chunk.namespace.to_vec(), chunk.to_json()])
        })
        .collect()
        .await;
    let mut want = expected("subgraphs_checkpoints");
    strip_checkpoint_map(&mut want);
    assert_trace_ids(&Json::Array(chunks), &want);
}

fn strip_checkpoint_map(value: &mut Json) {
    match value {
        Json::Object(map) => {
            map.remove("checkpoint_map");
            map.values_mut().for_each(strip_checkpoint_map);
        }
        Json::Array(items) => items.iter_mut().for_each(strip_checkpoint_map),
        _ => {}
    }
}

/// LangGraph 1.2.22 (observed with `stream_mode=["checkpoints", "debug",
/// "tasks"]` and a config with `configurable={"thread_id", "foo"}`,
/// `metadata={"md": 1}`, `tags=["a"]`): a checkpoint event's config shows
/// the run's whole configurable and its metadata only the checkpoint's own
/// (`source`, `step`, `parents`: the run's metadata is merged when saved,
/// not shown); a task-start event carries the run's metadata and tags; a
/// debug timestamp ends in `+00:00`.
#[tokio::test]
async fn checkpoint_and_task_events_show_the_runs_config_as_langgraph() {
    let mut cfg = RunnableConfig::thread("cfg-events").with_configurable("foo", json!("bar"));
    cfg.metadata.insert("md".into(), json!(1));
    cfg.tags = vec!["a".into()];
    let streamed = support::stream(
        &saved_app(),
        json!({"log": []}),
        &cfg,
        StreamMode::Checkpoints | StreamMode::Tasks | StreamMode::Debug,
    )
    .await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    let tagged = streamed.tagged();
    let chunks = tagged.as_array().unwrap();
    let of = |mode: &str| -> Vec<&Json> {
        chunks
            .iter()
            .filter(|pair| pair[0] == mode)
            .map(|pair| &pair[1])
            .collect()
    };
    let checkpoints = of("checkpoints");
    assert!(!checkpoints.is_empty());
    for checkpoint in &checkpoints {
        let configurable = &checkpoint["config"]["configurable"];
        assert_eq!(configurable["foo"], "bar", "{checkpoint}");
        assert_eq!(configurable["thread_id"], "cfg-events");
        let mut keys: Vec<&String> = checkpoint["metadata"].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["parents", "source", "step"], "{checkpoint}");
    }
    let started = of("tasks")
        .into_iter()
        .find(|event| event.get("input").is_some())
        .unwrap();
    assert_eq!(started["metadata"], json!({"md": 1, "tags": ["a"]}));
    let debug = of("debug");
    let timestamp = debug[0]["timestamp"].as_str().unwrap();
    assert!(timestamp.ends_with("+00:00"), "{timestamp}");
}
