//! D1: every tool call has exactly one result before the next model call.
//! A property test of `repair_history` over random conversations (results
//! missing, repeated, late, or answering nothing), and the agent loop after
//! a failed tool, a new message during a pending call, and in
//! LangGraph-compatible mode.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::CompileOptions;
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError, ToolMessage,
    ToolStatus,
};
use stategraph_prebuilt::{
    HistoryRepair, ToolErrors, ToolNode, create_react_agent, is_well_paired, repair_history,
};

/// One event of a conversation.
#[derive(Clone, Debug)]
enum Event {
    Human,
    /// An AI message calling this many tools.
    Calls(usize),
    /// A result for the n-th call made so far (modulo), possibly again.
    Result(usize),
    /// A result for a call nobody made.
    Orphan,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::Human),
        (0..4_usize).prop_map(Event::Calls),
        (0..16_usize).prop_map(Event::Result),
        Just(Event::Orphan),
    ]
}

fn conversation(events: &[Event]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut calls: Vec<String> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            Event::Human => messages.push(Message::human(format!("h{i}"))),
            Event::Calls(n) => {
                let made: Vec<ToolCall> = (0..*n)
                    .map(|k| ToolCall::new("t", json!({"k": k})).with_id(format!("c{i}-{k}")))
                    .collect();
                calls.extend(made.iter().filter_map(|c| c.id.clone()));
                messages.push(AiMessage::new(format!("a{i}")).with_tool_calls(made).into());
            }
            Event::Result(n) if !calls.is_empty() => {
                let id = &calls[n % calls.len()];
                messages.push(ToolMessage::new(format!("r{i}"), id.clone()).into());
            }
            Event::Result(_) => {}
            Event::Orphan => messages.push(ToolMessage::new("lost", format!("x{i}")).into()),
        }
    }
    messages
}

/// Every call id of `messages` with the content of its first result.
fn first_results(messages: &[Message]) -> HashMap<String, String> {
    let mut first = HashMap::new();
    for message in messages {
        if let Message::Tool(result) = message {
            first
                .entry(result.tool_call_id.clone())
                .or_insert_with(|| result.content.text().into_owned());
        }
    }
    first
}

