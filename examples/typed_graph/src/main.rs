//! A small typed graph, streamed step by step.
//!
//! A writers' room: one `write_joke` task per subject runs in parallel (a
//! map-reduce fan-out with `Send`), then an editor reviews the set and sends
//! it back for more until it is long enough (a conditional loop). Each node's
//! update is printed as it finishes, then the final state.

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use stategraph::graph::Send;
use stategraph::prelude::*;

/// How many jokes the editor wants in the set.
const SET_LENGTH: usize = 5;

/// The graph's state: each field is a channel. `RoomUpdate` (what nodes
/// return) and `RoomView` (what they read) are derived from it.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Room {
    /// What to joke about: the input.
    subjects: Vec<String>,
    /// Every joke so far; parallel writers append in the same step.
    #[state(reducer = append)]
    jokes: Vec<String>,
    /// The editor's last verdict.
    verdict: String,
    /// How many reviews ran.
    #[state(reducer = add)]
    reviews: u32,
}

/// What one `write_joke` task gets instead of the state.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Assignment {
    subject: String,
}

/// A scripted writer (a chat model will take this job).
fn joke(subject: &str, take: usize) -> String {
    match take % 3 {
        0 => format!("Why did the {subject} cross the road? To get to the other side."),
        1 => format!("I told a {subject} joke once. It's still thinking about it."),
        _ => format!("A {subject} walks into a bar. The bartender: \"Why the long face?\""),
    }
}

/// Map: one `write_joke` task per subject, all in the same step.
fn assign(room: &RoomView) -> Vec<Send> {
    room.subjects
        .iter()
        .map(|s| Send::new("write_joke", Assignment { subject: s.clone() }))
        .collect()
}

/// One writer, one subject.
async fn write_joke(task: Assignment) -> Result<RoomUpdate, NodeError> {
    Ok(RoomUpdate::default().jokes(vec![joke(&task.subject, 0)]))
}

/// Reduce: the editor reads every joke at once (the view shares the
/// channels' values; nothing is copied).
async fn review(room: RoomView) -> Result<RoomUpdate, NodeError> {
    let verdict = match room.jokes.len() {
        n if n < SET_LENGTH => format!("{n} jokes, {SET_LENGTH} wanted: write more"),
        _ => "approved".to_owned(),
    };
    Ok(RoomUpdate::default().verdict(verdict).reviews(1_u32))
}

/// The loop: back to the writers until the editor approves.
fn next(room: &RoomView) -> &'static str {
    if *room.verdict == "approved" {
        "done"
    } else {
        "more"
    }
}

/// Another pass: one more joke, about the next subject in turn.
async fn write_more(room: RoomView) -> Result<RoomUpdate, NodeError> {
    let subject = &room.subjects[room.jokes.len() % room.subjects.len()];
    Ok(RoomUpdate::default().jokes(vec![joke(subject, *room.reviews as usize)]))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut graph = StateGraph::typed::<Room>();
    graph.add_node("write_joke", write_joke)?;
    graph.add_node("review", review)?;
    graph.add_node("write_more", write_more)?;
    graph.add_conditional_edges(START, assign, None)?;
    graph.add_edge("write_joke", "review")?;
    let routes = PathMap::from([("more", "write_more"), ("done", END)]);
    graph.add_conditional_edges("review", next, Some(routes))?;
    graph.add_edge("write_more", "review")?;
    let app = graph.compile()?;

    let subjects = ["cat", "duck", "robot"].map(String::from).to_vec();
    let input: ChannelValues = RoomUpdate::default().subjects(subjects).into();
    // `updates`: what each node wrote, as it finishes; `values`: the whole
    // state after each step (the last one is the final state).
    let modes = StreamMode::Updates | StreamMode::Values;
    let mut stream = app.stream(Value::new(input), &RunnableConfig::default(), modes);
    let (mut step, mut last) = (0, None);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if chunk.mode == StreamMode::Values {
            (step, last) = (step + 1, Some(chunk.data));
            continue;
        }
        for (node, update) in chunk.to_json().as_object().into_iter().flatten() {
            println!("step {step} {node:>10}: {update}");
        }
    }

    let values = last.map(Value::decode::<ChannelValues>).transpose()?;
    let room: Room = Room::view(&values.unwrap_or_default())?.into();
    println!("\nafter {} reviews, {}:", room.reviews, room.verdict);
    for joke in &room.jokes {
        println!("  - {joke}");
    }
    Ok(())
}
