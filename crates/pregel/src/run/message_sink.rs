//! Where one task's messages go (`TaskMessages`): the sinks of a task that
//! want the `messages` mode, with the task's metadata; it observes the
//! task's model calls.

use std::collections::HashSet;
use std::sync::PoisonError;

use serde_json::Value as Json;
use stategraph_core::{JsonMap, List, Value};
use stategraph_llm::observe::{ModelCall, ModelObserver};
use stategraph_llm::{AiMessage, AiMessageChunk, Message};

use crate::chunk::{MessageEvent, StreamMode, StreamedMessage};
use crate::run_info::{SeenMessages, Sink};

/// Where one task's messages go: its sinks that want them, with its
/// metadata.
pub(super) struct TaskMessages {
    pub(super) sinks: Vec<Sink>,
    pub(super) metadata: JsonMap,
    /// The outermost task's namespace (LangChain keeps the first
    /// `checkpoint_ns` it sees in inherited metadata).
    pub(super) root_namespace: String,
}

impl TaskMessages {
    pub(super) fn send(&self, message: &StreamedMessage, metadata: &JsonMap, dedupe: bool) {
        for sink in &self.sinks {
            if let Some(id) = message.id() {
                let new = lock(&sink.seen).insert(id.to_owned());
                if dedupe && !new {
                    continue;
                }
            }
            let event = MessageEvent {
                message: message.clone(),
                metadata: metadata.clone(),
            };
            sink.push(StreamMode::Messages, Value::new(event));
        }
    }

    pub(super) fn model_metadata(&self, call: &ModelCall<'_>) -> JsonMap {
        let mut metadata = self.metadata.clone();
        let mut set = |key: &str, value: Json| {
            metadata.insert(key.to_owned(), value);
        };
        set("ls_integration", "langchain_chat_model".into());
        set("checkpoint_ns", self.root_namespace.clone().into());
        set("ls_provider", call.provider.into());
        set("ls_model_type", "chat".into());
        set("ls_model_name", call.model_name.into());
        if !call.tags.is_empty() {
            set("tags", call.tags.to_vec().into());
        }
        metadata
    }

    /// A node's own metadata carries `checkpoint_ns` only when inherited
    /// from an outer task (LangGraph's output inside a subgraph).
    pub(super) fn node_metadata(&self) -> JsonMap {
        let mut metadata = self.metadata.clone();
        metadata.insert("ls_integration".into(), "langgraph".into());
        let own = metadata
            .get("langgraph_checkpoint_ns")
            .and_then(Json::as_str);
        if own != Some(self.root_namespace.as_str()) {
            metadata.insert("checkpoint_ns".into(), self.root_namespace.clone().into());
        }
        metadata
    }
}

impl ModelObserver for TaskMessages {
    fn on_pushed(&self, message: &Message) {
        // Sent even if seen; its id is then seen, so the task's output
        // does not send it again.
        let message = StreamedMessage::Message(message.clone());
        self.send(&message, &self.node_metadata(), false);
    }

    fn on_chunk(&self, call: &ModelCall<'_>, chunk: &AiMessageChunk) {
        let message = StreamedMessage::Chunk(Box::new(chunk.clone()));
        self.send(&message, &self.model_metadata(call), false);
    }

    fn on_message(&self, call: &ModelCall<'_>, message: &AiMessage) {
        let message = StreamedMessage::Message(Message::from(message.clone()));
        self.send(&message, &self.model_metadata(call), true);
    }
}

/// Calls `found` on every message in a written value: a message, or a list
/// of them.
pub(super) fn messages_in(value: &Value, found: &mut impl FnMut(&Message)) {
    if let Some(message) = value.downcast_ref::<Message>() {
        found(message);
    } else if let Some(messages) = value.downcast_ref::<Vec<Message>>() {
        messages.iter().for_each(found);
    } else if let Some(messages) = value.downcast_ref::<List<Message>>() {
        messages.iter().for_each(found);
    }
}

/// The ids of the messages in a value a task reads: live messages, or
/// messages still in their JSON form (objects with an `id` and a
/// `content`), alone or in a list.
pub(super) fn input_message_ids(value: &Value, ids: &mut Vec<String>) {
    messages_in(value, &mut |message| {
        if let Some(id) = message.id() {
            ids.push(id.to_owned());
        }
    });
    let json_id = |item: &Json| {
        let object = item.as_object()?;
        object.get("content")?;
        object.get("id")?.as_str().map(str::to_owned)
    };
    match value.as_json() {
        Some(Json::Array(items)) => ids.extend(items.iter().filter_map(json_id)),
        Some(item) => ids.extend(json_id(item)),
        None => {}
    }
}

pub(super) fn lock(seen: &SeenMessages) -> std::sync::MutexGuard<'_, HashSet<String>> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}
