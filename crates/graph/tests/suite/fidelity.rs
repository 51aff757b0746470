//! Behaviours checked against LangGraph 1.2.22 beyond the shared traces
//! (issue 23). Each test compares with what LangGraph did, recorded by the
//! script of the same name in `fixtures/fidelity/record/`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, NodeError, START, Schema, StateGraph, StateSnapshot, TaskContext,
};

/// A snapshot in the recorders' shape: interrupts by the value they ask.
fn snapshot(state: &StateSnapshot) -> Json {
    let asked = |items: &[stategraph_graph::Interrupt]| -> Vec<Json> {
        items.iter().map(|i| i.value.to_json().unwrap()).collect()
    };
    json!({
        "values": state.values.to_json().unwrap(),
        "next": state.next,
        "interrupts": asked(&state.interrupts),
        "tasks": state.tasks.iter().map(|task| json!({
            "name": task.name,
            "interrupts": asked(&task.interrupts),
            "result": task.result.as_ref().map(|r| r.to_json().unwrap()),
            "error": task.error,
        })).collect::<Vec<_>>(),
    })
}

/// Item 1: two parallel nodes interrupt and the resume answers one. The
/// latest state lists no interrupt under the finished task; the same
/// checkpoint read as history lists both.
#[tokio::test]
async fn parallel_interrupts_partly_answered() {
    let expected = support::fidelity("parallel_interrupts_partly_answered");
    let mut graph = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b"] {
        graph
            .add_node(name, move |_: Json, ctx: TaskContext| async move {
                let answer = ctx.interrupt(format!("{name}?"))?.to_json()?;
                let answer = answer.as_str().unwrap_or_default().to_owned();
                Ok::<_, NodeError>(json!({"log": [format!("{name}:{answer}")]}))
            })
            .unwrap();
        graph.add_edge(START, name).unwrap();
    }
    let app = graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("t");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let first = app.get_state(&cfg).await.unwrap();
    let asked_a = first
        .interrupts
        .iter()
        .find(|i| i.value.to_json().unwrap() == json!("a?"))
        .unwrap();
    let answer = Command::new().resume_by_id([(asked_a.id.clone(), Value::from_json(json!("A")))]);
    app.invoke(answer, &cfg).await.unwrap();

    let live = app.get_state(&cfg).await.unwrap();
    assert_eq!(snapshot(&live), expected["live"]);
    let at =
        RunnableConfig::thread("t").with_checkpoint_id(live.config.checkpoint_id.clone().unwrap());
    let recorded = app.get_state(&at).await.unwrap();
    assert_eq!(snapshot(&recorded), expected["recorded"]);
}
