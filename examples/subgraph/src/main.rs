//! A `Send` map-reduce whose map step is a subgraph, as LangGraph's
//! "subgraphs" and "map-reduce" how-tos combine them.
//!
//! The parent plans a report: one `research` task per topic, all in one
//! step (`Send`). `research` is a compiled graph of its own, with a private
//! key (`notes`) the parent never sees: it gathers notes, then writes a
//! section. The sections come back through the key both graphs share
//! (`sections`, appended in task order) and `assemble` joins them.
//!
//! The run is streamed with `subgraphs(true)`: every update shows the
//! namespace it comes from, `()` for the parent and `("research:<task>",)`
//! inside a subgraph run.
//!
//! Run with `cargo run -p subgraph`; it checks its own output.

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use anyhow::ensure;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use stategraph::graph::Send;
use stategraph::prelude::*;

/// The parent's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Report {
    /// What to research: the input.
    topics: Vec<String>,
    /// One section per topic, appended by the `research` tasks.
    #[state(reducer = append)]
    sections: Vec<String>,
    /// The finished report.
    report: String,
}

/// The subgraph's state: `topic` comes in with the `Send`, `notes` stays
/// inside, `sections` goes back to the parent (the one key both share).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    topic: String,
    #[state(reducer = append)]
    notes: Vec<String>,
    #[state(reducer = append)]
    sections: Vec<String>,
}

/// Gathers two notes on the topic (a search tool would do this).
async fn gather(state: ResearchView) -> Result<ResearchUpdate, NodeError> {
    let notes = vec![
        format!("{} has a history", state.topic),
        format!("{} matters today", state.topic),
    ];
    Ok(ResearchUpdate::default().notes(notes))
}

/// Writes the topic's section from the notes.
async fn write(state: ResearchView) -> Result<ResearchUpdate, NodeError> {
    let section = format!("## {}\n{}.", state.topic, state.notes.join("; "));
    Ok(ResearchUpdate::default().sections(vec![section]))
}

/// The map step: a graph of its own, compiled once and used as a node.
fn research() -> anyhow::Result<CompiledStateGraph> {
    let mut graph = StateGraph::typed::<Research>();
    graph.add_node("gather", gather)?;
    graph.add_node("write", write)?;
    graph.add_edge(START, "gather")?;
    graph.add_edge("gather", "write")?;
    graph.add_edge("write", END)?;
    Ok(graph.compile()?)
}

/// Map: one `research` task per topic, each with its own input.
fn plan(state: &ReportView) -> Vec<Send> {
    state
        .topics
        .iter()
        .map(|topic| {
            let input = ResearchUpdate::default().topic(topic.as_str());
            Send::new("research", ChannelValues::from(input))
        })
        .collect()
}

/// Reduce: the sections, in topic order, as one report.
async fn assemble(state: ReportView) -> Result<ReportUpdate, NodeError> {
    Ok(ReportUpdate::default().report(state.sections.join("\n\n")))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut graph = StateGraph::typed::<Report>();
    graph.add_node("research", research()?)?;
    graph.add_node("assemble", assemble)?;
    graph.add_conditional_edges(START, plan, None)?;
    graph.add_edge("research", "assemble")?;
    graph.add_edge("assemble", END)?;
    let app = graph.compile()?;

    let topics = ["tides", "volcanoes", "bees"].map(String::from).to_vec();
    let input = ChannelValues::from(ReportUpdate::default().topics(topics.clone()));
    let options = RunOptions::new().subgraphs(true);
    let config = RunnableConfig::default();
    let mut stream = app.stream_with(Value::new(input), &config, StreamMode::Updates, options);
    let mut inside = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        // The task id after `research:` differs per run: show the node.
        let namespace: Vec<&str> = chunk
            .namespace
            .iter()
            .map(|part| part.split(':').next().unwrap_or(part))
            .collect();
        inside += usize::from(!namespace.is_empty());
        println!("{namespace:?} {}", chunk.to_json());
    }
    // Two nodes ran inside each of the three subgraph runs.
    ensure!(inside == 6, "{inside} updates from inside the subgraphs");

    let out = app
        .invoke_typed(ReportUpdate::default().topics(topics), &config)
        .await?
        .done()?;
    println!("\n{}", out.report);
    ensure!(out.sections.len() == 3, "{} sections", out.sections.len());
    ensure!(
        out.sections[0].starts_with("## tides"),
        "sections in topic order"
    );
    ensure!(
        out.report.contains("bees matters today"),
        "the notes made it in"
    );
    Ok(())
}
