//! Managed keys (`RemainingSteps`, `IsLastStep`): what nodes and routers read,
//! beyond what golden trace 19 shows.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{NodeError, NodeSpec, START, Schema, Send, StateGraph};

fn graph() -> StateGraph {
    StateGraph::new(Schema::new().append("log"))
        .with_remaining_steps("remaining")
        .unwrap()
        .with_is_last_step("last")
        .unwrap()
}

#[tokio::test]
async fn pull_tasks_see_managed_keys_and_push_tasks_their_send_argument() {
    let seen: Arc<Mutex<Vec<Json>>> = Arc::default();
    let mut g = graph();
    let pulled = seen.clone();
    g.add_node("pull", move |s: Json| {
        pulled.lock().unwrap().push(s);
        std::future::ready(Ok::<_, NodeError>(json!({"log": ["pull"]})))
    })
    .unwrap();
    let pushed = seen.clone();
    g.add_node("push", move |s: Json| {
        pushed.lock().unwrap().push(s);
        std::future::ready(Ok::<_, NodeError>(json!({"log": ["push"]})))
    })
    .unwrap();
    g.add_edge(START, "pull").unwrap();
    // The router reads the managed keys too, with its node's step.
    g.add_conditional_edges(
        "pull",
        |s: &Json| Send::new("push", json!({"remaining": s["remaining"], "arg": true})),
        None,
    )
    .unwrap();
    let app = g.compile().unwrap();
    let out = app
        .invoke(
            json!({"log": [], "remaining": 99}),
            &RunnableConfig::default().with_recursion_limit(10),
        )
        .await
        .unwrap();
    // Managed keys are neither input nor output.
    assert_eq!(out.to_json().unwrap(), json!({"log": ["pull", "push"]}));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            json!({"log": [], "remaining": 9, "last": false}),
            json!({"remaining": 9, "arg": true}),
        ]
    );
}

#[tokio::test]
async fn a_node_may_read_only_a_managed_key() {
    let mut g = graph();
    g.add_node_spec(
        "n",
        NodeSpec::new(|s: Json| async move { Ok::<_, NodeError>(json!({"log": [s]})) })
            .input_keys(["last"]),
    )
    .unwrap();
    g.add_edge(START, "n").unwrap();
    let app = g.compile().unwrap();
    let out = app
        .invoke(
            json!({"log": []}),
            &RunnableConfig::default().with_recursion_limit(2),
        )
        .await
        .unwrap();
    // Step 1 of a limit of 2: one step remains.
    assert_eq!(out.to_json().unwrap(), json!({"log": [{"last": true}]}));
}

#[test]
fn a_managed_key_cannot_shadow_a_state_key() {
    assert!(graph().with_remaining_steps("log").is_err());
    assert!(graph().with_is_last_step("remaining").is_err());
}
