//! The agent's model call: which model, what it is sent, what it answers.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use stategraph_core::Value;
use stategraph_graph::{ChannelValues, NodeError, TaskContext};
use stategraph_llm::{
    AiMessage, CallOptions, ChatModel, Message, OutputSchema, SharedChatModel, ToolSchema,
};

use super::NEED_MORE_STEPS;
use crate::{HistoryRepair, repair_history};

/// The agent node's model call.
#[derive(Clone)]
pub(super) struct ModelCall {
    pub(super) model: SharedChatModel,
    // Shared: the node clones its call for every run.
    pub(super) schemas: Arc<[ToolSchema]>,
    pub(super) select: Option<ModelSelector>,
    pub(super) prompt: Prompt,
    pub(super) repair: HistoryRepair,
    // Whether a pre-model hook may give `llm_input_messages`.
    pub(super) hook_input: bool,
}

impl ModelCall {
    pub(super) fn run(
        self,
        state: ChannelValues,
        ctx: TaskContext,
    ) -> impl Future<Output = Result<ChannelValues, NodeError>> + std::marker::Send {
        let chosen = self.select.as_ref().map(|select| (select.0)(&state, &ctx));
        async move {
            let model: SharedChatModel = match chosen {
                Some(chosen) => Arc::new(chosen.await?.bind_tools(self.schemas.iter().cloned())),
                None => self.model,
            };
            // What the pre-model hook chose to show the model, else the
            // conversation.
            let hook_input = match self.hook_input {
                true => messages_at(&state, "llm_input_messages")?,
                false => Arc::new(Vec::new()),
            };
            // Every tool call answered once before the model sees the
            // conversation (borrowed when it already is). Repair works on
            // the conversation only: a window the hook chose goes to the
            // model as it is (a result whose call is outside it included),
            // as in LangGraph, which only checks that every call in it has a
            // result (`HistoryRepair::Error`).
            let window = !hook_input.is_empty();
            let input = if window {
                hook_input
            } else {
                messages_at(&state, "messages")?
            };
            let conversation = if window && self.repair != HistoryRepair::Error {
                Cow::Borrowed(input.as_slice())
            } else {
                repair_history(&input, self.repair)?
            };
            // Without a prompt the model reads the conversation itself: no
            // copy of it per call.
            let prompted = self.prompt.apply(&conversation);
            let messages = prompted.as_deref().unwrap_or(&conversation);
            let answer = model.invoke(messages, &CallOptions::default()).await?;
            let answer = out_of_steps(answer, ctx.remaining_steps());
            let answer: Vec<Message> = vec![answer.into()];
            Ok(ChannelValues::single("messages", Value::new(answer)))
        }
    }
}

/// Chooses a model per call ([`ReactAgent::dynamic_model`]).
pub(super) type SelectModel = dyn Fn(&ChannelValues, &TaskContext) -> BoxFuture<'static, Result<SharedChatModel, NodeError>>
    + std::marker::Send
    + Sync;

/// A [`SelectModel`] function (shown as `ModelSelector(..)`).
#[derive(Clone)]
pub(super) struct ModelSelector(pub(super) Arc<SelectModel>);

impl std::fmt::Debug for ModelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelSelector(..)")
    }
}

/// A function making the messages sent from the conversation.
pub(super) type PromptFn = dyn Fn(&[Message]) -> Vec<Message> + std::marker::Send + Sync;

/// What the model is sent besides the conversation.
#[derive(Clone, Default)]
pub(super) enum Prompt {
    #[default]
    None,
    /// A system message first.
    System(Message),
    /// The messages a function makes of the conversation.
    Fn(Arc<PromptFn>),
}

impl Prompt {
    /// The messages to send, when they are not the conversation itself.
    pub(super) fn apply(&self, conversation: &[Message]) -> Option<Vec<Message>> {
        match self {
            Self::None => None,
            Self::System(prompt) => {
                let mut messages = Vec::with_capacity(conversation.len() + 1);
                messages.push(prompt.clone());
                messages.extend(conversation.iter().cloned());
                Some(messages)
            }
            Self::Fn(prompt) => Some(prompt(conversation)),
        }
    }
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::System(message) => f.debug_tuple("System").field(message).finish(),
            Self::Fn(_) => f.write_str("Fn(..)"),
        }
    }
}

/// `model`'s answer to `messages` as JSON fitting `schema`.
pub(super) async fn structured_answer(
    model: SharedChatModel,
    schema: OutputSchema,
    messages: Vec<Message>,
) -> Result<serde_json::Value, NodeError> {
    let options = CallOptions::default();
    Ok(model
        .invoke_structured(&messages, &options, &schema)
        .await?)
}

/// The messages at `key` of an agent state (shared, not copied, when the
/// channel holds them live); none when the key is unset.
pub(super) fn messages_at(
    state: &ChannelValues,
    key: &str,
) -> Result<Arc<Vec<Message>>, NodeError> {
    match state.get(key) {
        Some(value) => Ok(value.clone().decode::<Vec<Message>>()?),
        None => Ok(Arc::new(Vec::new())),
    }
}

/// The model's answer, or LangGraph's "need more steps" answer when it
/// calls tools (invalid calls too: they are answered in the tools step)
/// with fewer than two steps left (no room for the tools and another model
/// call).
fn out_of_steps(answer: AiMessage, remaining_steps: i64) -> AiMessage {
    let calls = !answer.tool_calls.is_empty() || !answer.invalid_tool_calls.is_empty();
    if remaining_steps < 2 && calls {
        let mut sorry = AiMessage::new(NEED_MORE_STEPS);
        sorry.id = answer.id;
        sorry
    } else {
        answer
    }
}
