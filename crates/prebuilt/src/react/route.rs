//! Where the agent's answer goes.

use std::collections::HashSet;
use std::sync::Arc;

use stategraph_core::Value;
use stategraph_graph::{ChannelValues, END, Route, Send};
use stategraph_llm::{InvalidToolCall, Message, ToolCall};

use super::AgentVersion;
use crate::review::REVIEW_NODE;
use crate::{ToolCallWithContext, ToolReview};

/// Where an answer goes (LangGraph's `should_continue`, and its
/// post-model-hook router): the calls of the last AI message that have no
/// result yet, valid or invalid, to `tools` (one task, or one `Send` each)
/// or to review; back to the entry when a hook answered them; else the end.
/// LangGraph ignores invalid calls here and ends the turn with them
/// unanswered.
pub(super) struct Router {
    pub(super) version: AgentVersion,
    pub(super) entry: &'static str,
    pub(super) end: &'static str,
    pub(super) review: Option<ToolReview>,
}

impl Router {
    pub(super) fn route(&self, state: &ChannelValues, messages: &Arc<Vec<Message>>) -> Vec<Route> {
        let Some(at) = messages.iter().rposition(|m| matches!(m, Message::Ai(_))) else {
            return vec![Route::To(self.end.to_owned())];
        };
        let Message::Ai(last) = &messages[at] else {
            return vec![Route::To(self.end.to_owned())];
        };
        let answered: HashSet<&str> = messages[at + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool(result) => Some(result.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let pending: Vec<&ToolCall> = last
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(call.id.as_deref().unwrap_or("")))
            .collect();
        let invalid: Vec<&InvalidToolCall> = last
            .invalid_tool_calls
            .iter()
            .filter(|call| !answered.contains(call.id.as_deref().unwrap_or("")))
            .collect();
        if pending.is_empty() && invalid.is_empty() {
            let next = if matches!(messages.last(), Some(Message::Tool(_))) {
                self.entry
            } else {
                self.end
            };
            return vec![Route::To(next.to_owned())];
        }
        // The review answers the invalid calls of a message it reviews.
        if !pending.is_empty()
            && self
                .review
                .as_ref()
                .is_some_and(|review| review.wants(last))
        {
            return vec![Route::To(REVIEW_NODE.to_owned())];
        }
        match self.version {
            AgentVersion::V1 => vec![Route::To("tools".to_owned())],
            AgentVersion::V2 => send_calls(state, &pending, &invalid),
        }
    }
}

/// After `tools` when some tools return directly (LangGraph's
/// `route_tool_responses`): the end when one of them answered, else the
/// entry.
pub(super) fn after_tools(
    messages: &[Message],
    return_direct: &HashSet<String>,
    entry: &'static str,
) -> &'static str {
    let direct = |name: &str| return_direct.contains(name);
    for message in messages.iter().rev() {
        match message {
            Message::Tool(result) if result.name.as_deref().is_some_and(direct) => return END,
            Message::Tool(_) => {}
            // Parallel calls answered in other tasks.
            Message::Ai(ai) if ai.tool_calls.iter().any(|c| direct(&c.name)) => return END,
            _ => break,
        }
    }
    entry
}

/// One `Send` to `tools` per call, each carrying the call and the state it
/// was made in (shared, not copied); then one per invalid call, carrying
/// only the call (its answer needs nothing else).
fn send_calls(
    state: &ChannelValues,
    calls: &[&ToolCall],
    invalid: &[&InvalidToolCall],
) -> Vec<Route> {
    // The whole state (for injected state arguments), shared.
    let state = Value::new(state.clone());
    let valid = calls.iter().map(|call| {
        let arg = ToolCallWithContext::new((*call).clone(), state.clone());
        Route::Send(Send::new("tools", arg))
    });
    let invalid = invalid
        .iter()
        .map(|call| Route::Send(Send::new("tools", (*call).clone())));
    valid.chain(invalid).collect()
}
