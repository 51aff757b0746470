//! `StateGraph`: the graph builder.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use stategraph_core::FxBuild;
use stategraph_pregel::{NodeFn, RetryPolicy, TimeoutPolicy};

use crate::compiled::CompiledStateGraph;
use crate::node::{IntoNode, IntoRouter, RouterFn};
use crate::schema::Schema;
use crate::{END, GraphError, START};

/// How a node is added: its function plus options.
pub struct NodeSpec {
    pub(crate) func: NodeFn,
    pub(crate) input_keys: Option<Vec<String>>,
    // Given with `input_state`: keys the graph adds as private channels.
    pub(crate) input_schema: Option<Schema>,
    pub(crate) retry: Vec<RetryPolicy>,
    pub(crate) defer: bool,
    pub(crate) destinations: Vec<String>,
    /// Labels drawn on the edges to some destinations.
    pub(crate) destination_labels: BTreeMap<String, String>,
    pub(crate) metadata: stategraph_core::JsonMap,
    pub(crate) cache: Option<stategraph_pregel::CachePolicy>,
    pub(crate) timeout: Option<TimeoutPolicy>,
    // Given with `error_handler`; `add_node_spec` makes it a node.
    pub(crate) error_handler: Option<NodeFn>,
    /// Whether the node has its own error handler node.
    pub(crate) handled: bool,
    /// Set on the nodes `add_node_spec` adds for error handlers.
    pub(crate) is_error_handler: bool,
    /// What drawings add under the node's name ([`IntoNode::drawing_metadata`]).
    pub(crate) drawn: stategraph_core::JsonMap,
    /// The compiled graph this node runs, when it is one (drawn expanded
    /// with `get_graph(true)`).
    pub(crate) subgraph: Option<CompiledStateGraph>,
    /// The node's name and its trigger channel's, set when the node is
    /// added; every compile shares them.
    pub(crate) names: Option<NodeNames>,
}

/// A node's name, the name of its trigger channel (`branch:to:{node}`) and
/// its position in the order nodes were added.
#[derive(Clone, Debug)]
pub(crate) struct NodeNames {
    pub(crate) node: Arc<str>,
    pub(crate) trigger: Arc<str>,
    pub(crate) position: usize,
}

impl NodeNames {
    pub(crate) fn new(node: &str, position: usize) -> Self {
        Self {
            node: Arc::from(node),
            trigger: Arc::from(stategraph_pregel::names::branch_to(node)),
            position,
        }
    }
}

impl NodeSpec {
    /// A node running `func`.
    pub fn new<M>(func: impl IntoNode<M>) -> Self {
        let subgraph = (&func as &dyn std::any::Any)
            .downcast_ref::<CompiledStateGraph>()
            .cloned();
        let drawn = func.drawing_metadata();
        Self {
            subgraph,
            drawn,
            ..Self::from_fn(func.into_node_fn())
        }
    }

    /// A node running an already built function.
    pub(crate) fn from_fn(func: NodeFn) -> Self {
        Self {
            subgraph: None,
            func,
            input_keys: None,
            input_schema: None,
            retry: Vec::new(),
            defer: false,
            destinations: Vec::new(),
            destination_labels: BTreeMap::new(),
            metadata: stategraph_core::JsonMap::new(),
            cache: None,
            timeout: None,
            error_handler: None,
            handled: false,
            is_error_handler: false,
            drawn: stategraph_core::JsonMap::new(),
            names: None,
        }
    }

    /// Limits how long each attempt of the node may take (LangGraph's
    /// `timeout=`): a [`TimeoutPolicy`], or a `Duration` for a run timeout.
    /// A timed-out attempt is cancelled and fails with a
    /// [`NODE_TIMEOUT_ERROR`](stategraph_pregel::NODE_TIMEOUT_ERROR), which
    /// the default retry policy retries.
    #[must_use]
    pub fn timeout(mut self, policy: impl Into<TimeoutPolicy>) -> Self {
        self.timeout = Some(policy.into());
        self
    }

