//! Golden trace 03: the `add_messages` reducer (append, replace by id in
//! place, `RemoveMessage`, `REMOVE_ALL_MESSAGES`, coercion from tuples, dicts
//! and strings, generated uuid4 ids, repeated ids on the right) compared with
//! `fixtures/traces/03_add_messages.json`.
//!
//! The two `MessagesState` graph observations need `stategraph-graph`, which
//! this crate may not depend on (it sits on a lower layer). They are replayed
//! here at the reducer level (the input folded into an empty list, then the
//! node's update folded in); the graph itself (a real `StateGraph` over
//! `MessagesState`) runs in `stategraph-graph`'s `trace_03_messages_state`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value as Json, json};
use stategraph_llm::{
    AiMessage, Error, Message, ToolMessage, ToolStatus, add_messages, convert_to_messages,
    try_add_messages,
};

fn fixture(key: &str) -> Json {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/03_add_messages.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut all: Json = serde_json::from_str(&text).unwrap();
    all[key].take()
}

/// A message in the traces' encoding: `{"$msg": Class, "content", "id", <other
/// fields only when non-empty>}` (status only when not "success").
fn encode(message: &Message) -> Json {
    let mut out = Map::new();
    out.insert("$msg".into(), json!(message.class_name()));
    out.insert(
        "content".into(),
        serde_json::to_value(message.content()).unwrap(),
    );
    out.insert("id".into(), json!(message.id()));
    if let Some(name) = message.name() {
        out.insert("name".into(), json!(name));
    }
    match message {
        Message::Ai(ai) => {
            if !ai.tool_calls.is_empty() {
                out.insert(
                    "tool_calls".into(),
                    serde_json::to_value(&ai.tool_calls).unwrap(),
                );
            }
            if !ai.invalid_tool_calls.is_empty() {
                out.insert(
                    "invalid_tool_calls".into(),
                    serde_json::to_value(&ai.invalid_tool_calls).unwrap(),
                );
            }
            if let Some(usage) = &ai.usage_metadata {
                out.insert(
                    "usage_metadata".into(),
                    serde_json::to_value(usage).unwrap(),
                );
            }
        }
        Message::Tool(tool) => {
            out.insert("tool_call_id".into(), json!(tool.tool_call_id));
            if tool.status != ToolStatus::Success {
                out.insert("status".into(), serde_json::to_value(tool.status).unwrap());
            }
        }
        _ => {}
    }
    Json::Object(out)
}

fn encode_all(messages: &[Message]) -> Json {
    Json::Array(messages.iter().map(encode).collect())
}

