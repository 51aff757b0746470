//! What every task of a run shares (`RunInfo`): the graph, the sinks its
//! chunks go to, resume answers, the checkpoint scope; and the options a
//! caller gives a run (`RunOptions`, `Durability`).

use std::any::Any;
use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use stategraph_core::{RunnableConfig, Value};

use crate::chunk::{StreamChunk, StreamMode, StreamModes};
use crate::queue::ChunkQueue;
use crate::shape::GraphShape;

/// Where a run's chunks go: a queue a stream drains, the modes it wants, the
/// namespace its chunks carry and the channels its `values` and `updates`
/// chunks show.
#[derive(Clone)]
pub(crate) struct Sink {
    pub(crate) queue: Arc<ChunkQueue>,
    pub(crate) modes: StreamModes,
    pub(crate) namespace: crate::chunk::Namespace,
    pub(crate) shown: crate::shape::IoChannels,
    /// The ids of the messages the `messages` mode has sent to the queue
    /// (shared by every sink of one queue).
    pub(crate) seen: crate::run_info::SeenMessages,
    /// Whether only the run's last `values` chunk is wanted (`invoke`): the
    /// loop then holds the values and sends one chunk when the run stops.
    pub(crate) latest_only: bool,
}

impl Sink {
    /// Whether `values`/`updates` chunks of this sink show `channel`.
    pub(crate) fn shows(&self, channel: crate::shape::ChannelId) -> bool {
        match &self.shown {
            crate::shape::IoChannels::One(c) => *c == channel,
            crate::shape::IoChannels::Many(cs) => cs.contains(&channel),
        }
    }

    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }

    pub(crate) fn push(&self, mode: StreamMode, data: Value) {
        if self.wants(mode) {
            self.queue.push(StreamChunk {
                namespace: self.namespace.clone(),
                mode,
                data,
            });
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.queue.has_pending()
    }
}

/// What a task needs of the graph that runs (the compiled graph;
/// a trait, so that what tasks share does not depend on the graph).
pub(crate) trait NodeFacts: std::marker::Send + Sync {
    /// The names of `node`'s trigger channels, sorted.
    fn sorted_triggers(&self, node: crate::shape::NodeId) -> &Arc<[Arc<str>]>;
    /// The metadata `node` was declared with.
    fn node_metadata(&self, node: crate::shape::NodeId) -> &stategraph_core::JsonMap;
    /// The graph's cache, if it was compiled with one.
    fn cache(&self) -> Option<&Arc<dyn crate::cache::NodeCache>>;
}

/// What every task of a run shares.
pub(crate) struct RunInfo {
    /// The graph that runs, as a task's config reads it.
    pub(crate) graph: Arc<dyn NodeFacts>,
    /// Its names.
    pub(crate) shape: Arc<GraphShape>,
    pub(crate) config: RunnableConfig,
    /// The run's own stream.
    pub(crate) sink: Sink,
    /// The root stream, for a subgraph run streamed with `subgraphs`.
    pub(crate) forward: Option<Sink>,
    /// The modes some sink wants (asked at every step: one bit test).
    pub(crate) modes: StreamModes,
    pub(crate) seed: u64,
    /// For a subgraph run: the parent task's config, which its tasks'
    /// configs derive from (made when one asks).
    pub(crate) parent_config: Option<ParentConfig>,
    pub(crate) context: Option<Arc<dyn Any + Send + Sync>>,
    /// The long-term memory store tasks see.
    pub(crate) store: Option<stategraph_store::SharedStore>,
    /// Whether subgraph chunks reach the root stream.
    pub(crate) subgraphs: bool,
    /// Whether this run is a subgraph of another run.
    pub(crate) child: bool,
    /// The single answer of a `Command { resume }`, taken by the first
    /// interrupt that has no answer of its own (shared with subgraph runs).
    pub(crate) resume: Arc<Mutex<Option<Value>>>,
    /// Answers by interrupt id from `Command::resume_by_id` (shared with
    /// subgraph runs).
    pub(crate) answers: Arc<Mutex<Option<Arc<AnswerMap>>>>,
    /// The interrupts the run stopped on (what `invoke` reports).
    pub(crate) interrupts: Mutex<Vec<crate::interrupt::Interrupt>>,
    /// Whether the run stopped at a static breakpoint.
    pub(crate) at_breakpoint: std::sync::atomic::AtomicBool,
    /// Where the run checkpoints, if it does.
    pub(crate) scope: Option<PersistScope>,
    /// The pending writes of the checkpoint a resumed run started from,
    /// during its first step: functional tasks replay their results.
    pub(crate) replay: Mutex<Option<Arc<[stategraph_checkpoint::PendingWrite]>>>,
    /// Where the current step's task writes are saved, if they are.
    pub(crate) saves: Mutex<Option<crate::run_info::WriteSender>>,
    /// Exit durability: the current step's functional task results, kept
    /// in case the step stops.
    pub(crate) deferred: Mutex<Option<Vec<crate::run_info::TaskWrites>>>,
    /// Writes tasks of the current step made while running
    /// ([`TaskContext::push_message`](crate::TaskContext::push_message)),
    /// applied before their output's; `pushed_any` spares finished tasks
    /// the lock when there are none.
    pub(crate) pushed: Mutex<Vec<PushedWrite>>,
    pub(crate) pushed_any: std::sync::atomic::AtomicBool,
}

