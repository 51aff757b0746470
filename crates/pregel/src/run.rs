//! The superstep loop and the stream that drives it.
//!
//! A run is a future (the loop) plus a queue of chunks. The loop applies the
//! input, then repeats: plan the tasks of the next step, run them concurrently,
//! turn each finished task's output into writes (and an `updates` chunk),
//! apply all writes together in task-path order, emit a `values` chunk, and
//! yield to the consumer whenever chunks are waiting. Dropping the stream drops
//! the loop and every task in flight.
//!
//! This file holds the loop itself (`Loop`, its step sequence and
//! breakpoints); each part of a step lives in a file of its own:
//! `stream.rs` (`stream`, `invoke`, `RunStream`), `input.rs` (the input
//! and `Command`s), `plan.rs` (the tasks of a step), `execute.rs` (running
//! them), `apply.rs` (applying their writes), `emit.rs` (task events,
//! `updates` and `values`), `messages.rs` (the `messages` mode),
//! `announce.rs` (the `checkpoints` chunks),
//! `persist.rs` (loading and saving checkpoints), `state.rs` (`get_state`,
//! `get_state_history`) and `update.rs` (`update_state`).

use std::sync::Arc;

use serde::Serialize;
use stategraph_checkpoint::{ChannelVersion, CheckpointSource};
use stategraph_core::Value;

use crate::error::{NodeError, PregelError, Result};
use crate::graph::PregelInner;
use crate::node::{FreshReader, NodeOutput, RunInfo, Scratchpad, Sink, StateValues, TaskContext};
use crate::run_channels::RunChannels;
use crate::types::{Command, Goto, Interrupt, Send};
use crate::{ChannelId, NodeId};

mod announce;
mod apply;
mod emit;
mod execute;
mod input;
mod messages;
mod persist;
mod plan;
mod state;
mod stream;
mod update;

pub(crate) use messages::SeenMessages;
pub use messages::{MessageEvent, StreamedMessage};

pub use emit::{NodeUpdate, UpdatePayload};
pub use input::Input;
pub use persist::Durability;
use plan::{KeptInput, forget_inputs};
pub use state::{PregelTask, StateSnapshot};
pub use stream::RunStream;
pub use update::StateUpdate;

/// LangGraph 1.2.22's default recursion limit (`LANGGRAPH_DEFAULT_RECURSION_LIMIT`).
pub const DEFAULT_RECURSION_LIMIT: usize = 10_007;

/// Points a context at a task of step `step` in a run that stops at `stop`.
fn fill_task_context(ctx: &mut TaskContext, task: &Task, step: i64, stop: i64) {
    ctx.node = task.node;
    ctx.step = step;
    ctx.push = match task.path {
        TaskPath::Pull(_) | TaskPath::Update(_) => None,
        TaskPath::Push(idx) => Some(idx),
    };
    ctx.remaining_steps = stop - step;
    ctx.pad.clone_from(&task.pad);
}

/// Where a task comes from; orders the application of writes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TaskPath {
    /// Triggered by channels. Pull tasks sort by node name (= node id).
    Pull(NodeId),
    /// Created by the `idx`-th `Send` of the previous step.
    Push(usize),
    /// The `idx`-th update of an `update_state` superstep, as if its node ran.
    Update(usize),
}

impl Task {
    /// The node whose triggers this task consumes: a pulled node, or the
    /// node an update acts as.
    fn consumer(&self) -> Option<NodeId> {
        match self.path {
            TaskPath::Pull(node) => Some(node),
            TaskPath::Update(_) => Some(self.node),
            TaskPath::Push(_) => None,
        }
    }

    /// Whether this is the pseudo-task of a run's input writes.
    fn is_input(&self) -> bool {
        self.node == usize::MAX && self.path == TaskPath::Push(usize::MAX)
    }

    /// A task of `node` from `path`, reading `input`, before it runs.
    fn new(node: NodeId, path: TaskPath, input: Option<Value>) -> Self {
        Self {
            node,
            path,
            input,
            writes: Vec::new(),
            cached: false,
            pad: None,
            outcome: None,
            messages: None,
            fresh: Vec::new(),
        }
    }

