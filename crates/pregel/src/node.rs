//! Nodes of a Pregel graph: what triggers them, what they read, the function
//! they run and how their output becomes channel writes.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use stategraph_core::{RunnableConfig, Value};

use crate::error::NodeError;
pub(crate) use crate::queue::ChunkQueue;
use crate::retry::RetryPolicy;
use crate::types::{Command, StreamChunk, StreamMode, StreamModes};
use crate::{ChannelId, PregelError};

/// What a node function returns.
#[derive(Clone, Debug, Default)]
pub enum NodeOutput {
    /// Nothing to write (Python `None`).
    #[default]
    None,
    /// A value: a state update (a JSON object or a typed update) or, for raw
    /// Pregel nodes, the value written to the node's output channels.
    Value(Value),
    /// An update plus routing.
    Command(Command),
    /// Several outputs, applied in order (a tool node returning several commands).
    Many(Vec<NodeOutput>),
}

impl From<Value> for NodeOutput {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl From<Command> for NodeOutput {
    fn from(command: Command) -> Self {
        Self::Command(command)
    }
}

impl From<serde_json::Value> for NodeOutput {
    fn from(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Self::None,
            other => Self::Value(Value::from_json(other)),
        }
    }
}

/// The node function the runtime calls: input in, output out. The task's
/// context is lent for the call: a function whose future needs it clones it
/// (a function that ignores it costs nothing).
pub type NodeFn = Arc<dyn Fn(Value, &TaskContext) -> NodeFuture + Send + Sync>;

/// The future a [`NodeFn`] returns, made with [`node_future`]: held inline
/// when it fits in [`NODE_FUTURE_INLINE`] bytes (a node that does little
/// then costs no allocation), boxed otherwise.
pub type NodeFuture =
    stackfuture::StackFuture<'static, Result<NodeOutput, NodeError>, NODE_FUTURE_INLINE>;

/// How many bytes of a node's future [`NodeFuture`] holds inline.
pub const NODE_FUTURE_INLINE: usize = 64;

/// Wraps a node call's future as a [`NodeFuture`].
pub fn node_future<F>(future: F) -> NodeFuture
where
    F: Future<Output = Result<NodeOutput, NodeError>> + Send + 'static,
{
    NodeFuture::from_or_box(future)
}

/// Wraps an async function or closure as a [`NodeFn`].
pub fn node_fn<F, Fut, O>(f: F) -> NodeFn
where
    F: Fn(Value, TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, NodeError>> + Send + 'static,
    O: Into<NodeOutput>,
{
    Arc::new(move |input, ctx: &TaskContext| {
        let fut = f(input, ctx.clone());
        node_future(async move { fut.await.map(Into::into) })
    })
}

/// Everything a writer sees when it turns a node's output into writes.
pub struct WriteContext<'a> {
    pub(crate) output: &'a NodeOutput,
    pub(crate) graph: &'a crate::graph::GraphShape,
    pub(crate) reader: &'a dyn FreshReader,
    pub(crate) node: &'a str,
    pub(crate) remaining_steps: i64,
}

/// Reads channels with the current task's own writes applied (what a
/// conditional edge sees).
pub trait FreshReader {
    /// The value of `channel` with the task's writes so far applied.
    fn read_fresh(
        &self,
        channel: ChannelId,
        writes: &[(ChannelId, Value)],
    ) -> Result<Option<Value>, PregelError>;
}

impl WriteContext<'_> {
    /// The node's output.
    pub fn output(&self) -> &NodeOutput {
        self.output
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        self.node
    }

    /// Steps left before the recursion limit, as the task that produced the
    /// output saw them (LangGraph's `RemainingSteps`, which conditional edges
    /// read too).
    pub fn remaining_steps(&self) -> i64 {
        self.remaining_steps
    }

    /// The id of a channel, if the graph has it.
    pub fn channel(&self, name: &str) -> Option<ChannelId> {
        self.graph.channel_id(name)
    }

    /// The name of a channel.
    pub fn channel_name(&self, id: ChannelId) -> &str {
        self.graph.channel_name(id)
    }

    /// Reads channels as they are after applying `writes` (the task's own),
    /// as a map of the available ones.
    ///
    /// # Errors
    /// A channel refusing the writes.
    pub fn read_fresh(
        &self,
        channels: &[(Arc<str>, ChannelId)],
        writes: &[(ChannelId, Value)],
    ) -> Result<StateValues, PregelError> {
        let mut values = Vec::with_capacity(channels.len());
        for (name, id) in channels {
            if let Some(value) = self.reader.read_fresh(*id, writes)? {
                values.push((name.clone(), value));
            }
        }
        Ok(StateValues::new(values))
    }
}

