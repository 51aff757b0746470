//! Chat messages: system, human, AI (with tool calls), tool results and
//! removals, and their content.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use stategraph_core::JsonMap;

use crate::Result;
use crate::coerce;

/// The id of a [`RemoveMessage`] that removes every message before it
/// (LangGraph's `REMOVE_ALL_MESSAGES`).
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// What a message says: plain text, or a list of content blocks (text,
/// images, provider-specific parts).
///
/// Serializes as a JSON string or as a JSON list of blocks.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks, in order.
    Blocks(Vec<ContentBlock>),
}

/// One part of a multi-part [`Content`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// A text part: `{"type": "text", "text": ...}`.
    Text(String),
    /// Any other part (an image, audio, a text part with extra keys, ...),
    /// kept verbatim.
    Other(serde_json::Value),
}

/// A tool call requested by the model, with parsed arguments.
///
/// Serializes as LangChain's `{"name", "args", "id", "type": "tool_call"}`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id, echoed back by the [`ToolMessage`] that answers it.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object).
    pub args: serde_json::Value,
}

/// How deep the arguments of a tool call may nest (objects and lists
/// counted, the arguments object itself being level 1) before the call is
/// an [`InvalidToolCall`].
///
/// LangChain's limit is Python's recursion limit (about 1,000 levels, less
/// the stack already in use). Ours is fixed and lower so a stored
/// conversation always reads back: arguments sit a few levels deep in a
/// checkpoint or a pending tool task, and serde_json reads at most 128
/// levels. Deeper text is refused before any recursive parser sees it, so
/// 100,000 opening brackets cost one linear scan, not the stack.
pub const TOOL_ARGS_MAX_DEPTH: usize = 100;

/// A tool call whose arguments could not be parsed (for example a model that
/// produced broken JSON). It is kept, not dropped, so the model can be told.
///
/// Serializes as LangChain's `{"name", "args", "id", "error", "type":
/// "invalid_tool_call"}`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct InvalidToolCall {
    /// The call's id.
    pub id: Option<String>,
    /// The tool's name, if the model gave one.
    pub name: Option<String>,
    /// The raw argument text.
    pub args: Option<String>,
    /// Why the call is invalid.
    pub error: Option<String>,
}

/// Token counts of one model call (LangChain's `usage_metadata`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UsageMetadata {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input plus output tokens.
    #[serde(default)]
    pub total_tokens: u64,
    /// Breakdown of input tokens (`cache_read`, `audio`, ...).
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub input_token_details: JsonMap,
    /// Breakdown of output tokens (`reasoning`, `audio`, ...).
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub output_token_details: JsonMap,
}

/// Whether a tool ran successfully.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool returned a result.
    #[default]
    Success,
    /// The tool failed; the content says why.
    Error,
}

/// Instructions for the model.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SystemMessage {
    /// The instructions.
    pub content: Content,
    /// The message id (`None` until `add_messages` assigns one).
    pub id: Option<String>,
    /// An optional author name.
    pub name: Option<String>,
    /// Provider-specific extra fields.
    pub additional_kwargs: JsonMap,
}

/// A message from the user.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct HumanMessage {
    /// What the user said.
    pub content: Content,
    /// The message id (`None` until `add_messages` assigns one).
    pub id: Option<String>,
    /// An optional author name.
    pub name: Option<String>,
    /// Provider-specific extra fields.
    pub additional_kwargs: JsonMap,
}

/// A message from the model: text and/or tool calls.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AiMessage {
    /// What the model said.
    pub content: Content,
    /// The message id.
    pub id: Option<String>,
    /// An optional author name.
    pub name: Option<String>,
    /// The tools the model wants called, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls whose arguments could not be parsed.
    pub invalid_tool_calls: Vec<InvalidToolCall>,
    /// Token counts, when the provider reports them.
    pub usage_metadata: Option<UsageMetadata>,
    /// Provider-specific extra fields.
    pub additional_kwargs: JsonMap,
    /// Provider metadata about the response (model name, finish reason, ...).
    pub response_metadata: JsonMap,
}

