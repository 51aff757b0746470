//! A run's checkpoint state (`Checkpointing`): its saver and target, the
//! versions saved last, the put in flight, exit durability's pending
//! checkpoint; the per-step save pipeline for task writes; the pending
//! writes of a resumed checkpoint (`Resumed`); and the last saved
//! checkpoint until `checkpoints` chunks show it (`Announced`).

use super::task::TaskPath;
use crate::error::{PregelError, Result};
use crate::interrupt::Interrupt;
use crate::names;
use crate::run_info::{Durability, TaskWrites, WriteSender};
use crate::shape::ChannelId;
use crate::task_id::TaskPathText;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use stategraph_checkpoint::ChannelVersion;
use stategraph_checkpoint::ChannelVersions;
use stategraph_checkpoint::Checkpoint;
use stategraph_checkpoint::CheckpointConfig;
use stategraph_checkpoint::CheckpointMetadata;
use stategraph_checkpoint::CheckpointSaver;
use stategraph_checkpoint::CheckpointSource;
use stategraph_checkpoint::PendingWrite;
use stategraph_checkpoint::SharedSaver;
use stategraph_core::CheckpointId;
use stategraph_core::RunnableConfig;
use stategraph_core::Value;
use std::sync::Arc;
/// Exit durability: what the checkpoint saved at the end of the run is
/// made from. Only its id is needed step by step (task ids hash it); its
/// metadata and channel names are built once, when it is saved.
pub(super) struct AtExit {
    pub(super) id: CheckpointId,
    pub(super) source: CheckpointSource,
    pub(super) step: i64,
    pub(super) updated: Vec<ChannelId>,
}

/// Where a run saves and what it saved last.
pub(super) struct Checkpointing {
    pub(super) saver: SharedSaver,
    pub(super) durability: Durability,
    // Thread and namespace; `checkpoint_id` is the parent of the next put
    // (the checkpoint loaded at the start, then the last one submitted).
    pub(super) target: CheckpointConfig,
    // The target's namespace, shared by the ids of every task of the run.
    pub(super) namespace: Arc<str>,
    // Channel versions in the last saved (or loaded) checkpoint.
    pub(super) saved_versions: Vec<Option<ChannelVersion>>,
    // The parent of the checkpoint loaded at the start (what a `__copy__`
    // update saves its copy under).
    pub(super) loaded_parent: Option<CheckpointId>,
    // The put in flight (async durability), chained after the previous ones.
    pub(super) pending: Option<BoxFuture<'static, Result<()>>>,
    // Exit durability: the state to save when the run ends (`None` =
    // nothing new since the start).
    pub(super) at_exit: Option<AtExit>,
    // The checkpoint the current step started from: task ids hash it, and
    // the step's writes are saved against it. The same as the target's
    // except with exit durability, where it is the checkpoint `at_exit`
    // will save.
    pub(super) current: Option<CheckpointId>,
    // Exit durability: the writes of the current step's tasks, saved with
    // the exit checkpoint if the step does not complete.
    pub(super) deferred: Vec<TaskWrites>,
    // Exit durability: the checkpoint to save, built when the run stopped.
    pub(super) frozen: Option<ExitCheckpoint>,
    // Puts go through the saver's compare-and-set on the head (it claims
    // `put_if_head`), so a concurrent run on the thread fails instead of
    // forking it.
    pub(super) compare_head: bool,
    // The next put may branch off a checkpoint that is not the head (the
    // run or update named a past checkpoint: time travel).
    pub(super) may_branch: bool,
    // When it may: the thread's latest checkpoint, which the branch's id
    // must sort above to be the thread's new latest.
    pub(super) latest: Option<CheckpointId>,
    // The run stopped at an interrupt or a breakpoint.
    pub(super) stopped: bool,
}

/// A checkpoint built and waiting to be saved when the run ends.
pub(super) struct ExitCheckpoint {
    pub(super) checkpoint: Checkpoint,
    pub(super) metadata: CheckpointMetadata,
    pub(super) new_versions: ChannelVersions,
    pub(super) versions: Vec<Option<ChannelVersion>>,
}

impl Checkpointing {
    /// Saves to `target`. Every put extends the thread's head (and fails
    /// if another writer moved it), but the first when `may_branch`: a run
    /// from a named past checkpoint starts a branch.
    pub(super) fn new(
        saver: SharedSaver,
        durability: Durability,
        target: CheckpointConfig,
        may_branch: bool,
    ) -> Self {
        Self {
            compare_head: saver.capabilities().put_if_head,
            may_branch,
            latest: None,
            saver,
            durability,
            namespace: Arc::from(target.checkpoint_ns.as_str()),
            target,
            saved_versions: Vec::new(),
            loaded_parent: None,
            pending: None,
            at_exit: None,
            current: None,
            deferred: Vec::new(),
            frozen: None,
            stopped: false,
        }
    }

