//! The [`ChatModel`] trait, its object-safe twin, call options, bound tools
//! and structured output.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, Either};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use stategraph_core::JsonMap;

use crate::chunk::{AiMessageChunk, collect_chunks};
use crate::coerce::describe;
use crate::message::{AiMessage, Message};
use crate::observe::{ModelCall, SharedObserver};
use crate::tool::tool_schema;
use crate::{Error, Result};

/// The tag that keeps a model's tokens out of the `messages` stream mode
/// (its final message is still emitted once).
pub const NOSTREAM_TAG: &str = "nostream";

/// A tool as the model sees it: name, description and the JSON schema of its
/// arguments (LangChain's `bind_tools` input, OpenAI's `function`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// The JSON schema of the arguments (an object schema).
    pub parameters: Json,
}

impl ToolSchema {
    /// A tool schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Json) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// A tool schema whose arguments are `T` (see [`tool_schema`]).
    pub fn of<T: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(name, description, tool_schema::<T>())
    }
}

/// Which tool the model must call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default when tools are bound).
    Auto,
    /// No tool.
    None,
    /// Some tool, the model picks which.
    Required,
    /// This tool.
    Tool(String),
}

/// A JSON schema the model's answer must fit (structured output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputSchema {
    /// The schema's name (the tool name when the answer comes as a tool call).
    pub name: String,
    /// What the answer is.
    pub description: Option<String>,
    /// The JSON schema.
    pub schema: Json,
    /// Whether a provider that supports it should enforce the schema
    /// strictly (OpenAI's `strict`).
    pub strict: bool,
}

impl OutputSchema {
    /// A schema named `name`.
    pub fn new(name: impl Into<String>, schema: Json) -> Self {
        Self {
            name: name.into(),
            description: None,
            schema,
            strict: false,
        }
    }

    /// The schema of `T`, named after its schema title (the type name).
    pub fn of<T: JsonSchema>() -> Self {
        let schema = tool_schema::<T>();
        let name = schema
            .get("title")
            .and_then(Json::as_str)
            .map_or_else(|| T::schema_name().into_owned(), str::to_owned);
        let description = schema
            .get("description")
            .and_then(Json::as_str)
            .map(str::to_owned);
        Self {
            name,
            description,
            schema,
            strict: false,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `strict`.
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Checks `value` against the schema's outline: the top-level type,
    /// required keys, and the JSON type of each top-level property that
    /// declares a single `type`. (Full JSON Schema validation is not done;
    /// [`StructuredChatModel::invoke_as`] validates through serde.)
    ///
    /// # Errors
    /// [`Error::StructuredOutput`] naming the first key that does not fit.
    pub fn check(&self, value: &Json) -> Result<()> {
        let fail = |message: String| Error::StructuredOutput {
            schema: self.name.clone(),
            message,
        };
        if let Some(expected) = self.schema.get("type").and_then(Json::as_str)
            && !has_type(value, expected)
        {
            return Err(fail(format!(
                "expected {expected}, got {}",
                describe(value)
            )));
        }
        let Some(object) = value.as_object() else {
            return Ok(());
        };
        if let Some(required) = self.schema.get("required").and_then(Json::as_array) {
            for key in required.iter().filter_map(Json::as_str) {
                if !object.contains_key(key) {
                    return Err(fail(format!("missing required key `{key}`")));
                }
            }
        }
        if let Some(properties) = self.schema.get("properties").and_then(Json::as_object) {
            for (key, property) in properties {
                if let (Some(value), Some(expected)) =
                    (object.get(key), property.get("type").and_then(Json::as_str))
                    && !has_type(value, expected)
                {
                    return Err(fail(format!(
                        "key `{key}`: expected {expected}, got {}",
                        describe(value)
                    )));
                }
            }
        }
        Ok(())
    }
}

fn has_type(value: &Json, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// Per-call options: bound tools, tool choice, structured output, stop
/// sequences, tags and metadata.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct CallOptions {
    /// The tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Which tool the model must call (`None`: the provider's default).
    pub tool_choice: Option<ToolChoice>,
    /// A schema the answer must fit, for providers with native structured
    /// output (OpenAI's `response_format`).
    pub response_format: Option<OutputSchema>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Tags for tracing and stream filtering (for example [`NOSTREAM_TAG`]).
    pub tags: Vec<String>,
    /// Free-form metadata for tracing.
    pub metadata: JsonMap,
}

impl CallOptions {
    /// Adds tools.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolSchema>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the response format.
    #[must_use]
    pub fn with_response_format(mut self, schema: OutputSchema) -> Self {
        self.response_format = Some(schema);
        self
    }

    /// Adds stop sequences.
    #[must_use]
    pub fn with_stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop.extend(stop.into_iter().map(Into::into));
        self
    }

    /// Adds tags.
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Sets one metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: Json) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Whether the call is tagged [`NOSTREAM_TAG`].
    pub fn is_nostream(&self) -> bool {
        self.tags.iter().any(|t| t == NOSTREAM_TAG)
    }

