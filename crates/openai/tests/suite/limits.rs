//! Responses that are too large, too slow or too deeply nested: each ends
//! the call with a typed error, in time linear in what arrived.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::ErrorKind;
use stategraph_llm::{CallOptions, ChatModel, Error, Message, collect_chunks};
use stategraph_openai::{ChatOpenAi, OpenAiConfig, OpenAiEmbeddings, ResponseError};

use crate::stand_in::{Reply, StandIn};

const MIB: usize = 1 << 20;

fn config(stand_in: &StandIn) -> OpenAiConfig {
    OpenAiConfig::new("test-model")
        .with_base_url(&stand_in.base_url)
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(5))
}

fn model(config: OpenAiConfig) -> ChatOpenAi {
    ChatOpenAi::new(config).unwrap()
}

fn hi() -> Vec<Message> {
    vec![Message::human("hi")]
}

fn delta_line(content: &str) -> String {
    let event = json!({"id": "c", "choices": [{"index": 0, "delta": {"content": content}}]});
    format!("data: {event}\n")
}

fn reply(message: Json) -> Json {
    json!({"id": "r", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
}

/// `[[[…]]]`, `depth` levels deep.
fn nested(depth: usize) -> String {
    let mut text = "[".repeat(depth);
    text.push_str(&"]".repeat(depth));
    text
}

/// The first error of a stream.
async fn stream_error(model: &ChatOpenAi) -> Error {
    let items: Vec<_> = model.stream(&hi(), &CallOptions::default()).collect().await;
    items.into_iter().find_map(Result::err).unwrap()
}

/// The limit error a provider error carries.
fn limit(err: &Error) -> ResponseError {
    match ResponseError::find_in(err) {
        Some(limit) => limit.clone(),
        None => panic!("not a limit error: {err}"),
    }
}

#[tokio::test]
async fn a_16_mb_event_line_in_4_kb_pieces_is_read_whole() {
    let content = "x".repeat(16 * MIB);
    let body = format!("{}\ndata: [DONE]\n\n", delta_line(&content));
    let stand_in = StandIn::start([Reply::events_in_pieces(&body, 4096)]).await;
    let model = model(
        config(&stand_in)
            .with_max_line_bytes(32 * MIB)
            .with_max_event_bytes(32 * MIB),
    );
    let chunks: Vec<_> = model.stream(&hi(), &CallOptions::default()).collect().await;
    assert_eq!(chunks.len(), 1);
    let message = collect_chunks(futures::stream::iter(chunks), "test-model")
        .await
        .unwrap();
    assert_eq!(message.text().len(), content.len());
    assert!(message.text().bytes().all(|b| b == b'x'));
}

#[tokio::test]
async fn a_line_over_the_line_cap_is_a_typed_error() {
    // One line with its end, one that never ends before the stream does:
    // both fail on the limit, not on the missing `[DONE]`.
    let long = format!("data: {}", "x".repeat(3000));
    let stand_in = StandIn::start([
        Reply::events_in_pieces(&format!("{long}\n\ndata: [DONE]\n\n"), 512),
        Reply::events_in_pieces(&long, 512),
    ])
    .await;
    let model = model(config(&stand_in).with_max_line_bytes(1024));
    for _ in 0..2 {
        let err = stream_error(&model).await;
        assert_eq!(limit(&err), ResponseError::LineTooLong { limit: 1024 });
        assert_eq!(err.kind(), ErrorKind::Backend);
        assert!(
            err.to_string().contains("line limit of 1024 bytes"),
            "{err}"
        );
    }
    // A line of exactly the limit is fine.
    let exact = delta_line("");
    let exact = format!(
        "{}{}\n",
        &exact[..exact.len() - 1],
        " ".repeat(1024 - (exact.len() - 1))
    );
    let stand_in = StandIn::start([Reply::events_in_pieces(
        &format!("{exact}\ndata: [DONE]\n\n"),
        100,
    )])
    .await;
    let model = self::model(config(&stand_in).with_max_line_bytes(1024));
    let items: Vec<_> = model.stream(&hi(), &CallOptions::default()).collect().await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
}

#[tokio::test]
async fn an_event_over_the_event_cap_is_a_typed_error() {
    // Three `data` lines of one event, each under the line cap, together
    // over the event cap.
    let line = format!("data: \"{}\"\n", "y".repeat(500));
    let body = format!("{line}{line}{line}\ndata: [DONE]\n\n");
    let stand_in = StandIn::start([Reply::events_in_pieces(&body, 4096)]).await;
    let model = model(
        config(&stand_in)
            .with_max_line_bytes(1024)
            .with_max_event_bytes(1024),
    );
    let err = stream_error(&model).await;
    assert_eq!(limit(&err), ResponseError::EventTooLarge { limit: 1024 });
    assert!(
        err.to_string().contains("event limit of 1024 bytes"),
        "{err}"
    );
}

#[tokio::test]
async fn an_event_of_several_data_lines_is_one_json_value() {
    let body = "data: {\"choices\": [{\"index\": 0,\ndata: \"delta\": {\"content\": \"hi\"}}]}\n\ndata: [DONE]\n\n";
    let stand_in = StandIn::start([Reply::events_in_pieces(body, 7)]).await;
    let chunks: Vec<_> = model(config(&stand_in))
        .stream(&hi(), &CallOptions::default())
        .collect()
        .await;
    let message = collect_chunks(futures::stream::iter(chunks), "test-model")
        .await
        .unwrap();
    assert_eq!(message.text(), "hi");
}

#[tokio::test]
async fn a_body_over_the_body_cap_is_a_typed_error() {
    let big = reply(json!({"role": "assistant", "content": "z".repeat(5000)}));
    let stand_in = StandIn::start([
        // Announced by its `content-length`.
        Reply::ok(big.clone()),
        // Counted as it arrives.
        Reply::Unsized(big.to_string()),
        // An error body over the cap still gives the status error.
        Reply::Raw(400, "e".repeat(5000)),
    ])
    .await;
    let model = model(config(&stand_in).with_max_body_bytes(1024));
    for _ in 0..2 {
        let err = model
            .invoke(&hi(), &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(limit(&err), ResponseError::BodyTooLarge { limit: 1024 });
        assert!(
            err.to_string().contains("body limit of 1024 bytes"),
            "{err}"
        );
    }
    let err = model
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Provider {
                status: Some(400),
                ..
            }
        ),
        "{err}"
    );
    assert!(ResponseError::find_in(&err).is_none(), "{err}");
}

#[tokio::test]
async fn embeddings_bodies_have_the_same_cap() {
    let vector: Vec<f32> = vec![0.5; 1000];
    let stand_in = StandIn::start([Reply::ok(
        json!({"data": [{"index": 0, "embedding": vector}]}),
    )])
    .await;
    let embedder = OpenAiEmbeddings::new(config(&stand_in).with_max_body_bytes(1024)).unwrap();
    let err = stategraph_llm::Embeddings::embed_query(&embedder, "a")
        .await
        .unwrap_err();
    assert_eq!(limit(&err), ResponseError::BodyTooLarge { limit: 1024 });
}

#[tokio::test]
async fn a_trickling_server_hits_the_response_deadline() {
    // A byte every 2 ms never lets the 5-second wait for the next bytes
    // run out; only the deadline of the whole response ends these.
    let stand_in = StandIn::start([
        Reply::Trickle("text/event-stream", b": ping\n", Duration::from_millis(2)),
        Reply::Trickle("application/json", b" ", Duration::from_millis(2)),
    ])
    .await;
    let model = model(config(&stand_in).with_response_deadline(Duration::from_millis(300)));
    let err = stream_error(&model).await;
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(
        err.to_string(),
        "POST /chat/completions (stream) response (deadline 300ms) timed out"
    );
    let err = model
        .invoke(&hi(), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "POST /chat/completions response (deadline 300ms) timed out"
    );
}

#[tokio::test]
async fn a_line_that_never_ends_hits_its_cap_before_the_deadline() {
    let stand_in = StandIn::start([Reply::Trickle(
        "text/event-stream",
        b"data: xxxxxxxx",
        Duration::from_millis(1),
    )])
    .await;
    let model = model(
        config(&stand_in)
            .with_max_line_bytes(64)
            .with_response_deadline(Duration::from_secs(30)),
    );
    let err = stream_error(&model).await;
    assert_eq!(limit(&err), ResponseError::LineTooLong { limit: 64 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_json_is_a_typed_error_on_a_worker_thread() {
    // A worker thread has tokio's 2 MiB stack: a parser that recursed
    // 100,000 levels would overflow it.
    let task =
        tokio::spawn(async {
            let deep = nested(100_000);
            let stand_in = StandIn::start([
            Reply::Raw(200, deep.clone()),
            Reply::events_in_pieces(&format!("data: {deep}\n\ndata: [DONE]\n\n"), 4096),
            Reply::Raw(400, deep.clone()),
            Reply::ok(reply(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep}}
            ]}))),
        ])
        .await;
            let model = model(config(&stand_in));
            let err = model
                .invoke(&hi(), &CallOptions::default())
                .await
                .unwrap_err();
            assert_eq!(limit(&err), ResponseError::TooDeep { limit: 127 });
            assert!(err.to_string().contains("deeper than 127 levels"), "{err}");

            let err = stream_error(&model).await;
            assert_eq!(limit(&err), ResponseError::TooDeep { limit: 127 });

            let err = model
                .invoke(&hi(), &CallOptions::default())
                .await
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Provider {
                        status: Some(400),
                        ..
                    }
                ),
                "{err}"
            );

            // Arguments are a string inside the answer; nested too deeply they
            // are an invalid tool call.
            let answer = model.invoke(&hi(), &CallOptions::default()).await.unwrap();
            assert!(answer.tool_calls.is_empty());
            assert_eq!(answer.invalid_tool_calls.len(), 1);
        });
    task.await.unwrap();
}