/// Turns a node's output into channel writes.
pub type Writer = Arc<
    dyn Fn(&WriteContext<'_>, &mut Vec<(ChannelId, Value)>) -> Result<(), PregelError>
        + Send
        + Sync,
>;

/// What a node reads as its input.
#[derive(Clone, Debug)]
pub enum Reads {
    /// One channel's value; the task does not run while it is empty.
    Channel(ChannelId),
    /// A map of the available channels among these (key, channel) pairs
    /// (shared: nodes reading the same keys hold one list).
    Map(ReadKeys),
}

/// The (key, channel) pairs of a [`Reads::Map`], shared by the nodes that
/// read them.
pub type ReadKeys = Arc<[(Arc<str>, ChannelId)]>;

impl Reads {
    /// The channels read.
    pub(crate) fn channel_ids(&self) -> impl Iterator<Item = ChannelId> + '_ {
        let (one, map) = match self {
            Reads::Channel(channel) => (Some(*channel), &[][..]),
            Reads::Map(map) => (None, &map[..]),
        };
        one.into_iter()
            .chain(map.iter().map(|(_, channel)| *channel))
    }
}

/// The values of several channels, keyed by name, in declaration order.
/// Serializes as a JSON object; cloning is a reference-count increment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateValues(Arc<Vec<(Arc<str>, Value)>>);

impl StateValues {
    /// A map of these `(key, value)` pairs.
    pub fn new(pairs: Vec<(Arc<str>, Value)>) -> Self {
        Self(Arc::new(pairs))
    }

    /// A map with one entry.
    pub fn single(key: &str, value: Value) -> Self {
        Self::new(vec![(Arc::from(key), value)])
    }

    /// The `(key, value)` pairs.
    pub fn pairs(&self) -> &[(Arc<str>, Value)] {
        &self.0
    }

    /// The pairs, owned (copied only if the map is shared).
    pub fn into_pairs(self) -> Vec<(Arc<str>, Value)> {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The pairs, to change in place, if nothing else shares the map.
    pub(crate) fn pairs_mut(&mut self) -> Option<&mut Vec<(Arc<str>, Value)>> {
        Arc::get_mut(&mut self.0)
    }

    /// Adds an entry (copying the pairs first if the map is shared).
    pub fn push(&mut self, key: Arc<str>, value: Value) {
        Arc::make_mut(&mut self.0).push((key, value));
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`, if available.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    /// The JSON of `key`, if available and JSON-shaped.
    pub fn json(&self, key: &str) -> Option<serde_json::Value> {
        self.get(key).and_then(|v| v.to_json().ok())
    }

    /// Iterates the `(key, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    /// The whole map as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        v.to_json().unwrap_or(serde_json::Value::Null),
                    )
                })
                .collect(),
        )
    }
}

impl<'de> Deserialize<'de> for StateValues {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        Ok(Self::new(
            map.into_iter()
                .map(|(k, v)| (Arc::from(k.as_str()), Value::from_json(v)))
                .collect(),
        ))
    }
}

impl Serialize for StateValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter() {
            map.serialize_entry(&**k, v)?;
        }
        map.end()
    }
}

/// A node of a Pregel graph.
#[derive(Clone)]
pub struct PregelNode {
    pub(crate) triggers: Vec<ChannelId>,
    pub(crate) reads: Reads,
    pub(crate) func: Option<NodeFn>,
    pub(crate) writers: Vec<NodeWriter>,
    pub(crate) hidden: bool,
    // Whether the node runs a subgraph (shown in checkpoint events).
    pub(crate) subgraph: bool,
    // Channels the node's writers read fresh after their last write to
    // them (see `declare_fresh_reads`).
    pub(crate) fresh_reads: Vec<ChannelId>,
    // Settings most nodes leave unset, boxed: a compiler moves each node
    // several times, so a small node keeps compiling a large graph cheap.
    settings: Option<Box<NodeSettings>>,
}

/// One of a node's writers, run in the order they were added.
#[derive(Clone)]
pub(crate) enum NodeWriter {
    Fn(Writer),
    /// A writer that writes nothing when the node returns nothing
    /// ([`NodeOutput::None`]), so it is not called then.
    Output(Writer),
    /// A write that does not depend on the output, kept in the node itself
    /// (a chain's edges: no call, nothing to follow).
    Constant(ChannelId, Value),
}

impl NodeWriter {
    pub(crate) fn write(
        &self,
        ctx: &WriteContext<'_>,
        writes: &mut Vec<(ChannelId, Value)>,
    ) -> Result<(), PregelError> {
        match self {
            Self::Fn(writer) => writer(ctx, writes),
            Self::Output(writer) => match ctx.output {
                NodeOutput::None => Ok(()),
                _ => writer(ctx, writes),
            },
            Self::Constant(channel, value) => {
                writes.push((*channel, value.clone()));
                Ok(())
            }
        }
    }
}

/// A node's retry, cache, timeout, error handler and metadata.
#[derive(Clone, Default)]
pub(crate) struct NodeSettings {
    pub(crate) retry: Vec<RetryPolicy>,
    pub(crate) metadata: stategraph_core::JsonMap,
    pub(crate) cache: Option<crate::CachePolicy>,
    pub(crate) timeout: Option<crate::TimeoutPolicy>,
    // The node that answers this node's failures (LangGraph's
    // `error_handler`), by name.
    pub(crate) error_handler: Option<Arc<str>>,
}

