//! Long-term memory across threads: a chat graph remembers what a user
//! tells it ("remember ...") in the store, under that user's namespace, and
//! recalls it by meaning in a later conversation — another thread, so the
//! checkpointer's state is not what carries it. Another user's questions
//! never see the first user's memories.
//!
//! The same graph runs on three stores; only the line that opens the store
//! differs: the in-memory store, SQLite (a file in the temp dir), and
//! PostgreSQL when `STATEGRAPH_POSTGRES_URL` is set (or under
//! `cargo xtask with-postgres -- cargo run -p memory_store`). Each run
//! checks its answers and fails loudly if one is wrong.

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::ensure;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::llm::HashEmbeddings;
use stategraph::prelude::*;
use stategraph::store::{IndexConfig, StoreOptions, ns};

/// Where the PostgreSQL URL is read from.
const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";
/// What the `cargo xtask with-postgres` cluster exports.
const XTASK_URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";

/// One conversation turn: who speaks, what they say, and the replies so far.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Turn {
    user: String,
    said: String,
    #[state(reducer = append)]
    replies: Vec<String>,
}

/// The options every store gets, a semantic index: memories are embedded
/// by their `text` (a deterministic offline embedder; a real app would use
/// an `OpenAiEmbeddings`).
fn options() -> StoreOptions {
    StoreOptions::new()
        .with_index(IndexConfig::new(256, HashEmbeddings::new(256)).with_fields(["text"]))
}

/// The graph: one node that remembers or recalls through the store, under
/// `[root, user]`.
fn graph(store: SharedStore, root: &str) -> anyhow::Result<CompiledStateGraph> {
    let root = root.to_owned();
    let mut graph = StateGraph::typed::<Turn>();
    graph.add_node("assistant", move |turn: TurnView, ctx: TaskContext| {
        let (user, said) = (turn.user.to_string(), turn.said.to_string());
        let root = root.clone();
        async move {
            let store = ctx
                .store()
                .ok_or_else(|| NodeError::new("ValueError", "the graph has no store"))?;
            let memories = [root.as_str(), user.as_str()];
            let reply = if let Some(fact) = said.strip_prefix("remember ") {
                let key = format!("m{}", ctx.task_id());
                store.put(&memories, &key, json!({ "text": fact })).await?;
                format!("noted: {fact}")
            } else {
                let found = store
                    .search(
                        SearchOp::new(ns(memories))
                            .with_query(said.as_str())
                            .with_page(1, 0),
                    )
                    .await?;
                match found.first() {
                    Some(memory) if memory.score.unwrap_or(0.0) > 0.2 => {
                        format!(
                            "you told me: {}",
                            memory.item.value["text"].as_str().unwrap_or("")
                        )
                    }
                    _ => "I don't know yet".to_owned(),
                }
            };
            Ok::<_, NodeError>(TurnUpdate::default().replies(vec![reply]))
        }
    })?;
    graph.add_edge(START, "assistant")?;
    Ok(graph.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .shared_store(store),
    )?)
}

/// Says `said` as `user` on `thread` and returns the assistant's reply.
async fn say(
    app: &CompiledStateGraph,
    thread: &str,
    user: &str,
    said: &str,
) -> anyhow::Result<String> {
    let input = TurnUpdate::default().user(user).said(said);
    let out: Turn = app
        .invoke_typed(input, &RunnableConfig::thread(thread))
        .await?
        .done()?;
    let reply = out.replies.last().cloned().unwrap_or_default();
    println!("  [{thread}] {user}: {said}\n  [{thread}] assistant: {reply}");
    Ok(reply)
}

/// The conversations, checked, on one store, with memories under `root`.
async fn conversations(name: &str, store: SharedStore, root: &str) -> anyhow::Result<()> {
    println!("{name}:");
    let app = graph(store.clone(), root)?;
    // Monday: Alice tells the assistant two things.
    say(
        &app,
        "monday",
        "alice",
        "remember I drink green tea every morning",
    )
    .await?;
    say(&app, "monday", "alice", "remember my cat is called Miso").await?;
    // Tuesday, a new thread: the memories come from the store.
    let tea = say(&app, "tuesday", "alice", "what tea do I drink").await?;
    ensure!(tea.contains("green tea"), "{name}: recalled {tea:?}");
    let cat = say(&app, "tuesday", "alice", "what is my cat called").await?;
    ensure!(cat.contains("Miso"), "{name}: recalled {cat:?}");
    // Bob never sees Alice's memories.
    let bob = say(&app, "wednesday", "bob", "what is my cat called").await?;
    ensure!(bob == "I don't know yet", "{name}: Bob was told {bob:?}");
    let users = store
        .list_namespaces(stategraph::store::ListNamespacesOp::new().with_prefix(ns([root])))
        .await?;
    ensure!(
        users == [ns([root, "alice"])],
        "{name}: namespaces {users:?}"
    );
    println!("  ok: {} namespace(s) of memories\n", users.len());
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let store = InMemoryStore::new().with_options(options()).into_shared();
    conversations("in-memory store", store, "memories").await?;

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let path = std::env::temp_dir().join(format!("stategraph-memory-{stamp}.db"));
    let sqlite = stategraph::checkpoint_sqlite::SqliteStore::open(&path).await?;
    conversations(
        "SQLite store",
        sqlite.with_options(options()).into_shared(),
        "memories",
    )
    .await?;
    let _ = std::fs::remove_file(&path);

    match std::env::var(URL_VAR).or_else(|_| std::env::var(XTASK_URL_VAR)) {
        Ok(url) => {
            let postgres = stategraph::checkpoint_postgres::PostgresStore::connect(&url).await?;
            postgres.setup().await?;
            // A namespace root of its own per run: the database outlives it.
            let root = format!("memories-{stamp}");
            let store = postgres.with_options(options()).into_shared();
            conversations("PostgreSQL store", store, &root).await?;
        }
        Err(_) => println!("PostgreSQL store: not run ({URL_VAR} is not set)"),
    }
    Ok(())
}