    /// Answers the node's failures with `handler` (LangGraph's
    /// `error_handler=`): once the node's retries are spent, `handler` runs
    /// in the same step as the node `__error_handler__{name}`, on the failed
    /// node's input, and reads the failure with
    /// [`TaskContext::failure`](stategraph_pregel::TaskContext::failure). Its
    /// update and `Command` routing replace the failed node's output; the
    /// failed node's edges do not fire. A failing handler fails the run;
    /// interrupts are not failures and never reach it.
    ///
    /// A handler has a node's shape: its input, and the [`TaskContext`]
    /// that holds the failure.
    ///
    /// ```
    /// use serde_json::{Value as Json, json};
    /// use stategraph_graph::{NodeError, NodeSpec, TaskContext};
    ///
    /// let bad = NodeSpec::new(|_: Json| async {
    ///     Err::<Json, _>(NodeError::new("ZeroDivisionError", "division by zero"))
    /// })
    /// .error_handler(|_: Json, ctx: TaskContext| async move {
    ///     let seen = ctx.failure().map(|f| format!("{} in {}", f.error.class(), f.node));
    ///     Ok::<_, NodeError>(json!({"log": [seen]}))
    /// });
    /// ```
    ///
    /// Python injects the failure by parameter name (`error: NodeError`)
    /// and raises `TypeError` when a handler names it otherwise (golden
    /// trace 38, `misnamed_param_handler`). Here the compiler checks the
    /// handler's shape: one that asks for the failure as a parameter is
    /// not a node and does not compile.
    ///
    /// ```compile_fail,E0277
    /// use serde_json::{Value as Json, json};
    /// use stategraph_graph::{NodeError, NodeFailure, NodeSpec};
    ///
    /// let bad = NodeSpec::new(|_: Json| async {
    ///     Err::<Json, _>(NodeError::new("ZeroDivisionError", "division by zero"))
    /// })
    /// .error_handler(|_: Json, err: NodeFailure| async move {
    ///     Ok::<_, NodeError>(json!({"log": [err.node.to_string()]}))
    /// });
    /// ```
    ///
    /// [`TaskContext`]: stategraph_pregel::TaskContext
    #[must_use]
    pub fn error_handler<M>(mut self, handler: impl IntoNode<M>) -> Self {
        self.error_handler = Some(handler.into_node_fn());
        self
    }

    /// Caches the node's results under `policy`, in the cache given to
    /// [`CompileOptions::cache`](crate::CompileOptions::cache) (LangGraph's
    /// `cache_policy`).
    #[must_use]
    pub fn cache(mut self, policy: stategraph_pregel::CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// Reads only these state keys (LangGraph's node `input_schema`).
    #[must_use]
    pub fn input_keys<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        self.input_keys = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Reads the state `P` (LangGraph's node whose first parameter is
    /// annotated with another schema, as in its private-state pattern):
    /// the node reads `P`'s keys, and those the graph's state lacks become
    /// private channels of the graph: any node may write them, `values`
    /// chunks and `get_state` show them, the graph's input and output do
    /// not. Python infers this from the annotation; Rust cannot see a
    /// closure's parameter type when the node is added, so it is declared.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// use stategraph_graph::{NodeError, NodeSpec, START, State, StateGraph};
    ///
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Overall { a: String }
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Private { private: String }
    ///
    /// let mut graph = StateGraph::typed::<Overall>();
    /// graph.add_node("node1", |_: Overall| async {
    ///     Ok::<_, NodeError>(serde_json::json!({"private": "set by node1"}))
    /// })?;
    /// let node2 = NodeSpec::new(|p: Private| async move {
    ///     Ok::<_, NodeError>(OverallUpdate::default().a(format!("{} read by node2", p.private)))
    /// });
    /// graph.add_node_spec("node2", node2.input_state::<Private>())?;
    /// graph.add_edge(START, "node1")?;
    /// graph.add_edge("node1", "node2")?;
    /// let app = graph.compile()?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn input_state<P: crate::State>(mut self) -> Self {
        let schema = P::schema();
        self.input_keys = Some(schema.keys().map(str::to_owned).collect());
        self.input_schema = Some(schema);
        self
    }

    /// Retries failures with this policy.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = vec![policy];
        self
    }

    /// Retries failures with the first matching policy of these.
    #[must_use]
    pub fn retry_policies(mut self, policies: Vec<RetryPolicy>) -> Self {
        self.retry = policies;
        self
    }

