//! Tools that pause the run with `interrupt`: the pause reaches the caller
//! whatever the error policy, each call of the v2 agent has its own
//! interrupt id, and resuming answers each call.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, CompileOptions};
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{ToolErrors, ToolNode, create_react_agent, interrupt};

/// Asks a person before "deleting" `path`.
fn delete() -> SharedTool {
    Arc::new(FnTool::typed(
        "delete",
        "Deletes a file.",
        |args: Json, ctx| async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            let answer = interrupt(&ctx, json!({"confirm": path}))?;
            let answer = answer.to_json().map_err(ToolError::from_source)?;
            Ok::<_, ToolError>(format!("{path}: {}", answer.as_str().unwrap_or("?")))
        },
    ))
}

fn model() -> ScriptedChatModel {
    ScriptedChatModel::new([
        AiMessage::new("")
            .with_tool_calls(vec![
                ToolCall::new("delete", json!({"path": "a.txt"})).with_id("c-a"),
                ToolCall::new("delete", json!({"path": "b.txt"})).with_id("c-b"),
            ])
            .with_id("m1"),
        AiMessage::new("finished").with_id("m2"),
    ])
}

#[tokio::test]
async fn each_call_pauses_with_its_own_interrupt_and_resumes_with_its_answer() {
    // Even the catch-everything policy lets the pause through.
    let agent = create_react_agent(model(), [delete()])
        .tool_node(ToolNode::new([delete()]).with_errors(ToolErrors::All))
        .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .build()
        .unwrap();
    let config = RunnableConfig::thread("deletes");
    let out = agent
        .invoke(json!({"messages": [["user", "clean up"]]}), &config)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let pending = out["__interrupt__"].as_array().unwrap().clone();
    assert_eq!(pending.len(), 2, "{out:#}");
    let ids: Vec<String> = pending
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_ne!(ids[0], ids[1]);
    let answers = pending.iter().zip(&ids).map(|(p, id)| {
        let path = p["value"]["confirm"].as_str().unwrap();
        let answer = if path == "a.txt" { "yes" } else { "no" };
        (id.clone(), Value::new(answer))
    });
    let out = agent
        .invoke(Command::new().resume_by_id(answers), &config)
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
    let results: Vec<String> = messages
        .iter()
        .filter_map(|m| m.as_tool().map(|t| t.content.text().into_owned()))
        .collect();
    assert_eq!(results, ["a.txt: yes", "b.txt: no"]);
    assert_eq!(messages.last().unwrap().text(), "finished");
}

#[tokio::test]
async fn outside_a_tool_node_an_interrupt_is_a_plain_failure() {
    let err = interrupt(&stategraph_llm::ToolContext::default(), "hello?").unwrap_err();
    assert!(err.to_string().contains("ToolNode"), "{err}");
}
