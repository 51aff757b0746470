//! `ValidationNode` inside a graph: its error paths (unknown tool, arguments
//! that are not an object, missing messages, a last message that is not an
//! AI message), a custom messages key, and checking against a tool's
//! schema.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompiledStateGraph, MessagesState, START, Schema, StateGraph};
use stategraph_llm::{AiMessage, FnTool, Message, SharedTool, ToolCall, ToolError};
use stategraph_prebuilt::{ArgSchema, ValidationNode};

use crate::support::error_json;

#[derive(serde::Deserialize, serde::Serialize, stategraph_llm::schemars::JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct Pick {
    n: u8,
}

fn node() -> ValidationNode {
    ValidationNode::new([ArgSchema::typed::<Pick>()])
}

fn wrap(node: ValidationNode) -> CompiledStateGraph {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("validate", node).unwrap();
    g.add_edge(START, "validate").unwrap();
    g.compile().unwrap()
}

fn calls(calls: &[(&str, Json)]) -> Message {
    let calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(*name, args.clone()).with_id(format!("c{i}")))
        .collect();
    AiMessage::new("").with_tool_calls(calls).into()
}

/// The answers the node added, or the run's error as `{"$error", "message"}`.
async fn run(app: &CompiledStateGraph, messages: Vec<Message>) -> Result<Vec<Message>, Json> {
    let count = messages.len();
    let out = app
        .invoke_typed::<MessagesState>(MessagesState { messages }, &RunnableConfig::default())
        .await
        .map_err(|err| error_json(&err))?
        .into_state();
    Ok(out.messages[count..].to_vec())
}

#[tokio::test]
async fn answers_every_call_in_order_without_running_anything() {
    let out = run(
        &wrap(node()),
        vec![calls(&[
            ("Pick", json!({"n": 3})),
            ("Pick", json!({"n": 300})),
        ])],
    )
    .await
    .unwrap();
    let summary: Vec<(String, String, bool)> = out
        .iter()
        .map(|m| {
            let tool = m.as_tool().unwrap();
            (
                tool.tool_call_id.clone(),
                m.text().into_owned(),
                tool.additional_kwargs.contains_key("is_error"),
            )
        })
        .collect();
    assert_eq!(summary[0], ("c0".into(), "{\"n\":3}".into(), false));
    assert_eq!(summary[1].0, "c1");
    assert!(summary[1].2);
    assert!(
        summary[1].1.starts_with(
            "1 validation error for Pick\nn\n  Input should be less than or equal to 255"
        ),
        "{}",
        summary[1].1
    );
    assert!(out.iter().all(|m| m.id().is_some()));
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_answered_as_invalid() {
    let out = run(&wrap(node()), vec![calls(&[("Pick", json!("{n: 3"))])])
        .await
        .unwrap();
    assert_eq!(
        out[0].text(),
        "1 validation error for Pick\n  Input should be a valid dictionary \
         [type=model_type, input_value='{n: 3', input_type=str]\n    \
         For further information visit https://errors.pydantic.dev/2.14/v/model_type\n\n\
         Respond after fixing all validation errors."
    );
}

#[tokio::test]
async fn an_unknown_tool_fails_the_node_with_a_key_error() {
    let err = run(&wrap(node()), vec![calls(&[("Nope", json!({}))])])
        .await
        .unwrap_err();
    assert_eq!(err["$error"], "KeyError");
    assert!(err["message"].as_str().unwrap().contains("'Nope'"), "{err}");
}

#[tokio::test]
async fn the_last_message_must_be_an_ai_message() {
    let err = run(&wrap(node()), vec![Message::human("hi")])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        json!({"$error": "ValueError", "message": "Last message is not an AIMessage"})
    );
    let err = run(&wrap(node()), Vec::new()).await.unwrap_err();
    assert_eq!(err["$error"], "ValueError");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("No message found in input"),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_messages_key_is_a_value_error() {
    let err = run(
        &wrap(node().with_messages_key("chat")),
        vec![calls(&[("Pick", json!({"n": 1}))])],
    )
    .await
    .unwrap_err();
    assert_eq!(err["$error"], "ValueError");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("No message found in input (key `chat`)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_custom_messages_key_is_read_and_written() {
    let mut g = StateGraph::new(Schema::new().append("chat"));
    g.add_node("validate", node().with_messages_key("chat"))
        .unwrap();
    g.add_edge(START, "validate").unwrap();
    let app = g.compile().unwrap();
    let input = json!({"chat": [calls(&[("Pick", json!({"n": 9}))])]});
    let out = app
        .invoke(input, &RunnableConfig::default())
        .await
        .unwrap()
        .to_json()
        .unwrap();
    assert_eq!(out["chat"][1]["content"], "{\"n\":9}");
    assert_eq!(out["chat"][1]["tool_call_id"], "c0");
}

#[tokio::test]
async fn tools_are_checked_against_their_schema() {
    let tool: SharedTool = Arc::new(FnTool::typed(
        "pick",
        "Picks a number.",
        |args: Pick, _ctx| async move {
            // Never runs: the node only validates.
            Err::<String, _>(ToolError::failed(format!("ran with {}", args.n)))
        },
    ));
    let out = run(
        &wrap(ValidationNode::new([tool])),
        vec![calls(&[("pick", json!({"n": 4})), ("pick", json!({}))])],
    )
    .await
    .unwrap();
    assert_eq!(out[0].text(), "{\"n\":4}");
    assert!(
        out[1]
            .text()
            .starts_with("1 validation error for pick\nn\n  Field required"),
        "{}",
        out[1].text()
    );
}
