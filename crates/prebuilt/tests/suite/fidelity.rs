//! Agent behaviours checked against LangGraph 1.2.22 beyond the shared
//! traces (issue 23), each compared with what LangGraph did, recorded by the
//! script of the same name in `fixtures/fidelity/record/`.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::NodeError;
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{AgentStateUpdate, AgentStateView, HistoryRepair, create_react_agent};

use crate::support;

fn shown(messages: &[Message]) -> Json {
    messages
        .iter()
        .map(|m| json!({"type": m.message_type(), "content": m.text()}))
        .collect()
}

fn lookup() -> SharedTool {
    Arc::new(FnTool::typed(
        "lookup",
        "Looks something up.",
        |args: Json, _ctx| async move {
            Ok::<_, ToolError>(format!("found {}", args["query"].as_str().unwrap_or("")))
        },
    ))
}

/// Item 2: a pre-model hook shows the model `[System, last ToolMessage]` as
/// `llm_input_messages`. The model is sent that window as it is (the result
/// whose call is outside it included) and the run ends; no repair drops the
/// result and makes the model call its tool again.
#[tokio::test]
async fn llm_input_window() {
    let expected = support::fidelity("llm_input_window");
    for policy in [
        HistoryRepair::SynthesizeError,
        HistoryRepair::DropCalls,
        HistoryRepair::Error,
    ] {
        let model = Arc::new(ScriptedChatModel::new([
            AiMessage::new("")
                .with_tool_calls(vec![
                    ToolCall::new("lookup", json!({"query": "x"})).with_id("c1"),
                ])
                .with_id("ai-1"),
            AiMessage::new("done").with_id("ai-2"),
        ]));
        let agent =
            create_react_agent(model.clone(), [lookup()])
                .history_repair(policy)
                .pre_model_hook(|state: AgentStateView| {
                    let last_tool = state
                        .messages
                        .iter()
                        .rev()
                        .find(|m| matches!(m, Message::Tool(_)))
                        .cloned();
                    let window: Vec<Message> = std::iter::once(Message::system("be brief"))
                        .chain(last_tool)
                        .collect();
                    async move {
                        Ok::<_, NodeError>(AgentStateUpdate::default().llm_input_messages(window))
                    }
                })
                .build()
                .unwrap();
        let out = agent
            .invoke(
                json!({"messages": [{"type": "human", "content": "find x"}]}),
                &RunnableConfig::default(),
            )
            .await
            .unwrap()
            .to_json()
            .unwrap();
        let saw: Vec<Json> = model.calls().iter().map(|c| shown(&c.messages)).collect();
        assert_eq!(Json::Array(saw), expected["model_saw"], "{policy:?}");
        let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
        assert_eq!(shown(&messages), expected["final"], "{policy:?}");
    }
}

/// Item 9: the `tools` stream mode. A call that answers sends
/// `tool-started` then `tool-finished` (with its tool message), a failing
/// one `tool-started` then `tool-error` (its error is then answered to the
/// model by the error policy); and `emit_output_delta` streams partial
/// output in between.
#[tokio::test]
async fn tools_stream_mode() {
    use futures::StreamExt;
    use stategraph_graph::{RunOptions, StreamMode};
    use stategraph_prebuilt::ToolErrors;

    let expected = support::fidelity("tools_stream_mode");
    let broken: SharedTool = Arc::new(FnTool::typed(
        "broken",
        "Always fails.",
        |_: Json, _ctx| async { Err::<String, _>(ToolError::failed("disk full")) },
    ));
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("")
            .with_tool_calls(vec![
                ToolCall::new("lookup", json!({"query": "x"})).with_id("c1"),
                ToolCall::new("broken", json!({"query": "y"})).with_id("c2"),
            ])
            .with_id("ai-1"),
        AiMessage::new("done").with_id("ai-2"),
    ]));
    let agent = create_react_agent(model, [lookup(), broken])
        .handle_tool_errors(ToolErrors::All)
        .build()
        .unwrap();
    let input = json!({"messages": [{"type": "human", "content": "find x"}]});
    let options = RunOptions::new().subgraphs(true);
    let mut events: Vec<Json> = agent
        .stream_with(
            input,
            &RunnableConfig::default(),
            StreamMode::Tools,
            options,
        )
        .map(|chunk| {
            let chunk = chunk.unwrap();
            let mut event = chunk.to_json();
            if event["event"] == "tool-finished" {
                let output = &event["output"];
                event["output"] = json!({
                    "type": output["type"], "content": output["content"],
                    "tool_call_id": output["tool_call_id"], "name": output["name"],
                    "status": output["status"],
                });
            }
            json!([chunk.namespace.to_vec(), chunk.mode.as_str(), event])
        })
        .collect()
        .await;
    // The two calls run as tasks of one step: each call's events are in
    // order, the calls in either.
    let by_call = |e: &Json| e[2]["tool_call_id"].as_str().unwrap_or_default().to_owned();
    events.sort_by_key(by_call);
    let mut theirs = expected["events"].as_array().unwrap().clone();
    theirs.sort_by_key(by_call);
    assert_eq!(events, theirs);

    // Partial output from inside a tool.
    let chatty: SharedTool = Arc::new(FnTool::typed(
        "chatty",
        "Streams.",
        |_: Json, ctx: stategraph_llm::ToolContext| async move {
            ctx.emit_output_delta(json!("half"));
            Ok::<_, ToolError>("all".to_owned())
        },
    ));
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![ToolCall::new("chatty", json!({})).with_id("c3")]),
        AiMessage::new("done"),
    ]));
    let agent = create_react_agent(model, [chatty]).build().unwrap();
    let kinds: Vec<Json> = agent
        .stream(
            input_for("go"),
            &RunnableConfig::default(),
            StreamMode::Tools,
        )
        .map(|chunk| chunk.unwrap().to_json())
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|e| json!([e["event"], e.get("delta").cloned().unwrap_or(Json::Null)]))
        .collect();
    assert_eq!(
        kinds,
        [
            json!(["tool-started", null]),
            json!(["tool-output-delta", "half"]),
            json!(["tool-finished", null])
        ]
    );
}

fn input_for(text: &str) -> Json {
    json!({"messages": [{"type": "human", "content": text}]})
}
