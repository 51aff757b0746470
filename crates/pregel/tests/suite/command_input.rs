//! A `Command` given as a run's input on a fresh thread, as LangGraph 1.2.22
//! runs it (trace 08 `command_input`): its writes are applied as the input's
//! writes and the tasks they would trigger are discarded; then the command is
//! written to the input channel, so the input node gets it as a `Command`
//! output (applying its update a second time) and its `goto` targets run in
//! the step after.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::json;
use stategraph_channels::{EphemeralValue, Topic};
use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{Command, Goto, NodeOutput, Pregel, PregelNode, Reads, Writer, node_fn};

fn app() -> Pregel {
    let mut builder = Pregel::builder();
    let input = builder
        .add_channel("input", EphemeralValue::<Value>::new())
        .unwrap();
    let log = builder
        .add_channel("log", Topic::<String>::accumulating())
        .unwrap();
    let go = builder
        .add_channel("branch:to:target", EphemeralValue::<Value>::unguarded())
        .unwrap();
    // The input node has no function: it passes its input on, and its writer
    // applies a `Command` the way a StateGraph's input node does.
    let entry_writer: Writer = Arc::new(move |ctx, writes| {
        match ctx.output() {
            NodeOutput::Command(command) => {
                for (key, value) in &command.update {
                    writes.push((ctx.channel(key).unwrap(), value.clone()));
                }
                for goto in &command.goto {
                    if let Goto::Node(node) = goto {
                        assert_eq!(node, "target");
                        writes.push((go, Value::null()));
                    }
                }
                writes.push((log, Value::new("entry got a command")));
            }
            other => panic!("the input node should get the command, got {other:?}"),
        }
        Ok(())
    });
    builder
        .add_node(
            "entry",
            PregelNode::new(vec![input], Reads::Channel(input), None, vec![entry_writer]),
        )
        .unwrap();
    let target_writer: Writer = Arc::new(move |ctx, writes| {
        if let NodeOutput::Value(value) = ctx.output() {
            writes.push((log, value.clone()));
        }
        Ok(())
    });
    builder
        .add_node(
            "target",
            PregelNode::new(
                vec![go],
                Reads::Channel(go),
                Some(node_fn(|_input, ctx| async move {
                    Ok::<_, stategraph_pregel::NodeError>(Value::new(format!(
                        "target ran in step {}",
                        ctx.step()
                    )))
                })),
                vec![target_writer],
            ),
        )
        .unwrap();
    builder.input("input").output("log").build().unwrap()
}

#[tokio::test]
async fn command_input_is_applied_then_given_to_the_input_node() {
    let command = Command::new()
        .update("log", Value::new("injected"))
        .goto("target");
    let out = app()
        .invoke(command, &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        json!([
            "injected",
            "injected",
            "entry got a command",
            "target ran in step 1"
        ])
    );
}

#[tokio::test]
async fn a_typed_input_channel_gets_only_the_command_writes() {
    let app = Pregel::builder()
        .channel("a", EphemeralValue::<i64>::new())
        .unwrap()
        .channel("branch:to:n", EphemeralValue::<Value>::unguarded())
        .unwrap()
        .channel("log", Topic::<String>::accumulating())
        .unwrap()
        .node(
            "n",
            stategraph_pregel::NodeBuilder::new()
                .subscribe_only("branch:to:n")
                .func(|_input: Value, ctx| async move {
                    Ok::<_, stategraph_pregel::NodeError>(Value::new(format!(
                        "n ran in step {}",
                        ctx.step()
                    )))
                })
                .write_to(["log"]),
        )
        .unwrap()
        .input("a")
        .output("log")
        .build()
        .unwrap();
    let command = Command::new().update("log", Value::new("x")).goto("n");
    let out = app
        .invoke(command, &RunnableConfig::default())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), json!(["x", "n ran in step 0"]));
}

#[tokio::test]
async fn resuming_without_a_checkpointer_is_a_runtime_error() {
    let command = Command::new().resume(Value::new("yes"));
    let err = app()
        .invoke(command, &RunnableConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "RuntimeError");
    assert_eq!(
        err.to_string(),
        "Cannot use Command(resume=...) without checkpointer"
    );
}

#[tokio::test]
async fn no_input_names_the_input_channel() {
    let err = app()
        .invoke(stategraph_pregel::Input::Resume, &RunnableConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "EmptyInputError");
    assert_eq!(err.to_string(), "Received no input for input");
}