/// The config of the task a subgraph runs in, made when first asked for.
pub(crate) type ParentConfig = Arc<dyn Fn() -> Arc<RunnableConfig> + Send + Sync>;

/// Which task of a run: its node, its `Send` index if a push task, its step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskKey {
    pub(crate) node: crate::shape::NodeId,
    pub(crate) push: Option<usize>,
    pub(crate) step: i64,
}

/// A write a task made while running.
pub(crate) struct PushedWrite {
    pub(crate) task: TaskKey,
    pub(crate) channel: crate::shape::ChannelId,
    pub(crate) value: Value,
}

/// Answers keyed by interrupt id.
pub(crate) type AnswerMap = serde_json::Map<String, serde_json::Value>;

/// Where a run checkpoints: its saver, its checkpoint namespace (`""` for a
/// root graph, `node:task_id` for a subgraph run inside that task), and the
/// checkpoints of the runs it is nested in (LangGraph's metadata `parents`).
#[derive(Clone)]
pub(crate) struct PersistScope {
    pub(crate) saver: stategraph_checkpoint::SharedSaver,
    pub(crate) checkpoint_ns: String,
    pub(crate) durability: crate::run_info::Durability,
    pub(crate) parents: std::collections::BTreeMap<String, stategraph_core::CheckpointId>,
    /// A subgraph run: it resumes its namespace's checkpoint when that has
    /// unfinished tasks (its parent task is running again), whatever its
    /// input.
    pub(crate) nested: bool,
}

/// How a graph used as a subgraph checkpoints (LangGraph's subgraph
/// `compile(checkpointer=None | True | False)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SubgraphCheckpoints {
    /// With the parent's saver, under the parent task's namespace: its
    /// state lives for one invocation (interrupts inside it resume). The
    /// default (LangGraph's `None`).
    #[default]
    PerInvocation,
    /// With the parent's saver, under the node's name: each invocation on
    /// a thread continues the state of the previous one (`True`).
    PerThread,
    /// Never (`False`): interrupts inside it cannot be resumed.
    Never,
}

impl PersistScope {
    /// The scope of a subgraph run of a graph checkpointing as `mode`
    /// inside a task whose run has the scope `parent`.
    pub(crate) fn for_subgraph(parent: &PersistScope, mode: SubgraphCheckpoints) -> Option<Self> {
        match mode {
            SubgraphCheckpoints::PerInvocation => Some(parent.clone()),
            SubgraphCheckpoints::PerThread => {
                // `ns|node:task_id` → `ns|node`.
                let namespace = parent
                    .checkpoint_ns
                    .rsplit_once(':')
                    .map_or(parent.checkpoint_ns.as_str(), |(path, _)| path);
                Some(Self {
                    checkpoint_ns: namespace.to_owned(),
                    ..parent.clone()
                })
            }
            SubgraphCheckpoints::Never => None,
        }
    }
}

/// What a subgraph run takes from the task that runs it, when that task's
/// run checkpoints.
#[derive(Clone)]
pub(crate) struct ParentRun {
    pub(crate) scope: PersistScope,
    pub(crate) resume: Arc<Mutex<Option<Value>>>,
    pub(crate) answers: Arc<Mutex<Option<Arc<AnswerMap>>>>,
}

