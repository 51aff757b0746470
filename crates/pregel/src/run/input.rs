//! A run's input: values, resume and `Command`s, checked and written to
//! the input channels.

use std::sync::Arc;

use stategraph_core::Value;

use super::pregel_loop::PregelLoop;
use super::task::Task;
use crate::channel_values::ChannelValues;
use crate::command::{Command, Goto, Input, Send};
use crate::error::{PregelError, Result};
use crate::names;
use crate::node::NodeOutput;
use crate::shape::{ChannelId, IoChannels};
use serde::Serialize;

impl PregelLoop {
    pub(super) fn apply_input(&mut self, input: Input) -> Result<Vec<ChannelId>> {
        let writes = match input {
            Input::Value(value) => self.input_writes(value)?,
            Input::Command(command) => return self.apply_command_input(command),
            Input::Resume => {
                return Err(PregelError::EmptyInput(self.input_names()));
            }
        };
        let mut input_task = Task::input(writes);
        self.apply(std::slice::from_mut(&mut input_task), false)
    }

    /// The writes of a run's input to the input channels (at least one).
    pub(super) fn input_writes(&self, value: Value) -> Result<Vec<(ChannelId, Value)>> {
        let writes: Vec<(ChannelId, Value)> = match &self.graph.input {
            IoChannels::One(channel) => vec![(*channel, value)],
            IoChannels::Many(channels) => {
                let json = value.to_json()?;
                let serde_json::Value::Object(map) = json else {
                    return Err(PregelError::InvalidGraph(format!(
                        "expected the input to be a map of channels, got {json}"
                    )));
                };
                let mut writes = Vec::new();
                for (key, value) in map {
                    match self
                        .graph
                        .shape
                        .channel_id(&key)
                        .filter(|c| channels.contains(c))
                    {
                        Some(channel) => writes.push((channel, Value::from_json(value))),
                        None => tracing::warn!(
                            "input channel {key} not found among the graph's input channels"
                        ),
                    }
                }
                writes
            }
        };
        if writes.is_empty() {
            return Err(PregelError::EmptyInput(self.input_names()));
        }
        Ok(writes)
    }

    /// A `Command` as the input of a fresh thread, as LangGraph 1.2.22 runs it
    /// (README semantics #9, trace 08 `command_input`): the command's writes
    /// (`goto`, then `update`) are applied as the input's writes; the tasks
    /// they would trigger are discarded (marked as seen, their trigger values
    /// cleared); then the command itself is written to the input channel like
    /// any other input. The input node therefore applies the `update` a second
    /// time (a reducer key gets it twice), follows the `goto` and fires its own
    /// edges, and the `goto` targets run in the step after it. This upstream
    /// quirk is copied on purpose so that graphs behave as in Python.
    /// (Once checkpoints exist, a `Command` on a thread with a checkpoint
    /// takes the resume path instead: its writes are applied once.)
    ///
    /// A graph with several input channels (a raw `Pregel`) gets only the
    /// command's writes (LangGraph raises a `TypeError` there), and so does a
    /// graph whose typed input channel cannot hold a command.
    ///
    /// A `resume` answers nothing on a thread without a checkpoint: with a
    /// checkpointer the run starts as if the command had no `resume` (its
    /// interrupts fire), as LangGraph's does; without one it is an error.
    pub(super) fn apply_command_input(&mut self, mut command: Command) -> Result<Vec<ChannelId>> {
        let resumes = command.resume.is_some();
        if resumes {
            if self.persist.is_none() {
                return Err(PregelError::Runtime(
                    "Cannot use Command(resume=...) without checkpointer".into(),
                ));
            }
            command.resume = None;
        }
        let writes = self.command_writes(command.clone())?;
        if writes.is_empty() && !resumes {
            return Err(PregelError::EmptyInput(self.input_names()));
        }
        let mut null_task = Task::input(writes);
        let updated = self.apply(std::slice::from_mut(&mut null_task), false)?;
        let IoChannels::One(input) = self.graph.input else {
            return Ok(updated);
        };
        let command = Value::new(InputCommand(command));
        if self
            .channels
            .get(input)
            .boxed_clone()
            .update(vec![command.clone()])
            .is_err()
        {
            return Ok(updated);
        }
        // The discarded tasks have no writes; applying them records what
        // they saw and lets the trigger values expire.
        let mut tasks = self.prepare_tasks(&updated)?;
        tasks.push(Task::input(vec![(input, command)]));
        self.apply(&mut tasks, true)
    }

    /// The input channels as LangGraph names them in errors.
    pub(super) fn input_names(&self) -> String {
        match &self.graph.input {
            IoChannels::One(channel) => self.name(*channel).to_owned(),
            IoChannels::Many(channels) => {
                let names: Vec<String> = channels
                    .iter()
                    .map(|c| format!("'{}'", self.name(*c)))
                    .collect();
                format!("[{}]", names.join(", "))
            }
        }
    }

    /// The channel writes of a command's `goto` and `update` (its `resume`
    /// is the caller's to handle).
    pub(super) fn command_writes(&self, command: Command) -> Result<Vec<(ChannelId, Value)>> {
        if command.graph == crate::command::CommandGraph::Parent {
            return Err(PregelError::InvalidUpdate(
                "There is no parent graph".into(),
            ));
        }
        let mut writes = Vec::new();
        for goto in command.goto {
            match goto {
                Goto::Send(send) => writes.push((self.graph.tasks_channel, Value::new(send))),
                Goto::Node(node) => match self.graph.shape.channel_id(&names::branch_to(&node)) {
                    Some(channel) => writes.push((channel, Value::new(names::START))),
                    None => tracing::warn!("Command goto to unknown node {node:?} ignored"),
                },
            }
        }
        for (key, value) in command.update {
            match self.graph.shape.channel_id(&key) {
                Some(channel) => writes.push((channel, value)),
                None => tracing::warn!("Command update of unknown channel {key:?} ignored"),
            }
        }
        Ok(writes)
    }
}

/// The output of a node without a function: its input, or the `Command` a
/// run was given as input (see `PregelLoop::apply_command_input`).
pub(super) fn passthrough(input: &Value) -> NodeOutput {
    match input.downcast_ref::<InputCommand>() {
        Some(InputCommand(command)) => NodeOutput::Command(command.clone()),
        None => NodeOutput::Value(input.clone()),
    }
}

/// A `Command` given as a run's input, as the input channel holds it.
pub(super) struct InputCommand(Command);

/// Serializes as LangGraph shows a `Command`: the fields that are set.
impl Serialize for InputCommand {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;

        #[derive(Serialize)]
        #[serde(untagged)]
        enum GotoRepr<'a> {
            Node(&'a str),
            Send(&'a Send),
        }

        let command = &self.0;
        let mut map = serializer.serialize_map(None)?;
        if command.graph == crate::command::CommandGraph::Parent {
            map.serialize_entry("graph", "__parent__")?;
        }
        if !command.update.is_empty() {
            let update = ChannelValues::new(
                command
                    .update
                    .iter()
                    .map(|(key, value)| (Arc::from(key.as_str()), value.clone()))
                    .collect(),
            );
            map.serialize_entry("update", &update)?;
        }
        if let Some(resume) = &command.resume {
            map.serialize_entry("resume", resume)?;
        }
        if !command.goto.is_empty() {
            let goto: Vec<GotoRepr<'_>> = command
                .goto
                .iter()
                .map(|goto| match goto {
                    Goto::Node(node) => GotoRepr::Node(node),
                    Goto::Send(send) => GotoRepr::Send(send),
                })
                .collect();
            map.serialize_entry("goto", &goto)?;
        }
        map.end()
    }
}
