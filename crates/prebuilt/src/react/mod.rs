//! [`create_react_agent`]: a model calling tools in a loop until it answers.
//!
//! `mod.rs` holds the builder and wires the graph; `call` is the model
//! call (model choice, prompt, structured answer); `route` decides where an
//! answer goes.

mod call;
mod route;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use stategraph_checkpoint::CheckpointSaver;
use stategraph_core::Value;
use stategraph_graph::{
    ChannelValues, CompileOptions, CompiledStateGraph, END, GraphError, IntoNode, NodeError,
    NodeSpec, PathMap, Route, START, Schema, State, StateGraph, TaskContext,
};
use stategraph_llm::{
    ChatModel, Message, OutputSchema, SharedChatModel, SharedTool, SystemMessage,
};
use stategraph_store::Store;

use self::call::{ModelCall, ModelSelector, Prompt, messages_at, structured_answer};
use self::route::{Router, after_tools};
use crate::review::REVIEW_NODE;
use crate::{HistoryRepair, ToolErrors, ToolNode, ToolReview};

/// What the agent answers when the recursion limit leaves no room for
/// another round of tool calls (LangGraph's wording).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// Starts a ReAct agent (LangGraph's `create_react_agent`): an `agent`
/// node calls `model` with `tools` bound, a `tools` node ([`ToolNode`])
/// runs the calls it makes, and the loop ends when the model answers
/// without calling a tool. The state is [`AgentState`]. By default each
/// tool call is a task of its own ([`AgentVersion::V2`], LangGraph's
/// default).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use stategraph_llm::{AiMessage, ChatModel, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError};
/// use stategraph_prebuilt::create_react_agent;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let add = FnTool::typed("add", "Adds.", |args: serde_json::Value, _ctx| async move {
///     Ok::<_, ToolError>((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).to_string())
/// });
/// let model = ScriptedChatModel::new([
///     AiMessage::new("").with_tool_calls(vec![ToolCall::new("add", json!({"a": 2, "b": 3}))]),
///     AiMessage::new("2 + 3 = 5"),
/// ]);
/// let agent = create_react_agent(model, [Arc::new(add) as SharedTool])
///     .prompt("Be terse.")
///     .build()?;
/// let out = agent.invoke(json!({"messages": [["user", "2 + 3?"]]}), &Default::default()).await?;
/// assert_eq!(out.to_json()?["messages"][3]["content"], "2 + 3 = 5");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub fn create_react_agent(
    model: impl ChatModel,
    tools: impl IntoIterator<Item = SharedTool>,
) -> ReactAgent {
    ReactAgent {
        model: model.into_shared(),
        select_model: None,
        tools: tools.into_iter().collect(),
        prompt: Prompt::None,
        compile: CompileOptions::new(),
        tool_node: None,
        tool_errors: None,
        version: AgentVersion::default(),
        history_repair: HistoryRepair::default(),
        review: None,
        response_format: None,
        pre_model_hook: None,
        post_model_hook: None,
        schema: None,
    }
}

/// The state of a ReAct agent (LangGraph's `AgentState`): the
/// conversation, merged with `add_messages`, and the structured answer of
/// an agent with a response format
/// ([`ReactAgent::response_format`]). A state without a structured answer
/// shows only its messages, as [`MessagesState`](stategraph_graph::MessagesState) does.
#[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct AgentState {
    /// The conversation.
    #[state(reducer = stategraph_llm::add_messages)]
    pub messages: Vec<Message>,
    /// The structured answer, once the agent gave one.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub structured_response: serde_json::Value,
    /// What a pre-model hook chose to send the model instead of the
    /// conversation (LangGraph's `llm_input_messages`); not stored in
    /// `messages`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_input_messages: Vec<Message>,
}

/// How the agent runs the tool calls of one model answer (LangGraph's
/// `version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentVersion {
    /// One `tools` task runs every call (one update with every answer).
    V1,
    /// One `tools` task per call, through `Send` (one update per answer).
    #[default]
    V2,
}

/// The options of a ReAct agent; [`build`](Self::build) compiles it.
#[derive(Debug)]
#[must_use]
pub struct ReactAgent {
    model: SharedChatModel,
    select_model: Option<ModelSelector>,
    tools: Vec<SharedTool>,
    prompt: Prompt,
    compile: CompileOptions,
    tool_node: Option<ToolNode>,
    tool_errors: Option<ToolErrors>,
    version: AgentVersion,
    history_repair: HistoryRepair,
    review: Option<ToolReview>,
    response_format: Option<(Option<String>, OutputSchema)>,
    pre_model_hook: Option<Hook>,
    post_model_hook: Option<Hook>,
    schema: Option<Schema>,
}

