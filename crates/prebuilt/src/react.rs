//! [`create_react_agent`]: a model calling tools in a loop until it answers.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use stategraph_core::Value;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, GraphError, NodeError, NodeSpec, PathMap, Route,
    START, Send, State, StateGraph, StateValues, TaskContext,
};
use stategraph_llm::{
    AiMessage, CallOptions, ChatModel, Message, OutputSchema, SharedChatModel, SharedTool,
    SystemMessage,
};

use crate::review::REVIEW_NODE;
use crate::{
    HistoryRepair, ToolCallWithContext, ToolNode, ToolReview, repair_history, tools_condition,
};

/// What the agent answers when the recursion limit leaves no room for
/// another round of tool calls (LangGraph's wording).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// Starts a ReAct agent (LangGraph's `create_react_agent`): an `agent`
/// node calls `model` with `tools` bound, a `tools` node ([`ToolNode`])
/// runs the calls it makes, and the loop ends when the model answers
/// without calling a tool. The state is [`MessagesState`]. By default each
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
        version: AgentVersion::default(),
        history_repair: HistoryRepair::default(),
        review: None,
        response_format: None,
    }
}

/// The state of a ReAct agent (LangGraph's `AgentState`): the
/// conversation, merged with `add_messages`, and the structured answer of
/// an agent with a response format
/// ([`ReactAgent::response_format`]). A state without a structured answer
/// shows only its messages, as [`MessagesState`](stategraph_graph::MessagesState) does.
#[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[state(crate = "stategraph_graph")]
pub struct AgentState {
    /// The conversation.
    #[state(reducer = stategraph_llm::add_messages)]
    pub messages: Vec<Message>,
    /// The structured answer, once the agent gave one.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub structured_response: serde_json::Value,
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
    version: AgentVersion,
    history_repair: HistoryRepair,
    review: Option<ToolReview>,
    response_format: Option<(Option<String>, OutputSchema)>,
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
        F: Fn(&AgentStateView, &TaskContext) -> Fut + std::marker::Send + Sync + 'static,
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

    /// What the agent does before a model call when a tool call of the
    /// conversation has no result (a tool failed without error handling,
    /// the process stopped mid-call, a person rejected a call, a new
    /// message came in first). By default
    /// ([`HistoryRepair::SynthesizeError`]) the model is sent an error
    /// result for it, so every request is valid; [`HistoryRepair::Error`]
    /// fails the call with LangGraph's `INVALID_CHAT_HISTORY` error. The
    /// stored conversation is never changed.
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
        let tool_node = self
            .tool_node
            .unwrap_or_else(|| ToolNode::new(self.tools.iter().cloned()));
        let schemas: Vec<_> = tool_node
            .tools()
            .iter()
            .map(|tool| tool.dyn_schema())
            .collect();
        let model: SharedChatModel = Arc::new(self.model.clone().bind_tools(schemas.clone()));
        let select_model = self.select_model;
        let select_for_structured = select_model.clone();
        let prompt = self.prompt;
        let repair = self.history_repair;

        let mut graph = StateGraph::typed::<AgentState>();
        graph.add_node("agent", move |state: AgentStateView, ctx: TaskContext| {
            let chosen = select_model.as_ref().map(|select| (select.0)(&state, &ctx));
            let (model, schemas, prompt) = (model.clone(), schemas.clone(), prompt.clone());
            async move {
                let model: SharedChatModel = match chosen {
                    Some(chosen) => Arc::new(chosen.await?.bind_tools(schemas)),
                    None => model,
                };
                // Every tool call answered once before the model sees
                // the conversation (borrowed when it already is).
                let conversation = repair_history(&state.messages, repair)?;
                // Without a prompt the model reads the conversation
                // itself: no copy of it per call.
                let prompted = prompt.apply(&conversation);
                let messages = prompted.as_deref().unwrap_or(&conversation);
                let answer = model.invoke(messages, &CallOptions::default()).await?;
                let answer = out_of_steps(answer, ctx.remaining_steps());
                Ok::<_, NodeError>(AgentStateUpdate::default().messages(vec![answer.into()]))
            }
        })?;
        graph.add_node("tools", tool_node)?;
        graph.add_edge(START, "agent")?;
        let version = self.version;
        let end = match self.response_format {
            None => END,
            Some((prompt, schema)) => {
                let (base, select) = (self.model.clone(), select_for_structured);
                graph.add_node(
                    STRUCTURED_RESPONSE_NODE,
                    move |state: AgentStateView, ctx: TaskContext| {
                        let chosen = select.as_ref().map(|select| (select.0)(&state, &ctx));
                        let (base, schema) = (base.clone(), schema.clone());
                        let mut messages: Vec<Message> =
                            prompt.iter().cloned().map(Message::system).collect();
                        messages.extend(state.messages.iter().cloned());
                        async move {
                            let model = match chosen {
                                Some(chosen) => chosen.await?,
                                None => base,
                            };
                            let answer = structured_answer(model, schema, messages).await?;
                            Ok::<_, NodeError>(
                                AgentStateUpdate::default().structured_response(answer),
                            )
                        }
                    },
                )?;
                graph.add_edge(STRUCTURED_RESPONSE_NODE, END)?;
                STRUCTURED_RESPONSE_NODE
            }
        };
        match self.review {
            None => {
                let path_map = Some(PathMap::from(["tools", end]));
                graph.add_conditional_edges(
                    "agent",
                    move |state: &AgentStateView| route_calls(version, state, end),
                    path_map,
                )?;
            }
            Some(review) => {
                let path_map = Some(PathMap::from(["tools", REVIEW_NODE, end]));
                let wants = review.clone();
                graph.add_conditional_edges(
                    "agent",
                    move |state: &AgentStateView| match state.messages.last() {
                        Some(Message::Ai(last)) if wants.wants(last) => {
                            vec![Route::To(REVIEW_NODE.to_owned())]
                        }
                        _ => route_calls(version, state, end),
                    },
                    path_map,
                )?;
                let node = NodeSpec::new(move |state: AgentStateView, ctx: TaskContext| {
                    std::future::ready(review.review(&state, &ctx))
                })
                .destinations(["tools", "agent"]);
                graph.add_node_spec(REVIEW_NODE, node)?;
            }
        }
        graph.add_edge("tools", "agent")?;
        graph.compile_with(self.compile)
    }
}

