//! Checkpointing a run through a `CheckpointSaver`: loading the thread's
//! latest checkpoint at the start, saving one after the input and after
//! every superstep (per the run's [`Durability`]), and the state API
//! (`get_state`, `get_state_history`) built on the same restore code.
//!
//! Everything here runs only for a graph with a checkpointer: a run without
//! one never reaches this module.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::StreamExt;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, CheckpointTuple, ListQuery, SharedSaver,
};
use stategraph_core::{CheckpointId, RunnableConfig, Value};

use super::{Loop, Task, TaskPath};
use crate::error::{PregelError, Result};
use crate::graph::{IoChannels, Pregel, PregelInner};
use crate::node::{RunInfo, Sink, StateValues};
use crate::types::StreamModes;
use crate::{ChannelId, Input};

/// When a run with a checkpointer saves its checkpoints (LangGraph's
/// `durability`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Each checkpoint is saved before the next step starts.
    Sync,
    /// Each checkpoint is saved while the next step runs (the default).
    ///
    /// Puts reach the saver in order: a put starts only after the previous
    /// one succeeded, and runs concurrently with the next step's tasks. The
    /// run waits for every put before it ends. A failed put fails the run at
    /// the next step boundary and no later checkpoint is saved (no child is
    /// ever stored after a parent that failed to save).
    #[default]
    Async,
    /// Only the run's last checkpoint is saved, when the run ends (with a
    /// result or an error); its parent is the checkpoint the run started
    /// from. A crash loses the whole run.
    Exit,
}

/// A thread's state at one checkpoint (LangGraph's `StateSnapshot`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateSnapshot {
    /// The stream channels' values (a map by name, or the value itself for
    /// a single stream channel).
    pub values: Value,
    /// The nodes that would run next (one entry per task: a node sent to
    /// several times appears several times), PUSH tasks first.
    pub next: Vec<String>,
    /// The checkpoint's address (for an empty thread, the address asked for).
    pub config: CheckpointConfig,
    /// The checkpoint's metadata (`None` for an empty thread).
    pub metadata: Option<CheckpointMetadata>,
    /// When the checkpoint was created, RFC 3339 (`None` for an empty thread).
    pub created_at: Option<String>,
    /// The checkpoint this one was computed from.
    pub parent_config: Option<CheckpointConfig>,
}

/// Where a run saves and what it saved last.
pub(super) struct Persist {
    saver: SharedSaver,
    durability: Durability,
    // Thread and namespace; `checkpoint_id` is the parent of the next put
    // (the checkpoint loaded at the start, then the last one submitted).
    target: CheckpointConfig,
    // Channel versions in the last saved (or loaded) checkpoint.
    saved_versions: Vec<Option<ChannelVersion>>,
    // The put in flight (async durability), chained after the previous ones.
    pending: Option<BoxFuture<'static, Result<()>>>,
    // Exit durability: the metadata and updated channels of the state to
    // save when the run ends (`None` = nothing new since the start).
    at_exit: Option<(CheckpointMetadata, Vec<String>)>,
}

impl Persist {
    pub(super) fn new(
        saver: SharedSaver,
        durability: Durability,
        target: CheckpointConfig,
    ) -> Self {
        Self {
            saver,
            durability,
            target,
            saved_versions: Vec::new(),
            pending: None,
            at_exit: None,
        }
    }

    /// The put in flight, to run alongside the next step.
    pub(super) fn take_pending(&mut self) -> Option<BoxFuture<'static, Result<()>>> {
        self.pending.take()
    }

    /// The version a channel gets when it next changes.
    pub(super) fn next_version(&self, max: Option<&ChannelVersion>) -> ChannelVersion {
        CheckpointSaver::get_next_version(&self.saver, max)
    }
}

/// Reads the thread a run with a checkpointer works on.
pub(super) fn target_of(config: &RunnableConfig) -> Result<CheckpointConfig> {
    CheckpointConfig::from_runnable(config).ok_or(PregelError::MissingThreadId)
}

