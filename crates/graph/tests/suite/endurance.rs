//! Issue 21's missing reliability scenarios (shared/reliability/USER-ISSUES.md):
//! T3, a 64-way `Send` fan-out with checkpoints, every write kept every
//! time; T8, a long-running process whose memory stays flat over 10,000
//! runs; T15, a run cancelled mid-step leaves a thread that resumes to the
//! state an uncancelled run reaches, without running again what it saved.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointSaver, InMemorySaver, SharedSaver};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema, Send,
    StateGraph, StreamMode,
};
use stategraph_pregel::Input;

const FANOUT: usize = 64;

/// `START --Send x 64--> work -> sum`: each `work` task appends its index.
fn fanout(saver: SharedSaver) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("done").last_value("count"));
    g.add_node("work", |arg: Json| async move {
        // Tasks finish out of order.
        tokio::time::sleep(Duration::from_micros(stategraph_core::random_u64() % 300)).await;
        Ok::<_, NodeError>(json!({"done": [arg["i"].clone()]}))
    })
    .unwrap();
    g.add_node("sum", |state: Json| async move {
        Ok::<_, NodeError>(json!({"count": state["done"].as_array().map_or(0, Vec::len)}))
    })
    .unwrap();
    g.add_conditional_edges(
        START,
        |_: &Json| {
            (0..FANOUT)
                .map(|i| Send::new("work", json!({"i": i})))
                .collect::<Vec<_>>()
        },
        None,
    )
    .unwrap();
    g.add_edge("work", "sum").unwrap();
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// T3: 64-way fan-out, each run on its own thread, with checkpoints on
/// SQLite (async durability: the 64 tasks' writes are saved as they
/// finish, concurrently with the step): all 64 writes, in `Send` order,
/// every time, in the result and in the saved state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t3_a_64_way_fan_out_keeps_every_write_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let saver: SharedSaver = Arc::new(SqliteSaver::open(dir.path().join("t3.db")).unwrap());
    let app = fanout(saver);
    let expected: Vec<usize> = (0..FANOUT).collect();
    for run in 0..200 {
        let config = RunnableConfig::thread(format!("t3-{run}"));
        let out = app.invoke(json!({"done": []}), &config).await.unwrap();
        let out = out.to_json().unwrap();
        assert_eq!(out["count"], json!(FANOUT), "run {run}");
        assert_eq!(out["done"], json!(expected), "run {run}");
        let saved = app.get_state(&config).await.unwrap();
        assert_eq!(saved.values.to_json().unwrap(), out, "run {run}");
    }
}

/// The resident set size of this process, in bytes (Linux).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// T8: 10,000 checkpointed runs in one process (each thread deleted after
/// its run, so the saver holds nothing): the resident memory after them
/// is within 50 MB of what it was after a 1,000-run warm-up. Measured in a
/// process of its own: the suite's other tests share this one's memory.
#[test]
fn t8_memory_stays_flat_over_10000_runs() {
    const CHILD: &str = "STATEGRAPH_T8_CHILD";
    if std::env::var_os(CHILD).is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(t8_runs());
        return;
    }
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            &format!("{module}::t8_memory_stays_flat_over_10000_runs"),
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the measuring process failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn t8_runs() {
    let saver: SharedSaver = Arc::new(InMemorySaver::new());
    let mut g = StateGraph::new(Schema::new().append("log").last_value("n"));
    g.add_node("a", |s: Json| async move {
        Ok::<_, NodeError>(json!({"log": ["a"], "n": s["n"].as_u64().unwrap_or(0) + 1}))
    })
    .unwrap();
    g.add_node("b", |_: Json| async move {
        Ok::<_, NodeError>(json!({"log": ["b"]}))
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    let app = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let run = |count: usize| {
        let (app, saver) = (&app, &saver);
        async move {
            for i in 0..count {
                let thread = format!("t8-{i}");
                let config = RunnableConfig::thread(&thread);
                app.invoke(json!({"n": i, "log": []}), &config)
                    .await
                    .unwrap();
                saver.delete_thread(&thread).await.unwrap();
            }
        }
    };
    run(1_000).await;
    let warm = rss_bytes();
    run(9_000).await;
    let after = rss_bytes();
    let growth = after.saturating_sub(warm);
    assert!(
        growth < 50 * 1024 * 1024,
        "resident memory grew {growth} bytes over 9,000 runs ({warm} -> {after})"
    );
}

/// `START -> a -> b -> c -> d`: each node records that it ran, then
/// appends its name after a short pause (the instant a cancellation may
/// hit).
fn chain(saver: SharedSaver, ran: Arc<Mutex<Vec<String>>>) -> CompiledStateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    let names = ["a", "b", "c", "d"];
    for name in names {
        let ran = ran.clone();
        g.add_node(name, move |_: Json| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push(name.to_owned());
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok::<_, NodeError>(json!({"log": [name]}))
            }
        })
        .unwrap();
    }
    g.add_edge(START, "a").unwrap();
    for pair in names.windows(2) {
        g.add_edge(pair[0], pair[1]).unwrap();
    }
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// The nodes whose writes a thread's latest checkpoint holds, applied or
/// pending.
async fn saved_nodes(saver: &SharedSaver, thread: &str) -> BTreeSet<String> {
    let config = stategraph_checkpoint::CheckpointConfig::thread(thread);
    let Some(tuple) = saver.get_tuple(&config).await.unwrap() else {
        return BTreeSet::new();
    };
    let mut saved = BTreeSet::new();
    let logs = tuple
        .checkpoint
        .channel_values
        .get("log")
        .map(|log| log.to_json().unwrap())
        .into_iter()
        .chain(
            tuple
                .pending_writes
                .iter()
                .filter(|write| write.channel == "log")
                .map(|write| write.value.to_json().unwrap()),
        );
    for log in logs {
        for name in log.as_array().unwrap() {
            saved.insert(name.as_str().unwrap().to_owned());
        }
    }
    saved
}

