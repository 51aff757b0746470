//! Stream chunks: their modes, namespaces and payloads.

use std::fmt;
use std::sync::Arc;

use crate::channel_values::ChannelValues;
use serde::ser::{Serialize, SerializeTuple, Serializer};
use stategraph_core::JsonMap;
use stategraph_core::Value;
use stategraph_llm::{AiMessageChunk, Message};
use std::borrow::Cow;

/// What a run streams. Several modes can be requested at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamMode {
    /// The full state after every superstep.
    Values,
    /// `{node: update}` for every finished task.
    Updates,
    /// Whatever nodes send through their stream writer.
    Custom,
    /// Task starts and results.
    Tasks,
    /// Checkpoints as they are created.
    Checkpoints,
    /// Tasks and checkpoints, wrapped with step and type.
    Debug,
    /// LLM tokens (with the LLM layer).
    Messages,
    /// Tool calls as they start, stream output, finish or fail (LangGraph's
    /// `tools` mode; `ToolNode` writes them).
    Tools,
}

impl StreamMode {
    /// LangGraph's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Values => "values",
            Self::Updates => "updates",
            Self::Custom => "custom",
            Self::Tasks => "tasks",
            Self::Checkpoints => "checkpoints",
            Self::Debug => "debug",
            Self::Messages => "messages",
            Self::Tools => "tools",
        }
    }

    pub(crate) fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of stream modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode.
    pub const NONE: Self = Self(0);

    /// Whether `mode` is in the set.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// Adds a mode.
    #[must_use]
    pub fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode.bit())
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modes in either set.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self(mode.bit())
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().fold(Self::NONE, Self::with)
    }
}

impl std::ops::BitOr for StreamMode {
    type Output = StreamModes;
    fn bitor(self, other: Self) -> StreamModes {
        StreamModes::from(self).with(other)
    }
}

impl std::ops::BitOr<StreamMode> for StreamModes {
    type Output = StreamModes;
    fn bitor(self, other: StreamMode) -> StreamModes {
        self.with(other)
    }
}

/// The subgraph path of a chunk (`["node:task_id", ...]`), empty for the
/// root graph. Reads as a `[String]` slice; the root graph's empty path is
/// held without an allocation, so copying it into every chunk costs nothing.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Namespace(Option<Arc<[String]>>);

impl Namespace {
    /// The root graph's empty path.
    pub const ROOT: Self = Self(None);
}

impl std::ops::Deref for Namespace {
    type Target = [String];

    fn deref(&self) -> &[String] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Vec<String>> for Namespace {
    fn from(labels: Vec<String>) -> Self {
        if labels.is_empty() {
            Self::ROOT
        } else {
            Self(Some(Arc::from(labels)))
        }
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Namespace {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// One item of a run's stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamChunk {
    /// The subgraph path (`["node:task_id", ...]`), empty for the root graph.
    pub namespace: Namespace,
    /// The mode that produced the chunk.
    pub mode: StreamMode,
    /// The payload, shaped as LangGraph's.
    pub data: Value,
}

impl StreamChunk {
    /// The chunk as LangGraph prints it for one mode: the payload alone.
    pub fn to_json(&self) -> serde_json::Value {
        self.data.to_json().unwrap_or(serde_json::Value::Null)
    }

    /// The message of a `messages` chunk.
    pub fn message(&self) -> Option<&crate::chunk::MessageEvent> {
        self.data.downcast_ref()
    }
}

/// The payload of an `updates` chunk: `{node: update}`.
#[derive(Clone, Debug)]
pub struct NodeUpdate {
    /// The node that wrote.
    pub node: Arc<str>,
    /// What it wrote to the stream channels.
    pub update: UpdatePayload,
    /// Whether the writes came from the node cache (shown as
    /// `"__metadata__": {"cached": true}`).
    pub cached: bool,
}

/// What a node wrote to the stream channels, shaped as LangGraph shows it.
#[derive(Clone, Debug)]
pub enum UpdatePayload {
    /// Nothing (`None`).
    None,
    /// One value (single stream channel).
    Value(Value),
    /// Several values for a single stream channel.
    Values(Vec<Value>),
    /// `{key: value}`.
    Map(ChannelValues),
    /// A list of one-key maps, when a key was written twice.
    Maps(Vec<ChannelValues>),
}

impl Serialize for NodeUpdate {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1 + usize::from(self.cached)))?;
        match &self.update {
            UpdatePayload::None => map.serialize_entry(&*self.node, &())?,
            UpdatePayload::Value(value) => map.serialize_entry(&*self.node, value)?,
            UpdatePayload::Values(values) => map.serialize_entry(&*self.node, values)?,
            UpdatePayload::Map(values) => map.serialize_entry(&*self.node, values)?,
            UpdatePayload::Maps(values) => map.serialize_entry(&*self.node, values)?,
        }
        if self.cached {
            map.serialize_entry("__metadata__", &serde_json::json!({"cached": true}))?;
        }
        map.end()
    }
}

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
