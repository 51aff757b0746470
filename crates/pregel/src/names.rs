//! Reserved channel and node names.

/// The entry pseudo-node and the channel holding the graph input.
pub const START: &str = "__start__";
/// The exit pseudo-node.
pub const END: &str = "__end__";
/// The channel holding `Send` packets for the next step (PUSH tasks).
pub const TASKS: &str = "__pregel_tasks";
/// Task path prefix of tasks triggered by channels.
pub const PULL: &str = "__pregel_pull";
/// Task path prefix of tasks created by `Send`.
pub const PUSH: &str = "__pregel_push";
/// The pending-write channel of a task's interrupts, and the key of
/// interrupts in `updates` and `values` chunks.
pub const INTERRUPT: &str = "__interrupt__";
/// The input pseudo-task: the node name its writes are applied as
/// (LangGraph's `INPUT`).
pub const INPUT: &str = "__input__";
/// The `as_node` of a state update that copies the checkpoint it builds
/// on (LangGraph's `"__copy__"`).
pub const COPY: &str = "__copy__";
/// The pending-write channel of the answers a task consumed.
pub const RESUME: &str = "__resume__";
/// The pending-write channel of the answers a task's interrupt scopes
/// consumed (`TaskContext::interrupt_scope`), by scope.
pub const RESUME_SCOPED: &str = "__resume_scoped__";
/// The pending-write channel of a failed task's error.
pub const ERROR: &str = "__error__";
/// The pending write of a functional task's result.
pub const RETURN: &str = "__return__";
/// The pending write of a task that finished without writing anything.
pub const NO_WRITES: &str = "__no_writes__";
/// The task id of writes that belong to no task (a run's input command).
pub const NULL_TASK_ID: &str = "00000000-0000-0000-0000-000000000000";
/// The trigger channel of a node: `branch:to:{node}`.
pub fn branch_to(node: &str) -> String {
    format!("branch:to:{node}")
}
