//! LangGraph for Rust: the facade crate re-exporting every stategraph layer.
#![doc = include_str!("../README.md")]

pub use stategraph_bigtool as bigtool;
pub use stategraph_channels as channels;
pub use stategraph_checkpoint as checkpoint;
#[cfg(feature = "postgres")]
pub use stategraph_checkpoint_postgres as checkpoint_postgres;
#[cfg(feature = "sqlite")]
pub use stategraph_checkpoint_sqlite as checkpoint_sqlite;
pub use stategraph_core as core;
pub use stategraph_graph as graph;
pub use stategraph_llm as llm;
#[cfg(feature = "openai")]
pub use stategraph_openai as openai;
pub use stategraph_prebuilt as prebuilt;
pub use stategraph_pregel as pregel;
pub use stategraph_store as store;

/// Turns an `async fn` into a [`llm::Tool`]; see
/// [`stategraph_macros::tool`]. It finds `stategraph::llm` through the
/// facade by itself:
///
/// ```
/// use stategraph::llm::{Tool, ToolError};
///
/// /// Shouts the text back.
/// #[stategraph::tool]
/// async fn shout(
///     /// What to shout.
///     text: String,
/// ) -> Result<String, ToolError> {
///     Ok(text.to_uppercase())
/// }
///
/// assert_eq!(ShoutTool.name(), "shout");
/// assert_eq!(ShoutTool.description(), "Shouts the text back.");
/// ```
pub use stategraph_macros::tool;

pub use stategraph_core::{CheckpointId, ErrorKind, RunnableConfig, Value};

/// The names most programs need, in one import. It shadows nothing of
/// std: LangGraph's `Send` (run a node with a private input) is imported by
/// name, `use stategraph::graph::Send;`, as a glob import of it would hide
/// the `std::marker::Send` auto trait.
///
/// ```
/// use stategraph::graph::Send as SendTo;
/// use stategraph::prelude::*;
///
/// // `Send` is still std's auto trait.
/// fn shared<T: Send + Sync>(_: T) {}
/// shared(SendTo::new("node", serde_json::json!({})));
/// ```
pub mod prelude {
    pub use stategraph_channels::{
        AnyValue, BinaryOperatorAggregate, Channel, EphemeralValue, LastValue, Overwrite, Topic,
        reducers,
    };
    pub use stategraph_checkpoint::{
        Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
        CheckpointTuple, InMemorySaver, ListQuery, SharedSaver,
    };
    #[cfg(feature = "postgres")]
    pub use stategraph_checkpoint_postgres::{PostgresSaver, PostgresStore};
    #[cfg(feature = "sqlite")]
    pub use stategraph_checkpoint_sqlite::{SqliteSaver, SqliteStore};
    pub use stategraph_core::{CheckpointId, RunnableConfig, Value};
    pub use stategraph_graph::{
        CompileOptions, CompiledStateGraph, Durability, END, MessagesState, MessagesStateUpdate,
        MessagesStateView, NodeSpec, PathMap, RunOptions, RunOutcome, START, Schema, State,
        StateGraph, StateSnapshot, StateUpdate, TypedInput,
    };
    pub use stategraph_llm::{
        CallOptions, ChatModel, Message, SharedTool, Tool, ToolContext, ToolError, add_messages,
    };
    pub use stategraph_prebuilt::{ToolErrors, ToolNode, create_react_agent, tools_condition};
    pub use stategraph_pregel::{
        ChannelValues, Command, Input, Interrupt, Interrupted, NodeError, RetryPolicy, StreamMode,
        StreamModes, SubgraphCheckpoints, TaskContext,
    };

    pub use crate::tool;
    pub use stategraph_store::{InMemoryStore, SearchOp, SharedStore, Store};
}
