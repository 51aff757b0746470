//! Golden trace 28: `ToolNode` as the only node of a graph, and in an
//! agent loop with `tools_condition`. Calls run concurrently and answer in
//! call order (compared with the trace); `tools_condition` routes as
//! recorded; an unknown tool is answered with the list of tools; bad
//! arguments become an error message by default; `ToolErrors` chooses which
//! failures become messages (every variant of the trace is compared);
//! tools see their call id, the state and the store.
//!
//! `bare_invoke_outside_graph`: a Python `ToolNode` is a runnable that
//! refuses at run time to run without the graph runtime; ours cannot be
//! called without one at all. Its only entry point is its node function,
//! which takes the running task's `TaskContext`, which has no public
//! constructor: the `compile_fail` doctest under "Outside a graph" on
//! `ToolNode` (crates/prebuilt/src/tool_node.rs) shows it, and
//! `trace_28_bare_invoke_outside_graph` checks the recording and that the
//! same node answers inside a graph. The texts of the default, `True`,
//! callable and exception-type handlers are compared exactly
//! (`trace_28_handle_tool_errors`, `trace_28_invalid_args_default_handler`):
//! the arguments as Python's dict repr, each schema problem in pydantic's
//! words, exceptions as Python's repr (`ToolError::raised` gives a failure
//! its class). A run that fails is compared by class and message; Python's
//! `str(KeyError('bad key'))` is the key's repr (`'bad key'`), so a
//! `KeyError`'s message is compared quoted. A tool returning a `Command`
//! (`command_tool_updates`) is compared: its update comes first, then the
//! plain results.

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, MessagesState, MessagesStateUpdate, MessagesStateView,
    NodeError, START, StateGraph,
};
use stategraph_llm::{
    AiMessage, FnTool, Message, SharedTool, Tool, ToolCall, ToolContext, ToolError, ToolStatus,
};
use stategraph_prebuilt::{ToolErrors, ToolNode, tools_condition};
use stategraph_store::{InMemoryStore, Store, ToolContextStore};

/// Tools as the node holds them.
trait Shared {
    fn shared(self) -> SharedTool;
}

impl<T: Tool> Shared for T {
    fn shared(self) -> SharedTool {
        std::sync::Arc::new(self)
    }
}

#[derive(serde::Deserialize, stategraph_llm::schemars::JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct Text {
    text: String,
}

fn slow_echo() -> SharedTool {
    FnTool::typed("slow_echo", "Echo slowly.", |args: Text, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok::<_, ToolError>(format!("echo:{}", args.text))
    })
    .shared()
}

fn fast_len() -> SharedTool {
    FnTool::typed("fast_len", "Length.", |args: Text, _ctx| async move {
        Ok::<_, ToolError>(args.text.chars().count().to_string())
    })
    .shared()
}

#[derive(serde::Deserialize, stategraph_llm::schemars::JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct Kind {
    kind: String,
}

fn explode() -> SharedTool {
    FnTool::typed(
        "explode",
        "Raise an error.",
        |args: Kind, _ctx| async move {
            // The case raises `ValueError("bad value")` or `KeyError("bad key")`.
            let class = if args.kind == "value" {
                "ValueError"
            } else {
                "KeyError"
            };
            Err::<String, _>(ToolError::raised(class, format!("bad {}", args.kind)))
        },
    )
    .shared()
}

fn ai(calls: &[(&str, Json)]) -> Message {
    let calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(*name, args.clone()).with_id(format!("c{i}")))
        .collect();
    AiMessage::new("")
        .with_tool_calls(calls)
        .with_id("ai-x")
        .into()
}

fn wrap(node: ToolNode) -> CompiledStateGraph {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("tools", node).unwrap();
    g.add_edge(START, "tools").unwrap();
    g.compile().unwrap()
}

/// The messages the tool node added (everything after the AI message).
async fn answers(app: &CompiledStateGraph, call: Message) -> Result<Vec<Message>, String> {
    let input = MessagesState {
        messages: vec![call],
    };
    let out = app
        .invoke_typed::<MessagesState>(input, &RunnableConfig::default())
        .await
        .map_err(|err| err.to_string())?
        .into_state();
    Ok(out.messages[1..].to_vec())
}

