//! ST-BA: batch semantics. A batch returns one result per op at the op's
//! position; ops apply **in order** (a read after a write of the same key in
//! one batch sees the write); a batch with an invalid op changes nothing.

use serde_json::json;
use stategraph_store::{
    GetOp, Item, ListNamespacesOp, Namespace, Op, OpResult, PutOp, SearchItem, SearchOp,
    StoreError, Ttl,
};

use super::StoreHarness;
use super::fixtures::{
    batch, expect_err, fresh, get, keys, list, n, namespaces, obj, put, put_op, search, sorted_keys,
};

const FOO: &[&str] = &["test", "foo"];
const BAR: &[&str] = &["test", "bar"];

/// Upstream's batch fixture: `key1` in `("test", "foo")` tagged `a`, `key2`
/// in `("test", "bar")` tagged `b`.
async fn fixture<S: stategraph_store::Store>(store: &S) {
    put(store, FOO, "key1", json!({"data": "value1", "tag": "a"})).await;
    put(store, BAR, "key2", json!({"data": "value2", "tag": "b"})).await;
}

fn get_op(namespace: &[&str], key: &str) -> Op {
    Op::Get(GetOp::new(n(namespace), key))
}

fn item(id: &str, result: &OpResult) -> Option<Item> {
    match result {
        OpResult::Item(item) => item.clone(),
        other => panic!("{id}: expected a get result, got {other:?}"),
    }
}

fn items(id: &str, result: &OpResult) -> Vec<SearchItem> {
    match result {
        OpResult::Items(items) => items.clone(),
        other => panic!("{id}: expected a search result, got {other:?}"),
    }
}

fn listed(id: &str, result: &OpResult) -> Vec<Namespace> {
    match result {
        OpResult::Namespaces(namespaces) => namespaces.clone(),
        other => panic!("{id}: expected a namespace listing, got {other:?}"),
    }
}

/// ST-BA-01: `[Get(hit), Put, Search(filter), ListNamespaces, Get(miss)]`
/// gives five results in place: the item, done, the matching item, both
/// namespaces, nothing.
pub async fn st_ba_01_mixed_batch_results_are_positional(h: &impl StoreHarness) {
    let store = fresh(h).await;
    fixture(&store).await;
    let results = batch(
        &store,
        vec![
            get_op(FOO, "key1"),
            put_op(FOO, "key3", json!({"data": "value3", "tag": "c"})),
            Op::Search(SearchOp::new(n(&["test"])).with_filter(obj(json!({"tag": "a"})))),
            Op::ListNamespaces(ListNamespacesOp::new()),
            get_op(FOO, "missing"),
        ],
    )
    .await;
    let hit = item("ST-BA-01", &results[0]).expect("ST-BA-01: the get hits");
    assert_eq!(
        (hit.key.as_str(), hit.value),
        ("key1", obj(json!({"data": "value1", "tag": "a"}))),
        "ST-BA-01: result 0"
    );
    assert_eq!(results[1], OpResult::Done, "ST-BA-01: result 1 (put)");
    assert_eq!(
        keys(&items("ST-BA-01", &results[2])),
        ["key1"],
        "ST-BA-01: result 2 (search tag=a)"
    );
    assert_eq!(
        listed("ST-BA-01", &results[3]),
        namespaces(&[BAR, FOO]),
        "ST-BA-01: result 3 (both namespaces)"
    );
    assert_eq!(
        item("ST-BA-01", &results[4]),
        None,
        "ST-BA-01: result 4 (miss)"
    );
}

