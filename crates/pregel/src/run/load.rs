//! Loading a checkpoint into a run (the read half of persistence): the
//! thread's latest or named checkpoint, restoring channels and versions,
//! task ids, the pending writes of a resumed step, resume answers and time
//! travel.

use super::checkpointing::{Resumed, checkpoint_bytes, is_control, task_path};
use super::pregel_loop::PregelLoop;
use super::task::{Task, TaskPath};
use crate::command::Input;
use crate::error::{PregelError, Result};
use crate::interrupt::Interrupt;
use crate::names;
use crate::scratchpad::Scratchpad;
use crate::shape::ChannelId;
use crate::task_id::{IdPath, TaskIdInputs};
use stategraph_checkpoint::Checkpoint;
use stategraph_checkpoint::CheckpointConfig;
use stategraph_checkpoint::CheckpointSaver;
use stategraph_checkpoint::CheckpointSource;
use stategraph_checkpoint::PendingWrite;
use stategraph_core::CheckpointId;
use stategraph_core::Value;
use std::sync::Arc;
impl PregelLoop {
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
            if node_name == names::INPUT {
                self.input_seen = true;
                continue;
            }
            if node_name == names::INTERRUPT {
                for (channel, version) in seen {
                    if let Some(channel) = graph.shape.channel_id(channel) {
                        self.interrupt_seen[channel] = Some(*version);
                    }
                }
                continue;
            }
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
            .filter(|c| self.channels.is_available(*c))
            .collect();
        Ok(())
    }

    /// Gives each task its LangGraph id (from the checkpoint the step
    /// started from, the step, the node, its path and triggers) and a
    /// scratchpad for its interrupts.
    pub(super) fn identify(&self, tasks: &mut [Task]) {
        if let Some(persist) = self.persist.as_ref() {
            self.identify_from(persist.current.as_ref(), &persist.namespace, tasks);
        }
    }

    /// [`PregelLoop::identify`] for the step after `checkpoint`, in a run whose
    /// checkpoint namespace is `namespace`.
    pub(super) fn identify_from(
        &self,
        checkpoint: Option<&CheckpointId>,
        run_namespace: &Arc<str>,
        tasks: &mut [Task],
    ) {
        let graph = &self.graph;
        let bytes = checkpoint.map_or([0; 16], checkpoint_bytes);
        for task in tasks.iter_mut() {
            let inputs = TaskIdInputs {
                checkpoint: bytes,
                run_namespace: run_namespace.clone(),
                step: self.step,
                shape: graph.shape.clone(),
                node: task.node,
                path: match task.path {
                    TaskPath::Pull(_) => IdPath::Pull(graph.sorted_triggers(task.node).clone()),
                    TaskPath::Push(index) | TaskPath::Update(index) => IdPath::Push(index),
                },
            };
            let task_path = task_path(&task.path, graph.shape.node_name(task.node));
            let pad = Scratchpad::new(inputs, checkpoint.cloned(), task_path);
            task.pad = Some(Arc::new(pad));
        }
    }

    /// The first step of a resumed run: tasks that finished before the run
    /// stopped get their saved writes back (streamed as cached updates) and
    /// do not run again; interrupted tasks get the answers they were given.
    pub(super) fn reattach(&mut self, tasks: &mut [Task]) -> Result<()> {
        let Some(resumed) = self.resumed.take() else {
            return Ok(());
        };
        // Functional tasks of the first step replay their saved results.
        self.run.set_replay(Some(resumed.writes.clone().into()));
        for task in tasks.iter_mut() {
            let Some(pad) = task.pad.clone() else {
                continue;
            };
            let outputs: Vec<&PendingWrite> = resumed
                .of_task(pad.task_id())
                .filter(|w| !is_control(&w.channel))
                .collect();
            if outputs.is_empty() {
                let answers = resumed
                    .of_task(pad.task_id())
                    .find(|w| w.channel == names::RESUME)
                    .map(|w| w.value.clone().decode::<Vec<Value>>())
                    .transpose()?
                    .map(|answers| (*answers).clone())
                    .unwrap_or_default();
                let scoped = resumed
                    .of_task(pad.task_id())
                    .find(|w| w.channel == names::RESUME_SCOPED)
                    .map(|w| {
                        w.value
                            .clone()
                            .decode::<std::collections::BTreeMap<String, Vec<Value>>>()
                    })
                    .transpose()?
                    .map(|scoped| (*scoped).clone())
                    .unwrap_or_default();
                let pad = Arc::new(pad.with_answers(answers, scoped));
                if let Some(map) = self.run.answers() {
                    pad.answer_from(&map);
                }
                task.pad = Some(pad);
                continue;
            }
            task.writes = resumed.channel_writes(pad.task_id(), &self.graph.shape);
            task.cached = true;
            self.emit_updates(task, true);
        }
        Ok(())
    }

    /// Loads the thread's checkpoint (the latest, or the config's
    /// `checkpoint_id`). Returns whether it has any channel version (a thread
    /// with state to continue from).
    pub(super) async fn load(&mut self) -> Result<bool> {
        let Some(persist) = self.persist.as_ref() else {
            return Ok(false);
        };
        let saver = persist.saver.clone();
        let target = persist.target.clone();
        if persist.may_branch {
            let latest = CheckpointConfig {
                checkpoint_id: None,
                ..target.clone()
            };
            let latest = saver.get_tuple(&latest).await?.map(|t| t.checkpoint.id);
            if let Some(persist) = self.persist.as_mut() {
                persist.latest = latest;
            }
        }
        let Some(tuple) = saver.get_tuple(&target).await? else {
            return Ok(false);
        };
        self.restore(&tuple.checkpoint)?;
        self.step = tuple.metadata.step.unwrap_or(-1) + 1;
        self.loaded = Some(tuple.metadata);
        self.resumed = Some(Resumed {
            writes: tuple.pending_writes,
        });
        let versions = self.versions.clone();
        if let Some(persist) = self.persist.as_mut() {
            persist.target.checkpoint_id = Some(tuple.checkpoint.id.clone());
            persist.current = Some(tuple.checkpoint.id.clone());
            persist.saved_versions = versions;
            persist.loaded_parent = tuple.parent_config.and_then(|parent| parent.checkpoint_id);
        }
        Ok(!tuple.checkpoint.channel_versions.is_empty())
    }

    /// The start of a run with a checkpointer: load, then apply the input
    /// (saving an input checkpoint) or resume. Returns the channels updated
    /// (empty = look at every node) and leaves `step` at the first step to run.
    pub(super) async fn start_persisted(&mut self, input: Input) -> Result<Vec<ChannelId>> {
        let existing = self.load().await?;
        // A subgraph run whose namespace has a checkpoint belongs to a
        // parent task that runs again (resumed, or retried): it continues
        // where it stopped instead of starting over on its input, even
        // when nothing is left to run (an update finished it: it returns
        // its state, as LangGraph's resumed subgraph does). A per-thread
        // subgraph's namespace outlives its invocations: it continues only
        // a run that stopped.
        let nested = self.run.scope.as_ref().is_some_and(|scope| scope.nested);
        let per_task = self.run.scope.as_ref().is_some_and(|scope| {
            let last = scope.checkpoint_ns.rsplit('|').next().unwrap_or_default();
            last.contains(':')
        });
        let input = if existing && nested && (per_task || self.has_unfinished_tasks()?) {
            Input::Resume
        } else {
            input
        };
        if existing && !nested && self.run.config.checkpoint_id().is_some() {
            self.travel(&input).await?;
        }
        self.stop = self.step + i64::try_from(self.limit).unwrap_or(i64::MAX - 1) + 1;
        if !existing {
            let updated = self.apply_input(input)?;
            self.save(CheckpointSource::Input, &updated).await?;
            self.step += 1;
            return Ok(updated);
        }
        match input {
            Input::Resume => {
                // Resuming passes the static breakpoint the run stopped at.
                self.interrupt_seen.clone_from(&self.versions);
                self.emit_all_values();
                Ok(Vec::new())
            }
            Input::Command(mut command) => {
                let has_resume = command.resume.is_some();
                if let Some(answer) = command.resume.take() {
                    self.take_answer(answer)?;
                }
                let writes = self.command_writes(command)?;
                if writes.is_empty() && !has_resume {
                    return Err(PregelError::EmptyInput(
                        "Received empty Command input".into(),
                    ));
                }
                if !writes.is_empty() {
                    let mut null_task = Task::input(writes);
                    self.apply(std::slice::from_mut(&mut null_task), false)?;
                }
                self.interrupt_seen.clone_from(&self.versions);
                self.emit_all_values();
                Ok(Vec::new())
            }
            Input::Value(value) => {
                // New input: the interrupted or failed tasks are dropped.
                self.resumed = None;
                let writes = self.input_writes(value)?;
                // Tasks the loaded checkpoint left unfinished are discarded:
                // applied without writes, which marks their triggers seen.
                let mut tasks = self.prepare_tasks(&[])?;
                let discarding = !tasks.is_empty();
                tasks.push(Task::input(writes));
                let updated = self.apply(&mut tasks, discarding)?;
                tasks.clear();
                self.task_buf.put(tasks);
                self.save(CheckpointSource::Input, &updated).await?;
                self.step += 1;
                Ok(updated)
            }
        }
    }

    /// Whether the loaded checkpoint leaves tasks to run.
    pub(super) fn has_unfinished_tasks(&mut self) -> Result<bool> {
        let mut tasks = self.prepare_tasks(&[])?;
        let unfinished = !tasks.is_empty();
        tasks.clear();
        self.task_buf.put(tasks);
        Ok(unfinished)
    }

    /// A run from a checkpoint named by `checkpoint_id` (time travel):
    /// its saved writes are not reused (its tasks run again, interrupts
    /// fire again), and resuming from it first saves a `fork` checkpoint
    /// (the same state, one step later, its parent the named checkpoint),
    /// unless it is a thread's latest `update` or `fork` checkpoint. A
    /// `Command` with a resume answer continues the named checkpoint as is.
    pub(super) async fn travel(&mut self, input: &Input) -> Result<()> {
        let answering = matches!(input, Input::Command(command) if command.resume.is_some());
        if answering {
            return Ok(());
        }
        self.resumed = None;
        let Some(persist) = self.persist.as_ref() else {
            return Ok(());
        };
        // `load` read the latest checkpoint: a run from a named one may branch.
        let superseded = persist.latest.is_none() || persist.current != persist.latest;
        let replayable = !matches!(
            self.loaded.as_ref().and_then(|loaded| loaded.source),
            Some(CheckpointSource::Update | CheckpointSource::Fork)
        );
        if matches!(input, Input::Value(_)) || !(replayable || superseded) {
            return Ok(());
        }
        self.save(CheckpointSource::Fork, &[]).await?;
        self.step += 1;
        Ok(())
    }

    /// Takes a `Command { resume }` answer: a map keyed by interrupt ids
    /// answers those interrupts; any other value answers the one pending
    /// interrupt (several pending is an error: which one it answers would
    /// be a guess).
    pub(super) fn take_answer(&mut self, answer: Value) -> Result<()> {
        let by_id = match answer.as_json() {
            Some(serde_json::Value::Object(map))
                if !map.is_empty() && map.keys().all(|k| Interrupt::is_id(k)) =>
            {
                Some(map.clone())
            }
            _ => None,
        };
        let resumed = self
            .resumed
            .get_or_insert_with(|| Resumed { writes: Vec::new() });
        match by_id {
            Some(map) => self.run.set_answers(Some(Arc::new(map))),
            None => {
                if resumed.pending_interrupts().len() > 1 {
                    return Err(PregelError::Runtime(
                        "When there are multiple pending interrupts, you must specify the interrupt id when resuming. Docs: https://docs.langchain.com/oss/python/langgraph/interrupts#handling-multiple-interrupts.".into(),
                    ));
                }
                self.run.set_resume(Some(answer));
            }
        }
        Ok(())
    }
}
