//! Declared fresh reads (`PregelNode::declare_fresh_reads`): in a step with
//! one task, a conditional edge's read applies the task's writes to the
//! channel in place, and the step commits that value. What a run shows must
//! not depend on it: the same graph with and without the declaration streams
//! the same chunks and returns the same output.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_channels::{BinaryOperatorAggregate, LastValue, reducers};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{
    ChannelId, NodeBuilder, NodeError, Pregel, PregelBuilder, PregelError, StreamMode,
    WriteContext, Writer,
};

/// A writer that reads `log` fresh and writes what it saw to `to`.
fn copy_fresh_log(log: ChannelId, to: ChannelId) -> Writer {
    Arc::new(move |ctx: &WriteContext<'_>, writes| {
        let state = ctx.read_fresh(&[(Arc::from("log"), log)], writes)?;
        if let Some(seen) = state.get("log") {
            writes.push((to, seen.clone()));
        }
        Ok(())
    })
}

/// Channels `a`, `log` (appending), `seen`, and node `first` (on `a`),
/// which appends `[a]` to `log`.
fn first_appends() -> PregelBuilder {
    Pregel::builder()
        .channel("a", LastValue::<i64>::new())
        .unwrap()
        .channel(
            "log",
            BinaryOperatorAggregate::new(reducers::append::<Vec<i64>>),
        )
        .unwrap()
        .channel("seen", LastValue::<Vec<i64>>::new())
        .unwrap()
        .node(
            "first",
            NodeBuilder::new()
                .subscribe_only("a")
                .func(|value: Value, _| async move {
                    Ok::<_, NodeError>(Value::new(vec![value.decode_owned::<i64>()?]))
                })
                .write_to(["log"]),
        )
        .unwrap()
}

/// `first` also copies the fresh log to `seen`; `second` (on `seen`)
/// appends `[10]` and copies the fresh log to `last`. Each step has one
/// task; `seen` shares the value `second` writes to, so that write must
/// not change what `seen` holds.
fn logging(declare: bool) -> Pregel {
    let mut builder = first_appends()
        .channel("last", LastValue::<Vec<i64>>::new())
        .unwrap()
        .node(
            "second",
            NodeBuilder::new()
                .subscribe_only("seen")
                .func(|_, _| async move { Ok::<_, NodeError>(Value::new(vec![10_i64])) })
                .write_to(["log"]),
        )
        .unwrap();
    let [log, seen, last] = ["log", "seen", "last"].map(|c| builder.channel_id(c).unwrap());
    add_reader(
        &mut builder,
        "first",
        copy_fresh_log(log, seen),
        declare.then_some(log),
    );
    add_reader(
        &mut builder,
        "second",
        copy_fresh_log(log, last),
        declare.then_some(log),
    );
    builder
        .input("a")
        .output(vec!["log".to_owned(), "seen".to_owned(), "last".to_owned()])
        .stream_channels(vec!["log".to_owned(), "seen".to_owned(), "last".to_owned()])
        .build()
        .unwrap()
}

fn add_reader(builder: &mut PregelBuilder, node: &str, reader: Writer, declare: Option<ChannelId>) {
    let node = builder.node_mut(node).unwrap();
    node.add_writer(reader);
    // Declared twice, as two conditional edges reading one key would: the
    // channel is still lent once.
    node.declare_fresh_reads(declare);
    node.declare_fresh_reads(declare);
}

async fn chunks(app: &Pregel, mode: StreamMode) -> Vec<Json> {
    app.stream(Value::new(1_i64), &RunnableConfig::default(), mode)
        .map(|chunk| chunk.unwrap().to_json())
        .collect()
        .await
}

#[tokio::test]
async fn a_lent_channel_takes_each_write_once() {
    let expected = json!({"log": [1, 10], "seen": [1], "last": [1, 10]});
    for declare in [false, true] {
        let app = logging(declare);
        let out = app
            .invoke(Value::new(1_i64), &RunnableConfig::default())
            .await
            .unwrap();
        assert_eq!(out.to_json().unwrap(), expected, "declare: {declare}");
    }
    for mode in [StreamMode::Values, StreamMode::Updates] {
        let copied = chunks(&logging(false), mode).await;
        let lent = chunks(&logging(true), mode).await;
        assert_eq!(lent, copied, "{mode:?}");
        assert_eq!(lent.len(), 2, "{mode:?}: {lent:?}");
    }
}

#[tokio::test]
async fn writing_a_channel_after_its_declared_fresh_read_fails_the_run() {
    let mut builder = first_appends();
    let [log, seen] = ["log", "seen"].map(|c| builder.channel_id(c).unwrap());
    add_reader(&mut builder, "first", copy_fresh_log(log, seen), Some(log));
    // Breaks the promise: another write to `log` after the fresh read.
    builder.node_mut("first").unwrap().add_writer(Arc::new(
        move |_ctx: &WriteContext<'_>, writes| {
            writes.push((log, Value::new(vec![2_i64])));
            Ok(())
        },
    ));
    let app = builder.input("a").output("log").build().unwrap();
    let error = app
        .invoke(Value::new(1_i64), &RunnableConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, PregelError::InvalidGraph(message)
            if message.contains(r#"node "first" wrote channel "log" after reading it fresh"#)),
        "{error}"
    );
}