impl Loop {
    /// Restores channels, versions and seen versions from a checkpoint into a
    /// fresh loop. Channels and nodes the graph no longer has are ignored.
    pub(super) fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let graph = self.graph.clone();
        for (name, value) in &checkpoint.channel_values {
            if let Some(channel) = graph.shape.channel_id(name) {
                let restored = graph.channels[channel]
                    .from_checkpoint(Some(value.clone()))
                    .map_err(|err| err.at_key(name))?;
                self.channels.set(channel, restored);
            }
        }
        for (name, version) in &checkpoint.channel_versions {
            if let Some(channel) = graph.shape.channel_id(name) {
                self.versions[channel] = Some(*version);
                if self.max_version.is_none_or(|max| *version > max) {
                    self.max_version = Some(*version);
                }
            }
        }
        for (node_name, seen) in &checkpoint.versions_seen {
            let Some(node) = graph.shape.node_id(node_name) else {
                continue;
            };
            self.ran[node] = true;
            let offset = graph.seen_offset[node];
            for (i, trigger) in graph.nodes[node].triggers.iter().enumerate() {
                if let Some(version) = seen.get(graph.shape.channel_name(*trigger)) {
                    self.seen[offset + i] = Some(*version);
                }
            }
        }
        self.live = (0..self.channels.len())
            .filter(|c| self.channels.get(*c).is_available())
            .collect();
        Ok(())
    }

    /// Loads the thread's checkpoint (the latest, or the config's
    /// `checkpoint_id`). Returns whether it has any channel version (a thread
    /// with state to continue from).
    async fn load(&mut self) -> Result<bool> {
        let Some(persist) = self.persist.as_ref() else {
            return Ok(false);
        };
        let saver = persist.saver.clone();
        let target = persist.target.clone();
        let Some(tuple) = saver.get_tuple(&target).await? else {
            return Ok(false);
        };
        self.restore(&tuple.checkpoint)?;
        self.step = tuple.metadata.step.unwrap_or(-1) + 1;
        let versions = self.versions.clone();
        if let Some(persist) = self.persist.as_mut() {
            persist.target.checkpoint_id = Some(tuple.checkpoint.id.clone());
            persist.saved_versions = versions;
        }
        Ok(!tuple.checkpoint.channel_versions.is_empty())
    }

    /// The start of a run with a checkpointer: load, then apply the input
    /// (saving an input checkpoint) or resume. Returns the channels updated
    /// (empty = look at every node) and leaves `step` at the first step to run.
    pub(super) async fn start_persisted(&mut self, input: Input) -> Result<Vec<ChannelId>> {
        let existing = self.load().await?;
        self.stop = self.step + i64::try_from(self.limit).unwrap_or(i64::MAX - 1) + 1;
        if !existing {
            let updated = self.apply_input(input)?;
            self.save(CheckpointSource::Input, &updated).await?;
            self.step += 1;
            return Ok(updated);
        }
        match input {
            Input::Resume => {
                self.emit_all_values();
                Ok(Vec::new())
            }
            Input::Command(command) => {
                if command.resume.is_some() {
                    return Err(PregelError::Runtime(
                        "Command(resume=...) needs interrupts, which are not supported yet".into(),
                    ));
                }
                let writes = self.command_writes(command)?;
                if writes.is_empty() {
                    return Err(PregelError::EmptyInput(
                        "Received empty Command input".into(),
                    ));
                }
                let mut null_task = Task::input(writes);
                self.apply(std::slice::from_mut(&mut null_task), false)?;
                self.emit_all_values();
                Ok(Vec::new())
            }
            Input::Value(value) => {
                let writes = self.input_writes(value)?;
                // Tasks the loaded checkpoint left unfinished are discarded:
                // applied without writes, which marks their triggers seen.
                let mut tasks = self.prepare_tasks(&[])?;
                let discarding = !tasks.is_empty();
                tasks.push(Task::input(writes));
                let updated = self.apply(&mut tasks, discarding)?;
                tasks.clear();
                self.task_buf = tasks;
                self.save(CheckpointSource::Input, &updated).await?;
                self.step += 1;
                Ok(updated)
            }
        }
    }

    /// A `values` chunk with every stream channel (LangGraph emits one when
    /// a run resumes a thread).
    fn emit_all_values(&self) {
        let all: Vec<ChannelId> = (0..self.channels.len()).collect();
        self.emit_values(&all);
    }

    /// The checkpoint of the loop's current state.
    fn checkpoint(&self, id: CheckpointId, updated: Option<Vec<String>>) -> Checkpoint {
        let graph = &self.graph;
        let mut checkpoint = Checkpoint::empty();
        checkpoint.id = id;
        for (channel, version) in self.versions.iter().enumerate() {
            let Some(version) = version else { continue };
            let name = graph.shape.channel_name(channel);
            checkpoint
                .channel_versions
                .insert(name.to_owned(), *version);
            if let Some(value) = self.channels.get(channel).checkpoint() {
                checkpoint.channel_values.insert(name.to_owned(), value);
            }
        }
        for (node, ran) in self.ran.iter().enumerate() {
            if !ran {
                continue;
            }
            let offset = graph.seen_offset[node];
            let seen: ChannelVersions = graph.nodes[node]
                .triggers
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    Some((
                        graph.shape.channel_name(*c).to_owned(),
                        self.seen[offset + i]?,
                    ))
                })
                .collect();
            checkpoint
                .versions_seen
                .insert(graph.shape.node_name(node).to_string(), seen);
        }
        checkpoint.updated_channels = updated;
        checkpoint
    }

    /// Saves (or, with exit durability, records) a checkpoint of the current
    /// state at the current step.
    pub(super) async fn save(
        &mut self,
        source: CheckpointSource,
        updated: &[ChannelId],
    ) -> Result<()> {
        let Some(durability) = self.persist.as_ref().map(|p| p.durability) else {
            return Ok(());
        };
        let metadata =
            CheckpointMetadata::new(source, self.step).merged_with_config(&self.run.config);
        let mut names: Vec<String> = updated
            .iter()
            .map(|c| self.graph.shape.channel_name(*c).to_owned())
            .collect();
        names.sort();
        if durability == Durability::Exit {
            if let Some(persist) = self.persist.as_mut() {
                persist.at_exit = Some((metadata, names));
            }
            return Ok(());
        }
        let checkpoint = self.checkpoint(CheckpointId::new(), Some(names));
        let new_versions = self.new_versions();
        let versions = self.versions.clone();
        let Some(persist) = self.persist.as_mut() else {
            return Ok(());
        };
        let put = persist.submit(checkpoint, metadata, new_versions, versions);
        match durability {
            Durability::Sync => put.await,
            _ => {
                persist.pending = Some(put);
                Ok(())
            }
        }
    }

    /// The channels whose version changed since the last saved checkpoint.
    fn new_versions(&self) -> ChannelVersions {
        let saved = self
            .persist
            .as_ref()
            .map_or(&[][..], |p| p.saved_versions.as_slice());
        self.versions
            .iter()
            .enumerate()
            .filter_map(|(channel, version)| {
                let version = (*version)?;
                (saved.get(channel).copied().flatten() != Some(version))
                    .then(|| (self.graph.shape.channel_name(channel).to_owned(), version))
            })
            .collect()
    }

    /// The end of a run with a checkpointer: waits for the puts in flight
    /// and, with exit durability, saves the final checkpoint. The run's own
    /// error, if any, wins over a saving error.
    pub(super) async fn finish_persisted(&mut self, result: Result<()>) -> Result<()> {
        let at_exit = match self.persist.as_mut() {
            Some(persist) => persist.at_exit.take(),
            None => return result,
        };
        let exit_checkpoint = at_exit
            .map(|(metadata, names)| (self.checkpoint(CheckpointId::new(), Some(names)), metadata));
        let new_versions = self.new_versions();
        let versions = self.versions.clone();
        let Some(persist) = self.persist.as_mut() else {
            return result;
        };
        let mut saved = match persist.pending.take() {
            Some(pending) => pending.await,
            None => Ok(()),
        };
        if let (Ok(()), Some((checkpoint, metadata))) = (&saved, exit_checkpoint) {
            saved = persist
                .submit(checkpoint, metadata, new_versions, versions)
                .await;
        }
        result.and(saved)
    }
}

