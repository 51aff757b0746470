//! Golden trace 29: injected tool arguments, written with `#[tool]` as a
//! user would. The whole state (`#[inject(state)]`, LangGraph's
//! `InjectedState`), one state key (`#[inject(state = "user")]`,
//! `InjectedState("user")`), the call id (`#[inject(tool_call_id)]`,
//! `InjectedToolCallId`), and the store and runtime (LangGraph's
//! `InjectedStore` and `ToolRuntime`; ours: a `ToolContext` parameter,
//! which carries the call id, the state, the config and the store). The
//! injected arguments are hidden from the model-visible schema and filled
//! by `ToolNode`.
//!
//! Compared exactly (after id normalisation): the `updates` chunks (the
//! agent's calls, then the four tool messages with their contents, names,
//! call ids and `<uuid:N>` ids) and `store_after`.
//!
//! Compared exactly but for two things: `model_visible_schemas`.
//! Pydantic's schemas and ours (schemars, through `Tool::schema`) agree on
//! the root `title` (the tool name), `type`, the properties with their
//! pydantic `title`s (`"Fact"`, `"X"`) and `type`s, and `required`. The
//! description is `ToolSchema::description` (pydantic puts it inside the
//! schema), and schemars' `format` hints (`"int64"`), which pydantic does
//! not write, are dropped before comparing.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompileOptions, NodeError, START, State, StateGraph, StreamMode};
use stategraph_llm::{AiMessage, Message, SharedTool, Tool, ToolCall, ToolContext, ToolError};
use stategraph_macros::tool;
use stategraph_prebuilt::ToolNode;
use stategraph_store::{InMemoryStore, SearchOp, Store, ToolContextStore, ns};

use crate::support::{assert_trace_ids, fixture, py_messages, stream_ok};

fn expected(key: &str) -> Json {
    fixture("29_injected_args")[key].clone()
}

/// The case's state: `MessagesState` plus a `user`.
#[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct S {
    #[state(reducer = stategraph_llm::add_messages)]
    messages: Vec<Message>,
    user: String,
}

/// Return the user and the number of messages.
#[tool]
async fn whoami(#[inject(state)] state: Json) -> String {
    let messages = state["messages"].as_array().map_or(0, Vec::len);
    format!(
        "{} with {messages} messages",
        state["user"].as_str().unwrap_or_default()
    )
}

/// Return a single injected state key.
#[tool]
async fn just_user(#[inject(state = "user")] user: String) -> String {
    format!("user={user}")
}

/// Store a fact.
#[tool]
async fn remember(
    fact: String,
    #[inject(tool_call_id)] call_id: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let store = ctx.store().ok_or_else(|| ToolError::failed("no store"))?;
    store
        .put(&["facts"], &call_id, json!({"fact": fact}))
        .await
        .map_err(ToolError::from_source)?;
    Ok(format!("stored {fact} under {call_id}"))
}

/// Use the ToolRuntime.
#[tool]
async fn runtime_info(x: i64, ctx: ToolContext) -> String {
    let state = ctx
        .state
        .as_ref()
        .and_then(|state| state.to_json().ok())
        .unwrap_or_default();
    let python_bool = |b: bool| if b { "True" } else { "False" };
    format!(
        "x={x} call={} user={} thread={} has_store={}",
        ctx.tool_call_id.as_deref().unwrap_or_default(),
        state["user"].as_str().unwrap_or_default(),
        ctx.config().thread_id().unwrap_or_default(),
        python_bool(ctx.store().is_some()),
    )
}

fn tools() -> Vec<SharedTool> {
    vec![
        Arc::new(WhoamiTool),
        Arc::new(JustUserTool),
        Arc::new(RememberTool),
        Arc::new(RuntimeInfoTool),
    ]
}

/// Our model-visible schema as pydantic writes it: the description inside,
/// without schemars' `format` hints.
fn comparable(schema: &Json, description: &str) -> Json {
    fn without_format(json: &Json) -> Json {
        match json {
            Json::Object(map) => Json::Object(
                map.iter()
                    .filter(|(key, _)| *key != "format")
                    .map(|(key, value)| (key.clone(), without_format(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut out = without_format(schema);
    out["description"] = json!(description);
    out
}

#[test]
fn trace_29_model_visible_schemas() {
    let recorded = expected("model_visible_schemas");
    let recorded: serde_json::Map<String, Json> = recorded
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    let ours: serde_json::Map<String, Json> = tools()
        .iter()
        .map(|tool| {
            let schema = tool.schema();
            (
                schema.name.clone(),
                comparable(&schema.parameters, &schema.description),
            )
        })
        .collect();
    assert_eq!(Json::Object(ours), Json::Object(recorded));
}

#[tokio::test]
async fn trace_29_tool_node_fills_injected_args() {
    let mut g = StateGraph::typed::<S>();
    g.add_node("agent", |state: S| async move {
        let update = SUpdate::default();
        if !matches!(state.messages.last(), Some(Message::Human(_))) {
            return Ok::<_, NodeError>(update);
        }
        let plan = [
            ("whoami", json!({})),
            ("just_user", json!({})),
            ("remember", json!({"fact": "sky is blue"})),
            ("runtime_info", json!({"x": 7})),
        ];
        let calls = plan
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall::new(name, args).with_id(format!("c{i}")))
            .collect();
        let call = AiMessage::new("").with_tool_calls(calls).with_id("ai-1");
        Ok(update.messages(vec![call.into()]))
    })
    .unwrap();
    g.add_node("tools", ToolNode::new(tools())).unwrap();
    g.add_edge(START, "agent").unwrap();
    g.add_edge("agent", "tools").unwrap();
    let store = InMemoryStore::new();
    let app = g
        .compile_with(
            CompileOptions::new()
                .checkpointer(stategraph_checkpoint::InMemorySaver::new())
                .store(store.clone()),
        )
        .unwrap();
    let input =
        json!({"messages": [{"type": "human", "content": "go", "id": "h1"}], "user": "ann"});
    let streamed = stream_ok(
        &app,
        input,
        &RunnableConfig::thread("inj"),
        StreamMode::Updates,
    )
    .await;
    assert_trace_ids(&py_messages(&streamed.payloads()), &expected("updates"));

    let found = store.search(SearchOp::new(ns(["facts"]))).await.unwrap();
    let store_after: Vec<Json> = found
        .iter()
        .map(|hit| json!([hit.item.namespace, hit.item.key, hit.item.value]))
        .collect();
    assert_eq!(Json::Array(store_after), expected("store_after"));
}