static DEFAULT_SETTINGS: std::sync::LazyLock<NodeSettings> =
    std::sync::LazyLock::new(NodeSettings::default);

impl fmt::Debug for PregelNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PregelNode")
            .field("triggers", &self.triggers)
            .field("reads", &self.reads)
            .field("writers", &self.writers.len())
            .field("hidden", &self.hidden)
            .finish_non_exhaustive()
    }
}

impl PregelNode {
    /// A node triggered by `triggers`, reading `reads`, running `func`
    /// (`None` passes the input through), writing with `writers`.
    pub fn new(
        triggers: Vec<ChannelId>,
        reads: Reads,
        func: Option<NodeFn>,
        writers: Vec<Writer>,
    ) -> Self {
        Self {
            triggers,
            reads,
            func,
            writers: writers.into_iter().map(NodeWriter::Fn).collect(),
            hidden: false,
            subgraph: false,
            fresh_reads: Vec::new(),
            settings: None,
        }
    }

    /// The node's retry, cache, timeout, error handler and metadata.
    pub(crate) fn settings(&self) -> &NodeSettings {
        self.settings.as_deref().unwrap_or(&DEFAULT_SETTINGS)
    }

    /// Whether the node runs in one attempt with nothing around it: no
    /// retry policy, timeout or error handler (read without following the
    /// settings of a node that has none: setting a default allocates none).
    pub(crate) fn is_plain(&self) -> bool {
        self.settings.as_deref().is_none_or(|settings| {
            settings.error_handler.is_none()
                && settings.retry.is_empty()
                && settings.timeout.is_none()
        })
    }

    /// Changes the node's settings; a change to a default value (`to_default`)
    /// on a node without settings changes nothing and allocates none.
    fn update_settings(&mut self, to_default: bool, update: impl FnOnce(&mut NodeSettings)) {
        if !to_default || self.settings.is_some() {
            update(self.settings.get_or_insert_default());
        }
    }

    /// Declares channels the node's writers read with
    /// [`WriteContext::read_fresh`], promising that no writer writes one of
    /// them after a writer read it fresh (a graph's conditional edges run
    /// after its state writes, for example).
    ///
    /// In a step where the node's task is the only task, a run without a
    /// checkpointer then applies the task's writes to such a channel in
    /// place when a conditional edge reads it, instead of applying them to
    /// a copy: the step commits that value, so the channel's value is not
    /// copied and the old one is not dropped. Breaking the promise makes
    /// the run fail with [`PregelError::InvalidGraph`]; no write is ever
    /// applied twice.
    pub fn declare_fresh_reads(&mut self, channels: impl IntoIterator<Item = ChannelId>) {
        // Each channel once: a channel is lent at most once.
        self.fresh_reads.extend(channels);
        self.fresh_reads.sort_unstable();
        self.fresh_reads.dedup();
    }

    /// Sends the node's failures (after its retries) to the node `handler`:
    /// it runs at once, in the same step, on the failed task's input, reads
    /// the failure with [`TaskContext::failure`], and its output replaces
    /// the failed node's (its updates, its `Command` routing; the failed
    /// node's edges do not fire). A failing handler fails the run.
    pub fn set_error_handler(&mut self, handler: Option<&str>) {
        self.update_settings(handler.is_none(), |settings| {
            settings.error_handler = handler.map(Arc::from);
        });
    }

    /// Limits how long each attempt of the node may take.
    pub fn set_timeout(&mut self, policy: Option<crate::TimeoutPolicy>) {
        self.update_settings(policy.is_none(), |settings| settings.timeout = policy);
    }

    /// Marks the node as running a subgraph (checkpoint events then show
    /// the namespace its state lives under).
    pub fn set_subgraph(&mut self, subgraph: bool) {
        self.subgraph = subgraph;
    }

    /// Adds a trigger channel.
    pub fn add_trigger(&mut self, channel: ChannelId) {
        if !self.triggers.contains(&channel) {
            self.triggers.push(channel);
        }
    }

    /// Adds a writer.
    pub fn add_writer(&mut self, writer: Writer) {
        self.writers.push(NodeWriter::Fn(writer));
    }

    /// Adds a writer of the node's output, one that writes nothing when
    /// the node returns [`NodeOutput::None`]: it is not called then (most
    /// nodes of a chain return nothing).
    pub fn add_output_writer(&mut self, writer: Writer) {
        self.writers.push(NodeWriter::Output(writer));
    }

    /// Adds a writer that writes `value` to `channel` whatever the node
    /// returned (an edge): the same as a writer pushing that pair, without
    /// a call.
    pub fn add_constant_write(&mut self, channel: ChannelId, value: Value) {
        self.writers.push(NodeWriter::Constant(channel, value));
    }

    /// Sets the retry policies (the first whose `retry_on` matches applies).
    pub fn set_retry(&mut self, policies: Vec<RetryPolicy>) {
        self.update_settings(policies.is_empty(), |settings| settings.retry = policies);
    }

