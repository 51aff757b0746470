//! Tools a model can call: the [`Tool`] trait, its object-safe twin,
//! [`FnTool`], JSON schemas of arguments and injected arguments.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use stategraph_core::{ErrorKind, JsonMap, RunnableConfig, Value};

use crate::coerce::describe;
use crate::message::{Content, ToolCall, ToolMessage, ToolStatus};
use crate::model::ToolSchema;
use crate::{Error, Result};

/// Why a tool call failed.
///
/// [`ToolError::InvalidArgs`] is the model's mistake (LangChain's
/// `ToolInvocationError`: the arguments do not fit the schema); a tool node
/// usually reports it back to the model. [`ToolError::Failed`] is the tool's
/// own failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not fit the tool's schema.
    #[error("invalid arguments: {message}")]
    InvalidArgs {
        /// What does not fit, naming the argument.
        message: String,
    },
    /// An injected argument has no value in the [`ToolContext`] (a tool
    /// needing the graph state called without one).
    #[error("argument `{field}` is injected from {from}, which this call does not have")]
    MissingInjection {
        /// The argument.
        field: String,
        /// Where its value should have come from.
        from: String,
    },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
        /// The class of the failure, as a Python tool names the exception
        /// it raises (`ValueError`); `None` for LangChain's generic
        /// `ToolException` (see [`ToolError::class`]).
        class: Option<Cow<'static, str>>,
    },
}

impl ToolError {
    /// Arguments that do not fit the schema.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Self::InvalidArgs {
            message: message.into(),
        }
    }

    /// A failure of the tool itself.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            source: None,
            class: None,
        }
    }

    /// A failure of the tool of a named class, as a Python tool raises an
    /// exception: `ToolError::raised("ValueError", "bad value")` is
    /// `raise ValueError("bad value")`. Tool nodes choose by class which
    /// failures become messages, and show them as Python's `repr` does
    /// ([`ToolError::repr`]).
    pub fn raised(class: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            source: None,
            class: Some(class.into()),
        }
    }

    /// A failure of the tool caused by `source` (its message becomes the
    /// tool's message).
    pub fn from_source(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed {
            message: source.to_string(),
            source: Some(Box::new(source)),
            class: None,
        }
    }

    /// The class of the failure, as LangChain names it: `ValidationError`
    /// for arguments that do not fit the schema, `ValueError` for a missing
    /// injected argument, the class a failure was [`raised`](Self::raised)
    /// with, else `ToolException`.
    pub fn class(&self) -> &str {
        match self {
            Self::InvalidArgs { .. } => "ValidationError",
            Self::MissingInjection { .. } => "ValueError",
            Self::Failed {
                class: Some(class), ..
            } => class,
            Self::Failed { class: None, .. } => "ToolException",
        }
    }

    /// The failure as Python's `repr` shows an exception: its class and
    /// its message quoted (`ValueError('bad value')`).
    ///
    /// ```
    /// use stategraph_llm::ToolError;
    ///
    /// assert_eq!(ToolError::raised("KeyError", "bad key").repr(), "KeyError('bad key')");
    /// assert_eq!(ToolError::failed("it's down").repr(), r#"ToolException("it's down")"#);
    /// ```
    pub fn repr(&self) -> String {
        let message = match self {
            Self::InvalidArgs { message } | Self::Failed { message, .. } => message.clone(),
            other => other.to_string(),
        };
        format!("{}({})", self.class(), crate::python_str_repr(&message))
    }

    /// The coarse classification of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidArgs { .. } | Self::MissingInjection { .. } => ErrorKind::InvalidInput,
            Self::Failed { .. } => ErrorKind::Backend,
        }
    }

    /// Whether the arguments were at fault (what LangGraph's default
    /// `handle_tool_errors` reports back to the model).
    pub fn is_invalid_args(&self) -> bool {
        matches!(self, Self::InvalidArgs { .. })
    }
}

/// Where the value of an injected argument comes from. Injected arguments are
/// hidden from the model (see [`strip_injected`]) and filled at call time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Injected {
    /// The whole graph state (LangGraph's `InjectedState`).
    State,
    /// One key of the graph state (`InjectedState("key")`).
    StateKey(String),
    /// The id of the tool call being answered (`InjectedToolCallId`).
    ToolCallId,
    /// The graph's store (`InjectedStore`). Not JSON: read it with
    /// [`ToolContext::get`].
    Store,
    /// The tool runtime (`ToolRuntime`). Not JSON: read it with
    /// [`ToolContext::get`].
    Runtime,
}

