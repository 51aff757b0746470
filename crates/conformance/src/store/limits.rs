//! ST-LIM: the limit table of `stategraph_core::limits` (docs/LIMITS.md)
//! holds on every store alike: keys and namespaces at their limits round
//! trip (with vectors too, where the store indexes), one byte or one label
//! more, or a NUL character, is a [`StoreError::Limit`] before anything is
//! stored, and values are limited in depth and size.
//!
//! The cases of the [`store_conformance!`](crate::store_conformance) macro
//! are cheap. [`value_size_limit`] moves a 64 MiB value and runs once per
//! backend instead of once per configuration.

use serde_json::{Value as Json, json};
use stategraph_core::limits::{
    self, LimitError, MAX_DEPTH, MAX_KEY_BYTES, MAX_LABEL_BYTES, MAX_NAMESPACE_BYTES,
    MAX_NAMESPACE_LABELS, MAX_VALUE_BYTES,
};
use stategraph_core::{ErrorKind, JsonMap};
use stategraph_store::{ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store, StoreError};

use super::StoreHarness;
use super::fixtures::{batch, expect_err, fresh, get, indexed, keys, list, obj, put, search};
use crate::fixtures::text_of_bytes;

/// Labels as the `&[&str]` the store's convenience methods take.
fn refs(labels: &[String]) -> Vec<&str> {
    labels.iter().map(String::as_str).collect()
}

/// `count` labels of `bytes` bytes each, distinct, that do not compress.
fn labels(prefix: &str, count: usize, bytes: usize) -> Vec<String> {
    (0..count)
        .map(|i| text_of_bytes(&format!("{prefix}{i}-"), bytes))
        .collect()
}

