//! Golden trace 10: `interrupt()` inside a node and `Command(resume=...)`.
//! The `__interrupt__` chunk in `updates` and `values`, `invoke`'s result,
//! `get_state` (next, tasks with their interrupts, snapshot interrupts), the
//! node running again from its start on resume, the history, resume by
//! interrupt id, resume with nothing pending, and interrupt without a
//! checkpointer. Every observation of the case is ported; `invoke_v2`
//! (Python's `GraphOutput`) is checked through `RunStream::interrupts`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, END, NodeError, START, Schema, StateGraph,
    StreamMode, TaskContext,
};
use support::{
    assert_trace_ids, catch, fixture, history_json, py_interrupts, snapshot_json, stream_ok,
};

fn expected(key: &str) -> Json {
    fixture("10_interrupt_resume")[key].clone()
}

type Calls = Arc<Mutex<Vec<String>>>;

fn graph(calls: &Calls) -> StateGraph {
    let mut g = StateGraph::new(
        Schema::new()
            .last_value("q")
            .last_value("answer")
            .append("log"),
    );
    g.add_node("before", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["before"]}))
    })
    .unwrap();
    let seen = calls.clone();
    g.add_node("ask", move |s: Json, ctx: TaskContext| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push("ask-start".into());
            let answer = ctx.interrupt(json!({"question": s["q"]}))?;
            let answer = answer.to_json()?;
            let text = answer.as_str().unwrap_or_default().to_owned();
            seen.lock().unwrap().push(format!("ask-resumed:{text}"));
            Ok::<_, NodeError>(json!({"answer": answer, "log": ["ask"]}))
        }
    })
    .unwrap();
    g.add_node("after", |s: Json| async move {
        let answer = s["answer"].as_str().unwrap_or_default().to_owned();
        Ok::<_, NodeError>(json!({"log": [format!("after:{answer}")]}))
    })
    .unwrap();
    g.add_edge(START, "before").unwrap();
    g.add_edge("before", "ask").unwrap();
    g.add_edge("ask", "after").unwrap();
    g.add_edge("after", END).unwrap();
    g
}

fn app(calls: &Calls) -> CompiledStateGraph {
    graph(calls)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

fn resume(answer: Json) -> Command {
    Command::new().resume(Value::from_json(answer))
}

async fn invoke(
    app: &CompiledStateGraph,
    input: impl Into<stategraph_pregel::Input>,
    config: &RunnableConfig,
) -> Json {
    py_interrupts(&app.invoke(input, config).await.unwrap().to_json().unwrap())
}

#[tokio::test]
async fn trace_10_interrupt_then_resume() {
    let calls = Calls::default();
    let app = app(&calls);
    let cfg = RunnableConfig::thread("i1");

    let first = stream_ok(
        &app,
        json!({"q": "age?", "log": []}),
        &cfg,
        StreamMode::Updates,
    )
    .await;
    let state = app.get_state(&cfg).await.unwrap();
    let interrupted = json!({
        "first_run_updates": py_interrupts(&first.payloads()),
        "state_interrupted": snapshot_json(&state),
    });
    assert_trace_ids(
        &interrupted,
        &json!({
            "first_run_updates": expected("first_run_updates"),
            "state_interrupted": expected("state_interrupted"),
        }),
    );
    assert_eq!(json!(*calls.lock().unwrap()), expected("calls_after_first"));

    let resumed = stream_ok(&app, resume(json!("42")), &cfg, StreamMode::Updates).await;
    assert_eq!(resumed.payloads(), expected("resume_updates"));
    assert_eq!(
        json!(*calls.lock().unwrap()),
        expected("calls_after_resume")
    );

    let done = snapshot_json(&app.get_state(&cfg).await.unwrap());
    assert_trace_ids(&done, &expected("state_done"));
    assert_trace_ids(&history_json(&app, &cfg).await, &expected("history"));
}

#[tokio::test]
async fn trace_10_invoke_and_values_show_the_interrupt() {
    let app = app(&Calls::default());
    let interrupted = invoke(
        &app,
        json!({"q": "name?", "log": []}),
        &RunnableConfig::thread("i2"),
    )
    .await;
    assert_trace_ids(&interrupted, &expected("invoke_interrupted"));

    let cfg = RunnableConfig::thread("i3");
    let values = stream_ok(
        &app,
        json!({"q": "x?", "log": []}),
        &cfg,
        StreamMode::Values,
    )
    .await;
    assert_trace_ids(
        &py_interrupts(&values.payloads()),
        &expected("values_stream"),
    );
    let values = stream_ok(&app, resume(json!("y")), &cfg, StreamMode::Values).await;
    assert_eq!(values.payloads(), expected("values_resume"));
}

#[tokio::test]
async fn trace_10_resume_by_id_and_with_nothing_pending() {
    let app = app(&Calls::default());
    let cfg = RunnableConfig::thread("i4");
    // Python's `invoke(version="v2")`: the value and the interrupts apart.
    let mut run = app.stream(json!({"q": "v2?", "log": []}), &cfg, StreamMode::Values);
    let mut value = Json::Null;
    while let Some(chunk) = run.next().await {
        value = chunk.unwrap().to_json();
    }
    let interrupts = run.interrupts();
    value.as_object_mut().unwrap().remove("__interrupt__");
    let v2 = json!({
        "value": value,
        "interrupts": interrupts.iter().map(|i| json!({"$interrupt": i})).collect::<Vec<_>>(),
    });
    assert_trace_ids(&v2, &expected("invoke_v2"));

    let by_id =
        Command::new().resume_by_id([(interrupts[0].id.clone(), Value::from_json(json!("by-id")))]);
    assert_eq!(invoke(&app, by_id, &cfg).await, expected("resume_by_id"));
    let again = catch(app.invoke(resume(json!("again")), &cfg).await);
    assert_eq!(again, expected("resume_nothing_pending"));
}

#[tokio::test]
async fn trace_10_interrupt_without_a_checkpointer() {
    let mut g = StateGraph::new(
        Schema::new()
            .last_value("q")
            .last_value("answer")
            .append("log"),
    );
    g.add_node("only", |_s: Json, ctx: TaskContext| async move {
        let answer = ctx.interrupt("no saver")?;
        Ok::<_, NodeError>(json!({"answer": answer.to_json()?}))
    })
    .unwrap();
    g.add_edge(START, "only").unwrap();
    let app = g.compile().unwrap();
    let out = catch(
        app.invoke(json!({"q": "", "log": []}), &RunnableConfig::default())
            .await,
    );
    assert_trace_ids(&py_interrupts(&out), &expected("no_checkpointer"));
}