/// An argument of a tool that the caller fills in, not the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InjectedArg {
    /// The argument's name (a property of the argument schema).
    pub field: String,
    /// Where its value comes from.
    pub source: Injected,
}

impl InjectedArg {
    /// The argument `field`, filled from `source`.
    pub fn new(field: impl Into<String>, source: Injected) -> Self {
        Self {
            field: field.into(),
            source,
        }
    }
}

/// What a tool call runs with besides its arguments: the call id, the graph
/// state, the task's config, and typed extensions (the store, the runtime, or
/// anything else the caller provides).
///
/// Cloning is cheap: the state is a shared [`Value`], the config and the
/// extensions are `Arc`s.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the tool call being answered.
    pub tool_call_id: Option<String>,
    /// The graph state the call sees.
    pub state: Option<Value>,
    config: ConfigSlot,
    extensions: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl ToolContext {
    /// Sets the tool call id.
    #[must_use]
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// Sets the graph state.
    #[must_use]
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Sets the configuration (a `RunnableConfig`, or one already shared).
    #[must_use]
    pub fn with_config(mut self, config: impl Into<Arc<RunnableConfig>>) -> Self {
        self.config = ConfigSlot::default();
        // A fresh cell: `set` cannot fail.
        let _ = self.config.ready.set(config.into());
        self
    }

    /// Sets the configuration to the one `make` gives when a tool first
    /// asks for it (a graph's task config is made only for the tools that
    /// read it).
    #[must_use]
    pub fn with_config_from(
        mut self,
        make: impl Fn() -> Arc<RunnableConfig> + Send + Sync + 'static,
    ) -> Self {
        self.config = ConfigSlot {
            ready: std::sync::OnceLock::new(),
            make: Some(Arc::new(make)),
        };
        self
    }

    /// The configuration of the task running the tool (in a graph: its
    /// task config, with `thread_id`, `checkpoint_ns` and the
    /// `langgraph_*` metadata); the default config when none was set.
    pub fn config(&self) -> &RunnableConfig {
        self.shared_config()
    }

    /// [`ToolContext::config`], shared (a reference-count increment to keep).
    pub fn shared_config(&self) -> &Arc<RunnableConfig> {
        self.config.ready.get_or_init(|| match &self.config.make {
            Some(make) => make(),
            None => Arc::default(),
        })
    }

    /// Adds a typed extension (one per type; a second one replaces the
    /// first).
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: Arc<T>) -> Self {
        self.extensions.insert(TypeId::of::<T>(), value);
        self
    }

    /// Streams part of the tool's output as it is made (LangGraph's
    /// `ToolRuntime.emit_output_delta`): a `tool-output-delta` event of the
    /// run's `tools` stream, when the run streams that mode; nothing
    /// otherwise.
    pub fn emit_output_delta(&self, delta: Json) {
        if let Some(writer) = self.get::<OutputDeltaWriter>() {
            (writer.0)(delta);
        }
    }

    /// The extension of type `T`, if the caller added one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.extensions
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|value| value.downcast::<T>().ok())
    }

    /// Fills the JSON-valued injected arguments (state, state key, tool call
    /// id) into `args`, replacing anything the model put there. Store and
    /// runtime are not JSON: the tool reads them with [`get`](Self::get).
    ///
    /// # Errors
    /// [`ToolError::InvalidArgs`] if `args` is not a JSON object (`null`
    /// counts as `{}`); [`ToolError::MissingInjection`] if the context lacks
    /// what an argument needs.
    pub fn inject(&self, args: Json, injected: &[InjectedArg]) -> Result<Json, ToolError> {
        let mut args = match args {
            Json::Object(args) => args,
            Json::Null => JsonMap::new(),
            other => {
                return Err(ToolError::invalid_args(format!(
                    "arguments must be a JSON object, got {}",
                    describe(&other)
                )));
            }
        };
        if injected.is_empty() {
            return Ok(Json::Object(args));
        }
        let mut state_json = None;
        for arg in injected {
            let missing = |from: &str| ToolError::MissingInjection {
                field: arg.field.clone(),
                from: from.to_owned(),
            };
            let value = match &arg.source {
                Injected::ToolCallId => match &self.tool_call_id {
                    Some(id) => Json::String(id.clone()),
                    None => return Err(missing("the tool call id")),
                },
                Injected::State | Injected::StateKey(_) => {
                    if state_json.is_none() {
                        let Some(state) = &self.state else {
                            return Err(missing("the graph state"));
                        };
                        let json = state.to_json().map_err(|err| ToolError::Failed {
                            message: format!("cannot read the graph state: {err}"),
                            source: Some(Box::new(err)),
                            class: None,
                        })?;
                        state_json = Some(json);
                    }
                    let state = state_json.as_ref().unwrap_or(&Json::Null);
                    match &arg.source {
                        Injected::StateKey(key) => match state.get(key) {
                            Some(value) => value.clone(),
                            None => return Err(missing(&format!("the state key `{key}`"))),
                        },
                        _ => state.clone(),
                    }
                }
                Injected::Store | Injected::Runtime => continue,
            };
            args.insert(arg.field.clone(), value);
        }
        Ok(Json::Object(args))
    }
}

