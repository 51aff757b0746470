//! `#[tool]`: the `Tool` impls it generates, exercised through
//! stategraph-llm's `Tool` trait.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fmt;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_core::Value;
use stategraph_llm::{
    Content, Injected, InjectedArg, SharedTool, Tool, ToolCall, ToolContext, ToolError,
    run_tool_call,
};
use stategraph_macros::tool;

/// Adds two numbers.
///
/// Longer text here is part of the description too.
#[tool]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

#[test]
fn name_description_and_schema_come_from_the_function() {
    assert_eq!(AddTool.name(), "add");
    assert_eq!(
        AddTool.description(),
        "Adds two numbers.\n\nLonger text here is part of the description too."
    );
    assert!(!AddTool.return_direct());
    assert!(AddTool.injected_args().is_empty());
    let schema = AddTool.args_schema();
    assert_eq!(
        schema,
        json!({
            "title": "add",
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "int64", "description": "The first number.", "title": "A"},
                "b": {"type": "integer", "format": "int64", "description": "The second number.", "title": "B"},
            },
            "required": ["a", "b"],
        })
    );
    let visible = AddTool.schema();
    assert_eq!(visible.name, "add");
    assert_eq!(visible.parameters, schema);
}

#[tokio::test]
async fn calls_await_the_function_and_bad_arguments_are_invalid_args() {
    let out = AddTool
        .call(
            json!({"a": 2, "b": 3, "extra": true}),
            ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.content.text(), "5");
    assert_eq!(add(2, 3).await.unwrap(), "5");

    let cases = [
        (
            json!({"a": "two", "b": 3}),
            "`a`: invalid type: string \"two\", expected i64",
        ),
        (json!({"a": 2}), "missing field `b`"),
        (
            json!({"a": 2, "b": null}),
            "`b`: invalid type: null, expected i64",
        ),
        (json!(null), "missing field `a`"),
        (json!([1, 2]), "arguments must be a JSON object, got"),
    ];
    for (args, expected) in cases {
        let err = AddTool
            .call(args.clone(), ToolContext::default())
            .await
            .unwrap_err();
        assert!(err.is_invalid_args(), "{args}: {err}");
        assert!(err.to_string().contains(expected), "{args}: {err}");
    }
}

/// Searches the notes.
#[tool]
async fn search(
    /// What to look for.
    query: String,
    /// How many notes at most.
    limit: Option<u32>,
    r#type: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{query} {limit:?} {type:?}"))
}

#[tokio::test]
async fn option_arguments_are_optional() {
    let schema = SearchTool.args_schema();
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(
        schema["properties"]["limit"]["description"],
        "How many notes at most."
    );
    assert!(schema["properties"].get("type").is_some(), "{schema}");

    let ctx = ToolContext::default;
    let out = SearchTool.call(json!({"query": "x"}), ctx()).await.unwrap();
    assert_eq!(out.content.text(), "x None None");
    let out = SearchTool
        .call(json!({"query": "x", "limit": 3, "type": "memo"}), ctx())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "x Some(3) Some(\"memo\")");
    let err = SearchTool
        .call(json!({"query": "x", "limit": -1}), ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`limit`"), "{err}");
}

/// A marker the caller hands to tools through the context.
#[derive(Debug)]
struct Greeting(&'static str);

/// Remembers a fact for the user.
#[tool]
async fn remember(
    /// The fact.
    fact: String,
    #[inject(state = "user")] user: String,
    #[inject(tool_call_id)] call_id: String,
    #[inject(state)] state: Json,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let greeting = ctx.get::<Greeting>().map_or("?", |g| g.0);
    Ok(format!(
        "{greeting} {user}: {fact} ({call_id}, {} keys)",
        state.as_object().map_or(0, |s| s.len())
    ))
}

#[tokio::test]
async fn injected_arguments_and_the_context_are_hidden_and_filled() {
    assert_eq!(
        RememberTool.injected_args(),
        [
            InjectedArg::new("user", Injected::StateKey("user".into())),
            InjectedArg::new("call_id", Injected::ToolCallId),
            InjectedArg::new("state", Injected::State),
        ]
    );
    let full = RememberTool.args_schema();
    assert_eq!(
        full["required"],
        json!(["fact", "user", "call_id", "state"])
    );
    assert_eq!(
        RememberTool.schema().parameters,
        json!({
            "title": "remember",
            "type": "object",
            "properties": {"fact": {"type": "string", "description": "The fact.", "title": "Fact"}},
            "required": ["fact"],
        })
    );

    let ctx = ToolContext::default()
        .with_tool_call_id("c1")
        .with_state(Value::from_json(json!({"user": "ann", "messages": []})))
        .with_extension(Arc::new(Greeting("hello")));
    // What the model puts in an injected argument is overwritten.
    let out = RememberTool
        .call(json!({"fact": "sky is blue", "user": "mallory"}), ctx)
        .await
        .unwrap();
    assert_eq!(out.content.text(), "hello ann: sky is blue (c1, 2 keys)");

    let err = RememberTool
        .call(
            json!({"fact": "f"}),
            ToolContext::default().with_tool_call_id("c2"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::MissingInjection { field, .. } if field == "user"),
        "{err}"
    );
}

/// Ignored: the option wins.
#[tool(name = "shout", description = "Says it loudly.", return_direct)]
async fn loud(text: String) -> String {
    text.to_uppercase()
}

/// Echoes the arguments as JSON.
#[tool]
async fn echo(#[inject(tool_call_id)] id: String) -> Json {
    json!({"id": id})
}

#[tokio::test]
async fn options_rename_describe_and_return_direct() {
    assert_eq!(LoudTool.name(), "shout");
    assert_eq!(LoudTool.description(), "Says it loudly.");
    assert!(LoudTool.return_direct());
    assert_eq!(LoudTool.args_schema()["title"], "shout");
    let out = LoudTool
        .call(json!({"text": "hi"}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content, Content::from("HI"));

    // Infallible tools with no model arguments still check the arguments.
    let ctx = ToolContext::default().with_tool_call_id("c9");
    assert_eq!(EchoTool.schema().parameters["properties"], json!({}));
    let out = EchoTool.call(Json::Null, ctx.clone()).await.unwrap();
    assert_eq!(out.content.text(), r#"{"id":"c9"}"#);
    let err = EchoTool.call(json!("x"), ctx).await.unwrap_err();
    assert!(err.is_invalid_args(), "{err}");
}

/// A tool's own error type.
#[derive(Debug)]
struct Overdrawn(u32);

impl fmt::Display for Overdrawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "overdrawn by {}", self.0)
    }
}

