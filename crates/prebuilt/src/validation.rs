//! [`ValidationNode`]: checks the tool calls of the last AI message against
//! argument schemas, without running anything.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use stategraph_core::Value;
use stategraph_graph::{ChannelValues, IntoNode, NodeError, TaskContext};
use stategraph_llm::schemars::JsonSchema;
use stategraph_llm::{
    DynTool, Message, SharedTool, ToolCall, ToolMessage, python_repr, python_type_name, tool_schema,
};
use stategraph_pregel::{NodeFn, NodeOutput, node_future};

use crate::schema_check;

/// The pydantic version whose texts the problems reproduce: its
/// documentation links (`https://errors.pydantic.dev/2.14/v/missing`)
/// name it, as LangGraph 1.2.22's traces do.
pub const PYDANTIC_VERSION: &str = "2.14";

/// One problem found in a tool call's arguments: where, what, and, when
/// known, pydantic's error type and the input at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgIssue {
    /// The path to the argument at fault (`["items", "0", "name"]`); empty
    /// for a problem with the arguments as a whole.
    pub loc: Vec<String>,
    /// What is wrong, e.g. `Field required`.
    pub message: String,
    /// Pydantic's error type (`missing`, `value_error`, `int_type`, ...),
    /// when the problem is one pydantic reports.
    pub kind: Option<String>,
    /// The input at fault, as pydantic reports it (for a missing field,
    /// the object that lacks it); with `kind`.
    pub input: Option<Json>,
}

impl ArgIssue {
    /// A problem at `loc`.
    pub fn new(loc: Vec<String>, message: impl Into<String>) -> Self {
        Self {
            loc,
            message: message.into(),
            kind: None,
            input: None,
        }
    }

    /// The same problem with pydantic's error type and the input at fault.
    #[must_use]
    pub fn with_details(mut self, kind: impl Into<String>, input: Json) -> Self {
        self.kind = Some(kind.into());
        self.input = Some(input);
        self
    }
}

/// Why a tool call's arguments were rejected: every problem found against
/// the schema named `schema`.
///
/// Displays as pydantic's `ValidationError` (what LangGraph's model sees):
/// `1 validation error for SelectNumber`, then for each problem its
/// location (dotted) and, indented by two spaces, what is wrong; for a
/// problem of a known pydantic type, followed by
/// `[type=..., input_value=..., input_type=...]` (the input as Python's
/// `repr`, cut to its first 25 and last 24 bytes around `...` when longer
/// than 50, as pydantic cuts it) and a line
/// `    For further information visit https://errors.pydantic.dev/2.14/v/<type>`
/// ([`PYDANTIC_VERSION`]).
///
/// ```
/// use serde_json::json;
/// use stategraph_prebuilt::{ArgIssue, ValidationError};
///
/// let issue = ArgIssue::new(vec!["a".into()], "Value error, Only 37 is allowed")
///     .with_details("value_error", json!(1));
/// assert_eq!(
///     ValidationError::new("SelectNumber", vec![issue]).to_string(),
///     "1 validation error for SelectNumber\na\n  Value error, Only 37 is allowed \
///      [type=value_error, input_value=1, input_type=int]\n    \
///      For further information visit https://errors.pydantic.dev/2.14/v/value_error",
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidationError {
    /// The name of the schema (the tool's name).
    pub schema: String,
    /// The problems, at least one.
    pub issues: Vec<ArgIssue>,
}