/// Where a tool context's config comes from: set, or made when first read.
#[derive(Clone, Default)]
struct ConfigSlot {
    ready: std::sync::OnceLock<Arc<RunnableConfig>>,
    make: Option<Arc<dyn Fn() -> Arc<RunnableConfig> + Send + Sync>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("state", &self.state)
            .field("config", self.config())
            .field("extensions", &self.extensions.len())
            .finish()
    }
}

/// What a tool returns: the content the model sees, and optionally an
/// artifact kept for the application, or instead a control value for the
/// node running the tool (a graph `Command`: see [`ToolControl`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Content,
    /// What the application keeps (not sent to the model).
    pub artifact: Option<Json>,
    /// A value for the node running the tool instead of a plain result.
    pub control: Option<ToolControl>,
}

/// A value a tool hands to the node that runs it instead of a plain result,
/// such as a graph `Command` (this crate sits below the graph, so it only
/// carries the value; `stategraph_pregel` converts its `Command` into a
/// `ToolOutput` and `ToolNode` reads it back). Compares by identity.
#[derive(Clone)]
pub struct ToolControl(Arc<dyn Any + Send + Sync>);

impl ToolControl {
    /// Carries `value`.
    pub fn new(value: impl Any + Send + Sync) -> Self {
        Self(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for ToolControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolControl(..)")
    }
}

impl PartialEq for ToolControl {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ToolOutput {
    /// Output with this content.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            artifact: None,
            control: None,
        }
    }

    /// Output that hands `value` to the node running the tool (see
    /// [`ToolControl`]).
    pub fn control(value: impl Any + Send + Sync) -> Self {
        Self {
            control: Some(ToolControl::new(value)),
            ..Self::default()
        }
    }

    /// Sets the artifact.
    #[must_use]
    pub fn with_artifact(mut self, artifact: Json) -> Self {
        self.artifact = Some(artifact);
        self
    }

    /// The tool message answering `call` with this output.
    pub fn into_message(self, call: &ToolCall) -> ToolMessage {
        let mut message = ToolMessage::new(self.content, call.id.clone().unwrap_or_default());
        message.name = Some(call.name.clone());
        message.artifact = self.artifact;
        message
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<Content> for ToolOutput {
    fn from(content: Content) -> Self {
        Self::new(content)
    }
}

/// A JSON string is its text; any other JSON value is its compact JSON text.
impl From<Json> for ToolOutput {
    fn from(value: Json) -> Self {
        match value {
            Json::String(text) => Self::new(text),
            other => Self::new(other.to_string()),
        }
    }
}

/// Where [`ToolContext::emit_output_delta`] sends a call's partial output:
/// the runner of the call (`ToolNode`) adds it as an extension when the run
/// streams tool events.
#[derive(Clone)]
pub struct OutputDeltaWriter(pub Arc<dyn Fn(Json) + Send + Sync>);

impl fmt::Debug for OutputDeltaWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OutputDeltaWriter(..)")
    }
}

