//! The integration tests of stategraph-bigtool, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod agent;