/// ST-BA-02: a reordered mix `[Search, Get, ListNamespaces, Put(key3),
/// Get(key3)]` keeps results in place, and key3 is readable after the
/// batch.
pub async fn st_ba_02_reordered_mixed_batch(h: &impl StoreHarness) {
    let store = fresh(h).await;
    fixture(&store).await;
    let results = batch(
        &store,
        vec![
            Op::Search(SearchOp::new(n(&["test"]))),
            get_op(BAR, "key2"),
            Op::ListNamespaces(ListNamespacesOp::new().with_prefix(n(&["test"]))),
            put_op(BAR, "key3", json!({"data": "value3"})),
            get_op(BAR, "key3"),
        ],
    )
    .await;
    assert_eq!(
        sorted_keys(&items("ST-BA-02", &results[0])),
        ["key1", "key2"],
        "ST-BA-02: result 0 (search)"
    );
    assert_eq!(
        item("ST-BA-02", &results[1]).map(|item| item.key),
        Some("key2".to_owned()),
        "ST-BA-02: result 1 (get)"
    );
    assert_eq!(
        listed("ST-BA-02", &results[2]),
        namespaces(&[BAR, FOO]),
        "ST-BA-02: result 2 (list)"
    );
    assert_eq!(results[3], OpResult::Done, "ST-BA-02: result 3 (put)");
    assert_eq!(
        item("ST-BA-02", &results[4]),
        None,
        "ST-BA-02: result 4 (get of the key put in the same batch: reads come first)"
    );
    assert!(
        get(&store, BAR, "key3").await.is_some(),
        "ST-BA-02: key3 is readable after the batch"
    );
}

/// ST-BA-03: three gets (hit, miss, hit) answer in op order.
pub async fn st_ba_03_gets_in_order(h: &impl StoreHarness) {
    let store = fresh(h).await;
    fixture(&store).await;
    let results = batch(
        &store,
        vec![
            get_op(BAR, "key2"),
            get_op(FOO, "missing"),
            get_op(FOO, "key1"),
        ],
    )
    .await;
    let got: Vec<Option<String>> = results
        .iter()
        .map(|result| item("ST-BA-03", result).map(|item| item.key))
        .collect();
    assert_eq!(
        got,
        [Some("key2".to_owned()), None, Some("key1".to_owned())],
        "ST-BA-03"
    );
}

/// ST-BA-04: three puts, one of them a delete, give three `Done`s; the two
/// put items are readable and the deleted one is gone.
pub async fn st_ba_04_puts_and_delete(h: &impl StoreHarness) {
    let store = fresh(h).await;
    fixture(&store).await;
    let results = batch(
        &store,
        vec![
            put_op(FOO, "key4", json!({"data": "value4"})),
            put_op(BAR, "key5", json!({"data": "value5"})),
            Op::Put(PutOp::delete(n(FOO), "key1")),
        ],
    )
    .await;
    assert_eq!(
        results,
        [OpResult::Done, OpResult::Done, OpResult::Done],
        "ST-BA-04: three Dones"
    );
    assert!(get(&store, FOO, "key4").await.is_some(), "ST-BA-04: key4");
    assert!(get(&store, BAR, "key5").await.is_some(), "ST-BA-04: key5");
    assert!(
        get(&store, FOO, "key1").await.is_none(),
        "ST-BA-04: key1 deleted"
    );
}

/// ST-BA-05: three searches in one batch (a filter, a limit, a narrower
/// prefix) each answer their own query.
pub async fn st_ba_05_searches_in_order(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, FOO, "key1", json!({"tag": "a"})).await;
    put(&store, FOO, "key2", json!({"tag": "a"})).await;
    put(&store, BAR, "key3", json!({"tag": "b"})).await;
    let results = batch(
        &store,
        vec![
            Op::Search(SearchOp::new(n(&["test"])).with_filter(obj(json!({"tag": "a"})))),
            Op::Search(SearchOp::new(n(&["test"])).with_page(2, 0)),
            Op::Search(SearchOp::new(n(BAR))),
        ],
    )
    .await;
    assert_eq!(
        sorted_keys(&items("ST-BA-05", &results[0])),
        ["key1", "key2"],
        "ST-BA-05: tag a"
    );
    assert_eq!(items("ST-BA-05", &results[1]).len(), 2, "ST-BA-05: limit 2");
    assert_eq!(
        keys(&items("ST-BA-05", &results[2])),
        ["key3"],
        "ST-BA-05: narrower prefix"
    );
}