/// What a `#[tool]` function returned, on its way to a [`ToolOutput`]: a
/// type that converts into one (text, JSON, content) does so, any other
/// `Serialize` type becomes its JSON text. (The choice is made at compile
/// time: [`ViaInto`] is preferred where both apply.) Not a public API.
#[doc(hidden)]
pub struct OutputOf<T>(pub std::cell::Cell<Option<T>>);

impl<T> OutputOf<T> {
    /// Wraps a function's result.
    pub fn new(value: T) -> Self {
        Self(std::cell::Cell::new(Some(value)))
    }

    fn take(&self) -> Result<T, ToolError> {
        self.0
            .take()
            .ok_or_else(|| ToolError::failed("the tool's output was already taken"))
    }
}

/// The output of a type that converts into a [`ToolOutput`].
#[doc(hidden)]
pub trait ViaInto {
    /// The tool output.
    fn to_tool_output(&self) -> Result<ToolOutput, ToolError>;
}

impl<T: Into<ToolOutput>> ViaInto for &OutputOf<T> {
    fn to_tool_output(&self) -> Result<ToolOutput, ToolError> {
        Ok(self.take()?.into())
    }
}

/// The output of any other `Serialize` type: its JSON (a string is its
/// text).
#[doc(hidden)]
pub trait ViaSerialize {
    /// The tool output.
    fn to_tool_output(&self) -> Result<ToolOutput, ToolError>;
}

impl<T: serde::Serialize> ViaSerialize for OutputOf<T> {
    fn to_tool_output(&self) -> Result<ToolOutput, ToolError> {
        let json = serde_json::to_value(self.take()?).map_err(|err| {
            ToolError::failed(format!("the tool's output does not serialize: {err}"))
        })?;
        Ok(json.into())
    }
}

/// A tool a model can call.
///
/// # Behavior
/// - [`schema`](Self::schema) is what the model sees: the argument schema
///   without the [`injected_args`](Self::injected_args).
/// - [`call`](Self::call) gets the model's arguments and the call's context;
///   arguments that do not fit the schema give [`ToolError::InvalidArgs`],
///   never a panic.
pub trait Tool: Send + Sync + fmt::Debug + 'static {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments, injected ones included.
    fn args_schema(&self) -> Json;

    /// The arguments the caller fills in (hidden from the model). None by
    /// default.
    fn injected_args(&self) -> &[InjectedArg] {
        &[]
    }

    /// Whether a tool node should end the agent loop after this tool
    /// (LangChain's `return_direct`). `false` by default.
    fn return_direct(&self) -> bool {
        false
    }

    /// The model-visible schema: name, description and the argument schema
    /// without the injected arguments.
    fn schema(&self) -> ToolSchema {
        let injected: Vec<&str> = self
            .injected_args()
            .iter()
            .map(|arg| arg.field.as_str())
            .collect();
        ToolSchema::new(
            self.name(),
            self.description(),
            strip_injected(self.args_schema(), &injected),
        )
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Json,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The object-safe twin of [`Tool`], implemented for every tool.
pub trait DynTool: Send + Sync + fmt::Debug + 'static {
    /// See [`Tool::name`].
    fn dyn_name(&self) -> &str;
    /// See [`Tool::description`].
    fn dyn_description(&self) -> &str;
    /// See [`Tool::args_schema`].
    fn dyn_args_schema(&self) -> Json;
    /// See [`Tool::injected_args`].
    fn dyn_injected_args(&self) -> &[InjectedArg];
    /// See [`Tool::return_direct`].
    fn dyn_return_direct(&self) -> bool;
    /// See [`Tool::schema`].
    fn dyn_schema(&self) -> ToolSchema;
    /// See [`Tool::call`].
    fn dyn_call(
        &self,
        args: Json,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;
}

/// A tool behind an `Arc`, as tool nodes and agents hold them.
pub type SharedTool = Arc<dyn DynTool>;

impl<T: Tool> DynTool for T {
    fn dyn_name(&self) -> &str {
        self.name()
    }
    fn dyn_description(&self) -> &str {
        self.description()
    }
    fn dyn_args_schema(&self) -> Json {
        self.args_schema()
    }
    fn dyn_injected_args(&self) -> &[InjectedArg] {
        self.injected_args()
    }
    fn dyn_return_direct(&self) -> bool {
        self.return_direct()
    }
    fn dyn_schema(&self) -> ToolSchema {
        self.schema()
    }
    fn dyn_call(
        &self,
        args: Json,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(args, ctx))
    }
}

