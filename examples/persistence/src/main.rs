//! Persistence: one checkpointed graph, first on SQLite, then on PostgreSQL.
//!
//! A notebook graph appends one entry per run to a thread's state. Each
//! backend gets two sessions, each with a freshly opened saver (as two
//! processes would), on the same thread: the second session continues from
//! the state the first one stored. Then the thread's checkpoint history is
//! printed. The graph code is the same for both backends; only the line that
//! opens the saver differs.
//!
//! SQLite always runs (a file in the temp dir). PostgreSQL runs when
//! `STATEGRAPH_POSTGRES_URL` is set, e.g.
//! `STATEGRAPH_POSTGRES_URL=postgres://app:secret@localhost/app cargo run -p persistence`,
//! or against a throwaway cluster:
//! `cargo xtask with-postgres -- cargo run -p persistence`.

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use stategraph::prelude::*;

/// Where the PostgreSQL URL is read from.
const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";
/// What the `cargo xtask with-postgres` cluster exports.
const XTASK_URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";

/// A thread's notebook: each field is a channel, kept between runs by the
/// checkpointer.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Notebook {
    /// This run's note: the input.
    note: String,
    /// Every entry so far, across runs.
    #[state(reducer = append)]
    entries: Vec<String>,
    /// How many runs wrote to the notebook.
    #[state(reducer = add)]
    runs: u32,
}

async fn write(book: NotebookView) -> Result<NotebookUpdate, NodeError> {
    let entry = format!("run {}: {}", *book.runs + 1, *book.note);
    Ok(NotebookUpdate::default().entries(vec![entry]).runs(1_u32))
}

/// The graph, compiled with `saver`: the same for every backend.
fn notebook(saver: impl CheckpointSaver) -> anyhow::Result<CompiledStateGraph> {
    let mut graph = StateGraph::typed::<Notebook>();
    graph.add_node("write", write)?;
    graph.add_edge(START, "write")?;
    graph.add_edge("write", END)?;
    Ok(graph.compile_with(CompileOptions::new().checkpointer(saver))?)
}

/// One session: a run on `thread` with a new note, then what the thread
/// holds, checked to hold every earlier session's entry too.
async fn session(
    app: &CompiledStateGraph,
    thread: &str,
    note: &str,
    earlier: usize,
) -> anyhow::Result<()> {
    let config = RunnableConfig::thread(thread);
    let input = NotebookUpdate::default().note(note);
    let book = app.invoke_typed(input, &config).await?.done()?;
    println!("  after {} run(s): {:?}", book.runs, book.entries);
    anyhow::ensure!(
        book.entries.len() == earlier + 1,
        "the thread lost earlier sessions: {:?}",
        book.entries
    );
    Ok(())
}

/// The thread's checkpoints, oldest first: step, source and next tasks.
async fn history(app: &CompiledStateGraph, thread: &str) -> anyhow::Result<()> {
    let config = RunnableConfig::thread(thread);
    let mut snapshots = app.get_state_history(&config, ListQuery::default()).await?;
    snapshots.reverse();
    println!("  {} checkpoints:", snapshots.len());
    for snapshot in snapshots {
        let metadata = snapshot
            .metadata
            .context("a stored checkpoint has metadata")?
            .to_json();
        let step = metadata["step"].to_string();
        let source = metadata["source"].as_str().unwrap_or_default();
        println!("    step {step:>2} {source:<7} next {:?}", snapshot.next);
    }
    Ok(())
}

/// A thread name no earlier run of this example used (PostgreSQL keeps
/// them).
fn fresh_thread() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("notebook-{}-{nanos}", std::process::id())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let notes = ["bought milk", "fixed the bike"];

    let dir: PathBuf = std::env::temp_dir().join(fresh_thread());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let db = dir.join("checkpoints.db");
    println!("SQLite ({})", db.display());
    let thread = fresh_thread();
    for (earlier, note) in notes.into_iter().enumerate() {
        let app = notebook(SqliteSaver::open(&db)?)?;
        session(&app, &thread, note, earlier).await?;
    }
    history(&notebook(SqliteSaver::open(&db)?)?, &thread).await?;
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;

    let url = std::env::var(URL_VAR)
        .or_else(|_| std::env::var(XTASK_URL_VAR))
        .ok()
        .filter(|url| !url.is_empty());
    let Some(url) = url else {
        println!("\nPostgreSQL: set {URL_VAR} to run the same graph on a server");
        return Ok(());
    };
    println!("\nPostgreSQL");
    let thread = fresh_thread();
    for (earlier, note) in notes.into_iter().enumerate() {
        let saver = PostgresSaver::connect(&url).await?;
        // Creates or upgrades the tables; safe on every start.
        saver.setup().await?;
        let app = notebook(saver)?;
        session(&app, &thread, note, earlier).await?;
    }
    history(&notebook(PostgresSaver::connect(&url).await?)?, &thread).await?;
    Ok(())
}
