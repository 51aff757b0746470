//! The integration tests of stategraph-prebuilt, compiled as one test binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

// The golden-trace helpers of stategraph-graph's suite (fixture loading, id
// normalisation, the trace encodings), shared rather than copied.
#[path = "../../../graph/tests/suite/support/mod.rs"]
mod support;
// The in-process OpenAI-compatible server of stategraph-openai's suite, for
// checking the requests an agent's conversation becomes.
#[path = "../../../openai/tests/suite/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

mod agent_hooks;
mod agent_options;
mod agent_state;
mod fidelity;
mod history;
mod invalid_calls;
mod review;
mod threads;
mod tool_interrupts;
mod trace_27_react_agent;
mod trace_28_tool_node;
mod trace_29_injected_args;
mod trace_36_validation_and_hitl;
mod validation_node;
