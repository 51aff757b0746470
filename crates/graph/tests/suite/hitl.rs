//! Human in the loop and recovery, on the in-memory saver and on SQLite
//! (only the saver line differs): parallel interrupts answered one at a time
//! by id, a failed task retried on resume while its finished sibling is not
//! run again, time travel (a `fork` checkpoint) and `update_state` on a past
//! checkpoint. The expectations are LangGraph 1.2.22's, observed with the
//! same graphs in Python.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointSaver, InMemorySaver, ListQuery};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, NodeError, START, Schema, StateGraph,
    SubgraphCheckpoints, TaskContext,
};
use stategraph_pregel::Input;
use support::{chunks, log_history, named};

type Runs = Arc<Mutex<Vec<String>>>;

/// `START -> a -> {b, c, d}`: `b` and `c` interrupt, `d` finishes.
fn parallel(saver: impl CheckpointSaver, runs: &Runs) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b", "c", "d"] {
        let runs = runs.clone();
        g.add_node(name, move |_s: Json, ctx: TaskContext| {
            let runs = runs.clone();
            async move {
                runs.lock().unwrap().push(name.to_owned());
                if matches!(name, "b" | "c") {
                    let answer = ctx.interrupt(format!("{name}?"))?.to_json()?;
                    let answer = answer.as_str().unwrap_or_default().to_owned();
                    return Ok::<_, NodeError>(json!({"log": [format!("{name}:{answer}")]}));
                }
                Ok(json!({"log": [name]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    for to in ["b", "c", "d"] {
        g.add_edge("a", to).unwrap();
    }
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

async fn parallel_interrupts(saver: impl CheckpointSaver) {
    let runs = Runs::default();
    let app = parallel(saver, &runs);
    let cfg = RunnableConfig::thread("p");
    let out = app
        .invoke(json!({"log": []}), &cfg)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out["log"], json!(["a", "d"]));
    let asked: Vec<&Json> = out["__interrupt__"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["value"])
        .collect();
    assert_eq!(asked.len(), 2);
    assert!(asked.contains(&&json!("b?")) && asked.contains(&&json!("c?")));

    let state = app.get_state(&cfg).await.unwrap();
    assert_eq!(state.next, ["b", "c"]);
    assert_eq!(state.interrupts.len(), 2);
    let id_of = |name: &str| {
        state
            .tasks
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .interrupts[0]
            .id
            .clone()
    };
    let (b, c) = (id_of("b"), id_of("c"));

    // A bare answer with two interrupts pending would be a guess.
    let bare = app
        .invoke(Command::new().resume(Value::from_json(json!("x"))), &cfg)
        .await
        .unwrap_err();
    assert!(
        bare.to_string().contains("multiple pending interrupts"),
        "{bare}"
    );

    runs.lock().unwrap().clear();
    let answer_b = Command::new().resume_by_id([(b, Value::from_json(json!("B")))]);
    let got: Vec<Json> = chunks(&app, answer_b, &cfg)
        .await
        .into_iter()
        .map(named)
        .collect();
    // The saved state first, then d's saved update (not run again); b and c
    // run from their start (in either order), c interrupts again; then the
    // state with the finished tasks' writes.
    assert_eq!(got[0], json!(["values", {"log": ["a"]}]));
    assert_eq!(
        got[1],
        json!(["updates", {"d": {"log": ["d"]}, "__metadata__": {"cached": true}}])
    );
    assert_eq!(
        got.last(),
        Some(&json!(["values", {"log": ["a", "b:B", "d"]}]))
    );
    let middle = &got[2..got.len() - 1];
    assert_eq!(middle.len(), 3, "{got:?}");
    assert!(
        middle.contains(&json!(["updates", {"b": {"log": ["b:B"]}}])),
        "{got:?}"
    );
    assert!(
        middle.contains(&json!(["updates", {"__interrupt__": ["c?"]}])),
        "{got:?}"
    );
    assert!(
        middle.contains(&json!(["values", {"log": ["a"], "__interrupt__": ["c?"]}])),
        "{got:?}"
    );
    let mut ran = runs.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, ["b", "c"], "d finished before: it does not run again");

    let answer_c = Command::new().resume_by_id([(c, Value::from_json(json!("C")))]);
    let got = chunks(&app, answer_c, &cfg).await;
    assert!(
        got.contains(
            &json!(["updates", {"b": {"log": ["b:B"]}, "__metadata__": {"cached": true}}])
        ),
        "{got:?}"
    );
    assert!(
        got.contains(&json!(["updates", {"c": {"log": ["c:C"]}}])),
        "{got:?}"
    );
    let last = app.get_state(&cfg).await.unwrap();
    assert_eq!(
        last.values.to_json().unwrap(),
        json!({"log": ["a", "b:B", "c:C", "d"]})
    );
    assert!(last.next.is_empty() && last.interrupts.is_empty());
}

#[tokio::test]
async fn in_memory_parallel_interrupts() {
    parallel_interrupts(InMemorySaver::new()).await;
}

#[tokio::test]
async fn sqlite_parallel_interrupts() {
    parallel_interrupts(SqliteSaver::in_memory().unwrap()).await;
}

/// `START -> a -> {b, d}`, `[b, d] -> e`; `b` fails while `fail` is set.
async fn failed_sibling_is_retried_alone(saver: impl CheckpointSaver) {
    let runs = Runs::default();
    let fail = Arc::new(Mutex::new(true));
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b", "d", "e"] {
        let (runs, fail) = (runs.clone(), fail.clone());
        g.add_node(name, move |_s: Json| {
            runs.lock().unwrap().push(name.to_owned());
            let failing = name == "b" && *fail.lock().unwrap();
            async move {
                if failing {
                    // Fails after its sibling finished (the Python case sleeps).
                    for _ in 0..3 {
                        tokio::task::yield_now().await;
                    }
                    return Err(NodeError::new("ValueError", "boom"));
                }
                Ok::<_, NodeError>(json!({"log": [name]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("a", "d").unwrap();
    g.add_waiting_edge(["b", "d"], "e").unwrap();
    let app = g
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap();
    let cfg = RunnableConfig::thread("f");
    let err = app.invoke(json!({"log": []}), &cfg).await.unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");

    let state = app.get_state(&cfg).await.unwrap();
    assert_eq!(state.values.to_json().unwrap(), json!({"log": ["a", "d"]}));
    assert_eq!(state.next, ["b"]);
    let failed = state.tasks.iter().find(|t| t.name == "b").unwrap();
    assert_eq!(failed.error.as_deref(), Some("ValueError('boom')"));
    let done = state.tasks.iter().find(|t| t.name == "d").unwrap();
    assert_eq!(
        done.result.as_ref().unwrap().to_json().unwrap(),
        json!({"log": ["d"]})
    );

    *fail.lock().unwrap() = false;
    runs.lock().unwrap().clear();
    let got = chunks(&app, Input::Resume, &cfg).await;
    assert_eq!(
        got,
        [
            json!(["values", {"log": ["a"]}]),
            json!(["updates", {"d": {"log": ["d"]}, "__metadata__": {"cached": true}}]),
            json!(["updates", {"b": {"log": ["b"]}}]),
            json!(["values", {"log": ["a", "b", "d"]}]),
            json!(["updates", {"e": {"log": ["e"]}}]),
            json!(["values", {"log": ["a", "b", "d", "e"]}]),
        ]
    );
    assert_eq!(*runs.lock().unwrap(), ["b", "e"]);
}

#[tokio::test]
async fn in_memory_failed_sibling_is_retried_alone() {
    failed_sibling_is_retried_alone(InMemorySaver::new()).await;
}

#[tokio::test]
async fn sqlite_failed_sibling_is_retried_alone() {
    failed_sibling_is_retried_alone(SqliteSaver::in_memory().unwrap()).await;
}

fn chain(saver: impl CheckpointSaver) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b", "c"] {
        g.add_node(name, move |_s: Json| async move {
            Ok::<_, NodeError>(json!({"log": [name]}))
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "c").unwrap();
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

async fn time_travel(make: impl Fn() -> CompiledStateGraph) {
    // Replaying from the checkpoint before `b` saves a fork, then runs b, c.
    let app = make();
    let cfg = RunnableConfig::thread("t");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let history = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap();
    let before_b = &history[2];
    assert_eq!(before_b.next, ["b"]);
    let id = before_b.config.checkpoint_id.clone().unwrap();
    let old = RunnableConfig::thread("t").with_checkpoint_id(id.clone());
    let got = chunks(&app, Input::Resume, &old).await;
    assert_eq!(
        got,
        [
            json!(["values", {"log": ["a"]}]),
            json!(["updates", {"b": {"log": ["b"]}}]),
            json!(["values", {"log": ["a", "b"]}]),
            json!(["updates", {"c": {"log": ["c"]}}]),
            json!(["values", {"log": ["a", "b", "c"]}]),
        ]
    );
    let after = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap();
    let fork = &after[2];
    assert_eq!(fork.parent_config.as_ref().unwrap().checkpoint_id, Some(id));
    assert_eq!(
        log_history(&app, &cfg).await.as_array().unwrap()[..],
        [
            json!([4, "loop", [], ["a", "b", "c"]]),
            json!([3, "loop", ["c"], ["a", "b"]]),
            json!([2, "fork", ["b"], ["a"]]),
            json!([3, "loop", [], ["a", "b", "c"]]),
            json!([2, "loop", ["c"], ["a", "b"]]),
            json!([1, "loop", ["b"], ["a"]]),
            json!([0, "loop", ["a"], []]),
            json!([-1, "input", ["__start__"], []]),
        ]
    );

    // Updating a past checkpoint branches from it; resuming the returned
    // checkpoint runs from there with no extra fork.
    let app = make();
    let cfg = RunnableConfig::thread("t2");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let history = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap();
    let old = RunnableConfig::thread("t2")
        .with_checkpoint_id(history[2].config.checkpoint_id.clone().unwrap());
    let updated = app
        .update_state(
            &old,
            Some(Value::from_json(json!({"log": ["patched"]}))),
            None,
        )
        .await
        .unwrap();
    let from = RunnableConfig::thread("t2").with_checkpoint_id(updated.checkpoint_id.unwrap());
    let got = chunks(&app, Input::Resume, &from).await;
    assert_eq!(
        got.first(),
        Some(&json!(["values", {"log": ["a", "patched"]}]))
    );
    assert_eq!(
        log_history(&app, &cfg).await.as_array().unwrap()[..3],
        [
            json!([4, "loop", [], ["a", "patched", "b", "c"]]),
            json!([3, "loop", ["c"], ["a", "patched", "b"]]),
            json!([2, "update", ["b"], ["a", "patched"]]),
        ]
    );
}

#[tokio::test]
async fn in_memory_time_travel() {
    time_travel(|| chain(InMemorySaver::new())).await;
}

#[tokio::test]
async fn sqlite_time_travel() {
    time_travel(|| chain(SqliteSaver::in_memory().unwrap())).await;
}

/// A parent `START -> sub` whose subgraph counts its invocations in a
/// child-only key and asks a question on the first one.
fn with_subgraph(
    saver: impl CheckpointSaver,
    mode: SubgraphCheckpoints,
    runs: &Runs,
) -> CompiledStateGraph {
    let skip = |s: &Json| (s["calls"].as_array().map_or(0, Vec::len) > 1).then_some("again");
    asking_subgraph(Arc::new(saver), mode, runs, skip)
}

/// A parent `START -> sub` whose subgraph counts its invocations in a
/// child-only key (`count`), then (`ask`) logs what `skip` returns for its
/// state, or, when that is `None`, asks "first?" and logs the answer.
fn asking_subgraph(
    saver: stategraph_checkpoint::SharedSaver,
    mode: SubgraphCheckpoints,
    runs: &Runs,
    skip: fn(&Json) -> Option<&'static str>,
) -> CompiledStateGraph {
    let mut child = StateGraph::new(Schema::new().append("log").append("calls"));
    let seen = runs.clone();
    child
        .add_node("count", move |s: Json| {
            seen.lock().unwrap().push("count".into());
            let calls = s["calls"].as_array().map_or(0, Vec::len);
            async move { Ok::<_, NodeError>(json!({"calls": [calls + 1]})) }
        })
        .unwrap();
    child
        .add_node("ask", move |s: Json, ctx: TaskContext| async move {
            if let Some(text) = skip(&s) {
                return Ok(json!({"log": [text]}));
            }
            let answer = ctx.interrupt("first?")?.to_json()?;
            Ok::<_, NodeError>(json!({"log": [answer]}))
        })
        .unwrap();
    child.add_edge(START, "count").unwrap();
    child.add_edge("count", "ask").unwrap();
    let child = child
        .compile_with(CompileOptions::new().subgraph_checkpoints(mode))
        .unwrap();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("sub", child).unwrap();
    g.add_edge(START, "sub").unwrap();
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

async fn subgraph_checkpoint_modes(
    make: impl Fn() -> Box<dyn Fn(SubgraphCheckpoints, &Runs) -> CompiledStateGraph>,
) {
    let resume = || Command::new().resume(Value::from_json(json!("yes")));
    let make = make();

    // Per invocation (the default): the resumed subgraph continues; `count`
    // does not run again.
    let runs = Runs::default();
    let app = make(SubgraphCheckpoints::PerInvocation, &runs);
    let cfg = RunnableConfig::thread("inv");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let out = app.invoke(resume(), &cfg).await.unwrap().to_json().unwrap();
    assert_eq!(out["log"], json!(["yes"]));
    assert_eq!(*runs.lock().unwrap(), ["count"]);

    // Never: nothing of the subgraph is saved, so it starts over on resume.
    let runs = Runs::default();
    let app = make(SubgraphCheckpoints::Never, &runs);
    let cfg = RunnableConfig::thread("never");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let out = app.invoke(resume(), &cfg).await.unwrap().to_json().unwrap();
    assert_eq!(out["log"], json!(["yes"]));
    assert_eq!(*runs.lock().unwrap(), ["count", "count"]);

    // Per thread: a second invocation on the thread continues the state of
    // the first (its `calls` key has one entry already, so it does not ask).
    // The subgraph's whole `log` is its update, appended to the parent's:
    // ["yes"] + (["yes"] + ["yes"] as input + ["again"]).
    let runs = Runs::default();
    let app = make(SubgraphCheckpoints::PerThread, &runs);
    let cfg = RunnableConfig::thread("thread");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    app.invoke(resume(), &cfg).await.unwrap();
    let out = app
        .invoke(json!({"log": []}), &cfg)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out["log"], json!(["yes", "yes", "yes", "again"]), "{out}");
    assert_eq!(*runs.lock().unwrap(), ["count", "count"]);
}

#[tokio::test]
async fn in_memory_subgraph_checkpoint_modes() {
    subgraph_checkpoint_modes(|| {
        Box::new(|mode, runs: &Runs| with_subgraph(InMemorySaver::new(), mode, runs))
    })
    .await;
}

#[tokio::test]
async fn sqlite_subgraph_checkpoint_modes() {
    subgraph_checkpoint_modes(|| {
        Box::new(|mode, runs: &Runs| with_subgraph(SqliteSaver::in_memory().unwrap(), mode, runs))
    })
    .await;
}

async fn error_paths(saver: impl CheckpointSaver) {
    let runs = Runs::default();
    let app = parallel(saver, &runs);
    // An empty thread has no history and empty state.
    let empty = RunnableConfig::thread("nothing");
    assert!(
        app.get_state_history(&empty, ListQuery::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(app.get_state(&empty).await.unwrap().next.is_empty());

    // An answer for an id nothing waits on answers nothing: the interrupted
    // tasks run again and ask again, with the same ids.
    let cfg = RunnableConfig::thread("wrong-id");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let before: Vec<String> = app
        .get_state(&cfg)
        .await
        .unwrap()
        .interrupts
        .iter()
        .map(|i| i.id.clone())
        .collect();
    let wrong = Command::new().resume_by_id([("0".repeat(32), Value::from_json(json!("x")))]);
    let out = app.invoke(wrong, &cfg).await.unwrap().to_json().unwrap();
    let mut asked: Vec<String> = out["__interrupt__"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    asked.sort();
    let mut before = before;
    before.sort();
    assert_eq!(asked, before);
}

#[tokio::test]
async fn in_memory_error_paths() {
    error_paths(InMemorySaver::new()).await;
}

#[tokio::test]
async fn sqlite_error_paths() {
    error_paths(SqliteSaver::in_memory().unwrap()).await;
}

/// Checkpoints of `thread` per subgraph node (`""`: the root graph).
async fn checkpoints_by_node(saver: &InMemorySaver, thread: &str) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let tuples: Vec<_> = saver.list(ListQuery::thread(thread)).collect().await;
    for tuple in tuples {
        let ns = tuple.unwrap().config.checkpoint_ns;
        let node = ns.split(':').next().unwrap_or_default().to_owned();
        *counts.entry(node).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// Exit durability saves what LangGraph's `_suppress_interrupt` saves: the
/// root graph's last checkpoint; a subgraph's only when it stopped (so it
/// can resume) or when it keeps one state per thread.
#[tokio::test]
async fn exit_durability_saves_a_subgraph_only_when_it_must() {
    use stategraph_pregel::{Durability, RunOptions};
    let exit = || RunOptions::new().durability(Durability::Exit);
    let resume = || Command::new().resume(Value::from_json(json!("yes")));
    // Asks on the first call of a thread only when told to.
    let skip = |s: &Json| (s["log"] != json!(["ask"])).then_some("done");
    let app = |mode, saver: &Arc<InMemorySaver>, runs: &Runs| {
        asking_subgraph(saver.clone(), mode, runs, skip)
    };

    // A subgraph run per invocation that finishes saves nothing.
    let saver = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let graph = app(SubgraphCheckpoints::PerInvocation, &saver, &runs);
    let cfg = RunnableConfig::thread("finished");
    let out = graph
        .invoke_with(json!({"log": []}), &cfg, exit())
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out["log"], json!(["done"]));
    assert_eq!(
        checkpoints_by_node(&saver, "finished").await,
        [("".into(), 1)]
    );

    // One that stops at an interrupt saves its checkpoint, and the resume
    // continues it: `count` does not run again.
    let runs = Runs::default();
    let graph = app(SubgraphCheckpoints::PerInvocation, &saver, &runs);
    let cfg = RunnableConfig::thread("stopped");
    graph
        .invoke_with(json!({"log": ["ask"]}), &cfg, exit())
        .await
        .unwrap();
    assert_eq!(
        checkpoints_by_node(&saver, "stopped").await,
        [("".into(), 1), ("sub".into(), 1)]
    );
    let out = graph
        .invoke_with(resume(), &cfg, exit())
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out["log"], json!(["ask", "ask", "yes"]), "{out}");
    assert_eq!(*runs.lock().unwrap(), ["count"]);

    // A subgraph with one state per thread saves it even when it finishes.
    let runs = Runs::default();
    let graph = app(SubgraphCheckpoints::PerThread, &saver, &runs);
    let cfg = RunnableConfig::thread("per-thread");
    graph
        .invoke_with(json!({"log": []}), &cfg, exit())
        .await
        .unwrap();
    assert_eq!(
        checkpoints_by_node(&saver, "per-thread").await,
        [("".into(), 1), ("sub".into(), 1)]
    );
}