    /// Hides the node's output from the `updates` stream (LangGraph's `TAG_HIDDEN`).
    pub fn set_hidden(&mut self, hidden: bool) {
        self.hidden = hidden;
    }

    /// Caches the node's results under this policy (used when the graph
    /// has a cache).
    pub fn set_cache_policy(&mut self, policy: crate::CachePolicy) {
        self.update_settings(false, |settings| settings.cache = Some(policy));
    }

    /// Sets metadata added to the metadata of the node's tasks (what the
    /// `messages` stream shows with each message, after the `langgraph_*`
    /// keys, which it may replace, as LangGraph's node metadata).
    pub fn set_metadata(&mut self, metadata: stategraph_core::JsonMap) {
        self.update_settings(metadata.is_empty(), |settings| settings.metadata = metadata);
    }
}

/// Where a run's chunks go: a queue a stream drains, the modes it wants, the
/// namespace its chunks carry and the channels its `values` and `updates`
/// chunks show.
#[derive(Clone)]
pub(crate) struct Sink {
    pub(crate) queue: Arc<ChunkQueue>,
    pub(crate) modes: StreamModes,
    pub(crate) namespace: crate::types::Namespace,
    pub(crate) shown: crate::IoChannels,
    /// The ids of the messages the `messages` mode has sent to the queue
    /// (shared by every sink of one queue).
    pub(crate) seen: crate::run::SeenMessages,
    /// Whether only the run's last `values` chunk is wanted (`invoke`): the
    /// loop then holds the values and sends one chunk when the run stops.
    pub(crate) latest_only: bool,
}

impl Sink {
    /// Whether `values`/`updates` chunks of this sink show `channel`.
    pub(crate) fn shows(&self, channel: crate::ChannelId) -> bool {
        match &self.shown {
            crate::IoChannels::One(c) => *c == channel,
            crate::IoChannels::Many(cs) => cs.contains(&channel),
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

/// What a task id is computed from: the run, the step and the task path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskIdSeed {
    pub(crate) run: u64,
    pub(crate) step: i64,
    // `None` for a pull task, the `Send` index for a push task.
    pub(crate) push: Option<usize>,
}

impl TaskIdSeed {
    /// A deterministic task id: xxh3-128 of the run, step, node and task
    /// path, laid out like a UUID.
    pub(crate) fn task_id(&self, node: &str) -> String {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&self.run.to_le_bytes());
        bytes.extend_from_slice(&self.step.to_le_bytes());
        bytes.extend_from_slice(node.as_bytes());
        match self.push {
            None => bytes.extend_from_slice(crate::names::PULL.as_bytes()),
            Some(idx) => {
                bytes.extend_from_slice(crate::names::PUSH.as_bytes());
                bytes.extend_from_slice(&idx.to_le_bytes());
            }
        }
        uuid_shaped(xxhash_rust::xxh3::xxh3_128(&bytes))
    }
}

/// A 128-bit hash written like a UUID (8-4-4-4-12 hex digits), with one
/// allocation.
fn uuid_shaped<T: for<'a> From<&'a str>>(hash: u128) -> T {
    let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
    T::from(
        uuid::Uuid::from_u128(hash)
            .hyphenated()
            .encode_lower(&mut text),
    )
}

/// LangGraph's `task_path_str` of a task (the key its pending writes are
/// ordered by), as its parts; [`TaskPathText::text`] writes it.
#[derive(Clone, Debug)]
pub(crate) enum TaskPathText {
    /// `~__pregel_pull, node`.
    Pull(Arc<str>),
    /// `~__pregel_push, {index:010}, 0000000000`.
    Push(usize),
    /// `~__interrupt__, {index:010}` (a state update).
    Update(usize),
}

impl TaskPathText {
    /// The text LangGraph writes.
    pub(crate) fn text(&self) -> String {
        let (kind, index, tail) = match self {
            Self::Pull(node) => return ["~", crate::names::PULL, ", ", node].concat(),
            Self::Push(index) => (crate::names::PUSH, *index, ", 0000000000"),
            Self::Update(index) => (crate::names::INTERRUPT, *index, ""),
        };
        let mut text = String::with_capacity(kind.len() + tail.len() + 24);
        text.push('~');
        text.push_str(kind);
        text.push_str(", ");
        // `{index:010}`.
        let (digits, at) = decimal_digits(index.sign_and_magnitude().1);
        for _ in (digits.len() - at)..10 {
            text.push('0');
        }
        text.extend(digits[at..].iter().map(|d| char::from(*d)));
        text.push_str(tail);
        text
    }
}

/// What distinguishes tasks of one node in one step.
pub(crate) enum TaskIdPath<'a> {
    /// Triggered by channels: the node's trigger channel names, sorted.
    Pull(&'a [Arc<str>]),
    /// Created by the `Send` at this index.
    Push(usize),
    /// A functional task: the calling task's path and the call's index.
    Call(&'a [&'a str]),
}

