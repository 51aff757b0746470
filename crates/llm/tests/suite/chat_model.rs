//! The chat model machinery end to end with the test doubles: bound tools and
//! tags, the object-safe `SharedChatModel`, structured output, a ReAct-style
//! loop over `add_messages`, messages as typed graph state, and the token
//! chunks of trace 18.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use stategraph_core::{StateValue, Value};
use stategraph_llm::schemars::JsonSchema;
use stategraph_llm::{
    AiMessage, CallOptions, ChatModel, Error, FakeStreamingModel, FnTool, Message, NOSTREAM_TAG,
    OutputSchema, ScriptedChatModel, SharedChatModel, SharedTool, Tool, ToolCall, ToolContext,
    ToolError, add_messages, collect_chunks, error_message, run_tool_call,
};

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[schemars(crate = "stategraph_llm::schemars")]
struct Joke {
    setup: String,
    rating: u8,
}

#[tokio::test]
async fn bound_tools_and_tags_reach_the_model() {
    let model = Arc::new(ScriptedChatModel::new([AiMessage::new("ok")]));
    let add = FnTool::typed("add", "Adds.", |args: serde_json::Value, _ctx| async move {
        Ok::<_, ToolError>(args.to_string())
    });
    let bound = Arc::clone(&model)
        .bind_tools([add.schema()])
        .with_tags([NOSTREAM_TAG]);
    bound
        .invoke(
            &[Message::human("hi")],
            &CallOptions::default().with_tags(["extra"]),
        )
        .await
        .unwrap();
    let call = &model.calls()[0];
    assert_eq!(call.options.tools[0].name, "add");
    assert!(call.options.is_nostream());
    assert_eq!(call.options.tags, [NOSTREAM_TAG, "extra"]);
}

#[tokio::test]
async fn a_shared_model_streams_and_invokes() {
    let model: SharedChatModel =
        FakeStreamingModel::new([AiMessage::new("a b").with_id("m")]).into_shared();
    let chunks = model.stream(&[Message::human("x")], &CallOptions::default());
    let merged = collect_chunks(chunks, model.model_name()).await.unwrap();
    assert_eq!(merged.text(), "a b");
    let texts: Vec<_> = model
        .stream(&[], &CallOptions::default())
        .map(|c| c.unwrap().content.text().into_owned())
        .collect()
        .await;
    assert_eq!(texts, ["a", " ", "b"]);
    assert_eq!(
        model
            .invoke(&[], &CallOptions::default())
            .await
            .unwrap()
            .id
            .as_deref(),
        Some("m")
    );
}

#[tokio::test]
async fn structured_output_comes_from_the_forced_tool_call_or_json_text() {
    let schema = OutputSchema::of::<Joke>();
    assert_eq!(schema.name, "Joke");
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![ToolCall::new(
            "Joke",
            json!({"setup": "a cat", "rating": 7}),
        )]),
        AiMessage::new("```json\n{\"setup\": \"a dog\", \"rating\": 3}\n```"),
        AiMessage::new("I'd rather not."),
        AiMessage::new("").with_tool_calls(vec![ToolCall::new("Joke", json!({"setup": "x"}))]),
        AiMessage::new("").with_tool_calls(vec![ToolCall::new(
            "Joke",
            json!({"setup": "x", "rating": 999}),
        )]),
    ]));
    let structured = Arc::clone(&model).with_structured_output(schema);
    let none = CallOptions::default();
    let joke: Joke = structured.invoke_as(&[], &none).await.unwrap();
    assert_eq!(
        joke,
        Joke {
            setup: "a cat".into(),
            rating: 7
        }
    );
    let options = &model.calls()[0].options;
    assert_eq!(options.tools[0].name, "Joke");
    assert_eq!(
        options.tool_choice,
        Some(stategraph_llm::ToolChoice::Tool("Joke".into()))
    );

    let value = structured.invoke(&[], &none).await.unwrap();
    assert_eq!(value, json!({"setup": "a dog", "rating": 3}));

    let err = structured.invoke(&[], &none).await.unwrap_err();
    assert!(matches!(err, Error::StructuredOutput { .. }), "{err}");
    assert!(err.to_string().contains("neither called `Joke`"), "{err}");

    let err = structured.invoke(&[], &none).await.unwrap_err();
    assert!(
        err.to_string().contains("missing required key `rating`"),
        "{err}"
    );

    // The outline check passes (an integer), serde catches the range.
    let err = structured.invoke_as::<Joke>(&[], &none).await.unwrap_err();
    assert!(matches!(err, Error::StructuredOutput { .. }), "{err}");
}

