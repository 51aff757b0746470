//! The `messages` stream mode (LangGraph's `StreamMessagesHandler`): the
//! chunks of chat models called inside a task, and the messages of a
//! task's output that the stream has not carried yet, each with the task's
//! metadata.
//!
//! Dedupe works as LangGraph's: the ids of messages a task reads and of
//! messages already sent are remembered per stream; a token chunk is always
//! sent, a whole message only when its id is new.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde::ser::{Serialize, SerializeTuple, Serializer};
use serde_json::Value as Json;
use stategraph_core::{JsonMap, List, Value};
use stategraph_llm::observe::{ModelCall, ModelObserver, SharedObserver};
use stategraph_llm::{AiMessage, AiMessageChunk, Message};

use super::{Loop, Task};
use crate::node::{Sink, StateValues};
use crate::types::StreamMode;

/// The ids of the messages one stream has carried or its tasks have read.
pub(crate) type SeenMessages = Arc<Mutex<HashSet<String>>>;

/// A `messages` chunk: a message, or a token chunk of one, and where it
/// came from. Serializes as LangGraph's `(message, metadata)` pair.
///
/// The metadata holds `langgraph_step`, `langgraph_node`,
/// `langgraph_triggers`, `langgraph_path`, `langgraph_checkpoint_ns`, the
/// run's `thread_id` and metadata, and `ls_integration`; chunks of a model
/// call add `checkpoint_ns`, `ls_provider`, `ls_model_type`,
/// `ls_model_name` and the call's `tags`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MessageEvent {
    /// The message or chunk.
    pub message: StreamedMessage,
    /// Where it came from.
    pub metadata: JsonMap,
}

/// What a `messages` chunk carries.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum StreamedMessage {
    /// A chunk of a streaming model's answer (LangChain's `AIMessageChunk`).
    Chunk(Box<AiMessageChunk>),
    /// A whole message: the answer of a model that does not stream, or a
    /// message of a node's output.
    Message(Message),
}

impl StreamedMessage {
    /// The message id.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::Chunk(chunk) => chunk.id.as_deref(),
            Self::Message(message) => message.id(),
        }
    }

    /// The text content.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Chunk(chunk) => chunk.content.text(),
            Self::Message(message) => message.text(),
        }
    }
}

impl Serialize for StreamedMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Chunk(chunk) => chunk.serialize(serializer),
            Self::Message(message) => message.serialize(serializer),
        }
    }
}

impl Serialize for MessageEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut pair = serializer.serialize_tuple(2)?;
        pair.serialize_element(&self.message)?;
        pair.serialize_element(&self.metadata)?;
        pair.end()
    }
}

/// Where one task's messages go: its sinks that want them, with its
/// metadata.
pub(super) struct TaskMessages {
    sinks: Vec<Sink>,
    metadata: JsonMap,
    /// The outermost task's namespace (LangChain keeps the first
    /// `checkpoint_ns` it sees in inherited metadata).
    root_namespace: String,
}

