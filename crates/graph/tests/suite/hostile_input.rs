//! Issue 21, observations 2 to 4: what a run is given or writes that no
//! backend could read back is refused with a typed error when it is
//! written, never when it is read; no input overflows the stack; a refused
//! input leaves the thread as it was.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{InMemorySaver, SharedSaver};
use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::json::{MAX_DEPTH, drop_deep};
use stategraph_core::{RunnableConfig, Value, ValueError};
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema, State,
    StateGraph,
};
use stategraph_pregel::{Command, PregelError};

/// `[[[...1...]]]`, `depth` levels, built without recursion.
fn nested(depth: usize) -> Json {
    (0..depth).fold(json!(1), |inner, _| Json::Array(vec![inner]))
}

/// The three savers (PostgreSQL when `cargo xtask ci` started one).
async fn savers(dir: &std::path::Path) -> Vec<SharedSaver> {
    let mut savers: Vec<SharedSaver> = vec![
        Arc::new(InMemorySaver::new()),
        Arc::new(SqliteSaver::open(dir.join("hostile.db")).unwrap()),
    ];
    if let Some(url) = crate::support::postgres_url() {
        let saver = PostgresSaver::connect(&url).await.unwrap();
        saver.setup().await.unwrap();
        savers.push(Arc::new(saver));
    }
    savers
}

/// `START -> echo`: `echo` appends `{"w": write}` to `log`, where the input
/// set `write`: two levels deeper than the input's value.
fn echo(saver: Option<SharedSaver>) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().last_value("write").append("log"));
    g.add_node("echo", |state: Json| async move {
        Ok::<_, NodeError>(json!({"log": [{"w": state["write"].clone()}]}))
    })
    .unwrap();
    g.add_edge(START, "echo").unwrap();
    let options = match saver {
        Some(saver) => CompileOptions::new().shared_checkpointer(saver),
        None => CompileOptions::new(),
    };
    g.compile_with(options).unwrap()
}

fn too_deep(err: &PregelError) -> bool {
    matches!(err, PregelError::Value(ValueError::TooDeep { limit }) if *limit == MAX_DEPTH)
}

/// Observation 3: input nested 100,000 levels deep, as a value, a command's
/// update and a resume answer, on a tokio worker thread: a typed error on
/// every backend, no stack overflow, and the thread untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_100000_levels_deep_is_a_typed_error_on_a_worker_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut backends: Vec<Option<SharedSaver>> = vec![None];
    backends.extend(savers(dir.path()).await.into_iter().map(Some));
    for saver in backends {
        let app = Arc::new(echo(saver.clone()));
        let errors = tokio::spawn(async move {
            let config = RunnableConfig::thread("deep-input");
            let value = app.invoke(nested(100_000), &config).await.unwrap_err();
            let update = Command::new().update("write", Value::from_json(nested(100_000)));
            let update = app.invoke(update, &config).await.unwrap_err();
            let resume = Command::new().resume(Value::from_json(nested(100_000)));
            let resume = app.invoke(resume, &config).await.unwrap_err();
            [value, update, resume]
        })
        .await
        .unwrap();
        for err in &errors {
            assert!(too_deep(err), "{saver:?}: {err}");
        }
        if let Some(saver) = saver {
            let app = echo(Some(saver.clone()));
            let state = app
                .get_state(&RunnableConfig::thread("deep-input"))
                .await
                .unwrap();
            assert!(state.metadata.is_none(), "{saver:?}: nothing was saved");
        }
    }
}

