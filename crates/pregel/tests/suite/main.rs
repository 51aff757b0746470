//! The integration tests of stategraph-pregel, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod builder;
mod command_input;
mod constant_writes;
mod fresh_reads;
mod invoke_output;
mod stream_control;
mod trace_23_pregel;
