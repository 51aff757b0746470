//! Constant writes (`PregelNode::add_constant_write`): a node's writer that
//! writes the same value whatever the node returned, kept in the node. It
//! must behave exactly as a writer closure pushing the same pair, in its
//! place among the node's other writers.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_channels::{BinaryOperatorAggregate, LastValue, reducers};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{Pregel, PregelNode, Reads, StreamMode, WriteContext};

/// Channels `a` (input), `log` (appending) and `b`; node `n` on `a` writes
/// `[1]` to `log` with a closure, then `[2]` and `7` to `log` and `b`
/// either as constant writes or as closures, then `[3]` with a closure.
fn graph(constant: bool) -> Pregel {
    let mut builder = Pregel::builder()
        .channel("a", LastValue::<i64>::new())
        .unwrap()
        .channel(
            "log",
            BinaryOperatorAggregate::new(reducers::append::<Vec<i64>>),
        )
        .unwrap()
        .channel("b", LastValue::<i64>::new())
        .unwrap()
        .input("a")
        .output(["log", "b"]);
    let push = |channel, value: Value| -> stategraph_pregel::Writer {
        Arc::new(move |_: &WriteContext<'_>, writes| {
            writes.push((channel, value.clone()));
            Ok(())
        })
    };
    let mut node = PregelNode::new(vec![0], Reads::Channel(0), None, Vec::new());
    node.add_writer(push(1, Value::new(vec![1_i64])));
    if constant {
        node.add_constant_write(1, Value::new(vec![2_i64]));
        node.add_constant_write(2, Value::new(7_i64));
    } else {
        node.add_writer(push(1, Value::new(vec![2_i64])));
        node.add_writer(push(2, Value::new(7_i64)));
    }
    node.add_writer(push(1, Value::new(vec![3_i64])));
    builder.add_node("n", node).unwrap();
    builder.build().unwrap()
}

async fn updates(graph: &Pregel) -> Vec<Json> {
    graph
        .stream(
            Value::new(5_i64),
            &RunnableConfig::default(),
            StreamMode::Updates,
        )
        .map(|chunk| chunk.unwrap().to_json())
        .collect()
        .await
}

#[tokio::test]
async fn constant_writes_take_their_place_among_the_writers() {
    let output = graph(true)
        .invoke(Value::new(5_i64), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(output.to_json().unwrap(), json!({"log": [1, 2, 3], "b": 7}));
    assert_eq!(
        output.to_json().unwrap(),
        graph(false)
            .invoke(Value::new(5_i64), &RunnableConfig::default())
            .await
            .unwrap()
            .to_json()
            .unwrap()
    );
    assert_eq!(updates(&graph(true)).await, updates(&graph(false)).await);
}