    /// Drops a finished task. Its lists went to the step's pools, and what
    /// is left owns nothing in the usual step, which then costs no call.
    fn discard(self) {
        let Self {
            input,
            writes,
            pad,
            outcome,
            messages,
            fresh,
            ..
        } = self;
        discard(input, Option::is_none);
        discard(writes, |writes| writes.capacity() == 0);
        discard(pad, Option::is_none);
        discard(outcome, Option::is_none);
        discard(messages, Option::is_none);
        discard(fresh, |fresh| fresh.capacity() == 0);
    }

    /// The pseudo-task that carries a run's input writes.
    fn input(writes: Vec<(ChannelId, Value)>) -> Self {
        Self {
            writes,
            ..Self::new(usize::MAX, TaskPath::Push(usize::MAX), None)
        }
    }
}

struct Task {
    node: NodeId,
    path: TaskPath,
    // What the node reads; `None` once the node no longer needs it (the
    // step's reducers may then change the values it shared in place).
    input: Option<Value>,
    writes: Vec<(ChannelId, Value)>,
    // Set when the writes came from the node cache or from the pending
    // writes of a resumed checkpoint instead of a run.
    cached: bool,
    // Set in runs with a checkpointer: the task's id and interrupt answers.
    pad: Option<Arc<Scratchpad>>,
    // Set in runs with a checkpointer once the task ends.
    // (Boxed: a task stays small enough to move without a `memcpy` call.)
    outcome: Option<Box<persist::Outcome>>,
    // Set when a sink wants `messages`: where the task's messages go, built
    // once for its model calls and its output.
    messages: Option<Arc<messages::TaskMessages>>,
    // The channels a conditional edge of the task read fresh: the step's
    // commit reuses them when the task is their only writer.
    fresh: Vec<FreshCopy>,
}

/// A channel with a task's writes applied, as a conditional edge read it
/// (`Loop::read_fresh`). The commit puts it in place of the channel when the
/// task is the channel's only writer of the step and wrote nothing to it
/// since: the reducer then runs once per step, not twice, and the edge saw
/// exactly the value the step commits (ids `add_messages` gives included).
struct FreshCopy {
    channel: ChannelId,
    // How many of the task's writes went to the channel when it was read.
    writes: usize,
    changed: bool,
    // The channel with the writes applied; `None` once a lent channel has
    // them applied in place (`Loop::lend_fresh_reads`).
    copy: Option<Box<dyn stategraph_channels::Channel>>,
}

/// One run's mutable state.
struct Loop {
    graph: Arc<PregelInner>,
    channels: RunChannels,
    versions: Vec<Option<ChannelVersion>>,
    max_version: Option<ChannelVersion>,
    // Per node trigger (flat, from `seen_offset`): the version it last ran on.
    seen: Vec<Option<ChannelVersion>>,
    // Per node: whether it ever ran.
    ran: Vec<bool>,
    // Channels available at the end of the previous step.
    live: Vec<ChannelId>,
    // Epoch marks: `mark[c] == epoch` means `c` is in the current step's set.
    mark: Vec<u64>,
    epoch: u64,
    step: i64,
    stop: i64,
    limit: usize,
    // Shared with every task of the run.
    run: Arc<RunInfo>,
    // The context lent to the node of a step's only task (the node is
    // called while the loop waits, and one that keeps its context clones
    // it, so the others cost no reference count), and copied for each
    // task of a step with several.
    ctx: TaskContext,
    // Per channel: the epoch of its last change (value or availability).
    modified: Vec<u64>,
    // Per read set: the last input map built for it.
    input_cache: std::cell::RefCell<Vec<Option<KeptInput>>>,
    // Buffers reused from step to step.
    task_buf: Reused<Vec<Task>>,
    candidate_buf: Reused<Vec<NodeId>>,
    write_buf: Reused<Vec<(ChannelId, Value)>>,
    updated_buf: Reused<Vec<ChannelId>>,
    // Emptied write lists of finished tasks, reused by the next ones.
    write_pool: std::cell::RefCell<Vec<Vec<(ChannelId, Value)>>>,
    // The fresh reads of the task whose writers are running.
    fresh_reads: std::cell::RefCell<Vec<FreshCopy>>,
    // The channels lent to the writers of a step's only task, which apply
    // its writes to them in place (`Loop::lend_fresh_reads`).
    lent: std::cell::RefCell<Vec<FreshCopy>>,
    lent_owner: NodeId,
    // Emptied fresh-read lists of finished tasks, and the step's list of
    // fresh copies to reuse, kept for the next steps.
    fresh_pool: std::cell::RefCell<Vec<Vec<FreshCopy>>>,
    fresh_buf: Vec<FreshCopy>,
    // Set when the graph has a checkpointer (root runs only).
    persist: Option<Box<persist::Persist>>,
    // The pending writes of the checkpoint a run resumes, for its first step.
    resumed: Option<persist::Resumed>,
    // The source of the checkpoint the run loaded.
    loaded_source: Option<CheckpointSource>,
    // The checkpoint saved last, until `checkpoints` chunks show it.
    announced: Option<announce::Announced>,
    // Static breakpoints, and per channel the version they last saw
    // (LangGraph's `versions_seen["__interrupt__"]`): a breakpoint fires only
    // when some channel changed since the run last stopped or resumed.
    before: Breakpoints,
    after: Breakpoints,
    interrupt_seen: Vec<Option<ChannelVersion>>,
    // Whether input writes were ever applied on the thread (LangGraph then
    // keeps `versions_seen["__input__"] = {}` in every checkpoint).
    input_seen: bool,
    // The shown values of the latest `values` chunk a `latest_only` sink
    // has not been sent yet.
    held_values: std::cell::RefCell<Option<Vec<Option<Value>>>>,
}

