//! `bigtool_retrieve_5000`: a BigTool agent over 5,000 generated tools
//! indexed in an `InMemoryStore` (384-dimension `HashEmbeddings`); one run
//! is a retrieval round: the model asks `retrieve_tools`, `select_tools`
//! searches the store (limit 5) and records the ids, the model answers.
//!
//! `bigtool_search_10k_tools`: the retrieval alone over 10,000 tools, as
//! langgraph-bigtool's default `retrieve_tools` does it (a store search,
//! limit 5); `crates/bench/python/bigtool.py` runs the same search on
//! LangGraph's `InMemoryStore`.

use std::sync::Arc;

use serde_json::json;
use stategraph_bigtool::{ToolRegistry, create_bigtool_agent};
use stategraph_core::Value;
use stategraph_graph::{ChannelValues, CompileOptions};
use stategraph_llm::{
    AiMessage, FnTool, HashEmbeddings, Message, ScriptedChatModel, ToolCall, ToolError,
};
use stategraph_store::{InMemoryStore, IndexConfig, SearchOp, Store, StoreOptions};

use crate::graphs::{run_updates, runtime};
use crate::{Outcome, Runner, Workload};

const TOOLS: usize = 5_000;
const FAMILIES: [&str; 10] = [
    "sine",
    "cosine",
    "tangent",
    "logarithm",
    "square root",
    "uppercase",
    "lowercase",
    "reverse",
    "word count",
    "checksum",
];

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "bigtool_retrieve_5000",
            setup: retrieve_5000,
        },
        Workload {
            name: "bigtool_search_10k_tools",
            setup: search_10k,
        },
    ]
}

/// A registry of `count` generated tools, one family each in turn.
fn registry(count: usize) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for i in 0..count {
        let family = FAMILIES[i % FAMILIES.len()];
        let name = format!("{}_{i}", family.replace(' ', "_"));
        let tool = FnTool::typed(
            name,
            format!("Computes the {family} of input number {i}."),
            |_args: serde_json::Value, _ctx| async move { Ok::<_, ToolError>("ok".to_owned()) },
        );
        registry
            .insert(format!("tool-{i}"), Arc::new(tool))
            .unwrap_or_else(|err| panic!("{err}"));
    }
    registry
}

/// A store indexing the registry's descriptions (384-dimension hashes).
fn indexed(rt: &tokio::runtime::Runtime, registry: &ToolRegistry) -> InMemoryStore {
    let index = IndexConfig::new(384, HashEmbeddings::new(384)).with_fields(["description"]);
    let store = InMemoryStore::new().with_options(StoreOptions::new().with_index(index));
    rt.block_on(registry.index(&store, &["tools"]))
        .unwrap_or_else(|err| panic!("cannot index the tools: {err}"));
    store
}

fn search_10k() -> Runner {
    let rt = runtime();
    let store = indexed(&rt, &registry(10_000));
    Box::new(move || {
        let found = rt
            .block_on(
                store.search(
                    SearchOp::new(vec!["tools".to_owned()])
                        .with_query("cosine of a number")
                        .with_page(5, 0),
                ),
            )
            .unwrap_or_else(|err| panic!("search failed: {err}"));
        let ranked = found.iter().filter(|f| f.score.is_some()).count();
        Outcome {
            chunks: 1,
            check: json!({"results": found.len(), "ranked": ranked}).into(),
        }
    })
}

fn retrieve_5000() -> Runner {
    let rt = runtime();
    let registry = registry(TOOLS);
    let store = indexed(&rt, &registry);
    let model = ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![
            ToolCall::new("retrieve_tools", json!({"query": "cosine of a number"})).with_id("r"),
        ]),
        AiMessage::new("done"),
    ])
    .record_calls(false);
    let agent = create_bigtool_agent(model, registry)
        .limit(5)
        .compile_options(CompileOptions::new().store(store))
        .build()
        .unwrap_or_else(|err| panic!("{err}"));
    let input = Value::new(ChannelValues::single(
        "messages",
        Value::new(vec![Message::human("cos?")]),
    ));
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let chunks = run_updates(&rt, &agent, &input, run);
        let selected = chunks
            .iter()
            .filter_map(|chunk| match &chunk.update {
                stategraph_pregel::UpdatePayload::Map(update) => update.get("selected_tool_ids"),
                _ => None,
            })
            .filter_map(|ids| ids.to_json().ok())
            .filter_map(|ids| ids.as_array().map(Vec::len))
            .sum::<usize>();
        Outcome {
            chunks: chunks.len(),
            check: json!({"chunks": chunks.len(), "selected": selected}).into(),
        }
    })
}
