//! Processes killed with SIGKILL at random points of a checkpointed run
//! (sync and async durability) lose nothing they acknowledged, on SQLite
//! and on PostgreSQL: after each kill, the nodes whose writes are in the database
//! (in a checkpoint or as pending writes) never run again, and every thread
//! ends in the same state as a run that was never killed (DURABILITY.md;
//! LangGraph issue #8039 is a task run twice after a crash).
//!
//! The test runs itself again as the child process (`CRASH_CHILD` set):
//! the child runs or resumes one thread and exits; the parent kills it after
//! a random delay, reads what the database holds, and resumes, until the
//! thread completes. It stops after 50 effective kills per backend and
//! durability (a kill of a child that already finished does not count), or
//! as many as `STATEGRAPH_CRASH_KILLS` says (`cargo xtask soak` runs 1000).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointConfig, CheckpointSaver, SharedSaver};
use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema,
    StateGraph,
};
use stategraph_pregel::Input;

const CHILD: &str = "CRASH_CHILD";
/// Effective kills per backend unless `STATEGRAPH_CRASH_KILLS` says otherwise.
const KILLS: usize = 50;
const FINAL: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Appends a line to the run log shared by every process of the test.
fn record(log: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `START -> a -> {b, c}`, `[b, c] -> d -> e`; each node takes a few
/// milliseconds and appends its name to `log` (state) and to the run log.
fn app(saver: SharedSaver, runs: PathBuf) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for (name, millis) in [("a", 4), ("b", 9), ("c", 3), ("d", 6), ("e", 5)] {
        let runs = runs.clone();
        g.add_node(name, move |_s: Json| {
            let runs = runs.clone();
            async move {
                record(&runs, name);
                tokio::time::sleep(Duration::from_millis(millis)).await;
                Ok::<_, NodeError>(json!({"log": [name]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("a", "c").unwrap();
    g.add_waiting_edge(["b", "c"], "d").unwrap();
    g.add_edge("d", "e").unwrap();
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[derive(Clone, Debug)]
enum Backend {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Backend {
    fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => format!("postgres:{url}"),
        }
    }

    fn parse(text: &str) -> Self {
        match text.split_once(':') {
            Some(("sqlite", path)) => Self::Sqlite(PathBuf::from(path)),
            Some(("postgres", url)) => Self::Postgres(url.to_owned()),
            _ => panic!("bad backend {text}"),
        }
    }

    async fn saver(&self) -> SharedSaver {
        match self {
            Self::Sqlite(path) => std::sync::Arc::new(SqliteSaver::open(path).unwrap()),
            Self::Postgres(url) => {
                let saver = PostgresSaver::connect(url).await.unwrap();
                saver.setup().await.unwrap();
                std::sync::Arc::new(saver)
            }
        }
    }
}

/// The child's part: starts (`start`) or resumes one thread, then exits.
async fn child() {
    let var = |name: &str| std::env::var(name).unwrap();
    let backend = Backend::parse(&var("CRASH_BACKEND"));
    let runs = PathBuf::from(var("CRASH_RUNS"));
    let app = app(backend.saver().await, runs);
    let config = RunnableConfig::thread(var("CRASH_THREAD"));
    let durability = match var("CRASH_DURABILITY").as_str() {
        "sync" => Durability::Sync,
        _ => Durability::Async,
    };
    let options = RunOptions::new().durability(durability);
    let input = if var("CRASH_INPUT") == "start" {
        Input::from(json!({"log": []}))
    } else {
        Input::Resume
    };
    app.invoke_with(input, &config, options).await.unwrap();
}

/// The nodes whose writes the database holds for a thread: applied in its
/// latest checkpoint, or saved as pending writes against it.
async fn acknowledged(saver: &SharedSaver, thread: &str) -> BTreeSet<String> {
    let Some(tuple) = saver
        .get_tuple(&CheckpointConfig::thread(thread))
        .await
        .unwrap()
    else {
        return BTreeSet::new();
    };
    let mut done = BTreeSet::new();
    if let Some(log) = tuple.checkpoint.channel_values.get("log") {
        for name in log.to_json().unwrap().as_array().unwrap() {
            done.insert(name.as_str().unwrap().to_owned());
        }
    }
    for write in tuple.pending_writes.iter().filter(|w| w.channel == "log") {
        for name in write.value.to_json().unwrap().as_array().unwrap() {
            done.insert(name.as_str().unwrap().to_owned());
        }
    }
    done
}

/// Whether the thread has a checkpoint to resume from.
async fn has_checkpoint(saver: &SharedSaver, thread: &str) -> bool {
    saver
        .get_tuple(&CheckpointConfig::thread(thread))
        .await
        .unwrap()
        .is_some()
}

/// A tiny deterministic generator for the kill delays (xorshift).
struct Delays(u64);

impl Delays {
    fn next_millis(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % max
    }
}

// Reports how many kills each backend took (the soak command shows it).
#[allow(clippy::print_stdout)]
async fn kill_at_random_points(backend: Backend, dir: &Path, durability: &str) {
    let runs = dir.join("runs");
    let saver = backend.saver().await;
    let app = app(saver.clone(), runs.clone());
    let mut delays = Delays(0x9E37_79B9_7F4A_7C15);
    let wanted = std::env::var("STATEGRAPH_CRASH_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(KILLS);
    let mut kills = 0;
    let mut thread_no = 0;
    while kills < wanted {
        thread_no += 1;
        assert!(
            thread_no < 8 * wanted,
            "only {kills} effective kills in {thread_no} threads"
        );
        let thread = format!("crash-{}-{durability}-{thread_no}", std::process::id());
        let mut input = "start";
        loop {
            let ran_before = lines(&runs).len();
            let before = acknowledged(&saver, &thread).await;
            // A child killed before its input checkpoint was saved left
            // nothing to resume: start the thread again.
            if !has_checkpoint(&saver, &thread).await {
                input = "start";
            }
            let mut child = Process::new(std::env::current_exe().unwrap())
                .args([&this_test_name(), "--exact", "--nocapture"])
                .env(CHILD, "1")
                .env("CRASH_BACKEND", backend.describe())
                .env("CRASH_RUNS", &runs)
                .env("CRASH_THREAD", &thread)
                .env("CRASH_INPUT", input)
                .env("CRASH_DURABILITY", durability)
                .spawn()
                .unwrap();
            // Kill after a random delay (the child needs some to start).
            let deadline = Instant::now() + Duration::from_millis(20 + delays.next_millis(60));
            let mut finished = None;
            while Instant::now() < deadline {
                if let Some(status) = child.try_wait().unwrap() {
                    finished = Some(status);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let done = match finished {
                Some(status) => {
                    assert!(status.success(), "the child failed: {status}");
                    true
                }
                None => {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    kills += 1;
                    false
                }
            };
            // Nothing acknowledged before this child started ran again.
            let ran: Vec<String> = lines(&runs)[ran_before..].to_vec();
            for node in &ran {
                assert!(
                    !before.contains(node),
                    "{node} ran again although its writes were saved ({thread}: {before:?}, then {ran:?})"
                );
            }
            if done {
                break;
            }
            input = "resume";
        }
        let last = app
            .get_state(&RunnableConfig::thread(&thread))
            .await
            .unwrap();
        assert_eq!(
            last.values.to_json().unwrap(),
            json!({"log": FINAL}),
            "{thread}"
        );
    }
    println!(
        "{} ({durability} durability): {kills} kills over {thread_no} threads, nothing lost",
        backend.describe()
    );
}

/// The libtest name of the test below (its module path without the crate),
/// which the child process is asked to run.
fn this_test_name() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::every_kill_loses_nothing_acknowledged")
}

#[tokio::test]
async fn every_kill_loses_nothing_acknowledged() {
    if std::env::var_os(CHILD).is_some() {
        child().await;
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for durability in ["sync", "async"] {
        let sqlite = Backend::Sqlite(dir.path().join("state.db"));
        kill_at_random_points(sqlite, dir.path(), durability).await;
    }
    match std::env::var("STATEGRAPH_TEST_POSTGRES_URL") {
        Ok(url) => {
            for durability in ["sync", "async"] {
                kill_at_random_points(Backend::Postgres(url.clone()), dir.path(), durability).await;
            }
        }
        // `cargo xtask ci` starts a cluster and sets the variable; CI must
        // not pass without it.
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("STATEGRAPH_TEST_POSTGRES_URL is not set under CI")
        }
        Err(_) => eprintln!("STATEGRAPH_TEST_POSTGRES_URL is not set: PostgreSQL part not run"),
    }
}
