//! A BigTool agent over a catalogue of 1,200 tools: four math and text
//! operations, each in 300 variants (`scale_by_1` .. `scale_by_300`,
//! `repeat_1` .. `repeat_300`, ...). The tools' descriptions are indexed in
//! an in-memory store; the model first asks `retrieve_tools` for what it
//! needs, is then offered only what was found, calls it, and answers.
//!
//! ```text
//! cargo run -p bigtool
//! ```

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use anyhow::ensure;
use serde_json::{Value as Json, json};
use stategraph::llm::{AiMessage, FnTool, HashEmbeddings, ScriptedChatModel, ToolCall, ToolError};
use stategraph::prelude::*;
use stategraph::store::{IndexConfig, StoreOptions};
use stategraph_bigtool::{ToolRegistry, create_bigtool_agent};

/// The operation families: name, what it does, how it computes.
const FAMILIES: [(&str, &str); 4] = [
    ("scale_by", "Multiplies a number by"),
    ("shift_by", "Adds to a number the constant"),
    ("repeat", "Repeats a text this many times:"),
    ("pad_left", "Pads a text on the left to a width of"),
];

/// The catalogue: every family in 300 variants (1,200 tools).
fn catalogue() -> anyhow::Result<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    for (family, what) in FAMILIES {
        for k in 1..=300_u32 {
            let name = format!("{family}_{k}");
            let description = format!("{what} {k}.");
            let tool = FnTool::typed(
                name.clone(),
                description,
                move |args: Json, _ctx| async move {
                    let out = match family {
                        "scale_by" => json!(args["x"].as_f64().unwrap_or(0.0) * f64::from(k)),
                        "shift_by" => json!(args["x"].as_f64().unwrap_or(0.0) + f64::from(k)),
                        "repeat" => json!(args["text"].as_str().unwrap_or("").repeat(k as usize)),
                        _ => json!(format!(
                            "{:>width$}",
                            args["text"].as_str().unwrap_or(""),
                            width = k as usize
                        )),
                    };
                    Ok::<_, ToolError>(out.to_string())
                },
            );
            registry.insert(format!("{family}/{k}"), Arc::new(tool))?;
        }
    }
    Ok(registry)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let registry = catalogue()?;
    println!("catalogue: {} tools", registry.len());
    let index = IndexConfig::new(256, HashEmbeddings::new(256)).with_fields(["description"]);
    let store = InMemoryStore::new().with_options(StoreOptions::new().with_index(index));
    registry.index(&store, &["tools"]).await?;

    // The scripted model: retrieve, call what was found, answer.
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![
            ToolCall::new(
                "retrieve_tools",
                json!({"query": "Multiplies a number by 7"}),
            )
            .with_id("find"),
        ]),
        AiMessage::new("").with_tool_calls(vec![
            ToolCall::new("scale_by_7", json!({"x": 6})).with_id("use"),
        ]),
        AiMessage::new("6 times 7 is 42."),
    ]));
    let agent = create_bigtool_agent(model.clone(), registry)
        .limit(3)
        .compile_options(CompileOptions::new().store(store))
        .build()?;
    let out = agent
        .invoke(
            json!({"messages": [["user", "What is 6 times 7?"]]}),
            &RunnableConfig::default(),
        )
        .await?
        .to_json()?;
    for message in out["messages"].as_array().into_iter().flatten() {
        let calls = &message["tool_calls"];
        if calls.as_array().is_some_and(|c| !c.is_empty()) {
            println!("{}: calls {}", message["type"], calls[0]["name"]);
        } else {
            println!("{}: {}", message["type"], message["content"]);
        }
    }
    let offered: Vec<String> = model.calls()[1]
        .options
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    println!("offered on the second call: {offered:?} (of 1,201)");
    ensure!(
        offered.contains(&"scale_by_7".to_owned()),
        "retrieval found the tool"
    );
    ensure!(offered.len() <= 4, "only retrieved tools are offered");
    let last = out["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    ensure!(last["content"] == "6 times 7 is 42.");
    ensure!(
        out["messages"][4]["content"] == "42.0",
        "the tool ran: {}",
        out["messages"][4]
    );
    Ok(())
}
