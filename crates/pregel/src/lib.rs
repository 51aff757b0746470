//! The Pregel (bulk-synchronous) runtime of stategraph.
#![doc = include_str!("../README.md")]

mod cache;
mod channel_values;
mod chunk;
mod command;
mod context;
mod error;
mod graph;
mod interrupt;
pub mod names;
mod node;
mod options;
mod queue;
mod retry;
mod run;
mod run_info;
mod scratchpad;
mod shape;
mod task_id;
mod timeout;

pub use cache::{CachePolicy, CachedWrites, InMemoryCache, NodeCache};
pub use channel_values::ChannelValues;
pub use chunk::{
    MessageEvent, Namespace, NodeUpdate, StreamChunk, StreamMode, StreamModes, StreamedMessage,
    UpdatePayload,
};
pub use command::{Command, CommandGraph, Goto, Input, InvalidCommand, Send};
pub use context::TaskContext;
pub use error::{NodeError, NodeFailure, PregelError, Result};
pub use graph::{NodeBuilder, Pregel, PregelBuilder};
pub use interrupt::{Interrupt, Interrupted};
pub use node::{
    DeferredWrites, FreshReader, NODE_FUTURE_INLINE, NodeFn, NodeFuture, NodeOutput, PregelNode,
    ReadKeys, Reads, WriteContext, Writer, node_fn, node_future,
};
pub use options::CompileOptions;
pub use retry::{RetryOn, RetryPolicy};
pub use run::{
    DEFAULT_RECURSION_LIMIT, PregelTask, RunOutput, RunStream, StateSnapshot, StateUpdate,
};
pub use run_info::{ContextType, Durability, RunOptions, SubgraphCheckpoints};
pub use shape::IoSpec;
pub use shape::{ChannelId, GraphShape, IoChannels, NodeId};
pub use timeout::{NODE_TIMEOUT_ERROR, RefreshOn, TimeoutPolicy};