impl ValidationError {
    /// The problems `issues` with the arguments of `schema`.
    pub fn new(schema: impl Into<String>, issues: Vec<ArgIssue>) -> Self {
        Self {
            schema: schema.into(),
            issues,
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.issues.len();
        let plural = if count == 1 { "" } else { "s" };
        write!(f, "{count} validation error{plural} for {}", self.schema)?;
        for issue in &self.issues {
            if !issue.loc.is_empty() {
                write!(f, "\n{}", issue.loc.join("."))?;
            }
            write!(f, "\n  {}", issue.message)?;
            if let (Some(kind), Some(input)) = (&issue.kind, &issue.input) {
                write!(
                    f,
                    " [type={kind}, input_value={}, input_type={}]\n    \
                     For further information visit https://errors.pydantic.dev/{PYDANTIC_VERSION}/v/{kind}",
                    truncated_repr(input),
                    python_type_name(input),
                )?;
            }
        }
        Ok(())
    }
}

/// Python's `repr` of `input`, cut as pydantic cuts it: past 50 bytes, the
/// first 25 and the last 24 (at character boundaries) around `...`.
fn truncated_repr(input: &Json) -> String {
    let repr = python_repr(input);
    if repr.len() <= 50 {
        return repr;
    }
    let mut head = 25;
    while !repr.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = repr.len() - 24;
    while !repr.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}...{}", &repr[..head], &repr[tail..])
}

impl std::error::Error for ValidationError {}

/// Turns valid arguments into the validated JSON, or lists the problems.
type Parser = Arc<dyn Fn(&Json) -> Result<Json, Vec<ArgIssue>> + Send + Sync>;

/// The schema one tool's arguments are checked against, under the tool's
/// name (LangGraph's pydantic model or tool given to `ValidationNode`).
///
/// Build it from a Rust type with [`ArgSchema::typed`] (arguments must
/// deserialize into the type and pass its checks; the validated arguments
/// are the value serialized back), from an existing tool with
/// [`ArgSchema::from_tool`], or from a JSON schema with
/// [`ArgSchema::from_json_schema`] (the validated arguments are the
/// arguments as given).
///
/// The JSON schema check covers `type`, `required`, `properties`,
/// `additionalProperties`, `items`, `enum`, `const`, numeric bounds, length
/// bounds, `anyOf`/`oneOf`/`allOf` and local `$ref`s; other keywords are
/// not checked. Unlike pydantic, nothing is coerced: `"37"` is not an
/// integer.
#[derive(Clone)]
pub struct ArgSchema {
    name: String,
    json_schema: Json,
    // `None`: the arguments, once they fit the schema, are the result.
    parser: Option<Parser>,
}

impl fmt::Debug for ArgSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgSchema")
            .field("name", &self.name)
            .field("json_schema", &self.json_schema)
            .field("typed", &self.parser.is_some())
            .finish()
    }
}

impl ArgSchema {
    /// The schema of `T`, named by `T`'s schema name (the struct's name);
    /// add checks and rename it on the returned [`TypedArgSchema`].
    pub fn typed<T>() -> TypedArgSchema<T>
    where
        T: DeserializeOwned + Serialize + JsonSchema + 'static,
    {
        TypedArgSchema {
            name: T::schema_name().into_owned(),
            checks: Vec::new(),
            _args: PhantomData,
        }
    }

    /// The model-visible argument schema of `tool` (injected arguments
    /// left out: the model never gives them), named by the tool's name.
    pub fn from_tool(tool: &dyn DynTool) -> Self {
        Self::from_json_schema(tool.dyn_name(), tool.dyn_schema().parameters)
    }

    /// A JSON schema, under the tool name `name`.
    pub fn from_json_schema(name: impl Into<String>, schema: Json) -> Self {
        Self {
            name: name.into(),
            json_schema: schema,
            parser: None,
        }
    }

    /// The tool name this schema checks calls of.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON schema the arguments are checked against.
    pub fn json_schema(&self) -> &Json {
        &self.json_schema
    }

    /// Checks `args`; returns the validated arguments.
    ///
    /// # Errors
    /// [`ValidationError`] listing every problem the JSON schema check
    /// finds; for a typed schema, else the deserialization error, else
    /// every failing check.
    pub fn validate(&self, args: &Json) -> Result<Json, ValidationError> {
        let issues = schema_check::check(&self.json_schema, args);
        if !issues.is_empty() {
            return Err(ValidationError::new(&self.name, issues));
        }
        match &self.parser {
            Some(parse) => parse(args).map_err(|issues| ValidationError::new(&self.name, issues)),
            None => Ok(args.clone()),
        }
    }
}