/// The result of a tool call, sent back to the model.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolMessage {
    /// The tool's output, as the model sees it.
    pub content: Content,
    /// The message id.
    pub id: Option<String>,
    /// The tool's name.
    pub name: Option<String>,
    /// The id of the [`ToolCall`] this answers.
    pub tool_call_id: String,
    /// Whether the tool succeeded.
    pub status: ToolStatus,
    /// Output kept for the application, not shown to the model.
    pub artifact: Option<serde_json::Value>,
    /// Provider-specific extra fields.
    pub additional_kwargs: JsonMap,
}

/// Deletes the message with this id when merged by
/// [`add_messages`](crate::add_messages); the id [`REMOVE_ALL_MESSAGES`]
/// deletes every message before it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoveMessage {
    /// The id of the message to delete.
    pub id: String,
}

/// A chat message of any kind.
///
/// Each variant holds its message behind an `Arc`, so cloning a message (or a
/// whole conversation) is a reference-count increment per message, however
/// large the content. Change a message with [`Arc::make_mut`], which copies
/// only a message that is still shared.
///
/// Serializes in LangChain's shape, `{"type": "human" | "ai" | "system" |
/// "tool" | "remove", "content", "id", ...}`, with optional fields only when
/// set. Deserializes from that shape and from everything LangChain's
/// `convert_to_messages` accepts: OpenAI-style `{"role": "user" | "assistant"
/// | "system" | "developer" | "tool", "content", "tool_calls": [...]}` dicts
/// (tool call arguments given as JSON text are parsed as langchain-openai
/// parses them, see the crate docs; text that does not parse becomes an
/// [`InvalidToolCall`]), a plain string (a human
/// message), a `["role", content]` pair, LangChain's `{"type", "data"}` and
/// `{"lc": 1, "type": "constructor", ...}` dumps, and the golden traces'
/// `{"$msg": "HumanMessage", ...}` form.
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::Message;
///
/// let messages: Vec<Message> = serde_json::from_value(json!([
///     "hi",
///     ["assistant", "hello"],
///     {"role": "assistant", "content": null, "tool_calls": [
///         {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}}
///     ]},
///     {"role": "tool", "content": "1", "tool_call_id": "c1"},
/// ]))?;
/// assert_eq!(messages[0].text(), "hi");
/// assert_eq!(messages[1].message_type(), "ai");
/// assert_eq!(messages[2].tool_calls()[0].args, json!({"a": 1}));
/// assert_eq!(
///     serde_json::to_value(&messages[3])?,
///     json!({"type": "tool", "content": "1", "id": null, "tool_call_id": "c1"}),
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model.
    System(Arc<SystemMessage>),
    /// A message from the user.
    Human(Arc<HumanMessage>),
    /// A message from the model.
    Ai(Arc<AiMessage>),
    /// The result of a tool call.
    Tool(Arc<ToolMessage>),
    /// A deletion marker for `add_messages`.
    Remove(Arc<RemoveMessage>),
}

static EMPTY_CONTENT: Content = Content::Text(String::new());

impl Content {
    /// The text of the content: the text itself, or the text blocks joined
    /// (LangChain's `.text`). Non-text blocks are skipped.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Text(text) => Cow::Borrowed(text),
            Self::Blocks(blocks) => {
                let mut texts = blocks.iter().filter_map(ContentBlock::as_text);
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut text = format!("{first}{second}");
                        texts.for_each(|t| text.push_str(t));
                        Cow::Owned(text)
                    }
                }
            }
        }
    }

    /// The text, when the content is plain text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Blocks(_) => None,
        }
    }

    /// Whether there is nothing: empty text or no blocks.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(text) => text.is_empty(),
            Self::Blocks(blocks) => blocks.is_empty(),
        }
    }

    /// Appends `other`: text to text concatenates; otherwise the blocks are
    /// appended, and two text parts that meet are joined into one.
    pub fn push(&mut self, other: Content) {
        match (&mut *self, other) {
            (Self::Text(text), Self::Text(more)) => text.push_str(&more),
            (_, other) if other.is_empty() => {}
            (this, other) if this.is_empty() => *this = other,
            (this, other) => {
                let mut blocks = std::mem::replace(this, Self::Blocks(Vec::new())).into_blocks();
                for block in other.into_blocks() {
                    match (blocks.last_mut(), block) {
                        (Some(ContentBlock::Text(text)), ContentBlock::Text(more)) => {
                            text.push_str(&more);
                        }
                        (_, block) => blocks.push(block),
                    }
                }
                *this = Self::Blocks(blocks);
            }
        }
    }

    /// The content as blocks (plain text becomes one text block, empty text
    /// none).
    pub fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            Self::Text(text) if text.is_empty() => Vec::new(),
            Self::Text(text) => vec![ContentBlock::Text(text)],
            Self::Blocks(blocks) => blocks,
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<ContentBlock>> for Content {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        Self::Blocks(blocks)
    }
}

impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Blocks(blocks) => blocks.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        coerce::content(value).map_err(serde::de::Error::custom)
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// An image given by URL (or `data:` URL): `{"type": "image_url",
    /// "image_url": {"url": ...}}`.
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::Other(serde_json::json!({"type": "image_url", "image_url": {"url": url.into()}}))
    }

    /// The text of a text block (also of a verbatim block of type `text`).
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Other(value) if value.get("type").and_then(|t| t.as_str()) == Some("text") => {
                value.get("text").and_then(|t| t.as_str())
            }
            Self::Other(_) => None,
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                map.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(coerce::content_block)
    }
}

impl ToolCall {
    /// A call of `name` with `args` and no id.
    pub fn new(name: impl Into<String>, args: serde_json::Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            args,
        }
    }

    /// Sets the call's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("args", &self.args)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "tool_call")?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        match coerce::tool_call(value).map_err(serde::de::Error::custom)? {
            Ok(call) => Ok(call),
            Err(invalid) => Err(serde::de::Error::custom(
                invalid
                    .error
                    .unwrap_or_else(|| "invalid tool call".to_owned()),
            )),
        }
    }
}

impl InvalidToolCall {
    /// An invalid call with its raw arguments and the reason.
    pub fn new(
        id: Option<String>,
        name: Option<String>,
        args: Option<String>,
        error: impl Into<String>,
    ) -> Self {
        Self {
            id,
            name,
            args,
            error: Some(error.into()),
        }
    }
}

impl Serialize for InvalidToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("args", &self.args)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("error", &self.error)?;
        map.serialize_entry("type", "invalid_tool_call")?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for InvalidToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        coerce::invalid_tool_call(value).map_err(serde::de::Error::custom)
    }
}

impl UsageMetadata {
    /// Counts with a total of `input + output`.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens + output_tokens,
            ..Self::default()
        }
    }

    /// Adds another call's counts (details are summed key by key).
    pub fn add(&mut self, other: &UsageMetadata) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        add_details(&mut self.input_token_details, &other.input_token_details);
        add_details(&mut self.output_token_details, &other.output_token_details);
    }
}

fn add_details(into: &mut JsonMap, from: &JsonMap) {
    for (key, value) in from {
        let sum = match (into.get(key).and_then(|v| v.as_u64()), value.as_u64()) {
            (Some(a), Some(b)) => serde_json::Value::from(a + b),
            _ => value.clone(),
        };
        into.insert(key.clone(), sum);
    }
}

macro_rules! common_builders {
    ($ty:ident) => {
        impl $ty {
            /// Sets the message id.
            #[must_use]
            pub fn with_id(mut self, id: impl Into<String>) -> Self {
                self.id = Some(id.into());
                self
            }

            /// Sets the author name.
            #[must_use]
            pub fn with_name(mut self, name: impl Into<String>) -> Self {
                self.name = Some(name.into());
                self
            }

            /// Sets one provider-specific extra field.
            #[must_use]
            pub fn with_additional_kwarg(
                mut self,
                key: impl Into<String>,
                value: serde_json::Value,
            ) -> Self {
                self.additional_kwargs.insert(key.into(), value);
                self
            }
        }
    };
}

common_builders!(SystemMessage);
common_builders!(HumanMessage);
common_builders!(AiMessage);
common_builders!(ToolMessage);

impl SystemMessage {
    /// A system message without id.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

impl HumanMessage {
    /// A human message without id.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

impl AiMessage {
    /// An AI message without id or tool calls.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// Sets the tool calls.
    #[must_use]
    pub fn with_tool_calls(mut self, tool_calls: Vec<ToolCall>) -> Self {
        self.tool_calls = tool_calls;
        self
    }