    /// These (bound) options with a call's options on top: tools of both
    /// (bound first, a call's tool replacing a bound one of the same name),
    /// tags of both without repeats, metadata of both (the call's wins), and
    /// the call's tool choice, response format and stop sequences when it
    /// sets them.
    pub fn merged(&self, call: &CallOptions) -> CallOptions {
        self.under(call).into_owned()
    }

    /// [`merged`](Self::merged), borrowing these options when the call
    /// sets nothing (the usual call), so bound tools are not copied.
    fn under<'a>(&'a self, call: &CallOptions) -> std::borrow::Cow<'a, CallOptions> {
        if *call == CallOptions::default() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut tools: Vec<ToolSchema> = self
            .tools
            .iter()
            .filter(|bound| !call.tools.iter().any(|t| t.name == bound.name))
            .cloned()
            .collect();
        tools.extend(call.tools.iter().cloned());
        let mut tags = self.tags.clone();
        for tag in &call.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        let mut metadata = self.metadata.clone();
        metadata.extend(call.metadata.clone());
        std::borrow::Cow::Owned(CallOptions {
            tools,
            tool_choice: call
                .tool_choice
                .clone()
                .or_else(|| self.tool_choice.clone()),
            response_format: call
                .response_format
                .clone()
                .or_else(|| self.response_format.clone()),
            stop: if call.stop.is_empty() {
                self.stop.clone()
            } else {
                call.stop.clone()
            },
            tags,
            metadata,
        })
    }
}