impl Persist {
    /// A put of `checkpoint` chained after the put in flight (which it
    /// takes); `versions` become the saved versions.
    fn submit(
        &mut self,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        versions: Vec<Option<ChannelVersion>>,
    ) -> BoxFuture<'static, Result<()>> {
        let config = self.target.clone();
        self.target.checkpoint_id = Some(checkpoint.id.clone());
        self.saved_versions = versions;
        let saver = self.saver.clone();
        let previous = self.pending.take();
        async move {
            if let Some(previous) = previous {
                previous.await?;
            }
            saver
                .put(&config, checkpoint, metadata, new_versions)
                .await?;
            Ok(())
        }
        .boxed()
    }
}

/// A loop that only restores checkpoints (no sink, no run).
fn detached(graph: &Arc<PregelInner>) -> Loop {
    let run = RunInfo {
        config: RunnableConfig::default(),
        sink: Sink {
            queue: Arc::default(),
            modes: StreamModes::NONE,
            namespace: Arc::from(Vec::new()),
            shown: graph.stream.clone(),
        },
        forward: None,
        seed: 0,
        context: None,
        subgraphs: false,
        child: false,
    };
    Loop::new(graph.clone(), run)
}

/// The snapshot of one stored checkpoint: its values and the tasks it
/// would run next.
fn snapshot(graph: &Arc<PregelInner>, tuple: &CheckpointTuple) -> Result<StateSnapshot> {
    let mut state = detached(graph);
    state.restore(&tuple.checkpoint)?;
    let mut tasks = state.prepare_tasks(&[])?;
    // Planned without a previous step, LangGraph lists the `Send` tasks
    // first, then the triggered nodes in the order they were added.
    tasks.sort_by_key(|task| match task.path {
        TaskPath::Push(index) => (0, index),
        TaskPath::Pull(node) => (1, graph.shape.node_declared(node)),
    });
    let next = tasks
        .iter()
        .map(|task| graph.shape.node_name(task.node).to_string())
        .collect();
    Ok(StateSnapshot {
        values: state.values_of(&graph.stream),
        next,
        config: tuple.config.clone(),
        metadata: Some(tuple.metadata.clone()),
        created_at: Some(tuple.checkpoint.ts.clone()),
        parent_config: tuple.parent_config.clone(),
    })
}

