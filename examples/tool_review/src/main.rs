//! Human review of tool calls: an assistant drafts replies with a `lookup`
//! tool (runs freely) and a `send_email` tool (waits for a person). Each
//! time the agent wants to send, the run pauses with an agent-inbox request;
//! the reviewer here edits the first email, rejects the second with a note,
//! and the thread ends with every tool call answered.
//!
//! ```text
//! cargo run -p tool_review
//! ```

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};

use anyhow::ensure;
use serde_json::{Value as Json, json};
use stategraph::llm::{AiMessage, FnTool, ScriptedChatModel, SharedTool, ToolCall, ToolError};
use stategraph::prebuilt::{ToolReview, is_well_paired};
use stategraph::prelude::*;

/// The model: look the customer up and send an email at once, then report
/// every result of the turn (a reviewer's note included).
fn scripted_model(messages: &[Message]) -> AiMessage {
    let id = format!("assistant-{}", messages.len());
    let call = |name: &str, args: Json| ToolCall::new(name, args).with_id(format!("{id}-{name}"));
    let answer = match messages.last() {
        Some(Message::Human(question)) => {
            let who = question.content.text().into_owned();
            AiMessage::new("").with_tool_calls(vec![
                call("lookup", json!({"customer": who})),
                call("send_email", json!({"to": format!("{who}@example.com"), "body": "Your refund is on its way."})),
            ])
        }
        Some(Message::Tool(_)) => {
            let asked = messages
                .iter()
                .rposition(|m| matches!(m, Message::Human(_)))
                .unwrap_or(0);
            let results: Vec<String> = messages[asked..]
                .iter()
                .filter_map(|m| match m {
                    Message::Tool(result) => Some(result.content.text().into_owned()),
                    _ => None,
                })
                .collect();
            AiMessage::new(format!("Done: {}", results.join("; ")))
        }
        _ => AiMessage::new("How can I help?"),
    };
    answer.with_id(id)
}

fn tools(sent: &Arc<Mutex<Vec<Json>>>) -> Vec<SharedTool> {
    let lookup = FnTool::typed(
        "lookup",
        "Finds a customer.",
        |args: Json, _ctx| async move {
            Ok::<_, ToolError>(format!(
                "{} is a gold customer",
                args["customer"].as_str().unwrap_or("?")
            ))
        },
    );
    let outbox = sent.clone();
    let send = FnTool::typed("send_email", "Sends an email.", move |args: Json, _ctx| {
        let outbox = outbox.clone();
        async move {
            outbox
                .lock()
                .map_err(|_| ToolError::failed("outbox poisoned"))?
                .push(args.clone());
            Ok::<_, ToolError>(format!("sent to {}", args["to"].as_str().unwrap_or("?")))
        }
    });
    vec![Arc::new(lookup), Arc::new(send)]
}

/// Runs until the review pause and prints what the reviewer is asked.
async fn ask(
    agent: &CompiledStateGraph,
    config: &RunnableConfig,
    customer: &str,
) -> anyhow::Result<Json> {
    let out = agent
        .invoke(json!({"messages": [["user", customer]]}), config)
        .await?
        .to_json()?;
    let request = out["__interrupt__"][0]["value"][0].clone();
    println!(
        "review requested: {} {}",
        request["action_request"]["action"], request["action_request"]["args"]
    );
    Ok(request)
}

async fn answer(
    agent: &CompiledStateGraph,
    config: &RunnableConfig,
    response: Json,
) -> anyhow::Result<Json> {
    println!("reviewer answers: {response}");
    let resume = Command::new().resume(Value::from_json(json!([response])));
    let out = agent.invoke(resume, config).await?.to_json()?;
    let messages = out["messages"].as_array().cloned().unwrap_or_default();
    println!(
        "agent: {}",
        messages.last().map_or(Json::Null, |m| m["content"].clone())
    );
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let agent = create_react_agent(ScriptedChatModel::from_fn(scripted_model), tools(&sent))
        .review_tool_calls(ToolReview::tools(["send_email"]))
        .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .build()?;

    // 1. Edit the email before it goes out.
    let first = RunnableConfig::thread("ticket-1");
    ask(&agent, &first, "ana").await?;
    let edit = json!({"type": "edit", "args": {"action": "send_email",
        "args": {"to": "ana@example.com", "body": "Your refund of 20 EUR is on its way."}}});
    answer(&agent, &first, edit).await?;

    // 2. Reject the second with a note the model reads instead.
    let second = RunnableConfig::thread("ticket-2");
    ask(&agent, &second, "bob").await?;
    let out = answer(
        &agent,
        &second,
        json!({"type": "response", "args": "Do not email Bob; call him."}),
    )
    .await?;

    let sent = sent
        .lock()
        .map_err(|_| anyhow::anyhow!("outbox poisoned"))?
        .clone();
    println!("emails sent: {sent:?}");
    ensure!(sent.len() == 1, "only the edited email goes out: {sent:?}");
    ensure!(sent[0]["body"] == json!("Your refund of 20 EUR is on its way."));
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone())?;
    ensure!(is_well_paired(&messages), "every tool call has its result");
    ensure!(
        messages
            .last()
            .is_some_and(|m| m.text().contains("call him")),
        "the model read the reviewer's note"
    );
    Ok(())
}
