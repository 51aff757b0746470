//! [`repair_history`]: makes a conversation acceptable to a model provider
//! before a model call: every tool call answered exactly once, right after
//! the message that made it. Invalid tool calls (arguments that did not
//! parse) count as calls: providers get them back as calls and want them
//! answered too.
//!
//! A thread can end up with an unanswered tool call in many ways: a tool
//! failed without error handling, the process died between the model and
//! the tools, a person rejected one of several calls, a new message came
//! while a call waited for review. Providers then refuse every later
//! request (LangGraph issue #1899 and many like it). LangGraph's
//! `create_react_agent` raises `INVALID_CHAT_HISTORY` before such a call;
//! [`HistoryRepair::Error`] does the same, and the other policies repair
//! the request instead (never the stored state).
//!
//! The agent repairs the conversation (`messages`), never a window a
//! pre-model hook chose for the model (`llm_input_messages`): that one is
//! sent as it is, as LangGraph sends it.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use stategraph_graph::NodeError;
use stategraph_llm::{
    AiMessage, InvalidToolCall, Message, ToolCall, ToolMessage, ToolStatus, error_message,
};

/// What to do with a conversation whose tool calls and results do not pair
/// up, before a model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryRepair {
    /// Fail the model call with LangGraph's `INVALID_CHAT_HISTORY` error
    /// when a tool call has no result (LangGraph's behaviour), an invalid
    /// call included (LangGraph lets that one through, and the provider
    /// refuses the request).
    Error,
    /// Answer each unanswered call with an error result (status `error`)
    /// placed right after its call ([`missing_result_text`], or
    /// [`invalid_call_text`] for an invalid call); move results next to their
    /// calls; drop repeated results and results of calls that were never
    /// made.
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

/// The answer to a tool call whose arguments did not parse: LangGraph's
/// text for a tool that failed on its arguments, with the call's id and
/// the parse error in place of the arguments (which may be megabytes of
/// text, and are in the model's own message already).
///
/// ```
/// use stategraph_llm::InvalidToolCall;
/// use stategraph_prebuilt::invalid_call_text;
///
/// let call = InvalidToolCall::new(
///     Some("c1".into()),
///     Some("add".into()),
///     Some("{broken".into()),
///     "arguments of `add` are not valid JSON: key must be a string at line 1 column 2",
/// );
/// assert_eq!(
///     invalid_call_text(&call),
///     "Error invoking tool 'add' (call id 'c1') with error:\n arguments of `add` are not \
///      valid JSON: key must be a string at line 1 column 2\n Please fix the error and try again.",
/// );
/// ```
pub fn invalid_call_text(call: &InvalidToolCall) -> String {
    format!(
        "Error invoking tool '{}' (call id '{}') with error:\n {}\n Please fix the error and try again.",
        call.name.as_deref().unwrap_or("unknown"),
        call.id.as_deref().unwrap_or(""),
        call.error
            .as_deref()
            .unwrap_or("the arguments could not be parsed")
    )
}