/// The nodes a static breakpoint stops at.
#[derive(Default)]
struct Breakpoints {
    // `"*"`: every node that is not hidden.
    all: bool,
    nodes: Vec<NodeId>,
}

impl Breakpoints {
    fn resolve(graph: &PregelInner, names: &[String]) -> Result<Self> {
        let mut points = Self::default();
        for name in names {
            if name == "*" {
                points.all = true;
                continue;
            }
            match graph.shape.node_id(name) {
                Some(node) => points.nodes.push(node),
                None => {
                    return Err(PregelError::InvalidGraph(format!(
                        "interrupt node {name:?} is not a node of the graph"
                    )));
                }
            }
        }
        Ok(points)
    }

    fn is_empty(&self) -> bool {
        !self.all && self.nodes.is_empty()
    }

    fn matches(&self, graph: &PregelInner, node: NodeId) -> bool {
        (self.all && !graph.nodes[node].hidden) || self.nodes.contains(&node)
    }
}

impl Loop {
    fn new(graph: Arc<PregelInner>, run: RunInfo) -> Self {
        let channels = RunChannels::new(graph.clone());
        let count = channels.len();
        let live = graph.initially_live.clone();
        let limit = run
            .config
            .recursion_limit
            .unwrap_or(DEFAULT_RECURSION_LIMIT);
        let run = Arc::new(run);
        let ctx = TaskContext {
            run: run.clone(),
            node: 0,
            step: -1,
            push: None,
            remaining_steps: 0,
            pad: None,
            attempt: 1,
            progress: None,
            failure: None,
            scope: None,
        };
        Self {
            seen: vec![None; graph.seen_len],
            ran: vec![false; graph.nodes.len()],
            channels,
            versions: vec![None; count],
            max_version: None,
            live,
            mark: vec![0; count],
            epoch: 0,
            step: -1,
            stop: 0,
            limit,
            run,
            ctx,
            modified: vec![0; count],
            input_cache: std::cell::RefCell::new(
                std::iter::repeat_with(|| None)
                    .take(graph.read_sets.len())
                    .collect(),
            ),
            task_buf: Reused::default(),
            candidate_buf: Reused::default(),
            write_buf: Reused::default(),
            updated_buf: Reused::default(),
            write_pool: std::cell::RefCell::new(Vec::new()),
            fresh_reads: std::cell::RefCell::new(Vec::new()),
            lent: std::cell::RefCell::new(Vec::new()),
            lent_owner: 0,
            fresh_pool: std::cell::RefCell::new(Vec::new()),
            fresh_buf: Vec::new(),
            persist: None,
            resumed: None,
            loaded_source: None,
            announced: None,
            before: Breakpoints::default(),
            after: Breakpoints::default(),
            interrupt_seen: vec![None; count],
            input_seen: false,
            held_values: std::cell::RefCell::new(None),
            graph,
        }
    }

