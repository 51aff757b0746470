//! The BigTool agent end to end with the scripted model and the hash
//! embedder: retrieval through the store or a function, what the model is
//! offered, mixed calls, the fixes over langgraph-bigtool, persistence.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_bigtool::{BigToolError, ToolRegistry, add_new, create_bigtool_agent};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{CompileOptions, CompiledStateGraph};
use stategraph_llm::{
    AiMessage, FnTool, HashEmbeddings, Message, ScriptedChatModel, SharedTool, ToolCall, ToolError,
};
use stategraph_store::{InMemoryStore, IndexConfig, StoreOptions, ToolContextStore};

fn tool(name: &str) -> SharedTool {
    let name = name.to_owned();
    let label = name.clone();
    Arc::new(FnTool::typed(
        name.clone(),
        format!("Computes the {name} of a number."),
        move |_args: Json, ctx| {
            let label = label.clone();
            async move {
                // Injected state, store and call id reach every tool.
                let messages = ctx
                    .state
                    .as_ref()
                    .and_then(|s| s.to_json().ok())
                    .map_or(0, |s| s["messages"].as_array().map_or(0, Vec::len));
                let store = if ctx.store().is_some() { "a" } else { "no" };
                let call = ctx.tool_call_id.clone().unwrap_or_default();
                Ok::<_, ToolError>(format!(
                    "{label} ran with {messages} messages in state, {store} store, for call {call}"
                ))
            }
        },
    ))
}

fn registry(names: &[(&str, &str)]) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for (id, name) in names {
        registry.insert(*id, tool(name)).unwrap();
    }
    registry
}

async fn indexed_store(registry: &ToolRegistry) -> InMemoryStore {
    let index = IndexConfig::new(64, HashEmbeddings::new(64)).with_fields(["description"]);
    let store = InMemoryStore::new().with_options(StoreOptions::new().with_index(index));
    registry.index(&store, &["tools"]).await.unwrap();
    store
}

fn call(name: &str, args: Json, id: &str) -> ToolCall {
    ToolCall::new(name, args).with_id(id)
}

/// A model that asks `retrieve_tools` for `query` once, then answers "done".
fn retrieving(query: &str) -> Arc<ScriptedChatModel> {
    Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![call(
            "retrieve_tools",
            json!({ "query": query }),
            "r",
        )]),
        AiMessage::new("done"),
    ]))
}

fn offered(model: &ScriptedChatModel, call: usize) -> Vec<String> {
    model.calls()[call]
        .options
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

async fn ask(agent: &CompiledStateGraph, question: &str, config: &RunnableConfig) -> Json {
    agent
        .invoke(json!({"messages": [["user", question]]}), config)
        .await
        .unwrap()
        .to_json()
        .unwrap()
}

#[tokio::test]
async fn retrieved_tools_are_offered_on_the_next_call() {
    let registry = registry(&[
        ("t-cos", "cosine"),
        ("t-sin", "sine"),
        ("t-rev", "reverse_text"),
    ]);
    let store = indexed_store(&registry).await;
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![call(
            "retrieve_tools",
            json!({"query": "cosine"}),
            "r",
        )]),
        AiMessage::new("").with_tool_calls(vec![call("cosine", json!({}), "c")]),
        AiMessage::new("done"),
    ]));
    let agent = create_bigtool_agent(model.clone(), registry)
        .limit(1)
        .compile_options(CompileOptions::new().store(store))
        .build()
        .unwrap();
    let out = ask(&agent, "cos?", &RunnableConfig::default()).await;
    assert_eq!(offered(&model, 0), ["retrieve_tools"]);
    assert_eq!(offered(&model, 1), ["retrieve_tools", "cosine"]);
    assert_eq!(out["selected_tool_ids"], json!(["t-cos"]));
    assert_eq!(
        out["messages"][2]["content"],
        r#"Available tools: ["cosine"]"#
    );
    assert!(
        out["messages"][4]["content"]
            .as_str()
            .unwrap()
            .starts_with("cosine ran with")
    );
}