impl Tool for SharedTool {
    fn name(&self) -> &str {
        self.as_ref().dyn_name()
    }
    fn description(&self) -> &str {
        self.as_ref().dyn_description()
    }
    fn args_schema(&self) -> Json {
        self.as_ref().dyn_args_schema()
    }
    fn injected_args(&self) -> &[InjectedArg] {
        self.as_ref().dyn_injected_args()
    }
    fn return_direct(&self) -> bool {
        self.as_ref().dyn_return_direct()
    }
    fn schema(&self) -> ToolSchema {
        self.as_ref().dyn_schema()
    }
    async fn call(&self, args: Json, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.as_ref().dyn_call(args, ctx).await
    }
}

/// Finds the tool a call names.
///
/// # Errors
/// [`Error::UnknownTool`] listing the tools that exist (LangGraph's "… is not
/// a valid tool, try one of [...]").
pub fn find_tool<'a, T: Tool>(tools: &'a [T], name: &str) -> Result<&'a T> {
    tools
        .iter()
        .find(|tool| tool.name() == name)
        .ok_or_else(|| Error::UnknownTool {
            name: name.to_owned(),
            available: tools.iter().map(|t| t.name().to_owned()).collect(),
        })
}

/// Runs the tool `call` names and wraps the result in a [`ToolMessage`]: the
/// context gets the call's id, injected arguments are filled by the tool.
///
/// # Errors
/// [`Error::UnknownTool`] for a name no tool has, [`Error::Tool`] when the
/// tool fails. Turning those into error tool messages for the model (as
/// LangGraph's `handle_tool_errors` does) is the caller's policy; see
/// [`error_message`].
pub async fn run_tool_call<T: Tool>(
    tools: &[T],
    call: &ToolCall,
    ctx: ToolContext,
) -> Result<ToolMessage> {
    let tool = find_tool(tools, &call.name)?;
    let ctx = match &call.id {
        Some(id) => ctx.with_tool_call_id(id.clone()),
        None => ctx,
    };
    let output = tool
        .call(call.args.clone(), ctx)
        .await
        .map_err(|source| Error::Tool {
            tool: call.name.clone(),
            source,
        })?;
    Ok(output.into_message(call))
}

/// A tool message with `status: error` answering `call` with `text`.
pub fn error_message(call: &ToolCall, text: impl Into<Content>) -> ToolMessage {
    let mut message = ToolMessage::new(text, call.id.clone().unwrap_or_default());
    message.name = Some(call.name.clone());
    message.status = ToolStatus::Error;
    message
}