/// ST-BA-06: three listings in one batch (all, `max_depth` 2, suffix
/// `public`) each answer their own conditions.
pub async fn st_ba_06_listings_in_order(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let all: [&[&str]; 4] = [
        &["prod", "baz", "public"],
        &["prod", "qux", "private"],
        &["test", "bar", "private"],
        &["test", "foo", "public"],
    ];
    for namespace in all {
        put(&store, namespace, "k", json!({"v": 1})).await;
    }
    let results = batch(
        &store,
        vec![
            Op::ListNamespaces(ListNamespacesOp::new()),
            Op::ListNamespaces(ListNamespacesOp::new().with_max_depth(2)),
            Op::ListNamespaces(ListNamespacesOp::new().with_suffix(n(&["public"]))),
        ],
    )
    .await;
    assert_eq!(
        listed("ST-BA-06", &results[0]),
        namespaces(&all),
        "ST-BA-06: all four"
    );
    assert_eq!(
        listed("ST-BA-06", &results[1]),
        namespaces(&[
            &["prod", "baz"],
            &["prod", "qux"],
            &["test", "bar"],
            &["test", "foo"]
        ]),
        "ST-BA-06: max_depth 2"
    );
    assert_eq!(
        listed("ST-BA-06", &results[2]),
        namespaces(&[&["prod", "baz", "public"], &["test", "foo", "public"]]),
        "ST-BA-06: suffix public"
    );
}

/// ST-BA-07: several puts of one key in a batch: the last one wins,
/// including a delete in last position.
pub async fn st_ba_07_last_put_of_a_key_wins(h: &impl StoreHarness) {
    let store = fresh(h).await;
    batch(
        &store,
        vec![
            put_op(FOO, "k", json!({"v": 1})),
            put_op(FOO, "k", json!({"v": 2})),
            Op::Put(PutOp::delete(n(FOO), "k")),
            put_op(FOO, "k", json!({"v": 3})),
            put_op(FOO, "gone", json!({"v": 1})),
            put_op(FOO, "gone", json!({"v": 2})),
            Op::Put(PutOp::delete(n(FOO), "gone")),
        ],
    )
    .await;
    assert_eq!(
        get(&store, FOO, "k").await.map(|item| item.value),
        Some(obj(json!({"v": 3}))),
        "ST-BA-07: the last put wins"
    );
    assert!(
        get(&store, FOO, "gone").await.is_none(),
        "ST-BA-07: a last delete wins"
    );
    let found = search(&store, SearchOp::new(n(FOO))).await;
    assert_eq!(keys(&found), ["k"], "ST-BA-07: one item per key");
}

/// ST-BA-08: reads see the store as it was before the batch (LangGraph's
/// stores run a batch's reads before its writes): a get, a search and a
/// listing after a put in the same batch do not see it; the writes apply
/// after, in order, so the last one of a key wins.
pub async fn st_ba_08_reads_see_the_store_before_the_batch(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, FOO, "k", json!({"v": "old"})).await;
    let results = batch(
        &store,
        vec![
            get_op(FOO, "k"),
            put_op(FOO, "k", json!({"v": "new"})),
            get_op(FOO, "k"),
            Op::Search(SearchOp::new(n(FOO)).with_filter(obj(json!({"v": "new"})))),
            put_op(&["fresh", "ns"], "x", json!({"v": 1})),
            Op::ListNamespaces(ListNamespacesOp::new().with_prefix(n(&["fresh"]))),
            Op::Put(PutOp::delete(n(FOO), "k")),
            get_op(FOO, "k"),
        ],
    )
    .await;
    let value = |i: usize| item("ST-BA-08", &results[i]).map(|item| item.value["v"].clone());
    assert_eq!(value(0), Some(json!("old")), "ST-BA-08: get before the put");
    assert_eq!(value(2), Some(json!("old")), "ST-BA-08: get after the put");
    assert!(
        items("ST-BA-08", &results[3]).is_empty(),
        "ST-BA-08: search after the put"
    );
    assert!(
        listed("ST-BA-08", &results[5]).is_empty(),
        "ST-BA-08: listing after the put"
    );
    assert_eq!(
        value(7),
        Some(json!("old")),
        "ST-BA-08: get after the delete"
    );
    assert!(
        get(&store, FOO, "k").await.is_none(),
        "ST-BA-08: the delete, last, wins"
    );
    assert!(
        get(&store, &["fresh", "ns"], "x").await.is_some(),
        "ST-BA-08: the put applied"
    );
}