impl TaskMessages {
    fn send(&self, message: &StreamedMessage, metadata: &JsonMap, dedupe: bool) {
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

    fn model_metadata(&self, call: &ModelCall<'_>) -> JsonMap {
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
    fn node_metadata(&self) -> JsonMap {
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
    fn on_chunk(&self, call: &ModelCall<'_>, chunk: &AiMessageChunk) {
        let message = StreamedMessage::Chunk(Box::new(chunk.clone()));
        self.send(&message, &self.model_metadata(call), false);
    }

    fn on_message(&self, call: &ModelCall<'_>, message: &AiMessage) {
        let message = StreamedMessage::Message(Message::from(message.clone()));
        self.send(&message, &self.model_metadata(call), true);
    }
}

impl Loop {
    /// The observer scope for a task's node future: its own observer when a
    /// sink wants `messages`; `Some(None)` to hide an outer task's observer
    /// from this run's tasks (a subgraph whose chunks are not streamed);
    /// `None` when nothing observes.
    pub(super) fn task_observer(&self, task: &mut Task) -> Option<SharedObserver> {
        if self.run.wants(StreamMode::Messages)
            && let Some(messages) = self.task_messages(task)
        {
            let messages = Arc::new(messages);
            task.messages = Some(messages.clone());
            let observer: Arc<dyn ModelObserver> = messages;
            return Some(Some(observer));
        }
        stategraph_llm::observe::is_observed().then_some(None)
    }

    /// Remembers the ids of the messages a task about to run reads, so its
    /// output does not send them again.
    pub(super) fn see_input_messages(&self, task: &Task) {
        let sinks = self.message_sinks();
        if sinks.is_empty() || self.graph.nodes[task.node].hidden {
            return;
        }
        let Some(input) = &task.input else {
            return;
        };
        let mut ids = Vec::new();
        match input.downcast_ref::<StateValues>() {
            Some(values) => {
                for (_, value) in values.pairs() {
                    input_message_ids(value, &mut ids);
                }
            }
            None => input_message_ids(input, &mut ids),
        }
        if ids.is_empty() {
            return;
        }
        for sink in sinks {
            lock(&sink.seen).extend(ids.iter().cloned());
        }
    }

    /// Sends the messages of a finished task's writes that the stream has
    /// not carried yet, whole.
    pub(super) fn send_output_messages(&self, task: &Task) {
        if !self.run.wants(StreamMode::Messages) {
            return;
        }
        let mut found = Vec::new();
        for (_, value) in &task.writes {
            messages_in(value, &mut |message| found.push(message.clone()));
        }
        if found.is_empty() {
            return;
        }
        let Some(messages) = task
            .messages
            .clone()
            .or_else(|| self.task_messages(task).map(Arc::new))
        else {
            return;
        };
        let metadata = messages.node_metadata();
        for mut message in found {
            if message.id().is_none() {
                message.set_id(stategraph_core::random_uuid());
            }
            messages.send(&StreamedMessage::Message(message), &metadata, true);
        }
    }

    fn message_sinks(&self) -> Vec<Sink> {
        self.run
            .sinks()
            .filter(|sink| sink.wants(StreamMode::Messages))
            .cloned()
            .collect()
    }

    /// The task's message sinks and metadata; `None` for hidden nodes.
    fn task_messages(&self, task: &Task) -> Option<TaskMessages> {
        if self.graph.nodes[task.node].hidden {
            return None;
        }
        let sinks = self.message_sinks();
        let name = self.graph.shape.node_name(task.node);
        let namespace = match &task.pad {
            Some(pad) => pad.namespace().to_owned(),
            None => {
                let own = format!("{name}:{}", self.task_id(task));
                let outer = sinks.first().map(|sink| sink.namespace.join("|"));
                match outer {
                    Some(outer) if !outer.is_empty() => format!("{outer}|{own}"),
                    _ => own,
                }
            }
        };
        let config = &self.run.config;
        let mut metadata = JsonMap::new();
        if let Some(thread) = config.thread_id() {
            metadata.insert("thread_id".into(), thread.into());
        }
        for (key, value) in &config.configurable.extra {
            let primitive = matches!(value, Json::String(_) | Json::Number(_) | Json::Bool(_));
            if primitive && !key.starts_with("__") {
                metadata.insert(key.clone(), value.clone());
            }
        }
        for (key, value) in &config.metadata {
            metadata.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let triggers: Vec<Json> = self
            .task_triggers(task)
            .iter()
            .map(|t| Json::from(&**t))
            .collect();
        metadata.insert("langgraph_step".into(), self.step.into());
        metadata.insert("langgraph_node".into(), (**name).into());
        metadata.insert("langgraph_triggers".into(), triggers.into());
        metadata.insert(
            "langgraph_path".into(),
            super::state::task_path_json(&task.path, name),
        );
        metadata.insert("langgraph_checkpoint_ns".into(), namespace.clone().into());
        // The node's own metadata last, as LangGraph's task config has it.
        for (key, value) in &self.graph.nodes[task.node].settings().metadata {
            metadata.insert(key.clone(), value.clone());
        }
        let root_namespace = namespace.split('|').next().unwrap_or_default().to_owned();
        Some(TaskMessages {
            sinks,
            metadata,
            root_namespace,
        })
    }
}

/// Calls `found` on every message in a written value: a message, or a list
/// of them.
fn messages_in(value: &Value, found: &mut impl FnMut(&Message)) {
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
fn input_message_ids(value: &Value, ids: &mut Vec<String>) {
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

fn lock(seen: &SeenMessages) -> std::sync::MutexGuard<'_, HashSet<String>> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}