fn summary(message: &Message) -> (String, String, String, ToolStatus) {
    let tool = message.as_tool().unwrap();
    (
        tool.name.clone().unwrap_or_default(),
        tool.tool_call_id.clone(),
        message.text().into_owned(),
        tool.status,
    )
}

#[tokio::test]
async fn parallel_calls_answer_in_call_order() {
    let app = wrap(ToolNode::new([slow_echo(), fast_len()]));
    let call = ai(&[
        ("slow_echo", json!({"text": "a"})),
        ("fast_len", json!({"text": "abcd"})),
    ]);
    let started = std::time::Instant::now();
    let out = answers(&app, call).await.unwrap();
    let summaries: Vec<_> = out.iter().map(summary).collect();
    assert_eq!(
        summaries,
        [
            (
                "slow_echo".into(),
                "c0".into(),
                "echo:a".into(),
                ToolStatus::Success
            ),
            (
                "fast_len".into(),
                "c1".into(),
                "4".into(),
                ToolStatus::Success
            ),
        ]
    );
    // Every message got an id from add_messages.
    assert!(out.iter().all(|m| m.id().is_some()));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn bad_arguments_become_an_error_message_by_default() {
    let app = wrap(ToolNode::new([fast_len()]));
    let out = answers(&app, ai(&[("fast_len", json!({"wrong": 1}))]))
        .await
        .unwrap();
    let (name, id, text, status) = summary(&out[0]);
    assert_eq!(
        (name.as_str(), id.as_str(), status),
        ("fast_len", "c0", ToolStatus::Error)
    );
    assert_eq!(
        text,
        "Error invoking tool 'fast_len' with kwargs {'wrong': 1} with error:\n \
         text: Field required\n Please fix the error and try again."
    );
}

#[tokio::test]
async fn unknown_tools_are_answered_with_the_tool_list() {
    let app = wrap(ToolNode::new([slow_echo(), fast_len()]));
    let out = answers(&app, ai(&[("nope", json!({}))])).await.unwrap();
    assert_eq!(
        summary(&out[0]),
        (
            "nope".into(),
            "c0".into(),
            "Error: nope is not a valid tool, try one of [slow_echo, fast_len].".into(),
            ToolStatus::Error
        )
    );
}

#[tokio::test]
async fn tool_errors_choose_which_failures_become_messages() {
    let failing = || ai(&[("explode", json!({"kind": "value"}))]);
    let run = |errors: ToolErrors| async move {
        let app = wrap(ToolNode::new([explode()]).with_errors(errors));
        answers(&app, failing()).await
    };
    // Default: a tool failure fails the node (only bad calls are caught).
    let err = run(ToolErrors::InvalidCalls).await.unwrap_err();
    assert!(err.contains("bad value"), "{err}");
    let err = run(ToolErrors::Never).await.unwrap_err();
    assert!(err.contains("bad value"), "{err}");
    let out = run(ToolErrors::All).await.unwrap();
    assert_eq!(
        summary(&out[0]).2,
        "Error: ValueError('bad value')\n Please fix your mistakes."
    );
    let out = run(ToolErrors::Text("custom failure text".into()))
        .await
        .unwrap();
    assert_eq!(summary(&out[0]).2, "custom failure text");
    let handled = ToolErrors::handler(|error| {
        (error.class() == "ValueError").then(|| format!("handled value error: {error}"))
    });
    let out = run(handled.clone()).await.unwrap();
    assert_eq!(summary(&out[0]).2, "handled value error: bad value");
    let app = wrap(ToolNode::new([explode()]).with_errors(handled));
    let err = answers(&app, ai(&[("explode", json!({"kind": "key"}))]))
        .await
        .unwrap_err();
    assert!(err.contains("bad key"), "{err}");
    // Never: bad arguments fail the node too.
    let app = wrap(ToolNode::new([fast_len()]).with_errors(ToolErrors::Never));
    assert!(answers(&app, ai(&[("fast_len", json!({}))])).await.is_err());
}

#[tokio::test]
async fn the_last_message_must_be_an_ai_message() {
    let app = wrap(ToolNode::new([fast_len()]));
    let err = answers(&app, Message::human("hi")).await.unwrap_err();
    assert!(err.contains("Last message is not an AIMessage"), "{err}");
}

/// Tools see their call id, the whole state and the graph's store.
#[tokio::test]
async fn tools_see_their_call_id_the_state_and_the_store() {
    let remember = FnTool::new(
        "remember",
        "Remembers the conversation length.",
        json!({"type": "object", "properties": {}}),
        |_args: Json, ctx: ToolContext| async move {
            let store = ctx.store().ok_or_else(|| ToolError::failed("no store"))?;
            let state = ctx
                .state
                .as_ref()
                .map(|state| state.to_json().unwrap_or_default())
                .unwrap_or_default();
            let length = state["messages"].as_array().map_or(0, Vec::len);
            let id = ctx.tool_call_id.clone().unwrap_or_default();
            store
                .put(&["memories"], &id, json!({"length": length}))
                .await
                .map_err(ToolError::from_source)?;
            Ok::<_, ToolError>(format!("remembered {length} under {id}"))
        },
    );
    let store = InMemoryStore::new();
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("tools", ToolNode::new([remember.shared()]))
        .unwrap();
    g.add_edge(START, "tools").unwrap();
    let app = g
        .compile_with(CompileOptions::new().store(store.clone()))
        .unwrap();
    let out = answers(&app, ai(&[("remember", json!({}))])).await.unwrap();
    assert_eq!(summary(&out[0]).2, "remembered 1 under c0");
    let item = store.get(&["memories"], "c0").await.unwrap().unwrap();
    assert_eq!(item.value["length"], 1);
}

/// An agent loop: the model calls a tool, `tools_condition` routes to the
/// tool node, its answer goes back to the model, which then ends.
#[tokio::test]
async fn an_agent_loop_routes_with_tools_condition() {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("agent", |state: MessagesStateView| {
        let reply = match state.messages.last() {
            Some(Message::Tool(result)) => Message::ai(format!("length {}", result.content.text())),
            _ => ai(&[("fast_len", json!({"text": "abc"}))]),
        };
        async move { Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![reply])) }
    })
    .unwrap();
    g.add_node("tools", ToolNode::new([fast_len()])).unwrap();
    g.add_edge(START, "agent").unwrap();
    g.add_conditional_edges(
        "agent",
        |state: &MessagesStateView| tools_condition(&state.messages),
        None,
    )
    .unwrap();
    g.add_edge("tools", "agent").unwrap();
    let app = g.compile().unwrap();
    let out = answers(&app, Message::human("go")).await.unwrap();
    let texts: Vec<String> = out.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["", "3", "length 3"]);
}

