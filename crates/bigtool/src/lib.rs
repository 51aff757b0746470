//! BigTool: an agent over a registry of many tools that binds only the ones
//! it retrieved (langgraph-bigtool, seed 002).
#![doc = include_str!("../README.md")]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value as Json, json};
use stategraph_core::{JsonMap, Value};
use stategraph_graph::{
    ChannelValues, CompileOptions, CompiledStateGraph, END, GraphError, NodeError, PathMap, Route,
    START, State, StateGraph, TaskContext,
};
use stategraph_llm::{
    CallOptions, ChatModel, Message, SharedChatModel, SharedTool, ToolContext, ToolError,
    ToolMessage, ToolSchema, error_message,
};
use stategraph_prebuilt::{HistoryRepair, ToolCallWithContext, ToolNode, repair_history};
use stategraph_store::{Op, PutOp, SearchOp, Store, StoreError};

/// The name of the retrieval tool the model is always offered.
pub const RETRIEVE_TOOLS: &str = "retrieve_tools";
/// The node that runs retrieval calls.
pub const SELECT_TOOLS_NODE: &str = "select_tools";
/// The field of a tool's store item that is embedded.
pub const DESCRIPTION_FIELD: &str = "description";

/// Why a BigTool agent cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BigToolError {
    /// Two tools were registered under one id.
    #[error("tool id `{0}` is registered twice")]
    DuplicateId(String),
    /// Two registered tools have one name: the model could not tell them
    /// apart (langgraph-bigtool binds both and runs one).
    #[error("tools `{first}` and `{second}` are both named `{name}`")]
    DuplicateName {
        /// The name.
        name: String,
        /// The first id.
        first: String,
        /// The second id.
        second: String,
    },
    /// A registered tool is named like the retrieval tool.
    #[error("tool `{0}` is named `retrieve_tools`, the retrieval tool's name")]
    ReservedName(String),
    /// The graph did not compile.
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// Tools by stable id (langgraph-bigtool's `tool_registry`). Ids are what
/// retrieval returns and what the state records; the model sees names.
#[derive(Clone, Debug, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, SharedTool>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool` under `id`.
    ///
    /// # Errors
    /// [`BigToolError::DuplicateId`] when `id` is taken.
    pub fn insert(&mut self, id: impl Into<String>, tool: SharedTool) -> Result<(), BigToolError> {
        let id = id.into();
        if self.tools.contains_key(&id) {
            return Err(BigToolError::DuplicateId(id));
        }
        self.tools.insert(id, tool);
        Ok(())
    }

    /// The tool registered under `id`.
    pub fn get(&self, id: &str) -> Option<&SharedTool> {
        self.tools.get(id)
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Puts one item per tool under `namespace` (key: the id, value:
    /// `{"description": "{name}: {description}"}`), so a store indexing the
    /// `description` field finds tools by meaning; batches of 500.
    ///
    /// # Errors
    /// What the store refuses.
    pub async fn index(&self, store: &impl Store, namespace: &[&str]) -> Result<(), StoreError> {
        let namespace: Vec<String> = namespace.iter().map(|s| (*s).to_owned()).collect();
        let ops: Vec<Op> = self
            .tools
            .iter()
            .map(|(id, tool)| {
                let mut value = JsonMap::new();
                let text = format!("{}: {}", tool.dyn_name(), tool.dyn_description());
                value.insert(DESCRIPTION_FIELD.to_owned(), Json::String(text));
                Op::Put(PutOp::put(namespace.clone(), id.clone(), value))
            })
            .collect();
        for batch in ops.chunks(500) {
            store.batch(batch.to_vec()).await?;
        }
        Ok(())
    }

    /// Checks that names are unique and none is the retrieval tool's.
    fn check_names(&self) -> Result<(), BigToolError> {
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        for (id, tool) in &self.tools {
            let name = tool.dyn_name();
            if name == RETRIEVE_TOOLS {
                return Err(BigToolError::ReservedName(id.clone()));
            }
            if let Some(first) = seen.insert(name, id) {
                return Err(BigToolError::DuplicateName {
                    name: name.to_owned(),
                    first: first.to_owned(),
                    second: id.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A retrieval function: tool ids for a query, with the call's context
/// (its store, state and config).
pub type RetrieveFn =
    dyn Fn(String, ToolContext) -> BoxFuture<'static, Result<Vec<String>, ToolError>> + Send + Sync;

/// How retrieval calls find tools.
#[derive(Clone)]
enum Retrieval {
    /// Semantic search over the graph's store.
    Store {
        namespace: Vec<String>,
        limit: usize,
        filter: Option<JsonMap>,
    },
    /// A function of the query.
    Custom(Arc<RetrieveFn>),
}

/// The state of a BigTool agent: the conversation and the ids of the tools
/// retrieved so far (each once, in retrieval order).
#[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BigToolState {
    /// The conversation.
    #[state(reducer = stategraph_llm::add_messages)]
    pub messages: Vec<Message>,
    /// The retrieved tool ids, without repeats.
    #[state(reducer = add_new)]
    pub selected_tool_ids: Vec<String>,
}

/// Appends the ids not yet present (langgraph-bigtool's `_add_new`, which
/// also drops repeats inside one update).
pub fn add_new(mut current: Vec<String>, update: Vec<String>) -> Vec<String> {
    for id in update {
        if !current.contains(&id) {
            current.push(id);
        }
    }
    current
}

/// Starts a BigTool agent (langgraph-bigtool's `create_agent`): `model`
/// is always offered `retrieve_tools` plus the tools retrieved so far;
/// retrieval calls go to `select_tools`, other calls to a [`ToolNode`] over
/// the registry, in the same step.
pub fn create_bigtool_agent(model: impl ChatModel, registry: ToolRegistry) -> BigToolAgent {
    BigToolAgent {
        model: model.into_shared(),
        registry,
        retrieval: Retrieval::Store {
            namespace: vec!["tools".to_owned()],
            limit: 2,
            filter: None,
        },
        max_selected: None,
        per_turn: false,
        compile: CompileOptions::new(),
    }
}

/// The options of a BigTool agent; [`build`](Self::build) compiles it.
#[must_use]
pub struct BigToolAgent {
    model: SharedChatModel,
    registry: ToolRegistry,
    retrieval: Retrieval,
    max_selected: Option<usize>,
    per_turn: bool,
    compile: CompileOptions,
}

impl std::fmt::Debug for BigToolAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigToolAgent")
            .field("tools", &self.registry.len())
            .field("max_selected", &self.max_selected)
            .field("per_turn", &self.per_turn)
            .finish_non_exhaustive()
    }
}

impl BigToolAgent {
    /// Searches the store under `namespace` (default `["tools"]`), as the
    /// registry's [`index`](ToolRegistry::index) filled it.
    pub fn namespace(mut self, namespace: &[&str]) -> Self {
        if let Retrieval::Store { namespace: ns, .. } = &mut self.retrieval {
            *ns = namespace.iter().map(|s| (*s).to_owned()).collect();
        }
        self
    }

    /// How many tools one retrieval returns at most (default 2, as
    /// langgraph-bigtool).
    pub fn limit(mut self, limit: usize) -> Self {
        if let Retrieval::Store { limit: l, .. } = &mut self.retrieval {
            *l = limit;
        }
        self
    }

    /// A filter on the store items retrieval may return.
    pub fn filter(mut self, filter: JsonMap) -> Self {
        if let Retrieval::Store { filter: f, .. } = &mut self.retrieval {
            *f = Some(filter);
        }
        self
    }

    /// Finds tools with `retrieve` instead of the store (a category lookup,
    /// a keyword index): it gets the query and the call's context and
    /// returns tool ids.
    pub fn retrieve_with<F, Fut>(mut self, retrieve: F) -> Self
    where
        F: Fn(String, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<String>, ToolError>> + Send + 'static,
    {
        self.retrieval =
            Retrieval::Custom(Arc::new(move |query, ctx| Box::pin(retrieve(query, ctx))));
        self
    }

    /// [`BigToolAgent::retrieve_with`] for a plain function: `retrieve`
    /// gets the query and the call's context and returns tool ids at once
    /// (a category table, a keyword index in memory).
    pub fn retrieve_with_sync<F>(self, retrieve: F) -> Self
    where
        F: Fn(&str, &ToolContext) -> Result<Vec<String>, ToolError> + Send + Sync + 'static,
    {
        self.retrieve_with(move |query, ctx| std::future::ready(retrieve(&query, &ctx)))
    }

    /// Binds at most the `count` most recently retrieved tools (the
    /// selection no longer only grows).
    pub fn max_selected(mut self, count: usize) -> Self {
        self.max_selected = Some(count);
        self
    }

    /// Binds only the tools retrieved since the latest human message: each
    /// question starts from `retrieve_tools` alone.
    pub fn per_turn_selection(mut self, per_turn: bool) -> Self {
        self.per_turn = per_turn;
        self
    }

    /// Compiles with these options (checkpointer, store, breakpoints).
    pub fn compile_options(mut self, options: CompileOptions) -> Self {
        self.compile = options;
        self
    }

    /// Compiles the agent graph.
    ///
    /// # Errors
    /// Two tools with one name, a tool named `retrieve_tools`, or what
    /// compiling finds.
    pub fn build(self) -> Result<CompiledStateGraph, BigToolError> {
        self.registry.check_names()?;
        let registry = Arc::new(self.registry);
        let retrieve_schema = retrieve_tools_schema(&self.retrieval);
        let (model, max_selected, per_turn) = (self.model, self.max_selected, self.per_turn);

        let mut graph = StateGraph::typed::<BigToolState>();
        let bound = registry.clone();
        graph.add_node("agent", move |state: BigToolStateView| {
            let selected = selection(&state, per_turn, max_selected);
            let mut schemas = vec![retrieve_schema.clone()];
            schemas.extend(
                selected
                    .iter()
                    .filter_map(|id| bound.get(id))
                    .map(|tool| tool.dyn_schema()),
            );
            let model = model.clone().bind_tools(schemas);
            async move {
                let conversation = repair_history(&state.messages, HistoryRepair::default())?;
                let answer = model.invoke(&conversation, &CallOptions::default()).await?;
                let answer: Vec<Message> = vec![answer.into()];
                Ok::<_, NodeError>(BigToolStateUpdate::default().messages(answer))
            }
        })?;
        let (retrieval, known) = (self.retrieval, registry.clone());
        graph.add_node(SELECT_TOOLS_NODE, move |input: Value, ctx: TaskContext| {
            let (retrieval, known) = (retrieval.clone(), known.clone());
            async move { select_tools(&retrieval, &known, &input, &ctx).await }
        })?;
        let tools: Vec<SharedTool> = registry.tools.values().cloned().collect();
        graph.add_node("tools", ToolNode::new(tools))?;
        graph.add_edge(START, "agent")?;
        graph.add_conditional_edges(
            "agent",
            route,
            Some(PathMap::from([SELECT_TOOLS_NODE, "tools", END])),
        )?;
        graph.add_edge(SELECT_TOOLS_NODE, "agent")?;
        graph.add_edge("tools", "agent")?;
        Ok(graph.compile_with(self.compile)?)
    }
}

/// The ids to bind: every retrieved one, or those of this turn; the most
/// recent `max` of them.
fn selection(state: &BigToolStateView, per_turn: bool, max: Option<usize>) -> Vec<String> {
    let mut ids: Vec<String> = if per_turn {
        let turn = state
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Human(_)))
            .map_or(0, |at| at + 1);
        let mut ids = Vec::new();
        for message in &state.messages[turn..] {
            if let Message::Tool(result) = message
                && let Some(found) = result
                    .artifact
                    .as_ref()
                    .and_then(|a| a["tool_ids"].as_array())
            {
                ids = add_new(
                    ids,
                    found
                        .iter()
                        .filter_map(|id| id.as_str().map(str::to_owned))
                        .collect(),
                );
            }
        }
        ids
    } else {
        state.selected_tool_ids.to_vec()
    };
    if let Some(max) = max
        && ids.len() > max
    {
        ids.drain(..ids.len() - max);
    }
    ids
}

/// Routes each call of the last AI message: retrieval calls to
/// `select_tools`, the others to `tools`, one `Send` each, with the state;
/// invalid calls (arguments that did not parse) to `tools` too, which
/// answers them with their error so the model can retry.
fn route(state: &ChannelValues) -> Vec<Route> {
    let messages = match state
        .get("messages")
        .map(|m| m.clone().decode::<Vec<Message>>())
    {
        Some(Ok(messages)) => messages,
        _ => return vec![Route::To(END.to_owned())],
    };
    let Some(Message::Ai(last)) = messages.last() else {
        return vec![Route::To(END.to_owned())];
    };
    if last.tool_calls.is_empty() && last.invalid_tool_calls.is_empty() {
        return vec![Route::To(END.to_owned())];
    }
    let shared = Value::new(state.clone());
    let valid = last.tool_calls.iter().map(|call| {
        let node = if call.name == RETRIEVE_TOOLS {
            SELECT_TOOLS_NODE
        } else {
            "tools"
        };
        let arg = ToolCallWithContext::new(call.clone(), shared.clone());
        Route::Send(stategraph_graph::Send::new(node, arg))
    });
    let invalid = last
        .invalid_tool_calls
        .iter()
        .map(|call| Route::Send(stategraph_graph::Send::new("tools", call.clone())));
    valid.chain(invalid).collect()
}

/// The schema of `retrieve_tools` offered to the model.
fn retrieve_tools_schema(retrieval: &Retrieval) -> ToolSchema {
    let description = match retrieval {
        Retrieval::Store { .. } => "Retrieve a tool to use, given a search query.",
        Retrieval::Custom(_) => "Retrieve tools to use, given a query.",
    };
    ToolSchema::new(
        RETRIEVE_TOOLS,
        description,
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What the tool should do."}},
            "required": ["query"],
        }),
    )
}

/// The `select_tools` node: runs one retrieval call, records the ids found
/// (unknown ids are reported, not recorded) and answers the call with the
/// tools' names. A failing retrieval is answered with an error message.
async fn select_tools(
    retrieval: &Retrieval,
    registry: &ToolRegistry,
    input: &Value,
    ctx: &TaskContext,
) -> Result<BigToolStateUpdate, NodeError> {
    let Some(single) = ToolCallWithContext::from_input(input)? else {
        return Err(NodeError::new(
            "ValueError",
            "select_tools runs one retrieval call at a time (a Send of the agent)",
        ));
    };
    let call = &single.tool_call;
    let query = call.args["query"].as_str().unwrap_or_default().to_owned();
    let mut tool_ctx = ToolContext::default()
        .with_state(single.state.clone())
        .with_config_from({
            let task = ctx.clone();
            move || task.shared_config().clone()
        });
    if let Some(id) = &call.id {
        tool_ctx = tool_ctx.with_tool_call_id(id.clone());
    }
    if let Some(store) = ctx.store() {
        tool_ctx = tool_ctx.with_extension(Arc::new(store.clone()));
    }
    let found = match retrieval {
        Retrieval::Store {
            namespace,
            limit,
            filter,
        } => search(ctx, namespace, *limit, filter.as_ref(), query).await,
        Retrieval::Custom(retrieve) => retrieve(query, tool_ctx).await,
    };
    let ids = match found {
        Ok(ids) => ids,
        Err(error) => {
            let answer = error_message(call, format!("Error: retrieval failed: {error}"));
            return Ok(BigToolStateUpdate::default().messages(vec![answer.into()]));
        }
    };
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    let mut seen = HashSet::new();
    for id in ids {
        if !seen.insert(id.clone()) {
            continue;
        }
        match registry.get(&id) {
            Some(_) => known.push(id),
            None => unknown.push(id),
        }
    }
    let names: Vec<&str> = known
        .iter()
        .filter_map(|id| registry.get(id))
        .map(|tool| tool.dyn_name())
        .collect();
    let mut text = format!("Available tools: {names:?}");
    if !unknown.is_empty() {
        text.push_str(&format!(" (unknown tool ids ignored: {unknown:?})"));
    }
    let mut answer = ToolMessage::new(text, call.id.clone().unwrap_or_default());
    answer.name = Some(RETRIEVE_TOOLS.to_owned());
    answer.artifact = Some(json!({"tool_ids": known}));
    Ok(BigToolStateUpdate::default()
        .messages(vec![answer.into()])
        .selected_tool_ids(known))
}

/// Semantic search for tools in the graph's store.
async fn search(
    ctx: &TaskContext,
    namespace: &[String],
    limit: usize,
    filter: Option<&JsonMap>,
    query: String,
) -> Result<Vec<String>, ToolError> {
    let store = ctx
        .store()
        .ok_or_else(|| ToolError::failed("the agent has no store: compile it with one"))?;
    let mut op = SearchOp::new(namespace.to_vec())
        .with_query(query)
        .with_page(limit, 0);
    if let Some(filter) = filter {
        op = op.with_filter(filter.clone());
    }
    let found = store.search(op).await.map_err(ToolError::from_source)?;
    Ok(found.into_iter().map(|item| item.item.key).collect())
}
