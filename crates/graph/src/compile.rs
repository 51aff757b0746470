//! Compiling a `StateGraph` to the Pregel runtime.
//!
//! The layout follows LangGraph's: one channel per state key, `__start__`
//! holding the input, a `branch:to:{node}` trigger channel per node (an
//! unguarded ephemeral value, or a last-value-after-finish for deferred
//! nodes), a named barrier `join:{a}+{b}:{node}` per waiting edge, and the
//! `__pregel_tasks` topic for `Send`s. Each node writes its state update, its
//! `Command` destinations, then its edges and branches, in that order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use stategraph_channels::{
    Channel, EphemeralValue, LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish,
};
use stategraph_core::{FxBuild, Value};
use stategraph_pregel::{
    ChannelId, ChannelValues, CommandGraph, CompileOptions, Goto, IoSpec, NodeError, NodeFn,
    NodeOutput, Pregel, PregelBuilder, PregelError, PregelNode, ReadKeys, Reads, TaskContext,
    WriteContext, Writer, names,
};

use crate::builder::{Branch, Managed, NodeSpec, StateGraph};
use crate::compiled::CompiledStateGraph;
use crate::jsonschema::GraphSchemas;
use crate::node::{Route, RouterFn};
use crate::start::{InputKeys, StartChannel, for_each_entry};
use crate::{END, GraphError, START};

impl StateGraph {
    /// Validates the graph and compiles it into a runnable graph.
    ///
    /// # Errors
    /// What [`StateGraph::validate`] finds.
    pub fn compile(&self) -> Result<CompiledStateGraph, GraphError> {
        self.compile_with(CompileOptions::new())
    }

    /// [`StateGraph::compile`] with a graph name.
    ///
    /// # Errors
    /// What [`StateGraph::validate`] finds.
    pub fn compile_named(&self, name: &str) -> Result<CompiledStateGraph, GraphError> {
        self.compile_with(CompileOptions::new().name(name))
    }

