//! `update_state` and `bulk_update_state`: writing to a thread's state as
//! if a node had run, through the same writers, reducers and edges; or, by
//! the special `as_node` values, clearing its tasks (`__end__`), writing
//! input (`__input__`) or copying a checkpoint (`__copy__`).

use std::collections::{BTreeMap, VecDeque};

use stategraph_checkpoint::{CheckpointConfig, CheckpointSaver, CheckpointSource, SharedSaver};
use stategraph_core::{CheckpointId, RunnableConfig, Value};

use super::checkpointing::{Checkpointing, target_of};
use super::pregel_loop::PregelLoop;
use super::state::detached;
use super::task::{Task, TaskPath};
use crate::command::Command;
use crate::error::{PregelError, Result};
use crate::graph::Pregel;
use crate::names;
use crate::node::NodeOutput;
use crate::run_info::Durability;
use crate::shape::NodeId;
use crate::task_id::TaskPathText;

/// One update of a [`Pregel::bulk_update_state`] superstep (LangGraph's
/// `StateUpdate`): values written as if `as_node` had returned them.
///
/// Besides node names, `as_node` takes LangGraph's special values:
/// [`END`](names::END) with no values clears the checkpoint's tasks (their
/// triggers are consumed; the writes of tasks that had finished are kept),
/// [`INPUT`](names::INPUT) writes the values as the graph's input (the
/// next run starts from them), and [`COPY`](names::COPY) copies the checkpoint (as a
/// sibling: same values, same parent; `values`, if given, is a list of
/// `[values, as_node]` pairs applied to the copy as a second superstep).
/// Each of them must be the only update of its superstep.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StateUpdate {
    /// What the node "returned" (`None`: nothing, but its edges still fire).
    pub values: Option<Value>,
    /// The node the update acts as; `None` infers it (single updates only).
    pub as_node: Option<String>,
    /// The id its writes are saved under; `None` reuses the id of the task
    /// the checkpoint had planned for that node (so the checkpoint's history
    /// shows that task's result), or makes one.
    pub task_id: Option<String>,
    /// What the node "returned" as a [`Command`], in place of `values`
    /// (LangGraph's `StateUpdate(Command(...), as_node)`): its `update` is
    /// the node's write and its `goto` adds branches on top of the node's
    /// own edges. Its `resume` does nothing (no node runs). Only for real
    /// nodes, not the special `as_node` values.
    pub command: Option<Command>,
}

impl StateUpdate {
    /// An update of these values, its node inferred.
    pub fn new(values: impl Into<Value>) -> Self {
        Self {
            values: Some(values.into()),
            ..Self::default()
        }
    }

    /// An update that writes nothing (its node's edges still fire).
    pub fn none() -> Self {
        Self::default()
    }

    /// An update by a command: its `update` written, its `goto` followed,
    /// as if `as_node` had returned it.
    pub fn command(command: Command) -> Self {
        Self {
            command: Some(command),
            ..Self::default()
        }
    }

    /// Acts as `node`.
    #[must_use]
    pub fn as_node(mut self, node: impl Into<String>) -> Self {
        self.as_node = Some(node.into());
        self
    }

    /// Saves the update's writes under `task_id`.
    #[must_use]
    pub fn task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }
}

