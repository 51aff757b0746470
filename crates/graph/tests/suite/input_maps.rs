//! What a node reads is the state as of its step. The runtime keeps a read
//! set's input map between steps and, once no node holds it any more, brings
//! it up to date in place (only the changed entries are read again); these
//! tests pin what that must never change: keys appearing and disappearing,
//! values changed by reducers, and a map a node keeps staying as it was.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_channels::{Channel, ChannelError, EphemeralValue};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{END, NodeError, START, Schema, StateGraph};
use stategraph_pregel::ChannelValues;

const STEPS: i64 = 7;

/// `n` counts the steps, `odd` (ephemeral) is written on odd steps only,
/// `log` appends every `n`, `fixed` is only ever the input's.
fn schema() -> Schema {
    Schema::new()
        .last_value("n")
        .key("odd", EphemeralValue::<Value>::new())
        .append("log")
        .last_value("fixed")
}

/// What the node writes after reading `n`.
fn update(n: i64) -> Json {
    let next = n + 1;
    if next % 2 == 1 {
        json!({"n": next, "odd": next, "log": [next]})
    } else {
        json!({"n": next, "log": [next]})
    }
}

/// The state the node reads when `n` is `n`.
fn expected(n: i64) -> Json {
    let log: Vec<i64> = (1..=n).collect();
    if n % 2 == 1 {
        json!({"n": n, "odd": n, "log": log, "fixed": "f"})
    } else {
        json!({"n": n, "log": log, "fixed": "f"})
    }
}

fn input() -> Json {
    json!({"n": 0, "log": [], "fixed": "f"})
}

/// Loops `tick` back to itself until `n` reaches `STEPS`, runs the graph
/// on `input()` and returns its output.
async fn run_loop(mut g: StateGraph) -> Json {
    g.add_edge(START, "tick").unwrap();
    g.add_conditional_edges(
        "tick",
        |s: &Json| {
            if s["n"].as_i64() < Some(STEPS) {
                "tick"
            } else {
                END
            }
        },
        None,
    )
    .unwrap();
    g.compile()
        .unwrap()
        .invoke(input(), &RunnableConfig::default())
        .await
        .unwrap()
        .to_json()
        .unwrap()
}

#[tokio::test]
async fn each_step_reads_the_state_as_of_that_step() {
    let seen: Arc<Mutex<Vec<Json>>> = Arc::default();
    let mut g = StateGraph::new(schema());
    let record = seen.clone();
    g.add_node("tick", move |s: Json| {
        record.lock().unwrap().push(s.clone());
        std::future::ready(Ok::<_, NodeError>(update(s["n"].as_i64().unwrap())))
    })
    .unwrap();
    let out = run_loop(g).await;
    let seen = seen.lock().unwrap();
    let want: Vec<Json> = (0..STEPS).map(expected).collect();
    assert_eq!(*seen, want);
    let log: Vec<i64> = (1..=STEPS).collect();
    assert_eq!(
        out,
        json!({"n": STEPS, "odd": STEPS, "log": log, "fixed": "f"})
    );
}

#[tokio::test]
async fn a_map_a_node_keeps_does_not_change_under_it() {
    let kept: Arc<Mutex<Vec<ChannelValues>>> = Arc::default();
    let mut g = StateGraph::new(schema());
    let keep = kept.clone();
    g.add_node("tick", move |s: ChannelValues| {
        let n = s.json("n").and_then(|n| n.as_i64()).unwrap();
        // Every other map is kept, so the runtime sees both a map it may
        // update in place and one it must leave alone.
        if n % 2 == 0 {
            keep.lock().unwrap().push(s);
        }
        std::future::ready(Ok::<_, NodeError>(update(n)))
    })
    .unwrap();
    run_loop(g).await;
    let kept: Vec<Json> = kept
        .lock()
        .unwrap()
        .iter()
        .map(ChannelValues::to_json)
        .collect();
    let want: Vec<Json> = (0..STEPS).filter(|n| n % 2 == 0).map(expected).collect();
    assert_eq!(kept, want);
}

#[tokio::test]
async fn nodes_of_one_step_read_the_same_state_and_later_steps_the_new_one() {
    let seen: Arc<Mutex<Vec<(String, Json)>>> = Arc::default();
    let mut g = StateGraph::new(schema());
    for name in ["left", "right"] {
        let record = seen.clone();
        g.add_node(name, move |s: ChannelValues| {
            let n = s.json("n").and_then(|n| n.as_i64()).unwrap();
            record.lock().unwrap().push((name.to_owned(), s.to_json()));
            // Only one writer of the last-value key per step.
            let write = if name == "left" {
                update(n)
            } else {
                json!({"log": [-n]})
            };
            std::future::ready(Ok::<_, NodeError>(write))
        })
        .unwrap();
        g.add_edge(START, name).unwrap();
    }
    g.add_node("join", |s: Json| async move {
        Ok::<_, NodeError>(json!({"log": [s["log"].as_array().map_or(0, Vec::len)]}))
    })
    .unwrap();
    g.add_edge("left", "join").unwrap();
    g.add_edge("right", "join").unwrap();
    g.add_edge("join", END).unwrap();
    let out = g
        .compile()
        .unwrap()
        .invoke(input(), &RunnableConfig::default())
        .await
        .unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen,
        [
            ("left".to_owned(), expected(0)),
            ("right".to_owned(), expected(0)),
        ]
    );
    // `join` read the log after both writes (two entries) and appended 2;
    // `odd` was cleared after the step that read it.
    assert_eq!(
        out.to_json().unwrap(),
        json!({"n": 1, "log": [1, 0, 2], "fixed": "f"})
    );
}

/// A channel that keeps the first value ever written: later writes change
/// nothing (`update` answers `false`).
#[derive(Clone, Debug, Default)]
struct FirstWins(Option<Value>);

impl Channel for FirstWins {
    fn get(&self) -> Option<Value> {
        self.0.clone()
    }
    fn is_available(&self) -> bool {
        self.0.is_some()
    }
    fn update(&mut self, values: Vec<Value>) -> Result<bool, ChannelError> {
        match (&self.0, values.into_iter().next()) {
            (None, Some(first)) => {
                self.0 = Some(first);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
    fn checkpoint(&self) -> Option<Value> {
        self.0.clone()
    }
    fn restore(&mut self, checkpoint: Option<Value>) -> Result<(), ChannelError> {
        self.0 = checkpoint;
        Ok(())
    }
    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}

#[tokio::test]
async fn a_write_that_changes_nothing_still_reads_as_the_kept_value() {
    let seen: Arc<Mutex<Vec<Json>>> = Arc::default();
    let mut g = StateGraph::new(schema().key("first", FirstWins::default()));
    let record = seen.clone();
    g.add_node("tick", move |s: Json| {
        record.lock().unwrap().push(s["first"].clone());
        let n = s["n"].as_i64().unwrap();
        // Every step writes `first`; only the first write sticks.
        let mut write = update(n);
        write["first"] = json!(n + 100);
        std::future::ready(Ok::<_, NodeError>(write))
    })
    .unwrap();
    run_loop(g).await;
    let mut want = vec![Json::Null];
    want.extend((1..STEPS).map(|_| json!(100)));
    assert_eq!(*seen.lock().unwrap(), want);
}
