//! ST-VS: semantic search with an index (capability `vector_search`), with
//! the kit's deterministic [`CharacterEmbeddings`] and cosine similarity.
//!
//! ST-VS-01 has two halves: a store built without an index claims no vector
//! search, accepts index choices on puts and answers a query by filtering
//! only (every backend runs it, in the `unconfigured` group); a store built
//! with one claims it and ranks by similarity.

use serde_json::{Value as Json, json};
use stategraph_llm::cosine_similarity;
use stategraph_store::{
    IndexConfig, IndexFields, ListNamespacesOp, Op, PutOp, SearchItem, SearchOp, Store, StoreError,
    Ttl,
};

use super::fixtures::{
    CharacterEmbeddings, DIMS, FailingEmbeddings, delete, expect_err, fresh, get, indexed, keys,
    list, n, obj, put, put_op, put_with, score_of, search,
};
use super::{StoreHarness, StoreOptions};

/// Scores within this distance are equal.
const EPS: f64 = 1e-5;

/// A search under `prefix` for `query`, with a page of `limit`.
fn query(prefix: &[&str], text: &str, limit: usize) -> SearchOp {
    SearchOp::new(n(prefix))
        .with_query(text)
        .with_page(limit, 0)
}

/// Asserts results are ranked: scored first in non-increasing order, then
/// unscored.
fn assert_ranked(id: &str, found: &[SearchItem]) {
    let scores: Vec<Option<f64>> = found.iter().map(|found| found.score).collect();
    let first_unscored = scores
        .iter()
        .position(Option::is_none)
        .unwrap_or(scores.len());
    assert!(
        scores[first_unscored..].iter().all(Option::is_none),
        "{id}: unscored results come last: {scores:?}"
    );
    let scored: Vec<f64> = scores.iter().flatten().copied().collect();
    assert!(
        scored.windows(2).all(|pair| pair[0] >= pair[1]),
        "{id}: scores do not increase: {scores:?}"
    );
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-4)
}

/// ST-VS-01: a store built without an index claims no vector search;
/// puts with explicit index fields are accepted; a search with a query is
/// answered as without one (same items, same order, filter applied, no
/// scores).
pub async fn st_vs_01_without_index_queries_only_filter(h: &impl StoreHarness) {
    let store = fresh(h).await;
    assert!(
        !store.capabilities().vector_search,
        "ST-VS-01: a store built without an index claims no vector search"
    );
    put(
        &store,
        &["docs"],
        "a",
        json!({"text": "apple pie", "kind": "food"}),
    )
    .await;
    put_with(
        &store,
        &["docs"],
        "b",
        json!({"text": "red car", "kind": "vehicle"}),
        IndexFields::Fields(vec!["text".into()]),
        Ttl::Default,
    )
    .await;
    put(
        &store,
        &["docs"],
        "c",
        json!({"text": "apple tart", "kind": "food"}),
    )
    .await;
    let plain = search(&store, SearchOp::new(n(&["docs"]))).await;
    let queried = search(&store, SearchOp::new(n(&["docs"])).with_query("red car")).await;
    assert_eq!(
        keys(&queried),
        keys(&plain),
        "ST-VS-01: the query is ignored"
    );
    assert_eq!(queried.len(), 3, "ST-VS-01: every item");
    assert!(
        queried.iter().all(|found| found.score.is_none()),
        "ST-VS-01: no scores without an index"
    );
    let filtered = search(
        &store,
        SearchOp::new(n(&["docs"]))
            .with_query("red car")
            .with_filter(obj(json!({"kind": "food"}))),
    )
    .await;
    let mut found = keys(&filtered);
    found.sort();
    assert_eq!(found, ["a", "c"], "ST-VS-01: the filter still applies");
}