/// Where the agent's answer goes: its tool calls (one `tools` task, or one
/// `Send` each), or the end.
fn route_calls(version: AgentVersion, state: &AgentStateView, end: &str) -> Vec<Route> {
    let calls =
        matches!(state.messages.last(), Some(Message::Ai(last)) if !last.tool_calls.is_empty());
    match version {
        _ if !calls => vec![Route::To(end.to_owned())],
        AgentVersion::V1 => vec![Route::To(tools_condition(&state.messages).to_owned())],
        AgentVersion::V2 => send_each_call(state),
    }
}

/// Chooses a model per call ([`ReactAgent::dynamic_model`]).
type SelectModel = dyn Fn(&AgentStateView, &TaskContext) -> BoxFuture<'static, Result<SharedChatModel, NodeError>>
    + std::marker::Send
    + Sync;

/// A [`SelectModel`] function (shown as `ModelSelector(..)`).
#[derive(Clone)]
struct ModelSelector(Arc<SelectModel>);

impl std::fmt::Debug for ModelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelSelector(..)")
    }
}

/// A function making the messages sent from the conversation.
type PromptFn = dyn Fn(&[Message]) -> Vec<Message> + std::marker::Send + Sync;

/// What the model is sent besides the conversation.
#[derive(Clone, Default)]
enum Prompt {
    #[default]
    None,
    /// A system message first.
    System(Message),
    /// The messages a function makes of the conversation.
    Fn(Arc<PromptFn>),
}

impl Prompt {
    /// The messages to send, when they are not the conversation itself.
    fn apply(&self, conversation: &[Message]) -> Option<Vec<Message>> {
        match self {
            Self::None => None,
            Self::System(prompt) => {
                let mut messages = Vec::with_capacity(conversation.len() + 1);
                messages.push(prompt.clone());
                messages.extend(conversation.iter().cloned());
                Some(messages)
            }
            Self::Fn(prompt) => Some(prompt(conversation)),
        }
    }
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::System(message) => f.debug_tuple("System").field(message).finish(),
            Self::Fn(_) => f.write_str("Fn(..)"),
        }
    }
}

/// `model`'s answer to `messages` as JSON fitting `schema`.
async fn structured_answer(
    model: SharedChatModel,
    schema: OutputSchema,
    messages: Vec<Message>,
) -> Result<serde_json::Value, NodeError> {
    let options = CallOptions::default();
    Ok(model
        .invoke_structured(&messages, &options, &schema)
        .await?)
}

/// The node that writes an agent's structured answer.
pub const STRUCTURED_RESPONSE_NODE: &str = "generate_structured_response";

/// The v2 router: one `Send` to `tools` per call of the last AI message,
/// carrying the call and the messages; the end when there is none.
fn send_each_call(state: &AgentStateView) -> Vec<Route> {
    let Some(Message::Ai(last)) = state.messages.last() else {
        return vec![Route::To(END.to_owned())];
    };
    if last.tool_calls.is_empty() {
        return vec![Route::To(END.to_owned())];
    }
    // The call carries the state it was made in: shared, not copied.
    let messages = Value::from_arc(state.messages.clone());
    let state = Value::new(StateValues::single("messages", messages));
    last.tool_calls
        .iter()
        .map(|call| {
            let arg = ToolCallWithContext::new(call.clone(), state.clone());
            Route::Send(Send::new("tools", arg))
        })
        .collect()
}

/// The model's answer, or LangGraph's "need more steps" answer when it
/// calls tools with fewer than two steps left (no room for the tools and
/// another model call).
fn out_of_steps(answer: AiMessage, remaining_steps: i64) -> AiMessage {
    if remaining_steps < 2 && !answer.tool_calls.is_empty() {
        let mut sorry = AiMessage::new(NEED_MORE_STEPS);
        sorry.id = answer.id;
        sorry
    } else {
        answer
    }
}