/// A chat model: messages in, an AI message out, or a stream of chunks.
///
/// A provider implements [`generate`](Self::generate) and, if it streams,
/// [`generate_stream`](Self::generate_stream); callers use
/// [`invoke`](Self::invoke) and [`stream`](Self::stream), which add what
/// every model shares: an id for answers that have none, and reporting to
/// the graph runtime's `messages` stream mode when called inside a node
/// ([`observe`](crate::observe::observe)). Cancelling a call is dropping
/// its future or stream.
///
/// # Behavior
/// - `invoke` returns one AI message. Bad model output (tool arguments that
///   are not JSON, a tool call without a name) becomes an
///   [`InvalidToolCall`](crate::InvalidToolCall) in it; an empty answer is
///   [`Error::EmptyResponse`]. Nothing panics on model output.
/// - `stream` yields chunks that merge into what `invoke` would return
///   ([`collect_chunks`](crate::collect_chunks)); every chunk of one message
///   carries the same id, and the last one is marked
///   [`ChunkPosition::Last`](crate::ChunkPosition::Last). A model that does
///   not stream yields its whole answer as one chunk.
/// - Inside an observed node, `invoke` streams when the model can (as
///   LangChain does under a streaming callback), so tokens reach the
///   `messages` stream mode; a call tagged [`NOSTREAM_TAG`] is not reported.
/// - The options' tools are what the model may call; `bind_tools` binds them
///   once for every call.
pub trait ChatModel: Send + Sync + fmt::Debug + 'static {
    /// The model's name, for errors and tracing.
    fn model_name(&self) -> &str {
        "chat_model"
    }

    /// Who serves the model (`openai`, `ollama`, ...), reported as
    /// `ls_provider` in `messages` stream metadata.
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// The provider's answer to the conversation, as one AI message.
    fn generate(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send;

    /// The provider's answer as a stream of chunks, or `None` (the default)
    /// when the model does not stream.
    ///
    /// The stream may borrow the model but not `messages` or `options`:
    /// read (or clone) what it needs before returning. Cloning messages is
    /// cheap (each is an `Arc`).
    fn generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, Self>> {
        let _ = (messages, options);
        None::<stream::Empty<Result<AiMessageChunk>>>
    }

    /// Answers the conversation with one AI message.
    fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        async move {
            let Some(observer) = crate::observe::current(options) else {
                return self.generate(messages, options).await.map(with_id);
            };
            match self.generate_stream(messages, options) {
                Some(chunks) => {
                    let chunks = report_chunks(chunks, Some(observer), self, options.tags.clone());
                    collect_chunks(chunks, self.model_name()).await
                }
                None => {
                    let message = with_id(self.generate(messages, options).await?);
                    let call = ModelCall {
                        model_name: self.model_name(),
                        provider: self.provider_name(),
                        tags: &options.tags,
                    };
                    observer.on_message(&call, &message);
                    Ok(message)
                }
            }
        }
    }

    /// Answers the conversation as a stream of chunks.
    fn stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, Self> {
        let observer = crate::observe::current(options);
        match self.generate_stream(messages, options) {
            Some(chunks) => {
                Either::Left(report_chunks(chunks, observer, self, options.tags.clone()))
            }
            None => {
                let messages = messages.to_vec();
                let options = options.clone();
                Either::Right(stream::once(async move {
                    self.invoke(&messages, &options)
                        .await
                        .map(AiMessageChunk::from)
                }))
            }
        }
    }

    /// Answers with JSON that fits `schema`.
    ///
    /// The default binds a tool named after the schema, forces the model to
    /// call it, and returns the call's arguments (or, when the model answers
    /// in text instead, that text parsed as JSON), checked with
    /// [`OutputSchema::check`]. Providers with native structured output may
    /// override it.
    ///
    /// # Errors
    /// [`Error::StructuredOutput`] when the answer is not JSON or does not
    /// fit; the errors of [`invoke`](Self::invoke).
    fn invoke_structured(
        &self,
        messages: &[Message],
        options: &CallOptions,
        schema: &OutputSchema,
    ) -> impl Future<Output = Result<Json>> + Send {
        async move {
            let tool = ToolSchema::new(
                schema.name.clone(),
                schema.description.clone().unwrap_or_default(),
                schema.schema.clone(),
            );
            let options = options
                .clone()
                .with_tools([tool])
                .with_tool_choice(ToolChoice::Tool(schema.name.clone()));
            let answer = self.invoke(messages, &options).await?;
            let value = structured_value(&answer, schema)?;
            schema.check(&value)?;
            Ok(value)
        }
    }

    /// This model with `tools` bound to every call (LangChain's
    /// `bind_tools`).
    fn bind_tools(self, tools: impl IntoIterator<Item = ToolSchema>) -> BoundChatModel<Self>
    where
        Self: Sized,
    {
        BoundChatModel {
            model: self,
            options: CallOptions::default().with_tools(tools),
        }
    }

    /// This model with `options` applied to every call (LangChain's
    /// `bind` / `with_config`).
    fn with_options(self, options: CallOptions) -> BoundChatModel<Self>
    where
        Self: Sized,
    {
        BoundChatModel {
            model: self,
            options,
        }
    }

    /// This model answering with JSON that fits `schema` (LangChain's
    /// `with_structured_output`).
    fn with_structured_output(self, schema: OutputSchema) -> StructuredChatModel<Self>
    where
        Self: Sized,
    {
        StructuredChatModel {
            model: self,
            schema,
        }
    }

    /// This model behind an `Arc`, as agents and graphs hold models.
    fn into_shared(self) -> SharedChatModel
    where
        Self: Sized,
    {
        Arc::new(self)
    }
}

