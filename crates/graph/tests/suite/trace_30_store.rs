//! Golden trace 30: the in-memory store. Put, get, delete; searches with
//! equality and operator filters, nested values, limit and offset;
//! namespace listings with prefix, suffix, max depth and wildcards; the
//! namespace rules; a batch whose reads see the store as it was before the
//! batch's writes; and semantic search over a bag-of-words embedder, with
//! an item put with `index=False` listed last, unscored.
//!
//! `namespaces_after_delete` is compared with one deliberate difference:
//! LangGraph's `InMemoryStore` keeps listing `("users", "ann")` after its
//! only item was deleted. That comes from its `defaultdict`: a delete, and
//! even a `get` that misses, leaves an empty namespace behind, which
//! LangGraph's SQLite and PostgreSQL stores never list, and which upstream
//! reports as a bug (langchain-ai/langgraph#8734, "InMemoryStore reads
//! create namespaces"). Our stores list a namespace only while it holds an
//! item, on every backend: the conformance kit asserts it for
//! `InMemoryStore` as for the SQL stores (ST-KV-04, ST-KV-05) and the
//! differential replay requires the SQL stores to answer as
//! `InMemoryStore` does, so the test expects the recorded listing without
//! that one namespace (and checks that the recording has it).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_llm::Embeddings;
use stategraph_store::{
    GetOp, InMemoryStore, IndexConfig, IndexFields, Item, ListNamespacesOp, Op, OpResult, PutOp,
    SearchItem, SearchOp, Store, StoreError, StoreOptions, Ttl, ns,
};
use support::fixture;

const VOCAB: [&str; 5] = ["cat", "dog", "fish", "red", "blue"];

/// The case's embedder: per vocabulary word, its count in the text plus
/// `0.01 * position`.
#[derive(Debug)]
struct Vocabulary;

impl Embeddings for Vocabulary {
    async fn embed_documents(&self, texts: &[String]) -> stategraph_llm::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let text = text.to_lowercase();
                VOCAB
                    .iter()
                    .enumerate()
                    .map(|(i, word)| text.matches(word).count() as f32 + 0.01 * i as f32)
                    .collect()
            })
            .collect())
    }
}

fn expected(key: &str) -> Json {
    fixture("30_store")[key].clone()
}

fn item_json(item: &Item) -> Json {
    json!({"namespace": item.namespace, "key": item.key, "value": item.value})
}

fn found_json(found: &[SearchItem]) -> Json {
    let items: Vec<Json> = found
        .iter()
        .map(|f| {
            let mut item = item_json(&f.item);
            let score = f.score.map(|s| (s * 1e6).round() / 1e6);
            item["score"] = json!(score);
            item
        })
        .collect();
    json!(items)
}

fn object(value: Json) -> stategraph_core::JsonMap {
    value.as_object().cloned().unwrap()
}

async fn search(store: &InMemoryStore, op: SearchOp) -> Json {
    found_json(&store.search(op).await.unwrap())
}

async fn namespaces(store: &InMemoryStore, op: ListNamespacesOp) -> Json {
    json!(store.list_namespaces(op).await.unwrap())
}

/// Our error for a bad put, in the trace's `catch` shape: LangGraph's class
/// and a message that says the same thing.
fn raised(err: StoreError, phrase: &str) -> Json {
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    assert!(
        err.to_string()
            .to_lowercase()
            .contains(&phrase.to_lowercase()),
        "{err} / {phrase}"
    );
    json!({"$error": "InvalidNamespaceError"})
}

