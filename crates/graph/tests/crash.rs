//! A process killed with SIGKILL in the middle of a step loses nothing it
//! acknowledged: the writes of a task that finished before the kill are on
//! disk (SQLite, sync durability), and the resumed run does not run that
//! task again — only the one that was in flight (DURABILITY.md; LangGraph
//! issue #8039 is the same failure with a task run twice).
//!
//! The test runs itself again as a child process (`CRASH_CHILD` set): the
//! child starts the graph on a SQLite file and blocks inside the slow task;
//! the parent waits until the fast sibling's writes are saved, kills the
//! child with SIGKILL, then resumes the thread from the file.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::CheckpointSaver;
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema,
    StateGraph,
};
use stategraph_pregel::Input;

const CHILD: &str = "CRASH_CHILD";
const DIR: &str = "CRASH_DIR";

/// Appends a line to `<dir>/runs`: which node ran, in which process.
fn record(dir: &Path, line: &str) {
    let mut runs = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("runs"))
        .unwrap();
    writeln!(runs, "{line}").unwrap();
}

fn runs(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `START -> a -> {fast, slow}`, `[fast, slow] -> done`. In the child, `slow`
/// never returns.
fn app(saver: impl CheckpointSaver, dir: PathBuf, who: &'static str) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "fast", "slow", "done"] {
        let dir = dir.clone();
        g.add_node(name, move |_s: Json| {
            let dir = dir.clone();
            async move {
                record(&dir, &format!("{who}:{name}"));
                if name == "slow" && who == "child" {
                    std::future::pending::<()>().await;
                }
                Ok::<_, NodeError>(json!({"log": [name]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "fast").unwrap();
    g.add_edge("a", "slow").unwrap();
    g.add_waiting_edge(["fast", "slow"], "done").unwrap();
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

fn sync() -> RunOptions {
    RunOptions::new().durability(Durability::Sync)
}

/// The child's part: runs the graph until killed.
async fn child(dir: PathBuf) -> ! {
    let saver = SqliteSaver::open(dir.join("state.db")).unwrap();
    let app = app(saver, dir, "child");
    let _ = app
        .invoke_with(json!({"log": []}), &RunnableConfig::thread("t"), sync())
        .await;
    unreachable!("the slow task never returns");
}

/// Whether the fast task's writes are in the database (read with a
/// separate connection, as any other process would).
async fn fast_saved(db: &Path) -> bool {
    let Ok(saver) = SqliteSaver::open(db) else {
        return false;
    };
    let config = stategraph_checkpoint::CheckpointConfig::thread("t");
    match saver.get_tuple(&config).await {
        Ok(Some(tuple)) => tuple
            .pending_writes
            .iter()
            .any(|w| w.channel == "log" && w.value.to_json().ok() == Some(json!(["fast"]))),
        _ => false,
    }
}

#[tokio::test]
async fn killed_mid_step_resumes_without_rerunning_finished_tasks() {
    if let Some(dir) = std::env::var_os(DIR).filter(|_| std::env::var_os(CHILD).is_some()) {
        child(PathBuf::from(dir)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Process::new(std::env::current_exe().unwrap())
        .args([
            "killed_mid_step_resumes_without_rerunning_finished_tasks",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env(DIR, dir.path())
        .spawn()
        .unwrap();

    // Wait (bounded) until the child is blocked in `slow` and `fast`'s
    // writes are on disk.
    let db = dir.path().join("state.db");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let started = runs(dir.path()).iter().any(|r| r == "child:slow");
        if started && fast_saved(&db).await {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child exited early: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the child never reached the slow task"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let app = app(
        SqliteSaver::open(&db).unwrap(),
        dir.path().to_owned(),
        "parent",
    );
    let out = app
        .invoke_with(Input::Resume, &RunnableConfig::thread("t"), sync())
        .await
        .unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        json!({"log": ["a", "fast", "slow", "done"]})
    );
    let ran = runs(dir.path());
    // `a` and `fast` ran once, before the kill; after it only `slow` (the
    // task in flight) and `done`.
    assert_eq!(
        ran.iter().filter(|r| r.ends_with(":fast")).count(),
        1,
        "{ran:?}"
    );
    assert_eq!(
        ran.iter().filter(|r| r.ends_with(":a")).count(),
        1,
        "{ran:?}"
    );
    let after: Vec<&String> = ran.iter().filter(|r| r.starts_with("parent:")).collect();
    assert_eq!(after, ["parent:slow", "parent:done"]);
}
