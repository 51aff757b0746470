//! Control-flow values (`Send`, `Command`) and stream chunks.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph_core::Value;

/// Reserved channel and node names.
pub mod names {
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
}

/// A message to run `node` once, in the next superstep, with `arg` as its
/// private input instead of the graph state (a PUSH task). Returned by
/// conditional edges for map-reduce fan-out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Send {
    /// The node to run.
    pub node: String,
    /// Its input.
    pub arg: Value,
}

impl Send {
    /// A send of `arg` (any serializable value) to `node`.
    pub fn new(
        node: impl Into<String>,
        arg: impl Serialize + std::marker::Send + Sync + 'static,
    ) -> Self {
        Self {
            node: node.into(),
            arg: Value::new(arg),
        }
    }
}

/// Where a [`Command`] sends control next.
#[derive(Clone, Debug, PartialEq)]
pub enum Goto {
    /// Run this node in the next step.
    Node(String),
    /// Run a node with a private input in the next step.
    Send(Send),
}

impl From<&str> for Goto {
    fn from(node: &str) -> Self {
        Self::Node(node.to_owned())
    }
}

impl From<String> for Goto {
    fn from(node: String) -> Self {
        Self::Node(node)
    }
}

impl From<Send> for Goto {
    fn from(send: Send) -> Self {
        Self::Send(send)
    }
}

/// Which graph a [`Command`] addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommandGraph {
    /// The graph the node belongs to.
    #[default]
    Current,
    /// The parent of the graph the node belongs to (from inside a subgraph).
    Parent,
}

/// A node's combined state update and routing decision (LangGraph's `Command`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Command {
    /// State keys to write, as `(key, value)` pairs applied through the reducers.
    pub update: Vec<(String, Value)>,
    /// Nodes to run next.
    pub goto: Vec<Goto>,
    /// The graph the command addresses.
    pub graph: CommandGraph,
    /// A resume value for pending interrupts (input commands only).
    pub resume: Option<Value>,
}

/// A tool may return a `Command` (LangGraph's tools returning
/// `Command(update=..., goto=...)`): the tool node applies it in place of a
/// plain result. The update must answer the call with a tool message.
impl From<Command> for stategraph_llm::ToolOutput {
    fn from(command: Command) -> Self {
        stategraph_llm::ToolOutput::control(command)
    }
}

impl Command {
    /// An empty command.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a state write.
    #[must_use]
    pub fn update(mut self, key: impl Into<String>, value: Value) -> Self {
        self.update.push((key.into(), value));
        self
    }

    /// Adds the writes of a JSON object (`{key: value}`).
    #[must_use]
    pub fn update_json(mut self, update: serde_json::Value) -> Self {
        if let serde_json::Value::Object(map) = update {
            self.update
                .extend(map.into_iter().map(|(k, v)| (k, Value::from_json(v))));
        }
        self
    }

    /// Adds a destination.
    #[must_use]
    pub fn goto(mut self, goto: impl Into<Goto>) -> Self {
        self.goto.push(goto.into());
        self
    }

    /// Addresses the parent graph.
    #[must_use]
    pub fn to_parent(mut self) -> Self {
        self.graph = CommandGraph::Parent;
        self
    }

    /// Sets a resume value: the answer of the one pending interrupt
    /// (LangGraph's `Command(resume=value)`).
    #[must_use]
    pub fn resume(mut self, value: Value) -> Self {
        self.resume = Some(value);
        self
    }

    /// Answers pending interrupts by id (LangGraph's
    /// `Command(resume={id: value, ...})`), for when several are pending.
    #[must_use]
    pub fn resume_by_id<I, K>(mut self, answers: I) -> Self
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        let map: serde_json::Map<String, serde_json::Value> = answers
            .into_iter()
            .map(|(id, value)| {
                let value = value.to_json().unwrap_or(serde_json::Value::Null);
                (id.into(), value)
            })
            .collect();
        self.resume = Some(Value::from_json(serde_json::Value::Object(map)));
        self
    }
}