impl From<SharedTool> for ArgSchema {
    fn from(tool: SharedTool) -> Self {
        Self::from_tool(tool.as_ref())
    }
}

impl From<&SharedTool> for ArgSchema {
    fn from(tool: &SharedTool) -> Self {
        Self::from_tool(tool.as_ref())
    }
}

/// A check of typed arguments: `Err` holds what is wrong.
type Check<T> = Arc<dyn Fn(&T) -> Result<(), String> + Send + Sync>;

/// An [`ArgSchema`] from the Rust type `T` being built: add checks
/// (pydantic's validators), then convert it with `.into()` (or pass it
/// where an `impl Into<ArgSchema>` is taken).
///
/// A failing check is reported as `Value error, {message}`, at the field it
/// names ([`check_field`](Self::check_field)) or for the whole arguments
/// ([`check`](Self::check)); every check runs, so all problems are listed.
pub struct TypedArgSchema<T> {
    name: String,
    // Each check with the field it reports at (empty: the whole arguments).
    checks: Vec<(Vec<String>, Check<T>)>,
    _args: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for TypedArgSchema<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedArgSchema")
            .field("name", &self.name)
            .field("checks", &self.checks.len())
            .finish()
    }
}

impl<T> TypedArgSchema<T>
where
    T: DeserializeOwned + Serialize + JsonSchema + 'static,
{
    /// Checks calls of the tool `name` instead of `T`'s schema name.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds a check of the whole arguments (pydantic's model validator).
    #[must_use]
    pub fn check(
        mut self,
        check: impl Fn(&T) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push((Vec::new(), Arc::new(check)));
        self
    }

    /// Adds a check reported at the argument `field` (pydantic's field
    /// validator).
    #[must_use]
    pub fn check_field(
        mut self,
        field: impl Into<String>,
        check: impl Fn(&T) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push((vec![field.into()], Arc::new(check)));
        self
    }
}

impl<T> From<TypedArgSchema<T>> for ArgSchema
where
    T: DeserializeOwned + Serialize + JsonSchema + 'static,
{
    fn from(typed: TypedArgSchema<T>) -> Self {
        let checks = typed.checks;
        let parser = move |args: &Json| -> Result<Json, Vec<ArgIssue>> {
            let value = T::deserialize(args)
                .map_err(|err| vec![ArgIssue::new(Vec::new(), err.to_string())])?;
            let issues: Vec<ArgIssue> = checks
                .iter()
                .filter_map(|(loc, check)| {
                    check(&value).err().map(|message| {
                        // Pydantic's input for a field validator: the field's value.
                        let input = loc
                            .iter()
                            .try_fold(args, |at, key| match at {
                                Json::Array(items) => {
                                    key.parse::<usize>().ok().and_then(|i| items.get(i))
                                }
                                other => other.get(key),
                            })
                            .unwrap_or(args)
                            .clone();
                        ArgIssue::new(loc.clone(), format!("Value error, {message}"))
                            .with_details("value_error", input)
                    })
                })
                .collect();
            if !issues.is_empty() {
                return Err(issues);
            }
            serde_json::to_value(&value).map_err(|err| {
                vec![ArgIssue::new(
                    Vec::new(),
                    format!("the validated arguments cannot be serialized: {err}"),
                )]
            })
        };
        Self {
            name: typed.name,
            json_schema: tool_schema::<T>(),
            parser: Some(Arc::new(parser)),
        }
    }
}

/// The text a rejected call is answered with (LangGraph's `format_error`).
pub type ErrorFormatter = Arc<dyn Fn(&ValidationError, &ToolCall) -> String + Send + Sync>;