fn fixture() -> Json {
    let path = format!(
        "{}/../../fixtures/traces/28_tool_node.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The recorded tool messages as `(name, tool_call_id, content, status)`.
fn recorded(messages: &Json) -> Vec<(String, String, String, ToolStatus)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = |key: &str| m[key].as_str().unwrap_or_default().to_owned();
            let status = if m["status"] == "error" {
                ToolStatus::Error
            } else {
                ToolStatus::Success
            };
            (text("name"), text("tool_call_id"), text("content"), status)
        })
        .collect()
}

#[tokio::test]
async fn trace_28_parallel_calls_keep_order() {
    let app = wrap(ToolNode::new([slow_echo(), fast_len()]));
    let call = ai(&[
        ("slow_echo", json!({"text": "a"})),
        ("fast_len", json!({"text": "abcd"})),
    ]);
    let ours: Vec<_> = answers(&app, call)
        .await
        .unwrap()
        .iter()
        .map(summary)
        .collect();
    let expected = &fixture()["parallel_calls_keep_order"][0]["tools"]["messages"];
    assert_eq!(ours, recorded(expected));
}

/// Python's `catch(lambda: ...["messages"][-1])` of a run: the tool
/// message as `{"ok": (name, call id, content, status)}`, or the failure
/// as `{"raised": {"$error", "message"}}`, a `KeyError`'s message quoted as
/// Python's `str` of it is.
async fn outcome(app: &CompiledStateGraph, call: Message) -> Json {
    let input = MessagesState {
        messages: vec![call],
    };
    match app
        .invoke_typed::<MessagesState>(input, &RunnableConfig::default())
        .await
    {
        Ok(out) => {
            let messages = out.into_state().messages;
            let (name, id, content, status) = summary(messages.last().unwrap());
            json!({"ok": [name, id, content, status == ToolStatus::Error]})
        }
        Err(stategraph_pregel::PregelError::Node { error, .. }) => {
            let message = match error.class() {
                "KeyError" => stategraph_llm::python_str_repr(error.message()),
                _ => error.message().to_owned(),
            };
            json!({"raised": {"$error": error.class(), "message": message}})
        }
        Err(other) => panic!("unexpected failure: {other}"),
    }
}

