//! Running a superstep's tasks: alone or concurrently, with retries, the
//! node cache and lent fresh reads; committing each task's writes and
//! outcome as it finishes.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use stategraph_core::Value;
use stategraph_llm::observe::observe;

use super::checkpointing::{WritesTarget, save_pipeline};
use super::input::passthrough;
use super::pregel_loop::PregelLoop;
use super::task::{FreshCopy, Outcome, Task, TaskResult, fill_task_context};
use crate::channel_values::ChannelValues;
use crate::chunk::{NodeUpdate, StreamMode, UpdatePayload};
use crate::context::TaskContext;
use crate::error::{NodeError, NodeFailure, Result};
use crate::graph::CompiledGraph;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::run_info::WriteSender;
use crate::shape::{IoChannels, NodeId};
use crate::{names, retry};

/// What a node run gives: the error handler that took its failure, if one
/// did, and the node's (or the handler's) result.
type NodeRun = (Option<NodeId>, std::result::Result<NodeOutput, NodeError>);

impl PregelLoop {
    /// A task's own context, for a task that runs beside others.
    pub(super) fn task_context(&self, task: &Task) -> TaskContext {
        let mut ctx = self.ctx.clone();
        fill_task_context(&mut ctx, task, self.step, self.stop);
        ctx
    }

    /// Runs a step's tasks. With a checkpointer, the previous checkpoint's
    /// put (`put`, async durability) and the writes of each task, saved as
    /// it finishes, go through one ordered pipeline beside the tasks.
    /// Returns whether a task interrupted.
    pub(super) async fn execute(
        &mut self,
        tasks: &mut [Task],
        put: Option<BoxFuture<'static, Result<()>>>,
    ) -> Result<bool> {
        let Some(target) = self.persist.as_ref().map(|p| p.writes_target()) else {
            return self.run_tasks(tasks, None).await;
        };
        let (saver, config) = match target {
            WritesTarget::Save(saver, config) => (saver, config),
            WritesTarget::Defer => {
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
        let (sender, pipeline) = save_pipeline(put, saver, config);
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
    pub(super) fn start_tasks(&self, tasks: &mut [Task]) {
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
    /// Kept: sequential_1000 is 43.9% faster with it (0.462 vs 0.613 ms, issue 22).
    pub(super) async fn run_lone_task(
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
                    None if node.is_plain() => (None, once(func, input, &self.ctx).await),
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
        let mut committed = self.commit(task, result, saves);
        if committed.is_ok() && self.routes_pending() {
            committed = Box::pin(self.route(task, saves)).await.map(|()| false);
        }
        if lent {
            self.return_lent(task);
        }
        committed
    }

    pub(super) async fn run_tasks(
        &mut self,
        tasks: &mut [Task],
        saves: Option<WriteSender>,
    ) -> Result<bool> {
        let saves = saves.as_ref();
        if let [task] = tasks {
            return self.run_lone_task(task, saves).await;
        }
        let graph = self.graph.clone();
        let mut interrupted = false;
        // The tasks with a function, started at most `max_concurrency` at
        // a time (LangGraph's `max_concurrency`); the others commit now.
        let mut waiting = Vec::new();
        for (index, task) in tasks.iter_mut().enumerate() {
            if task.cached {
                continue;
            }
            if graph.nodes[task.node].func.is_some() {
                waiting.push(index);
            } else {
                let output = passthrough(&task.input.clone().unwrap_or_else(Value::null));
                interrupted |= self.commit(task, Ok(output), saves)?;
                if self.routes_pending() {
                    Box::pin(self.route(task, saves)).await?;
                }
            }
        }
        let limit = self
            .run
            .config
            .max_concurrency
            .map_or(usize::MAX, |n| n.max(1));
        let mut waiting = waiting.into_iter();
        let mut running = FuturesUnordered::new();
        for index in waiting.by_ref().take(limit) {
            running.push(self.start_task(&mut tasks[index], index));
        }
        while let Some((index, (handled_by, result))) = running.next().await {
            let task = &mut tasks[index];
            if let Some(handler) = handled_by {
                task.node = handler;
            }
            interrupted |= self.commit(task, result, saves)?;
            if self.routes_pending() {
                Box::pin(self.route(task, saves)).await?;
            }
            if let Some(next) = waiting.next() {
                running.push(self.start_task(&mut tasks[next], next));
            }
        }
        Ok(interrupted)
    }

    /// The future of a task with a function, one of several in its step:
    /// its index and what its node (or error handler) returned.
    fn start_task(&self, task: &mut Task, index: usize) -> BoxFuture<'static, (usize, NodeRun)> {
        let (graph, node) = (self.graph.clone(), task.node);
        let input = task.input.clone().unwrap_or_else(Value::null);
        let ctx = self.task_context(task);
        let run = async move { (index, run_node(&graph, node, input, &ctx).await) }.boxed();
        match self.task_observer(task) {
            Some(observer) => observe(observer, run).boxed(),
            None => run,
        }
    }

    /// Lends the channels a step's only task reads fresh after writing them
    /// (`PregelNode::declare_fresh_reads`) to its writers, which then apply
    /// the task's writes to them in place (`read_fresh`) and the step
    /// commits them as they are: the value is not copied, and the old one
    /// is not dropped. Only in runs without a checkpointer, where a failed
    /// step ends the run with nothing reading its channels again. Returns
    /// whether channels were lent.
    /// Kept: react_agent_100x is 10.3% faster with it (1.711 vs 1.968 ms, issue 22).
    pub(super) fn lend_fresh_reads(&mut self, task: &mut Task) -> bool {
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
    pub(super) fn return_lent(&mut self, task: &mut Task) {
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
    pub(super) fn commit(
        &self,
        task: &mut Task,
        result: std::result::Result<NodeOutput, NodeError>,
        saves: Option<&WriteSender>,
    ) -> Result<bool> {
        let error = match result {
            Ok(output) => {
                self.finish_task(task, &output)?;
                // With writes still to come, `route` records the outcome.
                if self.persist.is_some() && !self.routes_pending() {
                    self.record_outcome(task, Outcome::Wrote, saves);
                }
                return Ok(false);
            }
            Err(error) => error,
        };
        if let Some(interrupts) = error.interrupts() {
            let interrupts = interrupts.to_vec();
            self.emit_interrupt(task, interrupts.clone());
            self.record_outcome(task, Outcome::Interrupted(interrupts), saves);
            return Ok(true);
        }
        self.record_outcome(task, Outcome::Failed(error.repr()), saves);
        Err(self.task_failed(task, error))
    }

    /// Whether the task just finished left writes to come (async routes).
    pub(super) fn routes_pending(&self) -> bool {
        !self.routes.borrow().is_empty()
    }

    /// Awaits the writes a committed task's writers handed over (its async
    /// routers' routes), then records its outcome as `commit` does.
    pub(super) async fn route(
        &mut self,
        task: &mut Task,
        saves: Option<&WriteSender>,
    ) -> Result<()> {
        let routes = std::mem::take(self.routes.get_mut());
        for writes in routes {
            task.writes.extend(writes.await?);
        }
        if self.graph.caches_writes_of(task.node) {
            self.store_cached_writes(task);
        }
        if self.persist.is_some() {
            self.record_outcome(task, Outcome::Wrote, saves);
        }
        Ok(())
    }

    /// Keeps a task's outcome and sends it to be saved, in a run with a
    /// checkpointer (without one nothing reads it).
    #[inline]
    pub(super) fn record_outcome(
        &self,
        task: &mut Task,
        outcome: Outcome,
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
    pub(super) fn emit_interrupt(&self, task: &Task, interrupts: Vec<Interrupt>) {
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
                result: ChannelValues::default(),
                interrupts: shown.clone(),
            });
        }
        self.emit_interrupts(&Value::new(interrupts), true);
    }

    /// `{"__interrupt__": interrupts}` to `updates`, and (with `values`) the
    /// state with that key added to `values` (only the key for a single
    /// stream channel).
    pub(super) fn emit_interrupts(&self, interrupts: &Value, values: bool) {
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
                        .downcast_ref::<ChannelValues>()
                        .map(|values| values.pairs().to_vec())
                        .unwrap_or_default(),
                };
                pairs.push((Arc::from(names::INTERRUPT), interrupts.clone()));
                sink.push(StreamMode::Values, Value::new(ChannelValues::new(pairs)));
            }
        }
    }