#[tokio::test]
async fn retrieval_and_tool_calls_run_in_one_step() {
    let registry = registry(&[("a", "alpha"), ("b", "beta")]);
    let store = indexed_store(&registry).await;
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![
            call("retrieve_tools", json!({"query": "beta"}), "r"),
            call("alpha", json!({}), "x"),
        ]),
        AiMessage::new("done"),
    ]));
    let agent = create_bigtool_agent(model, registry)
        .compile_options(CompileOptions::new().store(store))
        .build()
        .unwrap();
    let out = ask(&agent, "both", &RunnableConfig::default()).await;
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
    // Both calls answered (in call order), then the final answer.
    let answered: Vec<String> = messages
        .iter()
        .filter_map(|m| m.as_tool().map(|t| t.tool_call_id.clone()))
        .collect();
    assert_eq!(answered, ["r", "x"]);
    assert!(stategraph_prebuilt::is_well_paired(&messages));
    let alpha = messages[3].text();
    assert!(
        alpha.contains("with 2 messages in state, a store, for call x"),
        "{alpha}"
    );
}

#[tokio::test]
async fn a_custom_retriever_and_unknown_ids() {
    let registry = registry(&[("math/add", "add"), ("text/upper", "upper")]);
    let model = retrieving("math");
    // Category lookup: every id under the query's prefix, and one that
    // does not exist.
    let agent = create_bigtool_agent(model.clone(), registry)
        .retrieve_with(|query, _ctx| async move {
            Ok::<_, ToolError>(vec![
                format!("{query}/add"),
                format!("{query}/missing"),
                format!("{query}/add"),
            ])
        })
        .build()
        .unwrap();
    let out = ask(&agent, "add", &RunnableConfig::default()).await;
    assert_eq!(out["selected_tool_ids"], json!(["math/add"]));
    let text = out["messages"][2]["content"].as_str().unwrap();
    assert!(
        text.contains(r#"["add"]"#) && text.contains("math/missing"),
        "{text}"
    );
    assert_eq!(offered(&model, 1), ["retrieve_tools", "add"]);
}

#[tokio::test]
async fn a_plain_function_retrieves_too() {
    let registry = registry(&[("math/add", "add"), ("text/upper", "upper")]);
    let model = retrieving("text");
    let agent = create_bigtool_agent(model.clone(), registry)
        .retrieve_with_sync(|query, _ctx| match query {
            "text" => Ok(vec!["text/upper".to_owned()]),
            other => Err(ToolError::failed(format!("no category {other}"))),
        })
        .build()
        .unwrap();
    let out = ask(&agent, "shout", &RunnableConfig::default()).await;
    assert_eq!(out["selected_tool_ids"], json!(["text/upper"]));
    assert_eq!(offered(&model, 1), ["retrieve_tools", "upper"]);
}

#[tokio::test]
async fn a_failing_retrieval_is_answered_not_fatal() {
    let model = retrieving("x");
    // No store given: the default retrieval cannot search.
    let agent = create_bigtool_agent(model, registry(&[("a", "alpha")]))
        .build()
        .unwrap();
    let out = ask(&agent, "x", &RunnableConfig::default()).await;
    let text = out["messages"][2]["content"].as_str().unwrap();
    assert!(
        text.contains("retrieval failed") && text.contains("no store"),
        "{text}"
    );
    assert_eq!(out["messages"][3]["content"], "done");
}

#[test]
fn ambiguous_registries_are_refused() {
    let mut registry = registry(&[("a", "alpha")]);
    assert!(matches!(
        registry.insert("a", tool("other")),
        Err(BigToolError::DuplicateId(id)) if id == "a"
    ));
    registry.insert("b", tool("alpha")).unwrap();
    let model = ScriptedChatModel::new([AiMessage::new("x")]);
    let err = create_bigtool_agent(model, registry).build().unwrap_err();
    assert!(
        matches!(err, BigToolError::DuplicateName { ref name, .. } if name == "alpha"),
        "{err}"
    );
    let model = ScriptedChatModel::new([AiMessage::new("x")]);
    let err = create_bigtool_agent(model, registry_named_retrieve())
        .build()
        .unwrap_err();
    assert!(matches!(err, BigToolError::ReservedName(_)), "{err}");
}

fn registry_named_retrieve() -> ToolRegistry {
    registry(&[("r", "retrieve_tools")])
}

#[test]
fn the_reducer_adds_each_id_once() {
    let ids = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        add_new(ids(&["a"]), ids(&["b", "a", "b"])),
        ids(&["a", "b"])
    );
}

