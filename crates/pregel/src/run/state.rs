//! The state API: `get_state` and `get_state_history` (LangGraph's
//! `StateSnapshot`s), read from stored checkpoints with the restore code
//! runs use, on a loop that never runs.

use std::sync::Arc;

use super::announce::planned_order;
use super::checkpointing::{Resumed, interrupts_of, is_control, target_of};
use super::pregel_loop::PregelLoop;
use super::task::{Task, TaskPath};
use crate::channel_values::ChannelValues;
use crate::chunk::StreamModes;
use crate::error::{PregelError, Result};
use crate::graph::{CompiledGraph, Pregel};
use crate::interrupt::Interrupt;
use crate::names;
use crate::run_info::{RunInfo, Sink};
use crate::shape::{ChannelId, IoChannels};
use futures::stream::StreamExt;
use stategraph_checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointTuple, ListQuery,
    PendingWrite, SharedSaver,
};
use stategraph_core::{RunnableConfig, Value};

/// A thread's state at one checkpoint (LangGraph's `StateSnapshot`).
#[derive(Clone, Debug, PartialEq)]
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
    /// The tasks of the step that follows the checkpoint, with what the
    /// saved pending writes say of them (result, error, interrupts).
    pub tasks: Vec<PregelTask>,
    /// The interrupts of those tasks: the unanswered ones for a thread's
    /// latest state, all of them for a past checkpoint.
    pub interrupts: Vec<Interrupt>,
}

/// A task of a [`StateSnapshot`] (LangGraph's `PregelTask`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PregelTask {
    /// The task id (the id the task had, or will have, in its run).
    pub id: String,
    /// The node.
    pub name: String,
    /// LangGraph's task path: `["__pregel_pull", node]` or
    /// `["__pregel_push", index, false]`.
    pub path: serde_json::Value,
    /// The saved error of a failed task, `Class('message')`.
    pub error: Option<String>,
    /// The interrupts the task raised: for a thread's latest state only
    /// those still waiting for an answer (none once the task finished), for
    /// a past checkpoint all of them.
    pub interrupts: Vec<Interrupt>,
    /// A finished task's writes to the state keys.
    pub result: Option<Value>,
    /// For a node that runs a subgraph: where that subgraph's checkpoints
    /// are (read them with `get_state` on this address).
    pub state: Option<CheckpointConfig>,
    /// That subgraph's own state, when asked for (LangGraph's
    /// `get_state(subgraphs=True)`).
    pub subgraph: Option<Box<StateSnapshot>>,
}
/// A loop that only restores checkpoints (no sink, no run).
pub(super) fn detached(graph: &Arc<CompiledGraph>) -> PregelLoop {
    let sink = Sink {
        queue: Arc::default(),
        modes: StreamModes::NONE,
        namespace: crate::chunk::Namespace::ROOT,
        shown: graph.stream.clone(),
        seen: crate::run_info::SeenMessages::default(),
        latest_only: false,
    };
    let run = RunInfo::new(
        graph.shape.clone(),
        graph.clone(),
        RunnableConfig::default(),
        sink,
        None,
        &crate::run_info::RunOptions::default(),
        None,
    );
    PregelLoop::new(graph.clone(), run)
}
/// The snapshot of one stored checkpoint: its values and the tasks it
/// would run next, with what its pending writes say of them. `live` (the
/// thread's latest state, not a checkpoint asked for by id) lists only the
/// unfinished tasks as `next` and includes the finished ones' writes in the
/// values, as LangGraph does.
pub(super) fn snapshot(
    graph: &Arc<CompiledGraph>,
    tuple: &CheckpointTuple,
    live: bool,
) -> Result<StateSnapshot> {
    let mut state = detached(graph);
    state.restore(&tuple.checkpoint)?;
    state.step = tuple.metadata.step.unwrap_or(-1) + 1;
    let mut tasks = state.prepare_tasks(&[])?;
    state.identify_from(
        Some(&tuple.checkpoint.id),
        &Arc::from(tuple.config.checkpoint_ns.as_str()),
        &mut tasks,
    );
    tasks.sort_by_key(|task| planned_order(graph, task));
    let saved = Resumed {
        writes: tuple.pending_writes.clone(),
    };
    let mut shown = Vec::with_capacity(tasks.len());
    let mut finished = Vec::new();
    for task in &tasks {
        let Some(pad) = &task.pad else { continue };
        let name = graph.shape.node_name(task.node);
        let writes: Vec<&PendingWrite> = saved.of_task(pad.task_id()).collect();
        let outputs: Vec<(ChannelId, Value)> = writes
            .iter()
            .filter(|w| !is_control(&w.channel))
            .filter_map(|w| Some((graph.shape.channel_id(&w.channel)?, w.value.clone())))
            .collect();
        let done = writes.iter().any(|w| !is_control(&w.channel));
        let result = done.then(|| {
            let mut pairs: Vec<(Arc<str>, Value)> = Vec::new();
            for (channel, value) in outputs.iter().filter(|(c, _)| graph_shows(graph, *c)) {
                let key = graph.shape.channel_name_arc(*channel);
                pairs.retain(|(k, _)| *k != key);
                pairs.push((key, value.clone()));
            }
            Value::new(ChannelValues::new(pairs))
        });
        if done {
            let mut applied = Task::input(outputs);
            applied.path = task.path.clone();
            finished.push(applied);
        }
        shown.push(PregelTask {
            id: pad.task_id().to_string(),
            name: name.to_string(),
            path: task_path_json(&task.path, name),
            error: writes.iter().find(|w| w.channel == names::ERROR).map(|w| {
                match w.value.as_json() {
                    Some(serde_json::Value::String(text)) => text.clone(),
                    _ => w
                        .value
                        .clone()
                        .decode::<String>()
                        .map_or_else(|_| w.value.type_name().to_owned(), |s| (*s).clone()),
                }
            }),
            // The latest state lists only the questions still waiting for
            // an answer (none for a finished task); a past checkpoint is a
            // record of the step and lists every interrupt raised in it.
            interrupts: if live && done {
                Vec::new()
            } else {
                writes
                    .iter()
                    .filter(|w| w.channel == names::INTERRUPT)
                    .flat_map(|w| interrupts_of(&w.value))
                    .collect()
            },
            result,
            state: graph.nodes[task.node].subgraph.then(|| CheckpointConfig {
                thread_id: tuple.config.thread_id.clone(),
                checkpoint_ns: pad.namespace().to_owned(),
                checkpoint_id: None,
            }),
            subgraph: None,
        });
    }
    if live && !finished.is_empty() {
        state.apply(&mut finished, false)?;
    }
    let next = shown
        .iter()
        .filter(|task| !live || task.result.is_none())
        .map(|task| task.name.clone())
        .collect();
    let interrupts = shown
        .iter()
        .filter(|task| !live || task.result.is_none())
        .flat_map(|task| task.interrupts.iter().cloned())
        .collect();
    Ok(StateSnapshot {
        values: state.values_of(&graph.stream),
        next,
        config: tuple.config.clone(),
        metadata: Some(tuple.metadata.clone()),
        created_at: Some(tuple.checkpoint.ts.clone()),
        parent_config: tuple.parent_config.clone(),
        tasks: shown,
        interrupts,
    })
}