/// A pause requested by a node through
/// [`TaskContext::interrupt`](crate::TaskContext::interrupt): the value shown
/// to whoever resumes the run, and a stable id to answer it by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// What the node asked.
    pub value: Value,
    /// The interrupt's id: 32 hex digits, the same every time the task
    /// reaches this interrupt.
    pub id: String,
}

impl Interrupt {
    /// LangGraph's interrupt id: xxh3-128 of the task's namespace
    /// (`node:task_id`), with `|n` appended for the interrupt that follows
    /// `n` answered ones in the same task.
    pub(crate) fn id_for(task_namespace: &str, answered: usize) -> String {
        let hash = if answered == 0 {
            xxhash_rust::xxh3::xxh3_128(task_namespace.as_bytes())
        } else {
            xxhash_rust::xxh3::xxh3_128(format!("{task_namespace}|{answered}").as_bytes())
        };
        format!("{hash:032x}")
    }

    /// Whether `key` has the shape of an interrupt id (32 lowercase hex digits).
    pub(crate) fn is_id(key: &str) -> bool {
        key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

/// What a run streams. Several modes can be requested at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamMode {
    /// The full state after every superstep.
    Values,
    /// `{node: update}` for every finished task.
    Updates,
    /// Whatever nodes send through their stream writer.
    Custom,
    /// Task starts and results.
    Tasks,
    /// Checkpoints as they are created.
    Checkpoints,
    /// Tasks and checkpoints, wrapped with step and type.
    Debug,
    /// LLM tokens (with the LLM layer).
    Messages,
}

impl StreamMode {
    /// LangGraph's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Values => "values",
            Self::Updates => "updates",
            Self::Custom => "custom",
            Self::Tasks => "tasks",
            Self::Checkpoints => "checkpoints",
            Self::Debug => "debug",
            Self::Messages => "messages",
        }
    }

    pub(crate) fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of stream modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode.
    pub const NONE: Self = Self(0);

    /// Whether `mode` is in the set.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// Adds a mode.
    #[must_use]
    pub fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode.bit())
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modes in either set.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self(mode.bit())
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().fold(Self::NONE, Self::with)
    }
}

impl std::ops::BitOr for StreamMode {
    type Output = StreamModes;
    fn bitor(self, other: Self) -> StreamModes {
        StreamModes::from(self).with(other)
    }
}

impl std::ops::BitOr<StreamMode> for StreamModes {
    type Output = StreamModes;
    fn bitor(self, other: StreamMode) -> StreamModes {
        self.with(other)
    }
}

/// The subgraph path of a chunk (`["node:task_id", ...]`), empty for the
/// root graph. Reads as a `[String]` slice; the root graph's empty path is
/// held without an allocation, so copying it into every chunk costs nothing.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Namespace(Option<Arc<[String]>>);

impl Namespace {
    /// The root graph's empty path.
    pub const ROOT: Self = Self(None);
}

impl std::ops::Deref for Namespace {
    type Target = [String];

    fn deref(&self) -> &[String] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Vec<String>> for Namespace {
    fn from(labels: Vec<String>) -> Self {
        if labels.is_empty() {
            Self::ROOT
        } else {
            Self(Some(Arc::from(labels)))
        }
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Namespace {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// One item of a run's stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamChunk {
    /// The subgraph path (`["node:task_id", ...]`), empty for the root graph.
    pub namespace: Namespace,
    /// The mode that produced the chunk.
    pub mode: StreamMode,
    /// The payload, shaped as LangGraph's.
    pub data: Value,
}

impl StreamChunk {
    /// The chunk as LangGraph prints it for one mode: the payload alone.
    pub fn to_json(&self) -> serde_json::Value {
        self.data.to_json().unwrap_or(serde_json::Value::Null)
    }

    /// The message of a `messages` chunk.
    pub fn message(&self) -> Option<&crate::MessageEvent> {
        self.data.downcast_ref()
    }
}
