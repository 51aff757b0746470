//! Graphs that checkpoint through a `CheckpointSaver`: state kept across runs
//! of one thread, input and loop checkpoints with their steps and parent
//! links, the three durability modes, resuming a thread with no input, and
//! the state API (`get_state`, `get_state_history`). Every scenario runs on
//! the in-memory saver and on the SQLite saver: only the saver line differs.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointSaver, CheckpointSource, InMemorySaver, ListQuery};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema,
    StateGraph,
};
use stategraph_pregel::{Input, PregelError};

/// `START -> a -> b`, each appending its name to `log`. With `fail_b` set,
/// `b` fails while the counter is positive (and counts it down).
fn app(saver: impl CheckpointSaver, fail_b: Arc<AtomicUsize>) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("a", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["a"]}))
    })
    .unwrap();
    g.add_node("b", move |_s: Json| {
        let fail = fail_b
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        async move {
            if fail {
                return Err(NodeError::new("RuntimeError", "b failed"));
            }
            Ok(json!({"log": ["b"]}))
        }
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

fn ok_app(saver: impl CheckpointSaver) -> CompiledStateGraph {
    app(saver, Arc::new(AtomicUsize::new(0)))
}

fn sqlite() -> SqliteSaver {
    SqliteSaver::in_memory().unwrap()
}

/// `[step, source, next, log]` of each checkpoint, newest first.
async fn summary(app: &CompiledStateGraph, config: &RunnableConfig) -> Vec<Json> {
    app.get_state_history(config, ListQuery::default())
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            let metadata = s.metadata.unwrap();
            json!([
                metadata.step,
                metadata.to_json()["source"],
                s.next,
                s.values.to_json().unwrap()["log"]
            ])
        })
        .collect()
}

async fn run(
    app: &CompiledStateGraph,
    input: Json,
    config: &RunnableConfig,
    durability: Durability,
) {
    app.invoke_with(input, config, RunOptions::new().durability(durability))
        .await
        .unwrap();
}

async fn state_is_kept_across_runs(app: CompiledStateGraph) {
    let config = RunnableConfig::thread("t1").with_metadata("user", json!("u1"));
    let first = app.invoke(json!({"log": ["x"]}), &config).await.unwrap();
    assert_eq!(first.to_json().unwrap(), json!({"log": ["x", "a", "b"]}));
    let second = app.invoke(json!({"log": ["y"]}), &config).await.unwrap();
    assert_eq!(
        second.to_json().unwrap(),
        json!({"log": ["x", "a", "b", "y", "a", "b"]})
    );

    let history = app
        .get_state_history(&config, ListQuery::default())
        .await
        .unwrap();
    let steps: Vec<(i64, Option<CheckpointSource>)> = history
        .iter()
        .map(|s| {
            let m = s.metadata.as_ref().unwrap();
            (m.step.unwrap(), m.source)
        })
        .collect();
    use CheckpointSource::{Input as In, Loop};
    assert_eq!(
        steps,
        vec![
            (6, Some(Loop)),
            (5, Some(Loop)),
            (4, Some(Loop)),
            (3, Some(In)),
            (2, Some(Loop)),
            (1, Some(Loop)),
            (0, Some(Loop)),
            (-1, Some(In)),
        ]
    );
    // Each checkpoint's parent is the one saved before it; the first has none.
    for pair in history.windows(2) {
        let parent = pair[0].parent_config.as_ref().unwrap();
        assert_eq!(parent.checkpoint_id, pair[1].config.checkpoint_id);
    }
    assert!(history.last().unwrap().parent_config.is_none());
    // The run config's primitive metadata is merged into every checkpoint.
    assert!(
        history
            .iter()
            .all(|s| s.metadata.as_ref().unwrap().to_json()["user"] == json!("u1"))
    );
    assert_eq!(
        summary(&app, &config).await[3],
        json!([3, "input", ["__start__"], ["x", "a", "b"]])
    );

    // After a finished run nothing is left to run.
    let state = app.get_state(&config).await.unwrap();
    assert!(state.next.is_empty());
    assert_eq!(
        state.values.to_json().unwrap(),
        json!({"log": ["x", "a", "b", "y", "a", "b"]})
    );
    assert_eq!(state.config, history[0].config);
    assert!(state.created_at.is_some());

    // A filter, `before` and `limit` narrow the history.
    let inputs = app
        .get_state_history(
            &config,
            ListQuery::default().filter(json!({"source": "input"})),
        )
        .await
        .unwrap();
    assert_eq!(inputs.len(), 2);
    let before = history[2].config.checkpoint_id.clone().unwrap();
    let older = app
        .get_state_history(&config, ListQuery::default().before(before).limit(2))
        .await
        .unwrap();
    let older_steps: Vec<i64> = older
        .iter()
        .map(|s| s.metadata.as_ref().unwrap().step.unwrap())
        .collect();
    assert_eq!(older_steps, vec![3, 2]);

    // Another thread starts empty.
    let other = RunnableConfig::thread("t2");
    assert!(summary(&app, &other).await.is_empty());
    let empty = app.get_state(&other).await.unwrap();
    assert!(empty.metadata.is_none() && empty.next.is_empty());
    assert_eq!(empty.values.to_json().unwrap(), json!({}));
    let fresh = app.invoke(json!({"log": ["z"]}), &other).await.unwrap();
    assert_eq!(fresh.to_json().unwrap(), json!({"log": ["z", "a", "b"]}));
}

