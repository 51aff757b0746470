//! The integration tests of stategraph-store, compiled as one test binary.

mod conformance;
mod deep_values;
mod large_search;
mod sweeper;
