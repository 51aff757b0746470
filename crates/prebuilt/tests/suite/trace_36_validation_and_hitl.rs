//! Golden trace 36: `ValidationNode` and the agent-inbox human-review
//! convention (`HumanInterrupt` / `HumanResponse`).
//!
//! Compared exactly (after id normalisation, README "Placeholders"):
//! - `validation_updates`: the one `updates` chunk of a graph whose only
//!   node validates two calls of `SelectNumber` (one valid, one rejected by
//!   the "Only 37 is allowed" check): message classes, ids (`<uuid:N>`),
//!   names, call ids, the valid call's content `{"a":37}` and the rejected
//!   call's `additional_kwargs.is_error`;
//! - `hitl_run1`: the interrupt chunk, whose value is the `HumanInterrupt`
//!   list in LangGraph's JSON shape, with its `<interrupt:N>` id;
//! - `hitl_run2`: the resumed node's update after answering with an `edit`
//!   `HumanResponse` (the node formats the answer's args as Python's `str`
//!   of a dict, as the case script does).
//!
//! The rejected call's content is compared exactly too, pydantic's
//! per-problem details included: `[type=value_error, input_value=1,
//! input_type=int]` and the `For further information visit
//! https://errors.pydantic.dev/2.14/v/value_error` line (see
//! `ValidationError`'s rendering and `PYDANTIC_VERSION`).

use serde_json::{Value as Json, json};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, MessagesState, MessagesStateUpdate, MessagesStateView, NodeError,
    START, StateGraph, StreamMode, TaskContext,
};
use stategraph_llm::{AiMessage, Message, ToolCall};
use stategraph_prebuilt::{
    ActionRequest, ArgSchema, HumanInterrupt, HumanInterruptConfig, HumanResponse, ValidationNode,
    request_human_review,
};

use crate::support::{assert_trace_ids, fixture, py_interrupts, py_messages, py_str, stream_ok};

fn expected(key: &str) -> Json {
    fixture("36_validation_and_hitl")[key].clone()
}

/// The case's pydantic model, as a Rust type plus its field check.
#[derive(serde::Deserialize, serde::Serialize, stategraph_llm::schemars::JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct SelectNumber {
    a: i64,
}

fn select_number() -> ArgSchema {
    ArgSchema::typed::<SelectNumber>()
        .check_field("a", |args| {
            if args.a == 37 {
                Ok(())
            } else {
                Err("Only 37 is allowed".to_owned())
            }
        })
        .into()
}

#[tokio::test]
async fn trace_36_validation_node_updates() {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("validate", ValidationNode::new([select_number()]))
        .unwrap();
    g.add_edge(START, "validate").unwrap();
    let app = g.compile().unwrap();
    let call = AiMessage::new("")
        .with_tool_calls(vec![
            ToolCall::new("SelectNumber", json!({"a": 37})).with_id("ok-call"),
            ToolCall::new("SelectNumber", json!({"a": 1})).with_id("bad-call"),
        ])
        .with_id("ai-1");
    let input = MessagesState {
        messages: vec![call.into()],
    };
    let streamed = stream_ok(
        &app,
        serde_json::to_value(input).unwrap(),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    let ours = py_messages(&streamed.payloads());
    assert_trace_ids(&ours, &expected("validation_updates"));
}

/// The case's `review` node: one request for review, answered by a list of
/// responses, the first one reported in an AI message.
async fn review(
    _state: MessagesStateView,
    ctx: TaskContext,
) -> Result<MessagesStateUpdate, NodeError> {
    let args = json!({"to": "x@y.z"}).as_object().unwrap().clone();
    let request = HumanInterrupt::new(
        ActionRequest::new("send_email", args),
        HumanInterruptConfig::all(),
    )
    .with_description("Please review");
    let responses = request_human_review(&ctx, vec![request])?;
    let response = responses
        .first()
        .ok_or_else(|| NodeError::new("IndexError", "list index out of range"))?;
    let json = serde_json::to_value(response)?;
    let text = format!("human said {}: {}", response.kind(), py_str(&json["args"]));
    let reply = AiMessage::new(text).with_id("ai-review");
    Ok(MessagesStateUpdate::default().messages(vec![Message::from(reply)]))
}

#[tokio::test]
async fn trace_36_human_interrupt_and_response() {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("review", review).unwrap();
    g.add_edge(START, "review").unwrap();
    let app = g
        .compile_with(
            CompileOptions::new().checkpointer(stategraph_checkpoint::InMemorySaver::new()),
        )
        .unwrap();
    let cfg = RunnableConfig::thread("inbox");
    let first = stream_ok(&app, json!({"messages": []}), &cfg, StreamMode::Updates).await;
    assert_trace_ids(&py_interrupts(&first.payloads()), &expected("hitl_run1"));

    let answer = HumanResponse::Edit(ActionRequest::new(
        "send_email",
        json!({"to": "z@z"}).as_object().unwrap().clone(),
    ));
    // The answer as the case sends it: a list of responses, in JSON.
    let resume = json!([answer]);
    assert_eq!(
        resume,
        json!([{"type": "edit", "args": {"action": "send_email", "args": {"to": "z@z"}}}])
    );
    let second = stream_ok(
        &app,
        Command::new().resume(Value::from_json(resume)),
        &cfg,
        StreamMode::Updates,
    )
    .await;
    assert_trace_ids(&py_messages(&second.payloads()), &expected("hitl_run2"));
}

/// The interrupt value is the `HumanInterrupt` list and reads back as one.
#[test]
fn trace_36_interrupt_value_reads_as_human_interrupts() {
    let recorded = &expected("hitl_run1")[0]["__interrupt__"][0]["$interrupt"]["value"];
    let requests: Vec<HumanInterrupt> = serde_json::from_value(recorded.clone()).unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].action_request.action, "send_email");
    assert_eq!(requests[0].config, HumanInterruptConfig::all());
    assert_eq!(requests[0].description.as_deref(), Some("Please review"));
    assert_eq!(serde_json::to_value(&requests).unwrap(), *recorded);
}