#[tokio::test]
async fn in_memory_state_is_kept_across_runs() {
    state_is_kept_across_runs(ok_app(InMemorySaver::new())).await;
}

#[tokio::test]
async fn sqlite_state_is_kept_across_runs() {
    state_is_kept_across_runs(ok_app(sqlite())).await;
}

async fn durability_modes(make: impl Fn() -> CompiledStateGraph) {
    for durability in [Durability::Sync, Durability::Async] {
        let app = make();
        let config = RunnableConfig::thread("d");
        run(&app, json!({"log": []}), &config, durability).await;
        // One input checkpoint and one per step (`__start__`, a, b).
        assert_eq!(summary(&app, &config).await.len(), 4, "{durability:?}");
        run(&app, json!({"log": []}), &config, durability).await;
        assert_eq!(summary(&app, &config).await.len(), 8, "{durability:?}");
    }
    let app = make();
    let config = RunnableConfig::thread("d");
    run(&app, json!({"log": ["x"]}), &config, Durability::Exit).await;
    assert_eq!(
        summary(&app, &config).await,
        vec![json!([2, "loop", [], ["x", "a", "b"]])]
    );
    run(&app, json!({"log": ["y"]}), &config, Durability::Exit).await;
    let history = app
        .get_state_history(&config, ListQuery::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 2);
    // The final checkpoint's parent is the checkpoint the run started from.
    assert_eq!(
        history[0].parent_config.as_ref().unwrap().checkpoint_id,
        history[1].config.checkpoint_id
    );
    assert_eq!(
        summary(&app, &config).await[0],
        json!([6, "loop", [], ["x", "a", "b", "y", "a", "b"]])
    );
}

#[tokio::test]
async fn in_memory_durability_modes() {
    durability_modes(|| ok_app(InMemorySaver::new())).await;
}

#[tokio::test]
async fn sqlite_durability_modes() {
    durability_modes(|| ok_app(sqlite())).await;
}

async fn resume_after_error(make: impl Fn(Arc<AtomicUsize>) -> CompiledStateGraph) {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let app = make(Arc::new(AtomicUsize::new(1)));
        let config = RunnableConfig::thread("e");
        let err = app
            .invoke_with(
                json!({"log": []}),
                &config,
                RunOptions::new().durability(durability),
            )
            .await
            .unwrap_err();
        assert_eq!(err.class(), "RuntimeError");
        // The last checkpoint is the state before `b` ran, `b` still next.
        let state = app.get_state(&config).await.unwrap();
        assert_eq!(state.next, vec!["b"], "{durability:?}");
        assert_eq!(state.values.to_json().unwrap(), json!({"log": ["a"]}));
        let saved = summary(&app, &config).await.len();
        assert_eq!(saved, if durability == Durability::Exit { 1 } else { 3 });
        // No input: the thread continues from its checkpoint.
        let out = app
            .invoke_with(
                Input::Resume,
                &config,
                RunOptions::new().durability(durability),
            )
            .await
            .unwrap();
        assert_eq!(out.to_json().unwrap(), json!({"log": ["a", "b"]}));
        let state = app.get_state(&config).await.unwrap();
        assert!(state.next.is_empty());
        let metadata = state.metadata.unwrap();
        assert_eq!(
            (metadata.step, metadata.source),
            (Some(2), Some(CheckpointSource::Loop))
        );
        // Resuming a finished thread runs nothing and saves nothing.
        let again = app.invoke(Input::Resume, &config).await.unwrap();
        assert_eq!(again.to_json().unwrap(), json!({"log": ["a", "b"]}));
        let expected = if durability == Durability::Exit { 2 } else { 4 };
        assert_eq!(summary(&app, &config).await.len(), expected);
    }
}

