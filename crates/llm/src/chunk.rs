//! Streamed pieces of an AI message and how they merge.

use futures::{Stream, StreamExt};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use stategraph_core::JsonMap;

use crate::coerce;
use crate::message::{AiMessage, Content, InvalidToolCall, ToolCall, UsageMetadata};
use crate::{Error, Message, Result};

/// A piece of a streamed tool call. Pieces with the same `index` belong to
/// the same call: their name, id and argument text are concatenated (OpenAI
/// sends the id and name in the first piece and the argument JSON in many).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallChunk {
    /// A piece of the tool's name.
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the argument JSON text.
    #[serde(default)]
    pub args: Option<String>,
    /// A piece of the call id.
    #[serde(default)]
    pub id: Option<String>,
    /// Which call of the message this piece belongs to.
    #[serde(default)]
    pub index: Option<usize>,
}

/// Where a chunk sits in its stream (LangChain's `chunk_position`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChunkPosition {
    /// The last chunk of the message.
    Last,
}

/// A piece of an AI message, as a streaming model yields it. Merge the
/// pieces with [`AiMessageChunk::merge`] (or [`collect_chunks`]) and turn the
/// result into a message with [`AiMessageChunk::into_message`].
///
/// Serializes as LangChain's `AIMessageChunk`: `{"type": "AIMessageChunk",
/// "content", "id", ...}` with optional fields only when set.
///
/// ```
/// use stategraph_llm::{AiMessageChunk, ToolCallChunk};
///
/// let mut message = AiMessageChunk::new("Let me ").with_id("ai-1");
/// message.merge(AiMessageChunk::new("add."));
/// message.merge(AiMessageChunk::default().with_tool_call_chunk(
///     ToolCallChunk::new(0).with_id("c1").with_name("add").with_args("{\"a\": "),
/// ));
/// message.merge(AiMessageChunk::default().with_tool_call_chunk(ToolCallChunk::new(0).with_args("2}")));
/// let message = message.into_message();
/// assert_eq!(message.text(), "Let me add.");
/// assert_eq!(message.tool_calls[0].args, serde_json::json!({"a": 2}));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AiMessageChunk {
    /// A piece of the content.
    pub content: Content,
    /// The message id (every chunk of one message carries the same id).
    pub id: Option<String>,
    /// An optional author name.
    pub name: Option<String>,
    /// Pieces of tool calls.
    pub tool_call_chunks: Vec<ToolCallChunk>,
    /// Token counts (summed when chunks merge).
    pub usage_metadata: Option<UsageMetadata>,
    /// Provider-specific extra fields.
    pub additional_kwargs: JsonMap,
    /// Provider metadata (finish reason, model name, ...).
    pub response_metadata: JsonMap,
    /// `Some(Last)` on the last chunk of a message.
    pub chunk_position: Option<ChunkPosition>,
}

impl ToolCallChunk {
    /// An empty piece of the call at `index`.
    pub fn new(index: usize) -> Self {
        Self {
            index: Some(index),
            ..Self::default()
        }
    }

    /// Sets the id piece.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the name piece.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the argument text piece.
    #[must_use]
    pub fn with_args(mut self, args: impl Into<String>) -> Self {
        self.args = Some(args.into());
        self
    }

    fn absorb(&mut self, other: ToolCallChunk) {
        concat(&mut self.name, other.name);
        concat(&mut self.args, other.args);
        // LangChain keeps an id that repeats and concatenates one that differs.
        match (&mut self.id, other.id) {
            (Some(mine), Some(theirs)) if *mine == theirs => {}
            (mine, theirs) => concat(mine, theirs),
        }
    }
}

fn concat(into: &mut Option<String>, more: Option<String>) {
    match (into.as_mut(), more) {
        (_, None) => {}
        (None, more) => *into = more,
        (Some(text), Some(more)) => text.push_str(&more),
    }
}

impl AiMessageChunk {
    /// A chunk with this content.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// Sets the message id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Adds a tool-call piece.
    #[must_use]
    pub fn with_tool_call_chunk(mut self, chunk: ToolCallChunk) -> Self {
        self.tool_call_chunks.push(chunk);
        self
    }