/// Checks every tool call of the last AI message of the state's messages
/// against the schema of the tool it names, without running anything
/// (LangGraph's `ValidationNode`), and answers each with a tool message, in
/// call order:
///
/// - valid arguments: the validated arguments as compact JSON;
/// - invalid ones: the [`ErrorFormatter`]'s text (by default the
///   [`ValidationError`], a blank line, and `Respond after fixing all
///   validation errors.`), with `additional_kwargs.is_error = true` (the
///   status stays `success`, as in LangGraph).
///
/// Useful for extraction: the model answers by "calling" a schema, and the
/// graph loops back to the model while a message has `is_error`.
///
/// The input is the state (messages at the `messages` key, see
/// [`with_messages_key`](Self::with_messages_key)) or the message list
/// itself; the answers are written at the messages key, each with a fresh
/// id.
///
/// # Errors
/// The node fails with `ValueError` when there are no messages or the last
/// one is not an AI message, and with `KeyError` when a call names a tool
/// that has no schema (LangGraph raises there too).
///
/// # Example
/// ```
/// use serde_json::json;
/// use stategraph_graph::{MessagesState, StateGraph, START};
/// use stategraph_llm::{AiMessage, ToolCall, schemars::JsonSchema};
/// use stategraph_prebuilt::{ArgSchema, ValidationNode};
///
/// #[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
/// #[schemars(crate = "stategraph_llm::schemars")]
/// struct SelectNumber {
///     a: i64,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let schema = ArgSchema::typed::<SelectNumber>().check_field("a", |args| {
///     if args.a == 37 { Ok(()) } else { Err("Only 37 is allowed".into()) }
/// });
/// let mut graph = StateGraph::typed::<MessagesState>();
/// graph.add_node("validate", ValidationNode::new([schema]))?;
/// graph.add_edge(START, "validate")?;
/// let call = AiMessage::new("").with_tool_calls(vec![
///     ToolCall::new("SelectNumber", json!({"a": 37})).with_id("ok"),
///     ToolCall::new("SelectNumber", json!({"a": 1})).with_id("bad"),
/// ]);
/// let input = MessagesState { messages: vec![call.into()] };
/// let out = graph.compile()?.invoke_typed::<MessagesState>(input, &Default::default()).await?.done()?;
/// assert_eq!(out.messages[1].text(), r#"{"a":37}"#);
/// let rejected = out.messages[2].as_tool().unwrap();
/// assert_eq!(rejected.additional_kwargs["is_error"], true);
/// assert!(rejected.content.text().starts_with("1 validation error for SelectNumber\na\n  Value error, Only 37 is allowed"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ValidationNode {
    schemas: Arc<[ArgSchema]>,
    messages_key: String,
    format_error: ErrorFormatter,
}

impl fmt::Debug for ValidationNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValidationNode")
            .field("schemas", &self.schemas)
            .field("messages_key", &self.messages_key)
            .finish_non_exhaustive()
    }
}

/// The text LangGraph's default `format_error` puts after the error.
const RESPOND_AFTER_FIXING: &str = "Respond after fixing all validation errors.";

impl ValidationNode {
    /// A node checking calls against `schemas` (when two have the same
    /// name, the last one counts, as in LangGraph), reading the `messages`
    /// key.
    pub fn new<S: Into<ArgSchema>>(schemas: impl IntoIterator<Item = S>) -> Self {
        Self {
            schemas: schemas.into_iter().map(Into::into).collect(),
            messages_key: "messages".to_owned(),
            format_error: Arc::new(default_format_error),
        }
    }

    /// Reads and writes messages at `key` instead of `messages`.
    #[must_use]
    pub fn with_messages_key(mut self, key: impl Into<String>) -> Self {
        self.messages_key = key.into();
        self
    }

    /// Sets the text a rejected call is answered with.
    #[must_use]
    pub fn with_format_error(
        mut self,
        format_error: impl Fn(&ValidationError, &ToolCall) -> String + Send + Sync + 'static,
    ) -> Self {
        self.format_error = Arc::new(format_error);
        self
    }

    /// The schemas.
    pub fn schemas(&self) -> &[ArgSchema] {
        &self.schemas
    }

