//! Tool calls whose arguments do not parse (`{broken`, `[1,2]`, 20 MB of
//! garbage, 100,000 levels of nesting) are answered, never dropped: each
//! gets an error tool message naming the call, the tool and the parse
//! error; the model reads it and retries; no thread, request or checkpoint
//! ever holds a call without its answer. LangGraph 1.2.22 instead ends the
//! turn (its `tools_condition` and `ToolNode` ignore `invalid_tool_calls`)
//! and the next request is refused by OpenAI with a 400.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_checkpoint::serde::JsonSerializer;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, MessagesState, MessagesStateUpdate, MessagesStateView, NodeError, START,
    StateGraph,
};
use stategraph_llm::{
    AiMessage, ChatModel, FnTool, InvalidToolCall, Message, ScriptedChatModel, SharedTool,
    TOOL_ARGS_MAX_DEPTH, ToolCall, ToolError, ToolMessage, ToolStatus,
};
use stategraph_openai::{ChatOpenAi, OpenAiConfig};
use stategraph_prebuilt::{
    AgentVersion, HistoryRepair, NEED_MORE_STEPS, ToolErrors, ToolNode, ToolReview,
    create_react_agent, invalid_call_text, is_well_paired, repair_history, tools_condition,
};

use crate::stand_in::{Reply, StandIn};

/// The bad argument texts of issue 21, with a piece of the error each gets.
fn bad_arguments() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("broken JSON", "{broken".to_owned(), "are not valid JSON"),
        (
            "a list",
            "[1,2]".to_owned(),
            "must be a JSON object, got a list",
        ),
        (
            "20 MB of garbage",
            "x".repeat(20 << 20),
            "are not valid JSON",
        ),
        (
            "100,000 levels",
            "[".repeat(100_000) + &"]".repeat(100_000),
            "nest deeper than 100 levels",
        ),
    ]
}