#[tokio::test]
async fn a_react_loop_runs_on_the_doubles() {
    let model = ScriptedChatModel::from_fn(|messages| match messages.last() {
        Some(Message::Tool(_)) => {
            let results: Vec<String> = messages
                .iter()
                .filter_map(|m| m.as_tool().map(|t| t.content.text().into_owned()))
                .collect();
            AiMessage::new(format!("final: {}", results.join(" | ")))
        }
        _ => AiMessage::new("").with_tool_calls(vec![
            ToolCall::new("add", json!({"a": 2, "b": 3})),
            ToolCall::new("missing_tool", json!({})),
        ]),
    });
    #[derive(Deserialize, JsonSchema)]
    #[schemars(crate = "stategraph_llm::schemars")]
    struct AddArgs {
        a: i64,
        b: i64,
    }
    let tools: Vec<SharedTool> = vec![Arc::new(FnTool::typed(
        "add",
        "Adds two numbers.",
        |args: AddArgs, _ctx| async move { Ok::<_, ToolError>((args.a + args.b).to_string()) },
    ))];
    let options = CallOptions::default().with_tools(tools.iter().map(|t| t.schema()));

    let mut state = add_messages(Vec::new(), vec![Message::human("2+3?")]);
    loop {
        let answer = model.invoke(&state, &options).await.unwrap();
        let calls = answer.tool_calls.clone();
        state = add_messages(state, vec![answer.into()]);
        if calls.is_empty() {
            break;
        }
        let mut results = Vec::new();
        for call in &calls {
            let message = match run_tool_call(&tools, call, ToolContext::default()).await {
                Ok(message) => message,
                Err(err) => error_message(call, format!("Error: {err}")),
            };
            results.push(message.into());
        }
        state = add_messages(state, results);
    }
    let types: Vec<_> = state.iter().map(Message::message_type).collect();
    assert_eq!(types, ["human", "ai", "tool", "tool", "ai"]);
    assert_eq!(
        state[4].text(),
        "final: 5 | Error: missing_tool is not a valid tool, try one of [add]"
    );
    assert_eq!(state[2].as_tool().unwrap().tool_call_id, "call-0-0");
}

fn reducer<T: StateValue + Default + std::fmt::Debug>(
    f: impl Fn(T, T) -> T + Send + Sync + 'static,
) -> impl Fn(T, T) -> T {
    f
}

#[test]
fn messages_work_as_a_typed_state_field_with_add_messages() {
    // What `#[state(reducer = stategraph_llm::add_messages)] messages: Vec<Message>`
    // needs: a `StateValue + Default + Debug` field and a `Fn(T, T) -> T`.
    let reduce = reducer::<Vec<Message>>(add_messages);
    // A JSON write (graph input) decodes through the coercing `Deserialize`.
    let input = Value::from_json(
        json!([["user", "yo"], "plain", {"role": "assistant", "content": "hi", "id": "a"}]),
    );
    let write = input.decode_owned::<Vec<Message>>().unwrap();
    let state = reduce(Vec::new(), write);
    assert_eq!(state.len(), 3);
    assert!(state.iter().all(|m| m.id().is_some()));
    // A live write is shared, not copied.
    let live = Value::new(state.clone());
    let back = live.decode::<Vec<Message>>().unwrap();
    assert_eq!(*back, state);
    // The checkpoint (JSON) form round-trips.
    let json = Value::new(state.clone()).to_json().unwrap();
    assert_eq!(
        Value::from_json(json)
            .decode_owned::<Vec<Message>>()
            .unwrap(),
        state
    );
}

/// The token chunks of trace 18's `call_model` node (a
/// `GenericFakeChatModel` streaming "hello big world"), message part only;
/// the metadata is the runtime's.
#[tokio::test]
async fn fake_streaming_chunks_match_case_18() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/traces/18_stream_messages.json");
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let expected: Vec<serde_json::Value> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[0].clone())
        .filter(|chunk| chunk["id"] == "ai-1")
        .collect();
    let model = FakeStreamingModel::new([AiMessage::new("hello big world").with_id("ai-1")]);
    let ours: Vec<serde_json::Value> = model
        .stream(
            &[Message::human("hi").with_id("h-1")],
            &CallOptions::default(),
        )
        .map(|chunk| {
            let chunk = chunk.unwrap();
            let mut encoded = json!({
                "$msg": chunk.class_name(),
                "content": chunk.content,
                "id": chunk.id,
            });
            if let Some(position) = chunk.chunk_position {
                encoded["chunk_position"] = serde_json::to_value(position).unwrap();
            }
            encoded
        })
        .collect()
        .await;
    assert_eq!(ours, expected);
}

/// One report of an observed model call: `(kind, provider, text, id)`.
type Report = (&'static str, String, String, Option<String>);

/// Records what observed model calls report.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<Report>>);

impl stategraph_llm::observe::ModelObserver for Recorder {
    fn on_chunk(
        &self,
        call: &stategraph_llm::observe::ModelCall<'_>,
        chunk: &stategraph_llm::AiMessageChunk,
    ) {
        self.0.lock().unwrap().push((
            "chunk",
            call.provider.to_owned(),
            chunk.content.text().into_owned(),
            chunk.id.clone(),
        ));
    }
    fn on_message(&self, call: &stategraph_llm::observe::ModelCall<'_>, message: &AiMessage) {
        self.0.lock().unwrap().push((
            "message",
            call.provider.to_owned(),
            message.text().into_owned(),
            message.id.clone(),
        ));
    }
}

/// Runs `work` observed by a fresh recorder and returns what it recorded.
async fn observed<F: std::future::Future<Output = ()> + Send + 'static>(work: F) -> Vec<Report> {
    use futures::FutureExt;
    let recorder = Arc::new(Recorder::default());
    let observer: Arc<dyn stategraph_llm::observe::ModelObserver> = recorder.clone();
    stategraph_llm::observe::observe(Some(observer), work.boxed()).await;
    recorder.0.lock().unwrap().clone()
}