/// A recorded `catch` as [`outcome`] writes it.
fn recorded_outcome(caught: &Json) -> Json {
    match caught.get("ok") {
        Some(message) => {
            let (name, id, content, status) = recorded(&json!([message])).remove(0);
            json!({"ok": [name, id, content, status == ToolStatus::Error]})
        }
        None => caught.clone(),
    }
}

#[tokio::test]
async fn trace_28_handle_tool_errors() {
    let variants = [
        ("default", ToolErrors::InvalidCalls),
        ("true", ToolErrors::All),
        ("false", ToolErrors::Never),
        ("string", ToolErrors::Text("custom failure text".into())),
        (
            "callable_typed_ValueError",
            ToolErrors::handler(|error| {
                (error.class() == "ValueError").then(|| format!("handled value error: {error}"))
            }),
        ),
        (
            "exception_type_ValueError",
            ToolErrors::classes(["ValueError"]),
        ),
        (
            "tuple_KeyError_TypeError",
            ToolErrors::classes(["KeyError", "TypeError"]),
        ),
    ];
    let expected = &fixture()["handle_tool_errors"];
    for (name, errors) in variants {
        let app = wrap(ToolNode::new([explode()]).with_errors(errors));
        for (kind, key) in [("value", "value_error"), ("key", "key_error")] {
            let ours = outcome(&app, ai(&[("explode", json!({ "kind": kind }))])).await;
            assert_eq!(
                ours,
                recorded_outcome(&expected[name][key]),
                "{name} {kind}"
            );
        }
    }
}

#[tokio::test]
async fn trace_28_invalid_args_default_handler() {
    let app = wrap(ToolNode::new([slow_echo(), fast_len()]));
    let ours = outcome(&app, ai(&[("fast_len", json!({"wrong": 1}))])).await;
    let recorded = recorded_outcome(&fixture()["invalid_args_default_handler"]);
    assert_eq!(ours, recorded);
}

/// LangGraph refuses a bare `ToolNode` at run time; ours does not compile
/// bare (see the module doc), and runs as a graph's node.
#[tokio::test]
async fn trace_28_bare_invoke_outside_graph() {
    let recorded = &fixture()["bare_invoke_outside_graph"]["raised"];
    assert_eq!(recorded["$error"], "ValueError");
    assert_eq!(
        recorded["message"],
        "Missing required config key 'N/A' for 'tools'."
    );
    let app = wrap(ToolNode::new([slow_echo(), fast_len()]));
    let call = ai(&[
        ("slow_echo", json!({"text": "a"})),
        ("fast_len", json!({"text": "abcd"})),
    ]);
    assert_eq!(answers(&app, call).await.unwrap().len(), 2);
}

#[tokio::test]
async fn trace_28_fixed_text_handler() {
    let errors = ToolErrors::Text("custom failure text".into());
    let app = wrap(ToolNode::new([explode()]).with_errors(errors));
    let expected = &fixture()["handle_tool_errors"]["string"];
    for (kind, key) in [("value", "value_error"), ("key", "key_error")] {
        let out = answers(&app, ai(&[("explode", json!({ "kind": kind }))]))
            .await
            .unwrap();
        let recorded = recorded(&json!([expected[key]["ok"]]));
        assert_eq!(vec![summary(&out[0])], recorded, "{kind}");
    }
}

