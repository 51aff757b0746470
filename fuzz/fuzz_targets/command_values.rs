//! What a client hands a running graph: input values, `Command`s (state
//! updates, destinations, resume answers) and `update_state` values.
//!
//! Input: JSON text (anything else is skipped). On a small graph that
//! pauses (`START -> echo -> ask -> END`, in-memory saver, fresh threads),
//! the value is given as the input of a run, as a `Command` read from it
//! (`update`, `goto` as node names or `{"node", "arg"}` sends, `resume`,
//! `resume_by_id`, `parent`) and as LangGraph's wire form
//! (`Command::from_json`), as the answer to a pending interrupt, by
//! interrupt id, and as an `update_state` value (`as_node` read from it).
//! Every call must return a value or a typed error, never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointSaver, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, Send};

/// A command read from `value`: its `update` (or, without one, the whole
/// value as the update), `goto`, `resume`, `resume_by_id` and `parent`.
fn command(value: &Json) -> Command {
    let mut command = Command::new();
    let update = value.get("update").unwrap_or(value);
    command = command.update_json(update.clone());
    let gotos = match value.get("goto") {
        Some(Json::Array(gotos)) => gotos.clone(),
        Some(one) => vec![one.clone()],
        None => Vec::new(),
    };
    for goto in gotos {
        command = match goto {
            Json::String(node) => command.goto(node),
            Json::Object(send) => {
                let node = send.get("node").and_then(Json::as_str).unwrap_or_default();
                let arg = send.get("arg").cloned().unwrap_or(Json::Null);
                command.goto(Send {
                    node: node.to_owned(),
                    arg: Value::from_json(arg),
                })
            }
            other => command.goto(other.to_string()),
        };
    }
    if let Some(resume) = value.get("resume") {
        command = command.resume(Value::from_json(resume.clone()));
    }
    if let Some(Json::Object(answers)) = value.get("resume_by_id") {
        command = command.resume_by_id(
            answers
                .iter()
                .map(|(id, answer)| (id.clone(), Value::from_json(answer.clone()))),
        );
    }
    if value.get("parent") == Some(&Json::Bool(true)) {
        command = command.to_parent();
    }
    command
}

fuzz_target!(|input: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Json>(input) else {
        return;
    };
    let stategraph_fuzz::Paused { saver, graph } = stategraph_fuzz::paused();
    let threads: Vec<String> = ["input", "command", "resume"]
        .iter()
        .map(|label| stategraph_fuzz::fresh_thread(label))
        .collect();
    let [input_thread, command_thread, resume_thread] = &threads[..] else {
        unreachable!("three labels")
    };
    let input_config = RunnableConfig::thread(input_thread.as_str());
    let command_config = RunnableConfig::thread(command_thread.as_str());
    let resume_config = RunnableConfig::thread(resume_thread.as_str());
    stategraph_fuzz::runtime().block_on(async {
        // As input, then as a command on a fresh thread and on that one.
        let _ = graph.invoke(value.clone(), &input_config).await;
        let _ = graph.invoke(command(&value), &command_config).await;
        let _ = graph.invoke(command(&value), &input_config).await;
        // As the wire form a server receives (`Command::from_json`):
        // a command, or a typed error.
        if let Ok(wire) = Command::from_json(value.clone()) {
            let _ = graph.invoke(wire, &command_config).await;
        }

        // As the answer to a pending interrupt, directly and by id.
        let paused = graph.invoke(json!({"write": "w"}), &resume_config).await;
        assert!(paused.is_ok(), "the plain run pauses: {paused:?}");
        let _ = graph
            .invoke(
                Command::new().resume(Value::from_json(value.clone())),
                &resume_config,
            )
            .await;
        if let Ok(state) = graph.get_state(&resume_config).await
            && let Some(interrupt) = state.interrupts.first()
        {
            let answer = Command::new()
                .resume_by_id([(interrupt.id.clone(), Value::from_json(value.clone()))]);
            let _ = graph.invoke(answer, &resume_config).await;
        }

        // As a state update, as the node the value names (or the last one).
        let as_node = value.get("as_node").and_then(Json::as_str);
        let _ = graph
            .update_state(
                &resume_config,
                Some(Value::from_json(value.clone())),
                as_node,
            )
            .await;
        let _ = graph.get_state(&resume_config).await;
        let _ = graph
            .get_state_history(&resume_config, ListQuery::default())
            .await;
        for thread in &threads {
            saver
                .delete_thread(thread)
                .await
                .expect("the in-memory saver deletes threads");
        }
    });
});
