//! Time travel, as docs/guides/time-travel.md explains it: run a thread,
//! look at its history, run it again from an older checkpoint (a `fork`
//! checkpoint starts the new branch), and branch with an edited state
//! (`update_state` on the older checkpoint). The thread lives in a SQLite
//! file.
//!
//! Run with `cargo run -p time_travel`; it checks its own output.

// An example prints what it does.
#![allow(clippy::print_stdout)]

use anyhow::{Context, ensure};
use serde_json::{Value as Json, json};
use stategraph::pregel::Input;
use stategraph::prelude::*;

/// `START -> plan -> act -> report`: each step appends to `log`.
fn agent(saver: SqliteSaver) -> anyhow::Result<CompiledStateGraph> {
    let mut graph = StateGraph::new(Schema::new().last_value("goal").append("log"));
    graph.add_node("plan", |s: Json| async move {
        Ok::<_, NodeError>(json!({"log": [format!("plan {}", s["goal"].as_str().unwrap_or("?"))]}))
    })?;
    graph.add_node("act", |s: Json| async move {
        let steps = s["log"].as_array().map_or(0, Vec::len);
        Ok::<_, NodeError>(json!({"log": [format!("act after {steps}")]}))
    })?;
    graph.add_node("report", |_s: Json| async move {
        Ok::<_, NodeError>(json!({"log": ["report"]}))
    })?;
    graph.add_edge(START, "plan")?;
    graph.add_edge("plan", "act")?;
    graph.add_edge("act", "report")?;
    graph.add_edge("report", END)?;
    Ok(graph.compile_with(CompileOptions::new().checkpointer(saver))?)
}

/// `[step, source, log]` of each checkpoint, newest first.
async fn summary(app: &CompiledStateGraph, thread: &RunnableConfig) -> anyhow::Result<Vec<Json>> {
    Ok(app
        .get_state_history(thread, ListQuery::default())
        .await?
        .into_iter()
        .map(|s| {
            let m = s.metadata.map(|m| m.to_json()).unwrap_or_default();
            json!([
                m["step"],
                m["source"],
                s.values.to_json().ok().map(|v| v["log"].clone())
            ])
        })
        .collect())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let app = agent(SqliteSaver::open(dir.path().join("threads.db"))?)?;
    let thread = RunnableConfig::thread("trip");
    app.invoke(json!({"goal": "paris", "log": []}), &thread)
        .await?;

    // The checkpoint taken before `act` ran.
    let history = app.get_state_history(&thread, ListQuery::default()).await?;
    let before_act = history
        .iter()
        .find(|s| s.next == ["act"])
        .context("no checkpoint before act")?;
    let id = before_act
        .config
        .checkpoint_id
        .clone()
        .context("no checkpoint id")?;
    println!("replaying from {id}");

    // 1. Replay: running from the old checkpoint saves a fork first, then
    //    `act` and `report` run again on the new branch.
    let old = RunnableConfig::thread("trip").with_checkpoint_id(id.clone());
    let replayed = app.invoke(Input::Resume, &old).await?.to_json()?;
    ensure!(replayed["log"] == json!(["plan paris", "act after 1", "report"]));
    let branch = summary(&app, &thread).await?;
    println!("after the replay: {}", Json::Array(branch.clone()));
    ensure!(
        branch[2] == json!([2, "fork", ["plan paris"]]),
        "{:?}",
        branch[2]
    );

    // 2. Branch with an edit: as if `plan` had planned something else.
    let edited = app
        .update_state(
            &old,
            Some(Value::from_json(
                json!({"goal": "rome", "log": ["plan rome"]}),
            )),
            Some("plan"),
        )
        .await?;
    let from =
        RunnableConfig::thread("trip").with_checkpoint_id(edited.checkpoint_id.context("no id")?);
    let rerun = app.invoke(Input::Resume, &from).await?.to_json()?;
    println!("edited branch: {}", rerun["log"]);
    ensure!(rerun["log"] == json!(["plan paris", "plan rome", "act after 2", "report"]));
    ensure!(app.get_state(&thread).await?.values.to_json()?["goal"] == json!("rome"));
    Ok(())
}
