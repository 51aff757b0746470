//! The functional API (LangGraph's `@entrypoint` and `@task`): a workflow
//! written as one async function instead of a graph, with tasks
//! ([`TaskContext::task`]) whose results are saved and replayed on resume.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use stategraph_channels::{EphemeralValue, LastValue};
use stategraph_core::Value;
use stategraph_pregel::{
    CachePolicy, ChannelValues, IoSpec, NodeError, NodeFn, NodeOutput, Pregel, PregelNode, Reads,
    RetryPolicy, TaskContext, TimeoutPolicy, node_future,
};

use crate::node::FromInput;
use crate::{CompileOptions, CompiledStateGraph, END, GraphError, START, Schema, StateGraph};

/// The channel that keeps an entrypoint's saved value between runs.
const PREVIOUS: &str = "__previous__";

/// What an entrypoint returns: the value the caller gets and, separately,
/// the value saved for the thread's next run (LangGraph's
/// `entrypoint.final(value=..., save=...)`).
#[derive(Clone, Debug)]
pub struct Final {
    value: Value,
    save: Value,
}

impl Final {
    /// Returns `value`, saves `save` as the next run's `previous`.
    pub fn new(
        value: impl Serialize + Send + Sync + 'static,
        save: impl Serialize + Send + Sync + 'static,
    ) -> Self {
        Self {
            value: Value::new(value),
            save: Value::new(save),
        }
    }
}

/// An entrypoint's result: any value (returned and saved), or a [`Final`].
pub trait EntrypointOutput: Send + 'static {
    /// `(returned, saved)`.
    fn split(self) -> (Value, Value);
}

impl EntrypointOutput for Final {
    fn split(self) -> (Value, Value) {
        (self.value, self.save)
    }
}

impl EntrypointOutput for serde_json::Value {
    fn split(self) -> (Value, Value) {
        let value = Value::from_json(self);
        (value.clone(), value)
    }
}

impl EntrypointOutput for Value {
    fn split(self) -> (Value, Value) {
        (self.clone(), self)
    }
}

/// A workflow function compiled to a one-node graph (LangGraph's
/// `@entrypoint`): the node, named after the workflow, runs in step 0 on the
/// run's input and the thread's `previous` saved value; its result is the
/// run's output. Tasks it calls with [`TaskContext::task`] run in parallel
/// when awaited together, and a resumed run replays the ones that finished.
///
/// ```
/// use serde_json::{json, Value as Json};
/// use stategraph_checkpoint::InMemorySaver;
/// use stategraph_core::{RunnableConfig, Value};
/// use stategraph_graph::{CompileOptions, Entrypoint, NodeError, TaskContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let workflow = Entrypoint::new("workflow", |xs: Vec<i64>, _previous: Option<Value>, ctx: TaskContext| async move {
///     let doubled = xs.iter().map(|&x| ctx.task("double", &[], move || async move { Ok::<_, NodeError>(2 * x) }));
///     let doubled: Vec<i64> = futures::future::try_join_all(doubled).await?;
///     Ok::<_, NodeError>(json!({"sum": doubled.iter().sum::<i64>()}))
/// })
/// .compile(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
/// let out = workflow.invoke(json!([1, 2, 3]), &RunnableConfig::thread("t")).await?;
/// assert_eq!(out.to_json()?, json!({"sum": 12}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Entrypoint {
    name: String,
    func: NodeFn,
    retry: Vec<RetryPolicy>,
    cache: Option<CachePolicy>,
    timeout: Option<TimeoutPolicy>,
}