fn call_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Ai(ai) => Some(ai.tool_calls.iter().filter_map(|c| c.id.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// `is_well_paired` as a list of calls waiting for their results.
fn paired_by_waiting_list(messages: &[Message]) -> bool {
    let mut waiting: Vec<&str> = Vec::new();
    for message in messages {
        match message {
            Message::Tool(result) => match waiting.iter().position(|id| *id == result.tool_call_id)
            {
                Some(at) => {
                    waiting.remove(at);
                }
                None => return false,
            },
            _ if !waiting.is_empty() => return false,
            Message::Ai(ai) => {
                waiting.extend(ai.tool_calls.iter().map(|c| c.id.as_deref().unwrap_or("")))
            }
            _ => {}
        }
    }
    waiting.is_empty()
}

proptest! {
    #[test]
    fn well_paired_means_each_call_answered_once_right_after(events in prop::collection::vec(event(), 0..24)) {
        let messages = conversation(&events);
        prop_assert_eq!(is_well_paired(&messages), paired_by_waiting_list(&messages), "{:#?}", messages);
    }

    #[test]
    fn repaired_conversations_pair_every_call_once(events in prop::collection::vec(event(), 0..24)) {
        let original = conversation(&events);
        let before = first_results(&original);
        let made = call_ids(&original);

        let synthesized = repair_history(&original, HistoryRepair::SynthesizeError).unwrap();
        prop_assert!(is_well_paired(&synthesized), "{synthesized:#?}");
        // Every call is kept, with its own first result when it had one.
        prop_assert_eq!(call_ids(&synthesized), made.clone());
        let after = first_results(&synthesized);
        for id in &made {
            match before.get(id) {
                Some(text) => prop_assert_eq!(after.get(id), Some(text)),
                None => prop_assert!(after.get(id).is_some_and(|t| t.contains("has no result"))),
            }
        }
        // Non-tool messages keep their order.
        let others = |messages: &[Message]| -> Vec<String> {
            messages.iter().filter(|m| !matches!(m, Message::Tool(_))).map(|m| m.text().into_owned()).collect()
        };
        prop_assert_eq!(others(&synthesized), others(&original));

        let dropped = repair_history(&original, HistoryRepair::DropCalls).unwrap();
        prop_assert!(is_well_paired(&dropped), "{dropped:#?}");
        prop_assert!(first_results(&dropped).values().all(|t| !t.contains("has no result")));

        let unanswered = made.iter().any(|id| !before.contains_key(id));
        let strict = repair_history(&original, HistoryRepair::Error);
        prop_assert_eq!(strict.is_err(), unanswered);
        if is_well_paired(&original) {
            prop_assert!(matches!(synthesized, std::borrow::Cow::Borrowed(_)));
        }
    }
}

fn failing_tool() -> SharedTool {
    Arc::new(FnTool::typed(
        "flaky",
        "Fails.",
        |_args: Json, _ctx| async move { Err::<String, _>(ToolError::failed("backend down")) },
    ))
}

/// Calls `flaky` on the first question, answers with what it last saw
/// otherwise; every answer has an id unique in the thread.
fn model() -> ScriptedChatModel {
    ScriptedChatModel::from_fn(|messages| {
        let id = format!("m{}", messages.len());
        let questions = messages
            .iter()
            .filter(|m| matches!(m, Message::Human(_)))
            .count();
        let answer = match messages.last() {
            Some(Message::Human(_)) if questions == 1 => AiMessage::new("").with_tool_calls(vec![
                ToolCall::new("flaky", json!({})).with_id(format!("{id}-c")),
            ]),
            Some(last) => AiMessage::new(format!("saw: {}", last.text())),
            None => AiMessage::new("?"),
        };
        answer.with_id(id)
    })
}

#[tokio::test]
async fn a_failed_tool_leaves_a_thread_the_next_question_can_use() {
    let model = Arc::new(model());
    let agent = create_react_agent(model.clone(), [failing_tool()])
        .tool_node(ToolNode::new([failing_tool()]).with_errors(ToolErrors::Never))
        .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .build()
        .unwrap();
    let config = RunnableConfig::thread("d1");
    let failed = agent
        .invoke(json!({"messages": [["user", "first"]]}), &config)
        .await;
    assert!(failed.is_err(), "the tool failure fails the run");

    // The thread keeps the unanswered call; a new question still works, and
    // the model is sent an error result for the old call, right after it.
    let out = agent
        .invoke(json!({"messages": [["user", "second"]]}), &config)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let stored = out["messages"].as_array().unwrap();
    assert_eq!(stored[1]["tool_calls"][0]["id"], "m1-c");
    assert_eq!(
        stored[2]["type"], "human",
        "the stored thread is not rewritten"
    );
    let calls = model.calls();
    let sent = &calls.last().unwrap().messages;
    assert!(is_well_paired(sent), "{sent:#?}");
    let Message::Tool(patched) = &sent[2] else {
        panic!("expected the made-up result after the call: {sent:#?}");
    };
    assert_eq!(patched.tool_call_id, "m1-c");
    assert_eq!(patched.status, ToolStatus::Error);
}

#[tokio::test]
async fn the_langgraph_compatible_mode_refuses_the_call() {
    let agent = create_react_agent(model(), [failing_tool()])
        .history_repair(HistoryRepair::Error)
        .build()
        .unwrap();
    let dangling = json!({"messages": [
        {"type": "ai", "content": "", "id": "a1",
         "tool_calls": [{"name": "flaky", "args": {}, "id": "c1", "type": "tool_call"}]},
        ["user", "new question"],
    ]});
    let err = agent
        .invoke(dangling, &RunnableConfig::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("INVALID_CHAT_HISTORY"), "{err}");
    assert!(err.contains("'id': 'c1'"), "{err}");
}