/// An AI reply as OpenAI sends it, parsed as any provider reply is.
fn openai_reply(id: &str, calls: &[(&str, &str, &str)]) -> AiMessage {
    let calls: Vec<Json> = calls
        .iter()
        .map(|(call_id, name, raw)| {
            json!({"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}})
        })
        .collect();
    let reply = json!({"role": "assistant", "content": null, "id": id, "tool_calls": calls});
    match Message::from_json(reply).unwrap() {
        Message::Ai(ai) => (*ai).clone(),
        other => panic!("not an AI message: {other:?}"),
    }
}

fn add() -> SharedTool {
    Arc::new(FnTool::typed(
        "add",
        "Adds a and b.",
        |args: Json, _ctx| async move {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            Ok::<_, ToolError>(sum.to_string())
        },
    ))
}

/// The model of the retry story: a call with `raw` arguments on a
/// question; a good call after an error answer to it; the sum last. Every
/// conversation it is sent is recorded.
fn retrying_model(raw: String, seen: &Arc<Mutex<Vec<Vec<Message>>>>) -> ScriptedChatModel {
    let seen = seen.clone();
    ScriptedChatModel::from_fn(move |messages| {
        seen.lock().unwrap().push(messages.to_vec());
        let id = format!("m{}", messages.len());
        match messages.last() {
            Some(Message::Human(_)) => openai_reply(&id, &[("bad-1", "add", &raw)]),
            Some(Message::Tool(t)) if t.status == ToolStatus::Error => {
                AiMessage::new("retrying").with_id(id).with_tool_calls(vec![
                    ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("good-1"),
                ])
            }
            Some(Message::Tool(t)) => {
                AiMessage::new(format!("the sum is {}", t.content.text())).with_id(id)
            }
            _ => AiMessage::new("?").with_id(id),
        }
    })
}

/// Runs `body` on a worker thread of a multi-threaded runtime (2 MiB of
/// stack), where agents run in production.
fn on_worker<F>(body: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move { tokio::spawn(body).await.unwrap() });
}

fn messages_of(out: &stategraph_core::Value) -> Vec<Message> {
    serde_json::from_value(out.to_json().unwrap()["messages"].clone()).unwrap()
}

#[test]
fn each_invalid_call_is_answered_and_the_model_retries() {
    on_worker(async {
        for version in [AgentVersion::V1, AgentVersion::V2] {
            for (label, raw, why) in bad_arguments() {
                let seen = Arc::default();
                let agent = create_react_agent(retrying_model(raw.clone(), &seen), [add()])
                    .version(version)
                    .build()
                    .unwrap();
                let out = agent
                    .invoke(
                        json!({"messages": [["user", "2 + 3?"]]}),
                        &RunnableConfig::default(),
                    )
                    .await
                    .unwrap();
                let messages = messages_of(&out);
                let context = format!("{version:?}, {label}");
                assert_eq!(messages.len(), 6, "{context}");
                let bad = messages[1].as_ai().unwrap();
                assert!(bad.tool_calls.is_empty(), "{context}");
                assert_eq!(bad.invalid_tool_calls[0].id.as_deref(), Some("bad-1"));
                assert_eq!(bad.invalid_tool_calls[0].args.as_deref(), Some(&*raw));
                let answer = messages[2].as_tool().unwrap();
                assert_eq!(answer.tool_call_id, "bad-1", "{context}");
                assert_eq!(answer.status, ToolStatus::Error, "{context}");
                assert_eq!(answer.name.as_deref(), Some("add"), "{context}");
                let text = answer.content.text();
                for part in ["'add'", "bad-1", why, "Please fix the error and try again."] {
                    assert!(text.contains(part), "{context}: {part} not in {text}");
                }
                assert!(text.len() < 500, "{context}: the raw text is not echoed");
                assert_eq!(messages[3].tool_calls()[0].id.as_deref(), Some("good-1"));
                assert_eq!(messages[4].text(), "5");
                assert_eq!(messages[5].text(), "the sum is 5", "{context}");
                assert!(is_well_paired(&messages), "{context}");

                // The model was told: its second request ends with the
                // answer, and every request it got pairs every call.
                let seen = seen.lock().unwrap();
                assert_eq!(seen.len(), 3, "{context}");
                assert_eq!(seen[1].last(), Some(&messages[2]), "{context}");
                assert!(seen.iter().all(|sent| is_well_paired(sent)), "{context}");
            }
        }
    });
}

#[test]
fn valid_and_invalid_calls_of_one_message_are_all_answered() {
    on_worker(async {
        for version in [AgentVersion::V1, AgentVersion::V2] {
            let model = ScriptedChatModel::new([
                openai_reply(
                    "a1",
                    &[
                        ("c-good", "add", r#"{"a": 1, "b": 2}"#),
                        ("c-bad", "add", "{broken"),
                        ("c-list", "add", "[1,2]"),
                    ],
                ),
                AiMessage::new("done").with_id("a2"),
            ]);
            let agent = create_react_agent(model, [add()])
                .version(version)
                .build()
                .unwrap();
            let out = agent
                .invoke(
                    json!({"messages": [["user", "go"]]}),
                    &RunnableConfig::default(),
                )
                .await
                .unwrap();
            let messages = messages_of(&out);
            assert!(is_well_paired(&messages), "{version:?}: {messages:#?}");
            let answers: Vec<(&str, ToolStatus)> = messages[2..5]
                .iter()
                .map(|m| {
                    let t = m.as_tool().unwrap();
                    (t.tool_call_id.as_str(), t.status)
                })
                .collect();
            assert_eq!(
                answers,
                [
                    ("c-good", ToolStatus::Success),
                    ("c-bad", ToolStatus::Error),
                    ("c-list", ToolStatus::Error),
                ],
                "{version:?}"
            );
            assert_eq!(messages[2].text(), "3");
            assert_eq!(messages[5].text(), "done");
        }
    });
}

/// The next turn's request, as the OpenAI provider builds it, answers every
/// assistant tool call before the next user message (what OpenAI checks
/// before it answers 400).
#[test]
fn the_next_openai_request_answers_every_call() {
    on_worker(async {
        for (label, raw, _) in bad_arguments() {
            // Each completion has an id of its own: `add_messages` would
            // replace a message by a later one with the same id.
            let completion = |id: &str, message: Json| {
                Reply::ok(json!({"id": id, "model": "m", "choices": [
                    {"index": 0, "finish_reason": "stop", "message": message}
                ]}))
            };
            let stand_in = StandIn::start([
                completion("x1", json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "bad-1", "type": "function", "function": {"name": "add", "arguments": raw}}
                ]})),
                completion("x2", json!({"role": "assistant", "content": "I could not add."})),
                completion("x3", json!({"role": "assistant", "content": "Hello again."})),
            ])
            .await;
            let model = ChatOpenAi::new(
                OpenAiConfig::new("m")
                    .with_base_url(&stand_in.base_url)
                    .with_api_key("sk-test")
                    .with_max_retries(0)
                    .with_timeout(Duration::from_secs(60)),
            )
            .unwrap();
            let agent = create_react_agent(model, [add()])
                .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
                .build()
                .unwrap();
            let config = RunnableConfig::thread("openai");
            for question in ["2 + 3?", "hi"] {
                agent
                    .invoke(json!({"messages": [["user", question]]}), &config)
                    .await
                    .unwrap();
            }
            let received = stand_in.received();
            assert_eq!(received.len(), 3, "{label}");
            for request in &received {
                assert_openai_pairs(&request.body["messages"], label);
            }
            // The last request carries the broken call and its answer.
            let sent = received[2].body["messages"].as_array().unwrap();
            let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
            assert_eq!(
                roles,
                ["user", "assistant", "tool", "assistant", "user"],
                "{label}"
            );
            assert_eq!(sent[1]["tool_calls"][0]["function"]["arguments"], *raw);
            assert_eq!(sent[2]["tool_call_id"], "bad-1");
        }
    });
}