/// Two turns on one thread: the selection persists (and is bounded), a
/// per-turn agent starts each question from retrieval alone, and another
/// thread starts empty.
#[tokio::test]
async fn selections_persist_per_thread_and_can_be_bounded() {
    let names = [("a", "alpha"), ("b", "beta"), ("c", "gamma")];
    let script = |query: &'static str, id: &'static str| {
        vec![
            AiMessage::new("").with_tool_calls(vec![call(
                "retrieve_tools",
                json!({"query": query}),
                id,
            )]),
            AiMessage::new("done"),
        ]
    };
    let mut turns = script("alpha", "r1");
    turns.extend(script("beta", "r2"));
    turns.extend(script("gamma", "r3"));
    let model = Arc::new(ScriptedChatModel::new(turns));
    let reg = registry(&names);
    let store = indexed_store(&reg).await;
    let agent = create_bigtool_agent(model.clone(), reg)
        .limit(1)
        .max_selected(2)
        .compile_options(
            CompileOptions::new()
                .store(store)
                .checkpointer(InMemorySaver::new()),
        )
        .build()
        .unwrap();
    let thread = RunnableConfig::thread("t");
    for question in ["one", "two", "three"] {
        ask(&agent, question, &thread).await;
    }
    let out = ask(&agent, "four", &RunnableConfig::thread("other")).await;
    assert_eq!(
        out["selected_tool_ids"],
        json!(["a"]),
        "a new thread starts empty"
    );
    // On the first thread: three ids recorded, the newest two offered.
    let state = agent
        .get_state(&thread)
        .await
        .unwrap()
        .values
        .to_json()
        .unwrap();
    assert_eq!(state["selected_tool_ids"], json!(["a", "b", "c"]));
    assert_eq!(offered(&model, 5), ["retrieve_tools", "beta", "gamma"]);

    // Per turn: the second question starts from retrieval alone.
    let mut turns = script("alpha", "p1");
    turns.extend(script("beta", "p2"));
    let model = Arc::new(ScriptedChatModel::new(turns));
    let reg = registry(&names);
    let store = indexed_store(&reg).await;
    let agent = create_bigtool_agent(model.clone(), reg)
        .limit(1)
        .per_turn_selection(true)
        .compile_options(
            CompileOptions::new()
                .store(store)
                .checkpointer(InMemorySaver::new()),
        )
        .build()
        .unwrap();
    ask(&agent, "one", &thread).await;
    ask(&agent, "two", &thread).await;
    assert_eq!(offered(&model, 2), ["retrieve_tools"]);
    assert_eq!(offered(&model, 3), ["retrieve_tools", "beta"]);
}

/// Two questions on one thread, each by an agent opened afresh (as another
/// process would): the selection and the conversation persist.
async fn selection_persists<F, Fut>(open: F, thread: &str)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = CompileOptions>,
{
    let names = [("a", "alpha"), ("b", "beta")];
    let thread = RunnableConfig::thread(thread);
    for (query, id) in [("alpha", "r1"), ("beta", "r2")] {
        // Ids of its own per process: a restarted scripted model would
        // count from `ai-0` again and replace the saved answers.
        let model = ScriptedChatModel::new([
            AiMessage::new("")
                .with_tool_calls(vec![call("retrieve_tools", json!({"query": query}), id)])
                .with_id(format!("{id}-ask")),
            AiMessage::new("done").with_id(format!("{id}-done")),
        ]);
        let agent = create_bigtool_agent(model, registry(&names))
            .limit(1)
            .compile_options(open().await)
            .build()
            .unwrap();
        ask(&agent, query, &thread).await;
    }
    let model = ScriptedChatModel::new([AiMessage::new("x")]);
    let agent = create_bigtool_agent(model, registry(&names))
        .compile_options(open().await)
        .build()
        .unwrap();
    let state = agent
        .get_state(&thread)
        .await
        .unwrap()
        .values
        .to_json()
        .unwrap();
    assert_eq!(state["selected_tool_ids"], json!(["a", "b"]));
    assert_eq!(state["messages"].as_array().unwrap().len(), 8);
}