    /// Sets the token counts.
    #[must_use]
    pub fn with_usage(mut self, usage: UsageMetadata) -> Self {
        self.usage_metadata = Some(usage);
        self
    }

    /// Marks the chunk as the last of its message.
    #[must_use]
    pub fn last(mut self) -> Self {
        self.chunk_position = Some(ChunkPosition::Last);
        self
    }

    /// LangChain's class name, `AIMessageChunk`.
    pub fn class_name(&self) -> &'static str {
        "AIMessageChunk"
    }

    /// Appends a later chunk: content concatenates (see [`Content::push`]),
    /// tool-call pieces with the same index merge (pieces without an index
    /// stay separate), usage adds up, extra fields and metadata of the later
    /// chunk win, and the first id and name are kept.
    pub fn merge(&mut self, other: AiMessageChunk) {
        self.content.push(other.content);
        if self.id.is_none() {
            self.id = other.id;
        }
        if self.name.is_none() {
            self.name = other.name;
        }
        for piece in other.tool_call_chunks {
            let same = piece.index.and_then(|index| {
                self.tool_call_chunks
                    .iter_mut()
                    .find(|mine| mine.index == Some(index))
            });
            match same {
                Some(mine) => mine.absorb(piece),
                None => self.tool_call_chunks.push(piece),
            }
        }
        match (&mut self.usage_metadata, other.usage_metadata) {
            (_, None) => {}
            (Some(mine), Some(theirs)) => mine.add(&theirs),
            (mine, theirs) => *mine = theirs,
        }
        self.additional_kwargs.extend(other.additional_kwargs);
        self.response_metadata.extend(other.response_metadata);
        if other.chunk_position.is_some() {
            self.chunk_position = other.chunk_position;
        }
    }

    /// The tool calls the pieces add up to so far: argument text that parses
    /// as langchain-openai parses a finished reply (a JSON object, or a
    /// value Python counts as false, which is `{}`; see the crate docs)
    /// gives a [`ToolCall`], anything else an [`InvalidToolCall`]. Unlike
    /// LangChain's streaming parser, text cut off mid-way is not closed.
    pub fn tool_calls(&self) -> (Vec<ToolCall>, Vec<InvalidToolCall>) {
        parse_tool_call_chunks(self.tool_call_chunks.clone())
    }

    /// The finished message: tool-call pieces are parsed (see
    /// [`tool_calls`](Self::tool_calls)); nothing panics on bad argument text.
    pub fn into_message(self) -> AiMessage {
        let (tool_calls, invalid_tool_calls) = parse_tool_call_chunks(self.tool_call_chunks);
        let mut message = AiMessage::new(self.content);
        message.id = self.id;
        message.name = self.name;
        message.tool_calls = tool_calls;
        message.invalid_tool_calls = invalid_tool_calls;
        message.usage_metadata = self.usage_metadata;
        message.additional_kwargs = self.additional_kwargs;
        message.response_metadata = self.response_metadata;
        message
    }
}

/// Parses merged tool-call pieces into calls and invalid calls.
pub(crate) fn parse_tool_call_chunks(
    chunks: Vec<ToolCallChunk>,
) -> (Vec<ToolCall>, Vec<InvalidToolCall>) {
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    for chunk in chunks {
        let raw = chunk.args.unwrap_or_default();
        match chunk.name {
            Some(name) if !name.is_empty() => match coerce::parse_args(chunk.id, name, raw) {
                Ok(call) => calls.push(call),
                Err(bad) => invalid.push(bad),
            },
            _ => invalid.push(InvalidToolCall::new(
                chunk.id,
                None,
                Some(raw),
                "tool call has no name",
            )),
        }
    }
    (calls, invalid)
}