    /// Sets the invalid tool calls.
    #[must_use]
    pub fn with_invalid_tool_calls(mut self, invalid: Vec<InvalidToolCall>) -> Self {
        self.invalid_tool_calls = invalid;
        self
    }

    /// Sets the token counts.
    #[must_use]
    pub fn with_usage(mut self, usage: UsageMetadata) -> Self {
        self.usage_metadata = Some(usage);
        self
    }

    /// The text of the content.
    pub fn text(&self) -> Cow<'_, str> {
        self.content.text()
    }
}

impl ToolMessage {
    /// A successful tool result answering the call `tool_call_id`.
    pub fn new(content: impl Into<Content>, tool_call_id: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
            ..Self::default()
        }
    }

    /// Sets the status.
    #[must_use]
    pub fn with_status(mut self, status: ToolStatus) -> Self {
        self.status = status;
        self
    }

    /// Sets the artifact.
    #[must_use]
    pub fn with_artifact(mut self, artifact: serde_json::Value) -> Self {
        self.artifact = Some(artifact);
        self
    }
}

impl RemoveMessage {
    /// Removes the message with `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }

    /// Removes every message before this marker.
    pub fn all() -> Self {
        Self::new(REMOVE_ALL_MESSAGES)
    }
}

impl Message {
    /// A human message.
    pub fn human(content: impl Into<Content>) -> Self {
        HumanMessage::new(content).into()
    }

    /// A system message.
    pub fn system(content: impl Into<Content>) -> Self {
        SystemMessage::new(content).into()
    }

    /// An AI message.
    pub fn ai(content: impl Into<Content>) -> Self {
        AiMessage::new(content).into()
    }

    /// A successful tool result answering `tool_call_id`.
    pub fn tool(content: impl Into<Content>, tool_call_id: impl Into<String>) -> Self {
        ToolMessage::new(content, tool_call_id).into()
    }

    /// A marker that deletes the message with `id`.
    pub fn remove(id: impl Into<String>) -> Self {
        RemoveMessage::new(id).into()
    }

    /// A marker that deletes every message before it.
    pub fn remove_all() -> Self {
        RemoveMessage::all().into()
    }

    /// Reads one message from any shape LangChain's coercion accepts (see the
    /// type's documentation).
    ///
    /// # Errors
    /// [`Error::InvalidMessage`](crate::Error::InvalidMessage) naming what is wrong.
    pub fn from_json(value: serde_json::Value) -> Result<Self> {
        coerce::message(value)
    }

    /// The message id, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::System(m) => m.id.as_deref(),
            Self::Human(m) => m.id.as_deref(),
            Self::Ai(m) => m.id.as_deref(),
            Self::Tool(m) => m.id.as_deref(),
            Self::Remove(m) => Some(&m.id),
        }
    }

    /// Sets the message id (copying the message first if it is shared).
    pub fn set_id(&mut self, id: impl Into<String>) {
        let id = id.into();
        match self {
            Self::System(m) => Arc::make_mut(m).id = Some(id),
            Self::Human(m) => Arc::make_mut(m).id = Some(id),
            Self::Ai(m) => Arc::make_mut(m).id = Some(id),
            Self::Tool(m) => Arc::make_mut(m).id = Some(id),
            Self::Remove(m) => Arc::make_mut(m).id = id,
        }
    }

    /// The message with its id set.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.set_id(id);
        self
    }

    /// The author name, if set.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::System(m) => m.name.as_deref(),
            Self::Human(m) => m.name.as_deref(),
            Self::Ai(m) => m.name.as_deref(),
            Self::Tool(m) => m.name.as_deref(),
            Self::Remove(_) => None,
        }
    }

    /// The content (empty for a remove marker).
    pub fn content(&self) -> &Content {
        match self {
            Self::System(m) => &m.content,
            Self::Human(m) => &m.content,
            Self::Ai(m) => &m.content,
            Self::Tool(m) => &m.content,
            Self::Remove(_) => &EMPTY_CONTENT,
        }
    }

    /// The text of the content (see [`Content::text`]).
    pub fn text(&self) -> Cow<'_, str> {
        self.content().text()
    }

    /// LangChain's message type: `system`, `human`, `ai`, `tool` or `remove`.
    pub fn message_type(&self) -> &'static str {
        match self {
            Self::System(_) => "system",
            Self::Human(_) => "human",
            Self::Ai(_) => "ai",
            Self::Tool(_) => "tool",
            Self::Remove(_) => "remove",
        }
    }

    /// LangChain's class name: `SystemMessage`, `HumanMessage`, `AIMessage`,
    /// `ToolMessage` or `RemoveMessage` (what the golden traces print as
    /// `$msg`).
    pub fn class_name(&self) -> &'static str {
        match self {
            Self::System(_) => "SystemMessage",
            Self::Human(_) => "HumanMessage",
            Self::Ai(_) => "AIMessage",
            Self::Tool(_) => "ToolMessage",
            Self::Remove(_) => "RemoveMessage",
        }
    }

    /// The AI message inside, if this is one.
    pub fn as_ai(&self) -> Option<&AiMessage> {
        match self {
            Self::Ai(m) => Some(m),
            _ => None,
        }
    }

    /// The tool message inside, if this is one.
    pub fn as_tool(&self) -> Option<&ToolMessage> {
        match self {
            Self::Tool(m) => Some(m),
            _ => None,
        }
    }

    /// The tool calls of an AI message (empty for every other kind).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Self::Ai(m) => &m.tool_calls,
            _ => &[],
        }
    }

    /// Whether this is a remove marker.
    pub fn is_remove(&self) -> bool {
        matches!(self, Self::Remove(_))
    }

    /// Whether this is the marker that removes every message before it.
    pub fn is_remove_all(&self) -> bool {
        matches!(self, Self::Remove(m) if m.id == REMOVE_ALL_MESSAGES)
    }
}