/// The error result answering an invalid call ([`invalid_call_text`]).
pub(crate) fn invalid_call_message(call: &InvalidToolCall) -> ToolMessage {
    let mut message =
        ToolMessage::new(invalid_call_text(call), call.id.clone().unwrap_or_default())
            .with_status(ToolStatus::Error);
    message.name = call.name.clone();
    message
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
        let unanswered: Vec<AnyCall<'_>> = messages
            .iter()
            .filter_map(Message::as_ai)
            .flat_map(calls_of)
            .filter(|call| !results.contains_key(call.id()))
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
            Message::Ai(ai) if calls_of(ai).next().is_some() => {
                let answered = |id: &str| results.contains_key(id) && !placed.contains(id);
                let keep = |id: &str| policy != HistoryRepair::DropCalls || answered(id);
                let valid: Vec<&ToolCall> = ai
                    .tool_calls
                    .iter()
                    .filter(|call| keep(call_id(call)))
                    .collect();
                let invalid: Vec<&InvalidToolCall> = ai
                    .invalid_tool_calls
                    .iter()
                    .filter(|call| keep(call.id.as_deref().unwrap_or("")))
                    .collect();
                if valid.len() == ai.tool_calls.len()
                    && invalid.len() == ai.invalid_tool_calls.len()
                {
                    repaired.push(message.clone());
                } else {
                    repaired.push(Message::from(without_calls(ai, &valid, &invalid)));
                }
                let kept = valid
                    .into_iter()
                    .map(AnyCall::Valid)
                    .chain(invalid.into_iter().map(AnyCall::Invalid));
                for call in kept {
                    let id = call.id();
                    let result = if placed.insert(id) {
                        results.get(id).copied()
                    } else {
                        None
                    };
                    repaired.push(match result {
                        Some(result) => Message::Tool(Arc::clone(result)),
                        None => Message::from(call.made_up_answer()),
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

/// Whether every tool call, valid or invalid, is answered exactly once by
/// the results right after its message, and every result answers such a
/// call.
pub fn is_well_paired(messages: &[Message]) -> bool {
    // The last AI message, the results seen since it, and how many of its
    // calls those left unanswered. No allocation: this runs before every
    // model call, over the whole conversation.
    let mut calling: Option<&AiMessage> = None;
    let mut block_start = 0;
    let mut unanswered = 0;
    for (at, message) in messages.iter().enumerate() {
        match message {
            Message::Tool(result) => {
                let id = result.tool_call_id.as_str();
                let asked = calling.map_or(0, |ai| calls_of(ai).filter(|c| c.id() == id).count());
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
                calling = Some(ai);
                block_start = at + 1;
                unanswered = ai.tool_calls.len() + ai.invalid_tool_calls.len();
            }
            _ => calling = None,
        }
    }
    unanswered == 0
}

/// A call of an AI message, valid or not.
#[derive(Clone, Copy)]
enum AnyCall<'a> {
    Valid(&'a ToolCall),
    Invalid(&'a InvalidToolCall),
}

impl<'a> AnyCall<'a> {
    fn id(self) -> &'a str {
        match self {
            Self::Valid(call) => call_id(call),
            Self::Invalid(call) => call.id.as_deref().unwrap_or(""),
        }
    }

    /// The error result for the call when it has none.
    fn made_up_answer(self) -> ToolMessage {
        match self {
            Self::Valid(call) => error_message(call, missing_result_text(call)),
            Self::Invalid(call) => invalid_call_message(call),
        }
    }

    /// The call as LangGraph's error shows it.
    fn shown(self) -> String {
        match self {
            Self::Valid(call) => format!(
                "{{'name': '{}', 'args': {}, 'id': '{}', 'type': 'tool_call'}}",
                call.name,
                call.args,
                call_id(call)
            ),
            // The raw text may be huge; the error says what is wrong.
            Self::Invalid(call) => format!(
                "{{'name': '{}', 'id': '{}', 'error': '{}', 'type': 'invalid_tool_call'}}",
                call.name.as_deref().unwrap_or(""),
                self.id(),
                call.error.as_deref().unwrap_or("")
            ),
        }
    }
}

fn call_id(call: &ToolCall) -> &str {
    call.id.as_deref().unwrap_or("")
}

/// The calls of `ai`: the valid ones, then the invalid ones (the order a
/// provider is sent them in).
fn calls_of(ai: &AiMessage) -> impl Iterator<Item = AnyCall<'_>> {
    let valid = ai.tool_calls.iter().map(AnyCall::Valid);
    valid.chain(ai.invalid_tool_calls.iter().map(AnyCall::Invalid))
}

fn without_calls(ai: &AiMessage, valid: &[&ToolCall], invalid: &[&InvalidToolCall]) -> AiMessage {
    let mut ai = ai.clone();
    ai.tool_calls = valid.iter().map(|call| (*call).clone()).collect();
    ai.invalid_tool_calls = invalid.iter().map(|call| (*call).clone()).collect();
    ai
}

/// LangGraph's `INVALID_CHAT_HISTORY` error.
fn invalid_chat_history(unanswered: &[AnyCall<'_>]) -> NodeError {
    let shown: Vec<String> = unanswered.iter().take(3).map(|call| call.shown()).collect();
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
