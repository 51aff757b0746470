//! Saving a run's checkpoints (the write half of persistence): one after
//! the input and after every superstep (per the run's [`Durability`]), the
//! writes of each task as it finishes, and exit durability's last
//! checkpoint. Loading is in `load.rs`; the state API in `state.rs`.
//!
//! Everything here runs only for a graph with a checkpointer: a run without
//! one never reaches this module.

use super::checkpointing::{Announced, AtExit, ExitCheckpoint, task_path};
use super::pregel_loop::PregelLoop;
use super::task::{Outcome, Task};
use crate::chunk::StreamMode;
use crate::error::Result;
use crate::names;
use crate::run_info::{Durability, TaskWrites, WriteSender};
use crate::shape::ChannelId;
use stategraph_checkpoint::{
    ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointSaver, CheckpointSource,
};
use stategraph_core::{CheckpointId, Value};

impl PregelLoop {
    /// What a task's outcome saves: its writes (`__no_writes__` when it
    /// wrote nothing, so a resumed run knows it finished), its interrupts
    /// and the answers it consumed before them, or its error (LangGraph's
    /// `Class('message')` form). `None` for a task without an id.
    pub(super) fn outcome_writes(&self, task: &Task, outcome: &Outcome) -> Option<TaskWrites> {
        let pad = task.pad.as_ref()?;
        let writes = match outcome {
            Outcome::Wrote => {
                let mut writes: Vec<(String, Value)> = task
                    .writes
                    .iter()
                    .map(|(channel, value)| (self.name(*channel).to_owned(), value.clone()))
                    .collect();
                if writes.is_empty() {
                    writes.push((names::NO_WRITES.to_owned(), Value::null()));
                }
                writes
            }
            Outcome::Interrupted(interrupts) => {
                let mut writes =
                    vec![(names::INTERRUPT.to_owned(), Value::new(interrupts.clone()))];
                let answers = pad.answered();
                if !answers.is_empty() {
                    writes.push((names::RESUME.to_owned(), Value::new(answers)));
                }
                let scoped = pad.answered_scopes();
                if !scoped.is_empty() {
                    writes.push((names::RESUME_SCOPED.to_owned(), Value::new(scoped)));
                }
                writes
            }
            Outcome::Failed(repr) => vec![(names::ERROR.to_owned(), Value::new(repr.clone()))],
        };
        let path = task_path(&task.path, self.graph.shape.node_name(task.node)).text();
        Some((pad.task_id().clone(), path, writes))
    }

    /// Sends what a task's outcome saves to the step's save pipeline.
    pub(super) fn save_outcome(&self, saves: &WriteSender, task: &Task, outcome: &Outcome) {
        if let Some(writes) = self.outcome_writes(task, outcome) {
            // A closed pipeline has failed; its error ends the step.
            let _ = saves.unbounded_send(writes);
        }
    }

    /// Exit durability, a step that stopped: what its tasks' outcomes save.
    pub(super) fn stopped_step_writes(&self, tasks: &[Task]) -> Vec<TaskWrites> {
        tasks
            .iter()
            .filter(|task| !task.cached)
            .filter_map(|task| self.outcome_writes(task, task.outcome.as_deref()?))
            .collect()
    }

    /// A `values` chunk with every stream channel (LangGraph emits one when
    /// a run resumes a thread).
    pub(super) fn emit_all_values(&self) {
        let all: Vec<ChannelId> = (0..self.channels.len()).collect();
        self.emit_values(&all);
    }