#[tokio::test]
async fn trace_30_store_operations() {
    let s = InMemoryStore::new();
    s.put(
        &["users", "ann"],
        "prefs",
        json!({"color": "red", "age": 30}),
    )
    .await
    .unwrap();
    s.put(
        &["users", "bob"],
        "prefs",
        json!({"color": "blue", "age": 25}),
    )
    .await
    .unwrap();
    s.put(
        &["users", "bob"],
        "profile",
        json!({"color": "red", "age": 40, "nested": {"k": 1}}),
    )
    .await
    .unwrap();
    s.put(&["docs"], "d1", json!({"title": "x"})).await.unwrap();

    let get = s.get(&["users", "ann"], "prefs").await.unwrap().unwrap();
    assert_eq!(item_json(&get), expected("get"));
    assert!(s.get(&["users", "ann"], "nope").await.unwrap().is_none());
    assert_eq!(expected("get_missing"), Json::Null);

    let users = || SearchOp::new(ns(["users"]));
    for (key, op) in [
        ("search_prefix_users", users()),
        (
            "search_filter_eq",
            users().with_filter(object(json!({"color": "red"}))),
        ),
        (
            "search_filter_ops",
            users().with_filter(object(json!({"age": {"$gte": 30}}))),
        ),
        (
            "search_filter_ne",
            users().with_filter(object(json!({"color": {"$ne": "red"}}))),
        ),
        (
            "search_filter_nested",
            users().with_filter(object(json!({"nested": {"k": 1}}))),
        ),
        ("search_limit_offset", users().with_page(1, 1)),
    ] {
        assert_eq!(search(&s, op).await, expected(key), "{key}");
    }

    for (key, op) in [
        ("list_namespaces", ListNamespacesOp::new()),
        (
            "list_namespaces_prefix",
            ListNamespacesOp::new().with_prefix(ns(["users"])),
        ),
        (
            "list_namespaces_suffix",
            ListNamespacesOp::new().with_suffix(ns(["bob"])),
        ),
        (
            "list_namespaces_max_depth1",
            ListNamespacesOp::new().with_max_depth(1),
        ),
        (
            "list_namespaces_wildcard",
            ListNamespacesOp::new().with_prefix(ns(["users", "*"])),
        ),
    ] {
        assert_eq!(namespaces(&s, op).await, expected(key), "{key}");
    }

    s.put(
        &["users", "ann"],
        "prefs",
        json!({"color": "green", "age": 31}),
    )
    .await
    .unwrap();
    let item = s.get(&["users", "ann"], "prefs").await.unwrap().unwrap();
    assert_eq!(item_json(&item), expected("overwrite_then_get"));
    s.delete(&["users", "ann"], "prefs").await.unwrap();
    assert!(s.get(&["users", "ann"], "prefs").await.unwrap().is_none());
    // LangGraph's in-memory store keeps listing a namespace whose last item
    // was deleted (an empty dict stays behind); its SQLite and PostgreSQL
    // stores do not. Ours list a namespace only while it holds items, on
    // every backend.
    let mut recorded = expected("namespaces_after_delete");
    let emptied = json!(["users", "ann"]);
    let listed = recorded.as_array_mut().unwrap();
    assert!(
        listed.contains(&emptied),
        "LangGraph lists the emptied namespace"
    );
    listed.retain(|namespace| *namespace != emptied);
    assert_eq!(namespaces(&s, ListNamespacesOp::new()).await, recorded);

    let value = || json!({"a": 1});
    let bad = [
        (
            "empty_namespace",
            s.put(&[], "k", value()).await,
            "namespace cannot be empty",
        ),
        (
            "namespace_with_dot",
            s.put(&["a.b"], "k", value()).await,
            "namespace labels cannot contain periods ('.')",
        ),
        (
            "namespace_langgraph_root",
            s.put(&["langgraph", "x"], "k", value()).await,
            "root label for namespace cannot be \"langgraph\"",
        ),
    ];
    for (key, result, phrase) in bad {
        let ours = raised(result.unwrap_err(), phrase);
        assert_eq!(ours["$error"], expected(key)["raised"]["$error"], "{key}");
    }

    let results = s
        .batch(vec![
            Op::Put(PutOp::put(ns(["b"]), "k1", object(json!({"v": 1})))),
            Op::Get(GetOp::new(ns(["b"]), "k1")),
            Op::Search(SearchOp::new(ns(["b"]))),
        ])
        .await
        .unwrap();
    let results: Vec<Json> = results
        .iter()
        .map(|result| match result {
            OpResult::Done => Json::Null,
            OpResult::Item(item) => item.as_ref().map_or(Json::Null, item_json),
            OpResult::Items(found) => found_json(found),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(json!(results), expected("batch"));
}

#[tokio::test]
async fn trace_30_semantic_search() {
    let index = IndexConfig::new(5, Vocabulary).with_fields(["text"]);
    let v = InMemoryStore::new().with_options(StoreOptions::new().with_index(index));
    v.put(&["pets"], "p1", json!({"text": "a red cat"}))
        .await
        .unwrap();
    v.put(&["pets"], "p2", json!({"text": "a blue fish"}))
        .await
        .unwrap();
    v.put(&["pets"], "p3", json!({"text": "dog dog dog"}))
        .await
        .unwrap();
    v.put_with(
        &["pets"],
        "p4",
        json!({"text": "cat cat cat"}),
        IndexFields::No,
        Ttl::Default,
    )
    .await
    .unwrap();
    let pets = || SearchOp::new(ns(["pets"]));
    for (key, op) in [
        ("semantic_search_cat", pets().with_query("cat")),
        (
            "semantic_search_dog_limit1",
            pets().with_query("dog").with_page(1, 0),
        ),
        (
            "semantic_plus_filter",
            pets()
                .with_query("fish")
                .with_filter(object(json!({"text": "a red cat"}))),
        ),
    ] {
        assert_eq!(search(&v, op).await, expected(key), "{key}");
    }
}
