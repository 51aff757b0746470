//! The quickstart agent.
#![doc = include_str!("../README.md")]

use stategraph::llm::{
    AiMessage, ScriptedChatModel, SharedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph::openai::{ChatOpenAi, ConfigError};
use stategraph::prebuilt::ToolErrors;
use stategraph::prelude::*;
use stategraph::tool;

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

/// The agent, compiled with `options` (a checkpointer, say). Tool
/// failures (an unknown city, a division by zero) become messages the
/// model reads instead of failing the run.
///
/// # Errors
/// None in practice: the graph is fixed ([`stategraph::graph::GraphError`]
/// for the builder's signature).
pub fn agent(
    model: SharedChatModel,
    options: CompileOptions,
) -> Result<CompiledStateGraph, stategraph::graph::GraphError> {
    let tools: Vec<SharedTool> = vec![
        std::sync::Arc::new(GetWeatherTool),
        std::sync::Arc::new(CalculateTool),
    ];
    create_react_agent(model, tools.clone())
        .tool_node(ToolNode::new(tools).with_errors(ToolErrors::All))
        .prompt("You are a concise assistant. Use the tools for weather and arithmetic.")
        .compile_options(options)
        .build()
}

/// The OpenAI-compatible endpoint when one is configured, else the
/// scripted stand-in.
/// # Errors
/// An OpenAI-compatible configuration that is set but invalid.
pub fn model() -> Result<(SharedChatModel, String), ConfigError> {
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
        Err(err) => Err(err),
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