/// ST-BA-09: a batch is all-or-nothing for an invalid op: 49 valid puts (one
/// overwriting an existing item) followed by a put under an invalid
/// namespace fail as a whole, the error naming that namespace, and nothing
/// changes; likewise for a search with an invalid filter key and a TTL on a
/// store without TTL support at the end of a batch.
pub async fn st_ba_09_invalid_op_fails_whole_batch(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, FOO, "key0", json!({"v": "before"})).await;
    let mut ops: Vec<Op> = (0..49)
        .map(|i| put_op(FOO, &format!("key{i}"), json!({ "v": i })))
        .collect();
    ops.push(put_op(&["test", "bad.label"], "key49", json!({"v": 49})));
    let err = expect_err(store_batch(&store, ops).await, "ST-BA-09");
    match &err {
        StoreError::InvalidNamespace { namespace, .. } => {
            assert_eq!(namespace, &n(&["test", "bad.label"]), "ST-BA-09");
        }
        other => panic!("ST-BA-09: expected InvalidNamespace, got {other:?}"),
    }
    assert!(
        err.to_string().contains("bad.label"),
        "ST-BA-09: the message names the namespace: {err}"
    );
    assert_unchanged(&store).await;

    let ops = vec![
        put_op(FOO, "key0", json!({"v": "after"})),
        put_op(FOO, "key1", json!({"v": 1})),
        Op::Search(SearchOp::new(n(FOO)).with_filter(obj(json!({"a') OR ('1'='1": 1})))),
    ];
    let err = expect_err(store_batch(&store, ops).await, "ST-BA-09 (filter)");
    assert!(
        matches!(err, StoreError::InvalidFilterKey { .. }),
        "ST-BA-09: expected InvalidFilterKey, got {err:?}"
    );
    assert_unchanged(&store).await;

    let ops = vec![
        put_op(FOO, "key0", json!({"v": "after"})),
        Op::Put(PutOp::put(n(FOO), "key1", obj(json!({"v": 1}))).with_ttl(Ttl::Minutes(5.0))),
    ];
    let err = expect_err(store_batch(&store, ops).await, "ST-BA-09 (ttl)");
    assert!(
        matches!(err, StoreError::Unsupported { .. }),
        "ST-BA-09: expected Unsupported, got {err:?}"
    );
    assert_unchanged(&store).await;
}

async fn store_batch<S: stategraph_store::Store>(
    store: &S,
    ops: Vec<Op>,
) -> stategraph_store::Result<Vec<OpResult>> {
    store.batch(ops).await
}

async fn assert_unchanged<S: stategraph_store::Store>(store: &S) {
    assert_eq!(
        get(store, FOO, "key0").await.map(|item| item.value),
        Some(obj(json!({"v": "before"}))),
        "ST-BA-09: the existing item is untouched"
    );
    assert!(
        get(store, FOO, "key1").await.is_none(),
        "ST-BA-09: no put of the failed batch is applied"
    );
    assert_eq!(
        list(store, ListNamespacesOp::new()).await,
        [n(FOO)],
        "ST-BA-09: no namespace appears"
    );
}
