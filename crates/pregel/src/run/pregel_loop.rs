//! `PregelLoop` (LangGraph's `PregelLoop`): one run's mutable state and
//! its step sequence: apply the input, then plan, execute, apply and emit
//! each superstep until nothing is triggered, an interrupt or breakpoint
//! stops it, or the recursion limit is reached.

use super::breakpoints::Breakpoints;
use super::channels::RunChannels;
use super::checkpointing::{Announced, Checkpointing, Resumed, target_of};
use super::kept_input::KeptInput;
use super::task::{FreshCopy, Reused, Task, TaskResult};
use crate::channel_values::ChannelValues;
use crate::command::Input;
use crate::context::TaskContext;
use crate::error::{NodeError, PregelError, Result};
use crate::graph::CompiledGraph;
use crate::interrupt::Interrupt;
use crate::run_info::{Durability, RunInfo, Sink};
use crate::shape::{ChannelId, NodeId};
use stategraph_checkpoint::ChannelVersion;
use stategraph_checkpoint::CheckpointSource;
use stategraph_core::Value;
use std::sync::Arc;
/// LangGraph 1.2.22's default recursion limit (`LANGGRAPH_DEFAULT_RECURSION_LIMIT`).
pub const DEFAULT_RECURSION_LIMIT: usize = 10_007;

/// One run's mutable state.
pub(super) struct PregelLoop {
    pub(super) graph: Arc<CompiledGraph>,
    pub(super) channels: RunChannels,
    pub(super) versions: Vec<Option<ChannelVersion>>,
    pub(super) max_version: Option<ChannelVersion>,
    // Per node trigger (flat, from `seen_offset`): the version it last ran on.
    pub(super) seen: Vec<Option<ChannelVersion>>,
    // Per node: whether it ever ran.
    pub(super) ran: Vec<bool>,
    // Channels available at the end of the previous step.
    pub(super) live: Vec<ChannelId>,
    // Epoch marks: `mark[c] == epoch` means `c` is in the current step's set.
    pub(super) mark: Vec<u64>,
    pub(super) epoch: u64,
    pub(super) step: i64,
    pub(super) stop: i64,
    pub(super) limit: usize,
    // Shared with every task of the run.
    pub(super) run: Arc<RunInfo>,
    // The context lent to the node of a step's only task (the node is
    // called while the loop waits, and one that keeps its context clones
    // it, so the others cost no reference count), and copied for each
    // task of a step with several.
    pub(super) ctx: TaskContext,
    // Per channel: the epoch of its last change (value or availability).
    pub(super) modified: Vec<u64>,
    // Per read set: the last input map built for it.
    pub(super) input_cache: std::cell::RefCell<Vec<Option<KeptInput>>>,
    // Buffers reused from step to step.
    pub(super) task_buf: Reused<Vec<Task>>,
    pub(super) candidate_buf: Reused<Vec<NodeId>>,
    pub(super) write_buf: Reused<Vec<(ChannelId, Value)>>,
    pub(super) updated_buf: Reused<Vec<ChannelId>>,
    // Emptied write lists of finished tasks, reused by the next ones.
    // Kept, with `fresh_pool`: without the two pools sequential_1000 is 4.3%
    // slower (6.5% more instructions per step), which breaks its 1000x floor
    // (issue 22).
    pub(super) write_pool: std::cell::RefCell<Vec<Vec<(ChannelId, Value)>>>,
    // The fresh reads of the task whose writers are running.
    pub(super) fresh_reads: std::cell::RefCell<Vec<FreshCopy>>,
    // The channels lent to the writers of a step's only task, which apply
    // its writes to them in place (`PregelLoop::lend_fresh_reads`).
    pub(super) lent: std::cell::RefCell<Vec<FreshCopy>>,
    pub(super) lent_owner: NodeId,
    // Emptied fresh-read lists of finished tasks, and the step's list of
    // fresh copies to reuse, kept for the next steps.
    pub(super) fresh_pool: std::cell::RefCell<Vec<Vec<FreshCopy>>>,
    pub(super) fresh_buf: Vec<FreshCopy>,
    // Set when the graph has a checkpointer (root runs only).
    pub(super) persist: Option<Box<Checkpointing>>,
    // The pending writes of the checkpoint a run resumes, for its first step.
    pub(super) resumed: Option<Resumed>,
    // The metadata of the checkpoint the run loaded.
    pub(super) loaded: Option<stategraph_checkpoint::CheckpointMetadata>,
    // The checkpoint saved last, until `checkpoints` chunks show it.
    pub(super) announced: Option<Announced>,
    // Static breakpoints, and per channel the version they last saw
    // (LangGraph's `versions_seen["__interrupt__"]`): a breakpoint fires only
    // when some channel changed since the run last stopped or resumed.
    pub(super) before: Breakpoints,
    pub(super) after: Breakpoints,
    pub(super) interrupt_seen: Vec<Option<ChannelVersion>>,
    // Whether input writes were ever applied on the thread (LangGraph then
    // keeps `versions_seen["__input__"] = {}` in every checkpoint).
    pub(super) input_seen: bool,
    // The shown values of the latest `values` chunk a `latest_only` sink
    // has not been sent yet. Kept: fanout_to_subgraph_100x is 7.8% faster
    // with it (3.313 vs 3.555 ms, issue 22).
    pub(super) held_values: std::cell::RefCell<Option<Vec<Option<Value>>>>,
    // The writes the last finished task's writers handed over to come
    // later (its async routers' routes), until `route` awaits them.
    pub(super) routes: std::cell::RefCell<Vec<crate::node::DeferredWrites>>,
}

