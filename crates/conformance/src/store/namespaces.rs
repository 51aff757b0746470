//! ST-NS: namespace validation. A namespace is a non-empty list of
//! non-empty labels without `.`; public writes may not use the root label
//! `langgraph`; labels are compared exactly (case, trailing newline,
//! pattern metacharacters).
//!
//! ST-NS-04 (a label that is not a string) cannot be written in Rust:
//! labels are `String`s.

use serde_json::json;
use stategraph_store::{ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store, StoreError};

use super::StoreHarness;
use super::fixtures::{
    batch, delete, expect_err, fresh, get, keys, list, n, namespaces, obj, put, put_op, search,
};

/// Asserts `err` is `InvalidNamespace` for exactly `namespace`.
fn assert_invalid(id: &str, err: &StoreError, namespace: &[&str]) {
    match err {
        StoreError::InvalidNamespace {
            namespace: found, ..
        } => assert_eq!(
            found,
            &n(namespace),
            "{id}: the error names the namespace given"
        ),
        other => panic!("{id}: expected InvalidNamespace for {namespace:?}, got {other:?}"),
    }
}

/// Asserts the store lists no namespace at all.
async fn assert_empty<S: Store>(id: &str, store: &S) {
    let listed = list(store, ListNamespacesOp::new()).await;
    assert!(
        listed.is_empty(),
        "{id}: nothing was stored, got {listed:?}"
    );
}

/// ST-NS-01: an empty namespace is refused with `InvalidNamespace`, by the
/// public put and by a raw batch put; nothing is stored.
pub async fn st_ns_01_empty_namespace_is_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let root: [&str; 0] = [];
    let err = expect_err(store.put(&root, "k", json!({"a": 1})).await, "ST-NS-01");
    assert_invalid("ST-NS-01", &err, &root);
    let err = expect_err(
        store.batch(vec![put_op(&root, "k", json!({"a": 1}))]).await,
        "ST-NS-01 (batch)",
    );
    assert_invalid("ST-NS-01", &err, &root);
    assert_empty("ST-NS-01", &store).await;
}

/// ST-NS-02: a label containing `.` is refused with `InvalidNamespace`.
pub async fn st_ns_02_dot_in_label_is_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let bad = ["the", "thing.about"];
    let err = expect_err(store.put(&bad, "k", json!({"a": 1})).await, "ST-NS-02");
    assert_invalid("ST-NS-02", &err, &bad);
    let err = expect_err(
        store.batch(vec![put_op(&bad, "k", json!({"a": 1}))]).await,
        "ST-NS-02 (batch)",
    );
    assert_invalid("ST-NS-02", &err, &bad);
    assert_empty("ST-NS-02", &store).await;
}

/// ST-NS-03: an empty label is refused with `InvalidNamespace`, wherever it
/// is.
pub async fn st_ns_03_empty_label_is_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    for bad in [&["some", "fun", ""][..], &["", "fun"], &[""]] {
        let err = expect_err(store.put(bad, "k", json!({"a": 1})).await, "ST-NS-03");
        assert_invalid("ST-NS-03", &err, bad);
    }
    assert_empty("ST-NS-03", &store).await;
}

/// ST-NS-05: the public put and delete refuse the reserved root label
/// `langgraph`.
pub async fn st_ns_05_reserved_root_is_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let reserved = ["langgraph", "foo"];
    let err = expect_err(store.put(&reserved, "k", json!({"a": 1})).await, "ST-NS-05");
    assert_invalid("ST-NS-05", &err, &reserved);
    let err = expect_err(store.delete(&reserved, "k").await, "ST-NS-05 (delete)");
    assert_invalid("ST-NS-05", &err, &reserved);
    assert_empty("ST-NS-05", &store).await;
}

/// ST-NS-06: `langgraph` is reserved only as the root label:
/// `("foo", "langgraph", "foo")` can be put, read, searched and deleted.
pub async fn st_ns_06_reserved_label_below_root_is_allowed(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let inner = ["foo", "langgraph", "foo"];
    put(&store, &inner, "k", json!({"a": 1})).await;
    let item = get(&store, &inner, "k").await;
    assert_eq!(
        item.map(|item| item.value),
        Some(obj(json!({"a": 1}))),
        "ST-NS-06: get"
    );
    let found = search(&store, SearchOp::new(n(&["foo", "langgraph"]))).await;
    assert_eq!(keys(&found), ["k"], "ST-NS-06: search");
    delete(&store, &inner, "k").await;
    assert!(
        get(&store, &inner, "k").await.is_none(),
        "ST-NS-06: deleted"
    );
}

