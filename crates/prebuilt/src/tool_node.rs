//! [`ToolNode`]: runs the tool calls of the last AI message.

use std::fmt;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value as Json;
use stategraph_core::Value;
use stategraph_graph::{ChannelValues, Command, Interrupted, IntoNode, NodeError, TaskContext};
use stategraph_llm::{
    DynTool, InvalidToolCall, Message, OutputDeltaWriter, REMOVE_ALL_MESSAGES, SharedTool,
    ToolCall, ToolContext, ToolError, ToolMessage, error_message, python_repr,
};
use stategraph_pregel::{CommandGraph, NodeFn, NodeOutput, StreamMode, node_future};
use stategraph_store::ToolContextStore;

use crate::history::invalid_call_message;

/// Which tool failures become error messages for the model (LangGraph's
/// `handle_tool_errors`); the others fail the node.
///
/// The texts are LangGraph's. Bad arguments read `Error invoking tool
/// '{name}' with kwargs {args} with error:\n {problems}\n Please fix the
/// error and try again.`, the arguments written as Python writes a dict
/// (`{'wrong': 1}`) and each problem of the arguments against the tool's
/// model-visible schema as `{location}: {what}` (`text: Field required`,
/// pydantic's wording). Other failures read `Error: {repr}\n Please fix
/// your mistakes.`, `repr` being Python's repr of the exception
/// ([`ToolError::repr`]: `ValueError('bad value')`).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ToolErrors {
    /// Only calls the model got wrong: arguments that do not fit the
    /// tool's schema, and unknown tool names (LangGraph's default).
    #[default]
    InvalidCalls,
    /// Every failure, as `Error: {repr}\n Please fix your mistakes.`
    /// (LangGraph's `True`).
    All,
    /// None: every failure, bad arguments too, fails the node (unknown
    /// tool names still answer with the list of tools, as LangGraph does).
    Never,
    /// Every failure, as this text.
    Text(String),
    /// The failures `handler` gives a text for; it returns `None` for the
    /// ones that should fail the node (LangGraph's handler function, whose
    /// parameter's type chooses the exceptions it handles: match on
    /// [`ToolError::class`]).
    Handler(ErrorHandler),
    /// The failures of these classes ([`ToolError::class`]), as
    /// `Error: {repr}\n Please fix your mistakes.`; the others fail the
    /// node (LangGraph's exception type or tuple of types; a class is
    /// matched by name, not by Python's subclassing).
    Classes(Vec<String>),
}

/// A function choosing the text of a tool failure (`None`: fail the node).
pub type ErrorHandler = Arc<dyn Fn(&ToolError) -> Option<String> + Send + Sync>;

impl fmt::Debug for ToolErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidCalls => f.write_str("InvalidCalls"),
            Self::All => f.write_str("All"),
            Self::Never => f.write_str("Never"),
            Self::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Self::Handler(_) => f.write_str("Handler(..)"),
            Self::Classes(classes) => f.debug_tuple("Classes").field(classes).finish(),
        }
    }
}

impl ToolErrors {
    /// A handler from a function (see [`ToolErrors::Handler`]).
    pub fn handler(handler: impl Fn(&ToolError) -> Option<String> + Send + Sync + 'static) -> Self {
        Self::Handler(Arc::new(handler))
    }

    /// The failures of these classes (see [`ToolErrors::Classes`]).
    pub fn classes<I, S>(classes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Classes(classes.into_iter().map(Into::into).collect())
    }

    /// The text a failure of `call` to `tool` becomes, or `None` if it
    /// fails the node.
    fn text(&self, call: &ToolCall, tool: &dyn DynTool, error: &ToolError) -> Option<String> {
        let fix = || format!("Error: {}\n Please fix your mistakes.", error.repr());
        match self {
            Self::InvalidCalls => error.is_invalid_args().then(|| {
                format!(
                    "Error invoking tool '{}' with kwargs {} with error:\n {}\n Please fix the error and try again.",
                    call.name,
                    python_repr(&call.args),
                    invalid_args_text(tool, &call.args, error)
                )
            }),
            Self::All => Some(fix()),
            Self::Never => None,
            Self::Text(text) => Some(text.clone()),
            Self::Handler(handler) => handler(error),
            Self::Classes(classes) => classes
                .iter()
                .any(|class| class == error.class())
                .then(fix),
        }
    }
}

