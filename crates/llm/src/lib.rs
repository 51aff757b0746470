//! Messages, `add_messages`, and the chat model, tool and embeddings traits.
#![doc = include_str!("../README.md")]

mod add;
mod chunk;
mod coerce;
mod embeddings;
mod error;
mod fake;
mod message;
mod model;
pub mod observe;
mod python;
mod tool;

pub use add::{add_messages, try_add_messages};
pub use chunk::{AiMessageChunk, ChunkPosition, ToolCallChunk, collect_chunks};
pub use coerce::convert_to_messages;
pub use embeddings::{
    DynEmbeddings, Embeddings, SharedEmbeddings, cosine_from_parts, cosine_similarity, dot, norm,
};
pub use error::{Error, Result};
pub use fake::{FakeStreamingModel, HashEmbeddings, RecordedCall, ScriptedChatModel};
pub use message::{
    AiMessage, Content, ContentBlock, HumanMessage, InvalidToolCall, Message, REMOVE_ALL_MESSAGES,
    RemoveMessage, SystemMessage, TOOL_ARGS_MAX_DEPTH, ToolCall, ToolMessage, ToolStatus,
    UsageMetadata,
};
pub use model::{
    BoundChatModel, CallOptions, ChatModel, DynChatModel, NOSTREAM_TAG, OutputSchema,
    SharedChatModel, StructuredChatModel, ToolChoice, ToolSchema,
};
pub use python::{python_repr, python_str_repr, python_type_name};
pub use tool::{
    DynTool, FnTool, Injected, InjectedArg, OutputDeltaWriter, SharedTool, Tool, ToolContext,
    ToolControl, ToolError, ToolOutput, error_message, find_tool, inline_schema, pydantic_title,
    run_tool_call, strip_injected, tool_schema,
};

/// The schemars crate, for `#[derive(JsonSchema)]` on tool arguments without
/// a direct dependency: add `#[schemars(crate = "stategraph_llm::schemars")]`.
pub use schemars;

/// What the code `#[tool]` (stategraph-macros) generates names, so a crate
/// using it needs no other dependency. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;

    pub use crate::tool::{OutputOf, ViaInto, ViaSerialize};
}