/// The chunk form of a whole message, marked as the last chunk: content as
/// is, one tool-call piece per call (arguments as JSON text, invalid calls
/// with their raw text). Merging it back gives the message again.
impl From<AiMessage> for AiMessageChunk {
    fn from(message: AiMessage) -> Self {
        let calls = message.tool_calls.into_iter().map(|call| ToolCallChunk {
            name: Some(call.name),
            args: Some(call.args.to_string()),
            id: call.id,
            index: None,
        });
        let invalid = message
            .invalid_tool_calls
            .into_iter()
            .map(|call| ToolCallChunk {
                name: call.name,
                args: call.args,
                id: call.id,
                index: None,
            });
        let tool_call_chunks = calls
            .chain(invalid)
            .enumerate()
            .map(|(i, chunk)| ToolCallChunk {
                index: Some(i),
                ..chunk
            })
            .collect();
        Self {
            content: message.content,
            id: message.id,
            name: message.name,
            tool_call_chunks,
            usage_metadata: message.usage_metadata,
            additional_kwargs: message.additional_kwargs,
            response_metadata: message.response_metadata,
            chunk_position: Some(ChunkPosition::Last),
        }
    }
}

impl From<AiMessageChunk> for AiMessage {
    fn from(chunk: AiMessageChunk) -> Self {
        chunk.into_message()
    }
}

impl From<AiMessageChunk> for Message {
    fn from(chunk: AiMessageChunk) -> Self {
        chunk.into_message().into()
    }
}

/// Merges a stream of chunks into one message.
///
/// # Errors
/// The first error the stream yields, or [`Error::EmptyResponse`] naming
/// `model` when the stream yields no chunk at all.
pub async fn collect_chunks<S>(stream: S, model: &str) -> Result<AiMessage>
where
    S: Stream<Item = Result<AiMessageChunk>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut merged: Option<AiMessageChunk> = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        match &mut merged {
            Some(merged) => merged.merge(chunk),
            None => merged = Some(chunk),
        }
    }
    merged
        .map(AiMessageChunk::into_message)
        .ok_or_else(|| Error::EmptyResponse {
            model: model.to_owned(),
        })
}