/// T15: a streamed run cancelled (its stream dropped) at 100 instants
/// across its steps, on SQLite with sync durability: resuming finishes
/// the thread with the state of an uncancelled run, and no node whose
/// writes were saved before the cancellation runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t15_a_run_cancelled_mid_step_resumes_to_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let saver: SharedSaver = Arc::new(SqliteSaver::open(dir.path().join("t15.db")).unwrap());
    cancel_and_resume(saver).await;
}

/// T15 on the in-memory saver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t15_in_memory_a_run_cancelled_mid_step_resumes_to_the_same_state() {
    cancel_and_resume(Arc::new(InMemorySaver::new())).await;
}

/// Cancels a streamed run at 100 instants, then resumes each thread.
async fn cancel_and_resume(saver: SharedSaver) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let app = chain(saver.clone(), ran.clone());
    let sync = || {
        RunOptions::new()
            .durability(Durability::Sync)
            .retry_when_busy(5)
    };
    for instant in 0..100_u64 {
        let thread = format!("t15-{instant}");
        let config = RunnableConfig::thread(&thread);
        let stream = app.stream_with(json!({"log": []}), &config, StreamMode::Updates, sync());
        // Cancel after `instant` tenths of a millisecond (the whole run
        // takes about 8 ms).
        let cancelled = tokio::time::timeout(
            Duration::from_micros(100 * instant),
            stream.for_each(|chunk| async move {
                chunk.unwrap();
            }),
        )
        .await
        .is_err();
        // A cancelled put may still land: SQLite runs it on tokio's
        // blocking pool, which a dropped future does not stop. Give it a
        // moment; a put landing later still cannot fork the thread (the
        // resumed run's compare-and-set fails, and it retries on the new
        // head).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let saved = saved_nodes(&saver, &thread).await;
        ran.lock().unwrap().clear();
        // A run cancelled before its input checkpoint was saved left
        // nothing: it starts again.
        let input = if saver
            .get_tuple(&stategraph_checkpoint::CheckpointConfig::thread(&thread))
            .await
            .unwrap()
            .is_some()
        {
            Input::Resume
        } else {
            Input::from(json!({"log": []}))
        };
        let out = app.invoke_with(input, &config, sync()).await.unwrap();
        assert_eq!(
            out.to_json().unwrap(),
            json!({"log": ["a", "b", "c", "d"]}),
            "instant {instant} (cancelled: {cancelled})"
        );
        let again = ran.lock().unwrap().clone();
        for node in &again {
            assert!(
                !saved.contains(node),
                "instant {instant}: {node} ran again although it was saved ({saved:?})"
            );
        }
    }
}
