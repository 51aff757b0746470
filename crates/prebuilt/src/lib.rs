//! Prebuilt graph parts: the tool-calling node, its router, and the ReAct agent.
#![doc = include_str!("../README.md")]

mod react;
mod tool_node;

pub use react::{AgentVersion, NEED_MORE_STEPS, ReactAgent, create_react_agent};

pub use tool_node::{ErrorHandler, ToolCallWithContext, ToolErrors, ToolNode, tools_condition};
