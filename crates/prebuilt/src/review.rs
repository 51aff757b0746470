//! Human review of tool calls: [`ToolReview`] makes a ReAct agent pause
//! before chosen tool calls run, and a person accepts, edits or rejects each
//! one (the agent-inbox answers of [`HumanResponse`]).
//!
//! Every reviewed call ends with exactly one result: accepted and edited
//! calls run; a rejected call (an `ignore`, or a `response` in its place) is
//! answered with a tool message saying so, and is not run. No call is left
//! dangling in the conversation.

use std::collections::HashSet;
use std::sync::Arc;

use stategraph_core::Value;
use stategraph_graph::{ChannelValues, Command, NodeError, Send, TaskContext};
use stategraph_llm::{AiMessage, Message, ToolCall, ToolMessage, add_messages};

use crate::history::invalid_call_message;

use crate::{
    ActionRequest, HumanInterrupt, HumanInterruptConfig, HumanResponse, ToolCallWithContext,
    request_human_review,
};

/// The node a reviewed agent pauses in.
pub const REVIEW_NODE: &str = "human_review";

/// Which tool calls of an agent wait for a person, and what the person may
/// answer (see [`ReactAgent::review_tool_calls`](crate::ReactAgent::review_tool_calls)).
///
/// ```
/// use stategraph_prebuilt::{HumanInterruptConfig, ToolReview};
///
/// // Calls of `send_email` wait; the reviewer may accept or reject them.
/// let review = ToolReview::tools(["send_email"]).with_config(
///     HumanInterruptConfig::default().with_accept(true).with_ignore(true),
/// );
/// assert!(review.applies_to("send_email") && !review.applies_to("search"));
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ToolReview {
    tools: Option<HashSet<String>>,
    config: HumanInterruptConfig,
    description: Option<String>,
}

impl ToolReview {
    /// Every tool call waits for review; every answer is allowed.
    pub fn all() -> Self {
        Self {
            tools: None,
            config: HumanInterruptConfig::all(),
            description: None,
        }
    }