impl Pregel {
    /// Writes `values` to a thread's state as if `as_node` had returned them
    /// (LangGraph's `update_state`): through the reducers, with the node's
    /// edges firing, so `as_node` decides what runs next. Without `as_node`,
    /// the node that ran last is used. Saves a checkpoint (`source:
    /// update`, the next step) after the config's checkpoint (the latest,
    /// or the one `checkpoint_id` names: a fork) and returns its address.
    /// The writes are also saved as pending writes of the checkpoint built
    /// on (unless it was a past one), under the id of the task it had
    /// planned for the node, so its history shows that task's result.
    /// `as_node` may be one of the special values [`StateUpdate`] lists.
    ///
    /// # Errors
    /// [`PregelError::NoCheckpointer`], [`PregelError::MissingThreadId`];
    /// [`PregelError::InvalidUpdate`] for an unknown `as_node`, one that
    /// cannot be inferred (two nodes ran last), `__input__` without values,
    /// `__copy__` of a thread with no checkpoint; the writes' own errors; a
    /// saver error.
    pub async fn update_state(
        &self,
        config: &RunnableConfig,
        values: Option<Value>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig> {
        let update = StateUpdate {
            values,
            as_node: as_node.map(str::to_owned),
            ..StateUpdate::default()
        };
        self.bulk_update_state(config, vec![vec![update]]).await
    }

    /// Several supersteps of updates, each saved as its own checkpoint
    /// (LangGraph's `bulk_update_state`). Updates in one superstep apply
    /// together, in order; each must name its node when there are several.
    ///
    /// # Errors
    /// As [`Pregel::update_state`]; an empty list of supersteps, or an
    /// empty superstep, is [`PregelError::InvalidGraph`] (LangGraph's
    /// `ValueError`), checked before anything is written; several updates
    /// in a superstep with `__end__`, `__input__` or `__copy__` are
    /// [`PregelError::InvalidUpdate`].
    pub async fn bulk_update_state(
        &self,
        config: &RunnableConfig,
        supersteps: Vec<Vec<StateUpdate>>,
    ) -> Result<CheckpointConfig> {
        let saver = self
            .inner
            .checkpointer
            .clone()
            .ok_or(PregelError::NoCheckpointer)?;
        self.bulk_update_state_in(&saver, config, supersteps).await
    }

    /// [`Pregel::bulk_update_state`] through another graph's saver: the
    /// state of this graph run as a subgraph of a graph that checkpoints
    /// (the config's `checkpoint_ns` says where), as
    /// [`Pregel::get_state_in`] reads it.
    ///
    /// # Errors
    /// As [`Pregel::bulk_update_state`].
    pub async fn bulk_update_state_in(
        &self,
        saver: &SharedSaver,
        config: &RunnableConfig,
        supersteps: Vec<Vec<StateUpdate>>,
    ) -> Result<CheckpointConfig> {
        if supersteps.is_empty() {
            return Err(PregelError::InvalidGraph("No supersteps provided".into()));
        }
        if supersteps.iter().any(Vec::is_empty) {
            return Err(PregelError::InvalidGraph("No updates provided".into()));
        }
        let mut target = target_of(config)?;
        // Only the first superstep may branch off a named past checkpoint;
        // each later one extends the checkpoint saved before it.
        let mut first = true;
        let mut pending: VecDeque<Vec<StateUpdate>> = supersteps.into();
        while let Some(updates) = pending.pop_front() {
            let mut state = detached(&self.inner);
            let may_branch = first && target.checkpoint_id.is_some();
            state.persist = Some(Box::new(Checkpointing::new(
                saver.clone(),
                Durability::Sync,
                target.clone(),
                may_branch,
            )));
            let (saved, then) = state.perform_update(updates, first).await?;
            target = saved;
            // A copy with updates: they are the next superstep, on the copy.
            if let Some(then) = then {
                pending.push_front(then);
            }
            first = false;
        }
        Ok(target)
    }
}

/// The id of the `index`-th update of a superstep with no planned task to
/// reuse (LangGraph's `_update_task_id`): a UUIDv5 of the checkpoint.
fn update_task_id(checkpoint: &CheckpointId, index: usize) -> String {
    let name = if index == 0 {
        names::INTERRUPT.to_owned()
    } else {
        format!("{}:{index}", names::INTERRUPT)
    };
    uuid_v5(checkpoint, &name)
}

/// A UUIDv5 named `name` in the namespace of a checkpoint's id.
fn uuid_v5(checkpoint: &CheckpointId, name: &str) -> String {
    let namespace = checkpoint
        .uuid_bytes()
        .map_or(uuid::Uuid::nil(), uuid::Uuid::from_bytes);
    uuid::Uuid::new_v5(&namespace, name.as_bytes()).to_string()
}

impl PregelLoop {
    /// One superstep of updates on the thread the loop's persistence
    /// targets; returns the new checkpoint's address, and for a copy with
    /// updates, those updates (the next superstep).
    async fn perform_update(
        &mut self,
        updates: Vec<StateUpdate>,
        first: bool,
    ) -> Result<(CheckpointConfig, Option<Vec<StateUpdate>>)> {
        self.load().await?;
        let base = self.persist.as_ref().and_then(|p| p.current.clone());
        // The step after the loaded checkpoint; 0 on a fresh thread.
        self.step = self.step.max(0);
        let several = updates.len() > 1;
        let lead = &updates[0];
        let mut then = None;
        if let Some(special) = lead
            .as_node
            .as_deref()
            .filter(|node| [names::END, names::INPUT, names::COPY].contains(node))
            && lead.command.is_some()
        {
            return Err(invalid(&format!(
                "A command cannot be applied as {special}, only as a node"
            )));
        }
        match lead.as_node.as_deref() {
            Some(names::END) if lead.values.is_none() => {
                if several {
                    return Err(invalid("Cannot apply multiple updates when clearing state"));
                }
                self.clear_tasks(base.is_some()).await?;
            }
            Some(names::INPUT) => {
                if several {
                    return Err(invalid(
                        "Cannot apply multiple updates when updating as input",
                    ));
                }
                let values = updates.into_iter().next().and_then(|u| u.values);
                self.update_as_input(values, base.as_ref()).await?;
            }
            Some(names::COPY) => {
                if several {
                    return Err(invalid("Cannot copy checkpoint with multiple updates"));
                }
                let Some(base) = base else {
                    return Err(invalid("Cannot copy a non-existent checkpoint"));
                };
                let values = updates.into_iter().next().and_then(|u| u.values);
                then = copy_updates(values)?;
                self.copy_checkpoint(&base).await?;
            }
            _ => self.update_as_nodes(updates, base.as_ref(), first).await?,
        }
        let saved = self
            .persist
            .as_ref()
            .map(|persist| persist.target().clone())
            .ok_or(PregelError::NoCheckpointer)?;
        Ok((saved, then))
    }

