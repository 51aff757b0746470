//! D1: every tool call has exactly one result before the next model call.
//! A property test of `repair_history` over random conversations (results
//! missing, repeated, late, or answering nothing; calls valid or invalid),
//! a property test of the agent loop over random model replies (good calls,
//! failing tools, argument text of any shape), and the agent loop after a
//! failed tool, a new message during a pending call, and in
//! LangGraph-compatible mode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::CompileOptions;
use stategraph_llm::{
    AiMessage, FnTool, InvalidToolCall, Message, ScriptedChatModel, SharedTool, ToolCall,
    ToolError, ToolMessage, ToolStatus,
};
use stategraph_prebuilt::{
    AgentVersion, HistoryRepair, ToolErrors, ToolNode, create_react_agent, is_well_paired,
    repair_history,
};

/// One event of a conversation.
#[derive(Clone, Debug)]
enum Event {
    Human,
    /// An AI message with this many valid calls and this many invalid ones
    /// (arguments that did not parse).
    Calls(usize, usize),
    /// A result for the n-th call made so far (modulo), possibly again.
    Result(usize),
    /// A result for a call nobody made.
    Orphan,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::Human),
        (0..4_usize, 0..3_usize).prop_map(|(valid, invalid)| Event::Calls(valid, invalid)),
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
            Event::Calls(valid, invalid) => {
                let made: Vec<ToolCall> = (0..*valid)
                    .map(|k| ToolCall::new("t", json!({"k": k})).with_id(format!("c{i}-{k}")))
                    .collect();
                let broken: Vec<InvalidToolCall> = (0..*invalid)
                    .map(|k| {
                        let id = format!("x{i}-{k}");
                        let error = format!("broken arguments of {id}");
                        InvalidToolCall::new(Some(id), Some("t".into()), Some("{".into()), error)
                    })
                    .collect();
                calls.extend(made.iter().filter_map(|c| c.id.clone()));
                calls.extend(broken.iter().filter_map(|c| c.id.clone()));
                let message = AiMessage::new(format!("a{i}"))
                    .with_tool_calls(made)
                    .with_invalid_tool_calls(broken);
                messages.push(message.into());
            }
            Event::Result(n) if !calls.is_empty() => {
                let id = &calls[n % calls.len()];
                messages.push(ToolMessage::new(format!("r{i}"), id.clone()).into());
            }
            Event::Result(_) => {}
            Event::Orphan => messages.push(ToolMessage::new("lost", format!("o{i}")).into()),
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

/// The ids of every call, valid or invalid, in order.
fn call_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.as_ai())
        .flat_map(|ai| {
            let valid = ai.tool_calls.iter().filter_map(|c| c.id.clone());
            valid.chain(ai.invalid_tool_calls.iter().filter_map(|c| c.id.clone()))
        })
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
                waiting.extend(ai.tool_calls.iter().map(|c| c.id.as_deref().unwrap_or("")));
                waiting.extend(
                    ai.invalid_tool_calls
                        .iter()
                        .map(|c| c.id.as_deref().unwrap_or("")),
                );
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
        // Every call is kept, with its own first result when it had one;
        // an unanswered invalid call is told its parse error.
        prop_assert_eq!(call_ids(&synthesized), made.clone());
        let after = first_results(&synthesized);
        for id in &made {
            let made_up = match id.starts_with('x') {
                true => format!("broken arguments of {id}"),
                false => "has no result".to_owned(),
            };
            match before.get(id) {
                Some(text) => prop_assert_eq!(after.get(id), Some(text)),
                None => prop_assert!(after.get(id).is_some_and(|t| t.contains(&made_up)), "{id}: {after:?}"),
            }
        }
        // Non-tool messages keep their order.
        let others = |messages: &[Message]| -> Vec<String> {
            messages.iter().filter(|m| !matches!(m, Message::Tool(_))).map(|m| m.text().into_owned()).collect()
        };
        prop_assert_eq!(others(&synthesized), others(&original));

        let dropped = repair_history(&original, HistoryRepair::DropCalls).unwrap();
        prop_assert!(is_well_paired(&dropped), "{dropped:#?}");
        prop_assert!(first_results(&dropped).values().all(|t| !t.contains("has no result") && !t.contains("broken")));
        let kept = call_ids(&dropped);
        prop_assert!(kept.iter().all(|id| before.contains_key(id)), "{kept:?}");

        let unanswered = made.iter().any(|id| !before.contains_key(id));
        let strict = repair_history(&original, HistoryRepair::Error);
        prop_assert_eq!(strict.is_err(), unanswered);
        if is_well_paired(&original) {
            prop_assert!(matches!(synthesized, std::borrow::Cow::Borrowed(_)));
        }
    }
}

/// One call of a model reply in the agent property test.
#[derive(Clone, Debug)]
enum Call {
    /// A call of `add` that runs.
    Good,
    /// A call of `flaky`, which fails (and, with the default error policy,
    /// fails the run: the call stays unanswered in the thread).
    Failing,
    /// A call of `add` with this argument text, valid or not.
    Text(String),
}

fn argument_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{broken".to_owned()),
        Just("[1,2]".to_owned()),
        Just("   ".to_owned()),
        Just("null".to_owned()),
        Just("{\"a\": \"raw\nline\"}".to_owned()),
        (101..2_000_usize).prop_map(|depth| "[".repeat(depth)),
        "[a-b{}\\[\\]\":,0-9 ]{0,24}",
    ]
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        Just(Call::Good),
        Just(Call::Failing),
        argument_text().prop_map(Call::Text),
    ]
}

