//! The tool half of golden trace 29 (injected arguments), at the tool level:
//! the model-visible schemas of `fixtures/traces/29_injected_args.json`
//! (properties and required keys; pydantic's `title`s are Python detail) and
//! the four tool results, with the state, the call id, the config and a store
//! given through `ToolContext`. Running them from a `ToolNode` inside a graph
//! is the prebuilt crate's part of the case.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value as Json, json};
use stategraph_core::{RunnableConfig, Value};
use stategraph_llm::schemars::JsonSchema;
use stategraph_llm::{
    FnTool, Injected, SharedTool, Tool, ToolCall, ToolContext, ToolError, run_tool_call,
};

fn fixture(key: &str) -> Json {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/29_injected_args.json");
    let all: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all[key].clone()
}

/// A stand-in for the graph store: `(namespace, key, value)` rows.
#[derive(Default)]
struct FakeStore(Mutex<Vec<(Vec<String>, String, Json)>>);

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct WhoamiArgs {
    state: Json,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct JustUserArgs {
    user: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct RememberArgs {
    fact: String,
    call_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "stategraph_llm::schemars")]
struct RuntimeInfoArgs {
    x: i64,
}

fn tools() -> Vec<SharedTool> {
    let whoami = FnTool::typed(
        "whoami",
        "Return the user and the number of messages.",
        |args: WhoamiArgs, _ctx| async move {
            let messages = args.state["messages"].as_array().map_or(0, Vec::len);
            Ok::<_, ToolError>(format!(
                "{} with {messages} messages",
                args.state["user"].as_str().unwrap_or("?")
            ))
        },
    )
    .inject("state", Injected::State);
    let just_user = FnTool::typed(
        "just_user",
        "Return a single injected state key.",
        |args: JustUserArgs, _ctx| async move { Ok::<_, ToolError>(format!("user={}", args.user)) },
    )
    .inject("user", Injected::StateKey("user".into()));
    let remember = FnTool::typed(
        "remember",
        "Store a fact.",
        |args: RememberArgs, ctx: ToolContext| async move {
            let store = ctx
                .get::<FakeStore>()
                .ok_or_else(|| ToolError::failed("no store"))?;
            store.0.lock().unwrap().push((
                vec!["facts".into()],
                args.call_id.clone(),
                json!({"fact": args.fact}),
            ));
            Ok::<_, ToolError>(format!("stored {} under {}", args.fact, args.call_id))
        },
    )
    .inject("store", Injected::Store)
    .inject("call_id", Injected::ToolCallId);
    let runtime_info = FnTool::typed(
        "runtime_info",
        "Use the ToolRuntime.",
        |args: RuntimeInfoArgs, ctx: ToolContext| async move {
            let state = ctx.state.as_ref().unwrap().to_json().unwrap();
            let has_store = if ctx.get::<FakeStore>().is_some() {
                "True"
            } else {
                "False"
            };
            Ok::<_, ToolError>(format!(
                "x={} call={} user={} thread={} has_store={has_store}",
                args.x,
                ctx.tool_call_id.as_deref().unwrap_or("?"),
                state["user"].as_str().unwrap_or("?"),
                ctx.config().thread_id().unwrap_or("?"),
            ))
        },
    )
    .inject("runtime", Injected::Runtime);
    vec![
        Arc::new(whoami),
        Arc::new(just_user),
        Arc::new(remember),
        Arc::new(runtime_info),
    ]
}

/// A pydantic property schema without its `title`.
fn untitled(property: &Json) -> Json {
    let mut property = property.clone();
    if let Some(map) = property.as_object_mut() {
        map.remove("title");
    }
    property
}

#[test]
fn model_visible_schemas_hide_injected_arguments() {
    let expected = fixture("model_visible_schemas");
    for tool in tools() {
        let schema = tool.schema();
        let want = &expected[tool.name()];
        assert_eq!(schema.description, want["description"], "{}", tool.name());
        let ours = &schema.parameters;
        assert_eq!(ours["type"], want["type"], "{}", tool.name());
        assert_eq!(
            ours.get("required"),
            want.get("required"),
            "{}",
            tool.name()
        );
        let ours_props = ours["properties"].as_object().unwrap();
        let want_props = want["properties"].as_object().unwrap();
        let names = |m: &serde_json::Map<String, Json>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(ours_props), names(want_props), "{}", tool.name());
        for (name, want) in want_props {
            assert_eq!(
                ours_props[name]["type"],
                untitled(want)["type"],
                "{}.{name}",
                tool.name()
            );
        }
    }
}

#[tokio::test]
async fn injected_values_reach_the_tools() {
    let calls = &fixture("updates")[0]["agent"]["messages"][0]["tool_calls"];
    let calls: Vec<ToolCall> = serde_json::from_value(calls.clone()).unwrap();
    let expected = &fixture("updates")[1]["tools"]["messages"];
    let store = Arc::new(FakeStore::default());
    let state = Value::from_json(json!({
        "messages": [
            {"type": "human", "content": "go", "id": "h1"},
            {"type": "ai", "content": "", "id": "ai-1"},
        ],
        "user": "ann",
    }));
    let tools = tools();
    for (i, call) in calls.iter().enumerate() {
        let ctx = ToolContext::default()
            .with_state(state.clone())
            .with_config(RunnableConfig::thread("inj"))
            .with_extension(Arc::clone(&store));
        let message = run_tool_call(&tools, call, ctx).await.unwrap();
        assert_eq!(
            message.content.text(),
            expected[i]["content"].as_str().unwrap(),
            "{}",
            call.name
        );
        assert_eq!(message.name.as_deref(), expected[i]["name"].as_str());
        assert_eq!(message.tool_call_id, expected[i]["tool_call_id"]);
    }
    let rows = store.0.lock().unwrap().clone();
    let rows = json!(
        rows.into_iter()
            .map(|(ns, key, value)| json!([ns, key, value]))
            .collect::<Vec<_>>()
    );
    assert_eq!(rows, fixture("store_after"));
}