    /// Runs the node only when the graph would otherwise finish (LangGraph's `defer=True`).
    #[must_use]
    pub fn defer(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Nodes this node may route to with a `Command` (for drawing only).
    #[must_use]
    pub fn destinations<I: IntoIterator<Item = S>, S: Into<String>>(mut self, nodes: I) -> Self {
        self.destinations = nodes.into_iter().map(Into::into).collect();
        self.destination_labels.clear();
        self
    }

    /// Nodes this node may route to with a `Command`, each with the label
    /// drawn on its edge (LangGraph's `destinations={node: label}`; for
    /// drawing only).
    #[must_use]
    pub fn labeled_destinations<I, N, L>(mut self, destinations: I) -> Self
    where
        I: IntoIterator<Item = (N, L)>,
        N: Into<String>,
        L: Into<String>,
    {
        let (nodes, labels): (Vec<String>, Vec<String>) = destinations
            .into_iter()
            .map(|(node, label)| (node.into(), label.into()))
            .unzip();
        self.destination_labels = nodes.iter().cloned().zip(labels).collect();
        self.destinations = nodes;
        self
    }

    /// Metadata reported with the node's tasks.
    #[must_use]
    pub fn metadata(mut self, metadata: stategraph_core::JsonMap) -> Self {
        self.metadata = metadata;
        self
    }
}

/// Policies every node of a graph gets unless it sets its own (LangGraph's
/// `set_node_defaults`); see [`StateGraph::set_node_defaults`].
#[derive(Default)]
#[must_use]
pub struct NodeDefaults {
    pub(crate) retry: Vec<RetryPolicy>,
    pub(crate) cache: Option<stategraph_pregel::CachePolicy>,
    pub(crate) timeout: Option<TimeoutPolicy>,
    pub(crate) error_handler: Option<NodeFn>,
}

impl NodeDefaults {
    /// No defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The retry policy of nodes without one (error handlers included).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = vec![policy];
        self
    }

    /// The cache policy of nodes without one (not error handlers).
    pub fn cache(mut self, policy: stategraph_pregel::CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// The timeout of nodes without one (error handlers included).
    pub fn timeout(mut self, policy: impl Into<TimeoutPolicy>) -> Self {
        self.timeout = Some(policy.into());
        self
    }

    /// The error handler of nodes without one: it runs as the node
    /// `__default_error_handler__` (see [`NodeSpec::error_handler`]; as
    /// there, a handler of the wrong shape does not compile).
    ///
    /// ```compile_fail,E0277
    /// use serde_json::{Value as Json, json};
    /// use stategraph_graph::{NodeDefaults, NodeError, NodeFailure};
    ///
    /// let defaults = NodeDefaults::new().error_handler(|_: Json, err: NodeFailure| async move {
    ///     Ok::<_, NodeError>(json!({"log": [err.node.to_string()]}))
    /// });
    /// ```
    pub fn error_handler<M>(mut self, handler: impl IntoNode<M>) -> Self {
        self.error_handler = Some(handler.into_node_fn());
        self
    }
}

impl std::fmt::Debug for NodeDefaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeDefaults")
            .field("retry", &self.retry)
            .field("cache", &self.cache.is_some())
            .field("timeout", &self.timeout)
            .field("error_handler", &self.error_handler.is_some())
            .finish()
    }
}

/// The node a graph's default error handler runs as.
pub(crate) const DEFAULT_ERROR_HANDLER: &str = "__default_error_handler__";

/// The node an error handler of `node` runs as.
pub(crate) fn error_handler_name(node: &str) -> String {
    format!("__error_handler__{node}")
}

/// A managed value: a state key whose value the runtime computes for each
/// task instead of storing it in a channel (LangGraph's `ManagedValue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Managed {
    /// Steps left before the recursion limit (`RemainingSteps`).
    RemainingSteps,
    /// Whether one step remains (`IsLastStep`).
    IsLastStep,
}

impl Managed {
    /// The value a task sees, given its remaining steps.
    pub(crate) fn value(self, remaining_steps: i64) -> serde_json::Value {
        match self {
            Self::RemainingSteps => remaining_steps.into(),
            Self::IsLastStep => (remaining_steps == 1).into(),
        }
    }
}

/// A conditional edge: a router and an optional map from its results to nodes.
#[derive(Clone)]
pub(crate) struct Branch {
    pub(crate) router: RouterFn,
    pub(crate) path_map: Option<BTreeMap<String, String>>,
}

