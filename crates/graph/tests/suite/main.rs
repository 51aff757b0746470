//! The integration tests of stategraph-graph, compiled as one test binary
//! (one link instead of one per file keeps CI builds small and fast).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod support;

mod concurrency;
mod context;
mod crash;
mod debug_print;
mod endurance;
mod error_handlers;
mod fidelity;
mod fidelity_update_state;
mod hitl;
mod hostile_input;
mod input_maps;
mod managed_values;
mod node_cache;
mod persistence;
mod rebind;
mod server_fixtures;
mod step_concurrency;
mod trace_01_last_value_conflict;
mod trace_02_reducers;
mod trace_03_messages_state;
mod trace_04_conditional_edges;
mod trace_05_send_map_reduce;
mod trace_06_waiting_edge_join;
mod trace_08_command_goto;
mod trace_09_command_parent;
mod trace_10_interrupt_resume;
mod trace_11_multi_interrupt_one_node;
mod trace_13_interrupt_before_after;
mod trace_14_update_state;
mod trace_16_subgraph_state;
mod trace_17_stream_modes;
mod trace_18_stream_messages;
mod trace_19_recursion_limit;
mod trace_20_retry_policy;
mod trace_22_defer;
mod trace_25_context_runtime;
mod trace_26_functional_api;
mod trace_30_store;
mod trace_31_durability;
mod trace_32_checkpointer_api;
mod trace_33_graph_drawing;
mod trace_35_async_parity;
mod trace_38_error_handler_timeout;
mod trace_support;
mod typed_state;
mod validation;