/// A model hook's node (shown as `Hook(..)`).
struct Hook(NodeSpec);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook(..)")
    }
}

impl ReactAgent {
    /// A system prompt put before the conversation on every model call
    /// (not stored in the state).
    pub fn prompt(self, prompt: impl Into<String>) -> Self {
        self.system_prompt(SystemMessage::new(prompt.into()))
    }

    /// [`ReactAgent::prompt`] with a whole system message (name, id, extra
    /// fields).
    pub fn system_prompt(mut self, prompt: SystemMessage) -> Self {
        self.prompt = Prompt::System(Message::from(prompt));
        self
    }

    /// The messages the model is sent, computed from the conversation on
    /// every call (LangGraph's callable `prompt`): add instructions, trim
    /// old turns, summarise. Nothing it returns is stored.
    pub fn prompt_fn(
        mut self,
        prompt: impl Fn(&[Message]) -> Vec<Message> + std::marker::Send + Sync + 'static,
    ) -> Self {
        self.prompt = Prompt::Fn(Arc::new(prompt));
        self
    }

    /// Chooses the model for every call from the state and the run (its
    /// context, config, store): LangGraph's dynamic model. The tools are
    /// bound to whichever model it returns; the model given to
    /// [`create_react_agent`] is then not used.
    pub fn dynamic_model<F, Fut>(mut self, select: F) -> Self
    where
        F: Fn(&ChannelValues, &TaskContext) -> Fut + std::marker::Send + Sync + 'static,
        Fut: Future<Output = Result<SharedChatModel, NodeError>> + std::marker::Send + 'static,
    {
        self.select_model = Some(ModelSelector(Arc::new(move |state, ctx| {
            Box::pin(select(state, ctx))
        })));
        self
    }

    /// Compiles with these options: checkpointer, store,
    /// `interrupt_before` / `interrupt_after`, debug, name.
    pub fn compile_options(mut self, options: CompileOptions) -> Self {
        self.compile = options;
        self
    }

    /// Checkpoints the agent's threads in `saver` (LangGraph's
    /// `checkpointer=`): a shortcut for [`ReactAgent::compile_options`].
    pub fn checkpointer(mut self, saver: impl CheckpointSaver) -> Self {
        self.compile = self.compile.checkpointer(saver);
        self
    }

    /// Gives the agent a long-term memory store (LangGraph's `store=`),
    /// read by tools and hooks through their context.
    pub fn store(mut self, store: impl Store) -> Self {
        self.compile = self.compile.store(store);
        self
    }

    /// What a failing tool answers the model instead of failing the run
    /// (LangGraph's `ToolNode(handle_tool_errors=...)`), for the tool node
    /// the agent builds from its tools (or the one given to
    /// [`ReactAgent::tool_node`]).
    pub fn handle_tool_errors(mut self, errors: ToolErrors) -> Self {
        self.tool_errors = Some(errors);
        self
    }

    /// Uses this tool node (its error handling, messages key) instead of
    /// one built from the tools.
    pub fn tool_node(mut self, node: ToolNode) -> Self {
        self.tool_node = Some(node);
        self
    }

    /// Sets how tool calls run (default [`AgentVersion::V2`]).
    pub fn version(mut self, version: AgentVersion) -> Self {
        self.version = version;
        self
    }

    /// What the agent does before a model call when the conversation's
    /// tool calls and results do not pair up: a call has no result (a tool
    /// failed without error handling, the process stopped mid-call, a
    /// person rejected a call, a new message came in first), a result is
    /// not right after its call, a call has two results, or a result
    /// answers a call the conversation does not hold.
    ///
    /// By default ([`HistoryRepair::SynthesizeError`]) the model is sent
    /// the conversation with an error result after each unanswered call,
    /// each result moved right after its call, and repeated results and
    /// results of calls it does not hold left out, so every request is one
    /// a provider accepts; [`HistoryRepair::DropCalls`] leaves the
    /// unanswered calls out instead; [`HistoryRepair::Error`] fails the call
    /// with LangGraph's `INVALID_CHAT_HISTORY` error when a call has no
    /// result. The stored conversation is never changed.
    ///
    /// Repair works on the conversation only: the `llm_input_messages` a
    /// pre-model hook gives are sent as they are, as LangGraph sends them
    /// (only [`HistoryRepair::Error`] checks them, as LangGraph does).
    pub fn history_repair(mut self, policy: HistoryRepair) -> Self {
        self.history_repair = policy;
        self
    }

