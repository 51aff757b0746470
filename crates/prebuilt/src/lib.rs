//! Prebuilt graph parts: the tool-calling node and its router.
#![doc = include_str!("../README.md")]

mod tool_node;

pub use tool_node::{ErrorHandler, ToolErrors, ToolNode, tools_condition};
