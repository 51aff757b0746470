//! Checkpointing a run through a `CheckpointSaver`: loading the thread's
//! latest checkpoint at the start, saving one after the input and after
//! every superstep (per the run's [`Durability`]). The read side, the state
//! API, is in `state.rs`.
//!
//! Everything here runs only for a graph with a checkpointer: a run without
//! one never reaches this module.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::StreamExt;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, PendingWrite, SharedSaver,
};
use stategraph_core::{CheckpointId, RunnableConfig, Value};

use super::announce::Announced;
use super::{Loop, Task, TaskPath, WriteSender};
use crate::error::{PregelError, Result};
use crate::node::{Scratchpad, TaskIdInputs, TaskPathText};
use crate::types::{Interrupt, StreamMode, names};
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

/// Exit durability: what the checkpoint saved at the end of the run is
/// made from. Only its id is needed step by step (task ids hash it); its
/// metadata and channel names are built once, when it is saved.
struct AtExit {
    id: CheckpointId,
    source: CheckpointSource,
    step: i64,
    updated: Vec<ChannelId>,
}

/// Where a run saves and what it saved last.
pub(super) struct Persist {
    saver: SharedSaver,
    durability: Durability,
    // Thread and namespace; `checkpoint_id` is the parent of the next put
    // (the checkpoint loaded at the start, then the last one submitted).
    target: CheckpointConfig,
    // The target's namespace, shared by the ids of every task of the run.
    namespace: Arc<str>,
    // Channel versions in the last saved (or loaded) checkpoint.
    saved_versions: Vec<Option<ChannelVersion>>,
    // The put in flight (async durability), chained after the previous ones.
    pending: Option<BoxFuture<'static, Result<()>>>,
    // Exit durability: the state to save when the run ends (`None` =
    // nothing new since the start).
    at_exit: Option<AtExit>,
    // The checkpoint the current step started from: task ids hash it, and
    // the step's writes are saved against it. The same as the target's
    // except with exit durability, where it is the checkpoint `at_exit`
    // will save.
    current: Option<CheckpointId>,
    // Exit durability: the writes of the current step's tasks, saved with
    // the exit checkpoint if the step does not complete.
    deferred: Vec<TaskWrites>,
    // Exit durability: the checkpoint to save, built when the run stopped.
    frozen: Option<ExitCheckpoint>,
    // Puts go through the saver's compare-and-set on the head (it claims
    // `put_if_head`), so a concurrent run on the thread fails instead of
    // forking it.
    compare_head: bool,
    // The next put may branch off a checkpoint that is not the head (the
    // run or update named a past checkpoint: time travel).
    may_branch: bool,
    // When it may: the thread's latest checkpoint, which the branch's id
    // must sort above to be the thread's new latest.
    latest: Option<CheckpointId>,
    // The run stopped at an interrupt or a breakpoint.
    stopped: bool,
}

/// A checkpoint built and waiting to be saved when the run ends.
struct ExitCheckpoint {
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    versions: Vec<Option<ChannelVersion>>,
}

/// One task's writes to save: task id, task path, `(channel, value)` pairs.
pub(crate) type TaskWrites = (Arc<str>, String, Vec<(String, Value)>);

impl Persist {
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
    fn saves_at_exit(&self, nested: bool, failed: bool) -> bool {
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
    fn next_id(&self, parent: Option<&CheckpointId>) -> CheckpointId {
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

/// How a task of the current step ended.
pub(super) enum Outcome {
    /// It returned; its writes are in `Task::writes`.
    Wrote,
    /// It stopped on these interrupts.
    Interrupted(Vec<Interrupt>),
    /// It failed (`Class('message')`).
    Failed(String),
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
fn checkpoint_bytes(id: &CheckpointId) -> [u8; 16] {
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

    /// The interrupts still waiting for an answer: those of tasks that
    /// interrupted and did not finish since.
    fn pending_interrupts(&self) -> Vec<Interrupt> {
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
fn task_path(path: &TaskPath, name: &Arc<str>) -> TaskPathText {
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

    /// [`Loop::identify`] for the step after `checkpoint`, in a run whose
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
                graph: graph.clone(),
                node: task.node,
                push: match task.path {
                    TaskPath::Pull(_) => None,
                    TaskPath::Push(index) | TaskPath::Update(index) => Some(index),
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
            task.writes = outputs
                .into_iter()
                .filter(|w| w.channel != names::NO_WRITES)
                .filter_map(|w| {
                    let channel = self.graph.shape.channel_id(&w.channel);
                    if channel.is_none() {
                        tracing::warn!("ignoring a saved write to unknown channel {}", w.channel);
                    }
                    Some((channel?, w.value.clone()))
                })
                .collect();
            task.cached = true;
            self.emit_updates(task, true);
        }
        Ok(())
    }

    /// What a task's outcome saves: its writes (`__no_writes__` when it
    /// wrote nothing, so a resumed run knows it finished), its interrupts
    /// and the answers it consumed before them, or its error (LangGraph's
    /// `Class('message')` form). `None` for a task without an id.
    fn outcome_writes(&self, task: &Task, outcome: &Outcome) -> Option<TaskWrites> {
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
        self.loaded_source = tuple.metadata.source;
        self.restore(&tuple.checkpoint)?;
        self.step = tuple.metadata.step.unwrap_or(-1) + 1;
        self.resumed = Some(Resumed {
            writes: tuple.pending_writes,
        });
        let versions = self.versions.clone();
        if let Some(persist) = self.persist.as_mut() {
            persist.target.checkpoint_id = Some(tuple.checkpoint.id.clone());
            persist.current = Some(tuple.checkpoint.id.clone());
            persist.saved_versions = versions;
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
        // where it stopped instead of starting over on its input.
        let nested = self.run.scope.as_ref().is_some_and(|scope| scope.nested);
        let input = if existing && nested && self.has_unfinished_tasks()? {
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
    fn has_unfinished_tasks(&mut self) -> Result<bool> {
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
    async fn travel(&mut self, input: &Input) -> Result<()> {
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
            self.loaded_source,
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
    fn take_answer(&mut self, answer: Value) -> Result<()> {
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
            let metadata = announce.then(|| self.metadata(source, self.step));
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
                &metadata,
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

    /// A checkpoint's metadata: its source and step, the run's metadata,
    /// and the parent checkpoints of a subgraph run.
    fn metadata(&self, source: CheckpointSource, step: i64) -> CheckpointMetadata {
        let mut metadata =
            CheckpointMetadata::new(source, step).merged_with_config(&self.run.config);
        if let Some(scope) = &self.run.scope {
            metadata.parents.clone_from(&scope.parents);
        }
        metadata
    }

    /// The sorted names of these channels (a checkpoint's updated channels).
    fn channel_names(&self, channels: &[ChannelId]) -> Vec<String> {
        let mut names: Vec<String> = channels
            .iter()
            .map(|c| self.graph.shape.channel_name(*c).to_owned())
            .collect();
        names.sort();
        names
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