/// Whether `values`/`updates` show the channel (a state key).
pub(super) fn graph_shows(graph: &CompiledGraph, channel: ChannelId) -> bool {
    match &graph.stream {
        IoChannels::One(c) => *c == channel,
        IoChannels::Many(cs) => cs.contains(&channel),
    }
}

impl Pregel {
    pub(super) fn saver(&self) -> Result<&SharedSaver> {
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
        self.get_state_in(self.saver()?, config).await
    }

    /// [`Pregel::get_state`] through another graph's saver: the state of
    /// this graph run as a subgraph of a graph that checkpoints (the
    /// config's `checkpoint_ns` says where).
    ///
    /// # Errors
    /// As [`Pregel::get_state`].
    pub async fn get_state_in(
        &self,
        saver: &SharedSaver,
        config: &RunnableConfig,
    ) -> Result<StateSnapshot> {
        let target = target_of(config)?;
        match saver.get_tuple(&target).await? {
            Some(tuple) => snapshot(&self.inner, &tuple, target.checkpoint_id.is_none()),
            None => Ok(StateSnapshot {
                values: match &self.inner.stream {
                    IoChannels::One(_) => Value::null(),
                    IoChannels::Many(_) => Value::new(ChannelValues::default()),
                },
                next: Vec::new(),
                config: target,
                metadata: None,
                created_at: None,
                parent_config: None,
                tasks: Vec::new(),
                interrupts: Vec::new(),
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
        self.get_state_history_in(self.saver()?, config, query)
            .await
    }

    /// [`Pregel::get_state_history`] through another graph's saver (see
    /// [`Pregel::get_state_in`]).
    ///
    /// # Errors
    /// As [`Pregel::get_state_history`].
    pub async fn get_state_history_in(
        &self,
        saver: &SharedSaver,
        config: &RunnableConfig,
        query: ListQuery,
    ) -> Result<Vec<StateSnapshot>> {
        let target = target_of(config)?;
        let mut query = query;
        query.thread_id = Some(target.thread_id);
        query.checkpoint_ns = Some(target.checkpoint_ns);
        query.checkpoint_id = target.checkpoint_id;
        let mut tuples = saver.list(query);
        let mut history = Vec::new();
        while let Some(tuple) = tuples.next().await {
            history.push(snapshot(&self.inner, &tuple?, false)?);
        }
        Ok(history)
    }
}

/// LangGraph's task path: `["__pregel_pull", node]`, `["__pregel_push",
/// index, false]` for a `Send`, `["__interrupt__", index]` for a state
/// update.
pub(super) fn task_path_json(path: &TaskPath, name: &str) -> serde_json::Value {
    match path {
        TaskPath::Pull(_) => crate::context::path_json(None, name),
        TaskPath::Push(index) => crate::context::path_json(Some(*index), name),
        TaskPath::Update(index) => serde_json::json!([names::INTERRUPT, index]),
    }
}
