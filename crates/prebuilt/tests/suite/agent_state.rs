//! `create_react_agent` over a state of one's own (LangGraph's
//! `state_schema`): tools read its keys (injected state) and write them (a
//! tool's `Command`); the state must have the keys the agent needs.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, GraphError, State};
use stategraph_llm::{
    AiMessage, FnTool, Message, OutputSchema, ScriptedChatModel, SharedTool, ToolCall, ToolContext,
    ToolError, ToolMessage, ToolOutput,
};
use stategraph_prebuilt::create_react_agent;

/// The conversation, who is asking, and the cities looked up so far.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Trip {
    #[state(reducer = stategraph_llm::add_messages)]
    messages: Vec<Message>,
    user: String,
    #[state(reducer = append)]
    visited: Vec<String>,
}

/// Greets the user named in the state and records the city it was asked
/// about, through a `Command`.
fn visit() -> SharedTool {
    Arc::new(FnTool::typed(
        "visit",
        "Visits a city.",
        |args: Json, ctx: ToolContext| async move {
            let state = ctx
                .state
                .as_ref()
                .and_then(|s| s.to_json().ok())
                .unwrap_or_default();
            let city = args["city"].as_str().unwrap_or_default().to_owned();
            let call_id = ctx.tool_call_id.clone().unwrap_or_default();
            let text = format!("{} visited {city}", state["user"].as_str().unwrap_or("?"));
            let answer: Vec<Message> = vec![ToolMessage::new(text, call_id).into()];
            let command = Command::new()
                .update("messages", Value::new(answer))
                .update("visited", Value::new(vec![city]));
            Ok::<_, ToolError>(ToolOutput::from(command))
        },
    ))
}

fn model() -> ScriptedChatModel {
    ScriptedChatModel::from_fn(|messages| {
        let id = format!("m{}", messages.len());
        match messages.last() {
            Some(Message::Human(_)) => AiMessage::new("").with_tool_calls(vec![
                ToolCall::new("visit", json!({"city": "Lisbon"})).with_id(format!("{id}-c")),
            ]),
            Some(last) => AiMessage::new(format!("ok: {}", last.text())),
            None => AiMessage::new("?"),
        }
        .with_id(id)
    })
}

#[tokio::test]
async fn tools_read_and_write_the_agents_own_state() {
    let agent = create_react_agent(model(), [visit()])
        .state::<Trip>()
        .build()
        .unwrap();
    let out = agent
        .invoke(
            json!({"messages": [["user", "go"]], "user": "ana", "visited": []}),
            &RunnableConfig::default(),
        )
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let trip: Trip = serde_json::from_value(out).unwrap();
    assert_eq!(trip.user, "ana");
    assert_eq!(trip.visited, ["Lisbon"]);
    assert_eq!(
        trip.messages.last().unwrap().text(),
        "ok: ana visited Lisbon"
    );
}

/// A state without the keys the agent needs is refused when it is built.
#[test]
fn a_state_without_the_needed_keys_is_refused() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct NoMessages {
        user: String,
    }
    let err = create_react_agent(model(), [visit()])
        .state::<NoMessages>()
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::InvalidSchema(m) if m.contains("`messages`")),
        "{err}"
    );

    let schema = OutputSchema::new("Answer", json!({"type": "object"}));
    let err = create_react_agent(model(), [visit()])
        .state::<Trip>()
        .response_format(schema)
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::InvalidSchema(m) if m.contains("`structured_response`")),
        "{err}"
    );
}

/// Tools inside a subgraph may address the parent graph: their commands are
/// merged into one, so every update lands and the parent goes on once.
#[tokio::test]
async fn tools_in_a_subgraph_can_command_the_parent() {
    use stategraph_graph::{START, StateGraph};
    use stategraph_prebuilt::ToolNode;

    let to_parent = |name: &'static str| -> SharedTool {
        Arc::new(FnTool::typed(
            name,
            "Reports upward.",
            move |_args: Json, _ctx| async move {
                let command = Command::new()
                    .update("visited", Value::new(vec![name.to_owned()]))
                    .goto("done")
                    .to_parent();
                Ok::<_, ToolError>(ToolOutput::from(command))
            },
        ))
    };
    let mut sub = StateGraph::typed::<Trip>();
    sub.add_node(
        "tools",
        ToolNode::new([to_parent("north"), to_parent("south")]),
    )
    .unwrap();
    sub.add_edge(START, "tools").unwrap();
    let sub = sub.compile().unwrap();

    let mut parent = StateGraph::typed::<Trip>();
    parent.add_node("sub", sub).unwrap();
    parent
        .add_node("done", |_s: TripView| async move {
            Ok::<_, stategraph_graph::NodeError>(TripUpdate::default().visited(vec!["done".into()]))
        })
        .unwrap();
    parent.add_edge(START, "sub").unwrap();
    let calls = AiMessage::new("").with_tool_calls(vec![
        ToolCall::new("north", json!({})).with_id("n"),
        ToolCall::new("south", json!({})).with_id("s"),
    ]);
    let input = Trip {
        messages: vec![calls.into()],
        ..Trip::default()
    };
    let out: Trip = parent
        .compile()
        .unwrap()
        .invoke_typed(input, &RunnableConfig::default())
        .await
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(out.visited, ["north", "south", "done"]);
}