impl PregelLoop {
    pub(super) fn new(graph: Arc<CompiledGraph>, run: RunInfo) -> Self {
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
            task_config: std::sync::OnceLock::new(),
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
            loaded: None,
            announced: None,
            before: Breakpoints::default(),
            after: Breakpoints::default(),
            interrupt_seen: vec![None; count],
            input_seen: false,
            held_values: std::cell::RefCell::new(None),
            routes: std::cell::RefCell::new(Vec::new()),
            graph,
        }
    }

    pub(super) async fn run(
        mut self,
        input: Input,
        durability: Durability,
        [before, after]: [Vec<String>; 2],
    ) -> Result<()> {
        let input = input.within_depth().map_err(PregelError::Value)?;
        self.before = Breakpoints::resolve(&self.graph, &before)?;
        self.after = Breakpoints::resolve(&self.graph, &after)?;
        let nested = self.run.child;
        let result = match self.run.scope.clone() {
            None => self.steps(input).await,
            Some(scope) => match target_of(&self.run.config) {
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
                    self.persist = Some(Box::new(Checkpointing::new(
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

    pub(super) async fn steps(&mut self, input: Input) -> Result<()> {
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
            // Writes pushed by tasks that failed or stopped are not applied.
            self.run.forget_pushed(None);
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
            tasks.clear();
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
                crate::queue::YieldToStream(false).await;
            }
        }
    }

    /// Whether a static breakpoint stops the run at tasks of these nodes:
    /// one of them is a breakpoint node and some channel changed since the
    /// run last stopped or resumed (LangGraph's `should_interrupt`).
    pub(super) fn breakpoint(
        &self,
        points: &Breakpoints,
        mut nodes: impl Iterator<Item = NodeId>,
    ) -> bool {
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
    pub(super) fn stop_at_breakpoint(&mut self) {
        if let Some(persist) = self.persist.as_mut() {
            persist.stop();
        }
        self.run
            .at_breakpoint
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.emit_interrupts(&Value::new(Vec::<Interrupt>::new()), false);
    }

    pub(super) fn next_version(&self) -> ChannelVersion {
        match &self.persist {
            None => ChannelVersion::new(self.max_version.map_or(0, |v| v.counter()) + 1, 0),
            Some(persist) => persist.next_version(self.max_version.as_ref()),
        }
    }

    pub(super) fn name(&self, channel: ChannelId) -> &str {
        self.graph.shape.channel_name(channel)
    }

    /// Reports a failed task (`tasks`/`debug` chunks) and wraps its error.
    pub(super) fn task_failed(&self, task: &Task, error: NodeError) -> PregelError {
        if self.wants_task_events() && !self.graph.nodes[task.node].hidden {
            let id = self.task_id(task);
            let name = self.graph.shape.node_name(task.node).clone();
            let repr = error.repr();
            self.emit_task_event("task_result", |_| TaskResult {
                id: id.clone(),
                name: name.clone(),
                error: Some(repr.clone()),
                result: ChannelValues::default(),
                interrupts: Vec::new(),
            });
        }
        PregelError::Node {
            node: self.graph.shape.node_name(task.node).to_string(),
            error,
        }
    }
}