    /// [`StateGraph::compile`] with options: a name and a node cache.
    ///
    /// # Errors
    /// What [`StateGraph::validate`] finds.
    pub fn compile_with(&self, options: CompileOptions) -> Result<CompiledStateGraph, GraphError> {
        let breakpoints: Vec<&str> = options
            .interrupt_before_nodes()
            .iter()
            .chain(options.interrupt_after_nodes())
            .map(String::as_str)
            .collect();
        self.validate(&breakpoints)?;
        let mut builder = Pregel::builder().options(options.clone());
        if let Some(context_type) = &self.context_type {
            builder = builder.context_type(context_type.clone());
        }
        builder.reserve(
            self.schema.len() + self.nodes.len() + self.waiting_edges.len() + 2,
            self.nodes.len() + 1,
        );
        // State keys and their channel prototypes are shared with the schema.
        let mut key_ids: Vec<(Arc<str>, ChannelId)> = Vec::with_capacity(self.schema.len());
        for (key, channel) in self.schema.channels() {
            let id = builder.add_shared_channel(key.clone(), channel.clone())?;
            key_ids.push((key.clone(), id));
        }
        let key_ids: ReadKeys = key_ids.into();
        let state_ids: Vec<ChannelId> = key_ids.iter().map(|(_, id)| *id).collect();
        let input_channels: InputKeys = match &self.input_keys {
            Some(keys) => self
                .schema
                .channels()
                .iter()
                .filter(|(key, _)| keys.iter().any(|k| **k == **key))
                .cloned()
                .collect(),
            None => self.schema.channels().into(),
        };
        let start_channel = builder.add_channel(START, StartChannel::new(input_channels))?;
        let tasks_channel = builder.add_channel(
            names::TASKS,
            stategraph_channels::Topic::<stategraph_pregel::Send>::new(),
        )?;
        // One `branch:to:{node}` trigger channel per node; nodes of a kind
        // share one prototype.
        let ephemeral: Arc<dyn Channel> = Arc::new(EphemeralValue::<Value>::unguarded());
        let deferred: Arc<dyn Channel> = Arc::new(LastValueAfterFinish::<Value>::new());
        let mut branch_channels: NameMap<ChannelId> =
            HashMap::with_capacity_and_hasher(self.nodes.len(), FxBuild);
        for (name, spec) in &self.nodes {
            let names = self.names_of(name, spec);
            let prototype = if spec.defer { &deferred } else { &ephemeral };
            let id = builder.add_shared_channel(names.trigger, prototype.clone())?;
            branch_channels.insert(names.node, id);
        }
        let routing = Arc::new(Routing {
            branch_channels,
            tasks_channel,
        });

        // The START node maps the input onto the input keys.
        let input_keys = match &self.input_keys {
            Some(keys) => select(&key_ids, keys),
            None => key_ids.clone(),
        };
        let control = control_writer(routing.clone());
        let mut start = PregelNode::new(
            vec![start_channel],
            Reads::Channel(start_channel),
            None,
            vec![state_writer(input_keys), control.clone()],
        );
        start.set_hidden(true);
        builder.add_node(START, start)?;

        // Every node writes any state key: one shared writer.
        let writes_state = state_writer(key_ids.clone());
        // In declaration order: the runtime lists tasks planned from a
        // stored checkpoint in the order nodes were added.
        let declared = self.declared_nodes();
        for (names, spec) in &declared {
            let name = &*names.node;
            let reads = match &spec.input_keys {
                Some(keys) => select(&key_ids, keys),
                None => key_ids.clone(),
            };
            let mut node = PregelNode::new(
                vec![routing.branch_channel(name)?],
                Reads::Map(reads),
                Some(with_managed(
                    spec.func.clone(),
                    self.managed_keys(spec.input_keys.as_deref()),
                )),
                Vec::new(),
            );
            node.add_output_writer(writes_state.clone());
            node.add_output_writer(control.clone());
            let defaults = &self.defaults;
            node.set_retry(if spec.retry.is_empty() {
                defaults.retry.clone()
            } else {
                spec.retry.clone()
            });
            node.set_timeout(spec.timeout.or(defaults.timeout));
            node.set_error_handler(self.error_handler_of(name, spec).as_deref());
            node.set_subgraph(spec.subgraph.is_some());
            node.set_metadata(spec.metadata.clone());
            let cache = match (&spec.cache, spec.is_error_handler) {
                (Some(policy), _) => Some(policy),
                (None, false) => defaults.cache.as_ref(),
                (None, true) => None,
            };
            if let Some(policy) = cache {
                node.set_cache_policy(policy.clone());
            }
            builder.add_named_node(names.node.clone(), node)?;
        }

        for (start, end) in self.edges.iter() {
            if end == END {
                continue;
            }
            let target = routing.branch_channel(end)?;
            node_mut(&mut builder, start)?.add_constant_write(target, Value::null());
        }

        for (starts, end) in self.waiting_edges.iter() {
            if end == END {
                continue;
            }
            let channel = format!("join:{}:{end}", starts.join("+"));
            let id = if self.spec(end)?.defer {
                builder.add_channel(
                    &channel,
                    NamedBarrierValueAfterFinish::new(starts.iter().cloned()),
                )?
            } else {
                builder.add_channel(&channel, NamedBarrierValue::new(starts.iter().cloned()))?
            };
            node_mut(&mut builder, end)?.add_trigger(id);
            for start in starts {
                node_mut(&mut builder, start)?.add_constant_write(id, Value::new(start.clone()));
            }
        }

        for (source, branches) in &self.branches {
            let input_keys = self
                .nodes
                .get(source)
                .and_then(|spec| spec.input_keys.as_deref());
            let reads = match input_keys {
                Some(keys) => select(&key_ids, keys),
                None => key_ids.clone(),
            };
            let managed = self.managed_keys(input_keys);
            // Branches run after the state writer, and write only control
            // channels: the state keys they read are never written after.
            node_mut(&mut builder, source)?.declare_fresh_reads(reads.iter().map(|(_, c)| *c));
            for (_, branch) in branches {
                let writer = branch_writer(
                    branch.clone(),
                    reads.clone(),
                    managed.clone(),
                    routing.clone(),
                );
                node_mut(&mut builder, source)?.add_writer(writer);
            }
        }

        // Output keys in the order given (validated as state keys).
        let output = match &self.output_keys {
            Some(keys) => IoSpec::Ids(
                keys.iter()
                    .filter_map(|key| key_ids.iter().find(|(k, _)| **k == **key))
                    .map(|(_, id)| *id)
                    .collect(),
            ),
            None => IoSpec::Ids(state_ids.clone()),
        };
        let builder = builder
            .input(START)
            .output(output)
            .stream_channels(IoSpec::Ids(state_ids));
        let structure = crate::draw::GraphStructure::from_nodes(self, &declared).with_interrupts(
            options.interrupt_before_nodes(),
            options.interrupt_after_nodes(),
        );
        let schemas = GraphSchemas::new(
            self.schema.clone(),
            self.input_keys.clone(),
            self.output_keys.clone(),
            self.context_schema.clone(),
        );
        Ok(CompiledStateGraph::with_structure(
            builder.build()?,
            &declared,
            structure,
            schemas,
        ))
    }