/// OpenAI's rule: the tool calls of an assistant message are each answered
/// by one `tool` message right after it, before anything else.
fn assert_openai_pairs(messages: &Json, label: &str) {
    let mut waiting: Vec<String> = Vec::new();
    for message in messages.as_array().unwrap() {
        match message["role"].as_str().unwrap() {
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap();
                let at = waiting.iter().position(|w| w == id);
                assert!(at.is_some(), "{label}: {id} answers nothing waiting");
                waiting.remove(at.unwrap_or_default());
            }
            role => {
                assert!(
                    waiting.is_empty(),
                    "{label}: {waiting:?} unanswered before {role}"
                );
                if let Some(calls) = message["tool_calls"].as_array() {
                    waiting.extend(calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
                }
            }
        }
    }
    assert!(
        waiting.is_empty(),
        "{label}: {waiting:?} unanswered at the end"
    );
}

/// A graph of one's own with `ToolNode` and `tools_condition` answers
/// invalid calls too.
#[tokio::test]
async fn tools_condition_and_tool_node_answer_invalid_calls() {
    let invalid = AiMessage::new("")
        .with_invalid_tool_calls(vec![InvalidToolCall::new(
            Some("c1".into()),
            Some("add".into()),
            Some("{broken".into()),
            "arguments of `add` are not valid JSON: key must be a string at line 1 column 2",
        )])
        .into();
    assert_eq!(tools_condition(&[invalid]), "tools");

    let model = Arc::new(ScriptedChatModel::new([
        openai_reply("a1", &[("c1", "add", "{broken")]),
        AiMessage::new("sorry").with_id("a2"),
    ]));
    let mut graph = StateGraph::typed::<MessagesState>();
    let agent_model = model.clone();
    graph
        .add_node("agent", move |state: MessagesStateView| {
            let model = agent_model.clone();
            async move {
                let answer = model
                    .invoke(&state.messages, &Default::default())
                    .await
                    .map_err(|e| NodeError::new("ModelError", e.to_string()))?;
                Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![answer.into()]))
            }
        })
        .unwrap();
    // Answering a model mistake does not depend on the error policy.
    graph
        .add_node(
            "tools",
            ToolNode::new([add()]).with_errors(ToolErrors::Never),
        )
        .unwrap();
    graph.add_edge(START, "agent").unwrap();
    graph
        .add_conditional_edges(
            "agent",
            |state: &MessagesStateView| tools_condition(&state.messages),
            None,
        )
        .unwrap();
    graph.add_edge("tools", "agent").unwrap();
    let out = graph
        .compile()
        .unwrap()
        .invoke(
            json!({"messages": [["user", "add"]]}),
            &RunnableConfig::default(),
        )
        .await
        .unwrap();
    let messages = messages_of(&out);
    assert!(is_well_paired(&messages), "{messages:#?}");
    let answer = messages[2].as_tool().unwrap();
    assert_eq!(answer.tool_call_id, "c1");
    assert_eq!(answer.status, ToolStatus::Error);
    assert_eq!(messages[3].text(), "sorry");
    assert_eq!(model.call_count(), 2);
}