/// The problems of `args` against `tool`'s model-visible schema, one
/// `{location}: {what}` line each (LangGraph's `ToolInvocationError`
/// without injected arguments); the tool's own message when the schema
/// finds none (a constraint only the tool's type knows).
fn invalid_args_text(tool: &dyn DynTool, args: &Json, error: &ToolError) -> String {
    let issues = crate::schema_check::check(&tool.dyn_schema().parameters, args);
    if issues.is_empty() {
        return match error {
            ToolError::InvalidArgs { message } => message.clone(),
            other => other.to_string(),
        };
    }
    issues
        .iter()
        .map(|issue| format!("{}: {}", issue.loc.join("."), issue.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs every tool call of the last AI message of the state's messages,
/// concurrently, and answers each with a tool message, in call order
/// (LangGraph's `ToolNode`). Add it with
/// `graph.add_node("tools", ToolNode::new(tools))`.
///
/// Each tool gets a [`ToolContext`] with the call's id, the whole state
/// (for injected state arguments), the run's config and the graph's store
/// (read with [`ToolContextStore::store`]). A call to a tool that does not
/// exist is answered `Error: {name} is not a valid tool, try one of [...]`;
/// which failures become error messages is [`ToolErrors`].
///
/// The message's invalid tool calls (arguments that did not parse) are
/// answered too, after the others, each with an error naming the call, the
/// tool and the parse error ([`invalid_call_text`](crate::invalid_call_text)),
/// whatever the [`ToolErrors`] policy: like an unknown tool name, it is a
/// mistake of the model, which can then retry. LangGraph's `ToolNode`
/// ignores them, leaving calls the provider refuses to go on without. A
/// lone [`InvalidToolCall`] as input (the v2 agent's `Send`) is answered
/// the same way.
///
/// # Errors
/// The node fails when the state has no messages, when the last message is
/// not an AI message, and for tool failures [`ToolErrors`] does not catch.
///
/// # Outside a graph
/// A tool node runs only as a node of a graph. LangGraph's `ToolNode` is a
/// runnable that may be invoked alone and then fails at run time
/// (`ValueError: Missing required config key 'N/A' for 'tools'.`, golden
/// trace 28). Ours has no such call: its only entry point is the node
/// function [`IntoNode::into_node_fn`] makes, which takes the running
/// task's [`TaskContext`], and no `TaskContext` can be made outside a run,
/// so running a tool node bare does not compile.
///
/// ```compile_fail,E0599
/// use stategraph_core::Value;
/// use stategraph_graph::{IntoNode, TaskContext};
/// use stategraph_llm::SharedTool;
/// use stategraph_prebuilt::ToolNode;
///
/// let run = ToolNode::new(Vec::<SharedTool>::new()).into_node_fn();
/// let ctx = TaskContext::default();
/// let _answers = run(Value::null(), &ctx);
/// ```
#[derive(Clone, Debug)]
pub struct ToolNode {
    tools: Arc<[SharedTool]>,
    messages_key: String,
    errors: ToolErrors,
}

impl ToolNode {
    /// A node running `tools`, reading the `messages` key.
    pub fn new(tools: impl IntoIterator<Item = SharedTool>) -> Self {
        Self {
            tools: tools.into_iter().collect(),
            messages_key: "messages".to_owned(),
            errors: ToolErrors::default(),
        }
    }

    /// Reads and writes messages at `key` instead of `messages`.
    #[must_use]
    pub fn with_messages_key(mut self, key: impl Into<String>) -> Self {
        self.messages_key = key.into();
        self
    }

    /// Sets which failures become error messages.
    #[must_use]
    pub fn with_errors(mut self, errors: ToolErrors) -> Self {
        self.errors = errors;
        self
    }

    /// The tools.
    pub fn tools(&self) -> &[SharedTool] {
        &self.tools
    }

    /// Runs the calls of the last message of `input` (the node's input: the
    /// state, or the message list itself), or the one call of a
    /// [`ToolCallWithContext`] or an [`InvalidToolCall`] (`Send`s of the v2
    /// agent).
    async fn run(&self, input: Value, ctx: TaskContext) -> Result<NodeOutput, NodeError> {
        if let Some(single) = ToolCallWithContext::from_input(&input)? {
            let base = self.context(single.state.clone(), &ctx);
            let answer = self.answer(&single.tool_call, base).await?;
            return self.combine(vec![(&single.tool_call, answer)], &[]);
        }
        if let Some(invalid) = invalid_call_input(&input)? {
            return Ok(self.update(vec![invalid_call_message(&invalid).into()]));
        }
        let messages = messages_of(&input, &self.messages_key)?;
        let Some(Message::Ai(last)) = messages.last() else {
            return Err(NodeError::new(
                "ValueError",
                "Last message is not an AIMessage",
            ));
        };
        let calls = &last.tool_calls;
        // Several calls in one task: each call's interrupts get ids and
        // answers of their own (LangGraph numbers them across the task, so
        // answers can reach the wrong call when calls interleave).
        let scoped = calls.len() > 1;
        let answers = join_all(calls.iter().enumerate().map(|(index, call)| {
            let ctx = if scoped {
                let scope = match &call.id {
                    Some(id) => format!("call:{id}"),
                    None => format!("call#{index}"),
                };
                ctx.interrupt_scope(&scope)
            } else {
                ctx.clone()
            };
            self.answer(call, self.context(input.clone(), &ctx))
        }))
        .await;
        let answers = gather(calls.iter().zip(answers))?;
        self.combine(answers, &last.invalid_tool_calls)
    }

    /// The node's output from the answers, in call order (LangGraph's
    /// `_combine_tool_outputs`): the plain results, then the answers to the
    /// `invalid` calls, as one update; when tools returned `Command`s, those
    /// commands first (each must answer its call with a tool message), then
    /// that update; commands for the parent graph merged into one.
    fn combine(
        &self,
        answers: Vec<(&ToolCall, Answer)>,
        invalid: &[InvalidToolCall],
    ) -> Result<NodeOutput, NodeError> {
        let mut messages = Vec::new();
        let mut commands = Vec::new();
        let mut parent: Option<Command> = None;
        for (call, answer) in answers {
            match answer {
                Answer::Message(message) => messages.push(Message::from(message)),
                Answer::Command(command) if command.graph == CommandGraph::Parent => {
                    parent = Some(match parent {
                        None => command,
                        Some(mut merged) => {
                            merged.update.extend(command.update);
                            merged.goto.extend(command.goto);
                            merged
                        }
                    });
                }
                Answer::Command(command) => {
                    commands.push(NodeOutput::Command(self.answered(call, command)?));
                }
            }
        }
        messages.extend(invalid.iter().map(|call| invalid_call_message(call).into()));
        if commands.is_empty() && parent.is_none() {
            return Ok(self.update(messages));
        }
        commands.extend(parent.map(NodeOutput::Command));
        if !messages.is_empty() {
            commands.push(self.update(messages));
        }
        Ok(match commands.len() {
            1 => commands.pop().unwrap_or(NodeOutput::None),
            _ => NodeOutput::Many(commands),
        })
    }

    /// LangGraph's rule for a tool's `Command`: its update answers the call
    /// with a tool message under the messages key (which gets the tool's
    /// name), unless it removes every message.
    fn answered(&self, call: &ToolCall, mut command: Command) -> Result<Command, NodeError> {
        let id = call.id.as_deref().unwrap_or_default();
        let mut answered = false;
        let mut shown = Vec::new();
        for (_, value) in command
            .update
            .iter_mut()
            .filter(|(key, _)| *key == self.messages_key)
        {
            let Ok(messages) = value.clone().decode::<Vec<Message>>() else {
                continue;
            };
            if matches!(&messages[..], [Message::Remove(r)] if r.id == REMOVE_ALL_MESSAGES) {
                return Ok(command);
            }
            let mut messages = (*messages).clone();
            for message in &mut messages {
                if let Message::Tool(tool) = message
                    && tool.tool_call_id == id
                {
                    Arc::make_mut(tool).name = Some(call.name.clone());
                    answered = true;
                }
            }
            shown.extend(messages.iter().map(|m| format!("{m:?}")));
            *value = Value::new(messages);
        }
        if answered {
            return Ok(command);
        }
        Err(NodeError::new(
            "ValueError",
            format!(
                "Expected to have a matching ToolMessage in Command.update for tool '{}', got: \
                 [{}]. Every tool call (LLM requesting to call a tool) in the message history \
                 MUST have a corresponding ToolMessage. You can fix it by modifying the tool to \
                 return `Command(update={{\"{}\": [ToolMessage(\"Success\", \
                 tool_call_id=tool_call_id), ...]}}, ...)`.",
                call.name,
                shown.join(", "),
                self.messages_key
            ),
        ))
    }

    /// The context every tool call of a task starts from (the task itself
    /// included, for [`interrupt`]).
    fn context(&self, state: Value, ctx: &TaskContext) -> ToolContext {
        let task = Arc::new(ctx.clone());
        let base = ToolContext::default()
            .with_state(state)
            .with_extension(task.clone())
            // Made only for tools that read it.
            .with_config_from(move || task.shared_config().clone());
        match ctx.store() {
            Some(store) => base.with_store(store.clone()),
            None => base,
        }
    }

    /// The node's update: the answers under the messages key, each with an
    /// id (the one `add_messages` would give it: given here, before the
    /// message is shared with the stream, so no reducer copies it to set
    /// one).
    fn update(&self, mut answers: Vec<Message>) -> NodeOutput {
        for answer in answers.iter_mut().filter(|m| m.id().is_none()) {
            answer.set_id(stategraph_core::random_uuid());
        }
        let update = ChannelValues::single(&self.messages_key, Value::new(answers));
        NodeOutput::Value(Value::new(update))
    }

    /// The tool message answering `call`, or the failure that fails the
    /// node.
    async fn answer(&self, call: &ToolCall, ctx: ToolContext) -> Result<Answer, NodeError> {
        let Some(tool) = self.tools.iter().find(|tool| tool.dyn_name() == call.name) else {
            let available: Vec<&str> = self.tools.iter().map(|tool| tool.dyn_name()).collect();
            return Ok(Answer::Message(error_message(
                call,
                format!(
                    "Error: {} is not a valid tool, try one of [{}].",
                    call.name,
                    available.join(", ")
                ),
            )));
        };
        let ctx = match &call.id {
            Some(id) => ctx.with_tool_call_id(id.clone()),
            None => ctx,
        };
        // The `tools` stream, when the run streams it (LangGraph's tool
        // lifecycle events).
        let events = ctx
            .get::<TaskContext>()
            .filter(|task| task.streams(StreamMode::Tools))
            .map(|task| ToolEvents::new(task, call));
        let ctx = match &events {
            Some(events) => {
                events.started(call);
                ctx.with_extension(Arc::new(events.delta_writer()))
            }
            None => ctx,
        };
        match tool.dyn_call(call.args.clone(), ctx).await {
            Ok(output) => match output.control.as_ref().and_then(|c| c.get::<Command>()) {
                Some(command) => {
                    if let Some(events) = &events {
                        events.finished(None);
                    }
                    Ok(Answer::Command(command.clone()))
                }
                None => {
                    let message = output.into_message(call);
                    if let Some(events) = &events {
                        events.finished(Some(&message));
                    }
                    Ok(Answer::Message(message))
                }
            },
            // An interrupt pauses the run: no error policy may catch it.
            Err(error) if interrupted(&error).is_some() => {
                Err(interrupted(&error).cloned().map_or_else(
                    || NodeError::new("Interrupted", error.to_string()),
                    NodeError::from,
                ))
            }
            Err(error) => {
                if let Some(events) = &events {
                    events.failed(&error);
                }
                match self.errors.text(call, tool.as_ref(), &error) {
                    Some(text) => Ok(Answer::Message(error_message(call, text))),
                    None => Err(NodeError::new(error.class().to_owned(), error.to_string())),
                }
            }
        }
    }
}

/// The `tools` stream events of one call (LangGraph's
/// `StreamToolCallHandler`): started, output deltas, finished or failed.
/// An interrupted call sends neither end: it runs again on resume.
struct ToolEvents {
    task: Arc<TaskContext>,
    call_id: String,
}

impl ToolEvents {
    fn new(task: Arc<TaskContext>, call: &ToolCall) -> Self {
        Self {
            task,
            call_id: call.id.clone().unwrap_or_default(),
        }
    }

    fn started(&self, call: &ToolCall) {
        self.task.write_tool_event(serde_json::json!({
            "event": "tool-started",
            "tool_call_id": self.call_id,
            "tool_name": call.name,
            "input": call.args,
        }));
    }

    /// What `ToolContext::emit_output_delta` writes through.
    fn delta_writer(&self) -> OutputDeltaWriter {
        let (task, call_id) = (self.task.clone(), self.call_id.clone());
        OutputDeltaWriter(Arc::new(move |delta| {
            task.write_tool_event(serde_json::json!({
                "event": "tool-output-delta",
                "tool_call_id": call_id,
                "delta": delta,
            }));
        }))
    }

    /// The call finished: its tool message, as LangChain dumps it (the
    /// status always said), or nothing for a `Command`.
    fn finished(&self, message: Option<&ToolMessage>) {
        let mut output = message
            .and_then(|message| serde_json::to_value(Message::from(message.clone())).ok())
            .unwrap_or_default();
        if let Some(fields) = output.as_object_mut() {
            fields.entry("status").or_insert_with(|| "success".into());
        }
        self.task.write_tool_event(serde_json::json!({
            "event": "tool-finished",
            "tool_call_id": self.call_id,
            "output": output,
        }));
    }

    fn failed(&self, error: &ToolError) {
        self.task.write_tool_event(serde_json::json!({
            "event": "tool-error",
            "tool_call_id": self.call_id,
            "message": error.to_string(),
        }));
    }
}

/// Pauses the run from inside a tool (LangGraph's `interrupt()` in a
/// tool): the tool returns the error (`interrupt(&ctx, question)?`), the run
/// stops after the step with the interrupt, and resuming runs the tool again,
/// this time getting the answer. No [`ToolErrors`] policy catches it. Each
/// call gets its own interrupt id: a call of the v2 agent is a task of its
/// own, and when one task runs several calls (v1), each runs in an
/// interrupt scope of its own ([`TaskContext::interrupt_scope`]); the
/// paused calls then show together, and answers go by id to their call.
///
/// # Errors
/// The interrupt, while it has no answer; a failure when the tool runs
/// outside a [`ToolNode`] (no task to pause).
pub fn interrupt(
    ctx: &ToolContext,
    value: impl serde::Serialize + std::marker::Send + Sync + 'static,
) -> Result<Value, ToolError> {
    let task = ctx
        .get::<TaskContext>()
        .ok_or_else(|| ToolError::failed("interrupt() needs the tool to run in a ToolNode"))?;
    task.interrupt(value).map_err(ToolError::from_source)
}

/// The interrupt a tool failure carries, if it is one.
fn interrupted(error: &ToolError) -> Option<&Interrupted> {
    std::error::Error::source(error).and_then(|source| source.downcast_ref::<Interrupted>())
}

/// The answers of a task's calls, in call order; or the first failure;
/// or, when calls only interrupted, all their interrupts at once (each with
/// its own id, answerable together with `Command::resume_by_id`).
fn gather<'a>(
    answers: impl Iterator<Item = (&'a ToolCall, Result<Answer, NodeError>)>,
) -> Result<Vec<(&'a ToolCall, Answer)>, NodeError> {
    let mut answered = Vec::new();
    let mut interrupts = Vec::new();
    for (call, answer) in answers {
        match answer {
            Ok(answer) => answered.push((call, answer)),
            Err(error) => match error.interrupts() {
                Some(raised) => interrupts.extend_from_slice(raised),
                None => return Err(error),
            },
        }
    }
    if interrupts.is_empty() {
        Ok(answered)
    } else {
        Err(Interrupted(interrupts).into())
    }
}

/// How a tool call was answered.
enum Answer {
    /// With a result.
    Message(ToolMessage),
    /// With a `Command` the tool returned.
    Command(Command),
}

/// The messages a node input holds: the state's `key`, or the input itself
/// (a message list).
pub(crate) fn messages_of(input: &Value, key: &str) -> Result<Arc<Vec<Message>>, NodeError> {
    let messages = match input.downcast_ref::<ChannelValues>() {
        Some(state) => state.get(key).cloned().ok_or_else(|| {
            NodeError::new(
                "ValueError",
                format!("No message found in input (key `{key}`)"),
            )
        })?,
        None => input.clone(),
    };
    Ok(messages.decode::<Vec<Message>>()?)
}

/// The invalid call a node input carries, live or in its JSON form
/// (`{"type": "invalid_tool_call", ...}`, as a checkpoint keeps a pending
/// `Send`); `None` for any other input.
fn invalid_call_input(input: &Value) -> Result<Option<InvalidToolCall>, NodeError> {
    if let Some(call) = input.downcast_ref::<InvalidToolCall>() {
        return Ok(Some(call.clone()));
    }
    let Some(json) = input.as_json() else {
        return Ok(None);
    };
    if json.get("type").and_then(serde_json::Value::as_str) != Some("invalid_tool_call") {
        return Ok(None);
    }
    serde_json::from_value(json.clone())
        .map(Some)
        .map_err(|err| NodeError::new("ValueError", format!("bad invalid tool call: {err}")))
}

impl IntoNode<ToolNode> for ToolNode {
    fn into_node_fn(self) -> NodeFn {
        let node = Arc::new(self);
        Arc::new(move |input: Value, ctx: &TaskContext| {
            let node = node.clone();
            let ctx = ctx.clone();
            node_future(async move { node.run(input, ctx).await })
        })
    }

    /// `__tools`: the tool names, drawn under the node as LangGraph draws
    /// a tool node.
    fn drawing_metadata(&self) -> stategraph_core::JsonMap {
        let names: Vec<serde_json::Value> = self
            .tools
            .iter()
            .map(|tool| tool.dyn_name().into())
            .collect();
        let mut metadata = stategraph_core::JsonMap::new();
        if !names.is_empty() {
            metadata.insert("__tools".to_owned(), names.into());
        }
        metadata
    }
}

/// One tool call and the state it was made in: the argument of the `Send`
/// the v2 agent makes per tool call (LangGraph's `ToolCallWithContext`).
/// Serializes as `{"__type": "tool_call_with_context", "tool_call",
/// "state"}`, the form a checkpoint keeps it in.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolCallWithContext {
    /// The call.
    pub tool_call: ToolCall,
    /// The state it was made in (for injected state arguments).
    pub state: Value,
}

const TOOL_CALL_WITH_CONTEXT: &str = "tool_call_with_context";

impl ToolCallWithContext {
    /// `tool_call`, made in `state`.
    pub fn new(tool_call: ToolCall, state: Value) -> Self {
        Self { tool_call, state }
    }

    /// The call a node input carries, live or in its JSON form (as a
    /// checkpoint keeps a pending `Send`); `None` for any other input.
    ///
    /// # Errors
    /// A JSON form whose tool call does not read.
    pub fn from_input(input: &Value) -> Result<Option<Self>, NodeError> {
        if let Some(call) = input.downcast_ref::<Self>() {
            return Ok(Some(call.clone()));
        }
        let Some(json) = input.as_json() else {
            return Ok(None);
        };
        if json.get("__type").and_then(serde_json::Value::as_str) != Some(TOOL_CALL_WITH_CONTEXT) {
            return Ok(None);
        }
        let tool_call: ToolCall = serde_json::from_value(json["tool_call"].clone())
            .map_err(|err| NodeError::new("ValueError", format!("bad tool call: {err}")))?;
        Ok(Some(Self::new(
            tool_call,
            Value::from_json(json["state"].clone()),
        )))
    }
}

impl serde::Serialize for ToolCallWithContext {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("__type", TOOL_CALL_WITH_CONTEXT)?;
        map.serialize_entry("tool_call", &self.tool_call)?;
        map.serialize_entry("state", &self.state)?;
        map.end()
    }
}

/// Where to go after a model call (LangGraph's `tools_condition`):
/// `"tools"` when the last message is an AI message with tool calls, valid
/// or invalid, else the end.
///
/// LangGraph ends on a message with only invalid calls, and the next
/// request then carries calls without results, which providers refuse;
/// here [`ToolNode`] answers them and the model can retry.
pub fn tools_condition(messages: &[Message]) -> &'static str {
    match messages.last() {
        Some(Message::Ai(ai)) if !ai.tool_calls.is_empty() || !ai.invalid_tool_calls.is_empty() => {
            "tools"
        }
        _ => stategraph_graph::END,
    }
}