/// LangGraph's task id in a run with a checkpointer: xxh3-128 of the bytes
/// of the checkpoint the step started from, then (without separators) the
/// task's namespace (the node name at the root, `ns|node` in a subgraph run
/// whose checkpoint namespace is `ns`), the step, the node name,
/// the path kind and the triggers or `Send` index; written like a UUID.
/// A resumed run gives its tasks the ids they had, so saved writes find
/// their task again.
pub(crate) fn checkpoint_task_id(
    checkpoint: &[u8; 16],
    namespace: &str,
    step: i64,
    node: &str,
    path: TaskIdPath<'_>,
) -> Arc<str> {
    let mut bytes = HashInput::new();
    bytes.extend(checkpoint);
    bytes.extend(namespace.as_bytes());
    bytes.decimal(step);
    bytes.extend(node.as_bytes());
    match path {
        TaskIdPath::Pull(triggers) => {
            bytes.extend(crate::names::PULL.as_bytes());
            for trigger in triggers {
                bytes.extend(trigger.as_bytes());
            }
        }
        TaskIdPath::Push(index) => {
            bytes.extend(crate::names::PUSH.as_bytes());
            bytes.decimal(index);
        }
        TaskIdPath::Call(parts) => {
            bytes.extend(crate::names::PUSH.as_bytes());
            for part in parts {
                bytes.extend(part.as_bytes());
            }
        }
    }
    uuid_shaped(xxhash_rust::xxh3::xxh3_128(bytes.as_slice()))
}

/// The bytes a task id hashes: on the stack while they fit (they mostly
/// do), then on the heap.
struct HashInput {
    stack: [u8; 256],
    len: usize,
    // Empty until the bytes outgrow `stack`.
    heap: Vec<u8>,
}

impl HashInput {
    fn new() -> Self {
        Self {
            stack: [0; 256],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        if self.heap.is_empty() {
            if let Some(slot) = self.stack.get_mut(self.len..self.len + bytes.len()) {
                slot.copy_from_slice(bytes);
                self.len += bytes.len();
                return;
            }
            self.heap.extend_from_slice(&self.stack[..self.len]);
        }
        self.heap.extend_from_slice(bytes);
    }

    /// Appends `number` in decimal (as `to_string` writes it), without the
    /// formatting machinery.
    fn decimal(&mut self, number: impl Decimal) {
        let (negative, magnitude) = number.sign_and_magnitude();
        if negative {
            self.extend(b"-");
        }
        let (digits, at) = decimal_digits(magnitude);
        self.extend(&digits[at..]);
    }

    fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }
}

/// The decimal digits of `number`: `digits[at..]` of the returned pair.
pub(crate) fn decimal_digits(number: u64) -> ([u8; 20], usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        // `rest % 10` is below 10: the cast keeps it whole.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    (digits, at)
}

/// An integer written in decimal ([`decimal_digits`], `HashInput::decimal`).
pub(crate) trait Decimal {
    /// Whether it is negative, and its magnitude.
    fn sign_and_magnitude(self) -> (bool, u64);
}

impl Decimal for i64 {
    fn sign_and_magnitude(self) -> (bool, u64) {
        (self < 0, self.unsigned_abs())
    }
}

impl Decimal for usize {
    fn sign_and_magnitude(self) -> (bool, u64) {
        (false, u64::try_from(self).unwrap_or(u64::MAX))
    }
}

/// What a node function can see and do besides its input: its name, the
/// step, the run configuration, and a writer for `custom` stream chunks.
///
/// Cloning is two reference-count increments.
#[derive(Clone)]
pub struct TaskContext {
    pub(crate) run: Arc<RunInfo>,
    // The node's id in `run.graph` (its name is read from there: no
    // reference count to change per task).
    pub(crate) node: crate::NodeId,
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
}

/// A node's failure, as its error handler sees it (LangGraph's
/// `langgraph.errors.NodeError`): the node and what it failed with.
#[derive(Debug)]
#[non_exhaustive]
pub struct NodeFailure {
    /// The node that failed.
    pub node: Arc<str>,
    /// Its error, after its retries.
    pub error: NodeError,
}

/// The error [`TaskContext::interrupt`] returns to pause the run: return it
/// from the node (with `?`) and the run stops after the current step, showing
/// the interrupt; resuming with `Command::resume` runs the node again from
/// the start, and this time `interrupt` returns the answer.
///
/// It converts into [`NodeError`] like any error; the runtime recognises it
/// there. An interrupt is never retried. A subgraph node returns the
/// interrupts of its subgraph's run, possibly several.
#[derive(Clone, Debug, PartialEq)]
pub struct Interrupted(pub Vec<crate::Interrupt>);

impl Interrupted {
    fn one(interrupt: crate::Interrupt) -> Self {
        Self(vec![interrupt])
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted")?;
        for interrupt in &self.0 {
            let shown = interrupt.value.to_json().map_or_else(
                |_| interrupt.value.type_name().to_owned(),
                |j| j.to_string(),
            );
            write!(f, " ({}): {shown}", interrupt.id)?;
        }
        Ok(())
    }
}