    /// Calls of these tools wait for review; every answer is allowed.
    pub fn tools<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            tools: Some(names.into_iter().map(Into::into).collect()),
            ..Self::all()
        }
    }

    /// Sets which answers the reviewer may give.
    pub fn with_config(mut self, config: HumanInterruptConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the text shown with each request.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether calls of `tool` wait for review.
    pub fn applies_to(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.contains(tool))
    }

    /// Whether any call of `message` waits for review.
    pub(crate) fn wants(&self, message: &AiMessage) -> bool {
        message
            .tool_calls
            .iter()
            .any(|call| self.applies_to(&call.name))
    }

    /// The request shown for `call`.
    fn request(&self, call: &ToolCall) -> HumanInterrupt {
        let args = match &call.args {
            serde_json::Value::Object(args) => args.clone(),
            other => {
                let mut args = stategraph_core::JsonMap::new();
                args.insert("args".to_owned(), other.clone());
                args
            }
        };
        let request = HumanInterrupt::new(ActionRequest::new(&call.name, args), self.config);
        match &self.description {
            Some(description) => request.with_description(description.clone()),
            None => request.with_description(format!("Review the call of `{}`", call.name)),
        }
    }

    /// The review node's work: ask about the reviewed calls of the last AI
    /// message, then run the calls that go ahead (one `Send` each to
    /// `tools`) and answer the others and the invalid calls; back to
    /// `model_node` (the agent, or its pre-model hook) when none runs.
    pub(crate) fn review(
        &self,
        state: &ChannelValues,
        conversation: &Arc<Vec<Message>>,
        ctx: &TaskContext,
        model_node: &str,
    ) -> Result<Command, NodeError> {
        let Some(Message::Ai(last)) = conversation.last() else {
            return Err(NodeError::new(
                "ValueError",
                "human review needs an AI message with tool calls last",
            ));
        };
        let reviewed: Vec<&ToolCall> = last
            .tool_calls
            .iter()
            .filter(|call| self.applies_to(&call.name))
            .collect();
        let requests = reviewed.iter().map(|call| self.request(call)).collect();
        let answers = request_human_review(ctx, requests)?;
        if answers.len() != reviewed.len() {
            return Err(NodeError::new(
                "ValueError",
                format!(
                    "expected {} human responses (one per reviewed tool call), got {}",
                    reviewed.len(),
                    answers.len()
                ),
            ));
        }
        let mut calls: Vec<ToolCall> = last.tool_calls.clone();
        let mut answered: Vec<Message> = Vec::new();
        let mut skipped: HashSet<String> = HashSet::new();
        for (call, answer) in reviewed.iter().zip(answers) {
            self.check_allowed(call, &answer)?;
            let id = call.id.clone().unwrap_or_default();
            match answer {
                HumanResponse::Accept => {}
                HumanResponse::Edit(edit) => {
                    if let Some(slot) = calls.iter_mut().find(|c| c.id == call.id) {
                        slot.name = edit.action;
                        slot.args = serde_json::Value::Object(edit.args);
                    }
                }
                HumanResponse::Response(text) => {
                    answered.push(tool_message(call, text));
                    skipped.insert(id);
                }
                HumanResponse::Ignore => {
                    let text = format!("The reviewer did not let `{}` run.", call.name);
                    answered.push(tool_message(call, text));
                    skipped.insert(id);
                }
            }
        }
        let mut update: Vec<Message> = Vec::new();
        if calls != last.tool_calls {
            // The edited message replaces the original (same id).
            let mut edited = (**last).clone();
            edited.tool_calls = calls.clone();
            update.push(edited.into());
        }
        update.extend(answered);
        // Calls whose arguments did not parse are not reviewed: they are
        // answered here, so the model can retry.
        update.extend(last.invalid_tool_calls.iter().map(|call| {
            let mut answer = invalid_call_message(call);
            answer.id = Some(stategraph_core::random_uuid());
            Message::from(answer)
        }));
        // The state the calls run in, as the step will store it.
        let messages = add_messages(conversation.to_vec(), update.clone());
        let running: Vec<&ToolCall> = calls
            .iter()
            .filter(|call| !skipped.contains(call.id.as_deref().unwrap_or("")))
            .collect();
        let mut command = Command::new().update("messages", Value::new(update));
        if running.is_empty() {
            return Ok(command.goto(model_node));
        }
        // The state the calls run in: this one, with the reviewed messages.
        let mut reviewed = ChannelValues::default();
        for (key, value) in state.pairs() {
            let value = if &**key == "messages" {
                Value::new(messages.clone())
            } else {
                value.clone()
            };
            reviewed.push(key.clone(), value);
        }
        let state = Value::new(reviewed);
        for call in running {
            let arg = ToolCallWithContext::new(call.clone(), state.clone());
            command = command.goto(Send::new("tools", arg));
        }
        Ok(command)
    }

    fn check_allowed(&self, call: &ToolCall, answer: &HumanResponse) -> Result<(), NodeError> {
        let allowed = match answer {
            HumanResponse::Accept => self.config.allow_accept,
            HumanResponse::Ignore => self.config.allow_ignore,
            HumanResponse::Response(_) => self.config.allow_respond,
            HumanResponse::Edit(_) => self.config.allow_edit,
        };
        if allowed {
            Ok(())
        } else {
            Err(NodeError::new(
                "ValueError",
                format!(
                    "the reviewer answered `{}` for the call of `{}`, which its review does not allow",
                    answer.kind(),
                    call.name
                ),
            ))
        }
    }
}

/// A result of `call` the tool did not produce, with its id given here so
/// the state the calls are sent with and the stored one agree.
fn tool_message(call: &ToolCall, text: String) -> Message {
    let mut message = ToolMessage::new(text, call.id.clone().unwrap_or_default());
    message.name = Some(call.name.clone());
    message.id = Some(stategraph_core::random_uuid());
    message.into()
}
