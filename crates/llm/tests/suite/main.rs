//! The integration tests of stategraph-llm, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod add_messages_laws;
mod chat_model;
mod injected_args;
mod tool_call_args;
mod trace_03_add_messages;