/// Observation 2: a node's write nested deeper than a read accepts fails
/// the run with a typed error naming the channel on the savers that
/// serialize; the thread stays readable and usable. The in-memory saver
/// keeps live values, so it reads back whatever it keeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_too_deep_to_read_back_is_refused_and_the_thread_lives_on() {
    let dir = tempfile::tempdir().unwrap();
    for saver in savers(dir.path()).await.into_iter().skip(1) {
        let app = echo(Some(saver.clone()));
        let config =
            RunnableConfig::thread(format!("deep-write-{}", stategraph_core::random_u64()));
        app.invoke(json!({"write": "fine"}), &config).await.unwrap();
        // The input (`{"write": v}`, as deep as allowed) is within the
        // limit; the node's write (`log` = [.., {"w": v}]) is one deeper.
        let err = app
            .invoke(json!({"write": nested(MAX_DEPTH - 1)}), &config)
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("nests deeper than 127"),
            "{saver:?}: {message}"
        );
        let state = app.get_state(&config).await.unwrap();
        let values = state.values.to_json().unwrap();
        assert_eq!(values["log"], json!([{"w": "fine"}]), "{saver:?}");
        app.invoke(json!({"write": "again"}), &config)
            .await
            .unwrap();
        let state = app.get_state(&config).await.unwrap();
        let log = state.values.to_json().unwrap()["log"].clone();
        assert_eq!(log, json!([{"w": "fine"}, {"w": "again"}]));
    }
}

/// A typed state with a float and a count.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Reading {
    /// A measurement.
    pub level: f64,
    /// How many readings.
    pub count: u32,
}

fn reading(saver: SharedSaver) -> CompiledStateGraph {
    let mut g = StateGraph::new(Reading::schema());
    // From the fifth reading on, the sensor reads NaN.
    g.add_node("read", |state: Reading| async move {
        let update = ReadingUpdate::default().count(state.count + 1);
        Ok::<_, NodeError>(if state.count >= 5 {
            update.level(f64::NAN)
        } else {
            update
        })
    })
    .unwrap();
    g.add_edge(START, "read").unwrap();
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// Observation 2: a NaN in a typed field is refused when written on the
/// savers that serialize (JSON has no NaN: it was stored as `null`, and
/// every later read of the thread failed); the thread stays readable.
#[tokio::test]
async fn a_nan_in_a_typed_field_is_refused_and_the_thread_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    for saver in savers(dir.path()).await.into_iter().skip(1) {
        let app = reading(saver.clone());
        let config = RunnableConfig::thread(format!("nan-{}", stategraph_core::random_u64()));
        app.invoke(json!({"level": 1.5, "count": 0}), &config)
            .await
            .unwrap();
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let err = app
                .invoke_with(
                    json!({"count": 5}),
                    &config,
                    RunOptions::new().durability(durability),
                )
                .await
                .unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains("NaN"),
                "{saver:?} {durability:?}: {message}"
            );
            assert!(message.contains("level"), "names the channel: {message}");
            let state = app.get_state(&config).await.unwrap();
            let values = state.values.to_json().unwrap();
            assert_eq!(values["level"], json!(1.5), "{saver:?}");
        }
    }
}

/// Observation 4: an input a typed channel cannot take fails the run and
/// saves nothing: the thread is exactly as it was, on every backend.
#[tokio::test]
async fn a_rejected_input_leaves_the_thread_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    for saver in savers(dir.path()).await {
        let app = reading(saver.clone());
        let config = RunnableConfig::thread(format!("rejected-{}", stategraph_core::random_u64()));
        // On a fresh thread: nothing saved.
        let err = app
            .invoke(json!({"count": "many"}), &config)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("count"), "names the key: {err}");
        let state = app.get_state(&config).await.unwrap();
        assert!(state.metadata.is_none(), "{saver:?}: {:?}", state.values);
        // On a thread with state: the state and its history unchanged.
        app.invoke(json!({"count": 1, "level": 0.5}), &config)
            .await
            .unwrap();
        let before = app.get_state(&config).await.unwrap();
        for bad in [json!({"count": -3}), json!({"level": "high", "count": 1})] {
            app.invoke(bad, &config).await.unwrap_err();
            let after = app.get_state(&config).await.unwrap();
            assert_eq!(after.config, before.config, "{saver:?}");
            assert_eq!(after.values.to_json().unwrap()["count"], json!(2));
        }
        app.invoke(json!({"count": 3}), &config).await.unwrap();
    }
}

#[test]
fn the_test_values_are_as_deep_as_they_say() {
    let value = nested(MAX_DEPTH);
    assert!(!stategraph_core::json::deeper_than(&value, MAX_DEPTH));
    drop_deep(value);
}