    /// Records that the run stopped at an interrupt or a breakpoint.
    pub(super) fn stop(&mut self) {
        self.stopped = true;
    }

    /// Exit durability, at the end of a run: whether it saves its last
    /// checkpoint. As LangGraph: a root graph always does; a subgraph only
    /// when it failed or stopped (so it can be resumed), or when it keeps
    /// one state per thread (no task id anywhere in its namespace). A
    /// subgraph run per invocation that finished leaves nothing behind.
    pub(super) fn saves_at_exit(&self, nested: bool, failed: bool) -> bool {
        !nested
            || failed
            || self.stopped
            || !self
                .target
                .checkpoint_ns
                .split('|')
                .any(|part| part.contains(':'))
    }

    /// Where the next checkpoint is saved (its `checkpoint_id` is the last
    /// one saved or loaded).
    pub(super) fn target(&self) -> &CheckpointConfig {
        &self.target
    }

    /// The put in flight, to run alongside the next step.
    pub(super) fn take_pending(&mut self) -> Option<BoxFuture<'static, Result<()>>> {
        self.pending.take()
    }

    /// The id of the next checkpoint: above its parent, which is the
    /// thread's head unless the put branches.
    pub(super) fn next_id(&self, parent: Option<&CheckpointId>) -> CheckpointId {
        let latest = self.latest.as_ref().filter(|_| self.may_branch);
        parent
            .max(latest)
            .map_or_else(CheckpointId::new, CheckpointId::new_after)
    }

    /// The version a channel gets when it next changes.
    pub(super) fn next_version(&self, max: Option<&ChannelVersion>) -> ChannelVersion {
        CheckpointSaver::get_next_version(&self.saver, max)
    }

    /// Where the current step's task writes go: saved against the
    /// checkpoint the step started from, or, with exit durability, kept
    /// until the run ends.
    pub(super) fn writes_target(&self) -> WritesTarget {
        if self.durability == Durability::Exit {
            return WritesTarget::Defer;
        }
        let mut config = self.target.clone();
        config.checkpoint_id.clone_from(&self.current);
        WritesTarget::Save(self.saver.clone(), config)
    }

    /// Exit durability: the writes of the step that just ran.
    pub(super) fn defer(&mut self, writes: Vec<TaskWrites>) {
        self.deferred = writes;
    }
}

/// Where a step's task writes go.
pub(super) enum WritesTarget {
    /// Saved as each task finishes, against this checkpoint.
    Save(SharedSaver, CheckpointConfig),
    /// Kept until the run ends (exit durability).
    Defer,
}

/// The bytes of a checkpoint id that task ids are hashed from (a hash of
/// the text for an id that is not a UUID).
pub(super) fn checkpoint_bytes(id: &CheckpointId) -> [u8; 16] {
    id.uuid_bytes()
        .unwrap_or_else(|| xxhash_rust::xxh3::xxh3_128(id.as_str().as_bytes()).to_be_bytes())
}

/// The saving side of a step: the previous checkpoint's put (if still in
/// flight), then every task's writes sent to the returned sender, in order,
/// against `config`. The future ends once every sender is dropped and
/// everything is saved.
pub(super) fn save_pipeline(
    put: Option<BoxFuture<'static, Result<()>>>,
    saver: SharedSaver,
    config: CheckpointConfig,
) -> (WriteSender, BoxFuture<'static, Result<()>>) {
    let (sender, mut writes) = futures::channel::mpsc::unbounded::<TaskWrites>();
    let pipeline = async move {
        if let Some(put) = put {
            put.await?;
        }
        while let Some((task_id, path, task_writes)) = writes.next().await {
            saver
                .put_writes(&config, task_writes, &task_id, &path)
                .await?;
        }
        Ok(())
    }
    .boxed();
    (sender, pipeline)
}

/// Whether a pending write records a task's outcome rather than a write to
/// a channel (a task with only such writes has not finished).
pub(super) fn is_control(channel: &str) -> bool {
    matches!(
        channel,
        names::INTERRUPT | names::RESUME | names::RESUME_SCOPED | names::ERROR | names::RETURN
    )
}

/// The pending writes of a loaded checkpoint, by task.
pub(super) struct Resumed {
    pub(super) writes: Vec<PendingWrite>,
}

impl Resumed {
    pub(super) fn of_task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> impl Iterator<Item = &'a PendingWrite> + 'a {
        self.writes.iter().filter(move |w| w.task_id == task_id)
    }

    /// A task's saved channel writes (not its interrupts, answers, error or
    /// return value), as writes of this graph: `__no_writes__` and writes
    /// to channels the graph no longer has are left out (the latter with a
    /// warning).
    pub(super) fn channel_writes(
        &self,
        task_id: &str,
        shape: &crate::shape::GraphShape,
    ) -> Vec<(crate::shape::ChannelId, stategraph_core::Value)> {
        self.of_task(task_id)
            .filter(|w| !is_control(&w.channel) && w.channel != names::NO_WRITES)
            .filter_map(|w| {
                let channel = shape.channel_id(&w.channel);
                if channel.is_none() {
                    tracing::warn!("ignoring a saved write to unknown channel {}", w.channel);
                }
                Some((channel?, w.value.clone()))
            })
            .collect()
    }

