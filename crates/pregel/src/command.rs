//! Control flow: what a run starts from (`Input`), `Send` packets and `Command`s.

use serde::{Deserialize, Serialize};
use stategraph_core::Value;
use std::sync::Arc;

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

/// What a run starts from.
#[derive(Clone, Debug)]
pub enum Input {
    /// New input, written to the input channels.
    Value(Value),
    /// No input: resume the thread (needs a checkpointer).
    Resume,
    /// A command: state updates, destinations and resume values.
    Command(Command),
}

impl Input {
    /// The input, unless a JSON value in it (the input value, a command's
    /// updates or resume answer) nests deeper than
    /// [`MAX_DEPTH`](stategraph_core::json::MAX_DEPTH): no saver could read
    /// it back, and recursing into it could overflow the stack. Checked
    /// without recursion; a refused input is dropped without recursion too.
    pub(crate) fn within_depth(self) -> Result<Self, stategraph_core::ValueError> {
        let values: Vec<&Value> = match &self {
            Self::Value(value) => vec![value],
            Self::Resume => Vec::new(),
            Self::Command(command) => command
                .update
                .iter()
                .map(|(_, value)| value)
                .chain(&command.resume)
                .collect(),
        };
        let limit = stategraph_core::json::MAX_DEPTH;
        let too_deep = values.into_iter().any(|value| {
            value
                .as_json()
                .is_some_and(|json| stategraph_core::json::deeper_than(json, limit))
        });
        if !too_deep {
            return Ok(self);
        }
        let owned: Vec<Value> = match self {
            Self::Value(value) => vec![value],
            Self::Resume => Vec::new(),
            Self::Command(command) => command
                .update
                .into_iter()
                .map(|(_, value)| value)
                .chain(command.resume)
                .collect(),
        };
        for value in owned {
            if let Ok(json) = value.downcast_arc::<serde_json::Value>()
                && let Some(json) = Arc::into_inner(json)
            {
                stategraph_core::json::drop_deep(json);
            }
        }
        Err(stategraph_core::ValueError::TooDeep { limit })
    }
}

impl From<Value> for Input {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl From<serde_json::Value> for Input {
    fn from(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Self::Resume,
            other => Self::Value(Value::from_json(other)),
        }
    }
}

impl From<Command> for Input {
    fn from(command: Command) -> Self {
        Self::Command(command)
    }
}