/// ST-VS-01: a store built with an index claims vector search, and a
/// query ranks every item with a score.
pub async fn st_vs_01_index_enables_vector_search(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    assert!(
        store.capabilities().vector_search,
        "ST-VS-01: a store built with an index claims vector search"
    );
    put(&store, &["docs"], "a", json!({"text": "apple pie"})).await;
    put(&store, &["docs"], "b", json!({"text": "red car"})).await;
    let found = search(&store, query(&["docs"], "red car", 10)).await;
    assert_eq!(keys(&found), ["b", "a"], "ST-VS-01: ranked by similarity");
    assert!(
        found.iter().all(|found| found.score.is_some()),
        "ST-VS-01: every result is scored"
    );
    assert!(
        close(found[0].score, 1.0),
        "ST-VS-01: an equal text scores 1"
    );
}

/// ST-VS-02: six documents with their text in different fields, indexed
/// whole (`$`): a query ranks them all, the closest first.
pub async fn st_vs_02_query_ranks_documents(h: &impl StoreHarness) {
    let store = indexed(h, ["$"]).await;
    let docs = [
        ("doc1", json!({"text": "short text"})),
        ("doc2", json!({"text": "longer text document"})),
        ("doc3", json!({"text": "longest text document here"})),
        ("doc4", json!({"description": "text in description field"})),
        ("doc5", json!({"content": "text in content field"})),
        ("doc6", json!({"body": "text in body field"})),
    ];
    for (key, value) in &docs {
        put(&store, &["test"], key, value.clone()).await;
    }
    let found = search(&store, query(&["test"], "long text", 10)).await;
    assert_eq!(found.len(), 6, "ST-VS-02: every document");
    assert!(
        found.iter().all(|found| found.score.is_some()),
        "ST-VS-02: all scored"
    );
    assert_ranked("ST-VS-02", &found);
    let exact = search(
        &store,
        query(&["test"], r#"{"text":"longer text document"}"#, 2),
    )
    .await;
    assert_eq!(
        exact[0].item.key, "doc2",
        "ST-VS-02: the whole value's text ranks its document first"
    );
    assert!(close(exact[0].score, 1.0), "ST-VS-02: with score 1");
}

/// ST-VS-03: an update re-embeds: "zany zebra Xerxes" ranks first for
/// "Zany Xerxes" with score s0; after the text becomes "new text about
/// dogs", its score for the old query drops below s0 and its score for the
/// new text rises above that.
pub async fn st_vs_03_update_re_embeds(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    put(
        &store,
        &["test"],
        "doc1",
        json!({"text": "zany zebra Xerxes"}),
    )
    .await;
    put(
        &store,
        &["test"],
        "doc2",
        json!({"text": "something about cats"}),
    )
    .await;
    put(
        &store,
        &["test"],
        "doc3",
        json!({"text": "plain boring words"}),
    )
    .await;
    let found = search(&store, query(&["test"], "Zany Xerxes", 10)).await;
    assert_eq!(found[0].item.key, "doc1", "ST-VS-03: doc1 first");
    let s0 = found[0].score.expect("ST-VS-03: scored");
    put(
        &store,
        &["test"],
        "doc1",
        json!({"text": "new text about dogs"}),
    )
    .await;
    let after = search(&store, query(&["test"], "Zany Xerxes", 10)).await;
    let s1 = score_of(&after, "doc1").expect("ST-VS-03: still scored");
    assert!(
        s1 < s0,
        "ST-VS-03: old query scores lower now ({s1} < {s0})"
    );
    let new = search(&store, query(&["test"], "new text about dogs", 10)).await;
    assert_eq!(
        new[0].item.key, "doc1",
        "ST-VS-03: new text ranks doc1 first"
    );
    let s2 = new[0].score.expect("ST-VS-03: scored");
    assert!(
        s2 > s1,
        "ST-VS-03: the new text scores higher ({s2} > {s1})"
    );
}

/// ST-VS-04: an item put with `IndexFields::No` is never ranked: a query
/// returns it unscored after every scored item (only to fill the page), and
/// get still finds it.
pub async fn st_vs_04_unindexed_puts_are_not_ranked(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    put_with(
        &store,
        &["test"],
        "unindexed",
        json!({"text": "exact query text"}),
        IndexFields::No,
        Ttl::Default,
    )
    .await;
    put(
        &store,
        &["test"],
        "indexed1",
        json!({"text": "something else"}),
    )
    .await;
    put(&store, &["test"], "indexed2", json!({"text": "more words"})).await;
    let found = search(&store, query(&["test"], "exact query text", 10)).await;
    assert_eq!(found.len(), 3, "ST-VS-04: every item");
    assert_eq!(
        found[2].item.key, "unindexed",
        "ST-VS-04: the unindexed item comes last"
    );
    assert_eq!(found[2].score, None, "ST-VS-04: unscored");
    assert_ranked("ST-VS-04", &found);
    let page = search(&store, query(&["test"], "exact query text", 2)).await;
    assert!(
        !keys(&page).contains(&"unindexed".to_owned()),
        "ST-VS-04: never ahead of a scored item"
    );
    assert!(
        get(&store, &["test"], "unindexed").await.is_some(),
        "ST-VS-04: get finds it"
    );
}

/// ST-VS-05: with default fields `key0, key1, key3`, a value lacking some of
/// them is no error; every present field is embedded on its own, so "xxx"
/// in `key1` of one document and `key3` of another score equally, and
/// "xxx" in the unindexed `key2` does not.
pub async fn st_vs_05_missing_fields_are_skipped(h: &impl StoreHarness) {
    let store = indexed(h, ["key0", "key1", "key3"]).await;
    put(
        &store,
        &["test"],
        "doc1",
        json!({"key1": "xxx", "key2": "yyy"}),
    )
    .await;
    put(
        &store,
        &["test"],
        "doc2",
        json!({"key0": "uuu", "key3": "xxx"}),
    )
    .await;
    put(
        &store,
        &["test"],
        "doc3",
        json!({"key0": "aaa", "key2": "xxx"}),
    )
    .await;
    put(&store, &["test"], "doc4", json!({"other": "xxx"})).await;
    let found = search(&store, query(&["test"], "xxx", 10)).await;
    let (s1, s2) = (score_of(&found, "doc1"), score_of(&found, "doc2"));
    assert!(close(s1, 1.0), "ST-VS-05: doc1 by key1 ({s1:?})");
    assert!(close(s2, 1.0), "ST-VS-05: doc2 by key3 ({s2:?})");
    assert!(
        (s1.unwrap_or_default() - s2.unwrap_or_default()).abs() < EPS,
        "ST-VS-05: equal scores"
    );
    let s3 = score_of(&found, "doc3").expect("ST-VS-05: doc3 has key0 indexed");
    assert!(s3 < 0.999, "ST-VS-05: key2 is not indexed ({s3})");
    assert_eq!(
        score_of(&found, "doc4"),
        None,
        "ST-VS-05: no indexed field, no vector"
    );
    assert_ranked("ST-VS-05", &found);
}

/// ST-VS-06: per-put fields override the store's default: with default
/// `key17`, puts indexing `key0, key1` are ranked by those; documents
/// sharing an identical field text score identically.
pub async fn st_vs_06_per_put_fields_override_default(h: &impl StoreHarness) {
    let store = indexed(h, ["key17"]).await;
    let fields = IndexFields::Fields(vec!["key0".into(), "key1".into()]);
    put_with(
        &store,
        &["test"],
        "doc1",
        json!({"key0": "hello", "key1": "world", "key17": "zzz"}),
        fields.clone(),
        Ttl::Default,
    )
    .await;
    put_with(
        &store,
        &["test"],
        "doc2",
        json!({"key0": "hello", "key17": "qqq"}),
        fields,
        Ttl::Default,
    )
    .await;
    put(
        &store,
        &["test"],
        "doc3",
        json!({"key0": "hello", "key17": "zzz"}),
    )
    .await;
    let hello = search(&store, query(&["test"], "hello", 10)).await;
    let (s1, s2) = (score_of(&hello, "doc1"), score_of(&hello, "doc2"));
    assert!(
        close(s1, 1.0) && close(s2, 1.0),
        "ST-VS-06: key0 is indexed"
    );
    assert!(
        (s1.unwrap_or_default() - s2.unwrap_or_default()).abs() < EPS,
        "ST-VS-06: identical field texts score identically"
    );
    let s3 = score_of(&hello, "doc3").expect("ST-VS-06: doc3 is indexed by key17");
    assert!(s3 < 0.999, "ST-VS-06: doc3's key0 is not indexed ({s3})");
    let zzz = search(&store, query(&["test"], "zzz", 10)).await;
    assert_eq!(zzz[0].item.key, "doc3", "ST-VS-06: key17 ranks doc3 first");
    assert!(
        score_of(&zzz, "doc1").is_some_and(|s| s < 0.999),
        "ST-VS-06: doc1's key17 is not indexed"
    );
}

/// ST-VS-07: field paths select texts as `get_text_at_path`: `a.b`,
/// `arr[0]`, `arr[-1]`, `arr[*]`, `arr[*].x`, `obj.*`, `{a,b.c}`; `$` is the
/// whole value as JSON with sorted keys; `[]` and `{}` are their JSON text;
/// a missing path, `null` and a malformed path give nothing (no vector, no
/// error).
pub async fn st_vs_07_field_paths(h: &impl StoreHarness) {
    let store = indexed(h, ["$"]).await;
    let doc = json!({
        "a": {"b": "alpha beta"},
        "arr": [{"x": "first item"}, {"x": "last item"}],
        "words": ["one word", "two words"],
        "obj": {"p": "pee value", "q": "queue value"},
        "c": {"d": "nested sea"},
        "n": null,
        "empty": [],
        "blank": {},
    });
    let scored: [(&str, &str); 11] = [
        ("a.b", "alpha beta"),
        ("arr[0].x", "first item"),
        ("arr[-1].x", "last item"),
        ("arr[*].x", "last item"),
        ("words[*]", "two words"),
        ("words[1]", "two words"),
        ("obj.*", "queue value"),
        ("{a.b,c.d}", "nested sea"),
        ("empty", "[]"),
        ("blank", "{}"),
        ("c", r#"{"d":"nested sea"}"#),
    ];
    let unscored = [
        "missing",
        "a.missing",
        "n",
        "arr[9].x",
        "arr[x",
        "words[oops]",
    ];
    let mut ops = Vec::new();
    for (i, (path, _)) in scored.iter().enumerate() {
        ops.push(Op::Put(
            PutOp::put(n(&["paths", &format!("s{i}")]), "doc", obj(doc.clone()))
                .with_index(IndexFields::Fields(vec![(*path).to_owned()])),
        ));
    }
    for (i, path) in unscored.iter().enumerate() {
        ops.push(Op::Put(
            PutOp::put(n(&["paths", &format!("u{i}")]), "doc", obj(doc.clone()))
                .with_index(IndexFields::Fields(vec![(*path).to_owned()])),
        ));
    }
    store
        .batch(ops)
        .await
        .unwrap_or_else(|err| panic!("ST-VS-07: paths never fail a put: {err}"));
    for (i, (path, text)) in scored.iter().enumerate() {
        let found = search(&store, query(&["paths", &format!("s{i}")], text, 1)).await;
        assert!(
            close(found[0].score, 1.0),
            "ST-VS-07: path {path} embeds {text:?} (score {:?})",
            found[0].score
        );
    }
    for (i, path) in unscored.iter().enumerate() {
        let found = search(&store, query(&["paths", &format!("u{i}")], "anything", 1)).await;
        assert_eq!(found[0].score, None, "ST-VS-07: path {path} embeds nothing");
    }
    put(
        &store,
        &["paths", "whole"],
        "doc",
        json!({"b": 1, "a": "x"}),
    )
    .await;
    let found = search(&store, query(&["paths", "whole"], r#"{"a":"x","b":1}"#, 1)).await;
    assert!(
        close(found[0].score, 1.0),
        "ST-VS-07: `$` is the whole value with sorted keys"
    );
}

/// ST-VS-08: an item with several vectors (`arr[*]`) appears once, scored
/// by its best vector.
pub async fn st_vs_08_best_vector_scores_once(h: &impl StoreHarness) {
    let store = indexed(h, ["arr[*]"]).await;
    put(
        &store,
        &["test"],
        "multi",
        json!({"arr": ["aaaa", "zzzz", "mmmm"]}),
    )
    .await;
    put(&store, &["test"], "single", json!({"arr": ["zzzy"]})).await;
    for text in ["aaaa", "zzzz", "mmmm"] {
        let found = search(&store, query(&["test"], text, 10)).await;
        assert_eq!(
            found
                .iter()
                .filter(|found| found.item.key == "multi")
                .count(),
            1,
            "ST-VS-08: the item appears once for {text}"
        );
        assert_eq!(found.len(), 2, "ST-VS-08: results unique by key");
        assert_eq!(found[0].item.key, "multi", "ST-VS-08: {text}");
        assert!(
            close(found[0].score, 1.0),
            "ST-VS-08: scored by its best vector for {text}"
        );
    }
}

/// ST-VS-09: a query with a filter returns only the filtered items, ranked
/// by similarity.
pub async fn st_vs_09_query_with_filter(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    let docs = [
        (
            "doc1",
            json!({"text": "red apple", "color": "red", "score": 4.5}),
        ),
        (
            "doc2",
            json!({"text": "red car", "color": "red", "score": 3.0}),
        ),
        (
            "doc3",
            json!({"text": "green apple", "color": "green", "score": 4.0}),
        ),
        (
            "doc4",
            json!({"text": "blue car", "color": "blue", "score": 3.5}),
        ),
    ];
    for (key, value) in &docs {
        put(&store, &["test"], key, value.clone()).await;
    }
    let run = |text: &str, filter: Json| {
        SearchOp::new(n(&["test"]))
            .with_query(text)
            .with_filter(obj(filter))
    };
    let found = search(&store, run("red apple", json!({"color": "red"}))).await;
    assert_eq!(keys(&found), ["doc1", "doc2"], "ST-VS-09: red, apple first");
    let found = search(&store, run("red car", json!({"color": "red"}))).await;
    assert_eq!(keys(&found), ["doc2", "doc1"], "ST-VS-09: red, car first");
    let found = search(&store, run("blue car", json!({"score": {"$gt": 3.2}}))).await;
    assert_eq!(found.len(), 3, "ST-VS-09: score > 3.2");
    assert_ranked("ST-VS-09", &found);
    assert_eq!(found[0].item.key, "doc4", "ST-VS-09: blue car first");
    let found = search(
        &store,
        run("apple", json!({"score": {"$gte": 4.0}, "color": "green"})),
    )
    .await;
    assert_eq!(keys(&found), ["doc3"], "ST-VS-09: $gte and equality");
}

/// ST-VS-10: pages of a query: limit 2 at offsets 0 and 2 are disjoint and
/// follow the full ranking; limit 10 returns all five.
pub async fn st_vs_10_query_pagination(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    for (i, text) in [
        "test one",
        "test two two",
        "other",
        "tester",
        "nothing alike",
    ]
    .iter()
    .enumerate()
    {
        put(
            &store,
            &["test"],
            &format!("doc{i}"),
            json!({ "text": text }),
        )
        .await;
    }
    let all = search(&store, query(&["test"], "test", 10)).await;
    assert_eq!(all.len(), 5, "ST-VS-10: limit 10 returns all five");
    let page = |offset| {
        SearchOp::new(n(&["test"]))
            .with_query("test")
            .with_page(2, offset)
    };
    let first = keys(&search(&store, page(0)).await);
    let second = keys(&search(&store, page(2)).await);
    assert_ne!(first[0], second[0], "ST-VS-10: different first keys");
    assert_eq!(first, keys(&all[..2]), "ST-VS-10: first page");
    assert_eq!(second, keys(&all[2..4]), "ST-VS-10: second page");
}

/// ST-VS-11: odd queries (empty, very long, punctuation only, none) each
/// return the single document without error.
pub async fn st_vs_11_odd_queries(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    put(&store, &["test"], "doc", json!({"text": "test document"})).await;
    let long = "test ".repeat(100);
    for text in ["", long.as_str(), "test!@#$%^&*()", "   "] {
        let found = search(&store, query(&["test"], text, 10)).await;
        assert_eq!(keys(&found), ["doc"], "ST-VS-11: query {text:?}");
    }
    let found = search(&store, SearchOp::new(n(&["test"]))).await;
    assert_eq!(keys(&found), ["doc"], "ST-VS-11: no query");
    assert_eq!(found[0].score, None, "ST-VS-11: no query, no score");
}

/// ST-VS-12: a single document's score is the cosine similarity of its
/// embedding and the query's (within 1e-3).
pub async fn st_vs_12_score_is_cosine_similarity(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    let (text, question) = ("the quick brown fox", "a quick fox jumps");
    put(&store, &["test"], "doc", json!({ "text": text })).await;
    let found = search(&store, query(&["test"], question, 10)).await;
    let embedder = CharacterEmbeddings::new(DIMS);
    let expected = f64::from(cosine_similarity(
        &embedder.embed(text),
        &embedder.embed(question),
    ));
    let score = found[0].score.expect("ST-VS-12: scored");
    assert!(
        (score - expected).abs() < 1e-3,
        "ST-VS-12: score {score}, cosine similarity {expected}"
    );
}

/// ST-VS-13: one matching document among 200 others in sibling namespaces:
/// a query under `("test",)` with limit 10 gives 10 distinct keys, the
/// match first with a strictly higher score.
pub async fn st_vs_13_match_among_many_siblings(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    let mut ops: Vec<Op> = (0..200)
        .map(|i| {
            put_op(
                &["test", &format!("noise{}", i % 10)],
                &format!("noise{i:03}"),
                json!({ "text": format!("unrelated filler number {i}") }),
            )
        })
        .collect();
    ops.push(put_op(
        &["test", "target"],
        "match",
        json!({"text": "needle in the haystack"}),
    ));
    store
        .batch(ops)
        .await
        .unwrap_or_else(|err| panic!("ST-VS-13: batch put failed: {err}"));
    let found = search(&store, query(&["test"], "needle in the haystack", 10)).await;
    let mut distinct = keys(&found);
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 10, "ST-VS-13: 10 distinct keys");
    assert_eq!(found[0].item.key, "match", "ST-VS-13: the match first");
    let (best, next) = (found[0].score, found[1].score);
    assert!(
        best.zip(next).is_some_and(|(best, next)| best > next),
        "ST-VS-13: strictly higher score ({best:?} > {next:?})"
    );
}

/// ST-VS-14: queries in Chinese, Japanese, Korean, Russian and Hindi each
/// rank their document first (ST-KV-06's ranking half).
pub async fn st_vs_14_non_ascii_queries(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    let texts = [
        ("zh", "这是中文"),
        ("ja", "これは日本語です"),
        ("ko", "이것은 한국어입니다"),
        ("ru", "Это русский текст"),
        ("hi", "यह हिंदी है"),
    ];
    for (key, text) in texts {
        put(&store, &["unicode"], key, json!({ "text": text })).await;
    }
    for (key, text) in texts {
        let found = search(&store, query(&["unicode"], text, 5)).await;
        assert_eq!(found[0].item.key, key, "ST-VS-14: {key} first");
        assert!(close(found[0].score, 1.0), "ST-VS-14: {key} scores 1");
        assert!(
            found[1].score.is_some_and(|s| s < 0.999),
            "ST-VS-14: {key} strictly first"
        );
    }
}

/// ST-VS-15: when the embedder fails, the put fails as a whole
/// (`StoreError::Embedding`) and nothing of its batch is stored; a query
/// the embedder refuses fails the search; an unindexed put of the same text
/// works.
pub async fn st_vs_15_embedder_failure_stores_nothing(h: &impl StoreHarness) {
    let index = IndexConfig::new(DIMS, FailingEmbeddings::new("EXPLODE")).with_fields(["text"]);
    let store = h.store(StoreOptions::new().with_index(index)).await;
    put(&store, &["test"], "ok", json!({"text": "fine"})).await;
    let err = expect_err(
        store
            .batch(vec![
                put_op(&["test"], "ok", json!({"text": "overwritten"})),
                put_op(&["test"], "a", json!({"text": "harmless"})),
                put_op(&["test"], "b", json!({"text": "EXPLODE now"})),
            ])
            .await,
        "ST-VS-15",
    );
    assert!(
        matches!(err, StoreError::Embedding(_)),
        "ST-VS-15: expected Embedding, got {err:?}"
    );
    let err = expect_err(
        store.put(&["test"], "b", json!({"text": "EXPLODE"})).await,
        "ST-VS-15 (put)",
    );
    assert!(
        matches!(err, StoreError::Embedding(_)),
        "ST-VS-15: expected Embedding, got {err:?}"
    );
    assert_eq!(
        get(&store, &["test"], "ok").await.map(|item| item.value),
        Some(obj(json!({"text": "fine"}))),
        "ST-VS-15: the existing item is untouched"
    );
    for key in ["a", "b"] {
        assert!(
            get(&store, &["test"], key).await.is_none(),
            "ST-VS-15: {key} is not stored without its vectors"
        );
    }
    let err = expect_err(
        store.search(query(&["test"], "EXPLODE", 10)).await,
        "ST-VS-15 (search)",
    );
    assert!(
        matches!(err, StoreError::Embedding(_)),
        "ST-VS-15: expected Embedding, got {err:?}"
    );
    put_with(
        &store,
        &["test"],
        "b",
        json!({"text": "EXPLODE"}),
        IndexFields::No,
        Ttl::Default,
    )
    .await;
    assert!(
        get(&store, &["test"], "b").await.is_some(),
        "ST-VS-15: an unindexed put needs no embedding"
    );
}

/// ST-VS-16: an embedder returning vectors of another length than the
/// index's `dims` fails puts and queries with `StoreError::Dimensions`
/// (never a silent truncation), storing nothing.
pub async fn st_vs_16_dimension_mismatch_is_an_error(h: &impl StoreHarness) {
    let index = IndexConfig::new(8, CharacterEmbeddings::new(16)).with_fields(["text"]);
    let store = h.store(StoreOptions::new().with_index(index)).await;
    let expect_dims = |err: StoreError, what: &str| match err {
        StoreError::Dimensions { expected, got } => {
            assert_eq!((expected, got), (8, 16), "ST-VS-16: {what}");
        }
        other => panic!("ST-VS-16: {what}: expected Dimensions, got {other:?}"),
    };
    let err = expect_err(
        store.put(&["test"], "doc", json!({"text": "hello"})).await,
        "ST-VS-16 (put)",
    );
    expect_dims(err, "put");
    assert!(
        get(&store, &["test"], "doc").await.is_none(),
        "ST-VS-16: nothing stored"
    );
    assert!(
        list(&store, ListNamespacesOp::new()).await.is_empty(),
        "ST-VS-16: no namespace"
    );
    let err = expect_err(
        store.search(query(&["test"], "hello", 10)).await,
        "ST-VS-16 (search)",
    );
    expect_dims(err, "search");
}

/// ST-VS-17: deleting an item removes its vectors: a query no longer finds
/// it, and the same key put again unindexed comes back unscored.
pub async fn st_vs_17_delete_removes_vectors(h: &impl StoreHarness) {
    let store = indexed(h, ["text"]).await;
    put(&store, &["test"], "doc", json!({"text": "needle"})).await;
    put(&store, &["test"], "other", json!({"text": "hay"})).await;
    delete(&store, &["test"], "doc").await;
    let found = search(&store, query(&["test"], "needle", 10)).await;
    assert_eq!(
        keys(&found),
        ["other"],
        "ST-VS-17: deleted items are not found"
    );
    put_with(
        &store,
        &["test"],
        "doc",
        json!({"text": "needle"}),
        IndexFields::No,
        Ttl::Default,
    )
    .await;
    let found = search(&store, query(&["test"], "needle", 10)).await;
    assert_eq!(
        score_of(&found, "doc"),
        None,
        "ST-VS-17: the old vectors are gone"
    );
    put(&store, &["test"], "doc", json!({"text": "replaced"})).await;
    let found = search(&store, query(&["test"], "needle", 10)).await;
    assert!(
        score_of(&found, "doc").is_some_and(|s| s < 0.999),
        "ST-VS-17: a re-indexed put has only its new vectors"
    );
}