/// A model answering from `turns` (per question, one list of calls per
/// reply; an empty list, or the end of the turn's script, is a plain
/// answer), recording what it is sent. Ids are unique across the thread.
fn script_model(
    turns: Vec<Vec<Vec<Call>>>,
    seen: &Arc<Mutex<Vec<Vec<Message>>>>,
) -> ScriptedChatModel {
    let seen = seen.clone();
    let replies = Mutex::new(0_usize);
    ScriptedChatModel::from_fn(move |messages| {
        seen.lock().unwrap().push(messages.to_vec());
        let n = {
            let mut replies = replies.lock().unwrap();
            *replies += 1;
            *replies
        };
        let turn = messages
            .iter()
            .filter(|m| matches!(m, Message::Human(_)))
            .count();
        let asked = messages
            .iter()
            .rposition(|m| matches!(m, Message::Human(_)));
        let replied = messages[asked.map_or(0, |at| at + 1)..]
            .iter()
            .filter(|m| matches!(m, Message::Ai(_)))
            .count();
        let calls = turns
            .get(turn.saturating_sub(1))
            .and_then(|replies| replies.get(replied))
            .cloned()
            .unwrap_or_default();
        let calls: Vec<Json> = calls
            .iter()
            .enumerate()
            .map(|(k, call)| {
                let (name, arguments) = match call {
                    Call::Good => ("add", r#"{"a": 1, "b": 2}"#.to_owned()),
                    Call::Failing => ("flaky", "{}".to_owned()),
                    Call::Text(text) => ("add", text.clone()),
                };
                json!({"id": format!("r{n}-{k}"), "type": "function",
                       "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        let reply = json!({"role": "assistant", "content": format!("reply {n}"),
                           "id": format!("r{n}"), "tool_calls": calls});
        match Message::from_json(reply) {
            Ok(Message::Ai(ai)) => (*ai).clone(),
            other => panic!("not an AI message: {other:?}"),
        }
    })
}

fn add_tool() -> SharedTool {
    Arc::new(FnTool::typed(
        "add",
        "Adds.",
        |_args: Json, _ctx| async move { Ok::<_, ToolError>("3".to_owned()) },
    ))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the model sends (good calls, failing tools, argument text
    /// of any shape) over two turns of one thread: every request it gets
    /// pairs every call, valid or invalid; a run that ends well leaves the
    /// thread paired; every invalid call is answered in the thread by an
    /// error naming it.
    #[test]
    fn the_agent_pairs_every_call_whatever_the_model_sends(
        turns in prop::collection::vec(prop::collection::vec(prop::collection::vec(call(), 0..4), 0..4), 1..3),
        v2 in any::<bool>(),
    ) {
        let version = if v2 { AgentVersion::V2 } else { AgentVersion::V1 };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let seen = Arc::default();
        let agent = create_react_agent(script_model(turns.clone(), &seen), [add_tool(), failing_tool()])
            .version(version)
            .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
            .build()
            .unwrap();
        let config = RunnableConfig::thread("d1-property");
        for (turn, replies) in turns.iter().enumerate() {
            let question = json!({"messages": [["user", format!("question {turn}")]]});
            let ran = runtime.block_on(agent.invoke(question, &config));
            // Replies after a plain answer are never asked for.
            let failed = replies
                .iter()
                .take_while(|calls| !calls.is_empty())
                .flatten()
                .any(|c| matches!(c, Call::Failing));
            prop_assert_eq!(ran.is_err(), failed, "{:?}", ran.err());
            if let Ok(out) = ran {
                let messages: Vec<Message> =
                    serde_json::from_value(out.to_json().unwrap()["messages"].clone()).unwrap();
                check_stored(&messages)?;
            }
        }
        let sent = seen.lock().unwrap();
        for request in sent.iter() {
            prop_assert!(is_well_paired(request), "{request:#?}");
        }
        let state = runtime.block_on(agent.get_state(&config)).unwrap();
        let stored: Vec<Message> =
            serde_json::from_value(state.values.to_json().unwrap()["messages"].clone()).unwrap();
        check_stored(&stored)?;
    }
}

/// A stored thread answers every call, valid or invalid, each invalid one
/// with an error naming it, except the calls of a step a failing tool
/// stopped (the thread is never rewritten; the next request repairs them).
fn check_stored(stored: &[Message]) -> Result<(), TestCaseError> {
    let answers: HashMap<&str, &ToolMessage> = stored
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t))
        .collect();
    for ai in stored.iter().filter_map(Message::as_ai) {
        let stopped = ai.tool_calls.iter().any(|c| c.name == "flaky");
        let valid = ai.tool_calls.iter().map(|c| (c.id.as_deref(), false));
        let invalid = ai
            .invalid_tool_calls
            .iter()
            .map(|c| (c.id.as_deref(), true));
        for (id, is_invalid) in valid.chain(invalid) {
            let id = id.unwrap();
            match answers.get(id) {
                Some(answer) if is_invalid => {
                    prop_assert_eq!(answer.status, ToolStatus::Error);
                    prop_assert!(answer.content.text().contains(id));
                }
                Some(_) => {}
                None => prop_assert!(stopped, "{id} unanswered: {stored:#?}"),
            }
        }
    }
    Ok(())
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
