//! `amplification [sqlite|memory|postgres URL] [MB]`: what one large value in state
//! costs (issue 21, observation 12).
//!
//! Runs `START -> a -> b -> c -> d` on a fresh thread whose input sets
//! `text` to a string of `MB` megabytes (default 100); each node only counts
//! in `n`, so the run saves six checkpoints that all hold the same `text`.
//! Then reads the five newest history snapshots. Prints, as one JSON line:
//! the bytes the backend stores (SQLite: the database file plus its WAL;
//! PostgreSQL: the tables' total relation size), the peak resident memory
//! of the write and of the history read, and how long each took.

// A command-line tool: it reports to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{ListQuery, SharedSaver};
use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompileOptions, NodeError, START, Schema, StateGraph};

/// Peak resident memory of this process since the last [`reset_peak`], in MB.
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|l| l.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kb / 1024.0
}

/// Restarts the peak at the current resident size (Linux `clear_refs` 5).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// `bytes` of pseudo-random letters: text PostgreSQL cannot compress away.
fn random_text(bytes: usize) -> String {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let backend = args.first().map_or("sqlite", String::as_str).to_owned();
    let (url, mb_arg) = match backend.as_str() {
        "postgres" => (args.get(1).cloned(), args.get(2)),
        _ => (None, args.get(1)),
    };
    let mb: usize = mb_arg.map_or(Ok(100), |s| s.parse())?;
    let dir = std::env::temp_dir().join(format!("amplification-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("large.db");
    let saver: SharedSaver = match (backend.as_str(), url) {
        ("sqlite", _) => Arc::new(SqliteSaver::open(&db)?),
        ("memory", _) => Arc::new(stategraph_checkpoint::InMemorySaver::new()),
        ("postgres", Some(url)) => {
            let saver = PostgresSaver::connect(&url).await?;
            saver.setup().await?;
            Arc::new(saver)
        }
        _ => return Err("usage: amplification [sqlite|memory|postgres URL] [MB]".into()),
    };

    let mut graph = StateGraph::new(Schema::new().last_value("text").last_value("n"));
    let mut previous = START.to_owned();
    for name in ["a", "b", "c", "d"] {
        graph.add_node(name, |state: Json| async move {
            Ok::<_, NodeError>(json!({"n": state["n"].as_u64().unwrap_or(0) + 1}))
        })?;
        graph.add_edge(&previous, name)?;
        previous = name.to_owned();
    }
    let app = graph.compile_with(CompileOptions::new().shared_checkpointer(saver))?;
    let config = RunnableConfig::thread(format!("large-{}", std::process::id()));

    // Built by moving the text in: `json!` would copy it.
    let mut input = serde_json::Map::new();
    input.insert("text".into(), Json::String(random_text(mb << 20)));
    input.insert("n".into(), json!(0));
    reset_peak();
    let base_mb = peak_mb();
    let started = Instant::now();
    app.invoke(Json::Object(input), &config).await?;
    let write_ms = started.elapsed().as_millis();
    let write_peak = peak_mb() - base_mb;

    reset_peak();
    let base_mb = peak_mb();
    let started = Instant::now();
    let history = app
        .get_state_history(&config, ListQuery::all().limit(5))
        .await?;
    let read_ms = started.elapsed().as_millis();
    let read_peak = peak_mb() - base_mb;
    let snapshots = history.len();
    drop(history);

    // PostgreSQL's sizes are read with `psql` (`pg_total_relation_size`).
    let size_mb = |path: &std::path::Path| file_len(path) as f64 / 1_048_576.0;
    let (database, wal) = match backend.as_str() {
        "sqlite" => (Some(size_mb(&db)), Some(size_mb(&dir.join("large.db-wal")))),
        _ => (None, None),
    };
    println!(
        "{}",
        json!({
            "backend": backend, "value_mb": mb,
            "database_mb": database, "wal_mb": wal,
            "write_peak_mb": write_peak, "write_ms": write_ms,
            "history_snapshots": snapshots, "history_peak_mb": read_peak, "history_ms": read_ms,
        })
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
