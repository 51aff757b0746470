//! Tools that pause the run with `interrupt`: the pause reaches the caller
//! whatever the error policy, each call has its own interrupt id (in v2 as
//! a task of its own; in v1, where one task runs every call, as a scope of
//! that task), and resuming answers each call, never another.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, CompileOptions};
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::{AgentVersion, ToolErrors, ToolNode, create_react_agent, interrupt};

/// Asks a person before "deleting" `path`.
fn delete() -> SharedTool {
    Arc::new(FnTool::typed(
        "delete",
        "Deletes a file.",
        |args: Json, ctx| async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            // The first call reaches its question last: answers must follow
            // the call, not the order questions are asked in.
            if path == "a.txt" {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
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

/// A v1 agent whose saver keeps checkpoints as JSON, as the SQLite and
/// PostgreSQL savers do: recorded answers survive a round trip.
fn v1_agent() -> stategraph_graph::CompiledStateGraph {
    let saver = InMemorySaver::with_serializer(stategraph_checkpoint::serde::JsonSerializer);
    create_react_agent(model(), [delete()])
        .version(AgentVersion::V1)
        .compile_options(CompileOptions::new().checkpointer(saver))
        .build()
        .unwrap()
}

/// The pending interrupts of a run's output, as (id, path asked about).
fn pending(out: &Json) -> Vec<(String, String)> {
    out["__interrupt__"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|i| {
                    let id = i["id"].as_str().unwrap().to_owned();
                    (id, i["value"]["confirm"].as_str().unwrap().to_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the agent on the thread and returns its output as JSON.
async fn invoke(
    agent: &stategraph_graph::CompiledStateGraph,
    input: impl Into<stategraph_pregel::Input>,
    config: &RunnableConfig,
) -> Json {
    agent
        .invoke(input, config)
        .await
        .unwrap()
        .to_json()
        .unwrap()
}

fn tool_results(out: &Json) -> Vec<String> {
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
    messages
        .iter()
        .filter_map(|m| m.as_tool().map(|t| t.content.text().into_owned()))
        .collect()
}

#[tokio::test]
async fn in_v1_every_call_of_the_task_pauses_at_once_with_an_id_of_its_own() {
    let agent = v1_agent();
    let config = RunnableConfig::thread("v1-both");
    let out = invoke(&agent, json!({"messages": [["user", "clean up"]]}), &config).await;
    let asked = pending(&out);
    let paths: Vec<&str> = asked.iter().map(|(_, path)| path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "b.txt"], "{out:#}");
    assert_ne!(asked[0].0, asked[1].0);

    // A bare answer cannot say which call it is for.
    let err = agent
        .invoke(Command::new().resume(Value::new("yes")), &config)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("multiple pending interrupts"),
        "{err}"
    );

    let answers = asked.iter().map(|(id, path)| {
        let answer = if path == "a.txt" { "yes" } else { "no" };
        (id.clone(), Value::new(answer))
    });
    let out = invoke(&agent, Command::new().resume_by_id(answers), &config).await;
    assert_eq!(tool_results(&out), ["a.txt: yes", "b.txt: no"]);
    assert!(pending(&out).is_empty());
}

#[tokio::test]
async fn in_v1_an_answered_call_keeps_its_answer_while_the_other_waits() {
    let agent = v1_agent();
    let config = RunnableConfig::thread("v1-one-by-one");
    let out = invoke(&agent, json!({"messages": [["user", "clean up"]]}), &config).await;
    let asked = pending(&out);
    let (a_id, b_id) = (asked[0].0.clone(), asked[1].0.clone());

    // Answer b only: a asks again, under the same id.
    let out = invoke(
        &agent,
        Command::new().resume_by_id([(b_id.clone(), Value::new("no"))]),
        &config,
    )
    .await;
    assert_eq!(pending(&out), [(a_id.clone(), "a.txt".to_owned())]);

    // One question left: a bare answer is a's, and b keeps its own.
    let out = invoke(&agent, Command::new().resume(Value::new("yes")), &config).await;
    assert_eq!(tool_results(&out), ["a.txt: yes", "b.txt: no"]);
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
    assert_eq!(messages.last().unwrap().text(), "finished");
}