type ToolFn =
    dyn Fn(Json, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool made from an async closure.
///
/// [`FnTool::typed`] takes the arguments as a Rust type and derives the
/// schema from it (schemars); [`FnTool::new`] takes raw JSON and a schema.
/// Injected arguments declared with [`FnTool::inject`] are hidden from the
/// model and filled before the closure runs.
///
/// ```
/// use serde::Deserialize;
/// use stategraph_llm::{FnTool, Injected, Tool, ToolContext, ToolError, schemars::JsonSchema};
///
/// #[derive(Deserialize, JsonSchema)]
/// #[schemars(crate = "stategraph_llm::schemars")]
/// struct AddArgs {
///     /// The first number.
///     a: i64,
///     b: i64,
///     /// Filled in from the tool call, not by the model.
///     call_id: String,
/// }
///
/// let add = FnTool::typed("add", "Adds two numbers.", |args: AddArgs, _ctx| async move {
///     Ok::<_, ToolError>(format!("{} (call {})", args.a + args.b, args.call_id))
/// })
/// .inject("call_id", Injected::ToolCallId);
///
/// let schema = add.schema();
/// assert_eq!(schema.parameters["required"], serde_json::json!(["a", "b"]));
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = ToolContext::default().with_tool_call_id("c1");
/// let out = add.call(serde_json::json!({"a": 2, "b": 3}), ctx).await?;
/// assert_eq!(out.content.text(), "5 (call c1)");
///
/// let err = add.call(serde_json::json!({"a": "two"}), ToolContext::default().with_tool_call_id("c2")).await.unwrap_err();
/// assert!(err.is_invalid_args());
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct FnTool {
    name: String,
    description: String,
    schema: Json,
    injected: Vec<InjectedArg>,
    return_direct: bool,
    func: Arc<ToolFn>,
}

impl FnTool {
    /// A tool taking its arguments as JSON, with the given argument schema.
    /// The closure gets the arguments with the injected ones filled in.
    pub fn new<F, Fut, O>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Json,
        func: F,
    ) -> Self
    where
        F: Fn(Json, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<ToolOutput>,
    {
        let func = move |args: Json, ctx: ToolContext| -> BoxFuture<'static, _> {
            let fut = func(args, ctx);
            Box::pin(async move { fut.await.map(Into::into) })
        };
        Self {
            name: name.into(),
            description: description.into(),
            schema,
            injected: Vec::new(),
            return_direct: false,
            func: Arc::new(func),
        }
    }

    /// A tool taking its arguments as `A`; the schema is `A`'s (see
    /// [`tool_schema`]) and arguments that do not deserialize into `A` give
    /// [`ToolError::InvalidArgs`] naming the problem.
    pub fn typed<A, F, Fut, O>(
        name: impl Into<String>,
        description: impl Into<String>,
        func: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<ToolOutput>,
    {
        let func = Arc::new(func);
        Self::new(
            name,
            description,
            tool_schema::<A>(),
            move |args: Json, ctx: ToolContext| {
                let func = func.clone();
                async move {
                    let args = serde_json::from_value::<A>(args)
                        .map_err(|err| ToolError::invalid_args(err.to_string()))?;
                    func(args, ctx).await
                }
            },
        )
    }

    /// Declares the argument `field` as injected from `source`: hidden from
    /// the model, filled at call time.
    #[must_use]
    pub fn inject(mut self, field: impl Into<String>, source: Injected) -> Self {
        self.injected.push(InjectedArg::new(field, source));
        self
    }

    /// Sets `return_direct`.
    #[must_use]
    pub fn with_return_direct(mut self, return_direct: bool) -> Self {
        self.return_direct = return_direct;
        self
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("injected", &self.injected)
            .field("return_direct", &self.return_direct)
            .finish_non_exhaustive()
    }
}

impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn args_schema(&self) -> Json {
        self.schema.clone()
    }

    fn injected_args(&self) -> &[InjectedArg] {
        &self.injected
    }

    fn return_direct(&self) -> bool {
        self.return_direct
    }

    fn call(
        &self,
        args: Json,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let prepared = ctx
            .inject(args, &self.injected)
            .map(|args| (self.func)(args, ctx));
        async move { prepared?.await }
    }
}

/// The JSON schema of `T` as tool arguments: what `T` accepts when
/// deserialized (fields with `#[serde(default)]` are optional), without the
/// `$schema` key. Doc comments become descriptions.
///
/// Derive `JsonSchema` through this crate's re-export with
/// `#[schemars(crate = "stategraph_llm::schemars")]`, or depend on
/// `schemars` 1 directly.
///
/// ```
/// use stategraph_llm::{schemars::JsonSchema, tool_schema};
///
/// #[derive(JsonSchema)]
/// #[schemars(crate = "stategraph_llm::schemars")]
/// #[allow(dead_code)]
/// struct Search {
///     /// What to look for.
///     query: String,
///     #[serde(default)]
///     limit: u32,
/// }
///
/// let schema = tool_schema::<Search>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["query"]));
/// assert_eq!(schema["properties"]["query"]["description"], "What to look for.");
/// // Titled as pydantic titles a model's fields (see `pydantic_title`).
/// assert_eq!(schema["properties"]["query"]["title"], "Query");
/// ```
///
/// Every property gets pydantic's `title` (see [`pydantic_title`]) unless
/// it has one or is a `$ref`, in nested object schemas and `$defs` too, so
/// the schema is the one LangChain's `tool_call_schema.model_json_schema()`
/// gives for the same arguments (golden trace 29). Providers that send
/// schemas without titles, as LangChain's `convert_to_openai_tool` does,
/// remove them on the wire.
pub fn tool_schema<T: JsonSchema>() -> Json {
    schema_for::<T>(SchemaSettings::draft2020_12())
}

/// [`tool_schema`] with every subschema written in place (no `$defs`, no
/// `$ref`): a schema that can be nested inside another one as it is.
pub fn inline_schema<T: JsonSchema>() -> Json {
    schema_for::<T>(
        SchemaSettings::draft2020_12().with(|settings| settings.inline_subschemas = true),
    )
}