/// Replaces every uuid (also inside longer strings such as `ai-<uuid>`) by
/// `<uuid:N>`, numbered by first appearance, as the trace recorder does.
fn normalise(value: &Json, seen: &mut HashMap<String, usize>) -> Json {
    match value {
        Json::String(text) => Json::String(replace_uuids(text, seen)),
        Json::Array(items) => Json::Array(items.iter().map(|v| normalise(v, seen)).collect()),
        Json::Object(map) => Json::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalise(v, seen)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn replace_uuids(text: &str, seen: &mut HashMap<String, usize>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let found = (0..rest.len())
            .filter(|&i| rest.is_char_boundary(i))
            .find(|&i| {
                rest.get(i..i + 36)
                    .is_some_and(|c| uuid::Uuid::parse_str(c).is_ok() && c.len() == 36)
            });
        match found {
            Some(i) => {
                out.push_str(&rest[..i]);
                let raw = &rest[i..i + 36];
                let next = seen.len() + 1;
                let n = *seen.entry(raw.to_owned()).or_insert(next);
                out.push_str(&format!("<uuid:{n}>"));
                rest = &rest[i + 36..];
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

/// The trace's encoding of a raised error, with the message compared loosely
/// (the Rust message is lower case, as the style guide asks).
fn assert_raised(err: &Error, expected: &Json) {
    let raised = &expected["raised"];
    let class = match err {
        Error::UnknownRemoveId { .. } => "ValueError",
        other => panic!("unexpected error {other:?}"),
    };
    assert_eq!(class, raised["$error"]);
    assert_eq!(
        err.to_string().to_lowercase(),
        raised["message"].as_str().unwrap().to_lowercase()
    );
}

fn h1() -> Message {
    Message::human("hi").with_id("h1")
}

fn a1() -> Message {
    Message::ai("hello").with_id("a1")
}

#[test]
fn trace_03_append() {
    let merged = add_messages(vec![h1()], vec![a1()]);
    assert_eq!(encode_all(&merged), fixture("append"));
}

#[test]
fn trace_03_replace_by_id() {
    let merged = add_messages(
        vec![h1(), a1()],
        vec![Message::ai("hello v2").with_id("a1")],
    );
    assert_eq!(encode_all(&merged), fixture("replace_by_id"));
}

#[test]
fn trace_03_single_right() {
    // A single message (not a list) on the right: the JSON form of one
    // message converts to a list of one.
    let right = convert_to_messages(json!({"type": "ai", "content": "x", "id": "a2"})).unwrap();
    let merged = add_messages(vec![h1()], right);
    assert_eq!(encode_all(&merged), fixture("single_right"));
}

#[test]
fn trace_03_remove() {
    let merged = add_messages(vec![h1(), a1()], vec![Message::remove("h1")]);
    assert_eq!(encode_all(&merged), fixture("remove"));
}

#[test]
fn trace_03_remove_missing() {
    let err = try_add_messages(vec![h1()], vec![Message::remove("nope")]).unwrap_err();
    assert_raised(&err, &fixture("remove_missing"));
    // The infallible reducer keeps the list as it was.
    assert_eq!(
        add_messages(vec![h1()], vec![Message::remove("nope")]),
        [h1()]
    );
}

#[test]
fn trace_03_remove_all() {
    let merged = add_messages(
        vec![h1(), a1()],
        vec![Message::remove_all(), Message::human("fresh").with_id("h9")],
    );
    assert_eq!(encode_all(&merged), fixture("remove_all"));
}

#[test]
fn trace_03_coerce() {
    let right = convert_to_messages(json!([
        ["user", "from tuple"],
        {"role": "assistant", "content": "from dict", "id": "d1"},
        "plain string",
    ]))
    .unwrap();
    let merged = add_messages(vec![], right);
    let ours = normalise(&encode_all(&merged), &mut HashMap::new());
    assert_eq!(ours, fixture("coerce"));
}

#[test]
fn trace_03_dup_in_right() {
    let merged = add_messages(
        vec![h1()],
        vec![
            Message::ai("one").with_id("x"),
            Message::ai("two").with_id("x"),
        ],
    );
    assert_eq!(encode_all(&merged), fixture("dup_in_right"));
}

#[test]
fn trace_03_tool_replace() {
    let merged = add_messages(
        vec![ToolMessage::new("r1", "c1").with_id("t1").into()],
        vec![ToolMessage::new("r2", "c1").with_id("t1").into()],
    );
    assert_eq!(encode_all(&merged), fixture("tool_replace"));
}

/// What `MessagesState`'s `bot` node does: echo the last message with the id
/// `ai-<id of the last message>`.
fn bot(messages: &[Message]) -> Vec<Message> {
    let last = messages.last().unwrap();
    let echo = AiMessage::new(format!("echo:{}", last.text()))
        .with_id(format!("ai-{}", last.id().unwrap()));
    vec![echo.into()]
}

/// `START -> bot` on `MessagesState`, at the reducer level: the channel starts
/// at `[]`, the input is folded in, then the node's update.
fn invoke(input: Json) -> Json {
    let input: Vec<Message> = serde_json::from_value(input["messages"].clone()).unwrap();
    let state = add_messages(Vec::new(), input);
    let update = bot(&state);
    let state = add_messages(state, update);
    json!({"messages": encode_all(&state)})
}

#[test]
fn trace_03_graph_invoke_at_reducer_level() {
    let mut seen = HashMap::new();
    // Placeholders are numbered across the whole file: `coerce` used 1 and 2.
    seen.insert("coerce-1".to_owned(), 1);
    seen.insert("coerce-2".to_owned(), 2);
    let ours = normalise(&invoke(json!({"messages": [["user", "yo"]]})), &mut seen);
    assert_eq!(ours, fixture("graph_invoke"));
}

#[test]
fn trace_03_graph_invoke_ids_at_reducer_level() {
    let ours = invoke(json!({"messages": [{"type": "human", "content": "yo", "id": "u1"}]}));
    assert_eq!(ours, fixture("graph_invoke_ids"));
}
