//! `StateGraph`: build graphs over shared state and compile them to the Pregel runtime.
#![doc = include_str!("../README.md")]

mod builder;
mod compile;
mod compiled;
mod error;
mod node;
mod schema;

pub use builder::{NodeSpec, PathMap, StateGraph};
pub use compiled::CompiledStateGraph;
pub use error::GraphError;
pub use node::{FromInput, IntoNode, IntoNodeOutput, IntoRouter, IntoRoutes, Route, RouterFn};
pub use schema::Schema;

pub use stategraph_pregel::{Command, NodeError, Send, StateValues, StreamMode, TaskContext};

/// The entry pseudo-node.
pub const START: &str = stategraph_pregel::names::START;
/// The exit pseudo-node.
pub const END: &str = stategraph_pregel::names::END;
