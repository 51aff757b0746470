//! Golden trace 23 (Pregel part): a raw Pregel graph built from channels and
//! `NodeBuilder`s, invoked and streamed, compared with LangGraph 1.2.22.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_channels::{EphemeralValue, LastValue, Topic};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{NodeBuilder, NodeError, Pregel, StreamMode};

fn expected() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/traces/23_channels_and_pregel.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn app() -> Pregel {
    Pregel::builder()
        .channel("a", EphemeralValue::<i64>::new())
        .unwrap()
        .channel("b", EphemeralValue::<i64>::new())
        .unwrap()
        .channel("c", LastValue::<i64>::new())
        .unwrap()
        .channel("log", Topic::<i64>::accumulating())
        .unwrap()
        .node(
            "add_one",
            NodeBuilder::new()
                .subscribe_only("a")
                .func(|x: Value, _| async move {
                    Ok::<_, NodeError>(Value::new(x.decode_owned::<i64>()? + 1))
                })
                .write_to(["b", "log"]),
        )
        .unwrap()
        .node(
            "double",
            NodeBuilder::new()
                .subscribe_only("b")
                .func(|x: Value, _| async move {
                    Ok::<_, NodeError>(Value::new(x.decode_owned::<i64>()? * 2))
                })
                .write_to(["c", "log"]),
        )
        .unwrap()
        .input("a")
        .output(["c", "log"])
        .build()
        .unwrap()
}

async fn collect(app: &Pregel, mode: StreamMode) -> Json {
    let chunks: Vec<_> = app
        .stream(Value::new(3_i64), &RunnableConfig::default(), mode)
        .map(|chunk| chunk.unwrap().to_json())
        .collect()
        .await;
    Json::Array(chunks)
}

#[tokio::test]
async fn trace_23_pregel_invoke() {
    let out = app()
        .invoke(Value::new(3_i64), &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected()["pregel_invoke"]);
}

#[tokio::test]
async fn trace_23_pregel_stream_updates() {
    assert_eq!(
        collect(&app(), StreamMode::Updates).await,
        expected()["pregel_stream_updates"]
    );
}

#[tokio::test]
async fn trace_23_pregel_stream_values() {
    assert_eq!(
        collect(&app(), StreamMode::Values).await,
        expected()["pregel_stream_values"]
    );
}

#[tokio::test]
async fn trace_23_pregel_read_from() {
    let app = Pregel::builder()
        .channel("trigger", EphemeralValue::<String>::new())
        .unwrap()
        .channel("config_val", LastValue::<String>::new())
        .unwrap()
        .channel("out", LastValue::<String>::new())
        .unwrap()
        .node(
            "reader",
            NodeBuilder::new()
                .subscribe_to(["trigger"])
                .read_from(["config_val"])
                .func(|input: Value, _| async move {
                    let d = input.to_json()?;
                    let text = format!(
                        "{}+{}",
                        d["trigger"].as_str().unwrap_or(""),
                        d["config_val"].as_str().unwrap_or("")
                    );
                    Ok::<_, NodeError>(Value::new(text))
                })
                .write_to(["out"]),
        )
        .unwrap()
        .input(["trigger", "config_val"])
        .output("out")
        .build()
        .unwrap();
    let out = app
        .invoke(
            json!({"trigger": "t", "config_val": "cv"}),
            &RunnableConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected()["pregel_read_from"]);
}