impl Pregel {
    fn saver(&self) -> Result<&SharedSaver> {
        self.inner
            .checkpointer
            .as_ref()
            .ok_or(PregelError::NoCheckpointer)
    }

    /// The state of a thread at its latest checkpoint, or at the config's
    /// `checkpoint_id` (LangGraph's `get_state`). An empty thread gives empty
    /// values, no `next` and no metadata.
    ///
    /// # Errors
    /// [`PregelError::NoCheckpointer`], [`PregelError::MissingThreadId`], a
    /// saver error, or a stored value that does not fit its channel.
    pub async fn get_state(&self, config: &RunnableConfig) -> Result<StateSnapshot> {
        let saver = self.saver()?;
        let target = target_of(config)?;
        match saver.get_tuple(&target).await? {
            Some(tuple) => snapshot(&self.inner, &tuple),
            None => Ok(StateSnapshot {
                values: match &self.inner.stream {
                    IoChannels::One(_) => Value::null(),
                    IoChannels::Many(_) => Value::new(StateValues::default()),
                },
                next: Vec::new(),
                config: target,
                metadata: None,
                created_at: None,
                parent_config: None,
            }),
        }
    }

    /// The checkpoints of a thread, newest first (LangGraph's
    /// `get_state_history`). `query` gives the metadata filter, `before` and
    /// `limit`; its thread, namespace and checkpoint id are taken from
    /// `config`. An empty thread gives an empty list.
    ///
    /// # Errors
    /// As [`Pregel::get_state`], or an invalid filter.
    pub async fn get_state_history(
        &self,
        config: &RunnableConfig,
        query: ListQuery,
    ) -> Result<Vec<StateSnapshot>> {
        let saver = self.saver()?;
        let target = target_of(config)?;
        let mut query = query;
        query.thread_id = Some(target.thread_id);
        query.checkpoint_ns = Some(target.checkpoint_ns);
        query.checkpoint_id = target.checkpoint_id;
        let mut tuples = saver.list(query);
        let mut history = Vec::new();
        while let Some(tuple) = tuples.next().await {
            history.push(snapshot(&self.inner, &tuple?)?);
        }
        Ok(history)
    }
}
