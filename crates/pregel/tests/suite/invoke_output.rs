//! What `invoke` returns: the last `values` chunk a stream of the same run
//! shows, even when an output channel empties after it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use serde_json::json;
use stategraph_channels::{EphemeralValue, LastValue};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{NodeBuilder, NodeError, Pregel, StreamMode};

/// `one` puts 1 in the ephemeral output `e`; `two`, triggered by it, writes
/// only `c`, which no chunk shows. In `two`'s step `e` empties: the output
/// changed, but no shown channel was updated, so no chunk follows.
fn emptying_output() -> Pregel {
    let bump = |value: Value, _| async move {
        Ok::<_, NodeError>(Value::new(value.decode_owned::<i64>()? + 1))
    };
    Pregel::builder()
        .channel("a", LastValue::<i64>::new())
        .unwrap()
        .channel("e", EphemeralValue::<i64>::new())
        .unwrap()
        .channel("b", LastValue::<i64>::new())
        .unwrap()
        .channel("c", LastValue::<i64>::new())
        .unwrap()
        .node(
            "one",
            NodeBuilder::new()
                .subscribe_only("a")
                .func(bump)
                .write_to(["e"]),
        )
        .unwrap()
        .node(
            "two",
            NodeBuilder::new()
                .subscribe_only("e")
                .func(bump)
                .write_to(["c"]),
        )
        .unwrap()
        .input("a")
        .output(vec!["e".to_owned(), "b".to_owned()])
        .stream_channels(vec!["e".to_owned(), "b".to_owned()])
        .build()
        .unwrap()
}

#[tokio::test]
async fn invoke_returns_the_last_values_chunk() {
    let app = emptying_output();
    let config = RunnableConfig::default();
    let chunks: Vec<serde_json::Value> = app
        .stream(Value::new(0_i64), &config, StreamMode::Values)
        .map(|chunk| chunk.unwrap().to_json())
        .collect()
        .await;
    assert_eq!(chunks, vec![json!({"e": 1})]);
    let out = app.invoke(Value::new(0_i64), &config).await.unwrap();
    assert_eq!(out.to_json().unwrap(), json!({"e": 1}));
}