/// The JSON answer of a structured call: the arguments of the call to the
/// schema's tool, or else the text parsed as JSON.
fn structured_value(answer: &AiMessage, schema: &OutputSchema) -> Result<Json> {
    let fail = |message: String| Error::StructuredOutput {
        schema: schema.name.clone(),
        message,
    };
    if let Some(call) = answer.tool_calls.iter().find(|c| c.name == schema.name) {
        return Ok(call.args.clone());
    }
    if let Some(bad) = answer
        .invalid_tool_calls
        .iter()
        .find(|c| c.name.as_deref() == Some(schema.name.as_str()))
    {
        return Err(fail(
            bad.error
                .clone()
                .unwrap_or_else(|| "invalid tool call".into()),
        ));
    }
    let text = answer.text();
    let trimmed = strip_fence(&text);
    serde_json::from_str(trimmed).map_err(|err| {
        fail(format!(
            "the model neither called `{}` nor answered with JSON ({err})",
            schema.name
        ))
    })
}

/// The text inside a ```` ```json ```` fence, or the text itself.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

/// `message` with an id: its own, or a fresh `run-…` one (LangChain names
/// an answer without an id after its run).
fn with_id(mut message: AiMessage) -> AiMessage {
    if message.id.is_none() {
        message.id = Some(run_id());
    }
    message
}

fn run_id() -> String {
    format!("run-{}", stategraph_core::random_uuid())
}

/// Gives every chunk of one answer the same id (the first chunk's own, or
/// a fresh `run-…` one) and reports each chunk to `observer`.
fn report_chunks<'a, M: ChatModel + ?Sized>(
    chunks: impl Stream<Item = Result<AiMessageChunk>> + Send + 'a,
    observer: SharedObserver,
    model: &'a M,
    tags: Vec<String>,
) -> impl Stream<Item = Result<AiMessageChunk>> + Send + 'a {
    let mut id: Option<String> = None;
    chunks.map(move |chunk| {
        let mut chunk = chunk?;
        let id = id.get_or_insert_with(|| chunk.id.clone().unwrap_or_else(run_id));
        if chunk.id.is_none() {
            chunk.id = Some(id.clone());
        }
        if let Some(observer) = &observer {
            let call = ModelCall {
                model_name: model.model_name(),
                provider: model.provider_name(),
                tags: &tags,
            };
            observer.on_chunk(&call, &chunk);
        }
        Ok(chunk)
    })
}

/// The object-safe twin of [`ChatModel`], implemented for every model.
pub trait DynChatModel: Send + Sync + fmt::Debug + 'static {
    /// See [`ChatModel::model_name`].
    fn dyn_model_name(&self) -> &str;
    /// See [`ChatModel::provider_name`].
    fn dyn_provider_name(&self) -> &str;
    /// See [`ChatModel::generate`].
    fn dyn_generate<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<AiMessage>>;
    /// See [`ChatModel::generate_stream`].
    fn dyn_generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<BoxStream<'a, Result<AiMessageChunk>>>;
    /// See [`ChatModel::invoke`].
    fn dyn_invoke<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<AiMessage>>;
    /// See [`ChatModel::stream`].
    fn dyn_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> BoxStream<'a, Result<AiMessageChunk>>;
    /// See [`ChatModel::invoke_structured`].
    fn dyn_invoke_structured<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
        schema: &'a OutputSchema,
    ) -> BoxFuture<'a, Result<Json>>;
}

/// A chat model behind an `Arc`; it implements [`ChatModel`] too.
pub type SharedChatModel = Arc<dyn DynChatModel>;