    /// `as_node=__end__`: the loaded checkpoint's tasks are cleared (their
    /// triggers consumed), keeping the writes of those that finished and
    /// of the run's input commands.
    async fn clear_tasks(&mut self, saved: bool) -> Result<()> {
        let resumed = self.resumed.take();
        let mut updated = Vec::new();
        if saved {
            let mut tasks = self.prepare_tasks(&[])?;
            self.identify(&mut tasks);
            if let Some(resumed) = &resumed {
                let shape = self.graph.shape.clone();
                let null_writes = resumed.channel_writes(names::NULL_TASK_ID, &shape);
                if !null_writes.is_empty() {
                    updated.extend(self.apply(&mut [Task::input(null_writes)], false)?);
                }
                for task in &mut tasks {
                    if let Some(pad) = &task.pad {
                        task.writes = resumed.channel_writes(pad.task_id(), &shape);
                    }
                }
            }
            updated.extend(self.apply(&mut tasks, true)?);
        }
        updated.sort_unstable();
        updated.dedup();
        self.save(CheckpointSource::Update, &updated).await
    }

    /// `as_node=__input__`: `values` written as the graph's input, saved as
    /// an `input` checkpoint (the next run starts from it).
    async fn update_as_input(
        &mut self,
        values: Option<Value>,
        base: Option<&CheckpointId>,
    ) -> Result<()> {
        self.resumed = None;
        let Some(values) = values else {
            let inputs = match &self.graph.input {
                crate::shape::IoChannels::One(channel) => {
                    self.graph.shape.channel_name(*channel).to_owned()
                }
                crate::shape::IoChannels::Many(channels) => channels
                    .iter()
                    .map(|c| self.graph.shape.channel_name(*c))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return Err(invalid(&format!("Received no input writes for {inputs}")));
        };
        let writes = self.input_writes(values)?;
        if let Some(base) = base {
            let task_id = uuid_v5(base, names::INPUT);
            self.save_base_writes(&task_id, "", &writes).await?;
        }
        let mut input = Task::input(writes);
        let updated = self.apply(std::slice::from_mut(&mut input), false)?;
        if base.is_none() {
            self.step = -1;
        }
        self.save(CheckpointSource::Input, &updated).await
    }

    /// `as_node=__copy__`: a copy of the loaded checkpoint (a `fork` one
    /// step later), saved beside it: its parent is the loaded one's parent.
    async fn copy_checkpoint(&mut self, base: &CheckpointId) -> Result<()> {
        self.resumed = None;
        let persist = self.persist.as_mut().ok_or(PregelError::NoCheckpointer)?;
        let parent = persist.loaded_parent.clone();
        // The copy branches off the parent, and sorts after the copied
        // checkpoint (and the thread's latest).
        persist.may_branch = true;
        if persist.latest.is_none() {
            persist.latest = Some(base.clone());
        }
        persist.target.checkpoint_id = parent;
        self.save(CheckpointSource::Fork, &[]).await
    }

    /// Updates acting as nodes: each runs its node's writers on its
    /// values; the writes apply together, are saved as pending writes of
    /// the loaded checkpoint (unless the update branches off a past one)
    /// and the result as an `update` checkpoint.
    async fn update_as_nodes(
        &mut self,
        updates: Vec<StateUpdate>,
        base: Option<&CheckpointId>,
        first: bool,
    ) -> Result<()> {
        let several = updates.len() > 1;
        // The loaded pending writes are not applied by an update.
        self.resumed = None;
        // The ids of the tasks the loaded checkpoint planned, by node: an
        // update acting as one of them takes its id.
        let mut planned: BTreeMap<NodeId, VecDeque<String>> = BTreeMap::new();
        if base.is_some() {
            let mut tasks = self.prepare_tasks(&[])?;
            self.identify(&mut tasks);
            for task in &tasks {
                if let Some(pad) = &task.pad {
                    planned
                        .entry(task.node)
                        .or_default()
                        .push_back(pad.task_id().to_string());
                }
            }
        }
        let fresh = CheckpointId::new();
        let mut tasks = Vec::with_capacity(updates.len());
        let mut ids = Vec::with_capacity(updates.len());
        for (index, update) in updates.into_iter().enumerate() {
            let node = match update.as_node.as_deref() {
                Some(name) => self
                    .graph
                    .shape
                    .node_id(name)
                    .ok_or_else(|| invalid(&format!("Node {name} does not exist")))?,
                None if several => {
                    return Err(invalid(
                        "as_node is required when applying multiple updates",
                    ));
                }
                None => self
                    .infer_as_node()
                    .ok_or_else(|| invalid("Ambiguous update, specify as_node"))?,
            };
            let id = match update.task_id {
                Some(id) => id,
                None => planned
                    .get_mut(&node)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or_else(|| update_task_id(base.unwrap_or(&fresh), index)),
            };
            let output = match (update.command, update.values) {
                (Some(mut command), _) => {
                    command.resume = None;
                    NodeOutput::Command(command)
                }
                (None, values) => values.map_or(NodeOutput::None, NodeOutput::Value),
            };
            let mut task = Task::input(Vec::new());
            task.node = node;
            task.path = TaskPath::Update(index);
            self.finish_task(&mut task, &output)?;
            // An async router's routes.
            let routes = std::mem::take(self.routes.get_mut());
            for writes in routes {
                task.writes.extend(writes.await?);
            }
            tasks.push(task);
            ids.push(id);
        }
        // Writes saved on a past checkpoint would show in its other
        // branches: a branching update keeps them to its own checkpoint.
        let branching = first
            && self
                .persist
                .as_ref()
                .is_some_and(|p| p.may_branch && p.latest.is_some() && p.latest != p.current);
        if base.is_some() && !branching {
            for (index, (task, id)) in tasks.iter().zip(&ids).enumerate() {
                let path = TaskPathText::Update(index).text();
                self.save_base_writes(id, &path, &task.writes).await?;
            }
        }
        let updated = self.apply(&mut tasks, true)?;
        self.save(CheckpointSource::Update, &updated).await
    }

    /// Saves `writes` (but `Send`s, which the new checkpoint carries) as
    /// pending writes of the loaded checkpoint, under `task_id`.
    async fn save_base_writes(
        // `&mut`: a shared borrow of the loop (not `Sync`) held across the
        // await would make `update_state`'s future not `Send`.
        &mut self,
        task_id: &str,
        task_path: &str,
        writes: &[(crate::shape::ChannelId, Value)],
    ) -> Result<()> {
        let Some(persist) = self.persist.as_ref() else {
            return Ok(());
        };
        let shape = &self.graph.shape;
        let writes: Vec<(String, Value)> = writes
            .iter()
            .map(|(channel, value)| (shape.channel_name(*channel).to_owned(), value.clone()))
            .filter(|(channel, _)| channel != names::TASKS)
            .collect();
        if writes.is_empty() {
            return Ok(());
        }
        persist
            .saver
            .put_writes(&persist.target, writes, task_id, task_path)
            .await?;
        Ok(())
    }

    /// The node an update without `as_node` acts as (LangGraph's
    /// `_infer_as_node`): the one that saw the newest channel version, or,
    /// on a thread where nothing ran, the input node. `None` when two
    /// nodes saw that version.
    pub(super) fn infer_as_node(&self) -> Option<NodeId> {
        let graph = &self.graph;
        let mut newest: Option<(stategraph_checkpoint::ChannelVersion, NodeId)> = None;
        let mut tied = false;
        for node in (0..graph.nodes.len()).filter(|n| self.ran[*n]) {
            let offset = graph.seen_offset[node];
            let seen = (0..graph.nodes[node].triggers.len()).filter_map(|i| self.seen[offset + i]);
            for version in seen {
                match newest {
                    Some((best, owner)) if version == best && owner != node => tied = true,
                    Some((best, _)) if version <= best => {}
                    _ => {
                        newest = Some((version, node));
                        tied = false;
                    }
                }
            }
        }
        match newest {
            Some((_, node)) if !tied => Some(node),
            Some(_) => None,
            None => graph.shape.node_id(names::START),
        }
    }
}

/// The updates a `__copy__` applies to its copy: `values` as a list of
/// `[values, as_node]` pairs (`None`, or an empty list: none).
fn copy_updates(values: Option<Value>) -> Result<Option<Vec<StateUpdate>>> {
    let Some(values) = values else {
        return Ok(None);
    };
    let json = values.to_json()?;
    let serde_json::Value::Array(items) = json else {
        return Ok(None);
    };
    if items.is_empty() {
        return Ok(None);
    }
    let updates = items
        .into_iter()
        .map(|item| match item {
            serde_json::Value::Array(pair) if !pair.is_empty() && pair.len() <= 2 => {
                let mut pair = pair.into_iter();
                let values = pair.next().filter(|v| !v.is_null()).map(Value::from_json);
                let as_node = match pair.next() {
                    Some(serde_json::Value::String(node)) => Some(node),
                    Some(serde_json::Value::Null) | None => None,
                    Some(other) => {
                        return Err(invalid(&format!(
                            "Invalid update item: as_node {other} when copying checkpoint"
                        )));
                    }
                };
                Ok(StateUpdate {
                    values,
                    as_node,
                    ..StateUpdate::default()
                })
            }
            other => Err(invalid(&format!(
                "Invalid update item: {other} when copying checkpoint"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(updates))
}

fn invalid(message: &str) -> PregelError {
    PregelError::InvalidUpdate(message.to_owned())
}