impl RunInfo {
    /// A run's shared information; a subgraph run shares its parent's
    /// resume answers and checkpoints under the parent task's namespace.
    pub(crate) fn new(
        shape: Arc<GraphShape>,
        graph: Arc<dyn NodeFacts>,
        config: RunnableConfig,
        sink: Sink,
        forward: Option<Sink>,
        options: &RunOptions,
        scope: Option<PersistScope>,
    ) -> Self {
        let (resume, answers) = match &options.parent {
            Some(parent) => (parent.resume.clone(), parent.answers.clone()),
            None => (Arc::default(), Arc::default()),
        };
        let modes = forward
            .as_ref()
            .map_or(sink.modes, |forward| sink.modes.union(forward.modes));
        Self {
            shape,
            graph,
            config,
            sink,
            forward,
            modes,
            seed: stategraph_core::random_u64() >> 11,
            parent_config: options.parent_config.clone(),
            context: options.context.clone(),
            store: options.store.clone(),
            subgraphs: options.subgraphs,
            child: options.nested,
            resume,
            answers,
            interrupts: Mutex::new(Vec::new()),
            at_breakpoint: std::sync::atomic::AtomicBool::new(false),
            scope,
            replay: Mutex::new(None),
            saves: Mutex::new(None),
            deferred: Mutex::new(None),
            pushed: Mutex::new(Vec::new()),
            pushed_any: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Keeps a write `task` made while running, for its output.
    pub(crate) fn push_write(&self, task: TaskKey, channel: crate::shape::ChannelId, value: Value) {
        let mut pushed = self.pushed.lock().unwrap_or_else(PoisonError::into_inner);
        pushed.push(PushedWrite {
            task,
            channel,
            value,
        });
        self.pushed_any
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether a task may have made writes while running.
    pub(crate) fn has_pushed(&self) -> bool {
        self.pushed_any.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Moves the writes `task` made while running into `writes`.
    pub(crate) fn take_pushed(
        &self,
        task: TaskKey,
        writes: &mut Vec<(crate::shape::ChannelId, Value)>,
    ) {
        let mut pushed = self.pushed.lock().unwrap_or_else(PoisonError::into_inner);
        let mut kept = Vec::with_capacity(pushed.len());
        for write in pushed.drain(..) {
            if write.task == task {
                writes.push((write.channel, write.value));
            } else {
                kept.push(write);
            }
        }
        *pushed = kept;
    }

    /// Drops the writes made while running by `task` (a new attempt
    /// starts over), or by every task (`None`: the step is over, and what
    /// is left belongs to tasks that failed or stopped).
    pub(crate) fn forget_pushed(&self, task: Option<TaskKey>) {
        if !self.has_pushed() {
            return;
        }
        let mut pushed = self.pushed.lock().unwrap_or_else(PoisonError::into_inner);
        match task {
            Some(task) => pushed.retain(|write| write.task != task),
            None => pushed.clear(),
        }
        if pushed.is_empty() {
            self.pushed_any
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// Starts keeping the step's functional task results (exit durability).
    pub(crate) fn begin_deferred(&self) {
        *self
            .deferred
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Vec::new());
    }

    /// The functional task results kept since `begin_deferred`.
    pub(crate) fn end_deferred(&self) -> Vec<crate::run_info::TaskWrites> {
        self.deferred
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .unwrap_or_default()
    }

    pub(crate) fn answers(&self) -> Option<Arc<AnswerMap>> {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub(crate) fn set_answers(&self, answers: Option<Arc<AnswerMap>>) {
        *self
            .answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = answers;
    }

    pub(crate) fn set_replay(&self, writes: Option<Arc<[stategraph_checkpoint::PendingWrite]>>) {
        *self
            .replay
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = writes;
    }

    pub(crate) fn set_saves(&self, saves: Option<crate::run_info::WriteSender>) {
        *self
            .saves
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = saves;
    }

    /// A pending write of the checkpoint a resumed run started from.
    pub(crate) fn replayed(&self, task_id: &str, channel: &str) -> Option<Value> {
        let replay = self
            .replay
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()?;
        replay
            .iter()
            .find(|w| w.task_id == task_id && w.channel == channel)
            .map(|w| w.value.clone())
    }

    /// Sends writes to the current step's save pipeline (if it saves).
    pub(crate) fn save_writes(
        &self,
        task_id: Arc<str>,
        path: String,
        writes: Vec<(String, Value)>,
    ) {
        if let Some(saves) = self
            .saves
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .as_ref()
        {
            // A closed pipeline has failed; its error ends the step.
            let _ = saves.unbounded_send((task_id, path, writes));
            return;
        }
        if let Some(kept) = self
            .deferred
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .as_mut()
        {
            kept.push((task_id, path, writes));
        }
    }

    pub(crate) fn take_resume(&self) -> Option<Value> {
        self.resume
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    pub(crate) fn set_resume(&self, value: Option<Value>) {
        *self
            .resume
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = value;
    }

    pub(crate) fn record_interrupts(&self, found: &[crate::interrupt::Interrupt]) {
        self.interrupts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(found);
    }

    pub(crate) fn interrupts(&self) -> Vec<crate::interrupt::Interrupt> {
        self.interrupts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The sinks a chunk of this run goes to.
    pub(crate) fn sinks(&self) -> impl Iterator<Item = &Sink> {
        std::iter::once(&self.sink).chain(self.forward.as_ref())
    }

    /// Whether any sink wants `mode`.
    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }
}

/// Options of one run beyond its input and configuration.
///
/// ```
/// use stategraph_pregel::RunOptions;
///
/// #[derive(Debug)]
/// struct UserContext { user_id: String }
///
/// let options = RunOptions::new()
///     .context(UserContext { user_id: "u-1".into() })
///     .subgraphs(true);
/// ```
#[derive(Clone, Default)]
pub struct RunOptions {
    pub(crate) context: Option<Arc<dyn Any + Send + Sync>>,
    // Set for a subgraph run inside a task: that task's config.
    pub(crate) parent_config: Option<ParentConfig>,
    pub(crate) subgraphs: bool,
    pub(crate) forward: Option<Forward>,
    // Set for the run of a subgraph inside a parent's task.
    pub(crate) nested: bool,
    pub(crate) durability: crate::run_info::Durability,
    pub(crate) print: StreamModes,
    pub(crate) interrupt_before: Option<Vec<String>>,
    pub(crate) interrupt_after: Option<Vec<String>>,
    // Set for a subgraph run inside a task of a checkpointing run.
    pub(crate) parent: Option<ParentRun>,
    // The store of the task a subgraph runs in.
    pub(crate) store: Option<stategraph_store::SharedStore>,
    // How many times `invoke` runs again after `ThreadBusy`.
    pub(crate) busy_retries: u32,
    // The channels this run outputs and streams, in place of the graph's.
    pub(crate) output_keys: Option<crate::shape::IoSpec>,
}

/// Where a subgraph run forwards its chunks.
#[derive(Clone)]
pub(crate) struct Forward {
    pub(crate) queue: Arc<ChunkQueue>,
    pub(crate) modes: StreamModes,
    pub(crate) namespace: crate::chunk::Namespace,
    pub(crate) seen: crate::run_info::SeenMessages,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("context", &self.context.is_some())
            .field("subgraphs", &self.subgraphs)
            .field("forwarded", &self.forward.is_some())
            .field("durability", &self.durability)
            .finish()
    }
}

impl RunOptions {
    /// No context, subgraph chunks not streamed.
    pub fn new() -> Self {
        Self::default()
    }

    /// A run-scoped, typed context that every node can read with
    /// [`TaskContext::context`](crate::TaskContext::context) (LangGraph's `context=` / `Runtime.context`).
    #[must_use]
    pub fn context<C: Any + Send + Sync>(mut self, context: C) -> Self {
        self.context = Some(Arc::new(context));
        self
    }

    /// A run context given as JSON (what an HTTP client sends), in place of
    /// a typed one: LangGraph's coercion of a dict context into the
    /// graph's `context_schema`.
    ///
    /// When the graph declared its context type
    /// ([`PregelBuilder::context_type`](crate::PregelBuilder::context_type);
    /// `StateGraph::with_context_schema` in `stategraph-graph`), the run
    /// decodes the JSON into that type before its first step, so nodes read
    /// it with `TaskContext::context::<C>()`. A graph that declared none
    /// gives its nodes the JSON itself (`TaskContext::context::<serde_json::Value>()`).
    /// A subgraph sees the context its root run decoded.
    ///
    /// A JSON context that does not decode fails the run before any step
    /// with [`PregelError::InvalidContext`](crate::PregelError::InvalidContext).
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph_pregel::RunOptions;
    ///
    /// let options = RunOptions::new().context_json(json!({"user": "bob", "lang": "fr"}));
    /// ```
    #[must_use]
    pub fn context_json(mut self, context: serde_json::Value) -> Self {
        self.context = Some(Arc::new(JsonContext(context)));
        self
    }

    /// Streams the chunks of subgraphs too, each with its namespace
    /// (`["node:task_id", ...]`), as LangGraph's `subgraphs=True`.
    #[must_use]
    pub fn subgraphs(mut self, subgraphs: bool) -> Self {
        self.subgraphs = subgraphs;
        self
    }

    /// When a run of a graph with a checkpointer saves its checkpoints
    /// (LangGraph's `durability`; default [`Durability::Async`](crate::Durability::Async)).
    #[must_use]
    pub fn durability(mut self, durability: crate::run_info::Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Waits and runs again on the thread's new head, up to `retries`
    /// times, when the run finds its thread busy
    /// ([`PregelError::ThreadBusy`](crate::PregelError::ThreadBusy): another
    /// run or update moved the head first). The default is 0: the run
    /// fails and the caller decides. Each retry sleeps a short random
    /// pause (growing, at most 250 ms) first.
    ///
    /// Only the `invoke` methods retry; a stream's chunks are already
    /// delivered, so it hands the error to its caller. A retried run runs
    /// its nodes again: use it where a node's side effects may repeat.
    #[must_use]
    pub fn retry_when_busy(mut self, retries: u32) -> Self {
        self.busy_retries = retries;
        self
    }

    /// LangGraph's `print_mode`: chunks of these modes are printed as they
    /// are produced (`[updates] {...}`, with `[graph=ns]` for subgraph
    /// chunks), whether or not the run streams them. A library does not
    /// write to stdout: each chunk is a `tracing` event at INFO level with
    /// target `stategraph::print`, which any subscriber can show.
    #[must_use]
    pub fn print_modes(mut self, modes: impl Into<StreamModes>) -> Self {
        self.print = modes.into();
        self
    }

    /// The channels this run returns and streams in `values` and `updates`
    /// chunks (LangGraph's `output_keys`), in place of the graph's: one
    /// name gives bare values, several (`["a", "b"]`) give maps of them.
    /// A name that is not a channel fails the run (`Key <name> not in
    /// channels`).
    #[must_use]
    pub fn output_keys(mut self, keys: impl Into<crate::shape::IoSpec>) -> Self {
        self.output_keys = Some(keys.into());
        self
    }

    /// Static breakpoints for this run (LangGraph's per-run
    /// `interrupt_before`; `"*"`: any node), in place of the graph's.
    #[must_use]
    pub fn interrupt_before<I, S>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.interrupt_before = Some(nodes.into_iter().map(Into::into).collect());
        self
    }

    /// Static breakpoints after nodes for this run (LangGraph's per-run
    /// `interrupt_after`), in place of the graph's.
    #[must_use]
    pub fn interrupt_after<I, S>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.interrupt_after = Some(nodes.into_iter().map(Into::into).collect());
        self
    }
}

/// A context given by [`RunOptions::context_json`], not yet decoded.
struct JsonContext(serde_json::Value);

/// The declared type of a graph's run context: how a JSON context
/// ([`RunOptions::context_json`]) becomes that type.
///
/// ```
/// use stategraph_pregel::ContextType;
///
/// #[derive(serde::Deserialize)]
/// struct UserContext { user_id: String }
///
/// let declared = ContextType::of::<UserContext>();
/// assert!(declared.type_name().ends_with("UserContext"));
/// ```
#[derive(Clone)]
pub struct ContextType {
    type_name: &'static str,
    decode: Arc<DecodeContext>,
}

type DecodeContext = dyn Fn(serde_json::Value) -> Result<Arc<dyn Any + Send + Sync>, stategraph_core::ValueError>
    + Send
    + Sync;

impl fmt::Debug for ContextType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ContextType").field(&self.type_name).finish()
    }
}

impl ContextType {
    /// The context type `C`, decoded from JSON by serde.
    pub fn of<C: serde::de::DeserializeOwned + Send + Sync + 'static>() -> Self {
        Self {
            type_name: std::any::type_name::<C>(),
            decode: Arc::new(|json| {
                let context: Arc<C> = Value::from_json(json).decode::<C>()?;
                Ok(context)
            }),
        }
    }

    /// The Rust name of the type.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

/// The context a run's tasks read: a JSON context decoded into the graph's
/// declared type (or kept as JSON when it declared none); a typed one as is.
pub(crate) fn resolve_context(
    context: Option<Arc<dyn Any + Send + Sync>>,
    declared: Option<&ContextType>,
) -> Result<Option<Arc<dyn Any + Send + Sync>>, crate::error::PregelError> {
    let Some(JsonContext(json)) = context
        .as_deref()
        .and_then(|c| c.downcast_ref::<JsonContext>())
    else {
        return Ok(context);
    };
    let json = json.clone();
    match declared {
        Some(declared) => (declared.decode)(json)
            .map(Some)
            .map_err(|source| crate::error::PregelError::InvalidContext(Box::new(source))),
        None => Ok(Some(Arc::new(json))),
    }
}

/// The ids of the messages one stream has carried or its tasks have read.
pub(crate) type SeenMessages = Arc<Mutex<HashSet<String>>>;

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

/// One task's writes to save: task id, task path, `(channel, value)` pairs.
pub(crate) type TaskWrites = (Arc<str>, String, Vec<(String, Value)>);

/// Where a run's tasks send their writes to be saved: task id, task path,
/// `(channel, value)` pairs.
pub(crate) type WriteSender = futures::channel::mpsc::UnboundedSender<TaskWrites>;