/// The v2 agent sends each invalid call to `tools` as a task of its own;
/// stopped before the tools and stored as JSON, the pending call comes back
/// from its serialized form and is answered on resume.
#[tokio::test]
async fn a_pending_invalid_call_survives_a_json_checkpoint() {
    let model = ScriptedChatModel::new([
        openai_reply(
            "a1",
            &[("c1", "add", "{broken"), ("c2", "add", r#"{"a": 1}"#)],
        ),
        AiMessage::new("done").with_id("a2"),
    ]);
    let agent = create_react_agent(model, [add()])
        .compile_options(
            CompileOptions::new()
                .checkpointer(InMemorySaver::with_serializer(JsonSerializer))
                .interrupt_before(["tools"]),
        )
        .build()
        .unwrap();
    let config = RunnableConfig::thread("json");
    agent
        .invoke(json!({"messages": [["user", "go"]]}), &config)
        .await
        .unwrap();
    let state = agent.get_state(&config).await.unwrap();
    assert_eq!(state.next, ["tools", "tools"]);
    let out = agent
        .invoke(stategraph_pregel::Input::Resume, &config)
        .await
        .unwrap();
    let messages = messages_of(&out);
    assert!(is_well_paired(&messages), "{messages:#?}");
    let ids: Vec<&str> = messages[2..4]
        .iter()
        .map(|m| m.as_tool().unwrap().tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["c2", "c1"]);
    assert_eq!(messages[4].text(), "done");
}

/// Arguments nested at the limit are a valid call whose thread still reads
/// back from a JSON checkpoint; one level more is an answered invalid call.
#[tokio::test]
async fn nesting_at_the_limit_stays_readable_from_a_json_checkpoint() {
    let nested =
        |depth: usize| -> String { format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)) };
    let (fits, too_deep) = (nested(TOOL_ARGS_MAX_DEPTH), nested(TOOL_ARGS_MAX_DEPTH + 1));
    let model = ScriptedChatModel::new([
        openai_reply("a1", &[("c1", "add", &fits), ("c2", "add", &too_deep)]),
        AiMessage::new("done").with_id("a2"),
        AiMessage::new("again").with_id("a3"),
    ]);
    let agent = create_react_agent(model, [add()])
        .compile_options(
            CompileOptions::new().checkpointer(InMemorySaver::with_serializer(JsonSerializer)),
        )
        .build()
        .unwrap();
    let config = RunnableConfig::thread("deep");
    for question in ["go", "again"] {
        agent
            .invoke(json!({"messages": [["user", question]]}), &config)
            .await
            .unwrap();
    }
    let state = agent.get_state(&config).await.unwrap();
    let messages: Vec<Message> =
        serde_json::from_value(state.values.to_json().unwrap()["messages"].clone()).unwrap();
    assert!(is_well_paired(&messages));
    let call = messages[1].as_ai().unwrap();
    assert_eq!(call.tool_calls.len(), 1);
    assert_eq!(call.invalid_tool_calls[0].id.as_deref(), Some("c2"));
    assert_eq!(messages[2].as_tool().unwrap().status, ToolStatus::Success);
    assert_eq!(messages[3].as_tool().unwrap().status, ToolStatus::Error);
    assert_eq!(messages.last().unwrap().text(), "again");
}