impl std::error::Error for Overdrawn {}

impl From<Overdrawn> for ToolError {
    fn from(err: Overdrawn) -> Self {
        ToolError::from_source(err)
    }
}

/// Withdraws money.
#[tool]
async fn withdraw(amount: u32) -> Result<&'static str, Overdrawn> {
    if amount > 10 {
        return Err(Overdrawn(amount - 10));
    }
    Ok("done")
}

#[tokio::test]
async fn errors_convert_into_tool_errors() {
    let ctx = ToolContext::default;
    let out = WithdrawTool
        .call(json!({"amount": 5}), ctx())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "done");
    let err = WithdrawTool
        .call(json!({"amount": 12}), ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err}");
    assert_eq!(err.to_string(), "overdrawn by 2");
}

#[tokio::test]
async fn tools_are_shared_and_run_from_tool_calls() {
    let tools: Vec<SharedTool> = vec![Arc::new(AddTool), Arc::new(RememberTool)];
    assert_eq!(tools[1].schema().parameters["required"], json!(["fact"]));

    let call = ToolCall::new("add", json!({"a": 1, "b": 2})).with_id("c1");
    let message = run_tool_call(&tools, &call, ToolContext::default())
        .await
        .unwrap();
    assert_eq!(message.tool_call_id, "c1");
    assert_eq!(message.name.as_deref(), Some("add"));
    assert_eq!(message.content.text(), "3");

    // The call's id reaches the injected argument.
    let call = ToolCall::new("remember", json!({"fact": "f"})).with_id("c7");
    let ctx = ToolContext::default().with_state(Value::from_json(json!({"user": "bo"})));
    let message = run_tool_call(&tools, &call, ctx).await.unwrap();
    assert_eq!(message.content.text(), "? bo: f (c7, 1 keys)");
}

/// The llm crate reached through a re-export, as a facade would.
mod facade {
    pub(crate) use stategraph_llm::*;
}

mod tools {
    /// Multiplies two numbers.
    #[stategraph_macros::tool(crate = "crate::facade")]
    pub(crate) async fn multiply(a: i64, b: i64) -> String {
        (a * b).to_string()
    }
}

#[tokio::test]
async fn the_crate_path_and_visibility_are_the_callers() {
    // `pub(crate) fn` gives a `pub(crate) struct`, reachable from outside
    // its module.
    let tool = tools::MultiplyTool;
    assert_eq!(tool.name(), "multiply");
    let out = tool
        .call(json!({"a": 4, "b": 5}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "20");
}

#[tokio::test]
async fn tools_can_be_local_items() {
    /// Negates a number.
    #[tool]
    async fn negate(x: i64) -> String {
        (-x).to_string()
    }
    let out = NegateTool
        .call(json!({"x": 4}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "-4");
    assert_eq!(negate(1).await, "-1");
}

/// A forecast: any `Serialize` type is a tool's output, as its JSON.
#[derive(serde::Serialize)]
struct Forecast {
    city: String,
    high: i32,
}

/// Forecasts the weather.
#[tool]
async fn forecast(
    /// The city.
    city: String,
) -> Result<Forecast, ToolError> {
    Ok(Forecast { city, high: 21 })
}

/// Lists numbers up to `n`.
#[tool]
async fn count_to(
    /// The last number.
    n: u32,
) -> Vec<u32> {
    (1..=n).collect()
}

#[tokio::test]
async fn any_serialize_output_is_its_json_and_text_stays_text() {
    let out = ForecastTool
        .call(json!({"city": "Oslo"}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content.text(), r#"{"city":"Oslo","high":21}"#);
    let out = CountToTool
        .call(json!({"n": 3}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "[1,2,3]");
    // A `String` (which is `Serialize` too) is still its text, not a JSON string.
    let out = AddTool
        .call(json!({"a": 1, "b": 1}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.content.text(), "2");
}