    async fn run(
        mut self,
        input: Input,
        durability: Durability,
        [before, after]: [Vec<String>; 2],
    ) -> Result<()> {
        let input = input.within_depth()?;
        self.before = Breakpoints::resolve(&self.graph, &before)?;
        self.after = Breakpoints::resolve(&self.graph, &after)?;
        let nested = self.run.child;
        let result = match self.run.scope.clone() {
            None => self.steps(input).await,
            Some(scope) => match persist::target_of(&self.run.config) {
                Ok(mut target) => {
                    if scope.nested {
                        // A subgraph run: the latest checkpoint of its own namespace.
                        target.checkpoint_ns = scope.checkpoint_ns;
                        target.checkpoint_id = None;
                    }
                    let durability = if scope.nested {
                        scope.durability
                    } else {
                        durability
                    };
                    let may_branch = target.checkpoint_id.is_some();
                    self.persist = Some(Box::new(persist::Persist::new(
                        scope.saver,
                        durability,
                        target,
                        may_branch,
                    )));
                    let result = self.steps(input).await;
                    self.finish_persisted(result).await
                }
                Err(err) => Err(err),
            },
        };
        self.send_held_values();
        match result {
            // Only a subgraph has a parent to hand the command to.
            Err(PregelError::ParentCommand(_)) if !nested => Err(PregelError::InvalidUpdate(
                "There is no parent graph".into(),
            )),
            other => other,
        }
    }

    async fn steps(&mut self, input: Input) -> Result<()> {
        let mut updated = if self.persist.is_some() {
            self.start_persisted(input).await?
        } else {
            // A fresh thread: the input is step -1, the loop starts at 0.
            self.stop = self.step + i64::try_from(self.limit).unwrap_or(i64::MAX - 1) + 1;
            let updated = self.apply_input(input)?;
            self.step += 1;
            updated
        };
        loop {
            if self.step > self.stop {
                return Err(PregelError::GraphRecursion { limit: self.limit });
            }
            let mut tasks = self.prepare_tasks(&updated)?;
            if self.persist.is_some() {
                self.identify(&mut tasks);
                self.announce_checkpoint(&tasks);
                self.reattach(&mut tasks)?;
            }
            if tasks.is_empty() {
                return Ok(());
            }
            if self.breakpoint(&self.before, tasks.iter().map(|t| t.node)) {
                self.stop_at_breakpoint();
                return Ok(());
            }
            self.start_tasks(&mut tasks);
            // The previous checkpoint's put runs alongside this step.
            let put = self.persist.as_mut().and_then(|p| p.take_pending());
            let interrupted = match tasks.as_mut_slice() {
                // The common step: one task, nothing to save beside it.
                [task] if self.persist.is_none() => self.run_lone_task(task, None).await?,
                _ => self.execute(&mut tasks, put).await?,
            };
            // A resume answer is for the first step after the resume only
            // (a subgraph run inside that step shares it with its parent),
            // and so are the saved results functional tasks replay.
            if self.persist.is_some() {
                if !self.run.child {
                    self.run.set_resume(None);
                }
                self.run.set_replay(None);
            }
            if interrupted {
                // LangGraph shows the run's output with the writes of the
                // step's finished tasks applied; nothing new is saved, so a
                // resume starts the step again from its checkpoint.
                if let Some(persist) = self.persist.as_mut() {
                    persist.stop();
                    self.freeze_exit_checkpoint();
                }
                self.forget_inputs_of_written(&tasks);
                let updated = self.apply_writes(&mut tasks)?;
                self.emit_values(&updated);
                return Ok(());
            }
            if let Some(persist) = self.persist.as_mut() {
                // The step completes: its writes are in the next checkpoint.
                persist.defer(Vec::new());
            }
            // Recycle the last step's list for the next one.
            self.updated_buf.put(std::mem::take(&mut updated));
            // Finished tasks no longer need their inputs; releasing them (and
            // the cached inputs of channels about to change) lets reducers
            // extend values in place instead of copying shared ones.
            for task in tasks.iter_mut() {
                task.input = None;
            }
            self.forget_inputs_of_written(&tasks);
            updated = self.apply_writes(&mut tasks)?;
            let stop_after = self.breakpoint(&self.after, tasks.iter().map(|t| t.node));
            while let Some(task) = tasks.pop() {
                task.discard();
            }
            self.task_buf.put(tasks);
            self.emit_values(&updated);
            if self.persist.is_some() {
                self.save(CheckpointSource::Loop, &updated).await?;
            }
            self.step += 1;
            if stop_after {
                if self.announced.is_some() {
                    // The saved checkpoint is shown with the tasks it leaves.
                    let mut next = self.prepare_tasks(&updated)?;
                    self.identify(&mut next);
                    self.announce_checkpoint(&next);
                }
                self.stop_at_breakpoint();
                return Ok(());
            }
            if self.run.sink.has_pending()
                || self.run.forward.as_ref().is_some_and(Sink::has_pending)
            {
                self.run.sink.queue.mark_yield();
                stream::YieldToStream(false).await;
            }
        }
    }