/// The JSON schema of `T` for deserializing, without `$schema`, its
/// properties titled as pydantic titles them.
fn schema_for<T: JsonSchema>(settings: SchemaSettings) -> Json {
    let mut json = settings
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(map) = json.as_object_mut() {
        map.remove("$schema");
    }
    title_properties(&mut json, 0);
    json
}

/// pydantic's default title of a field: the name split at `_`, each word
/// capitalised, joined by spaces (`user_id` → `User Id`, `x` → `X`).
///
/// ```
/// use stategraph_llm::pydantic_title;
///
/// assert_eq!(pydantic_title("user_id"), "User Id");
/// assert_eq!(pydantic_title("fact"), "Fact");
/// ```
pub fn pydantic_title(field: &str) -> String {
    field
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Gives every property of `schema`'s object schemas (nested ones and
/// `$defs` included) pydantic's title, unless it has one or is a `$ref`.
fn title_properties(schema: &mut Json, depth: usize) {
    // Schemas nest as deep as the Rust types do: bounded all the same.
    if depth > stategraph_core::json::MAX_DEPTH {
        return;
    }
    let Json::Object(map) = schema else {
        if let Json::Array(items) = schema {
            for item in items {
                title_properties(item, depth + 1);
            }
        }
        return;
    };
    if let Some(Json::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if let Some(property) = property.as_object_mut()
                && !property.contains_key("$ref")
            {
                property
                    .entry("title")
                    .or_insert_with(|| Json::String(pydantic_title(name)));
            }
        }
    }
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            // Constant values, not schemas.
            "const" | "enum" | "default" | "examples" => {}
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Json::Object(named) = value {
                    for sub in named.values_mut() {
                        title_properties(sub, depth + 1);
                    }
                }
            }
            _ => title_properties(value, depth + 1),
        }
    }
}

/// Removes the `fields` from an object schema's `properties` and `required`
/// (dropping `required` when it becomes empty) and the `$defs` only they
/// used: the schema the model sees for a tool with injected arguments.
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::strip_injected;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"fact": {"type": "string"}, "call_id": {"type": "string"}},
///     "required": ["fact", "call_id"],
/// });
/// assert_eq!(
///     strip_injected(schema, &["call_id"]),
///     json!({"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]}),
/// );
/// ```
pub fn strip_injected(mut schema: Json, fields: &[&str]) -> Json {
    if fields.is_empty() {
        return schema;
    }
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    if let Some(Json::Object(properties)) = map.get_mut("properties") {
        for field in fields {
            properties.remove(*field);
        }
    }
    if let Some(Json::Array(required)) = map.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|n| fields.contains(&n)));
        if required.is_empty() {
            map.remove("required");
        }
    }
    prune_defs(map);
    schema
}

/// Drops the `$defs` entries nothing reachable from the root refers to.
fn prune_defs(root: &mut JsonMap) {
    let Some(Json::Object(defs)) = root.remove("$defs") else {
        return;
    };
    let mut used = BTreeSet::new();
    let mut pending = Vec::new();
    collect_refs(&Json::Object(root.clone()), &mut pending);
    while let Some(name) = pending.pop() {
        if used.insert(name.clone())
            && let Some(def) = defs.get(&name)
        {
            collect_refs(def, &mut pending);
        }
    }
    let kept: JsonMap = defs
        .into_iter()
        .filter(|(name, _)| used.contains(name))
        .collect();
    if !kept.is_empty() {
        root.insert("$defs".into(), Json::Object(kept));
    }
}

