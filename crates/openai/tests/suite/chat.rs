//! `ChatOpenAi` against the stand-in: replies, tool calls, streams, errors,
//! retries and timeouts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::{Value as Json, json};
use stategraph_llm::observe::{ModelCall, ModelObserver, observe};
use stategraph_llm::{
    AiMessage, AiMessageChunk, CallOptions, ChatModel, ChunkPosition, Error, Message, ToolSchema,
    collect_chunks,
};
use stategraph_openai::{ChatOpenAi, OpenAiConfig};

use crate::stand_in::{Reply, StandIn};

fn model(stand_in: &StandIn, retries: u32) -> ChatOpenAi {
    ChatOpenAi::new(
        OpenAiConfig::new("test-model")
            .with_base_url(&stand_in.base_url)
            .with_api_key("sk-test")
            .with_max_retries(retries)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
            .with_timeout(Duration::from_secs(5)),
    )
    .unwrap()
}

fn reply(message: Json) -> Json {
    json!({
        "id": "chatcmpl-1", "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    })
}

fn delta(delta: Json) -> Json {
    json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn hi() -> Vec<Message> {
    vec![Message::human("hi")]
}

#[tokio::test]
async fn a_plain_reply_becomes_an_ai_message() {
    let stand_in = StandIn::start([Reply::ok(reply(
        json!({"role": "assistant", "content": "hello"}),
    ))])
    .await;
    let answer = model(&stand_in, 0)
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(answer.text(), "hello");
    assert_eq!(answer.id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(answer.usage_metadata.unwrap().total_tokens, 5);
    assert_eq!(answer.response_metadata["finish_reason"], "stop");

    let sent = &stand_in.received()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        sent.body,
        json!({"model": "test-model", "messages": [{"role": "user", "content": "hi"}]})
    );
}

#[tokio::test]
async fn tool_calls_come_back_parsed_and_broken_ones_invalid() {
    let stand_in = StandIn::start([Reply::ok(reply(json!({
        "role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}},
            {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{\"a\": "}}
        ]
    })))])
    .await;
    let add = ToolSchema::new("add", "Adds.", json!({"type": "object"}));
    let answer = model(&stand_in, 0)
        .bind_tools([add])
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].args, json!({"a": 1, "b": 2}));
    assert_eq!(answer.invalid_tool_calls[0].id.as_deref(), Some("c2"));
    let sent = &stand_in.received()[0].body;
    assert_eq!(sent["tools"][0]["function"]["name"], "add");
}

#[tokio::test]
async fn streamed_text_arrives_token_by_token_with_usage_last() {
    let stand_in = StandIn::start([Reply::events(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": "Hel"})),
        delta(json!({"content": "lo"})),
        json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "chatcmpl-2", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}),
    ])])
    .await;
    let model = model(&stand_in, 0);
    let chunks: Vec<AiMessageChunk> = model
        .stream(&hi(), &CallOptions::default())
        .map(|chunk| chunk.unwrap())
        .collect()
        .await;
    let texts: Vec<String> = chunks
        .iter()
        .map(|c| c.content.text().into_owned())
        .collect();
    assert_eq!(texts, ["Hel", "lo", "", ""]);
    assert!(chunks.iter().all(|c| c.id.as_deref() == Some("chatcmpl-2")));
    let positions: Vec<_> = chunks.iter().map(|c| c.chunk_position).collect();
    assert_eq!(positions, [None, None, None, Some(ChunkPosition::Last)]);
    let sent = &stand_in.received()[0].body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));

    let merged = collect_chunks(futures::stream::iter(chunks.into_iter().map(Ok)), "m")
        .await
        .unwrap();
    assert_eq!(merged.text(), "Hello");
    assert_eq!(merged.usage_metadata.unwrap().total_tokens, 6);
    assert_eq!(merged.response_metadata["finish_reason"], "stop");
}

#[tokio::test]
async fn streamed_tool_call_deltas_merge_into_calls() {
    let call = |index: usize, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = name.into();
        }
        let mut call = json!({"index": index, "type": "function", "function": function});
        if let Some(id) = id {
            call["id"] = id.into();
        }
        delta(json!({"tool_calls": [call]}))
    };
    let stand_in = StandIn::start([Reply::events(&[
        call(0, Some("c1"), Some("add"), ""),
        call(0, None, None, "{\"a\": 1,"),
        call(1, Some("c2"), Some("shout"), "{\"text\""),
        call(0, None, None, " \"b\": 2}"),
        call(1, None, None, ": \"hi\"}"),
    ])])
    .await;
    let answer = model(&stand_in, 0)
        .stream(&hi(), &CallOptions::default())
        .collect::<Vec<_>>()
        .await;
    let answer = collect_chunks(futures::stream::iter(answer), "m")
        .await
        .unwrap();
    let calls: Vec<(Option<&str>, &str, &Json)> = answer
        .tool_calls
        .iter()
        .map(|c| (c.id.as_deref(), c.name.as_str(), &c.args))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("c1"), "add", &json!({"a": 1, "b": 2})),
            (Some("c2"), "shout", &json!({"text": "hi"})),
        ]
    );
}

/// Records the chunks an observed call reports.
#[derive(Default)]
struct Tokens(Mutex<Vec<String>>);

