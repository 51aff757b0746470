//! `TaskContext`: what a node sees and can do besides its input.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use stategraph_core::{JsonMap, RunnableConfig, Value};

use crate::chunk::{StreamMode, StreamModes};
use crate::error::{NodeError, NodeFailure};
use crate::interrupt::Interrupted;
use crate::retry::RetryPolicy;
use crate::run_info::{Forward, ParentRun, PersistScope, RunInfo, RunOptions};
use crate::scratchpad::Scratchpad;
use crate::task_id::{TaskIdPath, TaskIdSeed, checkpoint_task_id};

/// What a node function can see and do besides its input: its name, the
/// step, the run configuration, and a writer for `custom` stream chunks.
///
/// Cloning is two reference-count increments.
#[derive(Clone)]
pub struct TaskContext {
    pub(crate) run: Arc<RunInfo>,
    // The node's id in `run.graph` (its name is read from there: no
    // reference count to change per task).
    pub(crate) node: crate::shape::NodeId,
    pub(crate) step: i64,
    pub(crate) push: Option<usize>,
    pub(crate) remaining_steps: i64,
    // Set in runs with a checkpointer: the task's id and interrupt answers.
    pub(crate) pad: Option<Arc<Scratchpad>>,
    // Which attempt of the task this is, from 1 (retries count up).
    pub(crate) attempt: u32,
    // Set when the node has an idle timeout: the attempt's last progress.
    pub(crate) progress: Option<Arc<crate::timeout::Progress>>,
    // Set for an error handler: the failure it answers.
    pub(crate) failure: Option<Arc<NodeFailure>>,
    // Set by `TaskContext::interrupt_scope`: the part of the task (a tool
    // call) whose interrupts have ids and answers of their own.
    pub(crate) scope: Option<Arc<str>>,
    // The task's own config, made when first asked for (see `config`).
    pub(crate) task_config: OnceLock<Arc<RunnableConfig>>,
}

impl TaskContext {
    /// The node being run.
    pub fn node(&self) -> &str {
        self.run.shape.node_name(self.node)
    }

    /// The superstep.
    pub fn step(&self) -> i64 {
        self.step
    }

    /// The task id. In a run with a checkpointer it is LangGraph's: derived
    /// from the checkpoint the step started from, the step, the node and the
    /// task path, so a resumed run gives the task the same id. Otherwise it
    /// is derived from the run (computed on each call, as most tasks never
    /// need it).
    pub fn task_id(&self) -> String {
        if let Some(pad) = &self.pad {
            return pad.task_id().to_string();
        }
        TaskIdSeed {
            run: self.run.seed,
            step: self.step,
            push: self.push,
        }
        .task_id(self.node())
    }

    /// Runs `work` as a task of the functional API (LangGraph's `@task`):
    /// retried per `policies`, its result streamed as an `updates` chunk
    /// `{name: result}`, and, in a run with a checkpointer, saved as the
    /// task finishes. When the run is resumed (after an interrupt, an error
    /// or a crash), a task that already finished returns its saved result
    /// without running again. Tasks are told apart by the order they are
    /// called in: call them in a fixed order (start several, then await
    /// them together, to run them in parallel).
    ///
    /// # Errors
    /// What `work` returns after its retries; a saved result that no longer
    /// decodes to `T`.
    pub fn task<T, Fut>(
        &self,
        name: &str,
        policies: &[RetryPolicy],
        work: impl FnMut() -> Fut + Send + 'static,
    ) -> impl Future<Output = Result<T, NodeError>> + Send + 'static
    where
        T: Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
    {
        self.run_task(name, policies, None, work)
    }