/// Asserts that `err` is the limit error the table gives for `expected`
/// (same variant, same message on every store).
fn assert_limit(case: &str, err: &StoreError, expected: &LimitError) {
    match err {
        StoreError::Limit(found) => assert_eq!(found, expected, "{case}"),
        other => panic!("{case}: expected the limit error {expected}, got {other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{case}");
    assert_eq!(err.to_string(), expected.to_string(), "{case}: the message");
}

/// ST-LIM-01: a key of exactly `MAX_KEY_BYTES` bytes, under a namespace of
/// `MAX_NAMESPACE_LABELS` labels or of exactly `MAX_NAMESPACE_BYTES` bytes
/// holding a label of exactly `MAX_LABEL_BYTES` (text that does not
/// compress, with two-byte characters), is put, read, searched, listed
/// and deleted, with the semantic index writing its vectors too where the
/// store has one.
pub async fn st_lim_01_keys_and_namespaces_at_the_limit_round_trip(h: &impl StoreHarness) {
    let key = text_of_bytes("key-", MAX_KEY_BYTES);
    let deep = labels("d", MAX_NAMESPACE_LABELS, 31);
    // 256 + 3 × 255 bytes and 3 dots: exactly the namespace limit.
    let mut wide = vec![text_of_bytes("wide-", MAX_LABEL_BYTES)];
    wide.extend(labels("w", 3, MAX_LABEL_BYTES - 1));
    assert_eq!(
        wide.iter().map(String::len).sum::<usize>() + 3,
        MAX_NAMESPACE_BYTES
    );
    assert_eq!(deep.iter().map(String::len).sum::<usize>() + 31, 1023);
    let mut stores = vec![fresh(h).await];
    let with_index = indexed(h, ["text"]).await;
    if with_index.capabilities().vector_search {
        stores.push(with_index);
    }
    for store in &stores {
        for namespace in [&deep, &wide] {
            let at = refs(namespace);
            let value = json!({"text": "at the limit"});
            put(store, &at, &key, value.clone()).await;
            let item = get(store, &at, &key)
                .await
                .expect("ST-LIM-01: the item at the limits is found");
            assert_eq!(
                (&item.namespace, &item.key, &item.value),
                (namespace, &key, &obj(value)),
                "ST-LIM-01: read back exactly"
            );
            let found = search(store, SearchOp::new(vec![namespace[0].clone()])).await;
            assert_eq!(keys(&found), vec![key.clone()], "ST-LIM-01: search");
            let listed = list(
                store,
                ListNamespacesOp::new().with_prefix(vec![namespace[0].clone()]),
            )
            .await;
            assert_eq!(listed, vec![namespace.clone()], "ST-LIM-01: listing");
            store
                .delete(&at, &key)
                .await
                .unwrap_or_else(|err| panic!("ST-LIM-01: delete failed: {err}"));
            assert!(get(store, &at, &key).await.is_none(), "ST-LIM-01: deleted");
        }
    }
}

/// ST-LIM-02: a key one byte over `MAX_KEY_BYTES`, a label one byte over
/// `MAX_LABEL_BYTES`, a namespace of one label more than
/// `MAX_NAMESPACE_LABELS` or one byte over `MAX_NAMESPACE_BYTES` is
/// refused by put, delete, get and a raw batch with `StoreError::Limit`,
/// the error of the limit table (same message on every store); a batch
/// holding one such op stores nothing.
pub async fn st_lim_02_keys_and_namespaces_over_the_limit_are_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let long_key = text_of_bytes("key-", MAX_KEY_BYTES + 1);
    let mut wide = labels("w", 3, MAX_LABEL_BYTES);
    wide.push(text_of_bytes("w-", MAX_LABEL_BYTES - 2));
    let cases: Vec<(Vec<String>, String, LimitError)> = vec![
        (
            vec!["ok".to_owned()],
            long_key.clone(),
            limits::check_key(&long_key).unwrap_err(),
        ),
        (
            labels("l", 1, MAX_LABEL_BYTES + 1),
            "k".to_owned(),
            limits::check_namespace(&labels("l", 1, MAX_LABEL_BYTES + 1)).unwrap_err(),
        ),
        (
            labels("d", MAX_NAMESPACE_LABELS + 1, 6),
            "k".to_owned(),
            limits::check_namespace(&labels("d", MAX_NAMESPACE_LABELS + 1, 6)).unwrap_err(),
        ),
        (
            wide.clone(),
            "k".to_owned(),
            limits::check_namespace(&wide).unwrap_err(),
        ),
    ];
    assert!(
        matches!(
            &cases[3].2,
            LimitError::TooLong { what: "namespace", bytes, .. } if *bytes == MAX_NAMESPACE_BYTES + 1
        ),
        "ST-LIM-02: the wide namespace is one byte over"
    );
    for (namespace, key, expected) in cases {
        let at = refs(&namespace);
        let err = expect_err(store.put(&at, &key, json!({"v": 1})).await, "ST-LIM-02");
        assert_limit("ST-LIM-02: put", &err, &expected);
        let err = expect_err(store.delete(&at, &key).await, "ST-LIM-02");
        assert_limit("ST-LIM-02: delete", &err, &expected);
        let err = expect_err(store.get(&at, &key).await, "ST-LIM-02");
        assert_limit("ST-LIM-02: get", &err, &expected);
        let ops = vec![
            Op::Put(PutOp::put(vec!["ok".into()], "first", obj(json!({"v": 0})))),
            Op::Put(PutOp::put(
                namespace.clone(),
                key.clone(),
                obj(json!({"v": 1})),
            )),
        ];
        let err = expect_err(store.batch(ops).await, "ST-LIM-02");
        assert_limit("ST-LIM-02: batch", &err, &expected);
        assert!(
            get(&store, &["ok"], "first").await.is_none(),
            "ST-LIM-02: a refused batch stores nothing"
        );
    }
    assert!(
        list(&store, ListNamespacesOp::new()).await.is_empty(),
        "ST-LIM-02: nothing was stored"
    );
}

/// ST-LIM-03: a NUL character in a namespace label or a key is refused by
/// put, delete and get with `StoreError::Limit` (`Nul`) on every store
/// (PostgreSQL text cannot hold it); a search or listing naming such a
/// label is a query, not a write, and finds nothing.
pub async fn st_lim_03_nul_in_labels_and_keys_is_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["users", "alice"], "k", json!({"v": 1})).await;
    let nul_label = vec!["users".to_owned(), "ali\0ce".to_owned()];
    let cases = [
        (
            nul_label.clone(),
            "k",
            limits::check_namespace(&nul_label).unwrap_err(),
        ),
        (
            vec!["users".to_owned(), "alice".to_owned()],
            "k\0",
            limits::check_key("k\0").unwrap_err(),
        ),
    ];
    for (namespace, key, expected) in cases {
        assert!(matches!(expected, LimitError::Nul { .. }), "ST-LIM-03");
        let at = refs(&namespace);
        let err = expect_err(store.put(&at, key, json!({"v": 2})).await, "ST-LIM-03");
        assert_limit("ST-LIM-03: put", &err, &expected);
        let err = expect_err(store.delete(&at, key).await, "ST-LIM-03");
        assert_limit("ST-LIM-03: delete", &err, &expected);
        let err = expect_err(store.get(&at, key).await, "ST-LIM-03");
        assert_limit("ST-LIM-03: get", &err, &expected);
    }
    let found = search(&store, SearchOp::new(nul_label.clone())).await;
    assert!(found.is_empty(), "ST-LIM-03: a search finds nothing");
    let listed = list(&store, ListNamespacesOp::new().with_prefix(nul_label)).await;
    assert!(listed.is_empty(), "ST-LIM-03: a listing finds nothing");
    let item = get(&store, &["users", "alice"], "k").await;
    assert_eq!(
        item.map(|item| item.value),
        Some(obj(json!({"v": 1}))),
        "ST-LIM-03: the item is unchanged"
    );
}