impl From<SystemMessage> for Message {
    fn from(message: SystemMessage) -> Self {
        Self::System(Arc::new(message))
    }
}

impl From<HumanMessage> for Message {
    fn from(message: HumanMessage) -> Self {
        Self::Human(Arc::new(message))
    }
}

impl From<AiMessage> for Message {
    fn from(message: AiMessage) -> Self {
        Self::Ai(Arc::new(message))
    }
}

impl From<ToolMessage> for Message {
    fn from(message: ToolMessage) -> Self {
        Self::Tool(Arc::new(message))
    }
}

impl From<RemoveMessage> for Message {
    fn from(message: RemoveMessage) -> Self {
        Self::Remove(Arc::new(message))
    }
}

/// A plain string is a human message, as in LangChain.
impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Self::human(text)
    }
}

/// A plain string is a human message, as in LangChain.
impl From<String> for Message {
    fn from(text: String) -> Self {
        Self::human(text)
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.message_type())?;
        map.serialize_entry("content", self.content())?;
        map.serialize_entry("id", &self.id())?;
        if let Some(name) = self.name() {
            map.serialize_entry("name", name)?;
        }
        match self {
            Self::System(m) => extra_kwargs(&mut map, &m.additional_kwargs)?,
            Self::Human(m) => extra_kwargs(&mut map, &m.additional_kwargs)?,
            Self::Ai(m) => {
                if !m.tool_calls.is_empty() {
                    map.serialize_entry("tool_calls", &m.tool_calls)?;
                }
                if !m.invalid_tool_calls.is_empty() {
                    map.serialize_entry("invalid_tool_calls", &m.invalid_tool_calls)?;
                }
                if let Some(usage) = &m.usage_metadata {
                    map.serialize_entry("usage_metadata", usage)?;
                }
                extra_kwargs(&mut map, &m.additional_kwargs)?;
                if !m.response_metadata.is_empty() {
                    map.serialize_entry("response_metadata", &m.response_metadata)?;
                }
            }
            Self::Tool(m) => {
                map.serialize_entry("tool_call_id", &m.tool_call_id)?;
                if m.status != ToolStatus::Success {
                    map.serialize_entry("status", &m.status)?;
                }
                if let Some(artifact) = &m.artifact {
                    map.serialize_entry("artifact", artifact)?;
                }
                extra_kwargs(&mut map, &m.additional_kwargs)?;
            }
            Self::Remove(_) => {}
        }
        map.end()
    }
}

