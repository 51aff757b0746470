//! Golden trace 18: the `messages` stream mode. A streaming model called
//! inside `call_model` streams its tokens with the task's metadata; a
//! model tagged `nostream` in `hidden_model` streams none, and its answer
//! is sent whole once from the node's output; `no_llm` returns a message
//! without a model call, also sent whole once. Streamed beside `updates`,
//! and from inside a subgraph with `subgraphs`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, MessagesState, MessagesStateUpdate, MessagesStateView,
    NodeError, RunOptions, START, StateGraph, StreamChunk, StreamMode, StreamModes,
    StreamedMessage,
};
use stategraph_llm::{
    AiMessage, CallOptions, ChatModel, FakeStreamingModel, Message, NOSTREAM_TAG,
};
use support::{assert_trace_ids, fixture, py_messages};

fn expected(key: &str) -> Json {
    fixture("18_stream_messages")[key].clone()
}

/// A node that asks a fresh streaming model (answering `text` with id
/// `id`, tagged `tags`) and returns its answer.
fn model_node(
    text: &'static str,
    id: &'static str,
    tags: &'static [&'static str],
) -> impl Fn(
    MessagesStateView,
) -> futures::future::BoxFuture<'static, Result<MessagesStateUpdate, NodeError>>
+ Send
+ Sync
+ 'static {
    move |state: MessagesStateView| {
        let history: Vec<Message> = state.messages.to_vec();
        Box::pin(async move {
            let model = FakeStreamingModel::new([AiMessage::new(text).with_id(id)])
                .with_options(CallOptions::default().with_tags(tags.iter().copied()));
            let reply = model.invoke(&history, &CallOptions::default()).await?;
            Ok(MessagesStateUpdate::default().messages(vec![reply.into()]))
        })
    }
}

fn graph() -> StateGraph {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("call_model", model_node("hello big world", "ai-1", &[]))
        .unwrap();
    g.add_node(
        "hidden_model",
        model_node("secret tokens", "ai-2", &[NOSTREAM_TAG]),
    )
    .unwrap();
    g.add_node("no_llm", |_state: MessagesStateView| async {
        let message = Message::ai("returned directly").with_id("ai-3");
        Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![message]))
    })
    .unwrap();
    g.add_edge(START, "call_model").unwrap();
    g.add_edge("call_model", "hidden_model").unwrap();
    g.add_edge("hidden_model", "no_llm").unwrap();
    g.add_edge("no_llm", END).unwrap();
    g
}