fn hash_index() -> IndexConfig {
    IndexConfig::new(64, HashEmbeddings::new(64)).with_fields(["description"])
}

/// The saver and the indexed store in one SQLite file.
#[tokio::test]
async fn the_agent_persists_on_sqlite() {
    use stategraph_checkpoint_sqlite::{SqliteSaver, SqliteStore};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agent.db");
    let store = SqliteStore::open(&db)
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_index(hash_index()));
    registry(&[("a", "alpha"), ("b", "beta")])
        .index(&store, &["tools"])
        .await
        .unwrap();
    let open = || async {
        let store = SqliteStore::open(&db)
            .await
            .unwrap()
            .with_options(StoreOptions::new().with_index(hash_index()));
        CompileOptions::new()
            .store(store)
            .checkpointer(SqliteSaver::open(&db).unwrap())
    };
    selection_persists(open, "sqlite").await;
}

/// The same on the PostgreSQL cluster `cargo xtask ci` starts.
#[tokio::test]
async fn the_agent_persists_on_postgres() {
    use stategraph_checkpoint_postgres::{PostgresSaver, PostgresStore};

    let url = match std::env::var("STATEGRAPH_TEST_POSTGRES_URL") {
        Ok(url) => url,
        // CI must not pass without it.
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("STATEGRAPH_TEST_POSTGRES_URL is not set under CI")
        }
        Err(_) => {
            eprintln!("STATEGRAPH_TEST_POSTGRES_URL is not set: PostgreSQL part not run");
            return;
        }
    };
    let store = PostgresStore::connect(&url)
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_index(hash_index()));
    store.setup().await.unwrap();
    // A thread of our own; indexing the same tools again is harmless.
    let unique = format!("{}", std::process::id());
    registry(&[("a", "alpha"), ("b", "beta")])
        .index(&store, &["tools"])
        .await
        .unwrap();
    let open = || async {
        let store = PostgresStore::connect(&url)
            .await
            .unwrap()
            .with_options(StoreOptions::new().with_index(hash_index()));
        CompileOptions::new()
            .store(store)
            .checkpointer(PostgresSaver::connect(&url).await.unwrap())
    };
    selection_persists(open, &format!("postgres-{unique}")).await;
}

/// A call whose arguments did not parse is answered with its error, and
/// the model retries; the turn does not end on it.
#[tokio::test]
async fn an_invalid_call_is_answered_and_retried() {
    let registry = registry(&[("a", "alpha")]);
    let store = indexed_store(&registry).await;
    let broken = Message::from_json(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "bad", "type": "function", "function": {"name": "retrieve_tools", "arguments": "{broken"}}
    ]}))
    .unwrap();
    let model = Arc::new(ScriptedChatModel::new([
        broken.as_ai().unwrap().clone(),
        AiMessage::new("").with_tool_calls(vec![call(
            "retrieve_tools",
            json!({"query": "alpha"}),
            "r",
        )]),
        AiMessage::new("done"),
    ]));
    let agent = create_bigtool_agent(model.clone(), registry)
        .compile_options(CompileOptions::new().store(store))
        .build()
        .unwrap();
    let out = ask(&agent, "alpha?", &RunnableConfig::default()).await;
    let messages: Vec<Message> = serde_json::from_value(out["messages"].clone()).unwrap();
    assert!(stategraph_prebuilt::is_well_paired(&messages));
    let answer = messages[2].as_tool().unwrap();
    assert_eq!(answer.tool_call_id, "bad");
    assert!(
        answer.content.text().contains("not valid JSON"),
        "{answer:?}"
    );
    assert_eq!(messages.last().unwrap().text(), "done");
    assert_eq!(model.call_count(), 3);
}