    /// The checkpoint of the loop's current state.
    pub(super) fn checkpoint(&self, id: CheckpointId, updated: Option<Vec<String>>) -> Checkpoint {
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
        if self.input_seen {
            checkpoint
                .versions_seen
                .insert(names::INPUT.to_owned(), ChannelVersions::default());
        }
        let breakpoints_seen: ChannelVersions = self
            .interrupt_seen
            .iter()
            .enumerate()
            .filter_map(|(c, v)| Some((graph.shape.channel_name(c).to_owned(), (*v)?)))
            .collect();
        if !breakpoints_seen.is_empty() {
            checkpoint
                .versions_seen
                .insert(names::INTERRUPT.to_owned(), breakpoints_seen);
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
        let announce = self.run.wants(StreamMode::Checkpoints) || self.run.wants(StreamMode::Debug);
        if durability == Durability::Exit {
            let metadata = announce.then(|| self.own_metadata(source, self.step));
            if let Some(persist) = self.persist.as_mut() {
                let id = persist.next_id(persist.current.as_ref());
                let parent = persist.current.replace(id.clone());
                if let Some(metadata) = &metadata {
                    self.announced = Some(Announced::new(persist, id.clone(), parent, metadata));
                }
                let mut kept = persist
                    .at_exit
                    .take()
                    .map(|at| at.updated)
                    .unwrap_or_default();
                kept.clear();
                kept.extend_from_slice(updated);
                persist.at_exit = Some(AtExit {
                    id,
                    source,
                    step: self.step,
                    updated: kept,
                });
            }
            return Ok(());
        }
        let metadata = self.metadata(source, self.step);
        let id = self
            .persist
            .as_ref()
            .map(|persist| persist.next_id(persist.target.checkpoint_id.as_ref()))
            .unwrap_or_else(CheckpointId::new);
        let checkpoint = self.checkpoint(id, Some(self.channel_names(updated)));
        if announce && let Some(persist) = self.persist.as_ref() {
            let parent = persist.current.clone();
            self.announced = Some(Announced::new(
                persist,
                checkpoint.id.clone(),
                parent,
                &self.own_metadata(source, self.step),
            ));
        }
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

    /// A checkpoint's own metadata: its source and step, and the parent
    /// checkpoints of a subgraph run (what `checkpoints` chunks show).
    pub(super) fn own_metadata(&self, source: CheckpointSource, step: i64) -> CheckpointMetadata {
        let mut metadata = CheckpointMetadata::new(source, step);
        match (&self.run.scope, &self.loaded) {
            (Some(scope), _) => metadata.parents.clone_from(&scope.parents),
            // A state update: the parents of the checkpoint it builds on.
            (None, Some(loaded)) => metadata.parents.clone_from(&loaded.parents),
            (None, None) => {}
        }
        metadata
    }

    /// What a checkpoint is saved with: its own metadata and the run's
    /// (LangGraph's `get_checkpoint_metadata`).
    pub(super) fn metadata(&self, source: CheckpointSource, step: i64) -> CheckpointMetadata {
        self.own_metadata(source, step)
            .merged_with_config(&self.run.config)
    }

    /// The sorted names of these channels (a checkpoint's updated channels).
    pub(super) fn channel_names(&self, channels: &[ChannelId]) -> Vec<String> {
        let mut names: Vec<String> = channels
            .iter()
            .map(|c| self.graph.shape.channel_name(*c).to_owned())
            .collect();
        names.sort();
        names
    }

    /// The channels whose version changed since the last saved checkpoint.
    pub(super) fn new_versions(&self) -> ChannelVersions {
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

    /// Exit durability: builds the checkpoint to save at the end of the run
    /// from the current state, before an interrupted step's writes are
    /// applied in memory (they are shown, not saved).
    pub(super) fn freeze_exit_checkpoint(&mut self) {
        let Some(at) = self.persist.as_mut().and_then(|p| p.at_exit.take()) else {
            return;
        };
        let names = self.channel_names(&at.updated);
        let exit = ExitCheckpoint {
            checkpoint: self.checkpoint(at.id, Some(names)),
            metadata: self.metadata(at.source, at.step),
            new_versions: self.new_versions(),
            versions: self.versions.clone(),
        };
        if let Some(persist) = self.persist.as_mut() {
            persist.frozen = Some(exit);
        }
    }

    /// The end of a run with a checkpointer: waits for the puts in flight
    /// and, with exit durability, saves the final checkpoint. The run's own
    /// error, if any, wins over a saving error.
    pub(super) async fn finish_persisted(&mut self, result: Result<()>) -> Result<()> {
        let nested = self.run.scope.as_ref().is_some_and(|scope| scope.nested);
        // A run that does not save builds nothing to save (a checkpoint is
        // only frozen earlier when the run stops, and a stopped run saves).
        if self
            .persist
            .as_ref()
            .is_some_and(|p| p.saves_at_exit(nested, result.is_err()))
        {
            self.freeze_exit_checkpoint();
        }
        let Some(persist) = self.persist.as_mut() else {
            return result;
        };
        let mut saved = match persist.pending.take() {
            Some(pending) => pending.await,
            None => Ok(()),
        };
        if let (Ok(()), Some(exit)) = (&saved, persist.frozen.take()) {
            saved = persist
                .submit(
                    exit.checkpoint,
                    exit.metadata,
                    exit.new_versions,
                    exit.versions,
                )
                .await;
        }
        // Exit durability: the writes of a step that did not complete
        // (interrupted or failed) go with the checkpoint it started from.
        let deferred = std::mem::take(&mut persist.deferred);
        if saved.is_ok() && !deferred.is_empty() {
            let mut config = persist.target.clone();
            config.checkpoint_id.clone_from(&persist.current);
            for (task_id, path, writes) in deferred {
                if let Err(err) = persist
                    .saver
                    .put_writes(&config, writes, &task_id, &path)
                    .await
                {
                    saved = Err(err.into());
                    break;
                }
            }
        }
        result.and(saved)
    }
}