/// ST-LIM-04: a value nested `MAX_DEPTH` levels deep (its own object
/// included) round-trips; one level deeper, or far deeper, is refused with
/// `StoreError::ValueTooDeep` instead of stored unreadable.
pub async fn st_lim_04_value_depth_is_limited(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let nested = |depth: usize| (0..depth).fold(json!(1), |inner, _| json!([inner]));
    let deepest = json!({"v": nested(MAX_DEPTH - 1)});
    put(&store, &["deep"], "ok", deepest.clone()).await;
    let item = get(&store, &["deep"], "ok").await;
    assert_eq!(
        item.map(|item| item.value),
        Some(obj(deepest)),
        "ST-LIM-04: the deepest value reads back"
    );
    for depth in [MAX_DEPTH, 1_000] {
        let err = expect_err(
            store
                .put(&["deep"], "too", json!({"v": nested(depth)}))
                .await,
            "ST-LIM-04",
        );
        assert!(
            matches!(err, StoreError::ValueTooDeep { limit, .. } if limit == MAX_DEPTH),
            "ST-LIM-04: {depth} levels: {err}"
        );
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "ST-LIM-04");
    }
    assert!(
        get(&store, &["deep"], "too").await.is_none(),
        "ST-LIM-04: nothing stored"
    );
}

/// ST-LIM-05: a value of exactly `MAX_VALUE_BYTES` bytes as compact JSON
/// is put, read and searched; one byte more is refused with
/// `StoreError::ValueTooLarge`, and a batch holding it stores nothing.
/// Every store runs it once (not part of the macro: it moves 64 MiB).
pub async fn value_size_limit(h: &impl StoreHarness) {
    let store = fresh(h).await;
    // `{"v":"…"}`: 8 bytes around the string.
    let sized = |bytes: usize| {
        let mut value = JsonMap::new();
        value.insert("v".to_owned(), Json::String("z".repeat(bytes - 8)));
        value
    };
    let read_len = |value: &JsonMap| value.get("v").and_then(Json::as_str).map(|v| v.len() + 8);
    let ops = vec![Op::Put(PutOp::put(
        vec!["big".into()],
        "at",
        sized(MAX_VALUE_BYTES),
    ))];
    batch(&store, ops).await;
    let item = get(&store, &["big"], "at")
        .await
        .expect("ST-LIM-05: the value of the limit is stored");
    assert_eq!(
        read_len(&item.value),
        Some(MAX_VALUE_BYTES),
        "ST-LIM-05: read back"
    );
    drop(item);
    let found = search(&store, SearchOp::new(vec!["big".into()])).await;
    assert_eq!(
        found
            .iter()
            .map(|found| read_len(&found.item.value))
            .collect::<Vec<_>>(),
        vec![Some(MAX_VALUE_BYTES)],
        "ST-LIM-05: searched"
    );
    drop(found);
    let ops = vec![
        Op::Put(PutOp::put(
            vec!["big".into()],
            "first",
            obj(json!({"v": 0})),
        )),
        Op::Put(PutOp::put(
            vec!["big".into()],
            "over",
            sized(MAX_VALUE_BYTES + 1),
        )),
    ];
    let err = expect_err(store.batch(ops).await, "ST-LIM-05");
    assert!(
        matches!(&err, StoreError::ValueTooLarge { key, limit, .. } if key == "over" && *limit == MAX_VALUE_BYTES),
        "ST-LIM-05: {err}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "ST-LIM-05");
    let results = batch(
        &store,
        vec![
            Op::Get(stategraph_store::GetOp::new(vec!["big".into()], "first")),
            Op::Get(stategraph_store::GetOp::new(vec!["big".into()], "over")),
        ],
    )
    .await;
    assert_eq!(
        results,
        vec![OpResult::Item(None), OpResult::Item(None)],
        "ST-LIM-05: the refused batch stored nothing"
    );
}
