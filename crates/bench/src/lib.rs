//! Benchmark workloads of stategraph, in the LangGraph harnesses' output format.
#![doc = include_str!("../README.md")]

mod bigtool;
mod checkpoint;
mod checkpoint_postgres;
mod checkpoint_sqlite;
mod graphs;
mod react;
mod saver_workload;
mod sse;
mod store;
mod typed;

use std::time::{Duration, Instant};

/// A benchmark workload.
pub struct Workload {
    /// The name printed in the `workload` field.
    pub name: &'static str,
    /// Builds what the workload needs once (graph, input) and returns the
    /// timed part: one run, returning its outcome.
    pub setup: fn() -> Runner,
}

/// One timed repetition of a workload.
pub type Runner = Box<dyn FnMut() -> Outcome>;

/// What one run of a workload produced, for the `chunks` and `check` fields.
pub struct Outcome {
    /// Number of stream chunks (or operations) the run produced.
    pub chunks: usize,
    /// The check object, comparable across implementations.
    pub check: Check,
}

/// A run's check object, or how to compute it from what the run kept. As
/// the Python harness does, only the last repetition's check is computed,
/// after the clock stops.
pub enum Check {
    /// Computed already (cheap checks: counts).
    Ready(serde_json::Value),
    /// Computed on demand from the run's chunks.
    Later(Box<dyn FnOnce() -> serde_json::Value>),
}

impl Check {
    /// A check computed when asked, after the timing.
    pub fn later(check: impl FnOnce() -> serde_json::Value + 'static) -> Self {
        Self::Later(Box::new(check))
    }

    /// The check object.
    pub fn resolve(self) -> serde_json::Value {
        match self {
            Self::Ready(check) => check,
            Self::Later(check) => check(),
        }
    }
}

impl From<serde_json::Value> for Check {
    fn from(check: serde_json::Value) -> Self {
        Self::Ready(check)
    }
}

/// Every workload, in a stable order.
pub fn workloads() -> Vec<Workload> {
    let mut all = graphs::workloads();
    all.extend(typed::workloads());
    all.extend(bigtool::workloads());
    all.extend(checkpoint::workloads());
    all.extend(checkpoint_sqlite::workloads());
    all.extend(checkpoint_postgres::workloads());
    all.extend(react::workloads());
    all.extend(store::workloads());
    all.extend(sse::workloads());
    all
}

/// Runs `warmup` untimed and `reps` timed repetitions and returns the JSON
/// line for the workload.
pub fn measure(workload: &Workload, reps: usize, warmup: usize) -> serde_json::Value {
    let mut run = (workload.setup)();
    for _ in 0..warmup {
        run();
    }
    let mut times: Vec<Duration> = Vec::with_capacity(reps.max(1));
    let mut outcome = None;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        let result = run();
        times.push(start.elapsed());
        outcome = Some(result);
    }
    times.sort();
    let median = times[times.len() / 2];
    let outcome = outcome.unwrap_or(Outcome {
        chunks: 0,
        check: serde_json::Value::Null.into(),
    });
    let check = outcome.check.resolve();
    let mut line = serde_json::json!({
        "impl": "stategraph-rust",
        "workload": workload.name,
        "mode": "async",
        "reps": times.len(),
        "median_s": median.as_secs_f64(),
        "min_s": times[0].as_secs_f64(),
        "chunks": outcome.chunks,
        "check": check,
    });
    if let Some(expected) = expected(workload.name) {
        line["ok"] = serde_json::Value::Bool(line["check"] == expected);
    }
    line
}

/// The check WORKLOADS.md predicts for a workload (section 10), as the
/// Python harness computes it; `None` for workloads it does not describe.
pub fn expected(name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    let nodes = ["one", "two", "three", "four", "five", "six"];
    let counts = |loops: usize| -> serde_json::Value {
        nodes
            .iter()
            .map(|n| ((*n).to_owned(), json!(loops)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    if name.ends_with("_compilation") {
        let user_nodes = if name.starts_with("sequential_1000") {
            1000
        } else {
            6
        };
        return Some(json!({"user_nodes": user_nodes}));
    }
    if name.ends_with("_first_event_latency") {
        let first = if name.starts_with("sequential") {
            "node_0"
        } else {
            "one"
        };
        return Some(json!({"chunks": 1, "first": [first]}));
    }
    if let Some(n) = name
        .strip_prefix("sequential_")
        .and_then(|n| n.parse::<usize>().ok())
    {
        return Some(json!({
            "chunks": n,
            "first_node": "node_0",
            "last_node": format!("node_{}", n - 1),
            "all_updates_empty": true,
        }));
    }
    if let Some(n) = name
        .strip_prefix("fanout_to_subgraph_")
        .and_then(|rest| rest.split('x').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        return Some(json!({
            "chunks": n,
            "jokes": n,
            "joke_lengths": [5040],
            "all_end_with_10_bumps": true,
        }));
    }
    if let Some(n) = name
        .strip_prefix("react_agent_")
        .and_then(|rest| rest.split('x').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        return Some(json!({
            "chunks": 2 * n + 1,
            "ai_messages": n + 1,
            "tool_messages": n,
            "tool_result_lengths": [36180],
            "final_answer_length": 600,
            "alternating": true,
        }));
    }
    if name.starts_with("wide_") {
        let (loops, messages) = if name.contains("_25x300") {
            (6, 595)
        } else {
            (7, 1873)
        };
        return Some(json!({
            "chunks": 6 * loops,
            "iterations": loops,
            "final_messages_len": messages,
            "node_counts": counts(loops),
        }));
    }
    None
}

/// Whether `name` matches a comma-separated list of patterns where `*`
/// matches any run of characters.
pub fn matches(patterns: &str, name: &str) -> bool {
    patterns
        .split(',')
        .map(str::trim)
        .any(|pattern| glob(pattern.as_bytes(), name.as_bytes()))
}

fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_the_python_harness() {
        assert!(matches("*", "sequential_10"));
        assert!(matches("sequential_*,react_agent_10x", "react_agent_10x"));
        assert!(matches("checkpoint_*", "checkpoint_memory_put_shared"));
        assert!(!matches(
            "checkpoint_*_serialized",
            "checkpoint_memory_put_shared"
        ));
    }

    #[test]
    fn graph_workloads_meet_the_expected_checks() {
        for workload in workloads() {
            let line = measure(&workload, 1, 0);
            if expected(workload.name).is_some() {
                assert_eq!(
                    line["ok"],
                    serde_json::json!(true),
                    "{}: {}",
                    workload.name,
                    line["check"]
                );
            }
        }
    }

    #[test]
    fn every_workload_runs_and_reports_its_check() {
        for workload in workloads() {
            let line = measure(&workload, 1, 0);
            assert_eq!(line["workload"], workload.name);
            // Compilation workloads stream nothing; every other one does.
            let streams = !workload.name.ends_with("_compilation");
            assert_eq!(
                line["chunks"].as_u64().unwrap() > 0,
                streams,
                "{}",
                workload.name
            );
            assert!(line["check"].is_object());
        }
    }
}
