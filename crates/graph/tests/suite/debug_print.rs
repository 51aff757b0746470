//! `compile(debug=True)` and `print_mode`: chunks of the printed modes go to
//! `tracing` (target `stategraph::print`) as LangGraph prints them, and only
//! the requested modes are streamed.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, END, NodeError, RunOptions, START, Schema, StateGraph, StreamMode,
};
use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber, span};

/// Collects the messages of `stategraph::print` events.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

impl Subscriber for Printed {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() == "stategraph::print" {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.0.lock().unwrap().push(message.0);
        }
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
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
fn capture<T>(printed: &Printed, f: impl std::future::Future<Output = T>) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tracing::subscriber::with_default(printed.clone(), || rt.block_on(f))
}

#[test]
fn debug_prints_updates_and_values_and_invoke_is_unchanged() {
    let printed = Printed::default();
    let graph = graph(CompileOptions::new().debug(true));
    let out = capture(
        &printed,
        graph.invoke(json!({"log": []}), &RunnableConfig::default()),
    )
    .unwrap();
    assert_eq!(out.to_json().unwrap(), json!({"log": ["a", "b"]}));
    assert_eq!(
        *printed.0.lock().unwrap(),
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
    let printed = Printed::default();
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
        *printed.0.lock().unwrap(),
        [
            r#"[updates] {"a":{"log":["a"]}}"#,
            r#"[updates] {"b":{"log":["b"]}}"#,
        ]
    );

    let quiet = Printed::default();
    capture(
        &quiet,
        graph.invoke(json!({"log": []}), &RunnableConfig::default()),
    )
    .unwrap();
    assert!(quiet.0.lock().unwrap().is_empty());
}