    /// The interrupts still waiting for an answer: those of tasks that
    /// interrupted and did not finish since.
    pub(super) fn pending_interrupts(&self) -> Vec<Interrupt> {
        let mut tasks: Vec<&str> = self.writes.iter().map(|w| w.task_id.as_str()).collect();
        tasks.sort_unstable();
        tasks.dedup();
        tasks
            .into_iter()
            .filter(|task| !self.of_task(task).any(|w| !is_control(&w.channel)))
            .flat_map(|task| {
                self.of_task(task)
                    .filter(|w| w.channel == names::INTERRUPT)
                    .flat_map(|w| interrupts_of(&w.value))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The interrupts saved in an `__interrupt__` write (unreadable ones are
/// skipped with a warning).
pub(super) fn interrupts_of(value: &Value) -> Vec<Interrupt> {
    match value.clone().decode::<Vec<Interrupt>>() {
        Ok(found) => (*found).clone(),
        Err(err) => {
            tracing::warn!("ignoring an unreadable saved interrupt: {err}");
            Vec::new()
        }
    }
}

/// LangGraph's `task_path_str` of a task, as its parts.
pub(super) fn task_path(path: &TaskPath, name: &Arc<str>) -> TaskPathText {
    match path {
        TaskPath::Pull(_) => TaskPathText::Pull(name.clone()),
        TaskPath::Push(index) => TaskPathText::Push(*index),
        TaskPath::Update(index) => TaskPathText::Update(*index),
    }
}

/// Reads the thread a run with a checkpointer works on.
pub(super) fn target_of(config: &RunnableConfig) -> Result<CheckpointConfig> {
    CheckpointConfig::from_runnable(config).ok_or(PregelError::MissingThreadId)
}

impl Checkpointing {
    /// A put of `checkpoint` chained after the put in flight (which it
    /// takes); `versions` become the saved versions.
    pub(super) fn submit(
        &mut self,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        versions: Vec<Option<ChannelVersion>>,
    ) -> BoxFuture<'static, Result<()>> {
        let config = self.target.clone();
        self.target.checkpoint_id = Some(checkpoint.id.clone());
        self.current = Some(checkpoint.id.clone());
        self.saved_versions = versions;
        let saver = self.saver.clone();
        let previous = self.pending.take();
        let compare_head = self.compare_head && !std::mem::take(&mut self.may_branch);
        async move {
            if let Some(previous) = previous {
                previous.await?;
            }
            if !compare_head {
                saver
                    .put(&config, checkpoint, metadata, new_versions)
                    .await?;
                return Ok(());
            }
            match saver
                .put_if_head(&config, checkpoint, metadata, new_versions)
                .await
            {
                Ok(_) => Ok(()),
                Err(source @ stategraph_checkpoint::Error::Conflict { .. }) => {
                    Err(PregelError::ThreadBusy {
                        thread_id: config.thread_id,
                        checkpoint_ns: config.checkpoint_ns,
                        source: Box::new(source),
                    })
                }
                Err(other) => Err(other.into()),
            }
        }
        .boxed()
    }
}

/// A saved checkpoint to show in `checkpoints` and `debug` chunks once the
/// tasks that follow it are known.
pub(super) struct Announced {
    pub(super) config: CheckpointConfig,
    pub(super) parent: Option<CheckpointConfig>,
    pub(super) metadata: CheckpointMetadata,
}

impl Announced {
    pub(super) fn new(
        persist: &Checkpointing,
        id: CheckpointId,
        parent: Option<CheckpointId>,
        metadata: &CheckpointMetadata,
    ) -> Self {
        let at = |id: CheckpointId| CheckpointConfig {
            checkpoint_id: Some(id),
            ..persist.target().clone()
        };
        Self {
            config: at(id),
            parent: parent.map(at),
            metadata: metadata.clone(),
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_paths_read_as_langgraph_formats_them() {
        assert_eq!(
            task_path(&TaskPath::Pull(3), &Arc::from("agent")).text(),
            format!("~{}, agent", names::PULL)
        );
        for index in [0, 7, 10, 99, 1234567890, 12345678901, usize::MAX] {
            assert_eq!(
                task_path(&TaskPath::Push(index), &Arc::from("tools")).text(),
                format!("~{}, {index:010}, 0000000000", names::PUSH)
            );
            assert_eq!(
                task_path(&TaskPath::Update(index), &Arc::from("tools")).text(),
                format!("~{}, {index:010}", names::INTERRUPT)
            );
        }
    }
}