/// A reviewed message's invalid calls are answered by the review; the
/// accepted call runs.
#[tokio::test]
async fn review_answers_the_invalid_calls_of_the_reviewed_message() {
    let model = ScriptedChatModel::new([
        openai_reply(
            "a1",
            &[
                ("c1", "add", r#"{"a": 1, "b": 1}"#),
                ("c2", "add", "{broken"),
            ],
        ),
        AiMessage::new("done").with_id("a2"),
    ]);
    let agent = create_react_agent(model, [add()])
        .review_tool_calls(ToolReview::all())
        .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .build()
        .unwrap();
    let config = RunnableConfig::thread("review");
    let out = agent
        .invoke(json!({"messages": [["user", "go"]]}), &config)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let asked = out["__interrupt__"][0]["value"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "only the valid call is reviewed");
    let resume = stategraph_graph::Command::new().resume(stategraph_core::Value::from_json(
        json!([{"type": "accept", "args": null}]),
    ));
    let out = agent.invoke(resume, &config).await.unwrap();
    let messages = messages_of(&out);
    assert!(is_well_paired(&messages), "{messages:#?}");
    let statuses: Vec<(&str, ToolStatus)> = messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t.status))
        .collect();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert!(statuses.contains(&("c1", ToolStatus::Success)));
    assert!(statuses.contains(&("c2", ToolStatus::Error)));
    assert_eq!(messages.last().unwrap().text(), "done");
}

/// A model that only ever sends broken calls ends with LangGraph's "need
/// more steps" answer when the steps run out, as one calling tools does.
#[tokio::test]
async fn endless_invalid_calls_end_with_need_more_steps() {
    let model = ScriptedChatModel::from_fn(|messages| {
        let id = format!("m{}", messages.len());
        openai_reply(&id, &[(&format!("{id}-c"), "add", "{broken")])
    });
    let agent = create_react_agent(model, [add()]).build().unwrap();
    let out = agent
        .invoke(
            json!({"messages": [["user", "go"]]}),
            &RunnableConfig::default().with_recursion_limit(6),
        )
        .await
        .unwrap();
    let messages = messages_of(&out);
    assert_eq!(messages.last().unwrap().text(), NEED_MORE_STEPS);
    assert!(is_well_paired(&messages), "{messages:#?}");
}

/// A stored thread that already holds an unanswered invalid call (written
/// before this fix, or by another graph) is repaired in the request: the
/// made-up answer carries the parse error.
#[test]
fn history_repair_answers_old_invalid_calls_with_their_error() {
    let invalid = InvalidToolCall::new(
        Some("c1".into()),
        Some("add".into()),
        Some("{broken".into()),
        "arguments of `add` are not valid JSON: key must be a string at line 1 column 2",
    );
    let thread: Vec<Message> = vec![
        Message::human("add"),
        AiMessage::new("")
            .with_invalid_tool_calls(vec![invalid.clone()])
            .into(),
        Message::human("hello?"),
    ];
    assert!(!is_well_paired(&thread));
    let repaired = repair_history(&thread, HistoryRepair::SynthesizeError).unwrap();
    assert!(is_well_paired(&repaired));
    let answer: &ToolMessage = repaired[2].as_tool().unwrap();
    assert_eq!(answer.tool_call_id, "c1");
    assert_eq!(answer.status, ToolStatus::Error);
    assert_eq!(answer.content.text(), invalid_call_text(&invalid));
    let dropped = repair_history(&thread, HistoryRepair::DropCalls).unwrap();
    assert!(dropped[1].as_ai().unwrap().invalid_tool_calls.is_empty());
    assert!(is_well_paired(&dropped));
    let err = repair_history(&thread, HistoryRepair::Error)
        .unwrap_err()
        .to_string();
    assert!(err.contains("INVALID_CHAT_HISTORY"), "{err}");
    assert!(err.contains("'id': 'c1'"), "{err}");
}

/// The answer's text: LangGraph's tool-error shape, with the call id.
#[test]
fn the_answer_names_the_call_the_tool_and_the_error() {
    let invalid = InvalidToolCall::new(
        Some("c1".into()),
        Some("add".into()),
        Some("{broken".into()),
        "arguments of `add` are not valid JSON: key must be a string at line 1 column 2",
    );
    assert_eq!(
        invalid_call_text(&invalid),
        "Error invoking tool 'add' (call id 'c1') with error:\n arguments of `add` are not \
         valid JSON: key must be a string at line 1 column 2\n Please fix the error and try again."
    );
    let bare = InvalidToolCall::default();
    assert_eq!(
        invalid_call_text(&bare),
        "Error invoking tool 'unknown' (call id '') with error:\n the arguments could not be \
         parsed\n Please fix the error and try again."
    );
}