impl std::error::Error for Interrupted {}

/// A task's interrupt bookkeeping (LangGraph's scratchpad): its id, the
/// answers it has been given so far, and how many interrupts it has reached
/// in the current attempt.
pub(crate) struct Scratchpad {
    // The task's id and namespace, computed when first read: most tasks of
    // an exit-durability run never need them.
    identity: std::sync::OnceLock<TaskIdentity>,
    inputs: TaskIdInputs,
    // The checkpoint the task's step started from.
    pub(crate) checkpoint: Option<stategraph_core::CheckpointId>,
    // LangGraph's `task_path_str` of the task (written when asked).
    pub(crate) task_path: TaskPathText,
    answers: Mutex<Vec<Value>>,
    reached: std::sync::atomic::AtomicUsize,
    // Per interrupt scope (see `TaskContext::interrupt_scope`): its answers
    // in the order its interrupts were reached, and how many it reached.
    scoped: Mutex<BTreeMap<Arc<str>, ScopeAnswers>>,
    // Functional tasks called so far (`TaskContext::task`).
    calls: std::sync::atomic::AtomicUsize,
}

/// A task's id and namespace.
#[derive(Clone)]
struct TaskIdentity {
    task_id: Arc<str>,
    // `node:task_id` (after the run's own namespace, `|`-separated): the
    // namespace of the task's interrupts and of its subgraph's checkpoints.
    namespace: String,
}

/// What a task's id is computed from (see [`checkpoint_task_id`]).
#[derive(Clone)]
pub(crate) struct TaskIdInputs {
    /// The bytes of the checkpoint the task's step started from.
    pub(crate) checkpoint: [u8; 16],
    /// The checkpoint namespace of the task's run.
    pub(crate) run_namespace: Arc<str>,
    pub(crate) step: i64,
    pub(crate) graph: Arc<crate::graph::PregelInner>,
    pub(crate) node: crate::NodeId,
    /// `None` for a pull task, else its `Send` (or update) index.
    pub(crate) push: Option<usize>,
}

impl TaskIdInputs {
    fn identity(&self) -> TaskIdentity {
        let name = self.graph.shape.node_name(self.node);
        // `path` (the node within the run's namespace), then `:task_id`.
        let mut namespace = String::with_capacity(self.run_namespace.len() + name.len() + 38);
        if !self.run_namespace.is_empty() {
            namespace.push_str(&self.run_namespace);
            namespace.push('|');
        }
        namespace.push_str(name);
        let kind = match self.push {
            None => TaskIdPath::Pull(self.graph.sorted_triggers(self.node)),
            Some(index) => TaskIdPath::Push(index),
        };
        let task_id = checkpoint_task_id(&self.checkpoint, &namespace, self.step, name, kind);
        namespace.push(':');
        namespace.push_str(&task_id);
        TaskIdentity { task_id, namespace }
    }
}

/// The interrupt answers of one scope of a task.
#[derive(Clone, Default)]
struct ScopeAnswers {
    answers: Vec<Value>,
    reached: usize,
}