    /// Gives the agent a structured answer (LangGraph's `response_format`):
    /// once the model stops calling tools, a `generate_structured_response`
    /// node asks the model (without tools) for JSON that fits `schema` and
    /// stores it as `structured_response`. One more model call, as in
    /// LangGraph.
    pub fn response_format(mut self, schema: OutputSchema) -> Self {
        self.response_format = Some((None, schema));
        self
    }

    /// [`ReactAgent::response_format`] with a system prompt put before the
    /// conversation for that call (LangGraph's `(prompt, schema)` pair).
    pub fn response_format_with_prompt(
        mut self,
        prompt: impl Into<String>,
        schema: OutputSchema,
    ) -> Self {
        self.response_format = Some((Some(prompt.into()), schema));
        self
    }

    /// Runs the agent over a state of your own (LangGraph's
    /// `state_schema`): any `#[derive(State)]` type with a `messages` key
    /// merged with `add_messages`, plus the keys your tools and hooks read
    /// (injected state) or write (a tool's `Command`, a hook's update). A
    /// `structured_response` key is needed with a response format; an
    /// `llm_input_messages` key lets a pre-model hook choose the model's
    /// input. The default is [`AgentState`].
    pub fn state<S: State>(self) -> Self {
        self.state_schema(S::schema())
    }