    /// [`TaskContext::task`] with its result cached in the graph's cache
    /// ([`CompileOptions::cache`](crate::CompileOptions::cache)) under
    /// `input`'s key (LangGraph's `@task(cache_policy=...)`, keyed by the
    /// task's arguments): a later call with the same name and key, in any
    /// run, returns the cached result without running `work`, and its
    /// `updates` chunk says `"__metadata__": {"cached": true}`. The cache
    /// is the task's own (a node's `clear_cache` leaves it). Without a
    /// cache on the graph it is [`TaskContext::task`].
    ///
    /// # Errors
    /// As [`TaskContext::task`]; a cached result that no longer decodes to
    /// `T`.
    pub fn cached_task<T, Fut>(
        &self,
        name: &str,
        policies: &[RetryPolicy],
        cache: crate::cache::CachePolicy,
        input: impl Serialize + Send + Sync + 'static,
        work: impl FnMut() -> Fut + Send + 'static,
    ) -> impl Future<Output = Result<T, NodeError>> + Send + 'static
    where
        T: Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
    {
        let entry = self.run.graph.cache().map(|store| TaskCache {
            store: store.clone(),
            namespace: crate::cache::task_namespace(name),
            key: cache.key_of(&Value::new(input)),
            ttl: cache.ttl,
        });
        self.run_task(name, policies, entry, work)
    }

    fn run_task<T, Fut>(
        &self,
        name: &str,
        policies: &[RetryPolicy],
        cache: Option<TaskCache>,
        mut work: impl FnMut() -> Fut + Send + 'static,
    ) -> impl Future<Output = Result<T, NodeError>> + Send + 'static
    where
        T: Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
    {
        let call = self.pad.as_ref().map(|pad| {
            let index = pad.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let task_path = pad.task_path.text();
            let path = format!(
                "~{}, {task_path}, {index:010}, 0000000001",
                crate::names::PUSH
            );
            let namespace = format!("{}|{name}", pad.namespace());
            let checkpoint = pad
                .checkpoint
                .as_ref()
                .and_then(stategraph_core::CheckpointId::uuid_bytes)
                .unwrap_or([0; 16]);
            let parts = [task_path.as_str(), &index.to_string()];
            let id = checkpoint_task_id(
                &checkpoint,
                &namespace,
                self.step,
                name,
                TaskIdPath::Call(&parts),
            );
            (id, path)
        });
        let run = self.run.clone();
        let name: Arc<str> = Arc::from(name);
        let policies = policies.to_vec();
        async move {
            if let Some((id, _)) = &call
                && let Some(saved) = run.replayed(id, crate::names::RETURN)
            {
                return Ok((*saved.decode::<T>()?).clone());
            }
            let hit = cache.as_ref().and_then(|cache| {
                let writes = cache.store.get(&cache.namespace, &cache.key)?;
                writes
                    .into_iter()
                    .find(|(channel, _)| &**channel == crate::names::RETURN)
                    .map(|(_, value)| value)
            });
            let (result, value, cached) = match hit {
                Some(value) => ((*value.clone().decode::<T>()?).clone(), value, true),
                None => {
                    let result = crate::retry::with_retry(&name, &policies, |_| work()).await?;
                    let value = Value::new(result.clone());
                    if let Some(cache) = &cache {
                        let writes = vec![(Arc::from(crate::names::RETURN), value.clone())];
                        cache
                            .store
                            .set(&cache.namespace, &cache.key, writes, cache.ttl);
                    }
                    (result, value, false)
                }
            };
            for sink in run.sinks() {
                sink.push(
                    StreamMode::Updates,
                    Value::new(crate::chunk::NodeUpdate {
                        node: name.clone(),
                        update: crate::chunk::UpdatePayload::Value(value.clone()),
                        cached,
                    }),
                );
            }
            if let Some((id, path)) = call {
                run.save_writes(id, path, vec![(crate::names::RETURN.to_owned(), value)]);
            }
            Ok(result)
        }
    }