/// ST-NS-07: system writes through a raw `batch` may use the reserved root
/// `langgraph` (validation of the reserved root lives in the public
/// wrappers); the item is then readable and listed.
pub async fn st_ns_07_system_batch_may_use_reserved_root(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let system = ["langgraph", "foo"];
    let results = batch(&store, vec![put_op(&system, "k", json!({"a": 1}))]).await;
    assert_eq!(
        results,
        [OpResult::Done],
        "ST-NS-07: the raw put is accepted"
    );
    let item = get(&store, &system, "k").await;
    assert_eq!(
        item.map(|item| item.value),
        Some(obj(json!({"a": 1}))),
        "ST-NS-07: the system item is readable"
    );
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        [n(&system)],
        "ST-NS-07: and listed"
    );
    let results = batch(&store, vec![Op::Put(PutOp::delete(n(&system), "k"))]).await;
    assert_eq!(results, [OpResult::Done], "ST-NS-07: a raw delete too");
    assert!(
        get(&store, &system, "k").await.is_none(),
        "ST-NS-07: deleted"
    );
}

/// ST-NS-08: `("users", "alice")` and `("users", "alice\n")` are distinct
/// namespaces; the prefix `("users", "alice")` and the suffix `("alice",)`
/// find only the first.
pub async fn st_ns_08_trailing_newline_is_another_label(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["users", "alice"], "k", json!({"who": "alice"})).await;
    put(
        &store,
        &["users", "alice\n"],
        "k",
        json!({"who": "newline"}),
    )
    .await;
    let item = get(&store, &["users", "alice"], "k").await.unwrap();
    assert_eq!(item.value["who"], "alice", "ST-NS-08: get alice");
    let item = get(&store, &["users", "alice\n"], "k").await.unwrap();
    assert_eq!(item.value["who"], "newline", "ST-NS-08: get alice\\n");
    let found = search(&store, SearchOp::new(n(&["users", "alice"]))).await;
    assert_eq!(found.len(), 1, "ST-NS-08: prefix finds one item");
    assert_eq!(
        found[0].item.namespace,
        n(&["users", "alice"]),
        "ST-NS-08: the prefix finds alice only"
    );
    let listed = list(&store, ListNamespacesOp::new().with_suffix(n(&["alice"]))).await;
    assert_eq!(
        listed,
        [n(&["users", "alice"])],
        "ST-NS-08: the suffix finds alice only"
    );
    let listed = list(
        &store,
        ListNamespacesOp::new().with_prefix(n(&["users", "alice"])),
    )
    .await;
    assert_eq!(
        listed,
        [n(&["users", "alice"])],
        "ST-NS-08: the listing prefix finds alice only"
    );
}

/// ST-NS-09: `("Foo",)` and `("foo",)` are distinct; get, search and list
/// are case-sensitive and agree.
pub async fn st_ns_09_labels_are_case_sensitive(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["Foo"], "k", json!({"case": "upper"})).await;
    put(&store, &["foo"], "k", json!({"case": "lower"})).await;
    assert_eq!(
        get(&store, &["Foo"], "k").await.unwrap().value["case"],
        "upper",
        "ST-NS-09: get Foo"
    );
    assert_eq!(
        get(&store, &["foo"], "k").await.unwrap().value["case"],
        "lower",
        "ST-NS-09: get foo"
    );
    for (label, case) in [("Foo", "upper"), ("foo", "lower")] {
        let found = search(&store, SearchOp::new(n(&[label]))).await;
        assert_eq!(found.len(), 1, "ST-NS-09: search {label}");
        assert_eq!(
            found[0].item.value["case"], case,
            "ST-NS-09: search {label}"
        );
        assert_eq!(
            list(&store, ListNamespacesOp::new().with_prefix(n(&[label]))).await,
            [n(&[label])],
            "ST-NS-09: list {label}"
        );
    }
    assert!(
        get(&store, &["FOO"], "k").await.is_none(),
        "ST-NS-09: FOO is yet another namespace"
    );
}

/// ST-NS-10: labels containing `%`, `_`, `\`, `*`, `?`, `[` are accepted and
/// never read as patterns: each is found by get, by a search prefix and by
/// a listing prefix, and its look-alike decoy never is.
pub async fn st_ns_10_metacharacter_labels_are_literal(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let pairs = [
        ("a%b", "axxb"),
        ("user_1", "userX1"),
        ("back\\slash", "backXslash"),
        ("star*", "starX"),
        ("q?m", "qXm"),
        ("br[ack", "brXack"),
    ];
    for (real, decoy) in pairs {
        put(&store, &["meta", real], "real", json!({"label": real})).await;
        put(&store, &["meta", decoy], "decoy", json!({"label": decoy})).await;
    }
    for (real, _) in pairs {
        let item = get(&store, &["meta", real], "real").await;
        assert_eq!(
            item.map(|item| item.value["label"].clone()),
            Some(json!(real)),
            "ST-NS-10: get {real:?}"
        );
        let found = search(&store, SearchOp::new(n(&["meta", real]))).await;
        assert_eq!(keys(&found), ["real"], "ST-NS-10: search prefix {real:?}");
        let listed = list(
            &store,
            ListNamespacesOp::new().with_prefix(n(&["meta", real])),
        )
        .await;
        assert_eq!(
            listed,
            namespaces(&[&["meta", real]]),
            "ST-NS-10: list prefix {real:?}"
        );
    }
    let all = list(&store, ListNamespacesOp::new()).await;
    assert_eq!(all.len(), 2 * pairs.len(), "ST-NS-10: every label stored");
}