impl Scratchpad {
    /// The scratchpad of the task whose id comes from `inputs`.
    pub(crate) fn new(
        inputs: TaskIdInputs,
        checkpoint: Option<stategraph_core::CheckpointId>,
        task_path: TaskPathText,
    ) -> Self {
        Self {
            identity: std::sync::OnceLock::new(),
            inputs,
            checkpoint,
            task_path,
            answers: Mutex::new(Vec::new()),
            reached: std::sync::atomic::AtomicUsize::new(0),
            scoped: Mutex::new(BTreeMap::new()),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The same task with these recorded answers (a resumed run): the
    /// task's own, and those of its interrupt scopes.
    pub(crate) fn with_answers(
        &self,
        answers: Vec<Value>,
        scoped: BTreeMap<String, Vec<Value>>,
    ) -> Self {
        let scoped = scoped
            .into_iter()
            .map(|(scope, answers)| {
                let answers = ScopeAnswers {
                    answers,
                    reached: 0,
                };
                (Arc::from(scope), answers)
            })
            .collect();
        Self {
            identity: std::sync::OnceLock::from(self.identity().clone()),
            inputs: self.inputs.clone(),
            checkpoint: self.checkpoint.clone(),
            task_path: self.task_path.clone(),
            answers: Mutex::new(answers),
            reached: std::sync::atomic::AtomicUsize::new(0),
            scoped: Mutex::new(scoped),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn identity(&self) -> &TaskIdentity {
        self.identity.get_or_init(|| self.inputs.identity())
    }

    /// The task's LangGraph id.
    pub(crate) fn task_id(&self) -> &Arc<str> {
        &self.identity().task_id
    }

    /// `node:task_id` after the run's own namespace: the namespace of the
    /// task's interrupts and of its subgraph's checkpoints.
    pub(crate) fn namespace(&self) -> &str {
        &self.identity().namespace
    }

    fn scoped(&self) -> std::sync::MutexGuard<'_, BTreeMap<Arc<str>, ScopeAnswers>> {
        self.scoped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answers given so far to each interrupt scope that has any.
    pub(crate) fn answered_scopes(&self) -> BTreeMap<String, Vec<Value>> {
        self.scoped()
            .iter()
            .filter(|(_, scope)| !scope.answers.is_empty())
            .map(|(name, scope)| (name.to_string(), scope.answers.clone()))
            .collect()
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, Vec<Value>> {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answers given so far, in the order the interrupts were reached.
    pub(crate) fn answered(&self) -> Vec<Value> {
        self.answers().clone()
    }

    /// Records the answer a resume map gives the next unanswered interrupt.
    pub(crate) fn answer_from(&self, map: &serde_json::Map<String, serde_json::Value>) {
        let mut answers = self.answers();
        let next = crate::Interrupt::id_for(self.namespace(), answers.len());
        if let Some(answer) = map.get(&next) {
            answers.push(Value::from_json(answer.clone()));
        }
    }

    fn interrupt(&self, value: Value, run: &RunInfo) -> Result<Value, Interrupted> {
        let index = self
            .reached
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut answers = self.answers();
        if let Some(answer) = answers.get(index) {
            return Ok(answer.clone());
        }
        if let Some(answer) = run.take_resume() {
            answers.push(answer.clone());
            return Ok(answer);
        }
        Err(Interrupted::one(crate::Interrupt {
            value,
            id: crate::Interrupt::id_for(self.namespace(), answers.len()),
        }))
    }

    /// An interrupt of one scope of the task: its id hashes the scope, and
    /// its answer comes from the scope's recorded answers, then from a
    /// resume map by id, then from a single resume value.
    fn interrupt_in(
        &self,
        scope: &Arc<str>,
        value: Value,
        run: &RunInfo,
    ) -> Result<Value, Interrupted> {
        let mut scopes = self.scoped();
        let answers = scopes.entry(scope.clone()).or_default();
        let index = answers.reached;
        answers.reached += 1;
        if let Some(answer) = answers.answers.get(index) {
            return Ok(answer.clone());
        }
        let id = crate::Interrupt::id_for(&[self.namespace(), "|", scope].concat(), index);
        let by_id = run
            .answers()
            .and_then(|map| map.get(&id).map(|answer| Value::from_json(answer.clone())));
        if let Some(answer) = by_id.or_else(|| run.take_resume()) {
            answers.answers.push(answer.clone());
            return Ok(answer);
        }
        Err(Interrupted::one(crate::Interrupt { value, id }))
    }
}

/// What every task of a run shares.
pub(crate) struct RunInfo {
    /// The graph that runs.
    pub(crate) graph: Arc<crate::graph::PregelInner>,
    pub(crate) config: RunnableConfig,
    /// The run's own stream.
    pub(crate) sink: Sink,
    /// The root stream, for a subgraph run streamed with `subgraphs`.
    pub(crate) forward: Option<Sink>,
    /// The modes some sink wants (asked at every step: one bit test).
    pub(crate) modes: StreamModes,
    pub(crate) seed: u64,
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
    pub(crate) interrupts: Mutex<Vec<crate::Interrupt>>,
    /// Where the run checkpoints, if it does.
    pub(crate) scope: Option<PersistScope>,
    /// The pending writes of the checkpoint a resumed run started from,
    /// during its first step: functional tasks replay their results.
    pub(crate) replay: Mutex<Option<Arc<[stategraph_checkpoint::PendingWrite]>>>,
    /// Where the current step's task writes are saved, if they are.
    pub(crate) saves: Mutex<Option<crate::run::WriteSender>>,
    /// Exit durability: the current step's functional task results, kept
    /// in case the step stops.
    pub(crate) deferred: Mutex<Option<Vec<crate::run::TaskWrites>>>,
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
    pub(crate) durability: crate::Durability,
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
        graph: Arc<crate::graph::PregelInner>,
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
            graph,
            config,
            sink,
            forward,
            modes,
            seed: stategraph_core::random_u64() >> 11,
            context: options.context.clone(),
            store: options.store.clone(),
            subgraphs: options.subgraphs,
            child: options.nested,
            resume,
            answers,
            interrupts: Mutex::new(Vec::new()),
            scope,
            replay: Mutex::new(None),
            saves: Mutex::new(None),
            deferred: Mutex::new(None),
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
    pub(crate) fn end_deferred(&self) -> Vec<crate::run::TaskWrites> {
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

    pub(crate) fn set_saves(&self, saves: Option<crate::run::WriteSender>) {
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

    pub(crate) fn record_interrupts(&self, found: &[crate::Interrupt]) {
        self.interrupts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(found);
    }

    pub(crate) fn interrupts(&self) -> Vec<crate::Interrupt> {
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
    pub(crate) subgraphs: bool,
    pub(crate) forward: Option<Forward>,
    // Set for the run of a subgraph inside a parent's task.
    pub(crate) nested: bool,
    pub(crate) durability: crate::Durability,
    pub(crate) print: StreamModes,
    pub(crate) interrupt_before: Option<Vec<String>>,
    pub(crate) interrupt_after: Option<Vec<String>>,
    // Set for a subgraph run inside a task of a checkpointing run.
    pub(crate) parent: Option<ParentRun>,
    // The store of the task a subgraph runs in.
    pub(crate) store: Option<stategraph_store::SharedStore>,
    // How many times `invoke` runs again after `ThreadBusy`.
    pub(crate) busy_retries: u32,
}

/// Where a subgraph run forwards its chunks.
#[derive(Clone)]
pub(crate) struct Forward {
    pub(crate) queue: Arc<ChunkQueue>,
    pub(crate) modes: StreamModes,
    pub(crate) namespace: crate::types::Namespace,
    pub(crate) seen: crate::run::SeenMessages,
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
    /// [`TaskContext::context`] (LangGraph's `context=` / `Runtime.context`).
    #[must_use]
    pub fn context<C: Any + Send + Sync>(mut self, context: C) -> Self {
        self.context = Some(Arc::new(context));
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
    pub fn durability(mut self, durability: crate::Durability) -> Self {
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

impl TaskContext {
    /// The node being run.
    pub fn node(&self) -> &str {
        self.run.graph.shape.node_name(self.node)
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
            let result = crate::retry::with_retry(&name, &policies, |_| work()).await?;
            let value = Value::new(result.clone());
            for sink in run.sinks() {
                sink.push(
                    StreamMode::Updates,
                    Value::new(crate::run::NodeUpdate {
                        node: name.clone(),
                        update: crate::run::UpdatePayload::Value(value.clone()),
                        cached: false,
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
                    Err(Interrupted::one(crate::Interrupt {
                        value,
                        id: crate::Interrupt::id_for(&namespace, 0),
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

    /// The run configuration.
    pub fn config(&self) -> &RunnableConfig {
        &self.run.config
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
            && progress.refresh_on == crate::RefreshOn::Auto
        {
            progress.beat();
        }
        let value = Value::new(value);
        for sink in self.run.sinks() {
            sink.push(StreamMode::Custom, value.clone());
        }
    }

    /// In an error handler (see [`PregelNode::set_error_handler`]): the
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
        RunOptions {
            nested: true,
            parent,
            // The root stream prints forwarded chunks.
            print: StreamModes::NONE,
            interrupt_before: None,
            interrupt_after: None,
            durability: crate::Durability::default(),
            // The root run retries, not its subgraphs.
            busy_retries: 0,
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

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskContext")
            .field("node", &self.node())
            .field("step", &self.step)
            .field("task_id", &self.task_id())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_written_like_uuids() {
        for hash in [
            0_u128,
            1,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let hex = format!("{hash:032x}");
            let expected = format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            );
            assert_eq!(uuid_shaped::<String>(hash), expected);
        }
    }

    #[test]
    fn decimals_are_written_as_to_string_writes_them() {
        let mut bytes = HashInput::new();
        bytes.decimal(-12_i64);
        bytes.decimal(7_usize);
        bytes.decimal(i64::MIN);
        bytes.decimal(0_usize);
        assert_eq!(bytes.as_slice(), format!("-127{}0", i64::MIN).as_bytes());
    }

    #[test]
    fn hash_input_moves_to_the_heap_when_the_stack_is_full() {
        let long: Vec<u8> = (0..=255u8).cycle().take(700).collect();
        for split in [0, 1, 255, 256, 257, 699] {
            let mut bytes = HashInput::new();
            bytes.extend(&long[..split]);
            bytes.extend(&long[split..]);
            assert_eq!(bytes.as_slice(), long.as_slice(), "split at {split}");
        }
        let mut bytes = HashInput::new();
        for chunk in long.chunks(7) {
            bytes.extend(chunk);
        }
        assert_eq!(bytes.as_slice(), long.as_slice());
    }
}

#[cfg(test)]
mod node_future_tests {
    use super::*;

    #[tokio::test]
    async fn small_and_large_node_futures_both_run_to_their_output() {
        let small = node_future(async { Ok(NodeOutput::Value(Value::from_json(1.into()))) });
        let large = node_future(async {
            // Held across an await: the future is larger than the inline space.
            let buffer = [7_u8; 4 * NODE_FUTURE_INLINE];
            tokio::task::yield_now().await;
            Ok(NodeOutput::Value(Value::from_json(
                u64::from(buffer[3]).into(),
            )))
        });
        let failing = node_future(async { Err(NodeError::new("ValueError", "bad")) });
        let json = |output: NodeOutput| match output {
            NodeOutput::Value(value) => value.to_json().unwrap(),
            other => panic!("unexpected output {other:?}"),
        };
        assert_eq!(json(small.await.unwrap()), 1);
        assert_eq!(json(large.await.unwrap()), 7);
        let error = failing.await.unwrap_err();
        assert_eq!((error.class(), error.message()), ("ValueError", "bad"));
    }
}