impl<M: ChatModel> DynChatModel for M {
    fn dyn_model_name(&self) -> &str {
        self.model_name()
    }
    fn dyn_provider_name(&self) -> &str {
        self.provider_name()
    }
    fn dyn_generate<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<AiMessage>> {
        Box::pin(self.generate(messages, options))
    }
    fn dyn_generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<BoxStream<'a, Result<AiMessageChunk>>> {
        self.generate_stream(messages, options)
            .map(StreamExt::boxed)
    }
    fn dyn_invoke<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<AiMessage>> {
        Box::pin(self.invoke(messages, options))
    }
    fn dyn_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> BoxStream<'a, Result<AiMessageChunk>> {
        self.stream(messages, options).boxed()
    }
    fn dyn_invoke_structured<'a>(
        &'a self,
        messages: &'a [Message],
        options: &'a CallOptions,
        schema: &'a OutputSchema,
    ) -> BoxFuture<'a, Result<Json>> {
        Box::pin(self.invoke_structured(messages, options, schema))
    }
}

/// Every call goes to the model inside, so what it overrides (a bound
/// model's options, a provider's native structured output) still applies.
impl ChatModel for SharedChatModel {
    fn model_name(&self) -> &str {
        self.as_ref().dyn_model_name()
    }
    fn provider_name(&self) -> &str {
        self.as_ref().dyn_provider_name()
    }
    async fn generate(&self, messages: &[Message], options: &CallOptions) -> Result<AiMessage> {
        self.as_ref().dyn_generate(messages, options).await
    }
    fn generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a>> {
        self.as_ref().dyn_generate_stream(messages, options)
    }
    async fn invoke(&self, messages: &[Message], options: &CallOptions) -> Result<AiMessage> {
        self.as_ref().dyn_invoke(messages, options).await
    }
    fn stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a> {
        self.as_ref().dyn_stream(messages, options)
    }
    async fn invoke_structured(
        &self,
        messages: &[Message],
        options: &CallOptions,
        schema: &OutputSchema,
    ) -> Result<Json> {
        self.as_ref()
            .dyn_invoke_structured(messages, options, schema)
            .await
    }
    fn into_shared(self) -> SharedChatModel {
        self
    }
}

/// A shared model is a model (so a test can keep a handle on a scripted
/// model it hands to an agent).
impl<M: ChatModel> ChatModel for Arc<M> {
    fn model_name(&self) -> &str {
        self.as_ref().model_name()
    }
    fn provider_name(&self) -> &str {
        self.as_ref().provider_name()
    }
    fn generate(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        self.as_ref().generate(messages, options)
    }
    fn generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, M>> {
        self.as_ref().generate_stream(messages, options)
    }
    fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        self.as_ref().invoke(messages, options)
    }
    fn stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, M> {
        self.as_ref().stream(messages, options)
    }
    fn invoke_structured(
        &self,
        messages: &[Message],
        options: &CallOptions,
        schema: &OutputSchema,
    ) -> impl Future<Output = Result<Json>> + Send {
        self.as_ref().invoke_structured(messages, options, schema)
    }
}

/// A model with options bound to every call (from
/// [`ChatModel::bind_tools`] or [`ChatModel::with_options`]); per-call
/// options go on top ([`CallOptions::merged`]).
#[derive(Clone, Debug)]
pub struct BoundChatModel<M> {
    model: M,
    options: CallOptions,
}

impl<M> BoundChatModel<M> {
    /// The bound options.
    pub fn options(&self) -> &CallOptions {
        &self.options
    }

    /// The model inside.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Binds more tools.
    #[must_use]
    pub fn bind_tools(mut self, tools: impl IntoIterator<Item = ToolSchema>) -> Self {
        self.options.tools.extend(tools);
        self
    }

    /// Adds tags to every call (for example [`NOSTREAM_TAG`]).
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.options = self.options.with_tags(tags);
        self
    }
}