    /// The tool message answering `call`: the validated arguments, or the
    /// formatted error with `additional_kwargs.is_error = true`.
    ///
    /// # Errors
    /// A `KeyError` [`NodeError`] when no schema has the call's name.
    pub fn validate_call(&self, call: &ToolCall) -> Result<ToolMessage, NodeError> {
        let Some(schema) = self.schemas.iter().rev().find(|s| s.name == call.name) else {
            let known: Vec<&str> = self.schemas.iter().map(ArgSchema::name).collect();
            return Err(NodeError::new(
                "KeyError",
                format!(
                    "no schema for tool '{}' (known: {})",
                    call.name,
                    known.join(", ")
                ),
            ));
        };
        let id = call.id.clone().unwrap_or_default();
        let mut message = match schema.validate(&call.args) {
            Ok(valid) => ToolMessage::new(valid.to_string(), id),
            Err(error) => {
                let mut message = ToolMessage::new((self.format_error)(&error, call), id);
                message
                    .additional_kwargs
                    .insert("is_error".to_owned(), Json::Bool(true));
                message
            }
        };
        message.name = Some(call.name.clone());
        Ok(message)
    }

    async fn run(&self, input: Value) -> Result<NodeOutput, NodeError> {
        let messages = crate::tool_node::messages_of(&input, &self.messages_key)?;
        let last = match messages.last() {
            Some(Message::Ai(last)) => last,
            Some(_) => {
                return Err(NodeError::new(
                    "ValueError",
                    "Last message is not an AIMessage",
                ));
            }
            None => {
                return Err(NodeError::new(
                    "ValueError",
                    format!("No message found in input (key `{}`)", self.messages_key),
                ));
            }
        };
        let answers = last
            .tool_calls
            .iter()
            .map(|call| {
                let mut answer = Message::from(self.validate_call(call)?);
                // The id `add_messages` would give it, given before the
                // update is shared with the stream (as `ToolNode` does).
                answer.set_id(stategraph_core::random_uuid());
                Ok(answer)
            })
            .collect::<Result<Vec<_>, NodeError>>()?;
        let update = ChannelValues::single(&self.messages_key, Value::new(answers));
        Ok(NodeOutput::Value(Value::new(update)))
    }
}

/// LangGraph's default: the error, a blank line, and the request to fix it.
fn default_format_error(error: &ValidationError, _call: &ToolCall) -> String {
    format!("{error}\n\n{RESPOND_AFTER_FIXING}")
}