/// A graph whose nodes communicate by reading and writing a shared state.
///
/// Build it with nodes and edges, then [`compile`](StateGraph::compile) it.
///
/// ```
/// use serde_json::{json, Value as Json};
/// use stategraph_graph::{Schema, StateGraph, START, END};
/// use stategraph_pregel::NodeError;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut graph = StateGraph::new(Schema::new().last_value("count").append("log"));
/// graph.add_node("inc", |s: Json| async move {
///     let count = s["count"].as_i64().unwrap_or(0) + 1;
///     Ok::<_, NodeError>(json!({"count": count, "log": [format!("inc to {count}")]}))
/// })?;
/// graph.add_edge(START, "inc")?;
/// graph.add_conditional_edges("inc", |s: &Json| if s["count"].as_i64() < Some(3) { "inc" } else { END }, None)?;
/// let app = graph.compile()?;
/// let out = app.invoke(json!({"count": 0}), &Default::default()).await?;
/// assert_eq!(out.to_json()?, json!({"count": 3, "log": ["inc to 1", "inc to 2", "inc to 3"]}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct StateGraph {
    pub(crate) schema: Schema,
    pub(crate) input_keys: Option<Vec<String>>,
    pub(crate) output_keys: Option<Vec<String>>,
    pub(crate) managed: Vec<(String, Managed)>,
    pub(crate) nodes: BTreeMap<String, NodeSpec>,
    // Insertion order of nodes (drawing and error messages follow it).
    pub(crate) node_order: Vec<String>,
    // Shared with compiled graphs (which draw them); copied on write.
    pub(crate) edges: Arc<BTreeSet<(String, String)>>,
    pub(crate) waiting_edges: Arc<BTreeSet<(Vec<String>, String)>>,
    pub(crate) branches: BTreeMap<String, Vec<(String, Branch)>>,
    pub(crate) defaults: NodeDefaults,
    // The JSON schema of the run context nodes read, and how a JSON context
    // decodes into its type, when declared.
    pub(crate) context_schema: Option<serde_json::Value>,
    pub(crate) context_type: Option<stategraph_pregel::ContextType>,
}

impl StateGraph {
    /// A graph over `schema`.
    pub fn new(schema: Schema) -> Self {
        Self {
            schema,
            input_keys: None,
            output_keys: None,
            managed: Vec::new(),
            nodes: BTreeMap::new(),
            node_order: Vec::new(),
            edges: Arc::default(),
            waiting_edges: Arc::default(),
            branches: BTreeMap::new(),
            defaults: NodeDefaults::default(),
            context_schema: None,
            context_type: None,
        }
    }