fn collect_refs(value: &Json, out: &mut Vec<String>) {
    match value {
        Json::Object(map) => {
            for (key, value) in map {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    out.push(name.to_owned());
                }
                collect_refs(value, out);
            }
        }
        Json::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Profile {
        user: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct RememberArgs {
        fact: String,
        state: Profile,
        call_id: String,
    }

    fn remember() -> FnTool {
        FnTool::typed(
            "remember",
            "Store a fact.",
            |args: RememberArgs, ctx: ToolContext| async move {
                let store = ctx.get::<Vec<String>>().map_or(0, |s| s.len());
                Ok::<_, ToolError>(format!(
                    "stored {} for {} under {} ({store})",
                    args.fact, args.state.user, args.call_id
                ))
            },
        )
        .inject("state", Injected::State)
        .inject("call_id", Injected::ToolCallId)
    }

    #[test]
    fn injected_args_and_their_defs_are_hidden_from_the_model() {
        let tool = remember();
        let full = tool.args_schema();
        assert!(full["$defs"].get("Profile").is_some(), "{full}");
        let visible = tool.schema();
        assert_eq!(visible.name, "remember");
        assert_eq!(visible.description, "Store a fact.");
        assert_eq!(
            visible.parameters["properties"],
            json!({"fact": {"type": "string", "title": "Fact"}})
        );
        assert_eq!(visible.parameters["required"], json!(["fact"]));
        assert!(
            visible.parameters.get("$defs").is_none(),
            "{}",
            visible.parameters
        );
    }

    #[tokio::test]
    async fn injection_fills_state_call_id_and_extensions() {
        let ctx = ToolContext::default()
            .with_tool_call_id("c2")
            .with_state(Value::from_json(json!({"user": "ann", "messages": []})))
            .with_extension(Arc::new(vec!["x".to_owned()]));
        // The model tried to set an injected argument: it is overwritten.
        let out = remember()
            .call(json!({"fact": "sky is blue", "call_id": "forged"}), ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content.text(),
            "stored sky is blue for ann under c2 (1)"
        );
    }

    #[tokio::test]
    async fn missing_context_and_bad_args_are_typed_errors() {
        let err = remember()
            .call(json!({"fact": "f"}), ToolContext::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::MissingInjection { ref field, .. } if field == "state"),
            "{err}"
        );
        let ctx = ToolContext::default()
            .with_tool_call_id("c")
            .with_state(Value::from_json(json!({"user": "ann"})));
        let err = remember().call(json!({}), ctx.clone()).await.unwrap_err();
        assert!(err.is_invalid_args());
        assert!(err.to_string().contains("fact"), "{err}");
        let err = remember().call(json!([1]), ctx).await.unwrap_err();
        assert!(err.is_invalid_args());
    }

    #[tokio::test]
    async fn state_keys_inject_one_value() {
        let tool = FnTool::new(
            "just_user",
            "Return a single injected state key.",
            json!({"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]}),
            |args: Json, _ctx| async move { Ok::<_, ToolError>(format!("user={}", args["user"].as_str().unwrap_or("?"))) },
        )
        .inject("user", Injected::StateKey("user".into()));
        assert_eq!(
            tool.schema().parameters,
            json!({"type": "object", "properties": {}})
        );
        let ctx = ToolContext::default().with_state(Value::from_json(json!({"user": "ann"})));
        assert_eq!(
            tool.call(json!({}), ctx).await.unwrap().content.text(),
            "user=ann"
        );
        let ctx = ToolContext::default().with_state(Value::from_json(json!({})));
        assert!(matches!(
            tool.call(json!({}), ctx).await.unwrap_err(),
            ToolError::MissingInjection { .. }
        ));
    }

    #[tokio::test]
    async fn run_tool_call_finds_the_tool_and_wraps_the_output() {
        let tools: Vec<SharedTool> = vec![Arc::new(remember())];
        let call = ToolCall::new("missing_tool", json!({})).with_id("c0");
        let err = run_tool_call(&tools, &call, ToolContext::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing_tool is not a valid tool, try one of [remember]"
        );
        let call = ToolCall::new("remember", json!({"fact": "f"})).with_id("c1");
        let ctx = ToolContext::default().with_state(Value::from_json(json!({"user": "bo"})));
        let message = run_tool_call(&tools, &call, ctx).await.unwrap();
        assert_eq!(message.tool_call_id, "c1");
        assert_eq!(message.name.as_deref(), Some("remember"));
        assert_eq!(message.content.text(), "stored f for bo under c1 (0)");
        let error = error_message(&call, "boom");
        assert_eq!(error.status, ToolStatus::Error);
    }

    #[test]
    fn tool_output_from_json_is_text() {
        assert_eq!(ToolOutput::from(json!("x")).content.text(), "x");
        assert_eq!(
            ToolOutput::from(json!({"a": 1})).content.text(),
            "{\"a\":1}"
        );
    }
}