    /// Pauses the run for human input (LangGraph's `interrupt(value)`).
    ///
    /// The first time, returns [`Interrupted`]: return it from the node
    /// (`ctx.interrupt(..)?`) and the run stops after this step, showing the
    /// interrupt in `updates` and `values` chunks and in `invoke`'s result.
    /// Resuming the thread with `Command::resume(answer)` (or
    /// `Command::resume_by_id`) runs the node again from the start; this call
    /// then returns the answer. A node may interrupt several times: answers
    /// are replayed in call order, so keep the calls in a fixed order.
    ///
    /// Without a checkpointer the run still stops, but cannot be resumed.
    ///
    /// # Errors
    /// [`Interrupted`] while the interrupt has no answer.
    pub fn interrupt(
        &self,
        value: impl Serialize + Send + Sync + 'static,
    ) -> Result<Value, Interrupted> {
        let value = Value::new(value);
        match (&self.pad, &self.scope) {
            (Some(pad), Some(scope)) => pad.interrupt_in(scope, value, &self.run),
            (Some(pad), None) => pad.interrupt(value, &self.run),
            // A run that does not checkpoint (a subgraph that never does,
            // inside one that does) can still take its parent's answer.
            (None, scope) => match self.run.take_resume() {
                Some(answer) => Ok(answer),
                None => {
                    let mut namespace = format!("{}:{}", self.node(), self.task_id());
                    if let Some(scope) = scope {
                        namespace = [&namespace, "|", scope].concat();
                    }
                    Err(Interrupted::one(crate::interrupt::Interrupt {
                        value,
                        id: crate::interrupt::Interrupt::id_for(&namespace, 0),
                    }))
                }
            },
        }
    }

    /// This task's context for one part of its work (a tool call of a
    /// tool node that runs several calls in one task): interrupts raised
    /// through it get ids of their own, derived from `scope`, and take only
    /// answers given to those ids (or a single resume value), so answers
    /// never cross from one part to another however the parts interleave.
    #[must_use]
    pub fn interrupt_scope(&self, scope: &str) -> Self {
        let mut ctx = self.clone();
        ctx.scope = Some(Arc::from(scope));
        ctx
    }

    /// The task's configuration (LangGraph's task config): the run's, with
    /// the task's place in the thread's checkpoints and the `langgraph_*`
    /// metadata, as LangGraph hands it to a node:
    ///
    /// - `configurable.checkpoint_ns`: the task's namespace, `node:task_id`
    ///   (inside a subgraph, after the subgraph's: `sub:id|inner:id`);
    /// - `configurable.checkpoint_id`: `None`, so a graph invoked with this
    ///   config (a subgraph) never reads it as time travel;
    /// - `configurable["checkpoint_map"]`: the checkpoint each enclosing
    ///   namespace's step started from, by namespace (`""` for the root);
    /// - `metadata`: the run's, with `thread_id` (and `checkpoint_ns`,
    ///   `checkpoint_id`, `task_id`, `run_id`, `assistant_id`, `graph_id`
    ///   when configured) copied in, then `langgraph_step`,
    ///   `langgraph_node`, `langgraph_triggers`, `langgraph_path`,
    ///   `langgraph_checkpoint_ns`, then the node's own metadata.
    ///
    /// Made on first call (most nodes never read it). In a run without a
    /// checkpointer the map names the id the step's checkpoint would have:
    /// such a run saves none.
    pub fn config(&self) -> &RunnableConfig {
        self.shared_config()
    }

    /// [`TaskContext::config`], shared: what a tool context or anything
    /// else that outlives the borrow keeps (a reference-count increment).
    pub fn shared_config(&self) -> &Arc<RunnableConfig> {
        self.task_config
            .get_or_init(|| Arc::new(self.build_config()))
    }

    /// The config the run was started with (a subgraph's: its parent's
    /// run's); [`TaskContext::config`] is this task's own.
    pub fn run_config(&self) -> &RunnableConfig {
        &self.run.config
    }

    /// The task's namespace: `node:task_id` after `outer`, the namespace of
    /// the run's (`base`) config.
    fn namespace_in(&self, base: &RunnableConfig) -> String {
        if let Some(pad) = &self.pad {
            return pad.namespace().to_owned();
        }
        let own = format!("{}:{}", self.node(), self.task_id());
        match base.checkpoint_ns() {
            "" => own,
            outer => format!("{outer}|{own}"),
        }
    }

