//! Nodes of a Pregel graph: what triggers them, what they read, the function
//! they run and how their output becomes channel writes.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use stategraph_core::Value;

use crate::channel_values::ChannelValues;
use crate::command::Command;
use crate::context::TaskContext;
use crate::error::{NodeError, PregelError};
use crate::retry::RetryPolicy;
use crate::shape::ChannelId;

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
/// Kept: without it sequential_1000 is 4.1% slower (5.1% more instructions
/// per step), which breaks its 1000x floor (issue 22).
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
    pub(crate) graph: &'a crate::shape::GraphShape,
    pub(crate) reader: &'a dyn FreshReader,
    pub(crate) node: &'a str,
    pub(crate) remaining_steps: i64,
    pub(crate) task: &'a TaskContext,
    pub(crate) deferred: &'a std::cell::RefCell<Vec<DeferredWrites>>,
}

/// Writes a writer hands over to come later (see [`WriteContext::defer`]).
pub type DeferredWrites =
    futures::future::BoxFuture<'static, Result<Vec<(ChannelId, Value)>, PregelError>>;

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

    /// The context of the run the output comes from: its config, store and
    /// typed context, what a router taking a context reads.
    pub fn task(&self) -> &TaskContext {
        self.task
    }

    /// Steps left before the recursion limit, as the task that produced the
    /// output saw them (LangGraph's `RemainingSteps`, which conditional edges
    /// read too).
    pub fn remaining_steps(&self) -> i64 {
        self.remaining_steps
    }

    /// Hands over writes that come later (an async router's routes): the
    /// task's writes are saved and applied once `writes` is done, and the
    /// run fails with its error if it fails.
    pub fn defer(&self, writes: DeferredWrites) {
        self.deferred.borrow_mut().push(writes);
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
    ) -> Result<ChannelValues, PregelError> {
        let mut values = Vec::with_capacity(channels.len());
        for (name, id) in channels {
            if let Some(value) = self.reader.read_fresh(*id, writes)? {
                values.push((name.clone(), value));
            }
        }
        Ok(ChannelValues::new(values))
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
    pub(crate) cache: Option<crate::cache::CachePolicy>,
    pub(crate) timeout: Option<crate::timeout::TimeoutPolicy>,
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
    pub fn set_timeout(&mut self, policy: Option<crate::timeout::TimeoutPolicy>) {
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
    pub fn set_cache_policy(&mut self, policy: crate::cache::CachePolicy) {
        self.update_settings(false, |settings| settings.cache = Some(policy));
    }

    /// Sets metadata added to the metadata of the node's tasks (what the
    /// `messages` stream shows with each message, after the `langgraph_*`
    /// keys, which it may replace, as LangGraph's node metadata).
    pub fn set_metadata(&mut self, metadata: stategraph_core::JsonMap) {
        self.update_settings(metadata.is_empty(), |settings| settings.metadata = metadata);
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
