//! A semantic search large enough to be scored on several threads gives
//! exactly the ranking of scoring every item one by one: best score first,
//! ties by namespace then key, the page cut at the same place.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use stategraph_llm::{Embeddings, HashEmbeddings};
use stategraph_store::query::result_order;
use stategraph_store::{
    InMemoryStore, IndexConfig, Item, SearchOp, Store, StoreOptions, best_score, ns,
};

const DIMS: usize = 384;

/// Four thousand items (over a million vector components, past the
/// threshold for threads) in two namespaces; texts repeat, so many scores
/// tie and only the address can order them.
async fn store() -> InMemoryStore {
    let index = IndexConfig::new(DIMS, HashEmbeddings::new(DIMS)).with_fields(["text"]);
    let store = InMemoryStore::new().with_options(StoreOptions::new().with_index(index));
    for i in 0..4_000 {
        let namespace = if i % 2 == 0 { "even" } else { "odd" };
        let text = format!("notes about topic {} and gardens {}", i % 37, i % 5);
        store
            .put(
                &["docs", namespace],
                &format!("k{i:05}"),
                json!({ "text": text }),
            )
            .await
            .unwrap();
    }
    store
}

#[tokio::test]
async fn a_threaded_search_ranks_exactly_as_one_by_one() {
    let store = store().await;
    let query = "notes about topic 12 and gardens";
    let embedder = HashEmbeddings::new(DIMS);
    let query_vector = embedder.embed_query(query).await.unwrap();

    // Every item, scored one by one and fully sorted.
    let everything = store
        .search(SearchOp::new(ns(["docs"])).with_page(10_000, 0))
        .await
        .unwrap();
    assert_eq!(everything.len(), 4_000);
    let mut expected: Vec<(Option<f64>, Item)> = Vec::new();
    for found in everything {
        let text = found.item.value["text"].as_str().unwrap().to_owned();
        let vector = embedder.embed_query(&text).await.unwrap();
        expected.push((best_score(&query_vector, &[vector]), found.item));
    }
    expected.sort_by(|a, b| result_order((a.0, &a.1), (b.0, &b.1)));

    for (offset, limit) in [(0, 10), (3, 25), (990, 40), (3_990, 20)] {
        let page = store
            .search(
                SearchOp::new(ns(["docs"]))
                    .with_query(query)
                    .with_page(limit, offset),
            )
            .await
            .unwrap();
        let got: Vec<(Option<f64>, String, String)> = page
            .iter()
            .map(|f| (f.score, f.item.namespace.join("."), f.item.key.clone()))
            .collect();
        let want: Vec<(Option<f64>, String, String)> = expected
            .iter()
            .skip(offset)
            .take(limit)
            .map(|(score, item)| (*score, item.namespace.join("."), item.key.clone()))
            .collect();
        assert_eq!(got, want, "offset {offset}, limit {limit}");
    }
}
