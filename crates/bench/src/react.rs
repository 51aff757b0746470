//! `react_agent_{10,100}x[_checkpoint]` (WORKLOADS.md section 5): the
//! prebuilt agent (version v2) with a scripted model calling one tool `n`
//! times, then answering.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use stategraph_core::Value;
use stategraph_graph::{ChannelValues, CompileOptions};
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_prebuilt::create_react_agent;
use stategraph_pregel::UpdatePayload;

use crate::graphs::{run_updates, runtime};
use crate::{Check, Outcome, Runner, Workload};

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "react_agent_10x",
            setup: || runner(10, false),
        },
        Workload {
            name: "react_agent_100x",
            setup: || runner(100, false),
        },
        Workload {
            name: "react_agent_10x_checkpoint",
            setup: || runner(10, true),
        },
        Workload {
            name: "react_agent_100x_checkpoint",
            setup: || runner(100, true),
        },
    ]
}

/// A random uuid (36 characters), as the Python harness uses.
fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn runner(n: usize, checkpoint: bool) -> Runner {
    let tool_name = uuid();
    let search: SharedTool = Arc::new(FnTool::typed(
        tool_name.clone(),
        "",
        |args: serde_json::Value, _ctx| async move {
            let query = args["query"].as_str().unwrap_or_default();
            Ok::<_, ToolError>(format!("result for query: {query}").repeat(10))
        },
    ));
    let mut script: Vec<AiMessage> = (0..n)
        .map(|_| {
            let call = ToolCall::new(tool_name.clone(), json!({"query": uuid().repeat(100)}))
                .with_id(uuid());
            AiMessage::new("")
                .with_tool_calls(vec![call])
                .with_id(uuid())
        })
        .collect();
    script.push(AiMessage::new("answer".repeat(100)).with_id(uuid()));
    let options = if checkpoint {
        CompileOptions::new().checkpointer(stategraph_checkpoint::InMemorySaver::new())
    } else {
        CompileOptions::new()
    };
    let agent = create_react_agent(ScriptedChatModel::new(script).record_calls(false), [search])
        .compile_options(options)
        .build()
        .unwrap_or_else(|err| panic!("{err}"));
    let rt = runtime();
    let input = Value::new(ChannelValues::single(
        "messages",
        Value::new(vec![Message::human("hi?")]),
    ));
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let chunks = run_updates(&rt, &agent, &input, run);
        Outcome {
            chunks: chunks.len(),
            check: Check::later(move || {
                let (mut ai, mut tool, mut final_len) = (0, 0, None);
                let mut tool_lens = BTreeSet::new();
                let mut alternating = true;
                for (i, chunk) in chunks.iter().enumerate() {
                    alternating &= &*chunk.node == if i % 2 == 0 { "agent" } else { "tools" };
                    let UpdatePayload::Map(update) = &chunk.update else {
                        continue;
                    };
                    let Some(messages) = update
                        .get("messages")
                        .and_then(|m| m.downcast_ref::<Vec<Message>>())
                    else {
                        continue;
                    };
                    for message in messages {
                        match message {
                            Message::Ai(m) => {
                                ai += 1;
                                final_len = Some(ascii_len(&m.content.text()));
                            }
                            Message::Tool(m) => {
                                tool += 1;
                                tool_lens.insert(ascii_len(&m.content.text()));
                            }
                            _ => {}
                        }
                    }
                }
                json!({
                    "chunks": chunks.len(),
                    "ai_messages": ai,
                    "tool_messages": tool,
                    "tool_result_lengths": tool_lens,
                    "final_answer_length": final_len,
                    "alternating": alternating,
                })
            }),
        }
    })
}

/// A text's length in characters, as Python's `len`: the byte length for
/// the ASCII texts of this workload, counted only otherwise.
fn ascii_len(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}