    /// The id of the checkpoint the task's step started from.
    fn step_checkpoint(&self) -> String {
        match self.pad.as_ref().and_then(|pad| pad.checkpoint.as_ref()) {
            Some(id) => id.to_string(),
            None => crate::task_id::step_checkpoint_id(self.run.seed, self.step),
        }
    }

    fn build_config(&self) -> RunnableConfig {
        // A subgraph's tasks derive theirs from the parent task's config,
        // made only now that one of them asks.
        let parent = self.run.parent_config.as_ref().map(|parent| parent());
        let run = parent.as_deref().unwrap_or(&self.run.config);
        let mut config = run.clone();
        config.metadata = propagated_metadata(run);
        let namespace = self.namespace_in(run);
        // The enclosing namespaces' checkpoints, and this run's.
        let map = config
            .configurable
            .extra
            .entry(CHECKPOINT_MAP)
            .or_insert_with(|| JsonMap::new().into());
        if !map.is_object() {
            *map = JsonMap::new().into();
        }
        if let serde_json::Value::Object(map) = map {
            map.insert(
                run.checkpoint_ns().to_owned(),
                self.step_checkpoint().into(),
            );
        }
        config.configurable.checkpoint_id = None;
        config.configurable.checkpoint_ns.clone_from(&namespace);
        let triggers: Vec<serde_json::Value> = match self.push {
            Some(_) => vec![crate::names::PUSH.into()],
            None => self
                .run
                .graph
                .sorted_triggers(self.node)
                .iter()
                .map(|t| serde_json::Value::from(&**t))
                .collect(),
        };
        task_metadata(
            &mut config.metadata,
            TaskMetadata {
                step: self.step,
                node: self.node(),
                triggers,
                path: path_json(self.push, self.node()),
                namespace,
                own: self.run.graph.node_metadata(self.node),
            },
        );
        config
    }

    /// Which attempt at the task this is: 1, then 2, 3, ... as its retry
    /// policy retries it (LangGraph's `execution_info.node_attempt`).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Steps left before the recursion limit (LangGraph's `RemainingSteps`):
    /// `limit - 1` in the first step after the input, 0 in the last one.
    pub fn remaining_steps(&self) -> i64 {
        self.remaining_steps
    }

    /// Whether this is the step before the last one the recursion limit
    /// allows (LangGraph's `IsLastStep`: true when one step remains, false in
    /// the very last step).
    pub fn is_last_step(&self) -> bool {
        self.remaining_steps == 1
    }

    /// Whether the task was created by a `Send` (a PUSH task, whose input is
    /// the `Send`'s argument) rather than triggered by channels (a PULL task,
    /// whose input is read from the channels).
    pub fn is_push(&self) -> bool {
        self.push.is_some()
    }

    /// Sends a chunk to the `custom` stream (LangGraph's stream writer).
    /// It counts as progress for an idle timeout ([`RefreshOn::Auto`](crate::RefreshOn::Auto)).
    pub fn write_custom(&self, value: impl Serialize + Send + Sync + 'static) {
        if let Some(progress) = &self.progress
            && progress.refresh_on == crate::timeout::RefreshOn::Auto
        {
            progress.beat();
        }
        self.push(StreamMode::Custom, Value::new(value));
    }

    /// Whether the run streams `mode` (to its caller or, for a subgraph,
    /// to its parent's stream): what a node checks before building a chunk
    /// nobody reads.
    pub fn streams(&self, mode: StreamMode) -> bool {
        self.run.sinks().any(|sink| sink.wants(mode))
    }

    /// Sends an event to the `tools` stream (LangGraph's tool lifecycle
    /// events: `tool-started`, `tool-output-delta`, `tool-finished`,
    /// `tool-error`); `ToolNode` writes them for every call it runs.
    pub fn write_tool_event(&self, event: impl Serialize + Send + Sync + 'static) {
        self.push(StreamMode::Tools, Value::new(event));
    }

