//! [`repair_history`]: makes a conversation acceptable to a model provider
//! before a model call: every tool call answered exactly once, right after
//! the message that made it.
//!
//! A thread can end up with an unanswered tool call in many ways: a tool
//! failed without error handling, the process died between the model and
//! the tools, a person rejected one of several calls, a new message came
//! while a call waited for review. Providers then refuse every later
//! request (LangGraph issue #1899 and many like it). LangGraph's
//! `create_react_agent` raises `INVALID_CHAT_HISTORY` before such a call;
//! [`HistoryRepair::Error`] does the same, and the other policies repair
//! the request instead (never the stored state).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use stategraph_graph::NodeError;
use stategraph_llm::{AiMessage, Message, ToolCall, ToolMessage, error_message};

/// What to do with a conversation whose tool calls and results do not pair
/// up, before a model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryRepair {
    /// Fail the model call with LangGraph's `INVALID_CHAT_HISTORY` error
    /// when a tool call has no result (LangGraph's behaviour).
    Error,
    /// Answer each unanswered call with an error result (status `error`)
    /// placed right after its call; move results next to their calls; drop
    /// repeated results and results of calls that were never made.
    #[default]
    SynthesizeError,
    /// Remove unanswered calls from the messages that made them; move and
    /// drop results as [`HistoryRepair::SynthesizeError`] does.
    DropCalls,
}

/// The text of a result made up for a call that has none.
pub fn missing_result_text(call: &ToolCall) -> String {
    format!(
        "Tool call {} (id {}) has no result: it did not complete.",
        call.name,
        call.id.as_deref().unwrap_or("")
    )
}

/// `messages` as a model may be sent them under `policy`: borrowed
/// unchanged when every tool call already has exactly one result right after
/// the message that made it.
///
/// # Errors
/// With [`HistoryRepair::Error`], LangGraph's `ValueError` naming the first
/// unanswered calls.
pub fn repair_history(
    messages: &[Message],
    policy: HistoryRepair,
) -> Result<Cow<'_, [Message]>, NodeError> {
    if is_well_paired(messages) {
        return Ok(Cow::Borrowed(messages));
    }
    // The first result of each call id, wherever it is.
    let mut results: HashMap<&str, &Arc<ToolMessage>> = HashMap::new();
    for message in messages {
        if let Message::Tool(result) = message {
            results
                .entry(result.tool_call_id.as_str())
                .or_insert(result);
        }
    }
    if policy == HistoryRepair::Error {
        let unanswered: Vec<&ToolCall> = calls(messages)
            .filter(|call| !results.contains_key(call.id.as_deref().unwrap_or("")))
            .collect();
        if unanswered.is_empty() {
            // LangGraph checks only for missing results.
            return Ok(Cow::Borrowed(messages));
        }
        return Err(invalid_chat_history(&unanswered));
    }
    let mut repaired = Vec::with_capacity(messages.len() + 1);
    let mut placed: HashSet<&str> = HashSet::new();
    for message in messages {
        match message {
            Message::Ai(ai) if !ai.tool_calls.is_empty() => {
                let answered = |call: &ToolCall| {
                    let id = call.id.as_deref().unwrap_or("");
                    results.contains_key(id) && !placed.contains(id)
                };
                let kept: Vec<&ToolCall> = ai
                    .tool_calls
                    .iter()
                    .filter(|call| policy != HistoryRepair::DropCalls || answered(call))
                    .collect();
                if kept.len() == ai.tool_calls.len() {
                    repaired.push(message.clone());
                } else {
                    repaired.push(Message::from(without_calls(ai, &kept)));
                }
                for call in kept {
                    let id = call.id.as_deref().unwrap_or("");
                    let result = if placed.insert(id) {
                        results.get(id).copied()
                    } else {
                        None
                    };
                    repaired.push(match result {
                        Some(result) => Message::Tool(Arc::clone(result)),
                        None => Message::from(error_message(call, missing_result_text(call))),
                    });
                }
            }
            // Results were placed after their calls; the others answer
            // nothing.
            Message::Tool(_) => {}
            other => repaired.push(other.clone()),
        }
    }
    Ok(Cow::Owned(repaired))
}

/// Whether every tool call is answered exactly once by the results right
/// after its message, and every result answers such a call.
pub fn is_well_paired(messages: &[Message]) -> bool {
    // The calls of the last AI message, the results seen since it, and how
    // many of its calls those left unanswered. No allocation: this runs
    // before every model call, over the whole conversation.
    let mut calls: &[ToolCall] = &[];
    let mut block_start = 0;
    let mut unanswered = 0;
    for (at, message) in messages.iter().enumerate() {
        match message {
            Message::Tool(result) => {
                let id = result.tool_call_id.as_str();
                let asked = calls.iter().filter(|c| call_id(c) == id).count();
                let answered = messages[block_start..at]
                    .iter()
                    .filter(|m| matches!(m, Message::Tool(t) if t.tool_call_id == id))
                    .count();
                if answered >= asked {
                    return false;
                }
                unanswered -= 1;
            }
            _ if unanswered > 0 => return false,
            Message::Ai(ai) => {
                calls = &ai.tool_calls;
                block_start = at + 1;
                unanswered = calls.len();
            }
            _ => calls = &[],
        }
    }
    unanswered == 0
}

fn call_id(call: &ToolCall) -> &str {
    call.id.as_deref().unwrap_or("")
}

fn calls(messages: &[Message]) -> impl Iterator<Item = &ToolCall> {
    messages.iter().flat_map(|message| match message {
        Message::Ai(ai) => ai.tool_calls.as_slice(),
        _ => &[],
    })
}

fn without_calls(ai: &AiMessage, kept: &[&ToolCall]) -> AiMessage {
    let mut ai = ai.clone();
    ai.tool_calls = kept.iter().map(|call| (*call).clone()).collect();
    ai
}

/// LangGraph's `INVALID_CHAT_HISTORY` error.
fn invalid_chat_history(unanswered: &[&ToolCall]) -> NodeError {
    let shown: Vec<String> = unanswered
        .iter()
        .take(3)
        .map(|call| {
            format!(
                "{{'name': '{}', 'args': {}, 'id': '{}', 'type': 'tool_call'}}",
                call.name,
                call.args,
                call.id.as_deref().unwrap_or("")
            )
        })
        .collect();
    NodeError::new(
        "ValueError",
        format!(
            "Found AIMessages with tool_calls that do not have a corresponding ToolMessage. \
             Here are the first few of those tool calls: [{}].\n\n\
             Every tool call (LLM requesting to call a tool) in the message history MUST have a \
             corresponding ToolMessage (result of a tool invocation to return to the LLM) - this \
             is required by most LLM providers.\n\
             For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CHAT_HISTORY",
            shown.join(", ")
        ),
    )
}
