//! Human in the loop, as docs/guides/human-in-the-loop.md explains it: a
//! writer drafts a reply, a human reviews it (the run pauses with
//! `TaskContext::interrupt`), and the answer — approve, edit or reject —
//! resumes the run. The thread lives in a SQLite file, and the pause and
//! the resume happen in two processes: the program runs itself twice, once
//! to start the run (`pause FILE`), once to answer the review (`resume
//! FILE`).
//!
//! Run with `cargo run -p human_in_the_loop`; it checks its own output.

// An example prints what it does.
#![allow(clippy::print_stdout)]

use std::path::Path;

use anyhow::{Context, ensure};
use serde_json::{Value as Json, json};
use stategraph::prelude::*;

/// `START -> draft -> review -> (send | draft)`: `review` asks a human;
/// a rejection sends the draft back with the reviewer's note.
fn reply_graph(saver: SqliteSaver) -> anyhow::Result<CompiledStateGraph> {
    let mut graph = StateGraph::new(
        Schema::new()
            .last_value("question")
            .last_value("draft")
            .last_value("note")
            .append("sent"),
    );
    graph.add_node("draft", |s: Json| async move {
        let note = s["note"]
            .as_str()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let draft = format!("Re: {}{note}", s["question"].as_str().unwrap_or_default());
        Ok::<_, NodeError>(json!({"draft": draft}))
    })?;
    graph.add_node("review", |s: Json, ctx: TaskContext| async move {
        // Pauses the run the first time; returns the reviewer's answer when
        // the thread is resumed with `Command::resume`.
        let answer = ctx.interrupt(json!({"review": s["draft"]}))?.to_json()?;
        let update = match answer["action"].as_str() {
            Some("approve") => json!({"note": null}),
            Some("edit") => json!({"draft": answer["draft"], "note": null}),
            _ => json!({"note": answer["note"]}),
        };
        Ok::<_, NodeError>(update)
    })?;
    graph.add_node("send", |s: Json| async move {
        Ok::<_, NodeError>(json!({"sent": [s["draft"]]}))
    })?;
    graph.add_edge(START, "draft")?;
    graph.add_edge("draft", "review")?;
    graph.add_conditional_edges(
        "review",
        |s: &Json| {
            if s["note"].is_string() {
                "draft"
            } else {
                "send"
            }
        },
        Some(PathMap::from(["draft", "send"])),
    )?;
    graph.add_edge("send", END)?;
    Ok(graph.compile_with(CompileOptions::new().checkpointer(saver))?)
}

fn answer(value: Json) -> Command {
    Command::new().resume(Value::from_json(value))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [step, db] if step == "pause" => pause(Path::new(db)).await,
        [step, db] if step == "resume" => resume(Path::new(db)).await,
        [] => {
            // Two processes on one file: the second knows only the thread id.
            let dir = tempfile::tempdir()?;
            let db = dir.path().join("threads.db");
            for step in ["pause", "resume"] {
                let status = std::process::Command::new(std::env::current_exe()?)
                    .arg(step)
                    .arg(&db)
                    .status()?;
                ensure!(status.success(), "the {step} process failed: {status}");
            }
            Ok(())
        }
        _ => anyhow::bail!("usage: human_in_the_loop [pause FILE | resume FILE]"),
    }
}

fn thread() -> RunnableConfig {
    RunnableConfig::thread("ticket-42")
}

/// The first process: the run stops at the review, and the process ends.
async fn pause(db: &Path) -> anyhow::Result<()> {
    let app = reply_graph(SqliteSaver::open(db)?)?;
    let paused = app
        .invoke(json!({"question": "refund?"}), &thread())
        .await?
        .to_json()?;
    println!(
        "[process {}] paused: {}",
        std::process::id(),
        paused["__interrupt__"]
    );
    let asked = &paused["__interrupt__"][0]["value"]["review"];
    ensure!(
        *asked == json!("Re: refund?"),
        "unexpected question {asked}"
    );
    Ok(())
}

/// The second process: it finds the pending review in the file, rejects
/// the draft with a note, then edits the next one and sends it.
async fn resume(db: &Path) -> anyhow::Result<()> {
    let thread = thread();
    let app = reply_graph(SqliteSaver::open(db)?)?;
    let state = app.get_state(&thread).await?;
    ensure!(state.next == ["review"], "next is {:?}", state.next);
    println!(
        "[process {}] waiting for: {:?}",
        std::process::id(),
        state.next
    );

    // Reject with a note: the writer drafts again, and the run stops at the
    // next review.
    let again = app
        .invoke(
            answer(json!({"action": "reject", "note": "mention the 14 days"})),
            &thread,
        )
        .await?
        .to_json()?;
    let redraft = &again["__interrupt__"][0]["value"]["review"];
    println!("second draft: {redraft}");
    ensure!(*redraft == json!("Re: refund? (mention the 14 days)"));

    // Edit the draft and send it.
    let edited = json!({"action": "edit", "draft": "Yes, within 14 days."});
    let done = app.invoke(answer(edited), &thread).await?.to_json()?;
    println!("sent: {}", done["sent"]);
    ensure!(done["sent"] == json!(["Yes, within 14 days."]));
    ensure!(done.get("__interrupt__").is_none(), "the run ended");

    // Every step is in the history, newest first.
    let history = app.get_state_history(&thread, ListQuery::default()).await?;
    let first = history.last().context("an empty history")?;
    println!(
        "{} checkpoints, the first at step {:?}",
        history.len(),
        first.metadata.as_ref().and_then(|m| m.step)
    );
    Ok(())
}
