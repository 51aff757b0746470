//! The Pregel (bulk-synchronous) runtime of stategraph.
#![doc = include_str!("../README.md")]

mod cache;
mod error;
mod graph;
mod node;
mod queue;
mod retry;
mod run;
mod run_channels;
mod timeout;
mod types;

pub use cache::{CachePolicy, CachedWrites, InMemoryCache, NodeCache};
pub use error::{NodeError, PregelError, Result};
pub use graph::{GraphShape, IoChannels, IoSpec, NodeBuilder, Pregel, PregelBuilder};
pub use node::{
    FreshReader, Interrupted, NODE_FUTURE_INLINE, NodeFailure, NodeFn, NodeFuture, NodeOutput,
    PregelNode, ReadKeys, Reads, RunOptions, StateValues, SubgraphCheckpoints, TaskContext,
    WriteContext, Writer, node_fn, node_future,
};
pub use retry::{RetryOn, RetryPolicy};
pub use run::{
    DEFAULT_RECURSION_LIMIT, Durability, Input, MessageEvent, NodeUpdate, PregelTask, RunStream,
    StateSnapshot, StateUpdate, StreamedMessage, UpdatePayload,
};
pub use timeout::{NODE_TIMEOUT_ERROR, RefreshOn, TimeoutPolicy};
pub use types::{
    Command, CommandGraph, Goto, Interrupt, Namespace, Send, StreamChunk, StreamMode, StreamModes,
    names,
};

/// Index of a channel in a compiled graph.
pub type ChannelId = usize;
/// Index of a node in a compiled graph (nodes sorted by name).
pub type NodeId = usize;
