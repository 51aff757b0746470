//! The superstep loop and the stream that drives it.
//!
//! A run is a future (the loop) plus a queue of chunks. The loop applies the
//! input, then repeats: plan the tasks of the next step, run them concurrently,
//! turn each finished task's output into writes (and an `updates` chunk),
//! apply all writes together in task-path order, emit a `values` chunk, and
//! yield to the consumer whenever chunks are waiting. Dropping the stream drops
//! the loop and every task in flight.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;
use stategraph_checkpoint::{ChannelVersion, CheckpointSource};
use stategraph_core::Value;
use stategraph_llm::observe::observe;

use crate::error::{NodeError, PregelError, Result};
use crate::graph::{IoChannels, PregelInner};
use crate::node::{
    FreshReader, NodeFailure, NodeOutput, RunInfo, Scratchpad, Sink, StateValues, TaskContext,
};
use crate::retry;
use crate::run_channels::RunChannels;
use crate::types::{Command, Goto, Interrupt, Send, StreamMode, names};
use crate::{ChannelId, NodeId};

mod apply;
mod emit;
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
    announced: Option<persist::Announced>,
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

    /// A task's own context, for a task that runs beside others.
    fn task_context(&self, task: &Task) -> TaskContext {
        let mut ctx = self.ctx.clone();
        fill_task_context(&mut ctx, task, self.step, self.stop);
        ctx
    }

    /// Runs a step's tasks. With a checkpointer, the previous checkpoint's
    /// put (`put`, async durability) and the writes of each task, saved as
    /// it finishes, go through one ordered pipeline beside the tasks.
    /// Returns whether a task interrupted.
    async fn execute(
        &mut self,
        tasks: &mut [Task],
        put: Option<BoxFuture<'static, Result<()>>>,
    ) -> Result<bool> {
        let Some(target) = self.persist.as_ref().map(|p| p.writes_target()) else {
            return self.run_tasks(tasks, None).await;
        };
        let (saver, config) = match target {
            persist::WritesTarget::Save(saver, config) => (saver, config),
            persist::WritesTarget::Defer => {
                // Exit durability: nothing is saved during the step; if it
                // stops (an interrupt, an error), what its tasks did is kept
                // for the exit checkpoint.
                if let Some(put) = put {
                    put.await?;
                }
                self.run.begin_deferred();
                let ran = self.run_tasks(tasks, None).await;
                let mut kept = self.run.end_deferred();
                if !matches!(ran, Ok(false)) {
                    kept.extend(self.stopped_step_writes(tasks));
                }
                if let Some(persist) = self.persist.as_mut() {
                    persist.defer(kept);
                }
                return ran;
            }
        };
        let (sender, pipeline) = persist::save_pipeline(put, saver, config);
        // Functional tasks called by the step's tasks save through it too.
        self.run.set_saves(Some(sender.clone()));
        let run = self.run.clone();
        let this = &mut *self;
        let ran = async move {
            let ran = this.run_tasks(tasks, Some(sender)).await;
            // The pipeline ends once every sender is gone.
            run.set_saves(None);
            ran
        };
        let (ran, saved) = futures::join!(ran, pipeline);
        // The run's own error wins over a saving error.
        let interrupted = ran?;
        saved?;
        Ok(interrupted)
    }

    /// Announces a step's tasks (`tasks`/`debug` chunks) and takes cached
    /// writes from the node cache.
    fn start_tasks(&self, tasks: &mut [Task]) {
        if self.wants_task_events() {
            for task in tasks.iter() {
                self.emit_task_start(task);
            }
        }
        if self.run.wants(StreamMode::Messages) {
            for task in tasks.iter().filter(|task| !task.cached) {
                self.see_input_messages(task);
            }
        }
        if self.graph.cache.is_some() {
            for task in tasks.iter_mut().filter(|task| !task.cached) {
                self.use_cached_writes(task);
            }
        }
    }

    /// Runs a step's only task: awaited directly, with the loop's own
    /// context lent to its node.
    async fn run_lone_task(
        &mut self,
        task: &mut Task,
        saves: Option<&WriteSender>,
    ) -> Result<bool> {
        if task.cached {
            return Ok(false);
        }
        let graph = &*self.graph;
        let node = &graph.nodes[task.node];
        let (handled_by, result) = match &node.func {
            Some(func) => {
                // The node's input moves to it unless the cache keys
                // the task's writes by it.
                let input = if graph.caches_writes_of(task.node) {
                    task.input.clone()
                } else {
                    task.input.take()
                };
                let input = input.unwrap_or_else(Value::null);
                let observer = self.task_observer(task);
                fill_task_context(&mut self.ctx, task, self.step, self.stop);
                // Made where it is awaited, so it is not moved there.
                match observer {
                    Some(observer) => {
                        observe(
                            observer,
                            run_node(graph, task.node, input, &self.ctx).boxed(),
                        )
                        .await
                    }
                    // Most nodes: one attempt, awaited right here.
                    None if node.is_plain() => (None, retry::once(func, input, &self.ctx).await),
                    None => run_node(graph, task.node, input, &self.ctx).await,
                }
            }
            None => (
                None,
                Ok(passthrough(&task.input.clone().unwrap_or_else(Value::null))),
            ),
        };
        if let Some(handler) = handled_by {
            task.node = handler;
        }
        let lent = result.is_ok() && self.lend_fresh_reads(task);
        let committed = self.commit(task, result, saves);
        if lent {
            self.return_lent(task);
        }
        committed
    }

    async fn run_tasks(&mut self, tasks: &mut [Task], saves: Option<WriteSender>) -> Result<bool> {
        let saves = saves.as_ref();
        if let [task] = tasks {
            return self.run_lone_task(task, saves).await;
        }
        let graph = self.graph.clone();
        let mut interrupted = false;
        let mut running = FuturesUnordered::new();
        for (index, task) in tasks.iter_mut().enumerate() {
            if task.cached {
                continue;
            }
            let node = &graph.nodes[task.node];
            match &node.func {
                Some(_) => {
                    let (graph, node) = (graph.clone(), task.node);
                    let input = task.input.clone().unwrap_or_else(Value::null);
                    let ctx = self.task_context(task);
                    let run =
                        async move { (index, run_node(&graph, node, input, &ctx).await) }.boxed();
                    running.push(match self.task_observer(task) {
                        Some(observer) => observe(observer, run).boxed(),
                        None => run,
                    });
                }
                None => {
                    let output = passthrough(&task.input.clone().unwrap_or_else(Value::null));
                    interrupted |= self.commit(task, Ok(output), saves)?;
                }
            }
        }
        while let Some((index, (handled_by, result))) = running.next().await {
            let task = &mut tasks[index];
            if let Some(handler) = handled_by {
                task.node = handler;
            }
            interrupted |= self.commit(task, result, saves)?;
        }
        Ok(interrupted)
    }

    /// Lends the channels a step's only task reads fresh after writing them
    /// (`PregelNode::declare_fresh_reads`) to its writers, which then apply
    /// the task's writes to them in place (`read_fresh`) and the step
    /// commits them as they are: the value is not copied, and the old one
    /// is not dropped. Only in runs without a checkpointer, where a failed
    /// step ends the run with nothing reading its channels again. Returns
    /// whether channels were lent.
    fn lend_fresh_reads(&mut self, task: &mut Task) -> bool {
        let graph = &*self.graph;
        let node = &graph.nodes[task.node];
        if self.persist.is_some()
            || node.fresh_reads.is_empty()
            || graph.caches_writes_of(task.node)
        {
            return false;
        }
        // The node is done with its input: once it lets go of the values,
        // a write can change them in place.
        task.input = None;
        self.lent_owner = task.node;
        let lent = self.lent.get_mut();
        for &channel in &node.fresh_reads {
            // A trigger is consumed before the step's writes are applied.
            if !node.triggers.contains(&channel) {
                lent.push(FreshCopy {
                    channel,
                    writes: 0,
                    changed: false,
                    copy: Some(self.channels.take(channel)),
                });
            }
        }
        true
    }

    /// Puts lent channels back; those the writers changed in place go to
    /// the task's fresh reads, so the step does not apply those writes again.
    fn return_lent(&mut self, task: &mut Task) {
        for mut lent in self.lent.get_mut().drain(..) {
            if let Some(channel) = lent.copy.take() {
                self.channels.set(lent.channel, channel);
            }
            if lent.writes > 0 {
                if task.fresh.capacity() == 0 {
                    task.fresh = self.fresh_pool.get_mut().pop().unwrap_or_default();
                }
                task.fresh.push(lent);
            }
        }
    }

    /// Takes a finished task's result: its writes (streamed, and saved with
    /// a checkpointer), its interrupt, or its error. Returns whether it
    /// interrupted; an error fails the run.
    fn commit(
        &self,
        task: &mut Task,
        result: std::result::Result<NodeOutput, NodeError>,
        saves: Option<&WriteSender>,
    ) -> Result<bool> {
        let error = match result {
            Ok(output) => {
                self.finish_task(task, &output)?;
                discard(output, |output| matches!(output, NodeOutput::None));
                if self.persist.is_some() {
                    self.record_outcome(task, persist::Outcome::Wrote, saves);
                }
                return Ok(false);
            }
            Err(error) => error,
        };
        if let Some(interrupts) = error.interrupts() {
            let interrupts = interrupts.to_vec();
            self.emit_interrupt(task, interrupts.clone());
            self.record_outcome(task, persist::Outcome::Interrupted(interrupts), saves);
            return Ok(true);
        }
        self.record_outcome(task, persist::Outcome::Failed(error.repr()), saves);
        Err(self.task_failed(task, error))
    }

    /// Keeps a task's outcome and sends it to be saved, in a run with a
    /// checkpointer (without one nothing reads it).
    #[inline]
    fn record_outcome(
        &self,
        task: &mut Task,
        outcome: persist::Outcome,
        saves: Option<&WriteSender>,
    ) {
        if self.persist.is_none() {
            return;
        }
        if let Some(saves) = saves {
            self.save_outcome(saves, task, &outcome);
        }
        task.outcome = Some(Box::new(outcome));
    }

    /// Streams a task's interrupt: `{"__interrupt__": [..]}` in `updates`,
    /// the state with the same key in `values`, the `tasks` result.
    fn emit_interrupt(&self, task: &Task, interrupts: Vec<Interrupt>) {
        self.run.record_interrupts(&interrupts);
        if self.graph.nodes[task.node].hidden {
            return;
        }
        if self.wants_task_events() {
            let id = self.task_id(task);
            let name = self.graph.shape.node_name(task.node).clone();
            let shown: Vec<Value> = interrupts.iter().cloned().map(Value::new).collect();
            self.emit_task_event("task_result", |_| TaskResult {
                id: id.clone(),
                name: name.clone(),
                error: None,
                result: StateValues::default(),
                interrupts: shown.clone(),
            });
        }
        self.emit_interrupts(&Value::new(interrupts), true);
    }

    /// `{"__interrupt__": interrupts}` to `updates`, and (with `values`) the
    /// state with that key added to `values` (only the key for a single
    /// stream channel).
    fn emit_interrupts(&self, interrupts: &Value, values: bool) {
        // The state's chunk comes before the interrupt's.
        self.send_held_values();
        for sink in self.run.sinks() {
            if sink.wants(StreamMode::Updates) {
                sink.push(
                    StreamMode::Updates,
                    Value::new(NodeUpdate {
                        node: Arc::from(names::INTERRUPT),
                        update: UpdatePayload::Value(interrupts.clone()),
                        cached: false,
                    }),
                );
            }
            if values && sink.wants(StreamMode::Values) {
                let mut pairs = match &sink.shown {
                    IoChannels::One(_) => Vec::new(),
                    IoChannels::Many(_) => self
                        .values_of(&sink.shown)
                        .downcast_ref::<StateValues>()
                        .map(|values| values.pairs().to_vec())
                        .unwrap_or_default(),
                };
                pairs.push((Arc::from(names::INTERRUPT), interrupts.clone()));
                sink.push(StreamMode::Values, Value::new(StateValues::new(pairs)));
            }
        }
    }

    /// The cache namespace and key of a task, when its node and the graph cache.
    fn cache_slot(&self, task: &Task) -> Option<(String, String)> {
        let policy = self.graph.nodes[task.node].settings().cache.as_ref()?;
        self.graph.cache.as_ref()?;
        let namespace = format!(
            "__pregel_ns_writes:{}",
            self.graph.shape.node_name(task.node)
        );
        Some((namespace, policy.key_of(task.input.as_ref()?)))
    }

    /// Takes a task's writes from the node cache when they are there.
    fn use_cached_writes(&self, task: &mut Task) {
        let (Some((namespace, key)), Some(cache)) =
            (self.cache_slot(task), self.graph.cache.as_ref())
        else {
            return;
        };
        let Some(writes) = cache.get(&namespace, &key) else {
            return;
        };
        task.writes = crate::cache::resolve(&writes, |name| self.graph.shape.channel_id(name));
        task.cached = true;
        self.emit_updates(task, true);
    }

    /// Stores a finished task's writes in the node cache.
    fn store_cached_writes(&self, task: &Task) {
        let (Some((namespace, key)), Some(cache)) =
            (self.cache_slot(task), self.graph.cache.as_ref())
        else {
            return;
        };
        let ttl = self.graph.nodes[task.node]
            .settings()
            .cache
            .as_ref()
            .and_then(|p| p.ttl);
        let writes = task
            .writes
            .iter()
            .map(|(channel, value)| (self.graph.shape.channel_name_arc(*channel), value.clone()))
            .collect();
        cache.set(&namespace, &key, writes, ttl);
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

/// Runs a task's node: a node with no retry policy, timeout or error
/// handler (most nodes) in one guarded attempt with a small future; any
/// other through [`run_task`], boxed.
fn run_node<'a>(
    graph: &'a PregelInner,
    node: NodeId,
    input: Value,
    ctx: &'a TaskContext,
) -> impl Future<Output = (Option<NodeId>, std::result::Result<NodeOutput, NodeError>)>
+ std::marker::Send
+ 'a {
    use futures::future::Either;
    let spec = &graph.nodes[node];
    match &spec.func {
        // Most nodes: one attempt, nothing else around it.
        Some(func) if spec.is_plain() => {
            Either::Left(retry::once(func, input, ctx).map(|result| (None, result)))
        }
        // Retries, timeouts and error handlers: boxed, so the common
        // case's future stays small.
        _ => Either::Right(run_task(graph, node, input, ctx.clone()).boxed()),
    }
}

