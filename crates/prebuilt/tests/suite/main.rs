//! The integration tests of stategraph-prebuilt, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod threads;
mod trace_27_react_agent;
mod trace_28_tool_node;