#[test]
fn trace_28_tools_condition() {
    let expected = &fixture()["tools_condition"];
    let with_calls = tools_condition(&[ai(&[("fast_len", json!({"text": ""}))])]);
    assert_eq!(with_calls, expected["with_calls"]);
    assert_eq!(
        tools_condition(&[Message::ai("x")]),
        expected["without_calls"]
    );
    assert_eq!(tools_condition(&[]), "__end__");
    // Tools are reachable through the node for every tool type.
    assert_eq!(fast_len().name(), "fast_len");
}

/// `S(MessagesState)` with `visits: Annotated[list, operator.add]`.
#[derive(stategraph_graph::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Visits {
    #[state(reducer = stategraph_llm::add_messages)]
    messages: Vec<Message>,
    #[state(reducer = append)]
    visits: Vec<String>,
}

/// The case's `record`: a tool returning a `Command` that answers its call
/// with a tool message, records a visit and jumps to `after`.
fn record() -> SharedTool {
    FnTool::typed(
        "record",
        "Record a visit and jump to the `after` node.",
        |args: Json, ctx: ToolContext| async move {
            let where_ = args["where"].as_str().unwrap_or_default().to_owned();
            let call_id = ctx.tool_call_id.clone().unwrap_or_default();
            let mut answer =
                stategraph_llm::ToolMessage::new(format!("recorded {where_}"), call_id.clone());
            answer.id = Some(format!("tm-{call_id}"));
            let command = stategraph_graph::Command::new()
                .update("visits", stategraph_core::Value::new(vec![where_]))
                .update(
                    "messages",
                    stategraph_core::Value::new(vec![Message::from(answer)]),
                )
                .goto("after");
            Ok::<_, ToolError>(stategraph_llm::ToolOutput::from(command))
        },
    )
    .shared()
}

#[tokio::test]
async fn trace_28_command_tool_updates() {
    let mut g = StateGraph::typed::<Visits>();
    g.add_node("agent", |state: VisitsView| async move {
        let reply = match state.messages.last() {
            Some(Message::Human(_)) => ai(&[
                ("record", json!({"where": "paris"})),
                ("fast_len", json!({"text": "abc"})),
            ]),
            _ => {
                // Runs in the same step as `after`; finishes second.
                tokio::time::sleep(Duration::from_millis(50)).await;
                AiMessage::new("done").with_id("ai-done").into()
            }
        };
        Ok::<_, NodeError>(VisitsUpdate::default().messages(vec![reply]))
    })
    .unwrap();
    g.add_node("tools", ToolNode::new([record(), fast_len()]))
        .unwrap();
    g.add_node("after", |_s: VisitsView| async move {
        Ok::<_, NodeError>(VisitsUpdate::default().visits(vec!["after-node".to_owned()]))
    })
    .unwrap();
    g.add_edge(START, "agent").unwrap();
    g.add_conditional_edges("agent", |s: &VisitsView| tools_condition(&s.messages), None)
        .unwrap();
    g.add_edge("tools", "agent").unwrap();
    let input = json!({"messages": [{"type": "human", "content": "go", "id": "h1"}], "visits": []});
    let streamed = crate::support::stream_ok(
        &g.compile().unwrap(),
        input,
        &RunnableConfig::default(),
        stategraph_graph::StreamMode::Updates,
    )
    .await;
    let expected = crate::support::fixture("28_tool_node")["command_tool_updates"].clone();
    crate::support::assert_trace_ids(
        &crate::support::py_messages(&streamed.payloads()),
        &expected,
    );
}

#[tokio::test]
async fn a_command_must_answer_its_own_call() {
    let forgetful = FnTool::typed(
        "forgetful",
        "Jumps without answering.",
        |_args: Json, _ctx| async move {
            Ok::<_, ToolError>(stategraph_llm::ToolOutput::from(
                stategraph_graph::Command::new().goto("after"),
            ))
        },
    )
    .shared();
    let err = answers(
        &wrap(ToolNode::new([forgetful])),
        ai(&[("forgetful", json!({}))]),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("Expected to have a matching ToolMessage"),
        "{err}"
    );
}