impl ModelObserver for Tokens {
    fn on_chunk(&self, call: &ModelCall<'_>, chunk: &AiMessageChunk) {
        assert_eq!((call.provider, call.model_name), ("openai", "test-model"));
        self.0
            .lock()
            .unwrap()
            .push(chunk.content.text().into_owned());
    }
    fn on_message(&self, _: &ModelCall<'_>, message: &AiMessage) {
        panic!("a streaming provider reported a whole message: {message:?}");
    }
}

/// Inside a graph node streamed in `messages` mode, `invoke` streams.
#[tokio::test]
async fn an_observed_invoke_streams_tokens() {
    let stand_in = StandIn::start([Reply::events(&[
        delta(json!({"content": "a"})),
        delta(json!({"content": "b"})),
    ])])
    .await;
    let model = model(&stand_in, 0);
    let tokens = Arc::new(Tokens::default());
    let observer: Arc<dyn ModelObserver> = tokens.clone();
    let answer = observe(
        Some(observer),
        async move { model.invoke(&hi(), &CallOptions::default()).await }.boxed(),
    )
    .await
    .unwrap();
    assert_eq!(answer.text(), "ab");
    assert_eq!(*tokens.0.lock().unwrap(), ["a", "b"]);
    assert_eq!(stand_in.received()[0].body["stream"], true);
}

#[tokio::test]
async fn client_errors_keep_the_providers_message_and_are_not_retried() {
    let stand_in = StandIn::start([Reply::status(
        400,
        json!({"error": {"message": "model `x` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}),
    )])
    .await;
    let err = model(&stand_in, 3)
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "openai request failed with status 400: model `x` does not exist (model_not_found)"
    );
    assert!(matches!(
        err,
        Error::Provider {
            status: Some(400),
            ..
        }
    ));
    assert_eq!(stand_in.received().len(), 1);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let ok = Reply::ok(reply(json!({"role": "assistant", "content": "finally"})));
    let limited = Reply::Json(
        429,
        json!({"error": {"message": "slow down"}}),
        vec![("retry-after-ms", "10".to_owned())],
    );
    let failing = Reply::status(503, json!({"error": {"message": "overloaded"}}));
    let stand_in = StandIn::start([limited, failing, ok]).await;
    let answer = model(&stand_in, 2)
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(answer.text(), "finally");
    assert_eq!(stand_in.received().len(), 3);

    let stand_in =
        StandIn::start((0..3).map(|_| Reply::status(500, json!({"error": {"message": "boom"}}))))
            .await;
    let err = model(&stand_in, 2)
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Provider {
                status: Some(500),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(stand_in.received().len(), 3);
    assert_eq!(stand_in.unused(), 0);
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let stand_in = StandIn::start([Reply::Hang(Duration::from_secs(3))]).await;
    let model = ChatOpenAi::new(
        OpenAiConfig::new("m")
            .with_base_url(&stand_in.base_url)
            .with_max_retries(0)
            .with_timeout(Duration::from_millis(100)),
    )
    .unwrap();
    let err = model
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(err.to_string(), "POST /chat/completions timed out");
}

#[tokio::test]
async fn a_stream_that_stalls_times_out() {
    let pieces = vec![format!("data: {}\n\n", delta(json!({"content": "a"}))); 2];
    let stand_in = StandIn::start([Reply::Events(pieces, Duration::from_millis(400))]).await;
    let model = ChatOpenAi::new(
        OpenAiConfig::new("m")
            .with_base_url(&stand_in.base_url)
            .with_max_retries(0)
            .with_timeout(Duration::from_millis(100)),
    )
    .unwrap();
    let items: Vec<_> = model.stream(&hi(), &CallOptions::default()).collect().await;
    let err = items.into_iter().find_map(Result::err).unwrap();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
}

#[tokio::test]
async fn malformed_and_cut_streams_end_with_errors() {
    let not_json = Reply::Events(
        vec![
            format!("data: {}\n\n", delta(json!({"content": "a"}))),
            "data: {not json\n\n".into(),
        ],
        Duration::ZERO,
    );
    let cut = Reply::Events(
        vec![format!("data: {}\n\n", delta(json!({"content": "a"})))],
        Duration::ZERO,
    );
    let error_event = Reply::events(&[json!({"error": {"message": "context too long"}})]);
    let stand_in = StandIn::start([not_json, cut, error_event]).await;
    let model = model(&stand_in, 0);
    for expected in [
        "malformed response: event data is not JSON",
        "malformed response: the event stream ended before [DONE]",
        "openai request failed: context too long",
    ] {
        let items: Vec<_> = model.stream(&hi(), &CallOptions::default()).collect().await;
        let err = items.into_iter().find_map(Result::err).unwrap();
        assert!(err.to_string().contains(expected), "{err} / {expected}");
    }
}

#[tokio::test]
async fn an_answer_without_choices_is_empty() {
    let stand_in = StandIn::start([
        Reply::ok(json!({"id": "x", "choices": []})),
        Reply::events(&[]),
    ])
    .await;
    let model = model(&stand_in, 0);
    let err = model
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::EmptyResponse { .. }), "{err}");
    let chunks = model
        .stream(&hi(), &CallOptions::default())
        .collect::<Vec<_>>()
        .await;
    let err = collect_chunks(futures::stream::iter(chunks), "test-model")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::EmptyResponse { .. }), "{err}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_provider_error() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = ChatOpenAi::new(
        OpenAiConfig::new("m")
            .with_base_url(format!("http://127.0.0.1:{port}/v1"))
            .with_max_retries(1)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(1)),
    )
    .unwrap();
    let err = model
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot connect"), "{err}");
}
