//! Human review of an agent's tool calls: accept, edit, reject (ignore or
//! answer in the tool's place), what the reviewer may not answer, and that
//! no call is ever left without a result.

use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, CompileOptions, CompiledStateGraph};
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{
    HumanInterruptConfig, REVIEW_NODE, ToolReview, create_react_agent, is_well_paired,
};

/// A tool that logs the arguments it ran with.
fn tool(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> SharedTool {
    let log = log.clone();
    Arc::new(FnTool::typed(name, "A tool.", move |args: Json, _ctx| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(format!("{name} {args}"));
            Ok::<_, ToolError>(format!("{name} done"))
        }
    }))
}

/// Calls `search` and `send_email` on the question, then summarises the
/// results it saw; records every conversation it was sent.
fn model(seen: &Arc<Mutex<Vec<Vec<Message>>>>) -> ScriptedChatModel {
    let seen = seen.clone();
    ScriptedChatModel::from_fn(move |messages| {
        seen.lock().unwrap().push(messages.to_vec());
        let id = format!("m{}", messages.len());
        let answer = match messages.last() {
            Some(Message::Human(_)) => AiMessage::new("").with_tool_calls(vec![
                ToolCall::new("search", json!({"q": "x"})).with_id("c-search"),
                ToolCall::new("send_email", json!({"to": "a@b.c"})).with_id("c-send"),
            ]),
            _ => {
                let results: Vec<String> = messages
                    .iter()
                    .filter_map(|m| match m {
                        Message::Tool(t) => Some(t.content.text().into_owned()),
                        _ => None,
                    })
                    .collect();
                AiMessage::new(results.join(" | "))
            }
        };
        answer.with_id(id)
    })
}

struct Setup {
    agent: CompiledStateGraph,
    ran: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<Vec<Vec<Message>>>>,
    config: RunnableConfig,
}

async fn paused(review: ToolReview, requests: usize) -> Setup {
    let ran = Arc::default();
    let seen = Arc::default();
    let agent = create_react_agent(
        model(&seen),
        [tool("search", &ran), tool("send_email", &ran)],
    )
    .review_tool_calls(review)
    .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
    .build()
    .unwrap();
    let config = RunnableConfig::thread("review");
    let out = agent
        .invoke(json!({"messages": [["user", "mail it"]]}), &config)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let asked = &out["__interrupt__"][0]["value"];
    assert_eq!(asked.as_array().map(Vec::len), Some(requests), "{out:#}");
    let last = &asked[requests - 1]["action_request"];
    assert_eq!(
        *last,
        json!({"action": "send_email", "args": {"to": "a@b.c"}})
    );
    let state = agent.get_state(&config).await.unwrap();
    assert_eq!(state.next, [REVIEW_NODE]);
    Setup {
        agent,
        ran,
        seen,
        config,
    }
}

async fn resume(setup: &Setup, answers: Json) -> Result<Json, String> {
    let command = Command::new().resume(Value::from_json(answers));
    setup
        .agent
        .invoke(command, &setup.config)
        .await
        .map(|out| out.to_json().unwrap())
        .map_err(|err| err.to_string())
}

fn ran(setup: &Setup) -> Vec<String> {
    let mut ran = setup.ran.lock().unwrap().clone();
    ran.sort();
    ran
}

fn last_text(out: &Json) -> String {
    let messages = out["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn accepted_calls_run_with_the_unreviewed_ones() {
    let setup = paused(ToolReview::tools(["send_email"]), 1).await;
    assert!(ran(&setup).is_empty(), "nothing runs before the review");
    let out = resume(&setup, json!([{"type": "accept", "args": null}]))
        .await
        .unwrap();
    assert_eq!(
        ran(&setup),
        [r#"search {"q":"x"}"#, r#"send_email {"to":"a@b.c"}"#]
    );
    assert_eq!(last_text(&out), "search done | send_email done");
}

#[tokio::test]
async fn an_edit_changes_the_call_and_the_stored_message() {
    let setup = paused(ToolReview::tools(["send_email"]), 1).await;
    let edit =
        json!([{"type": "edit", "args": {"action": "send_email", "args": {"to": "boss@b.c"}}}]);
    let out = resume(&setup, edit).await.unwrap();
    assert_eq!(
        ran(&setup),
        [r#"search {"q":"x"}"#, r#"send_email {"to":"boss@b.c"}"#]
    );
    // The AI message keeps its id and now holds the edited call.
    let call = &out["messages"][1]["tool_calls"][1];
    assert_eq!(call["args"], json!({"to": "boss@b.c"}));
    assert_eq!(out["messages"][1]["id"], "m1");
}

#[tokio::test]
async fn a_rejected_call_is_answered_and_never_run() {
    for (answer, expected) in [
        (
            json!({"type": "ignore", "args": null}),
            "The reviewer did not let `send_email` run.",
        ),
        (
            json!({"type": "response", "args": "not today"}),
            "not today",
        ),
    ] {
        let setup = paused(ToolReview::tools(["send_email"]), 1).await;
        let out = resume(&setup, json!([answer])).await.unwrap();
        assert_eq!(
            ran(&setup),
            [r#"search {"q":"x"}"#],
            "send_email must not run"
        );
        let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
        assert!(is_well_paired(&messages), "{messages:#?}");
        assert!(last_text(&out).contains(expected), "{out:#}");
        // The model never saw an unanswered call.
        assert!(
            setup
                .seen
                .lock()
                .unwrap()
                .iter()
                .all(|sent| is_well_paired(sent))
        );
    }
}

#[tokio::test]
async fn when_every_call_is_rejected_the_model_answers_next() {
    let setup = paused(ToolReview::all(), 2).await;
    let reject = json!({"type": "ignore", "args": null});
    let out = resume(&setup, json!([reject.clone(), reject]))
        .await
        .unwrap();
    assert!(ran(&setup).is_empty());
    assert_eq!(
        last_text(&out),
        "The reviewer did not let `search` run. | The reviewer did not let `send_email` run."
    );
}

#[tokio::test]
async fn answers_the_review_does_not_allow_are_errors() {
    let only_accept = HumanInterruptConfig::default().with_accept(true);
    let setup = paused(
        ToolReview::tools(["send_email"]).with_config(only_accept),
        1,
    )
    .await;
    let err = resume(&setup, json!([{"type": "ignore", "args": null}]))
        .await
        .unwrap_err();
    assert!(err.contains("does not allow"), "{err}");
    let err = resume(&setup, json!([])).await.unwrap_err();
    assert!(err.contains("expected 1 human responses"), "{err}");
    let err = resume(&setup, json!("yes")).await.unwrap_err();
    assert!(err.contains("not a list of human responses"), "{err}");
    // A valid answer still works after the refused ones.
    resume(&setup, json!([{"type": "accept", "args": null}]))
        .await
        .unwrap();
    assert_eq!(ran(&setup).len(), 2);
}