    /// The spec of a node that `validate` found.
    fn spec(&self, name: &str) -> Result<&NodeSpec, GraphError> {
        self.nodes
            .get(name)
            .ok_or_else(|| GraphError::UnknownTarget(name.to_owned()))
    }
}

impl StateGraph {
    /// The managed keys a reader of `input_keys` (all keys when `None`) sees.
    fn managed_keys(&self, input_keys: Option<&[String]>) -> Vec<(Arc<str>, Managed)> {
        self.managed
            .iter()
            .filter(|(key, _)| input_keys.is_none_or(|keys| keys.contains(key)))
            .map(|(key, kind)| (Arc::from(key.as_str()), *kind))
            .collect()
    }
}

/// Adds the managed values to the state a PULL task reads (LangGraph's
/// `_proc_input`); a PUSH task's input is its `Send` argument, left as is.
fn with_managed(func: NodeFn, managed: Vec<(Arc<str>, Managed)>) -> NodeFn {
    if managed.is_empty() {
        return func;
    }
    Arc::new(move |input: Value, ctx: &TaskContext| {
        let input = match input.downcast_ref::<ChannelValues>() {
            Some(state) if !ctx.is_push() => {
                Value::new(add_managed(state.clone(), &managed, ctx.remaining_steps()))
            }
            _ => input,
        };
        func(input, ctx)
    })
}

fn add_managed(
    mut state: ChannelValues,
    managed: &[(Arc<str>, Managed)],
    remaining_steps: i64,
) -> ChannelValues {
    for (key, kind) in managed {
        state.push(key.clone(), Value::from_json(kind.value(remaining_steps)));
    }
    state
}

fn node_mut<'a>(
    builder: &'a mut PregelBuilder,
    name: &str,
) -> Result<&'a mut PregelNode, GraphError> {
    builder
        .node_mut(name)
        .ok_or_else(|| GraphError::UnknownSource(name.to_owned()))
}

fn select(key_ids: &[(Arc<str>, ChannelId)], keys: &[String]) -> ReadKeys {
    key_ids
        .iter()
        .filter(|(key, _)| keys.iter().any(|k| **k == **key))
        .cloned()
        .collect()
}

/// Where routing writes go.
struct Routing {
    // Each node's `branch:to:{node}` trigger channel.
    branch_channels: NameMap<ChannelId>,
    tasks_channel: ChannelId,
}

impl Routing {
    /// The trigger channel of `node`, which `validate` found.
    fn branch_channel(&self, node: &str) -> Result<ChannelId, GraphError> {
        self.branch_channels
            .get(node)
            .copied()
            .ok_or_else(|| GraphError::UnknownTarget(node.to_owned()))
    }

    /// The write that runs `node` next; `None` for `END`, and for an unknown
    /// node (LangGraph logs and drops such a write).
    fn goto(&self, node: &str) -> Option<(ChannelId, Value)> {
        if node == END {
            return None;
        }
        match self.branch_channels.get(node) {
            Some(channel) => Some((*channel, Value::null())),
            None => {
                tracing::warn!("ignoring a route to unknown node {node:?}");
                None
            }
        }
    }
}

/// Node names to values, hashed with [`FxBuild`].
type NameMap<V> = HashMap<Arc<str>, V, FxBuild>;

