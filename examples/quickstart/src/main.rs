//! Quickstart: a ReAct agent with two tools whose conversation is kept in a
//! local SQLite file, so a second run carries on where the first stopped.
//!
//! ```text
//! cargo run -p quickstart                       # asks about Paris
//! cargo run -p quickstart                       # same conversation: asks about Tokyo
//! cargo run -p quickstart -- "What is 6 * 7?"   # your own question, same conversation
//! cargo run -p quickstart -- --new              # forget the conversation first
//! ```
//!
//! The model is a scripted stand-in (it reads the question for city names
//! and `a op b` sums) unless `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set;
//! then it is that OpenAI-compatible endpoint (`OPENAI_MODEL`, default
//! `gpt-4o-mini`). The conversation lives in `target/quickstart.sqlite`
//! (`STATEGRAPH_QUICKSTART_DB` chooses another file).

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use anyhow::Context;
use futures::StreamExt;
use stategraph::prelude::*;

/// The one conversation every run continues.
const THREAD: &str = "quickstart";

/// Questions the runs ask in turn when none is given.
const QUESTIONS: [&str; 3] = [
    "What's the weather in Paris, and what is 21 * 2?",
    "And in Tokyo?",
    "What is 1.5 + 2.25?",
];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let new_conversation = args.iter().any(|a| a == "--new");
    args.retain(|a| a != "--new");

    let db = database_path()?;
    let saver = SqliteSaver::open(&db).with_context(|| format!("opening {}", db.display()))?;
    if new_conversation {
        saver.delete_thread(THREAD).await?;
    }
    let (model, model_name) = quickstart::model()?;
    let agent = quickstart::agent(model, CompileOptions::new().checkpointer(saver))?;

    let config = RunnableConfig::thread(THREAD);
    let earlier = messages_of(&agent, &config).await?;
    let turn = earlier
        .iter()
        .filter(|m| matches!(m, Message::Human(_)))
        .count();
    println!(
        "model: {model_name}; conversation: {} ({} earlier messages)",
        db.display(),
        earlier.len()
    );
    let question = match args.first() {
        Some(question) => question.clone(),
        None => QUESTIONS[turn % QUESTIONS.len()].to_owned(),
    };
    println!("\nuser: {question}");

    let input = serde_json::json!({"messages": [["user", question]]});
    let mut stream = agent.stream(Value::from_json(input), &config, StreamMode::Updates);
    let mut printed = 0;
    while let Some(chunk) = stream.next().await {
        for (node, update) in chunk?.to_json().as_object().into_iter().flatten() {
            let messages: Vec<Message> = serde_json::from_value(update["messages"].clone())
                .with_context(|| format!("reading the messages {node} wrote"))?;
            for message in &messages {
                show(node, message);
                printed += 1;
            }
        }
    }

    let now = messages_of(&agent, &config).await?;
    anyhow::ensure!(
        now.get(..earlier.len()) == Some(&earlier[..]),
        "the run changed the conversation's earlier messages"
    );
    anyhow::ensure!(
        now.len() == earlier.len() + 1 + printed,
        "the conversation should have grown by the question and the {printed} streamed messages: {} -> {}",
        earlier.len(),
        now.len()
    );
    println!(
        "\nsaved: {} messages in thread {THREAD:?}; run again to continue, or pass --new to start over",
        now.len()
    );
    Ok(())
}

/// Prints one streamed message as a person would want to read it.
fn show(node: &str, message: &Message) {
    match message {
        Message::Ai(ai) if !ai.tool_calls.is_empty() => {
            for call in &ai.tool_calls {
                println!("{node}: calls {}({})", call.name, call.args);
            }
        }
        Message::Tool(result) => {
            let name = result.name.as_deref().unwrap_or("tool");
            println!("{node}: {name} -> {}", result.content.text());
        }
        other => println!("{node}: {}", other.text()),
    }
}

/// The thread's messages so far (none on a new thread).
async fn messages_of(
    agent: &CompiledStateGraph,
    config: &RunnableConfig,
) -> anyhow::Result<Vec<Message>> {
    let snapshot = agent.get_state(config).await?;
    let values = snapshot.values.to_json()?;
    match values.get("messages") {
        Some(messages) => Ok(serde_json::from_value(messages.clone())?),
        None => Ok(Vec::new()),
    }
}

fn database_path() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("STATEGRAPH_QUICKSTART_DB").map_or_else(
        || PathBuf::from("target").join("quickstart.sqlite"),
        PathBuf::from,
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(path)
}
