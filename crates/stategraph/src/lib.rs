//! LangGraph for Rust: the facade crate re-exporting every stategraph layer.
#![doc = include_str!("../README.md")]

pub use stategraph_channels as channels;
pub use stategraph_checkpoint as checkpoint;
#[cfg(feature = "postgres")]
pub use stategraph_checkpoint_postgres as checkpoint_postgres;
#[cfg(feature = "sqlite")]
pub use stategraph_checkpoint_sqlite as checkpoint_sqlite;
pub use stategraph_core as core;
pub use stategraph_graph as graph;
pub use stategraph_pregel as pregel;

pub use stategraph_core::{CheckpointId, ErrorKind, RunnableConfig, Value};

/// The names most programs need, in one import.
///
/// The prelude's [`Send`](prelude::Send) is LangGraph's `Send` (run a node
/// with a private input) and, imported by a glob, it hides the
/// `std::marker::Send` auto trait: spell that one out in bounds
/// (`impl Future + std::marker::Send`).
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
    pub use stategraph_checkpoint_postgres::PostgresSaver;
    #[cfg(feature = "sqlite")]
    pub use stategraph_checkpoint_sqlite::SqliteSaver;
    pub use stategraph_core::{CheckpointId, RunnableConfig, Value};
    pub use stategraph_graph::{
        CompileOptions, CompiledStateGraph, Durability, END, MessagesState, NodeSpec, PathMap,
        RunOptions, START, Schema, State, StateGraph, StateSnapshot, StateUpdate,
    };
    pub use stategraph_pregel::{
        Command, Interrupt, Interrupted, NodeError, RetryPolicy, Send, StateValues, StreamMode,
        SubgraphCheckpoints, TaskContext,
    };
}
