//! A compiled `StateGraph`.

use std::fmt;
use std::sync::Arc;

use stategraph_checkpoint::{CheckpointConfig, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{
    Input, Pregel, Result, RunOptions, RunStream, StateSnapshot, StateUpdate, StreamModes,
};

use crate::builder::{NodeNames, NodeSpec, StateGraph};
use crate::draw::{DrawableGraph, GraphStructure};
use crate::jsonschema::GraphSchemas;
use crate::typed::{RunOutcome, TypedInput};

/// A runnable graph (LangGraph's `CompiledStateGraph`).
///
/// Cloning is cheap.
#[derive(Clone)]
pub struct CompiledStateGraph {
    pregel: Pregel,
    structure: Arc<GraphStructure>,
    // Nodes that run a compiled graph, by node name.
    subgraphs: Arc<[(String, CompiledStateGraph)]>,
    schemas: Arc<GraphSchemas>,
}

impl fmt::Debug for CompiledStateGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledStateGraph")
            .field("pregel", &self.pregel)
            .finish()
    }
}

impl CompiledStateGraph {
    /// The same graph checkpointing to `saver`, in place of the saver it
    /// was compiled with (LangGraph Server gives every graph its own):
    /// runs, the state API (subgraph namespaces included) and subgraph
    /// runs use it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::{Value as Json, json};
    /// use stategraph_checkpoint::InMemorySaver;
    /// use stategraph_core::RunnableConfig;
    /// use stategraph_graph::{NodeError, START, Schema, StateGraph};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut graph = StateGraph::new(Schema::new().append("log"));
    /// graph.add_node("a", |_: Json| async { Ok::<_, NodeError>(json!({"log": ["a"]})) })?;
    /// graph.add_edge(START, "a")?;
    /// let app = graph.compile()?.with_checkpointer(Arc::new(InMemorySaver::new()));
    /// let config = RunnableConfig::thread("t");
    /// app.invoke(json!({"log": []}), &config).await?;
    /// assert_eq!(app.get_state(&config).await?.values.to_json()?, json!({"log": ["a"]}));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn with_checkpointer(&self, saver: stategraph_checkpoint::SharedSaver) -> Self {
        Self {
            pregel: self.pregel.with_checkpointer(saver),
            ..self.clone()
        }
    }

    /// The same graph with `store` as its long-term memory store, in place
    /// of the one it was compiled with (see
    /// [`CompiledStateGraph::with_checkpointer`]).
    #[must_use]
    pub fn with_store(&self, store: stategraph_store::SharedStore) -> Self {
        Self {
            pregel: self.pregel.with_store(store),
            ..self.clone()
        }
    }

    pub(crate) fn new(pregel: Pregel, graph: &StateGraph) -> Self {
        let declared = graph.declared_nodes();
        Self::with_structure(
            pregel,
            &declared,
            GraphStructure::from_nodes(graph, &declared),
            GraphSchemas::default(),
        )
    }

    /// The JSON schema of the graph's input (LangGraph's
    /// `get_input_jsonschema`): its input keys, each with its type's schema
    /// (a typed state's field types that are `JsonSchema`, or what
    /// [`Schema::describe`](crate::Schema::describe) says; any value
    /// otherwise), titled as pydantic titles them.
    pub fn input_jsonschema(&self) -> serde_json::Value {
        self.schemas.input()
    }

    /// The JSON schema of the graph's output (LangGraph's
    /// `get_output_jsonschema`): its output keys.
    pub fn output_jsonschema(&self) -> serde_json::Value {
        self.schemas.output()
    }

    /// The JSON schema of the whole state (every key).
    pub fn state_jsonschema(&self) -> serde_json::Value {
        self.schemas.state()
    }

    /// The JSON schema of the run context, when the graph declared its type
    /// ([`StateGraph::with_context_schema`]; LangGraph's
    /// `get_context_jsonschema`).
    pub fn context_jsonschema(&self) -> Option<serde_json::Value> {
        self.schemas.context()
    }

    /// LangGraph's (deprecated) `get_config_jsonschema`: the context's
    /// schema under `configurable`, or `{}`.
    pub fn config_jsonschema(&self) -> serde_json::Value {
        self.schemas.config()
    }

    /// A compiled graph with the builder's nodes (in declaration order),
    /// the drawing structure and the JSON schemas given.
    pub(crate) fn with_structure(
        pregel: Pregel,
        declared: &[(NodeNames, &NodeSpec)],
        structure: GraphStructure,
        schemas: GraphSchemas,
    ) -> Self {
        let subgraphs: Vec<(String, CompiledStateGraph)> = declared
            .iter()
            .filter_map(|(names, spec)| {
                let subgraph = spec.subgraph.as_ref()?;
                Some((names.node.to_string(), subgraph.clone()))
            })
            .collect();
        Self {
            pregel,
            structure: Arc::new(structure),
            subgraphs: subgraphs.into(),
            schemas: Arc::new(schemas),
        }
    }

    /// The nodes that run a compiled graph, with that graph (LangGraph's
    /// `get_subgraphs`); with `recurse`, their own subgraphs too, named
    /// `node|child`.
    pub fn get_subgraphs(&self, recurse: bool) -> Vec<(String, CompiledStateGraph)> {
        let mut found = Vec::new();
        for (name, graph) in self.subgraphs.iter() {
            found.push((name.clone(), graph.clone()));
            if recurse {
                for (child, grandchild) in graph.get_subgraphs(true) {
                    found.push((format!("{name}|{child}"), grandchild));
                }
            }
        }
        found
    }

    /// The graph a config's namespace addresses, and the saver (this
    /// graph's) that holds its checkpoints.
    fn for_config(
        &self,
        config: &RunnableConfig,
    ) -> Result<(&CompiledStateGraph, &stategraph_checkpoint::SharedSaver)> {
        let saver = self
            .pregel
            .checkpointer()
            .ok_or(stategraph_pregel::PregelError::NoCheckpointer)?;
        Ok((self.for_namespace(config.checkpoint_ns())?, saver))
    }

    /// The graph whose checkpoints live under `checkpoint_ns` (`""`: this
    /// one; `node:task_id|child:task_id`: a subgraph's, at any depth).
    fn for_namespace(&self, checkpoint_ns: &str) -> Result<&CompiledStateGraph> {
        let mut graph = self;
        for node in namespace_nodes(checkpoint_ns) {
            graph = graph
                .subgraphs
                .iter()
                .find(|(name, _)| name == node)
                .map(|(_, subgraph)| subgraph)
                .ok_or_else(|| {
                    stategraph_pregel::PregelError::InvalidGraph(format!(
                        "checkpoint namespace {checkpoint_ns:?}: no subgraph node {node:?}"
                    ))
                })?;
        }
        Ok(graph)
    }

    /// The builder's nodes and edges, kept for drawing.
    pub(crate) fn structure(&self) -> &Arc<GraphStructure> {
        &self.structure
    }

    /// The graph's nodes and edges, ready to draw (LangGraph's `get_graph`).
    ///
    /// With `xray`, nodes that run a compiled graph are replaced by that
    /// graph's nodes (ids `node:child`), at every depth; see
    /// [`get_graph_xray_depth`](Self::get_graph_xray_depth) to stop earlier.
    /// Edges are found as LangGraph finds them: conditional edges need a
    /// path map to be drawn, and `Command` routing needs the node's
    /// [`destinations`](crate::NodeSpec::destinations).
    pub fn get_graph(&self, xray: bool) -> DrawableGraph {
        self.get_graph_xray_depth(if xray { usize::MAX } else { 0 })
    }

    /// [`get_graph`](Self::get_graph) expanding subgraphs only `depth`
    /// levels deep (LangGraph's `xray=depth`); 0 expands none.
    pub fn get_graph_xray_depth(&self, depth: usize) -> DrawableGraph {
        self.structure.drawable(depth)
    }

    /// The underlying Pregel graph.
    pub fn pregel(&self) -> &Pregel {
        &self.pregel
    }

    /// The long-term memory store the graph was compiled with, if any
    /// (LangGraph's `graph.store`).
    pub fn store(&self) -> Option<&stategraph_store::SharedStore> {
        self.pregel.store()
    }

    /// Drops the node cache's saved writes of these nodes, of every node
    /// when `None` or empty (LangGraph's `clear_cache`; names that are not
    /// nodes are skipped).
    ///
    /// # Errors
    /// The graph has no cache.
    pub fn clear_cache(&self, nodes: Option<&[&str]>) -> Result<()> {
        self.pregel.clear_cache(nodes)
    }

    /// Runs the graph to the end and returns the output keys' final values.
    ///
    /// # Errors
    /// What stopped the run.
    pub async fn invoke(&self, input: impl Into<Input>, config: &RunnableConfig) -> Result<Value> {
        self.pregel.invoke(input, config).await
    }

    /// Runs the graph on a typed input and returns how the run ended, with
    /// the typed state (see [`State`](trait@crate::State)): finished, or
    /// paused at interrupts or a breakpoint ([`RunOutcome`]).
    ///
    /// The input is an `S::Update` (only the fields set are written), an
    /// `S` (every field), a [`Command`](stategraph_pregel::Command) or an
    /// [`Input`] ([`TypedInput`]). Its values are moved into the graph as
    /// live values (no serialization); the output is read back without
    /// copying what the run no longer shares. Keys missing from the output
    /// (an ephemeral or topic key outside its step, a key outside the output
    /// keys) read as their type's default.
    ///
    /// # Errors
    /// What stopped the run, or an output value that does not decode to its
    /// field's type.
    pub async fn invoke_typed<S: crate::State>(
        &self,
        input: impl TypedInput<S>,
        config: &RunnableConfig,
    ) -> Result<RunOutcome<S>> {
        self.invoke_typed_with(input, config, RunOptions::default())
            .await
    }

    /// [`CompiledStateGraph::invoke_typed`] with run options (a typed
    /// context read by nodes through `TaskContext::context`).
    ///
    /// # Errors
    /// As [`CompiledStateGraph::invoke_typed`].
    pub async fn invoke_typed_with<S: crate::State>(
        &self,
        input: impl TypedInput<S>,
        config: &RunnableConfig,
        options: RunOptions,
    ) -> Result<RunOutcome<S>> {
        let output = self
            .pregel
            .invoke_parts(input.into_input(), config, options)
            .await?;
        let state = crate::state::from_output::<S>(output.value)?;
        Ok(if output.paused {
            RunOutcome::Interrupted {
                state,
                interrupts: output.interrupts,
            }
        } else {
            RunOutcome::Done(state)
        })
    }

    /// [`CompiledStateGraph::invoke`] with run options (a typed context read
    /// by nodes through `TaskContext::context`).
    ///
    /// # Errors
    /// What stopped the run.
    pub async fn invoke_with(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        options: RunOptions,
    ) -> Result<Value> {
        self.pregel.invoke_with(input, config, options).await
    }

    /// [`CompiledStateGraph::stream`] with run options: a typed context, and
    /// `subgraphs(true)` to stream the chunks of subgraphs too, each with its
    /// namespace.
    pub fn stream_with(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        modes: impl Into<StreamModes>,
        options: RunOptions,
    ) -> RunStream {
        self.pregel.stream_with(input, config, modes, options)
    }

    /// Runs the graph, streaming chunks of the requested modes.
    pub fn stream(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        modes: impl Into<StreamModes>,
    ) -> RunStream {
        self.pregel.stream(input, config, modes)
    }

    /// The state of a thread at its latest checkpoint, or at the config's
    /// `checkpoint_id` (LangGraph's `get_state`): values, the nodes that
    /// would run next, metadata, and the checkpoint's and its parent's
    /// addresses. An empty thread gives empty values.
    ///
    /// # Errors
    /// No checkpointer (`PregelError::NoCheckpointer`), no `thread_id` in the
    /// config (`PregelError::MissingThreadId`), or a saver error.
    pub async fn get_state(&self, config: &RunnableConfig) -> Result<StateSnapshot> {
        let (graph, saver) = self.for_config(config)?;
        graph.pregel.get_state_in(saver, config).await
    }

    /// [`CompiledStateGraph::get_state`] with the state of every subgraph
    /// a pending task runs, at any depth, in that task's `subgraph`
    /// (LangGraph's `get_state(subgraphs=True)`).
    ///
    /// # Errors
    /// As [`CompiledStateGraph::get_state`].
    pub async fn get_state_with_subgraphs(&self, config: &RunnableConfig) -> Result<StateSnapshot> {
        let mut snapshot = self.get_state(config).await?;
        for task in &mut snapshot.tasks {
            let Some(state) = &task.state else { continue };
            let mut child = config
                .clone()
                .with_checkpoint_ns(state.checkpoint_ns.clone());
            // The subgraph's latest checkpoint in that namespace.
            child.configurable.checkpoint_id = None;
            let nested = Box::pin(self.get_state_with_subgraphs(&child)).await?;
            // An empty namespace (the subgraph has not checkpointed) stays unset.
            if nested.metadata.is_some() {
                task.subgraph = Some(Box::new(nested));
            }
        }
        Ok(snapshot)
    }

    /// A thread's checkpoints, newest first (LangGraph's
    /// `get_state_history`). `query` sets the metadata filter, `before` and
    /// `limit` (`ListQuery::default()` for all); the thread comes from `config`.
    ///
    /// # Errors
    /// As [`CompiledStateGraph::get_state`], or an invalid filter.
    pub async fn get_state_history(
        &self,
        config: &RunnableConfig,
        query: ListQuery,
    ) -> Result<Vec<StateSnapshot>> {
        let (graph, saver) = self.for_config(config)?;
        graph
            .pregel
            .get_state_history_in(saver, config, query)
            .await
    }

    /// Writes `values` (a JSON object or a state update) to a thread's state
    /// as if `as_node` had returned them (LangGraph's `update_state`):
    /// through the reducers, with that node's edges firing. `None` infers
    /// the node that ran last; [`END`](crate::END) (with no values) clears
    /// the pending tasks, [`INPUT`](crate::INPUT) writes input and
    /// [`COPY`](crate::COPY) copies the checkpoint (see [`StateUpdate`]).
    /// A config whose `checkpoint_ns` names a subgraph's namespace (as
    /// [`get_state_with_subgraphs`](Self::get_state_with_subgraphs) gives
    /// it) updates that subgraph's state. Returns the new checkpoint's
    /// address (`source: update`); resume from it with
    /// [`Input::Resume`](stategraph_pregel::Input::Resume).
    ///
    /// # Errors
    /// See [`Pregel::update_state`](stategraph_pregel::Pregel::update_state);
    /// a namespace of no subgraph of this graph is
    /// `PregelError::InvalidGraph` (`Subgraph <name> not found`).
    pub async fn update_state(
        &self,
        config: &RunnableConfig,
        values: Option<Value>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig> {
        let mut update = StateUpdate::default();
        update.values = values;
        update.as_node = as_node.map(str::to_owned);
        self.bulk_update_state(config, vec![vec![update]]).await
    }

    /// Several supersteps of updates, one checkpoint each (LangGraph's
    /// `bulk_update_state`), in this graph's state or, by the config's
    /// `checkpoint_ns`, a subgraph's.
    ///
    /// # Errors
    /// See [`Pregel::bulk_update_state`](stategraph_pregel::Pregel::bulk_update_state)
    /// and [`CompiledStateGraph::update_state`].
    pub async fn bulk_update_state(
        &self,
        config: &RunnableConfig,
        supersteps: Vec<Vec<StateUpdate>>,
    ) -> Result<CheckpointConfig> {
        let (graph, saver) = self.for_config(config).map_err(|err| match err {
            // LangGraph names the subgraph without its task ids.
            stategraph_pregel::PregelError::InvalidGraph(_) => {
                let nodes: Vec<&str> = namespace_nodes(config.checkpoint_ns()).collect();
                stategraph_pregel::PregelError::InvalidGraph(format!(
                    "Subgraph {} not found",
                    nodes.join("|")
                ))
            }
            other => other,
        })?;
        graph
            .pregel
            .bulk_update_state_in(saver, config, supersteps)
            .await
    }
}

/// The node names of a checkpoint namespace (`node:task_id|child:task_id`
/// gives `node`, `child`).
fn namespace_nodes(checkpoint_ns: &str) -> impl Iterator<Item = &str> {
    checkpoint_ns
        .split('|')
        .filter(|segment| !segment.is_empty())
        .map(|segment| segment.split_once(':').map_or(segment, |(node, _)| node))
}
