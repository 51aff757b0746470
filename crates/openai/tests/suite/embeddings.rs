//! `OpenAiEmbeddings` against the stand-in.

use std::time::Duration;

use serde_json::json;
use stategraph_llm::{Embeddings, Error};
use stategraph_openai::{OpenAiConfig, OpenAiEmbeddings};

use crate::stand_in::{Reply, StandIn};

fn embedder(stand_in: &StandIn) -> OpenAiEmbeddings {
    OpenAiEmbeddings::new(
        OpenAiConfig::new("embed-model")
            .with_base_url(&stand_in.base_url)
            .with_max_retries(0)
            .with_timeout(Duration::from_secs(5)),
    )
    .unwrap()
}

#[tokio::test]
async fn documents_are_embedded_in_batches_and_in_order() {
    let stand_in = StandIn::start([
        // Out of order: the index decides.
        Reply::ok(json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]})),
        Reply::ok(json!({"data": [{"index": 0, "embedding": [0.5, 0.5]}]})),
    ])
    .await;
    let texts = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
    let vectors = embedder(&stand_in)
        .with_batch_size(2)
        .with_dimensions(2)
        .embed_documents(&texts)
        .await
        .unwrap();
    assert_eq!(vectors, [vec![1.0, 0.0], vec![0.0, 1.0], vec![0.5, 0.5]]);
    let sent = stand_in.received();
    assert_eq!(sent[0].path, "/v1/embeddings");
    assert_eq!(
        sent[0].body,
        json!({"model": "embed-model", "input": ["a", "b"], "dimensions": 2})
    );
    assert_eq!(sent[1].body["input"], json!(["c"]));
    assert!(
        embedder(&stand_in)
            .embed_documents(&[])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn bad_embedding_answers_are_typed_errors() {
    let stand_in = StandIn::start([
        Reply::ok(json!({"data": [{"index": 0, "embedding": [1.0]}]})),
        Reply::ok(json!({"data": [{"index": 0, "embedding": "nope"}]})),
        Reply::ok(json!({"data": [
            {"index": 0, "embedding": [1.0]},
            {"index": 1, "embedding": [1.0, 2.0]},
        ]})),
        Reply::status(
            401,
            json!({"error": {"message": "Incorrect API key provided"}}),
        ),
    ])
    .await;
    let embedder = embedder(&stand_in);
    let two = ["a".to_owned(), "b".to_owned()];
    for (texts, expected) in [
        (&two[..], "1 embeddings for 2 texts"),
        (&two[..1], "embedding 0 is not a list of numbers"),
        (&two[..], "embeddings of different lengths"),
        (&two[..1], "status 401: Incorrect API key provided"),
    ] {
        let err = embedder.embed_documents(texts).await.unwrap_err();
        assert!(matches!(err, Error::Provider { .. }), "{err}");
        assert!(err.to_string().contains(expected), "{err} / {expected}");
    }
}