/// Runs a task's node with its retries and timeout; when it still fails
/// (not by an interrupt) and the node has an error handler, runs the
/// handler on the same input and returns its id with the handler's result:
/// the task then becomes the handler's.
async fn run_task(
    graph: &PregelInner,
    node: NodeId,
    input: Value,
    ctx: TaskContext,
) -> (Option<NodeId>, std::result::Result<NodeOutput, NodeError>) {
    let spec = &graph.nodes[node];
    let Some(func) = &spec.func else {
        return (None, Ok(passthrough(&input)));
    };
    let name = graph.shape.node_name(node);
    let settings = spec.settings();
    let Some(handler) = settings
        .error_handler
        .as_deref()
        .and_then(|handler| graph.shape.node_id(handler))
        .filter(|handler| *handler != node)
    else {
        return (
            None,
            run_with_retry(func, name, input, ctx, &settings.retry, settings.timeout).await,
        );
    };
    let handler_ctx = ctx.clone();
    let error = match run_with_retry(
        func,
        name,
        input.clone(),
        ctx,
        &settings.retry,
        settings.timeout,
    )
    .await
    {
        Err(error) if error.interrupts().is_none() => error,
        done => return (None, done),
    };
    let handler_spec = &graph.nodes[handler];
    let Some(func) = &handler_spec.func else {
        return (None, Err(error));
    };
    tracing::info!(node = &**name, "running the error handler after {error}");
    let handler_name = graph.shape.node_name(handler);
    let mut ctx = handler_ctx;
    ctx.node = handler;
    ctx.failure = Some(Arc::new(NodeFailure {
        node: name.clone(),
        error,
    }));
    let result = run_with_retry(
        func,
        handler_name,
        input,
        ctx,
        &handler_spec.settings().retry,
        handler_spec.settings().timeout,
    )
    .await;
    (Some(handler), result)
}

fn run_with_retry<'a>(
    func: &'a crate::NodeFn,
    name: &'a str,
    input: Value,
    ctx: TaskContext,
    policies: &'a [retry::RetryPolicy],
    timeout: Option<crate::TimeoutPolicy>,
) -> impl Future<Output = std::result::Result<NodeOutput, NodeError>> + std::marker::Send + 'a {
    use futures::future::Either;
    let Some(policy) = timeout else {
        return Either::Left(retry::with_retry(name, policies, move |attempt| {
            let mut ctx = ctx.clone();
            ctx.attempt = attempt;
            func(input.clone(), &ctx)
        }));
    };
    Either::Right(retry::with_retry(name, policies, move |attempt| {
        let mut ctx = ctx.clone();
        ctx.attempt = attempt;
        let input = input.clone();
        async move {
            crate::timeout::attempt(name, &policy, |progress| {
                ctx.progress = progress;
                func(input, &ctx)
            })
            .await
        }
    }))
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