    /// Whether a static breakpoint stops the run at tasks of these nodes:
    /// one of them is a breakpoint node and some channel changed since the
    /// run last stopped or resumed (LangGraph's `should_interrupt`).
    fn breakpoint(&self, points: &Breakpoints, mut nodes: impl Iterator<Item = NodeId>) -> bool {
        if points.is_empty() {
            return false;
        }
        let changed = self
            .versions
            .iter()
            .zip(&self.interrupt_seen)
            .any(|(version, seen)| version.is_some() && version > seen);
        changed && nodes.any(|node| points.matches(&self.graph, node))
    }

    /// Stops the run at a static breakpoint: `{"__interrupt__": []}` in
    /// `updates` (nothing in `values`; `invoke` returns the plain state).
    fn stop_at_breakpoint(&mut self) {
        if let Some(persist) = self.persist.as_mut() {
            persist.stop();
        }
        self.emit_interrupts(&Value::new(Vec::<Interrupt>::new()), false);
    }

    fn next_version(&self) -> ChannelVersion {
        match &self.persist {
            None => ChannelVersion::new(self.max_version.map_or(0, |v| v.counter()) + 1, 0),
            Some(persist) => persist.next_version(self.max_version.as_ref()),
        }
    }

    fn name(&self, channel: ChannelId) -> &str {
        self.graph.shape.channel_name(channel)
    }

    /// Reports a failed task (`tasks`/`debug` chunks) and wraps its error.
    fn task_failed(&self, task: &Task, error: NodeError) -> PregelError {
        if self.wants_task_events() && !self.graph.nodes[task.node].hidden {
            let id = self.task_id(task);
            let name = self.graph.shape.node_name(task.node).clone();
            let repr = error.repr();
            self.emit_task_event("task_result", |_| TaskResult {
                id: id.clone(),
                name: name.clone(),
                error: Some(repr.clone()),
                result: StateValues::default(),
                interrupts: Vec::new(),
            });
        }
        PregelError::Node {
            node: self.graph.shape.node_name(task.node).to_string(),
            error,
        }
    }
}

/// Drops `value`, skipping its drop glue (an out-of-line call even when
/// there is nothing to free) when `owns_nothing` says it holds no resource:
/// for the empty lists and outputs every superstep drops.
#[inline(always)]
fn discard<T>(value: T, owns_nothing: impl FnOnce(&T) -> bool) {
    if owns_nothing(&value) {
        std::mem::forget(value);
    }
}

/// A buffer a step takes and gives back, so the next step reuses its
/// allocation. Giving it back costs no call: the slot is known to be empty.
struct Reused<T>(Option<T>);

impl<T> Default for Reused<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T: Default> Reused<T> {
    fn take(&mut self) -> T {
        self.0.take().unwrap_or_default()
    }

    fn put(&mut self, value: T) {
        self.0 = Some(value);
    }
}

impl FreshReader for Loop {
    fn read_fresh(
        &self,
        channel: ChannelId,
        writes: &[(ChannelId, Value)],
    ) -> Result<Option<Value>> {
        if let Some(lent) = self
            .lent
            .borrow_mut()
            .iter_mut()
            .find(|l| l.channel == channel)
        {
            return self.read_lent(lent, writes);
        }
        let mut own = own_writes(writes, channel).peekable();
        if own.peek().is_none() {
            return Ok(self.channels.get(channel).get());
        }
        let mut copy = self.channels.get(channel).boxed_clone();
        let (count, changed) = update_with(copy.as_mut(), own);
        let changed = changed.map_err(|err| err.at_key(self.name(channel)))?;
        let value = copy.get();
        let mut fresh = self.fresh_reads.borrow_mut();
        fresh.retain(|f| f.channel != channel);
        fresh.push(FreshCopy {
            channel,
            writes: count,
            changed,
            copy: Some(copy),
        });
        Ok(value)
    }
}