impl IntoNode<ValidationNode> for ValidationNode {
    fn into_node_fn(self) -> NodeFn {
        let node = Arc::new(self);
        Arc::new(move |input: Value, _ctx: &TaskContext| {
            let node = node.clone();
            node_future(async move { node.run(input).await })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stategraph_llm::FnTool;

    use super::*;

    #[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
    #[schemars(crate = "stategraph_llm::schemars")]
    struct SelectNumber {
        a: i64,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn select_number() -> ArgSchema {
        ArgSchema::typed::<SelectNumber>()
            .check_field("a", |args| {
                if args.a == 37 {
                    Ok(())
                } else {
                    Err("Only 37 is allowed".into())
                }
            })
            .into()
    }

    fn call(name: &str, args: Json) -> ToolCall {
        ToolCall::new(name, args).with_id("c1")
    }

    #[test]
    fn typed_schemas_return_the_value_serialized_back() {
        let schema = select_number();
        assert_eq!(schema.name(), "SelectNumber");
        assert_eq!(
            schema.validate(&json!({"a": 37})).unwrap(),
            json!({"a": 37, "tags": []})
        );
        let err = schema.validate(&json!({"a": 1})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "1 validation error for SelectNumber\na\n  Value error, Only 37 is allowed \
             [type=value_error, input_value=1, input_type=int]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/value_error"
        );
    }

    #[test]
    fn schema_problems_are_all_listed_before_checks_run() {
        let err = select_number()
            .validate(&json!({"tags": [1, "x", 2]}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "3 validation errors for SelectNumber\na\n  Field required \
             [type=missing, input_value={'tags': [1, 'x', 2]}, input_type=dict]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/missing\n\
             tags.0\n  Input should be a valid string \
             [type=string_type, input_value=1, input_type=int]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/string_type\n\
             tags.2\n  Input should be a valid string \
             [type=string_type, input_value=2, input_type=int]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/string_type"
        );
        let err = select_number().validate(&json!("{\"a\": 37}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "1 validation error for SelectNumber\n  Input should be a valid dictionary \
             [type=model_type, input_value='{\"a\": 37}', input_type=str]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/model_type"
        );
    }

    #[test]
    fn whole_argument_checks_have_no_location() {
        let schema: ArgSchema = ArgSchema::typed::<SelectNumber>()
            .named("pick")
            .check(|args| {
                if args.tags.len() < 2 {
                    Ok(())
                } else {
                    Err("too many tags".into())
                }
            })
            .into();
        assert_eq!(schema.name(), "pick");
        let err = schema
            .validate(&json!({"a": 1, "tags": ["x", "y"]}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "1 validation error for pick\n  Value error, too many tags \
             [type=value_error, input_value={'a': 1, 'tags': ['x', 'y']}, input_type=dict]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/value_error"
        );
    }

    #[test]
    fn tools_are_checked_against_their_model_visible_schema() {
        let tool: SharedTool =
            Arc::new(
                FnTool::typed(
                    "note",
                    "Takes a note.",
                    |_args: SelectNumber, _ctx| async move {
                        Ok::<_, stategraph_llm::ToolError>("noted")
                    },
                )
                .inject("tags", stategraph_llm::Injected::StateKey("tags".into())),
            );
        let schema = ArgSchema::from(&tool);
        assert_eq!(schema.name(), "note");
        assert!(schema.json_schema()["properties"].get("tags").is_none());
        // The arguments come back as given: the tool is not run.
        assert_eq!(schema.validate(&json!({"a": 2})).unwrap(), json!({"a": 2}));
        let err = schema.validate(&json!({"a": "2"})).unwrap_err();
        assert_eq!(
            err.issues,
            [
                ArgIssue::new(vec!["a".into()], "Input should be a valid integer")
                    .with_details("int_type", json!("2"))
            ]
        );
    }

    #[test]
    fn calls_are_answered_with_the_value_or_a_flagged_error() {
        let node = ValidationNode::new([select_number()]);
        let ok = node
            .validate_call(&call("SelectNumber", json!({"a": 37})))
            .unwrap();
        assert_eq!(ok.content.text(), "{\"a\":37,\"tags\":[]}");
        assert_eq!(ok.name.as_deref(), Some("SelectNumber"));
        assert_eq!(ok.tool_call_id, "c1");
        assert!(ok.additional_kwargs.is_empty());
        let bad = node
            .validate_call(&call("SelectNumber", json!({"a": 1})))
            .unwrap();
        assert_eq!(
            bad.content.text(),
            "1 validation error for SelectNumber\na\n  Value error, Only 37 is allowed \
             [type=value_error, input_value=1, input_type=int]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/value_error\n\n\
             Respond after fixing all validation errors."
        );
        assert_eq!(bad.additional_kwargs["is_error"], json!(true));
        assert_eq!(bad.status, stategraph_llm::ToolStatus::Success);
    }

    #[test]
    fn the_error_text_is_pluggable() {
        let node = ValidationNode::new([select_number()]).with_format_error(|error, call| {
            format!("{} failed: {}", call.name, error.issues.len())
        });
        let bad = node
            .validate_call(&call("SelectNumber", json!({})))
            .unwrap();
        assert_eq!(bad.content.text(), "SelectNumber failed: 1");
    }

    #[test]
    fn unknown_tools_are_a_key_error() {
        let node = ValidationNode::new([select_number()]);
        let err = node.validate_call(&call("Nope", json!({}))).unwrap_err();
        assert_eq!(err.class(), "KeyError");
        assert!(err.message().contains("'Nope'"), "{}", err.message());
    }

    #[test]
    fn the_last_schema_of_a_name_counts() {
        let loose = ArgSchema::from_json_schema("SelectNumber", json!({"type": "object"}));
        let node = ValidationNode::new([loose, select_number()]);
        let bad = node
            .validate_call(&call("SelectNumber", json!({"a": 1})))
            .unwrap();
        assert!(bad.additional_kwargs.contains_key("is_error"));
    }
}