#[tokio::test]
async fn in_memory_resume_after_error() {
    resume_after_error(|fail| app(InMemorySaver::new(), fail)).await;
}

#[tokio::test]
async fn sqlite_resume_after_error() {
    resume_after_error(|fail| app(sqlite(), fail)).await;
}

#[tokio::test]
async fn a_run_with_a_checkpointer_needs_a_thread_id() {
    let app = ok_app(InMemorySaver::new());
    let err = app
        .invoke(json!({"log": []}), &RunnableConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PregelError::MissingThreadId), "{err:?}");
    assert!(err.to_string().contains("thread_id"));
    let err = app.get_state(&RunnableConfig::default()).await.unwrap_err();
    assert!(matches!(err, PregelError::MissingThreadId), "{err:?}");
}

#[tokio::test]
async fn the_state_api_needs_a_checkpointer() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("a", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["a"]}))
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    let app = g.compile().unwrap();
    let config = RunnableConfig::thread("t");
    // Without a checkpointer a thread id is simply ignored.
    app.invoke(json!({"log": []}), &config).await.unwrap();
    let err = app.get_state(&config).await.unwrap_err();
    assert!(matches!(err, PregelError::NoCheckpointer), "{err:?}");
    let err = app
        .get_state_history(&config, ListQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PregelError::NoCheckpointer), "{err:?}");
}

#[tokio::test]
async fn no_input_on_an_empty_thread_is_an_error() {
    let app = ok_app(InMemorySaver::new());
    let err = app
        .invoke(Input::Resume, &RunnableConfig::thread("empty"))
        .await
        .unwrap_err();
    assert_eq!(err.class(), "EmptyInputError");
}

/// The keys of `versions_seen` in each checkpoint of a thread, oldest first.
async fn seen_keys(saver: &InMemorySaver, thread: &str) -> Vec<Vec<String>> {
    let mut keys: Vec<Vec<String>> = saver
        .list(ListQuery::thread(thread))
        .map(|tuple| {
            tuple
                .unwrap()
                .checkpoint
                .versions_seen
                .keys()
                .cloned()
                .collect()
        })
        .collect()
        .await;
    keys.reverse();
    keys
}

/// As LangGraph 1.2.22 (run here): applying input writes, from a value or a
/// `Command`, records `versions_seen["__input__"] = {}`, which every later
/// checkpoint of the thread keeps; a thread made by `update_state` alone,
/// even when run after with no input, has none.
#[tokio::test]
async fn input_writes_are_recorded_in_versions_seen() {
    let saver = InMemorySaver::new();
    let app = ok_app(saver.clone());
    let input = "__input__".to_owned();

    let cfg = RunnableConfig::thread("value");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let seen = seen_keys(&saver, "value").await;
    assert_eq!(seen.len(), 4, "input, a, b, and the end: {seen:?}");
    assert!(seen.iter().all(|keys| keys.contains(&input)), "{seen:?}");

    let cfg = RunnableConfig::thread("command");
    let command = stategraph_pregel::Command::new()
        .update("log", stategraph_core::Value::from_json(json!(["x"])))
        .goto("b");
    app.invoke(command, &cfg).await.unwrap();
    let seen = seen_keys(&saver, "command").await;
    assert!(seen.iter().all(|keys| keys.contains(&input)), "{seen:?}");

    let cfg = RunnableConfig::thread("update");
    app.update_state(
        &cfg,
        Some(stategraph_core::Value::from_json(json!({"log": ["u"]}))),
        Some("a"),
    )
    .await
    .unwrap();
    app.invoke(Input::Resume, &cfg).await.unwrap();
    let seen = seen_keys(&saver, "update").await;
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|keys| !keys.contains(&input)), "{seen:?}");
}