fn with_saver(g: &StateGraph) -> CompiledStateGraph {
    g.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

fn input() -> Json {
    json!({"messages": [{"type": "human", "content": "hi", "id": "h-1"}]})
}

/// A `messages` chunk as the trace encodes it: `[message, metadata]`.
/// LangChain's `GenericFakeChatModel` has no model name, so the fake's
/// `ls_model_name` is left out.
fn message_json(chunk: &StreamChunk) -> Json {
    let event = chunk.message().expect("a messages chunk carries a message");
    assert!(matches!(
        (&event.message, chunk.mode),
        (
            StreamedMessage::Chunk(_) | StreamedMessage::Message(_),
            StreamMode::Messages
        )
    ));
    let mut metadata = event.metadata.clone();
    assert_eq!(
        metadata.remove("ls_model_name"),
        if metadata.contains_key("ls_provider") {
            Some(json!("fake-streaming"))
        } else {
            None
        }
    );
    py_messages(&json!([
        serde_json::to_value(&event.message).unwrap(),
        metadata
    ]))
}

async fn collect(
    app: &CompiledStateGraph,
    thread: &str,
    modes: StreamModes,
    options: RunOptions,
) -> Vec<StreamChunk> {
    app.stream_with(input(), &RunnableConfig::thread(thread), modes, options)
        .map(|chunk| chunk.unwrap())
        .collect()
        .await
}

/// The `messages` chunks of a run without a checkpointer or thread.
async fn messages_without_thread(app: &CompiledStateGraph) -> Vec<StreamChunk> {
    app.stream(input(), &RunnableConfig::default(), StreamMode::Messages)
        .map(|chunk| chunk.unwrap())
        .collect()
        .await
}

#[tokio::test]
async fn trace_18_messages_mode() {
    let app = with_saver(&graph());
    let chunks = collect(&app, "m1", StreamMode::Messages.into(), RunOptions::new()).await;
    let actual: Vec<Json> = chunks.iter().map(message_json).collect();
    assert_trace_ids(&json!(actual), &expected("messages"));
}

#[tokio::test]
async fn trace_18_messages_and_updates() {
    let app = with_saver(&graph());
    let modes = StreamMode::Messages | StreamMode::Updates;
    let chunks = collect(&app, "m2", modes, RunOptions::new()).await;
    let actual: Vec<Json> = chunks
        .iter()
        .map(|chunk| match chunk.mode {
            StreamMode::Messages => json!(["messages", message_json(chunk)]),
            _ => json!([chunk.mode.as_str(), py_messages(&chunk.to_json())]),
        })
        .collect();
    assert_trace_ids(&json!(actual), &expected("messages_and_updates"));
}

#[tokio::test]
async fn trace_18_messages_from_a_subgraph() {
    let mut parent = StateGraph::typed::<MessagesState>();
    parent
        .add_node("child", graph().compile().unwrap())
        .unwrap();
    parent.add_edge(START, "child").unwrap();
    let parent = with_saver(&parent);
    let options = RunOptions::new().subgraphs(true);
    let chunks = collect(&parent, "m3", StreamMode::Messages.into(), options).await;
    let actual: Vec<Json> = chunks
        .iter()
        .map(|chunk| json!([chunk.namespace.to_vec(), message_json(chunk)]))
        .collect();
    assert_trace_ids(&json!(actual), &expected("subgraphs"));

    let state = parent
        .get_state(&RunnableConfig::thread("m3"))
        .await
        .unwrap();
    let values = py_messages(&state.values.to_json().unwrap());
    assert_eq!(values, expected("final"));
}

/// Without `subgraphs`, a subgraph's tokens are not streamed: its messages
/// come out whole, once, when the subgraph node finishes (LangGraph's
/// handler ignores calls in a subgraph namespace).
#[tokio::test]
async fn subgraph_messages_come_out_whole_without_subgraphs() {
    let mut parent = StateGraph::typed::<MessagesState>();
    parent
        .add_node("child", graph().compile().unwrap())
        .unwrap();
    parent.add_edge(START, "child").unwrap();
    let parent = with_saver(&parent);
    let chunks = collect(
        &parent,
        "m4",
        StreamMode::Messages.into(),
        RunOptions::new(),
    )
    .await;
    let seen: Vec<(String, String, Json)> = chunks
        .iter()
        .map(|chunk| {
            let event = chunk.message().unwrap();
            (
                event.message.id().unwrap().to_owned(),
                event.message.text().into_owned(),
                event.metadata["langgraph_node"].clone(),
            )
        })
        .collect();
    assert!(chunks.iter().all(|chunk| chunk.namespace.is_empty()));
    assert_eq!(
        seen,
        [
            ("ai-1".into(), "hello big world".into(), json!("child")),
            ("ai-2".into(), "secret tokens".into(), json!("child")),
            ("ai-3".into(), "returned directly".into(), json!("child")),
        ]
    );
}

/// Beyond the trace: a node returning messages it read sends none of them
/// again; a returned message without an id is sent with a fresh one; a run
/// without a checkpointer (and no thread) still names each task's
/// namespace.
#[tokio::test]
async fn read_messages_are_not_sent_again_and_new_ones_get_ids() {
    let mut g = StateGraph::typed::<MessagesState>();
    g.add_node("echo", |state: MessagesStateView| {
        let mut messages: Vec<Message> = state.messages.to_vec();
        messages.push(Message::ai("no id yet"));
        async move { Ok::<_, NodeError>(MessagesStateUpdate::default().messages(messages)) }
    })
    .unwrap();
    g.add_edge(START, "echo").unwrap();
    let chunks = messages_without_thread(&g.compile().unwrap()).await;
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    let event = chunks[0].message().unwrap();
    assert_eq!(event.message.text(), "no id yet");
    assert_eq!(event.message.id().unwrap().len(), 36);
    assert!(!event.metadata.contains_key("thread_id"));
    let namespace = event.metadata["langgraph_checkpoint_ns"].as_str().unwrap();
    assert!(namespace.starts_with("echo:"), "{namespace}");
}

/// Beyond the trace (checked against LangGraph 1.2.22): a node's metadata
/// is added to its messages' metadata after the `langgraph_*` keys, so it
/// may replace one of them.
#[tokio::test]
async fn node_metadata_goes_with_its_messages() {
    let mut g = StateGraph::typed::<MessagesState>();
    let mut metadata = stategraph_core::JsonMap::new();
    metadata.insert("team".into(), json!("a"));
    metadata.insert("langgraph_step".into(), json!(99));
    g.add_node_spec(
        "agent",
        stategraph_graph::NodeSpec::new(model_node("hi there", "ai-1", &[])).metadata(metadata),
    )
    .unwrap();
    g.add_edge(START, "agent").unwrap();
    let chunks = messages_without_thread(&g.compile().unwrap()).await;
    assert!(!chunks.is_empty());
    for chunk in &chunks {
        let event = chunk.message().unwrap();
        assert_eq!(event.metadata["team"], json!("a"), "{:?}", event.metadata);
        assert_eq!(event.metadata["langgraph_step"], json!(99));
        assert_eq!(event.metadata["langgraph_node"], json!("agent"));
    }
}