    /// [`ReactAgent::state`] with a dynamic [`Schema`].
    pub fn state_schema(mut self, schema: Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Runs `hook` before every model call (LangGraph's `pre_model_hook`):
    /// a node over [`AgentState`] that may trim or summarise the
    /// conversation, either for good (a `messages` update) or only for the
    /// model (an `llm_input_messages` update, which the model is then sent
    /// instead of the conversation, as it is: see
    /// [`ReactAgent::history_repair`]).
    pub fn pre_model_hook<M>(mut self, hook: impl IntoNode<M>) -> Self {
        self.pre_model_hook = Some(Hook(NodeSpec::new(hook)));
        self
    }

    /// Runs `hook` after every model call, before the answer is routed
    /// (LangGraph's `post_model_hook`): guardrails, validation, human
    /// review of the answer. Tool calls it answers itself do not run; when
    /// it answered all of them the loop goes back to the model.
    pub fn post_model_hook<M>(mut self, hook: impl IntoNode<M>) -> Self {
        self.post_model_hook = Some(Hook(NodeSpec::new(hook)));
        self
    }

    /// Pauses before the tool calls `review` chooses: the agent's answer
    /// goes to a `human_review` node that interrupts with one
    /// [`HumanInterrupt`](crate::HumanInterrupt) per reviewed call and is
    /// resumed with one [`HumanResponse`](crate::HumanResponse) each
    /// (`Command::resume` with their JSON list). Accepted and edited calls
    /// run (edits replace the call in the stored message); rejected calls
    /// are answered with a tool message and do not run. Needs a checkpointer
    /// to resume.
    pub fn review_tool_calls(mut self, review: ToolReview) -> Self {
        self.review = Some(review);
        self
    }

    /// Compiles the agent graph.
    ///
    /// # Errors
    /// [`GraphError`] from compiling (for example an `interrupt_before`
    /// naming a node the agent does not have).
    pub fn build(self) -> Result<CompiledStateGraph, GraphError> {
        let mut tool_node = self
            .tool_node
            .unwrap_or_else(|| ToolNode::new(self.tools.iter().cloned()));
        if let Some(errors) = self.tool_errors {
            tool_node = tool_node.with_errors(errors);
        }
        let schemas: Vec<_> = tool_node
            .tools()
            .iter()
            .map(|tool| tool.dyn_schema())
            .collect();
        let return_direct: HashSet<String> = tool_node
            .tools()
            .iter()
            .filter(|tool| tool.dyn_return_direct())
            .map(|tool| tool.dyn_name().to_owned())
            .collect();
        let entry = if self.pre_model_hook.is_some() {
            PRE_MODEL_HOOK
        } else {
            "agent"
        };

        let schema = self.schema.unwrap_or_else(AgentState::schema);
        let keys: Vec<&str> = schema.keys().collect();
        for (needed, why) in [
            ("messages", "the conversation"),
            (
                "structured_response",
                "the structured answer of `response_format`",
            ),
        ] {
            if (needed == "messages" || self.response_format.is_some()) && !keys.contains(&needed) {
                return Err(GraphError::InvalidSchema(format!(
                    "the agent's state needs a `{needed}` key for {why}"
                )));
            }
        }
        let hook_input = self.pre_model_hook.is_some() && keys.contains(&"llm_input_messages");
        let mut graph = StateGraph::new(schema);
        let model: SharedChatModel = Arc::new(self.model.clone().bind_tools(schemas.clone()));
        let call = ModelCall {
            model,
            schemas: schemas.into(),
            select: self.select_model.clone(),
            prompt: self.prompt,
            repair: self.history_repair,
            hook_input,
        };
        graph.add_node("agent", move |state: ChannelValues, ctx: TaskContext| {
            call.clone().run(state, ctx)
        })?;
        graph.add_node("tools", tool_node)?;
        if let Some(hook) = self.pre_model_hook {
            graph.add_node_spec(PRE_MODEL_HOOK, hook.0)?;
            graph.add_edge(PRE_MODEL_HOOK, "agent")?;
        }
        graph.add_edge(START, entry)?;
        let end = match self.response_format {
            None => END,
            Some((prompt, schema)) => {
                let (base, select) = (self.model.clone(), self.select_model);
                graph.add_node(
                    STRUCTURED_RESPONSE_NODE,
                    move |state: ChannelValues, ctx: TaskContext| {
                        let chosen = select.as_ref().map(|select| (select.0)(&state, &ctx));
                        let (base, schema) = (base.clone(), schema.clone());
                        let mut messages: Vec<Message> =
                            prompt.iter().cloned().map(Message::system).collect();
                        let conversation = messages_at(&state, "messages");
                        async move {
                            messages.extend(conversation?.iter().cloned());
                            let model = match chosen {
                                Some(chosen) => chosen.await?,
                                None => base,
                            };
                            let answer = structured_answer(model, schema, messages).await?;
                            Ok::<_, NodeError>(ChannelValues::single(
                                "structured_response",
                                Value::new(answer),
                            ))
                        }
                    },
                )?;
                graph.add_edge(STRUCTURED_RESPONSE_NODE, END)?;
                STRUCTURED_RESPONSE_NODE
            }
        };
        // The answer is routed after the post-model hook when there is one.
        let routed_from = match self.post_model_hook {
            Some(hook) => {
                graph.add_node_spec(POST_MODEL_HOOK, hook.0)?;
                graph.add_edge("agent", POST_MODEL_HOOK)?;
                POST_MODEL_HOOK
            }
            None => "agent",
        };
        let router = Router {
            version: self.version,
            entry,
            end,
            review: self.review.clone(),
        };
        let mut paths = vec!["tools", end];
        if routed_from == POST_MODEL_HOOK {
            paths.push(entry);
        }
        if let Some(review) = self.review {
            paths.push(REVIEW_NODE);
            let node = NodeSpec::new(move |state: ChannelValues, ctx: TaskContext| {
                let messages = messages_at(&state, "messages");
                std::future::ready(messages.and_then(|m| review.review(&state, &m, &ctx, entry)))
            })
            .destinations(["tools", entry]);
            graph.add_node_spec(REVIEW_NODE, node)?;
        }
        graph.add_conditional_edges(
            routed_from,
            move |state: &ChannelValues| match messages_at(state, "messages") {
                Ok(messages) => router.route(state, &messages),
                Err(_) => vec![Route::To(router.end.to_owned())],
            },
            Some(PathMap::from(paths)),
        )?;
        if return_direct.is_empty() {
            graph.add_edge("tools", entry)?;
        } else {
            graph.add_conditional_edges(
                "tools",
                move |state: &ChannelValues| match messages_at(state, "messages") {
                    Ok(messages) => after_tools(&messages, &return_direct, entry),
                    Err(_) => entry,
                },
                Some(PathMap::from([entry, END])),
            )?;
        }
        graph.compile_with(self.compile)
    }
}

/// The node of a pre-model hook.
pub const PRE_MODEL_HOOK: &str = "pre_model_hook";
/// The node of a post-model hook.
pub const POST_MODEL_HOOK: &str = "post_model_hook";

/// The node that writes an agent's structured answer.
pub const STRUCTURED_RESPONSE_NODE: &str = "generate_structured_response";