    /// The cache namespace and key of a task, when its node and the graph cache.
    pub(super) fn cache_slot(&self, task: &Task) -> Option<(String, String)> {
        let policy = self.graph.nodes[task.node].settings().cache.as_ref()?;
        self.graph.cache.as_ref()?;
        let namespace = crate::cache::writes_namespace(self.graph.shape.node_name(task.node));
        Some((namespace, policy.key_of(task.input.as_ref()?)))
    }

    /// Takes a task's writes from the node cache when they are there.
    pub(super) fn use_cached_writes(&self, task: &mut Task) {
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
    pub(super) fn store_cached_writes(&self, task: &Task) {
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
}

/// Runs a task's node: a node with no retry policy, timeout or error
/// handler (most nodes) in one guarded attempt with a small future; any
/// other through [`run_task`], boxed.
pub(super) fn run_node<'a>(
    graph: &'a CompiledGraph,
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
            Either::Left(once(func, input, ctx).map(|result| (None, result)))
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
pub(super) async fn run_task(
    graph: &CompiledGraph,
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

pub(super) fn run_with_retry<'a>(
    func: &'a crate::node::NodeFn,
    name: &'a str,
    input: Value,
    ctx: TaskContext,
    policies: &'a [retry::RetryPolicy],
    timeout: Option<crate::timeout::TimeoutPolicy>,
) -> impl Future<Output = std::result::Result<NodeOutput, NodeError>> + std::marker::Send + 'a {
    use futures::future::Either;
    let Some(policy) = timeout else {
        return Either::Left(retry::with_retry(name, policies, move |attempt| {
            let mut ctx = ctx.clone();
            ctx.attempt = attempt;
            forget_failed_attempt(&ctx);
            func(input.clone(), &ctx)
        }));
    };
    Either::Right(retry::with_retry(name, policies, move |attempt| {
        let mut ctx = ctx.clone();
        ctx.attempt = attempt;
        forget_failed_attempt(&ctx);
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

/// A new attempt starts over: what the failed one pushed is dropped.
fn forget_failed_attempt(ctx: &TaskContext) {
    if ctx.attempt > 1 {
        ctx.run.forget_pushed(Some(ctx.key()));
    }
}

/// Runs a node that has no retry policy: one attempt, a panic (while the
/// future is made or polled) becomes a `Panic` error. The common case's
/// future stays small: no retry loop, no backoff timer.
pub(super) async fn once(
    func: &crate::node::NodeFn,
    input: Value,
    ctx: &TaskContext,
) -> Result<NodeOutput, NodeError> {
    retry::guarded(|| func(input, ctx)).await
}
