//! Concurrent runs on one thread (issue 21, observation 1): every
//! checkpoint a run saves goes through the saver's compare-and-set on the
//! thread head, so of several runs racing on a thread each either succeeds,
//! with all its writes reachable from the head, or fails with
//! `PregelError::ThreadBusy`, leaving nothing reachable behind. The history
//! stays one chain: no fork, silent or not.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{
    CheckpointConfig, CheckpointSaver, InMemorySaver, ListQuery, SharedSaver,
};
use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::{ErrorKind, RunnableConfig, random_u64};
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema,
    StateGraph,
};
use stategraph_pregel::PregelError;

const RUNS: usize = 8;
const ROUNDS: usize = 50;

/// `START -> a -> b`: each node appends `<run>:<node>` to `log`, where
/// `run` is the tag the run's input set, after a random pause of up to a
/// millisecond so that racing runs interleave.
fn app(saver: SharedSaver) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log").last_value("run"));
    for name in ["a", "b"] {
        g.add_node(name, move |state: Json| async move {
            tokio::time::sleep(Duration::from_micros(random_u64() % 1000)).await;
            let run = state["run"].as_str().unwrap_or_default().to_owned();
            Ok::<_, NodeError>(json!({"log": [format!("{run}:{name}")]}))
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// What the rounds observed.
#[derive(Default)]
struct Tally {
    ok: Vec<String>,
    busy: usize,
}

/// `rounds` rounds of `RUNS` runs started together on one thread.
async fn race(saver: SharedSaver, thread: &str, durability: Durability, rounds: usize) -> Tally {
    let app = Arc::new(app(saver.clone()));
    let mut tally = Tally::default();
    for round in 0..rounds {
        let runs: Vec<_> = (0..RUNS)
            .map(|run| {
                let app = app.clone();
                let config = RunnableConfig::thread(thread);
                let tag = format!("r{round}-{run}");
                tokio::spawn(async move {
                    let input = json!({"run": tag, "log": [format!("{tag}:in")]});
                    let options = RunOptions::new().durability(durability);
                    (tag, app.invoke_with(input, &config, options).await)
                })
            })
            .collect();
        let mut winners = 0;
        for run in runs {
            let (tag, result) = run.await.unwrap();
            match result {
                Ok(_) => {
                    winners += 1;
                    tally.ok.push(tag);
                }
                Err(err @ PregelError::ThreadBusy { .. }) => {
                    assert_eq!(err.kind(), ErrorKind::Conflict);
                    assert!(err.to_string().contains(thread), "{err}");
                    tally.busy += 1;
                }
                Err(other) => panic!("run {tag}: unexpected error {other}"),
            }
        }
        // The run that saved the round's last checkpoint always completes.
        assert!(winners >= 1, "round {round}: no run succeeded");
    }
    tally
}

/// The head's log holds every entry of every run that returned Ok, and
/// the thread's checkpoints form one chain.
async fn check_thread(saver: &SharedSaver, app: &CompiledStateGraph, thread: &str, tally: &Tally) {
    let state = app
        .get_state(&RunnableConfig::thread(thread))
        .await
        .unwrap();
    let log: BTreeSet<String> = state.values.to_json().unwrap()["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry.as_str().unwrap().to_owned())
        .collect();
    for tag in &tally.ok {
        for node in ["in", "a", "b"] {
            let entry = format!("{tag}:{node}");
            assert!(log.contains(&entry), "{entry} of a successful run is lost");
        }
    }
    let mut children: HashMap<String, usize> = HashMap::new();
    let mut tuples = saver.list(ListQuery::thread(thread));
    let mut count = 0;
    while let Some(tuple) = tuples.next().await {
        let tuple = tuple.unwrap();
        count += 1;
        if let Some(parent) = tuple.parent_config.and_then(|p| p.checkpoint_id) {
            *children.entry(parent.to_string()).or_default() += 1;
        }
    }
    let forks: Vec<_> = children.iter().filter(|(_, n)| **n > 1).collect();
    assert!(forks.is_empty(), "the history forked at {forks:?}");
    assert!(count > 0);
}

async fn race_and_check(saver: SharedSaver, durability: Durability, rounds: usize) {
    let thread = format!("busy-{}", random_u64());
    let tally = race(saver.clone(), &thread, durability, rounds).await;
    check_thread(&saver, &app(saver.clone()), &thread, &tally).await;
    assert_eq!(tally.ok.len() + tally.busy, RUNS * rounds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_runs_on_memory_never_fork_the_thread() {
    let saver: SharedSaver = Arc::new(InMemorySaver::new());
    race_and_check(saver.clone(), Durability::Async, ROUNDS).await;
    race_and_check(saver.clone(), Durability::Sync, ROUNDS / 5).await;
    race_and_check(saver, Durability::Exit, ROUNDS / 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_runs_on_sqlite_never_fork_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let saver: SharedSaver = Arc::new(SqliteSaver::open(dir.path().join("busy.db")).unwrap());
    race_and_check(saver.clone(), Durability::Async, ROUNDS).await;
    race_and_check(saver, Durability::Exit, ROUNDS / 5).await;
}

async fn postgres() -> Option<SharedSaver> {
    let url = crate::support::postgres_url()?;
    let saver = PostgresSaver::connect(&url).await.unwrap();
    saver.setup().await.unwrap();
    Some(Arc::new(saver))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_runs_on_postgres_never_fork_the_thread() {
    let Some(saver) = postgres().await else {
        return;
    };
    race_and_check(saver.clone(), Durability::Async, ROUNDS).await;
    race_and_check(saver, Durability::Exit, ROUNDS / 5).await;
}

/// With `retry_when_busy`, every racing run ends Ok: each loser waits and
/// runs again on the new head, so every run's entries are in the head.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_told_to_retry_all_succeed_on_the_new_head() {
    let saver: SharedSaver = Arc::new(InMemorySaver::new());
    let app = Arc::new(app(saver.clone()));
    let thread = "retrying";
    let runs: Vec<_> = (0..RUNS)
        .map(|run| {
            let app = app.clone();
            tokio::spawn(async move {
                let tag = format!("t-{run}");
                let input = json!({"run": tag, "log": [format!("{tag}:in")]});
                let options = RunOptions::new().retry_when_busy(100);
                app.invoke_with(input, &RunnableConfig::thread(thread), options)
                    .await
                    .unwrap();
                tag
            })
        })
        .collect();
    let mut tally = Tally::default();
    for run in runs {
        tally.ok.push(run.await.unwrap());
    }
    check_thread(&saver, &app, thread, &tally).await;
}

/// A run whose thread another writer moved ahead does not overwrite it:
/// `update_state` between a run's load and its put makes the run busy, and
/// the update stays the thread's state.
#[tokio::test]
async fn an_update_during_a_run_wins_and_the_run_is_told() {
    let saver: SharedSaver = Arc::new(InMemorySaver::new());
    let gate = Arc::new(tokio::sync::Notify::new());
    let entered = Arc::new(tokio::sync::Notify::new());
    let mut g = StateGraph::new(Schema::new().append("log"));
    {
        let (gate, entered) = (gate.clone(), entered.clone());
        g.add_node("slow", move |_state: Json| {
            let (gate, entered) = (gate.clone(), entered.clone());
            async move {
                entered.notify_one();
                gate.notified().await;
                Ok::<_, NodeError>(json!({"log": ["slow"]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "slow").unwrap();
    let app = Arc::new(
        g.compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
            .unwrap(),
    );
    let config = RunnableConfig::thread("updated-midway");
    let run = {
        let (app, config) = (app.clone(), config.clone());
        tokio::spawn(async move {
            let options = RunOptions::new().durability(Durability::Sync);
            app.invoke_with(json!({"log": ["in"]}), &config, options)
                .await
        })
    };
    entered.notified().await;
    app.update_state(
        &config,
        Some(json!({"log": ["update"]}).into()),
        Some("slow"),
    )
    .await
    .unwrap();
    gate.notify_one();
    let err = run.await.unwrap().unwrap_err();
    assert!(matches!(err, PregelError::ThreadBusy { .. }), "{err}");
    let state = app.get_state(&config).await.unwrap();
    assert_eq!(
        state.values.to_json().unwrap()["log"],
        json!(["in", "update"])
    );
    let head = saver
        .get_tuple(&CheckpointConfig::thread("updated-midway"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        head.metadata.source,
        Some(stategraph_checkpoint::CheckpointSource::Update)
    );
}

/// Issue 21, observation 7: a head written by a process whose clock runs
/// ahead (its id sorts above every id this process makes) stays the parent
/// of the next run's checkpoints, which sort above it: the run's state is
/// the thread's state, on every backend.
#[tokio::test]
async fn a_head_from_a_clock_ahead_does_not_hide_later_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut savers: Vec<SharedSaver> = vec![
        Arc::new(InMemorySaver::new()),
        Arc::new(SqliteSaver::open(dir.path().join("ahead.db")).unwrap()),
    ];
    savers.extend(postgres().await);
    for saver in savers {
        let app = app(saver.clone());
        let thread = format!("ahead-{}", random_u64());
        let config = RunnableConfig::thread(&thread);
        app.invoke(json!({"run": "first", "log": ["first:in"]}), &config)
            .await
            .unwrap();
        // Another process, its clock far ahead, extends the head.
        let head = saver
            .get_tuple(&CheckpointConfig::thread(&thread))
            .await
            .unwrap()
            .unwrap();
        let mut ahead = head.checkpoint.clone();
        ahead.id = "fffffff0-0000-7000-8000-000000000000".into();
        saver
            .put(
                &head.config,
                ahead,
                head.metadata.clone(),
                Default::default(),
            )
            .await
            .unwrap();
        app.invoke(json!({"run": "second", "log": ["second:in"]}), &config)
            .await
            .unwrap();
        let state = app.get_state(&config).await.unwrap();
        let log = state.values.to_json().unwrap()["log"].clone();
        assert_eq!(
            log,
            json!([
                "first:in",
                "first:a",
                "first:b",
                "second:in",
                "second:a",
                "second:b"
            ]),
            "{saver:?}"
        );
        let id = state.config.checkpoint_id.unwrap();
        assert!(id.as_str() > "fffffff0-0000-7000-8000-000000000000", "{id}");
    }
}