    /// Sends `message` to the `messages` stream now, with the task's
    /// metadata, and, unless `state_key` is `None`, writes it to that key
    /// with the node's output (LangGraph's `push_message`, which writes the
    /// message itself: here it is a list of one, as a typed messages key
    /// takes), for a message the node shows before it returns. The task's
    /// output does not send it again. A write of a task that fails, or is
    /// tried again, is dropped with the attempt. Returns the message.
    ///
    /// # Errors
    /// A message without an id (`ValueError`, as LangGraph: the stream and
    /// the reducer tell messages apart by id); a `state_key` that is not a
    /// channel of the graph (`InvalidUpdateError`).
    pub fn push_message(
        &self,
        message: impl Into<stategraph_llm::Message>,
        state_key: Option<&str>,
    ) -> Result<stategraph_llm::Message, NodeError> {
        let message = message.into();
        if message.id().is_none() {
            return Err(NodeError::new("ValueError", "Message ID is required"));
        }
        let channel = state_key
            .map(|key| {
                self.run.shape.channel_id(key).ok_or_else(|| {
                    NodeError::new(
                        "InvalidUpdateError",
                        format!("push_message: {key:?} is not a channel of the graph"),
                    )
                })
            })
            .transpose()?;
        stategraph_llm::observe::report_pushed(&message);
        if let Some(channel) = channel {
            // A list of one: what a typed messages key takes.
            let write = Value::new(vec![message.clone()]);
            self.run.push_write(self.key(), channel, write);
        }
        Ok(message)
    }

    /// Which task of the run this is.
    pub(crate) fn key(&self) -> crate::run_info::TaskKey {
        crate::run_info::TaskKey {
            node: self.node,
            push: self.push,
            step: self.step,
        }
    }

    /// Sends a chunk to every sink of the run that streams `mode`.
    fn push(&self, mode: StreamMode, value: Value) {
        for sink in self.run.sinks() {
            sink.push(mode, value.clone());
        }
    }

    /// In an error handler (see [`PregelNode::set_error_handler`](crate::PregelNode::set_error_handler)): the
    /// failure it answers. `None` in any other node.
    pub fn failure(&self) -> Option<&NodeFailure> {
        self.failure.as_deref()
    }

    /// Tells the node's idle timeout that the attempt is making progress
    /// (LangGraph's `runtime.heartbeat()`); nothing without one.
    pub fn heartbeat(&self) {
        if let Some(progress) = &self.progress {
            progress.beat();
        }
    }

    /// The run's typed context, if it was given one of type `C`.
    pub fn context<C: Any + Send + Sync>(&self) -> Option<&C> {
        self.run.context.as_deref()?.downcast_ref::<C>()
    }

    /// The graph's long-term memory store (LangGraph's `runtime.store`),
    /// if it was compiled with one; a subgraph without its own sees its
    /// parent's.
    pub fn store(&self) -> Option<&stategraph_store::SharedStore> {
        self.run.store.as_ref()
    }

    /// The options for running a subgraph inside this task: the same
    /// context, and when the root run streams subgraphs, this task's
    /// namespace (`node:task_id`) added to the chunks it forwards.
    pub fn subgraph_options(&self) -> RunOptions {
        let target = if self.run.child {
            self.run.forward.as_ref()
        } else if self.run.subgraphs {
            Some(&self.run.sink)
        } else {
            None
        };
        let parent = match (&self.pad, &self.run.scope) {
            (Some(pad), Some(scope)) => {
                let mut parents = scope.parents.clone();
                if let Some(id) = &pad.checkpoint {
                    parents.insert(scope.checkpoint_ns.clone(), id.clone());
                }
                Some(ParentRun {
                    scope: PersistScope {
                        saver: scope.saver.clone(),
                        checkpoint_ns: pad.namespace().to_owned(),
                        durability: scope.durability,
                        parents,
                        nested: true,
                    },
                    resume: self.run.resume.clone(),
                    answers: self.run.answers.clone(),
                })
            }
            _ => None,
        };
        let task = self.clone();
        RunOptions {
            nested: true,
            parent,
            parent_config: Some(Arc::new(move || task.shared_config().clone())),
            // The root stream prints forwarded chunks.
            print: StreamModes::NONE,
            interrupt_before: None,
            interrupt_after: None,
            durability: crate::run_info::Durability::default(),
            // The root run retries, not its subgraphs.
            busy_retries: 0,
            output_keys: None,
            context: self.run.context.clone(),
            store: self.run.store.clone(),
            subgraphs: self.run.subgraphs,
            forward: target.map(|sink| {
                let mut namespace = sink.namespace.to_vec();
                namespace.push(format!("{}:{}", self.node(), self.task_id()));
                Forward {
                    queue: sink.queue.clone(),
                    modes: sink.modes,
                    namespace: namespace.into(),
                    seen: sink.seen.clone(),
                }
            }),
        }
    }
}