#[tokio::test]
async fn observed_invoke_streams_tokens_of_a_streaming_model() {
    let model = FakeStreamingModel::new([AiMessage::new("hello big world").with_id("ai-1")]);
    let seen = observed(async move {
        let answer = model.invoke(&[], &CallOptions::default()).await.unwrap();
        assert_eq!(answer.text(), "hello big world");
        assert_eq!(answer.id.as_deref(), Some("ai-1"));
    })
    .await;
    let tokens: Vec<&str> = seen.iter().map(|(_, _, text, _)| text.as_str()).collect();
    assert_eq!(tokens, ["hello", " ", "big", " ", "world"]);
    assert!(seen.iter().all(|(kind, provider, _, id)| *kind == "chunk"
        && provider == "genericfakechatmodel"
        && id.as_deref() == Some("ai-1")));
}

#[tokio::test]
async fn observed_calls_report_whole_answers_of_non_streaming_models_with_ids() {
    let seen = observed(async move {
        let model = ScriptedChatModel::new([AiMessage::new("plain")]);
        let answer = model.invoke(&[], &CallOptions::default()).await.unwrap();
        // Every answer has an id (the scripted model's own deterministic one).
        assert!(answer.id.is_some());
        // Streaming a model that does not stream yields its whole answer.
        let model = ScriptedChatModel::new([AiMessage::new("streamed whole")]).into_shared();
        let chunks: Vec<_> = model.stream(&[], &CallOptions::default()).collect().await;
        assert_eq!(chunks.len(), 1);
    })
    .await;
    let kinds: Vec<(&str, &str)> = seen
        .iter()
        .map(|(kind, _, text, _)| (*kind, text.as_str()))
        .collect();
    assert_eq!(kinds, [("message", "plain"), ("message", "streamed whole")]);
    assert!(seen.iter().all(|(_, _, _, id)| id.is_some()));
}

#[tokio::test]
async fn nostream_models_report_nothing_even_behind_shared_and_bound_layers() {
    let seen = observed(async move {
        let hidden = FakeStreamingModel::from_text("secret tokens")
            .with_options(CallOptions::default().with_tags([NOSTREAM_TAG]))
            .into_shared();
        let answer = hidden.invoke(&[], &CallOptions::default()).await.unwrap();
        assert_eq!(answer.text(), "secret tokens");
        let chunks: Vec<_> = hidden.stream(&[], &CallOptions::default()).collect().await;
        assert_eq!(chunks.len(), 3);
        // Tagged per call, too.
        let model = FakeStreamingModel::from_text("quiet");
        let tagged = CallOptions::default().with_tags([NOSTREAM_TAG]);
        model.invoke(&[], &tagged).await.unwrap();
    })
    .await;
    assert_eq!(seen, []);
}

#[tokio::test]
async fn unobserved_streams_give_every_chunk_the_same_id() {
    let model = FakeStreamingModel::new([AiMessage::new("a b")]);
    let chunks: Vec<_> = model
        .stream(&[], &CallOptions::default())
        .map(|chunk| chunk.unwrap().id)
        .collect()
        .await;
    assert_eq!(chunks.len(), 3);
    assert!(chunks.iter().all(|id| id.is_some() && *id == chunks[0]));
}

/// A provider that only implements `generate` and gives no ids.
#[derive(Debug)]
struct Anonymous;

impl ChatModel for Anonymous {
    async fn generate(&self, _: &[Message], _: &CallOptions) -> stategraph_llm::Result<AiMessage> {
        Ok(AiMessage::new("no id"))
    }
}

#[tokio::test]
async fn answers_without_ids_are_named_after_their_run() {
    let answer = Anonymous
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap();
    assert!(
        answer.id.as_deref().unwrap().starts_with("run-"),
        "{answer:?}"
    );
    let again = Anonymous
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap();
    assert_ne!(answer.id, again.id);
}

#[tokio::test]
async fn an_unrecorded_script_counts_calls_but_keeps_no_conversation() {
    let model =
        ScriptedChatModel::new([AiMessage::new("a"), AiMessage::new("b")]).record_calls(false);
    let first = model
        .invoke(&[Message::human("hi")], &CallOptions::default())
        .await
        .unwrap();
    let second = model.invoke(&[], &CallOptions::default()).await.unwrap();
    assert_eq!((&*first.text(), &*second.text()), ("a", "b"));
    assert_eq!(second.id.as_deref(), Some("ai-1"));
    assert_eq!(model.call_count(), 2);
    assert!(model.calls().is_empty());
    model.reset();
    assert_eq!(model.call_count(), 0);
}
