//! ST-KV: key/value basics — put, get, replace, delete, exact round trips
//! of values and keys, and timestamps (`created_at` kept by updates,
//! `updated_at` moved).
//!
//! JSON has no NaN or infinities (`serde_json` turns them into `null`
//! before a store sees them), so ST-KV-08 has no non-finite floats.

use serde_json::{Value as Json, json};
use stategraph_store::{ListNamespacesOp, SearchOp, Store};

use super::fixtures::{delete, fresh, fresh_at, get, list, n, obj, put, search, sorted_keys};
use super::{ManualClock, StoreHarness};

/// ST-KV-01: a put item reads back with its namespace, key and value, and
/// `created_at` = `updated_at` = the store clock's time of the put.
pub async fn st_kv_01_put_then_get(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = fresh_at(h, &clock).await;
    let value = json!({"title": "doc", "n": 1});
    put(&store, &["test", "kv"], "doc1", value.clone()).await;
    let item = get(&store, &["test", "kv"], "doc1")
        .await
        .expect("ST-KV-01: the put item is found");
    assert_eq!(item.namespace, n(&["test", "kv"]), "ST-KV-01: namespace");
    assert_eq!(item.key, "doc1", "ST-KV-01: key");
    assert_eq!(item.value, obj(value), "ST-KV-01: value");
    assert_eq!(item.created_at, clock.now(), "ST-KV-01: created_at");
    assert_eq!(item.updated_at, clock.now(), "ST-KV-01: updated_at");
}

/// ST-KV-02: putting a new value for the same key replaces the value and
/// moves `updated_at` forward to the time of the second put.
pub async fn st_kv_02_put_replaces_value(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = fresh_at(h, &clock).await;
    put(&store, &["test"], "k", json!({"v": 1, "old": true})).await;
    let first = get(&store, &["test"], "k").await.unwrap();
    clock.advance_seconds(30.0);
    put(&store, &["test"], "k", json!({"v": 2})).await;
    let second = get(&store, &["test"], "k").await.unwrap();
    assert_eq!(
        second.value,
        obj(json!({"v": 2})),
        "ST-KV-02: the value is replaced whole"
    );
    assert!(
        second.updated_at > first.updated_at,
        "ST-KV-02: updated_at moves forward"
    );
    assert_eq!(second.updated_at, clock.now(), "ST-KV-02: updated_at");
    let found = search(&store, SearchOp::new(n(&["test"]))).await;
    assert_eq!(found.len(), 1, "ST-KV-02: still one item");
}

/// ST-KV-03: the same key in another namespace (or another key in the same
/// namespace) is a miss.
pub async fn st_kv_03_other_namespace_misses(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["test", "a"], "k", json!({"v": 1})).await;
    assert!(
        get(&store, &["test", "b"], "k").await.is_none(),
        "ST-KV-03: another namespace"
    );
    assert!(
        get(&store, &["test"], "k").await.is_none(),
        "ST-KV-03: the parent namespace"
    );
    assert!(
        get(&store, &["test", "a", "k"], "k").await.is_none(),
        "ST-KV-03: a child namespace"
    );
    assert!(
        get(&store, &["test", "a"], "K").await.is_none(),
        "ST-KV-03: another key"
    );
}

/// ST-KV-04: a deleted item is gone from get and search, and a namespace
/// left without items is no longer listed.
pub async fn st_kv_04_delete_removes_item(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["test", "a"], "k", json!({"v": 1})).await;
    put(&store, &["test", "b"], "other", json!({"v": 2})).await;
    delete(&store, &["test", "a"], "k").await;
    assert!(
        get(&store, &["test", "a"], "k").await.is_none(),
        "ST-KV-04: get"
    );
    let found = search(&store, SearchOp::new(n(&["test"]))).await;
    assert_eq!(sorted_keys(&found), ["other"], "ST-KV-04: search");
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        [n(&["test", "b"])],
        "ST-KV-04: the emptied namespace is not listed"
    );
}

/// ST-KV-05: deleting a missing key, or in a namespace never used, succeeds
/// and changes nothing.
pub async fn st_kv_05_delete_missing_is_noop(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["test"], "kept", json!({"v": 1})).await;
    delete(&store, &["test"], "missing").await;
    delete(&store, &["never", "used"], "missing").await;
    assert!(
        get(&store, &["test"], "kept").await.is_some(),
        "ST-KV-05: other items stay"
    );
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        [n(&["test"])],
        "ST-KV-05: no namespace appears"
    );
}

/// ST-KV-06: text in Chinese, Japanese, Korean, Russian, Hindi (and emoji)
/// round-trips exactly, in values and in labels and keys.
pub async fn st_kv_06_unicode_values_round_trip(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let texts = [
        ("zh", "这是中文"),
        ("ja", "これは日本語です"),
        ("ko", "이것은 한국어입니다"),
        ("ru", "Это русский текст"),
        ("hi", "यह हिंदी है"),
        ("emoji", "🦀 crab, 👩‍💻 coder"),
    ];
    for (lang, text) in texts {
        put(&store, &["unicode", text], lang, json!({ "text": text })).await;
        put(&store, &["unicode"], text, json!({ "text": text })).await;
    }
    for (lang, text) in texts {
        let item = get(&store, &["unicode", text], lang)
            .await
            .unwrap_or_else(|| panic!("ST-KV-06: {lang} under a unicode label"));
        assert_eq!(item.value["text"], text, "ST-KV-06: {lang} value");
        assert_eq!(
            item.namespace,
            n(&["unicode", text]),
            "ST-KV-06: {lang} label"
        );
        let item = get(&store, &["unicode"], text)
            .await
            .unwrap_or_else(|| panic!("ST-KV-06: {lang} as a key"));
        assert_eq!(item.key, text, "ST-KV-06: {lang} key");
    }
}

