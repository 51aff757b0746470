//! An agent keeps one conversation per thread: a second question on the
//! same thread runs the whole loop again, tools included, on the history.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::CompileOptions;
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{AgentVersion, create_react_agent};

fn echo() -> SharedTool {
    Arc::new(FnTool::typed(
        "echo",
        "Echoes.",
        |args: Json, _ctx| async move {
            Ok::<_, ToolError>(args["text"].as_str().unwrap_or_default().to_owned())
        },
    ))
}

/// Calls `echo` with the last question, then answers with the result.
fn model() -> ScriptedChatModel {
    ScriptedChatModel::from_fn(|messages| match messages.last() {
        Some(Message::Human(question)) => AiMessage::new("").with_tool_calls(vec![ToolCall::new(
            "echo",
            json!({"text": question.content.text()}),
        )]),
        Some(Message::Tool(result)) => AiMessage::new(format!("heard {}", result.content.text())),
        _ => AiMessage::new("?"),
    })
}

async fn second_question_runs_the_tools_again(version: AgentVersion) {
    let agent = create_react_agent(model(), [echo()])
        .version(version)
        .compile_options(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .build()
        .unwrap();
    let config = RunnableConfig::thread("t");
    for (turn, question) in ["one", "two", "three"].into_iter().enumerate() {
        let out = agent
            .invoke(json!({"messages": [["user", question]]}), &config)
            .await
            .unwrap()
            .to_json()
            .unwrap();
        let messages = out["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            4 * (turn + 1),
            "{version:?} turn {turn}: {out:#}"
        );
        assert_eq!(
            messages.last().unwrap()["content"],
            format!("heard {question}")
        );
    }
}

#[tokio::test]
async fn v2_second_question_runs_the_tools_again() {
    second_question_runs_the_tools_again(AgentVersion::V2).await;
}

#[tokio::test]
async fn v1_second_question_runs_the_tools_again() {
    second_question_runs_the_tools_again(AgentVersion::V1).await;
}
