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

impl Command {
    /// A command from LangGraph's JSON form, as the Server API's `command`
    /// and the Python and JS SDKs send it: an object with any of
    /// - `update`: an object of writes, a list of `[key, value]` pairs, or
    ///   `null`;
    /// - `resume`: the answer (a map keyed by interrupt ids answers those
    ///   interrupts), `null` for none;
    /// - `goto`: a node name, a `Send` as `{"node", "input"}`, a list of
    ///   these, or `null`; an empty list is no destination (RemoteGraph
    ///   sends `"goto": []`).
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph_pregel::{Command, Goto};
    ///
    /// let command = Command::from_json(json!({"resume": "yes", "goto": []})).unwrap();
    /// assert!(command.goto.is_empty() && command.resume.is_some());
    /// let command = Command::from_json(json!({"goto": {"node": "b", "input": 1}})).unwrap();
    /// assert!(matches!(&command.goto[0], Goto::Send(send) if send.node == "b"));
    /// assert!(Command::from_json(json!({"goto": 7})).is_err());
    /// ```
    ///
    /// # Errors
    /// [`InvalidCommand`] naming the field that has another shape, or a key
    /// a command does not have (a run given it fails with LangGraph's
    /// `InvalidUpdateError`).
    pub fn from_json(json: serde_json::Value) -> Result<Self, InvalidCommand> {
        use serde_json::Value as Json;
        let invalid = InvalidCommand;
        let Json::Object(fields) = json else {
            return Err(invalid(format!("a command is a JSON object, not {json}")));
        };
        let mut command = Self::new();
        for (key, value) in fields {
            match (key.as_str(), value) {
                (_, Json::Null) => {}
                ("resume", value) => command.resume = Some(Value::from_json(value)),
                ("update", Json::Object(map)) => command
                    .update
                    .extend(map.into_iter().map(|(k, v)| (k, Value::from_json(v)))),
                ("update", Json::Array(pairs)) => {
                    for pair in pairs {
                        match pair {
                            Json::Array(pair) if pair.len() == 2 && pair[0].is_string() => {
                                let mut pair = pair.into_iter();
                                let key = pair.next().and_then(|k| k.as_str().map(str::to_owned));
                                let value = pair.next().unwrap_or(Json::Null);
                                command
                                    .update
                                    .extend(key.map(|k| (k, Value::from_json(value))));
                            }
                            other => {
                                return Err(invalid(format!(
                                    "command `update`: expected [key, value] pairs, got {other}"
                                )));
                            }
                        }
                    }
                }
                ("update", other) => {
                    return Err(invalid(format!(
                        "command `update`: expected an object or a list of [key, value] pairs, got {other}"
                    )));
                }
                ("goto", Json::Array(gotos)) => {
                    for goto in gotos {
                        command.goto.push(goto_from_json(goto).map_err(invalid)?);
                    }
                }
                ("goto", goto) => command.goto.push(goto_from_json(goto).map_err(invalid)?),
                (other, _) => {
                    return Err(invalid(format!(
                        "a command has no `{other}` (it has `update`, `resume` and `goto`)"
                    )));
                }
            }
        }
        Ok(command)
    }
}

/// A command's JSON that is not LangGraph's form (see
/// [`Command::from_json`]); it says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidCommand(pub String);

/// A `goto` destination in LangGraph's JSON form: a node name or a `Send`
/// as `{"node", "input"}`.
fn goto_from_json(goto: serde_json::Value) -> Result<Goto, String> {
    use serde_json::Value as Json;
    match goto {
        Json::String(node) => Ok(Goto::Node(node)),
        Json::Object(mut send) => {
            let node = match send.remove("node") {
                Some(Json::String(node)) => node,
                _ => return Err("command `goto`: a Send needs a string `node`".into()),
            };
            let input = send.remove("input").unwrap_or(Json::Null);
            if let Some(other) = send.keys().next() {
                return Err(format!(
                    "command `goto`: a Send has `node` and `input`, not `{other}`"
                ));
            }
            Ok(Goto::Send(Send {
                node,
                arg: Value::from_json(input),
            }))
        }
        other => Err(format!(
            "command `goto`: expected a node name, a Send or a list of them, got {other}"
        )),
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

#[cfg(test)]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn gotos(command: &Command) -> Vec<String> {
        command
            .goto
            .iter()
            .map(|goto| match goto {
                Goto::Node(node) => node.clone(),
                Goto::Send(send) => format!("{}({})", send.node, send.arg.to_json().unwrap()),
            })
            .collect()
    }

    #[test]
    fn every_wire_form_of_a_command_reads() {
        let command = Command::from_json(json!({
            "update": {"a": 1},
            "resume": {"0123456789abcdef0123456789abcdef": "by-id"},
            "goto": ["x", {"node": "y", "input": {"n": 2}}],
        }))
        .unwrap();
        assert_eq!(command.update.len(), 1);
        assert_eq!(
            command.resume.as_ref().unwrap().to_json().unwrap(),
            json!({"0123456789abcdef0123456789abcdef": "by-id"})
        );
        assert_eq!(gotos(&command), ["x", r#"y({"n":2})"#]);

        let pairs = Command::from_json(json!({"update": [["a", 1], ["a", 2]]})).unwrap();
        assert_eq!(pairs.update.len(), 2, "a key may be written twice");
        let one = Command::from_json(json!({"goto": "x"})).unwrap();
        assert_eq!(gotos(&one), ["x"]);
        // RemoteGraph's resume: an empty goto list is no destination.
        let remote = Command::from_json(json!({"resume": "ok", "goto": []})).unwrap();
        assert!(remote.goto.is_empty());
        let nulls =
            Command::from_json(json!({"resume": null, "update": null, "goto": null})).unwrap();
        assert_eq!(nulls, Command::new());
    }

    #[test]
    fn a_malformed_command_names_what_is_wrong() {
        let message = |json| Command::from_json(json).unwrap_err().to_string();
        assert!(message(json!([1])).contains("a command is a JSON object"));
        assert!(message(json!({"goto": 7})).contains("command `goto`"));
        assert!(message(json!({"goto": [{"input": 1}]})).contains("needs a string `node`"));
        assert!(message(json!({"goto": {"node": "a", "arg": 1}})).contains("not `arg`"));
        assert!(message(json!({"update": "x"})).contains("command `update`"));
        assert!(message(json!({"update": [["a"]]})).contains("[key, value] pairs"));
        assert!(message(json!({"graph": "__parent__"})).contains("no `graph`"));
        let err =
            crate::error::PregelError::from(Command::from_json(json!({"goto": 7})).unwrap_err());
        assert_eq!(err.class(), "InvalidUpdateError");
    }
}