/// Where a cached functional task keeps its result.
struct TaskCache {
    store: Arc<dyn crate::cache::NodeCache>,
    namespace: String,
    key: String,
    ttl: Option<std::time::Duration>,
}

/// The configurable key of the checkpoint each enclosing namespace's step
/// started from (LangGraph's `checkpoint_map`).
pub(crate) const CHECKPOINT_MAP: &str = "checkpoint_map";

/// The run's metadata with the configurable keys LangGraph copies into it
/// (when set and not already there).
pub(crate) fn propagated_metadata(config: &RunnableConfig) -> JsonMap {
    let mut metadata = config.metadata.clone();
    let configurable = &config.configurable;
    let mut copy = |key: &str, value: Option<serde_json::Value>| {
        if let Some(value) = value.filter(truthy) {
            metadata.entry(key.to_owned()).or_insert(value);
        }
    };
    copy("thread_id", configurable.thread_id.clone().map(Into::into));
    copy(
        "checkpoint_id",
        configurable
            .checkpoint_id
            .as_ref()
            .map(|id| id.to_string().into()),
    );
    copy(
        "checkpoint_ns",
        Some(configurable.checkpoint_ns.clone().into()),
    );
    for key in ["task_id", "run_id", "assistant_id", "graph_id"] {
        copy(key, configurable.extra.get(key).cloned());
    }
    metadata
}

/// Python's truthiness of a JSON value.
fn truthy(value: &serde_json::Value) -> bool {
    use serde_json::Value as Json;
    match value {
        Json::Null | Json::Bool(false) => false,
        Json::String(s) => !s.is_empty(),
        Json::Number(n) => n.as_f64() != Some(0.0),
        Json::Array(items) => !items.is_empty(),
        Json::Object(map) => !map.is_empty(),
        Json::Bool(true) => true,
    }
}

/// What a task adds to its metadata.
pub(crate) struct TaskMetadata<'a> {
    pub(crate) step: i64,
    pub(crate) node: &'a str,
    pub(crate) triggers: Vec<serde_json::Value>,
    pub(crate) path: serde_json::Value,
    pub(crate) namespace: String,
    /// The node's own metadata (`NodeSettings::metadata`), written last.
    pub(crate) own: &'a JsonMap,
}

/// Adds the `langgraph_*` keys of a task, then the node's own metadata, as
/// LangGraph's task config has them.
pub(crate) fn task_metadata(metadata: &mut JsonMap, task: TaskMetadata<'_>) {
    metadata.insert("langgraph_step".into(), task.step.into());
    metadata.insert("langgraph_node".into(), task.node.into());
    metadata.insert("langgraph_triggers".into(), task.triggers.into());
    metadata.insert("langgraph_path".into(), task.path);
    metadata.insert("langgraph_checkpoint_ns".into(), task.namespace.into());
    for (key, value) in task.own {
        metadata.insert(key.clone(), value.clone());
    }
}

/// LangGraph's task path of a pull task (`None`) or of the `index`-th push.
pub(crate) fn path_json(push: Option<usize>, node: &str) -> serde_json::Value {
    match push {
        None => serde_json::json!([crate::names::PULL, node]),
        Some(index) => serde_json::json!([crate::names::PUSH, index, false]),
    }
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskContext")
            .field("node", &self.node())
            .field("step", &self.step)
            .field("task_id", &self.task_id())
            .finish()
    }
}