/// ST-KV-07: an update keeps the item's `created_at` and moves only
/// `updated_at`; after a delete, a new put is a new item with a new
/// `created_at`.
pub async fn st_kv_07_update_preserves_created_at(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = fresh_at(h, &clock).await;
    let created = clock.now();
    put(&store, &["test"], "k", json!({"v": 1})).await;
    clock.advance_minutes(5.0);
    put(&store, &["test"], "k", json!({"v": 2})).await;
    let item = get(&store, &["test"], "k").await.unwrap();
    assert_eq!(item.created_at, created, "ST-KV-07: created_at is kept");
    assert_eq!(item.updated_at, clock.now(), "ST-KV-07: updated_at moves");
    let found = search(&store, SearchOp::new(n(&["test"]))).await;
    assert_eq!(
        found[0].item.created_at, created,
        "ST-KV-07: search returns the same created_at"
    );
    delete(&store, &["test"], "k").await;
    clock.advance_minutes(5.0);
    put(&store, &["test"], "k", json!({"v": 3})).await;
    let item = get(&store, &["test"], "k").await.unwrap();
    assert_eq!(
        item.created_at,
        clock.now(),
        "ST-KV-07: a put after a delete creates a new item"
    );
}

/// A value nested `depth` objects deep.
fn nested(depth: usize) -> Json {
    (0..depth).fold(
        json!("bottom"),
        |inner, level| json!({ format!("l{level}"): inner }),
    )
}

/// ST-KV-08: edge-case values round-trip exactly: the empty object, a ~1 MB
/// object, nesting 100 deep, i64 and u64 extremes, 2^53 + 1, floats, unicode
/// and empty object keys, `null`, empty lists.
pub async fn st_kv_08_value_edge_cases_round_trip(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let large: Vec<Json> = (0..16_384)
        .map(|i| json!({"i": i, "pad": "x".repeat(48)}))
        .collect();
    let values = [
        ("empty", json!({})),
        ("large", json!({"blob": "y".repeat(200_000), "rows": large})),
        ("deep", json!({ "root": nested(99) })),
        (
            "integers",
            json!({
                "i64_min": i64::MIN,
                "i64_max": i64::MAX,
                "u64_max": u64::MAX,
                "two_53_plus_1": 9_007_199_254_740_993_u64,
                "minus_two_53_minus_1": -9_007_199_254_740_993_i64,
                "zero": 0,
            }),
        ),
        (
            "floats",
            json!({
                "tenth": 0.1,
                "third": 1.0 / 3.0,
                "tiny": 5e-324,
                "huge": 1.797_693_134_862_315_7e308,
                "negative": -2.5,
                "whole": 3.0,
            }),
        ),
        (
            "keys",
            json!({"ключ": 1, "键": 2, "🔑": 3, "": 4, "with space": 5, "a.b": 6}),
        ),
        (
            "nulls",
            json!({"none": null, "list": [], "object": {}, "mixed": [1, "a", null, true, {"x": []}]}),
        ),
    ];
    for (key, value) in &values {
        put(&store, &["edge"], key, value.clone()).await;
    }
    for (key, value) in values {
        let item = get(&store, &["edge"], key)
            .await
            .unwrap_or_else(|| panic!("ST-KV-08: {key} is stored"));
        assert!(
            Json::Object(item.value.clone()) == value,
            "ST-KV-08: {key} round-trips exactly"
        );
    }
    let item = get(&store, &["edge"], "large").await.unwrap();
    let size = Json::Object(item.value).to_string().len();
    assert!(
        size > 1_000_000,
        "ST-KV-08: the large value is ~1 MB, got {size}"
    );
}

/// ST-KV-09: keys with `/`, `.`, spaces, unicode, and 1 KB keys are stored
/// and found by get and search.
pub async fn st_kv_09_unusual_keys(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let long = "k".repeat(1024);
    let keys = [
        "a/b/c",
        "dotted.key.name",
        " spaced key ",
        "ключ-🔑",
        "%_*?[",
        long.as_str(),
    ];
    for (i, key) in keys.iter().enumerate() {
        put(&store, &["keys"], key, json!({ "i": i })).await;
    }
    for (i, key) in keys.iter().enumerate() {
        let item = get(&store, &["keys"], key)
            .await
            .unwrap_or_else(|| panic!("ST-KV-09: key {key:?} is found"));
        assert_eq!(item.key, *key, "ST-KV-09: key {key:?}");
        assert_eq!(item.value["i"], i, "ST-KV-09: value of {key:?}");
    }
    let found = search(&store, SearchOp::new(n(&["keys"])).with_page(100, 0)).await;
    let mut expected: Vec<String> = keys.iter().map(|key| (*key).to_owned()).collect();
    expected.sort();
    assert_eq!(sorted_keys(&found), expected, "ST-KV-09: search");
    let missing = store.get(&["keys"], "a/b").await;
    assert!(
        matches!(missing, Ok(None)),
        "ST-KV-09: a key prefix is not a key"
    );
}
