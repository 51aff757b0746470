//! The integration tests of stategraph-channels, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod laws;
mod trace_23_channels;
