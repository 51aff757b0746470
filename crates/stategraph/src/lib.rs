//! LangGraph for Rust: the facade crate re-exporting every stategraph layer.
#![doc = include_str!("../README.md")]

pub use stategraph_channels as channels;
pub use stategraph_checkpoint as checkpoint;
pub use stategraph_core as core;

pub use stategraph_core::{CheckpointId, ErrorKind, RunnableConfig, Value};

/// The names most programs need, in one import.
pub mod prelude {
    pub use stategraph_channels::{
        AnyValue, BinaryOperatorAggregate, Channel, EphemeralValue, LastValue, Overwrite, Topic,
        reducers,
    };
    pub use stategraph_checkpoint::{
        Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
        CheckpointTuple, InMemorySaver, ListQuery, SharedSaver,
    };
    pub use stategraph_core::{CheckpointId, RunnableConfig, Value};
}