fn extra_kwargs<M: SerializeMap>(map: &mut M, kwargs: &JsonMap) -> Result<(), M::Error> {
    if kwargs.is_empty() {
        Ok(())
    } else {
        map.serialize_entry("additional_kwargs", kwargs)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        coerce::message(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn clones_share_the_content() {
        let big = "x".repeat(36_000);
        let message = Message::tool(big, "c1");
        let copy = message.clone();
        match (&message, &copy) {
            (Message::Tool(a), Message::Tool(b)) => assert!(Arc::ptr_eq(a, b)),
            _ => unreachable!(),
        }
    }

    #[test]
    fn set_id_copies_only_shared_messages() {
        let message = Message::human("hi");
        let mut copy = message.clone();
        copy.set_id("h1");
        assert_eq!(message.id(), None);
        assert_eq!(copy.id(), Some("h1"));
    }

    #[test]
    fn serializes_in_langchain_shape_with_optional_fields_only_when_set() {
        let ai = AiMessage::new("")
            .with_id("a1")
            .with_tool_calls(vec![ToolCall::new("add", json!({"a": 1})).with_id("c1")])
            .with_usage(UsageMetadata::new(3, 4));
        assert_eq!(
            serde_json::to_value(Message::from(ai)).unwrap(),
            json!({
                "type": "ai", "content": "", "id": "a1",
                "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}],
                "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            })
        );
        let tool = ToolMessage::new("boom", "c1")
            .with_status(ToolStatus::Error)
            .with_name("add");
        assert_eq!(
            serde_json::to_value(Message::from(tool)).unwrap(),
            json!({"type": "tool", "content": "boom", "id": null, "name": "add",
                   "tool_call_id": "c1", "status": "error"})
        );
        assert_eq!(
            serde_json::to_value(Message::remove("x")).unwrap(),
            json!({"type": "remove", "content": "", "id": "x"})
        );
    }

    #[test]
    fn every_message_round_trips() {
        let messages = vec![
            Message::system("be brief").with_id("s"),
            Message::from(HumanMessage::new("hi").with_name("ann")),
            Message::from(
                AiMessage::new(vec![
                    ContentBlock::text("a"),
                    ContentBlock::image_url("http://x/y.png"),
                ])
                .with_tool_calls(vec![ToolCall::new("t", json!({})).with_id("c")])
                .with_invalid_tool_calls(vec![InvalidToolCall::new(
                    Some("c2".into()),
                    Some("t".into()),
                    Some("{".into()),
                    "bad json",
                )])
                .with_additional_kwarg("refusal", json!(null)),
            ),
            Message::from(
                ToolMessage::new("r", "c")
                    .with_artifact(json!([1, 2]))
                    .with_status(ToolStatus::Error),
            ),
            Message::remove_all(),
        ];
        let text = serde_json::to_string(&messages).unwrap();
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, messages);
    }

    #[test]
    fn content_text_joins_text_blocks() {
        let content = Content::Blocks(vec![
            ContentBlock::text("a"),
            ContentBlock::image_url("u"),
            ContentBlock::Other(json!({"type": "text", "text": "b", "cache_control": {}})),
        ]);
        assert_eq!(content.text(), "ab");
        assert_eq!(Content::from("x").text(), "x");
    }

    #[test]
    fn content_push_concatenates() {
        let mut content = Content::from("hel");
        content.push("lo".into());
        assert_eq!(content, Content::from("hello"));
        content.push(Content::Blocks(vec![
            ContentBlock::text(" world"),
            ContentBlock::image_url("u"),
        ]));
        assert_eq!(
            content,
            Content::Blocks(vec![
                ContentBlock::text("hello world"),
                ContentBlock::image_url("u")
            ])
        );
        let mut empty = Content::default();
        empty.push(Content::Blocks(vec![ContentBlock::image_url("u")]));
        assert_eq!(empty, Content::Blocks(vec![ContentBlock::image_url("u")]));
    }

    #[test]
    fn usage_adds_up() {
        let mut usage = UsageMetadata::new(1, 2);
        usage
            .input_token_details
            .insert("cache_read".into(), json!(1));
        let mut other = UsageMetadata::new(3, 4);
        other
            .input_token_details
            .insert("cache_read".into(), json!(2));
        usage.add(&other);
        assert_eq!(usage.total_tokens, 10);
        assert_eq!(usage.input_token_details["cache_read"], json!(3));
    }
}