    /// Declares the type of the run context nodes read
    /// (`TaskContext::context::<C>()`; LangGraph's `context_schema`).
    ///
    /// The graph's context JSON schema
    /// ([`CompiledStateGraph::context_jsonschema`](crate::CompiledStateGraph::context_jsonschema))
    /// is `C`'s. A run may give its context typed (`RunOptions::context(C {..})`)
    /// or as JSON (`RunOptions::context_json(json!({..}))`, what an HTTP
    /// client sends): JSON is decoded into `C` before the run's first step,
    /// as LangGraph coerces a dict context into its dataclass or model.
    /// A JSON context that does not decode fails the run, before any step,
    /// with `PregelError::InvalidContext` (class `ValidationError`; the
    /// message names the type and the path of the bad part).
    ///
    /// ```
    /// use serde::Deserialize;
    /// use serde_json::{Value as Json, json};
    /// use stategraph_graph::{NodeError, RunOptions, START, Schema, StateGraph, TaskContext};
    /// use stategraph_llm::schemars::{self, JsonSchema};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// #[schemars(crate = "schemars")]
    /// struct Ctx {
    ///     user: String,
    ///     #[serde(default = "english")]
    ///     #[schemars(default = "english")]
    ///     lang: String,
    /// }
    /// fn english() -> String {
    ///     "en".into()
    /// }
    ///
    /// let mut g = StateGraph::new(Schema::new().last_value("out")).with_context_schema::<Ctx>();
    /// g.add_node("greet", |_: Json, ctx: TaskContext| async move {
    ///     let ctx = ctx.context::<Ctx>().ok_or_else(|| NodeError::new("ValueError", "no context"))?;
    ///     Ok::<_, NodeError>(json!({"out": format!("hi {} ({})", ctx.user, ctx.lang)}))
    /// })?;
    /// g.add_edge(START, "greet")?;
    /// let app = g.compile()?;
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let options = RunOptions::new().context_json(json!({"user": "bob"}));
    /// let out = app.invoke_with(json!({}), &Default::default(), options).await?;
    /// assert_eq!(out.to_json()?, json!({"out": "hi bob (en)"}));
    ///
    /// let wrong = RunOptions::new().context_json(json!({"lang": "fr"}));
    /// let err = app.invoke_with(json!({}), &Default::default(), wrong).await.unwrap_err();
    /// assert_eq!(err.class(), "ValidationError");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_context_schema<C>(mut self) -> Self
    where
        C: stategraph_llm::schemars::JsonSchema
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        self.context_schema = Some(crate::jsonschema::titled_json_schema_of::<C>());
        self.context_type = Some(stategraph_pregel::ContextType::of::<C>());
        self
    }

    /// Adds the keys of `schema` the state lacks as private channels: the
    /// graph's input and output keep the keys they had.
    fn add_private_keys(&mut self, schema: &Schema) {
        if schema.keys().all(|key| self.schema.contains(key)) {
            return;
        }
        let public: Vec<String> = self.schema.keys().map(str::to_owned).collect();
        self.input_keys.get_or_insert_with(|| public.clone());
        self.output_keys.get_or_insert(public);
        self.schema.add_missing(schema);
    }

    /// A graph over the typed state `S`: its derived schema, one key per
    /// field (see [`State`](trait@crate::State)).
    pub fn typed<S: crate::State>() -> Self {
        Self::new(S::schema())
    }

    /// Restricts which keys the graph input may set (LangGraph's `input_schema`);
    /// other input keys are ignored.
    ///
    /// # Errors
    /// A key that is not in the schema.
    pub fn with_input_keys<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        keys: I,
    ) -> Result<Self, GraphError> {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        self.schema.check_keys("input", &keys)?;
        self.input_keys = Some(keys);
        Ok(self)
    }

    /// Restricts which keys `invoke` returns (LangGraph's `output_schema`).
    ///
    /// # Errors
    /// A key that is not in the schema.
    pub fn with_output_keys<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        keys: I,
    ) -> Result<Self, GraphError> {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        self.schema.check_keys("output", &keys)?;
        self.output_keys = Some(keys);
        Ok(self)
    }

    /// Adds a managed key holding the steps left before the recursion limit
    /// (LangGraph's `RemainingSteps` annotation): nodes and routers read it
    /// like a state key, but it is not stored, not part of the graph's input
    /// or output, and writes to it are ignored. It goes from `limit - 1` in
    /// the first step after the input down to 0.
    ///
    /// # Errors
    /// The key is a state key or a managed key already.
    pub fn with_remaining_steps(self, key: impl Into<String>) -> Result<Self, GraphError> {
        self.with_managed(key.into(), Managed::RemainingSteps)
    }

    /// Adds a managed key that is `true` when one step remains before the
    /// recursion limit (LangGraph's `IsLastStep` annotation; it is `false`
    /// again in the very last step). See [`StateGraph::with_remaining_steps`].
    ///
    /// # Errors
    /// The key is a state key or a managed key already.
    pub fn with_is_last_step(self, key: impl Into<String>) -> Result<Self, GraphError> {
        self.with_managed(key.into(), Managed::IsLastStep)
    }

    fn with_managed(mut self, key: String, kind: Managed) -> Result<Self, GraphError> {
        if self.schema.contains(&key) || self.managed.iter().any(|(k, _)| *k == key) {
            return Err(GraphError::InvalidSchema(format!(
                "key {key:?} is declared twice"
            )));
        }
        self.managed.push((key, kind));
        Ok(self)
    }

    /// Sets policies for every node that does not set its own (LangGraph's
    /// `set_node_defaults`), applied when the graph compiles: retry and
    /// timeout apply to error handlers too, cache and the error handler only
    /// to the other nodes (a handler never handles itself). Settings left
    /// out keep what an earlier call set. Subgraphs do not inherit them.
    ///
    /// # Errors
    /// A zero timeout, or a node already named `__default_error_handler__`.
    pub fn set_node_defaults(&mut self, defaults: NodeDefaults) -> Result<&mut Self, GraphError> {
        let NodeDefaults {
            retry,
            cache,
            timeout,
            error_handler,
        } = defaults;
        if let Some(problem) = timeout.as_ref().and_then(TimeoutPolicy::problem) {
            return Err(GraphError::InvalidTimeout {
                node: "*".to_owned(),
                problem,
            });
        }
        if let Some(handler) = error_handler {
            let position = match self.nodes.get(DEFAULT_ERROR_HANDLER) {
                Some(spec) if !spec.is_error_handler => {
                    return Err(GraphError::DuplicateErrorHandler(
                        DEFAULT_ERROR_HANDLER.to_owned(),
                    ));
                }
                Some(spec) => self.names_of(DEFAULT_ERROR_HANDLER, spec).position,
                None => {
                    self.node_order.push(DEFAULT_ERROR_HANDLER.to_owned());
                    self.node_order.len() - 1
                }
            };
            let mut spec = NodeSpec::from_fn(handler);
            spec.is_error_handler = true;
            spec.names = Some(NodeNames::new(DEFAULT_ERROR_HANDLER, position));
            self.nodes.insert(DEFAULT_ERROR_HANDLER.to_owned(), spec);
        }
        if !retry.is_empty() {
            self.defaults.retry = retry;
        }
        if cache.is_some() {
            self.defaults.cache = cache;
        }
        if timeout.is_some() {
            self.defaults.timeout = timeout;
        }
        Ok(self)
    }

    /// The names of the node added under `name`, made when it was added.
    pub(crate) fn names_of(&self, name: &str, spec: &NodeSpec) -> NodeNames {
        spec.names.clone().unwrap_or_else(|| {
            let position = self.node_order.iter().position(|n| n == name);
            NodeNames::new(name, position.unwrap_or(usize::MAX))
        })
    }

    /// The nodes with their names, in the order they were added.
    pub(crate) fn declared_nodes(&self) -> Vec<(NodeNames, &NodeSpec)> {
        let mut nodes: Vec<(NodeNames, &NodeSpec)> = self
            .nodes
            .iter()
            .map(|(name, spec)| (self.names_of(name, spec), spec))
            .collect();
        nodes.sort_unstable_by_key(|(names, _)| names.position);
        nodes
    }

    /// The error handler node of `name`, if any.
    pub(crate) fn error_handler_of(&self, name: &str, spec: &NodeSpec) -> Option<String> {
        if spec.is_error_handler {
            None
        } else if spec.handled {
            Some(error_handler_name(name))
        } else if self.nodes.contains_key(DEFAULT_ERROR_HANDLER) {
            Some(DEFAULT_ERROR_HANDLER.to_owned())
        } else {
            None
        }
    }

    /// Adds a node running an async function of its input.
    ///
    /// # Errors
    /// A reserved or duplicate name.
    pub fn add_node<M>(
        &mut self,
        name: &str,
        func: impl IntoNode<M>,
    ) -> Result<&mut Self, GraphError> {
        self.add_node_spec(name, NodeSpec::new(func))
    }

    /// Adds a node with options.
    ///
    /// # Errors
    /// A reserved or duplicate name, or unknown input keys.
    pub fn add_node_spec(&mut self, name: &str, spec: NodeSpec) -> Result<&mut Self, GraphError> {
        if name == START || name == END {
            return Err(GraphError::ReservedName(name.to_owned()));
        }
        if let Some(character) = name.chars().find(|c| matches!(c, '|' | ':')) {
            return Err(GraphError::ReservedCharacter {
                node: name.to_owned(),
                character,
            });
        }
        if self.nodes.contains_key(name) {
            return Err(GraphError::DuplicateNode(name.to_owned()));
        }
        if let Some(problem) = spec.timeout.as_ref().and_then(TimeoutPolicy::problem) {
            return Err(GraphError::InvalidTimeout {
                node: name.to_owned(),
                problem,
            });
        }

        if let Some(private) = &spec.input_schema {
            self.add_private_keys(private);
        }
        if let Some(keys) = &spec.input_keys {
            // A node may read managed keys too.
            let stored = keys
                .iter()
                .filter(|key| !self.managed.iter().any(|(k, _)| k == *key));
            self.schema
                .check_keys(&format!("node {name:?} input"), stored)?;
        }
        let mut spec = spec;
        if let Some(handler) = spec.error_handler.take() {
            let handler_name = error_handler_name(name);
            if self.nodes.contains_key(&handler_name) {
                return Err(GraphError::DuplicateErrorHandler(handler_name));
            }
            let mut handler_spec = NodeSpec::from_fn(handler);
            handler_spec.input_keys = spec.input_keys.clone();
            handler_spec.is_error_handler = true;
            handler_spec.names = Some(NodeNames::new(&handler_name, self.node_order.len()));
            spec.handled = true;
            self.nodes.insert(handler_name.clone(), handler_spec);
            self.node_order.push(handler_name);
        }
        spec.names = Some(NodeNames::new(name, self.node_order.len()));
        self.nodes.insert(name.to_owned(), spec);
        self.node_order.push(name.to_owned());
        Ok(self)
    }

    /// Adds an edge: `end` runs in the step after `start` finishes.
    ///
    /// # Errors
    /// `END` as start or `START` as end.
    pub fn add_edge(&mut self, start: &str, end: &str) -> Result<&mut Self, GraphError> {
        if start == END {
            return Err(GraphError::EndAsSource);
        }
        if end == START {
            return Err(GraphError::StartAsTarget);
        }
        Arc::make_mut(&mut self.edges).insert((start.to_owned(), end.to_owned()));
        Ok(self)
    }

    /// Adds a waiting edge: `end` runs once every node of `starts` has finished
    /// (in any steps).
    ///
    /// # Errors
    /// `END` among the starts or `START` as end.
    pub fn add_waiting_edge<const N: usize>(
        &mut self,
        starts: [&str; N],
        end: &str,
    ) -> Result<&mut Self, GraphError> {
        if starts.contains(&END) {
            return Err(GraphError::EndAsSource);
        }
        if end == START {
            return Err(GraphError::StartAsTarget);
        }
        Arc::make_mut(&mut self.waiting_edges).insert((
            starts.iter().map(|s| (*s).to_owned()).collect(),
            end.to_owned(),
        ));
        Ok(self)
    }

    /// Adds a conditional edge: after `source` runs, `router` reads the state
    /// (with `source`'s own writes applied) and returns destinations, mapped
    /// through `path_map` when given. Without one, a result type that lists
    /// its destinations ([`IntoRoutes::destinations`](crate::IntoRoutes::destinations),
    /// LangGraph's `Literal` return hint) serves as the path map.
    ///
    /// # Errors
    /// `END` as source.
    pub fn add_conditional_edges<M, R: IntoRouter<M>>(
        &mut self,
        source: &str,
        router: R,
        path_map: Option<PathMap>,
    ) -> Result<&mut Self, GraphError> {
        // A result type that knows its destinations is a path map of them.
        let path_map = path_map.or_else(|| R::destinations().map(PathMap::from));
        self.add_named_branch(source, None, router.into_router(), path_map)
    }

    fn add_named_branch(
        &mut self,
        source: &str,
        name: Option<&str>,
        router: RouterFn,
        path_map: Option<PathMap>,
    ) -> Result<&mut Self, GraphError> {
        if source == END {
            return Err(GraphError::EndAsSource);
        }
        let branches = self.branches.entry(source.to_owned()).or_default();
        let name = name.map_or_else(|| format!("condition_{}", branches.len()), str::to_owned);
        if branches.iter().any(|(n, _)| *n == name) {
            return Err(GraphError::DuplicateBranch {
                node: source.to_owned(),
                branch: name,
            });
        }
        branches.push((
            name,
            Branch {
                router,
                path_map: path_map.map(|p| p.0),
            },
        ));
        Ok(self)
    }

    /// Adds nodes in a chain, each running after the previous one.
    ///
    /// # Errors
    /// As [`StateGraph::add_node`].
    pub fn add_sequence(&mut self, nodes: Vec<(&str, NodeSpec)>) -> Result<&mut Self, GraphError> {
        let mut previous: Option<String> = None;
        for (name, spec) in nodes {
            self.add_node_spec(name, spec)?;
            if let Some(previous) = previous {
                self.add_edge(&previous, name)?;
            }
            previous = Some(name.to_owned());
        }
        Ok(self)
    }

    /// `add_edge(START, node)`.
    ///
    /// # Errors
    /// As [`StateGraph::add_edge`].
    pub fn set_entry_point(&mut self, node: &str) -> Result<&mut Self, GraphError> {
        self.add_edge(START, node)
    }

    /// `add_edge(node, END)`.
    ///
    /// # Errors
    /// As [`StateGraph::add_edge`].
    pub fn set_finish_point(&mut self, node: &str) -> Result<&mut Self, GraphError> {
        self.add_edge(node, END)
    }

    /// A conditional edge from `START`.
    ///
    /// # Errors
    /// As [`StateGraph::add_conditional_edges`].
    pub fn set_conditional_entry_point<M>(
        &mut self,
        router: impl IntoRouter<M>,
        path_map: Option<PathMap>,
    ) -> Result<&mut Self, GraphError> {
        self.add_conditional_edges(START, router, path_map)
    }

    /// Checks that every edge and branch connects known nodes and that the
    /// graph has an entry point (LangGraph's `validate`).
    ///
    /// # Errors
    /// The first problem found, naming the node or edge at fault.
    pub fn validate(&self, interrupt: &[&str]) -> Result<(), GraphError> {
        // Big graphs have thousands of edges. Where several names are
        // wrong, the error names the first in sorted order.
        // A small graph searches its ordered map; a big one hashes the names once.
        let hashed: Option<HashSet<&str, FxBuild>> =
            (self.nodes.len() > 32).then(|| self.nodes.keys().map(String::as_str).collect());
        let known = |name: &str| match &hashed {
            Some(nodes) => nodes.contains(name),
            None => self.nodes.contains_key(name),
        };
        let sources = self
            .edges
            .iter()
            .map(|(start, _)| start)
            .chain(self.waiting_edges.iter().flat_map(|(starts, _)| starts))
            .chain(self.branches.keys())
            .chain(
                self.nodes
                    .iter()
                    .filter(|(_, spec)| !spec.destinations.is_empty())
                    .map(|(name, _)| name),
            )
            .map(String::as_str);
        let mut has_entry = false;
        let mut bad_source: Option<&str> = None;
        for name in sources {
            if name == START {
                has_entry = true;
            } else if !known(name) && bad_source.is_none_or(|bad| name < bad) {
                bad_source = Some(name);
            }
        }
        if let Some(bad) = bad_source {
            return Err(GraphError::UnknownSource(bad.to_owned()));
        }
        if !has_entry {
            return Err(GraphError::NoEntrypoint);
        }
        for (start, branches) in &self.branches {
            for (name, branch) in branches {
                let targets = branch.path_map.iter().flat_map(|map| map.values());
                for target in targets {
                    if target != END && !known(target) {
                        return Err(GraphError::UnknownBranchTarget {
                            source_node: start.clone(),
                            branch: name.clone(),
                            target: target.clone(),
                        });
                    }
                }
            }
        }
        let targets = self
            .edges
            .iter()
            .map(|(_, end)| end)
            .chain(self.waiting_edges.iter().map(|(_, end)| end))
            .chain(self.nodes.values().flat_map(|spec| &spec.destinations));
        let bad_target = targets
            .map(String::as_str)
            .filter(|target| *target != END && !known(target))
            .min();
        if let Some(bad) = bad_target {
            return Err(GraphError::UnknownTarget(bad.to_owned()));
        }
        for node in interrupt {
            if *node != "*" && !known(node) {
                return Err(GraphError::UnknownInterruptNode((*node).to_owned()));
            }
        }
        Ok(())
    }
}

/// Maps a router's results to node names (LangGraph's `path_map`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathMap(pub BTreeMap<String, String>);

impl<const N: usize> From<[(&str, &str); N]> for PathMap {
    fn from(pairs: [(&str, &str); N]) -> Self {
        Self(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }
}

impl<const N: usize> From<[&str; N]> for PathMap {
    fn from(names: [&str; N]) -> Self {
        Self::from(names.as_slice())
    }
}

/// Each name mapped to itself (LangGraph's list path map).
impl From<&[&str]> for PathMap {
    fn from(names: &[&str]) -> Self {
        Self(
            names
                .iter()
                .map(|n| ((*n).to_owned(), (*n).to_owned()))
                .collect(),
        )
    }
}

impl From<Vec<&str>> for PathMap {
    fn from(names: Vec<&str>) -> Self {
        Self::from(names.as_slice())
    }
}
