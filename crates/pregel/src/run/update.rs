//! `update_state` and `bulk_update_state`: writing to a thread's state as
//! if a node had run, through the same writers, reducers and edges.

use stategraph_checkpoint::{CheckpointConfig, CheckpointSource};
use stategraph_core::{RunnableConfig, Value};

use super::checkpointing::{Checkpointing, target_of};
use super::pregel_loop::PregelLoop;
use super::state::detached;
use super::task::{Task, TaskPath};
use crate::error::{PregelError, Result};
use crate::graph::Pregel;
use crate::names;
use crate::node::NodeOutput;
use crate::run_info::Durability;
use crate::shape::NodeId;

/// One update of a [`Pregel::bulk_update_state`] superstep (LangGraph's
/// `StateUpdate`): values written as if `as_node` had returned them.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StateUpdate {
    /// What the node "returned" (`None`: nothing, but its edges still fire).
    pub values: Option<Value>,
    /// The node the update acts as; `None` infers it (single updates only).
    pub as_node: Option<String>,
}

impl StateUpdate {
    /// An update of these values, its node inferred.
    pub fn new(values: impl Into<Value>) -> Self {
        Self {
            values: Some(values.into()),
            as_node: None,
        }
    }

    /// An update that writes nothing (its node's edges still fire).
    pub fn none() -> Self {
        Self::default()
    }

    /// Acts as `node`.
    #[must_use]
    pub fn as_node(mut self, node: impl Into<String>) -> Self {
        self.as_node = Some(node.into());
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
    ///
    /// # Errors
    /// [`PregelError::NoCheckpointer`], [`PregelError::MissingThreadId`];
    /// [`PregelError::InvalidUpdate`] for an unknown `as_node`, or one that
    /// cannot be inferred (two nodes ran last); the writes' own errors; a
    /// saver error. The special `as_node` values `__end__`, `__input__` and
    /// `__copy__` are [`PregelError::Unsupported`].
    pub async fn update_state(
        &self,
        config: &RunnableConfig,
        values: Option<Value>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig> {
        let update = StateUpdate {
            values,
            as_node: as_node.map(str::to_owned),
        };
        self.bulk_update_state(config, vec![vec![update]]).await
    }

    /// Several supersteps of updates, each saved as its own checkpoint
    /// (LangGraph's `bulk_update_state`). Updates in one superstep apply
    /// together, in order; each must name its node when there are several.
    ///
    /// # Errors
    /// As [`Pregel::update_state`]; an empty list of supersteps, or an
    /// empty superstep, is [`PregelError::InvalidGraph`].
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
        if supersteps.is_empty() {
            return Err(PregelError::InvalidGraph("No supersteps provided".into()));
        }
        let mut target = target_of(config)?;
        // Only the first superstep may branch off a named past checkpoint;
        // each later one extends the checkpoint saved before it.
        let mut may_branch = target.checkpoint_id.is_some();
        for updates in supersteps {
            let mut state = detached(&self.inner);
            state.persist = Some(Box::new(Checkpointing::new(
                saver.clone(),
                Durability::Sync,
                target.clone(),
                std::mem::take(&mut may_branch),
            )));
            target = state.perform_update(updates).await?;
        }
        Ok(target)
    }
}

impl PregelLoop {
    /// One superstep of updates on the thread the loop's persistence
    /// targets; returns the new checkpoint's address.
    pub(super) async fn perform_update(
        &mut self,
        updates: Vec<StateUpdate>,
    ) -> Result<CheckpointConfig> {
        if updates.is_empty() {
            return Err(PregelError::InvalidGraph("No updates provided".into()));
        }
        self.load().await?;
        // The step after the loaded checkpoint; 0 on a fresh thread.
        self.step = self.step.max(0);
        // Loaded pending writes are not applied by an update.
        self.resumed = None;
        let several = updates.len() > 1;
        let mut tasks = Vec::with_capacity(updates.len());
        for (index, update) in updates.into_iter().enumerate() {
            let node = match update.as_node.as_deref() {
                Some(special @ (names::END | names::INPUT | "__copy__")) => {
                    return Err(PregelError::Unsupported(format!(
                        "update_state with as_node={special:?}"
                    )));
                }
                Some(name) => self.graph.shape.node_id(name).ok_or_else(|| {
                    PregelError::InvalidUpdate(format!("Node {name} does not exist"))
                })?,
                None if several => {
                    return Err(PregelError::InvalidUpdate(
                        "as_node is required when applying multiple updates".into(),
                    ));
                }
                None => self.infer_as_node().ok_or_else(|| {
                    PregelError::InvalidUpdate("Ambiguous update, specify as_node".into())
                })?,
            };
            let output = update.values.map_or(NodeOutput::None, NodeOutput::Value);
            let mut task = Task::input(Vec::new());
            task.node = node;
            task.path = TaskPath::Update(index);
            self.finish_task(&mut task, &output)?;
            tasks.push(task);
        }
        let updated = self.apply(&mut tasks, true)?;
        self.save(CheckpointSource::Update, &updated).await?;
        self.persist
            .as_ref()
            .map(|persist| persist.target().clone())
            .ok_or(PregelError::NoCheckpointer)
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