impl Entrypoint {
    /// A workflow called `name`: `f(input, previous, ctx)`, where
    /// `previous` is what the thread's last run saved (`None` at first).
    pub fn new<F, I, Fut, O, E>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(I, Option<Value>, TaskContext) -> Fut + Send + Sync + 'static,
        I: FromInput,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
        O: EntrypointOutput,
        E: Into<NodeError> + 'static,
    {
        let f = Arc::new(f);
        let func: NodeFn = Arc::new(move |input: Value, ctx: &TaskContext| {
            let f = f.clone();
            let ctx = ctx.clone();
            node_future(async move {
                let state = input
                    .downcast_ref::<ChannelValues>()
                    .cloned()
                    .unwrap_or_default();
                let arg = I::from_input(state.get(START).cloned().unwrap_or_else(Value::null))?;
                let previous = state.get(PREVIOUS).cloned();
                let (value, save) = f(arg, previous, ctx).await.map_err(Into::into)?.split();
                Ok(NodeOutput::Value(Value::new(ChannelValues::new(vec![
                    (Arc::from(END), value),
                    (Arc::from(PREVIOUS), save),
                ]))))
            })
        });
        Self {
            name: name.into(),
            func,
            retry: Vec::new(),
            cache: None,
            timeout: None,
        }
    }

    /// Retries a failed workflow run under `policy` (LangGraph's
    /// `@entrypoint(retry_policy=...)`): the whole function runs again,
    /// its finished tasks replayed from their saved results.
    #[must_use]
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.retry_policies(vec![policy])
    }

    /// Retries with the first matching policy of these.
    #[must_use]
    pub fn retry_policies(mut self, policies: Vec<RetryPolicy>) -> Self {
        self.retry = policies;
        self
    }

    /// Bounds each run of the workflow function (LangGraph's
    /// `@entrypoint(timeout=...)`).
    #[must_use]
    pub fn timeout(mut self, policy: impl Into<TimeoutPolicy>) -> Self {
        self.timeout = Some(policy.into());
        self
    }

    /// Serves the workflow's result from the graph's cache
    /// (`CompileOptions::cache`) for an input (and saved `previous` value)
    /// it has seen (LangGraph's `@entrypoint(cache_policy=...)`).
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// Compiles the workflow (a checkpointer, a name and so on come from
    /// `options`, as for a graph).
    ///
    /// # Errors
    /// A workflow name that is reserved (`__start__`, `__end__`).
    pub fn compile(self, options: CompileOptions) -> Result<CompiledStateGraph, GraphError> {
        if self.name == START || self.name == END {
            return Err(GraphError::ReservedName(self.name));
        }
        let mut builder = Pregel::builder().options(options);
        let start = builder.add_channel(START, EphemeralValue::<Value>::new())?;
        let end = builder.add_channel(END, LastValue::<Value>::new())?;
        let previous = builder.add_channel(PREVIOUS, LastValue::<Value>::new())?;
        let writer: stategraph_pregel::Writer = Arc::new(move |ctx, writes| {
            if let NodeOutput::Value(value) = ctx.output()
                && let Some(values) = value.downcast_ref::<ChannelValues>()
            {
                for (key, channel) in [(END, end), (PREVIOUS, previous)] {
                    if let Some(value) = values.get(key) {
                        writes.push((channel, value.clone()));
                    }
                }
            }
            Ok(())
        });
        let reads = Reads::Map(Arc::new([
            (Arc::from(START), start),
            (Arc::from(PREVIOUS), previous),
        ]));
        let mut node = PregelNode::new(vec![start], reads, Some(self.func.clone()), vec![writer]);
        if !self.retry.is_empty() {
            node.set_retry(self.retry.clone());
        }
        if let Some(policy) = self.cache.clone() {
            node.set_cache_policy(policy);
        }
        node.set_timeout(self.timeout);
        builder.add_node(&self.name, node)?;
        let pregel: Pregel = builder
            .input(START)
            .output(END)
            .stream_channels(IoSpec::One(END.to_owned()))
            .build()?;
        // What `get_graph` draws: START -> workflow -> END.
        let mut shape = StateGraph::new(Schema::new());
        shape.add_node(&self.name, |_: Value| async { Ok::<_, NodeError>(()) })?;
        shape.add_edge(START, &self.name)?;
        shape.add_edge(&self.name, END)?;
        Ok(CompiledStateGraph::new(pregel, &shape))
    }
}
