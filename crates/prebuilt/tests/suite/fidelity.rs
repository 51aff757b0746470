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