/// Every call goes to the model inside with the bound options merged in,
/// so the innermost model sees (and reports) the tags of both.
impl<M: ChatModel> ChatModel for BoundChatModel<M> {
    fn model_name(&self) -> &str {
        self.model.model_name()
    }
    fn provider_name(&self) -> &str {
        self.model.provider_name()
    }
    fn generate(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        let merged = self.options.under(options);
        async move { self.model.generate(messages, &merged).await }
    }
    fn generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, M>> {
        self.model
            .generate_stream(messages, &self.options.under(options))
    }
    fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        let merged = self.options.under(options);
        async move { self.model.invoke(messages, &merged).await }
    }
    fn stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a, M> {
        self.model.stream(messages, &self.options.under(options))
    }
    fn invoke_structured(
        &self,
        messages: &[Message],
        options: &CallOptions,
        schema: &OutputSchema,
    ) -> impl Future<Output = Result<Json>> + Send {
        let merged = self.options.under(options);
        async move {
            self.model
                .invoke_structured(messages, &merged, schema)
                .await
        }
    }
}

/// A model that answers with JSON fitting a schema (from
/// [`ChatModel::with_structured_output`]).
#[derive(Clone, Debug)]
pub struct StructuredChatModel<M> {
    model: M,
    schema: OutputSchema,
}

impl<M: ChatModel> StructuredChatModel<M> {
    /// The schema answers must fit.
    pub fn schema(&self) -> &OutputSchema {
        &self.schema
    }

    /// Answers with JSON fitting the schema (see
    /// [`ChatModel::invoke_structured`]).
    ///
    /// # Errors
    /// [`Error::StructuredOutput`] when the answer does not fit.
    pub async fn invoke(&self, messages: &[Message], options: &CallOptions) -> Result<Json> {
        self.model
            .invoke_structured(messages, options, &self.schema)
            .await
    }

    /// Answers with a `T` (deserialized from the JSON answer, which is how
    /// it is validated).
    ///
    /// # Errors
    /// [`Error::StructuredOutput`] naming what does not fit `T`.
    pub async fn invoke_as<T: DeserializeOwned>(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<T> {
        let value = self.invoke(messages, options).await?;
        serde_json::from_value(value).map_err(|err| Error::StructuredOutput {
            schema: self.schema.name.clone(),
            message: err.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merged_options_put_the_call_on_top() {
        let bound = CallOptions::default()
            .with_tools([
                ToolSchema::new("a", "bound a", json!({})),
                ToolSchema::new("b", "", json!({})),
            ])
            .with_tags(["x"])
            .with_stop(["END"]);
        let call = CallOptions::default()
            .with_tools([ToolSchema::new("a", "call a", json!({}))])
            .with_tags(["x", "nostream"])
            .with_tool_choice(ToolChoice::Required);
        let merged = bound.merged(&call);
        let names: Vec<_> = merged
            .tools
            .iter()
            .map(|t| t.description.as_str())
            .collect();
        assert_eq!(names, ["", "call a"]);
        assert_eq!(merged.tags, ["x", "nostream"]);
        assert!(merged.is_nostream());
        assert_eq!(merged.stop, ["END"]);
        assert_eq!(merged.tool_choice, Some(ToolChoice::Required));
    }

    #[test]
    fn output_schema_check_names_the_bad_key() {
        let schema = OutputSchema::new(
            "Joke",
            json!({"type": "object", "required": ["setup", "rating"],
                   "properties": {"setup": {"type": "string"}, "rating": {"type": "integer"}}}),
        );
        schema.check(&json!({"setup": "s", "rating": 3})).unwrap();
        let err = schema
            .check(&json!({"setup": "s"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`rating`"), "{err}");
        let err = schema
            .check(&json!({"setup": "s", "rating": "high"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected integer"), "{err}");
        assert!(schema.check(&json!([1])).is_err());
    }

    #[test]
    fn fenced_json_is_unwrapped() {
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence(" {} "), "{}");
    }

    #[test]
    fn tool_choice_serializes_in_snake_case() {
        assert_eq!(
            serde_json::to_value(ToolChoice::Auto).unwrap(),
            json!("auto")
        );
        assert_eq!(
            serde_json::to_value(ToolChoice::Tool("t".into())).unwrap(),
            json!({"tool": "t"})
        );
    }
}
