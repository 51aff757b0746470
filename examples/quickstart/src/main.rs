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
use stategraph::llm::{
    AiMessage, ScriptedChatModel, SharedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph::openai::{ChatOpenAi, ConfigError};
use stategraph::prebuilt::ToolErrors;
use stategraph::prelude::*;
use stategraph::tool;

/// The one conversation every run continues.
const THREAD: &str = "quickstart";

/// Questions the runs ask in turn when none is given.
const QUESTIONS: [&str; 3] = [
    "What's the weather in Paris, and what is 21 * 2?",
    "And in Tokyo?",
    "What is 1.5 + 2.25?",
];

/// Gets the current weather in a city.
#[tool]
async fn get_weather(
    /// The city, e.g. "Paris".
    city: String,
) -> Result<String, ToolError> {
    let report = match city.to_lowercase().as_str() {
        "paris" => "18°C and sunny",
        "tokyo" => "22°C with light rain",
        "london" => "12°C and overcast",
        "new york" => "15°C and windy",
        _ => return Err(ToolError::failed(format!("no weather station in {city}"))),
    };
    Ok(format!("{city}: {report}"))
}

/// Works out `a op b` for op one of + - * /.
#[tool]
async fn calculate(
    /// The left operand.
    a: f64,
    /// One of "+", "-", "*", "/".
    op: String,
    /// The right operand.
    b: f64,
) -> Result<String, ToolError> {
    let value = match op.as_str() {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" if b != 0.0 => a / b,
        "/" => return Err(ToolError::failed("division by zero")),
        other => {
            return Err(ToolError::invalid_args(format!(
                "unknown operator {other:?}"
            )));
        }
    };
    Ok(format!("{a} {op} {b} = {value}"))
}

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
    let (model, model_name) = model()?;
    let tools: Vec<SharedTool> = vec![
        std::sync::Arc::new(GetWeatherTool),
        std::sync::Arc::new(CalculateTool),
    ];
    // Tool failures (an unknown city, a division by zero) become messages
    // the model reads instead of failing the run.
    let agent = create_react_agent(model, tools.clone())
        .tool_node(ToolNode::new(tools).with_errors(ToolErrors::All))
        .prompt("You are a concise assistant. Use the tools for weather and arithmetic.")
        .compile_options(CompileOptions::new().checkpointer(saver))
        .build()?;

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

/// The OpenAI-compatible endpoint when one is configured, else the
/// scripted stand-in.
fn model() -> anyhow::Result<(SharedChatModel, String)> {
    match ChatOpenAi::from_env("gpt-4o-mini") {
        Ok(model) => {
            let name = format!(
                "{} at {}",
                model.config().model(),
                model.config().base_url()
            );
            Ok((model.into_shared(), name))
        }
        Err(ConfigError::MissingVar { .. }) => Ok((
            ScriptedChatModel::from_fn(scripted_answer).into_shared(),
            "scripted (set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)".to_owned(),
        )),
        Err(err) => Err(err.into()),
    }
}

/// The scripted model: tool calls for the cities and sums the last question
/// names, then an answer built from the tool results.
///
/// Its ids count the conversation's messages: unique in the thread even
/// across processes (`add_messages` replaces a message whose id is already
/// there, so an id a previous run used would overwrite that answer).
fn scripted_answer(messages: &[Message]) -> AiMessage {
    let id = format!("scripted-{}", messages.len());
    let mut answer = scripted_reply(messages);
    for (i, call) in answer.tool_calls.iter_mut().enumerate() {
        call.id = Some(format!("{id}-call-{i}"));
    }
    answer.with_id(id)
}

fn scripted_reply(messages: &[Message]) -> AiMessage {
    let last_question = messages
        .iter()
        .rposition(|m| matches!(m, Message::Human(_)));
    let Some(asked) = last_question else {
        return AiMessage::new("Ask me about the weather or a sum.");
    };
    let results: Vec<String> = messages[asked + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(result.content.text().into_owned()),
            _ => None,
        })
        .collect();
    if !results.is_empty() {
        let earlier = messages[..asked]
            .iter()
            .filter(|m| matches!(m, Message::Human(_)))
            .count();
        let memory = if earlier > 0 {
            format!(" (question {} of this conversation)", earlier + 1)
        } else {
            String::new()
        };
        return AiMessage::new(format!("{}{memory}.", results.join("; ")));
    }
    let question = messages[asked].text().into_owned();
    let calls = tool_calls_for(&question);
    if calls.is_empty() {
        AiMessage::new(
            "I can tell the weather in Paris, Tokyo, London or New York, and work out sums like 6 * 7.",
        )
    } else {
        AiMessage::new("").with_tool_calls(calls)
    }
}

/// The calls a question asks for: one `get_weather` per known city, one
/// `calculate` per `a op b`.
fn tool_calls_for(question: &str) -> Vec<ToolCall> {
    let lower = question.to_lowercase();
    let mut calls: Vec<ToolCall> = ["Paris", "Tokyo", "London", "New York"]
        .into_iter()
        .filter(|city| lower.contains(&city.to_lowercase()))
        .map(|city| ToolCall::new("get_weather", serde_json::json!({ "city": city })))
        .collect();
    let words: Vec<&str> = question
        .split(|c: char| c.is_whitespace() || c == '?' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    for window in words.windows(3) {
        let [a, op, b] = window else { continue };
        if let (Ok(a), true, Ok(b)) = (
            a.parse::<f64>(),
            ["+", "-", "*", "/"].contains(op),
            b.parse::<f64>(),
        ) {
            calls.push(ToolCall::new(
                "calculate",
                serde_json::json!({"a": a, "op": op, "b": b}),
            ));
        }
    }
    calls
}
