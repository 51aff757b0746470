//! Golden trace 11: two `interrupt()` calls in one node. Answers are matched
//! to interrupts by call order within the task; each resume runs the node
//! again from its start and replays the earlier answers; a second node then
//! interrupts; a resume value can be any JSON. Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, NodeError, START, Schema, StateGraph, StreamMode, TaskContext,
};
use support::{assert_trace_ids, fixture, py_interrupts, snapshot_json, stream_ok};

fn expected(key: &str) -> Json {
    fixture("11_multi_interrupt_one_node")[key].clone()
}

#[tokio::test]
async fn trace_11_answers_replay_in_call_order() {
    let trace: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut g = StateGraph::new(
        Schema::new()
            .last_value("name")
            .last_value("age")
            .last_value("extra"),
    );
    let seen = trace.clone();
    g.add_node("form", move |_s: Json, ctx: TaskContext| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push("form:start".into());
            let name = ctx.interrupt("name?")?.to_json()?;
            let shown = name.as_str().unwrap_or_default().to_owned();
            seen.lock().unwrap().push(format!("form:name={shown}"));
            let age = ctx
                .interrupt(json!({"ask": "age?", "for": name}))?
                .to_json()?;
            seen.lock().unwrap().push(format!("form:age={age}"));
            Ok::<_, NodeError>(json!({"name": name, "age": age}))
        }
    })
    .unwrap();
    let seen = trace.clone();
    g.add_node("extra", move |_s: Json, ctx: TaskContext| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push("extra:start".into());
            Ok::<_, NodeError>(json!({"extra": ctx.interrupt("extra?")?.to_json()?}))
        }
    })
    .unwrap();
    g.add_edge(START, "form").unwrap();
    g.add_edge("form", "extra").unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("m");
    let resume = |answer: Json| Command::new().resume(Value::from_json(answer));

    let run1 = stream_ok(&app, json!({}), &cfg, StreamMode::Updates).await;
    let state1 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let run2 = stream_ok(&app, resume(json!("ann")), &cfg, StreamMode::Updates).await;
    let state2 = snapshot_json(&app.get_state(&cfg).await.unwrap());
    let run3 = stream_ok(&app, resume(json!(33)), &cfg, StreamMode::Updates).await;
    let run4 = stream_ok(
        &app,
        resume(json!({"k": [1, 2]})),
        &cfg,
        StreamMode::Updates,
    )
    .await;
    let final_values = app.get_state(&cfg).await.unwrap().values.to_json().unwrap();

    // Ids are compared across the whole run: the interrupt of state1 is the
    // one run1 streamed, and state2 keeps the same checkpoint.
    let actual = json!({
        "run1": py_interrupts(&run1.payloads()),
        "state1": state1,
        "run2": py_interrupts(&run2.payloads()),
        "state2": state2,
        "run3": py_interrupts(&run3.payloads()),
        "run4": run4.payloads(),
        "final": final_values,
        "trace": *trace.lock().unwrap(),
    });
    let mut recorded = fixture("11_multi_interrupt_one_node");
    let recorded = recorded.as_object_mut().unwrap();
    recorded.remove("case");
    recorded.remove("langgraph_version");
    assert_trace_ids(&actual, &Json::Object(recorded.clone()));
    assert_eq!(actual["trace"], expected("trace"));
}