impl Serialize for AiMessageChunk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", "AIMessageChunk")?;
        map.serialize_entry("content", &self.content)?;
        map.serialize_entry("id", &self.id)?;
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        if !self.tool_call_chunks.is_empty() {
            map.serialize_entry("tool_call_chunks", &self.tool_call_chunks)?;
        }
        if let Some(usage) = &self.usage_metadata {
            map.serialize_entry("usage_metadata", usage)?;
        }
        if !self.additional_kwargs.is_empty() {
            map.serialize_entry("additional_kwargs", &self.additional_kwargs)?;
        }
        if !self.response_metadata.is_empty() {
            map.serialize_entry("response_metadata", &self.response_metadata)?;
        }
        if let Some(position) = &self.chunk_position {
            map.serialize_entry("chunk_position", position)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for AiMessageChunk {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;

        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            content: Option<Content>,
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            tool_call_chunks: Vec<ToolCallChunk>,
            #[serde(default)]
            usage_metadata: Option<UsageMetadata>,
            #[serde(default)]
            additional_kwargs: JsonMap,
            #[serde(default)]
            response_metadata: JsonMap,
            #[serde(default)]
            chunk_position: Option<ChunkPosition>,
            #[serde(default, rename = "type")]
            kind: Option<String>,
        }
        let raw = Raw::deserialize(deserializer)?;
        if let Some(kind) = raw.kind.as_deref()
            && !matches!(kind, "AIMessageChunk" | "ai")
        {
            return Err(D::Error::custom(format!(
                "expected an AIMessageChunk, got type {kind:?}"
            )));
        }
        Ok(Self {
            content: raw.content.unwrap_or_default(),
            id: raw.id,
            name: raw.name,
            tool_call_chunks: raw.tool_call_chunks,
            usage_metadata: raw.usage_metadata,
            additional_kwargs: raw.additional_kwargs,
            response_metadata: raw.response_metadata,
            chunk_position: raw.chunk_position,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openai_style_deltas_assemble_into_tool_calls() {
        let deltas = [
            AiMessageChunk::default().with_id("m").with_tool_call_chunk(
                ToolCallChunk::new(0)
                    .with_id("c0")
                    .with_name("add")
                    .with_args(""),
            ),
            AiMessageChunk::default()
                .with_tool_call_chunk(ToolCallChunk::new(0).with_args("{\"a\":")),
            AiMessageChunk::default().with_tool_call_chunk(
                ToolCallChunk::new(1)
                    .with_id("c1")
                    .with_name("shout")
                    .with_args("{\"t"),
            ),
            AiMessageChunk::default().with_tool_call_chunk(ToolCallChunk::new(0).with_args(" 1}")),
            AiMessageChunk::default()
                .with_tool_call_chunk(ToolCallChunk::new(1).with_args("\": \"x\""))
                .with_usage(UsageMetadata::new(5, 6))
                .last(),
        ];
        let mut merged = AiMessageChunk::default();
        for delta in deltas {
            merged.merge(delta);
        }
        assert_eq!(merged.chunk_position, Some(ChunkPosition::Last));
        let message = merged.into_message();
        assert_eq!(message.id.as_deref(), Some("m"));
        assert_eq!(message.tool_calls.len(), 1);
        assert_eq!(message.tool_calls[0].args, json!({"a": 1}));
        assert_eq!(message.tool_calls[0].id.as_deref(), Some("c0"));
        // The second call's JSON never closed: invalid, not a panic.
        assert_eq!(message.invalid_tool_calls.len(), 1);
        assert_eq!(message.invalid_tool_calls[0].name.as_deref(), Some("shout"));
        assert_eq!(
            message.invalid_tool_calls[0].args.as_deref(),
            Some("{\"t\": \"x\"")
        );
        assert_eq!(message.usage_metadata.unwrap().total_tokens, 11);
    }

    #[test]
    fn a_message_round_trips_through_its_chunk() {
        let message = AiMessage::new("hi").with_id("a").with_tool_calls(vec![
            ToolCall::new("t", json!({"x": [1, 2]})).with_id("c"),
            ToolCall::new("u", json!({})).with_id("d"),
        ]);
        let chunk = AiMessageChunk::from(message.clone());
        assert_eq!(chunk.chunk_position, Some(ChunkPosition::Last));
        assert_eq!(chunk.into_message(), message);
    }

    #[test]
    fn repeated_ids_are_kept_once() {
        let mut a =
            AiMessageChunk::default().with_tool_call_chunk(ToolCallChunk::new(0).with_id("c"));
        a.merge(
            AiMessageChunk::default()
                .with_tool_call_chunk(ToolCallChunk::new(0).with_id("c").with_name("t")),
        );
        assert_eq!(a.tool_call_chunks[0].id.as_deref(), Some("c"));
        let (calls, invalid) = a.tool_calls();
        assert_eq!(calls[0].args, json!({}));
        assert!(invalid.is_empty());
    }

    #[test]
    fn a_nameless_call_is_invalid() {
        let chunk =
            AiMessageChunk::default().with_tool_call_chunk(ToolCallChunk::new(0).with_args("{}"));
        let message = chunk.into_message();
        assert!(message.tool_calls.is_empty());
        assert_eq!(
            message.invalid_tool_calls[0].error.as_deref(),
            Some("tool call has no name")
        );
    }

    #[test]
    fn serializes_like_langchain_chunks() {
        let chunk = AiMessageChunk::new("world").with_id("ai-1").last();
        let json = serde_json::to_value(&chunk).unwrap();
        assert_eq!(
            json,
            json!({"type": "AIMessageChunk", "content": "world", "id": "ai-1", "chunk_position": "last"})
        );
        let back: AiMessageChunk = serde_json::from_value(json).unwrap();
        assert_eq!(back, chunk);
        // As a message, a chunk becomes an AI message (LangChain's
        // message_chunk_to_message); tool-call pieces become tool calls.
        let message = Message::from_json(json!({
            "type": "AIMessageChunk", "content": "", "id": "x",
            "tool_call_chunks": [{"name": "t", "args": "{\"a\":1}", "id": "c", "index": 0}],
        }))
        .unwrap();
        assert_eq!(message.tool_calls()[0].args, json!({"a": 1}));
    }

    #[tokio::test]
    async fn collecting_an_empty_stream_is_an_error() {
        let err = collect_chunks(futures::stream::empty(), "fake")
            .await
            .unwrap_err();
        assert!(matches!(err, Error::EmptyResponse { .. }));
        let chunks = futures::stream::iter(vec![
            Ok(AiMessageChunk::new("a").with_id("m")),
            Ok(AiMessageChunk::new("b")),
        ]);
        assert_eq!(collect_chunks(chunks, "fake").await.unwrap().text(), "ab");
    }
}
