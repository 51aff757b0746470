//! `compile(debug=True)` and `print_mode`: chunks of the printed modes go to
//! `tracing` (target `stategraph::print`) as LangGraph prints them, and only
//! the requested modes are streamed.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, END, NodeError, RunOptions, START, Schema, StateGraph, StreamMode,
};

use crate::support::EventLog;

/// Collects the messages of `stategraph::print` events.
fn print_log() -> EventLog {
    EventLog::new(|metadata| metadata.target() == "stategraph::print")
}

fn graph(options: CompileOptions) -> stategraph_graph::CompiledStateGraph {
    let mut graph = StateGraph::new(Schema::new().append("log"));
    graph
        .add_node("a", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["a"]}))
        })
        .unwrap();
    graph
        .add_node("b", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["b"]}))
        })
        .unwrap();
    graph.add_edge(START, "a").unwrap();
    graph.add_edge("a", "b").unwrap();
    graph.add_edge("b", END).unwrap();
    graph.compile_with(options).unwrap()
}

/// Runs `f` on a current-thread runtime with `printed` as the subscriber.
fn capture<T>(printed: &EventLog, f: impl std::future::Future<Output = T>) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tracing::subscriber::with_default(printed.clone(), || rt.block_on(f))
}

#[test]
fn debug_prints_updates_and_values_and_invoke_is_unchanged() {
    let printed = print_log();
    let graph = graph(CompileOptions::new().debug(true));
    let out = capture(
        &printed,
        graph.invoke(json!({"log": []}), &RunnableConfig::default()),
    )
    .unwrap();
    assert_eq!(out.to_json().unwrap(), json!({"log": ["a", "b"]}));
    assert_eq!(
        printed.messages(),
        [
            r#"[values] {"log":[]}"#,
            r#"[updates] {"a":{"log":["a"]}}"#,
            r#"[values] {"log":["a"]}"#,
            r#"[updates] {"b":{"log":["b"]}}"#,
            r#"[values] {"log":["a","b"]}"#,
        ]
    );
}

#[test]
fn print_modes_print_without_streaming_and_nothing_prints_by_default() {
    let printed = print_log();
    let graph = graph(CompileOptions::new());
    let chunks: Vec<StreamMode> = capture(&printed, async {
        graph
            .stream_with(
                json!({"log": []}),
                &RunnableConfig::default(),
                StreamMode::Values,
                RunOptions::new().print_modes(StreamMode::Updates),
            )
            .map(|chunk| chunk.unwrap().mode)
            .collect()
            .await
    });
    assert_eq!(chunks, [StreamMode::Values; 3]);
    assert_eq!(
        printed.messages(),
        [
            r#"[updates] {"a":{"log":["a"]}}"#,
            r#"[updates] {"b":{"log":["b"]}}"#,
        ]
    );

    let quiet = print_log();
    capture(
        &quiet,
        graph.invoke(json!({"log": []}), &RunnableConfig::default()),
    )
    .unwrap();
    assert!(quiet.messages().is_empty());
}