impl Loop {
    /// A fresh read of a lent channel: the first read after the task wrote
    /// to it applies those writes in place; later reads see the same value.
    fn read_lent(
        &self,
        lent: &mut FreshCopy,
        writes: &[(ChannelId, Value)],
    ) -> Result<Option<Value>> {
        let count = writes.iter().filter(|(c, _)| *c == lent.channel).count();
        if count != lent.writes {
            if lent.writes > 0 {
                let node = self.graph.shape.node_name(self.lent_owner);
                return Err(wrote_after_fresh_read(node, self.name(lent.channel)));
            }
            // Cached inputs holding the value would make the write copy it.
            forget_inputs(
                &mut self.input_cache.borrow_mut(),
                &self.graph.read_sets,
                |channel| channel == lent.channel,
            );
            let Some(channel) = lent.copy.as_mut() else {
                return Ok(None);
            };
            let (_, changed) = update_with(channel.as_mut(), own_writes(writes, lent.channel));
            lent.writes = count;
            lent.changed = changed.map_err(|err| err.at_key(self.name(lent.channel)))?;
        }
        Ok(lent.copy.as_ref().and_then(|channel| channel.get()))
    }
}

/// The error of a node that wrote a channel after reading it fresh, which
/// its `declare_fresh_reads` promised not to do.
fn wrote_after_fresh_read(node: &str, channel: &str) -> PregelError {
    PregelError::InvalidGraph(format!(
        "node {node:?} wrote channel {channel:?} after reading it fresh, \
         which its declared fresh reads promise it does not"
    ))
}

/// The values of a task's writes to `channel`, in order.
fn own_writes(
    writes: &[(ChannelId, Value)],
    channel: ChannelId,
) -> impl Iterator<Item = Value> + '_ {
    writes
        .iter()
        .filter(move |(c, _)| *c == channel)
        .map(|(_, v)| v.clone())
}

/// Applies `values` to `channel` as one step's writes (the usual single
/// write needs no list); returns how many there were and whether the
/// channel changed. No values: nothing is applied.
fn update_with(
    channel: &mut dyn stategraph_channels::Channel,
    mut values: impl Iterator<Item = Value>,
) -> (
    usize,
    std::result::Result<bool, stategraph_channels::ChannelError>,
) {
    let Some(first) = values.next() else {
        return (0, Ok(false));
    };
    match values.next() {
        None => (1, channel.update_one(first)),
        Some(second) => {
            let all: Vec<Value> = [first, second].into_iter().chain(values).collect();
            (all.len(), channel.update(all))
        }
    }
}

/// The output of a node without a function: its input, or the `Command` a
/// run was given as input (see `Loop::apply_command_input`).
fn passthrough(input: &Value) -> NodeOutput {
    match input.downcast_ref::<InputCommand>() {
        Some(InputCommand(command)) => NodeOutput::Command(command.clone()),
        None => NodeOutput::Value(input.clone()),
    }
}

/// A `Command` given as a run's input, as the input channel holds it.
struct InputCommand(Command);

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
        if command.graph == crate::types::CommandGraph::Parent {
            map.serialize_entry("graph", "__parent__")?;
        }
        if !command.update.is_empty() {
            let update = StateValues::new(
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

/// A `tasks` chunk for a task about to run.
#[derive(Clone, Debug, Serialize)]
struct TaskStart {
    id: String,
    name: Arc<str>,
    input: Value,
    triggers: Vec<Arc<str>>,
}

/// A `tasks` chunk for a finished (or failed) task.
#[derive(Clone, Debug, Serialize)]
struct TaskResult {
    id: String,
    name: Arc<str>,
    error: Option<String>,
    result: StateValues,
    interrupts: Vec<Value>,
}

/// Where a run's tasks send their writes to be saved: task id, task path,
/// `(channel, value)` pairs.
pub(crate) type WriteSender = futures::channel::mpsc::UnboundedSender<persist::TaskWrites>;
pub(crate) use persist::TaskWrites;