/// Writes a node's state update to the given keys (LangGraph's `_get_updates`).
fn state_writer(keys: ReadKeys) -> Writer {
    Arc::new(move |ctx: &WriteContext<'_>, writes| collect_updates(ctx.output(), &keys, writes))
}

fn collect_updates(
    output: &NodeOutput,
    keys: &[(Arc<str>, ChannelId)],
    writes: &mut Vec<(ChannelId, Value)>,
) -> Result<(), PregelError> {
    let mut push = |key: &str, value: &Value| {
        if let Some((_, channel)) = keys.iter().find(|(k, _)| &**k == key) {
            writes.push((*channel, value.clone()));
        }
    };
    match output {
        NodeOutput::None => {}
        NodeOutput::Value(value) => {
            // A live struct (a typed state given as input, say) writes its
            // serialized fields.
            if !for_each_entry(value, &mut push) {
                let shown = value
                    .to_json()
                    .map_or_else(|_| value.type_name().to_owned(), |j| j.to_string());
                return Err(PregelError::InvalidUpdate(format!(
                    "Expected dict, got {shown}\nFor troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_GRAPH_NODE_RETURN_VALUE"
                )));
            }
        }
        NodeOutput::Command(command) => {
            if command.graph == CommandGraph::Current {
                for (key, value) in &command.update {
                    push(key, value);
                }
            }
        }
        NodeOutput::Many(outputs) => {
            for output in outputs {
                collect_updates(output, keys, writes)?;
            }
        }
    }
    Ok(())
}

/// Writes a `Command`'s destinations (LangGraph's `_control_branch`).
fn control_writer(routing: Arc<Routing>) -> Writer {
    Arc::new(move |ctx: &WriteContext<'_>, writes| {
        let commands: Vec<&stategraph_pregel::Command> = match ctx.output() {
            NodeOutput::Command(command) => vec![command],
            NodeOutput::Many(outputs) => outputs
                .iter()
                .filter_map(|o| match o {
                    NodeOutput::Command(command) => Some(command),
                    _ => None,
                })
                .collect(),
            _ => return Ok(()),
        };
        for command in commands {
            if command.graph == CommandGraph::Parent {
                return Err(PregelError::ParentCommand(Box::new(command.clone())));
            }
            for goto in &command.goto {
                match goto {
                    Goto::Node(node) => writes.extend(routing.goto(node)),
                    Goto::Send(send) => {
                        writes.push((routing.tasks_channel, Value::new(send.clone())))
                    }
                }
            }
        }
        Ok(())
    })
}

/// Evaluates a conditional edge on the state with the node's own writes
/// applied; an async router's routes are handed over to come later.
fn branch_writer(
    branch: Branch,
    reads: ReadKeys,
    managed: Vec<(Arc<str>, Managed)>,
    routing: Arc<Routing>,
) -> Writer {
    let path_map = Arc::new(branch.path_map);
    Arc::new(move |ctx: &WriteContext<'_>, writes| {
        let state = add_managed(
            ctx.read_fresh(&reads, writes)?,
            &managed,
            ctx.remaining_steps(),
        );
        let node: Arc<str> = Arc::from(ctx.node());
        let failed = |error| PregelError::Node {
            node: node.to_string(),
            error,
        };
        match &branch.router {
            RouterFn::Sync(router) => {
                let routes = router(Value::new(state), ctx.task()).map_err(failed)?;
                route_writes(routes, &path_map, &node, &routing, writes)?;
            }
            RouterFn::Async(router) => {
                let routes = router(Value::new(state), ctx.task());
                let (path_map, routing) = (path_map.clone(), routing.clone());
                ctx.defer(Box::pin(async move {
                    let routes = routes.await.map_err(|error| PregelError::Node {
                        node: node.to_string(),
                        error,
                    })?;
                    let mut writes = Vec::new();
                    route_writes(routes, &path_map, &node, &routing, &mut writes)?;
                    Ok(writes)
                }));
            }
        }
        Ok(())
    })
}

/// Adds the writes of a router's routes: `Send`s to the tasks channel,
/// node names (through the path map) to their trigger channels.
fn route_writes(
    routes: Vec<Route>,
    path_map: &Option<BTreeMap<String, String>>,
    node: &str,
    routing: &Routing,
    writes: &mut Vec<(ChannelId, Value)>,
) -> Result<(), PregelError> {
    for route in routes {
        match route {
            Route::Send(send) => {
                if send.node == END {
                    return Err(PregelError::InvalidUpdate(
                        "Cannot send a packet to the END node".into(),
                    ));
                }
                writes.push((routing.tasks_channel, Value::new(send)));
            }
            Route::To(key) => {
                let target = match path_map {
                    Some(map) => map.get(&key).cloned().ok_or_else(|| PregelError::Node {
                        node: node.to_owned(),
                        error: NodeError::new("KeyError", format!("'{key}'")),
                    })?,
                    None => key,
                };
                if target == START {
                    return Err(PregelError::Node {
                        node: node.to_owned(),
                        error: NodeError::new(
                            "ValueError",
                            "Branch did not return a valid destination",
                        ),
                    });
                }
                writes.extend(routing.goto(&target));
            }
        }
    }
    Ok(())
}
