//! ST-SR: search without a query — namespace prefixes of whole labels,
//! filters with one meaning on every backend, pagination and order (most
//! recently updated first, then namespace, then key).

use serde_json::json;
use stategraph_store::{SearchOp, Store, StoreError};

use super::fixtures::{
    expect_err, fresh, fresh_at, keys, n, obj, put, search, search_filtered, sorted_keys,
};
use super::{ManualClock, StoreHarness};

/// The keys found under `prefix`, sorted.
async fn under<S: Store>(store: &S, prefix: &[&str]) -> Vec<String> {
    sorted_keys(&search(store, SearchOp::new(n(prefix)).with_page(100, 0)).await)
}

/// The keys `filter` finds under `("f",)`, sorted.
async fn filtered<S: Store>(store: &S, filter: serde_json::Value) -> Vec<String> {
    let mut found = search_filtered(store, &["f"], filter).await;
    found.sort();
    found
}

/// ST-SR-01: a search prefix matches whole labels: `("foo",)` finds
/// `foo`, `foo/child`, `foo/child/deep` but never `foobar` or `foo2`;
/// `("foobar",)` finds its two; `("foo2",)` itself; `("fo",)` nothing.
pub async fn st_sr_01_prefix_matches_whole_labels(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let all: [(&[&str], &str); 6] = [
        (&["foo"], "foo"),
        (&["foo", "child"], "foo.child"),
        (&["foo", "child", "deep"], "foo.child.deep"),
        (&["foobar"], "foobar"),
        (&["foobar", "baz"], "foobar.baz"),
        (&["foo2"], "foo2"),
    ];
    for (namespace, key) in all {
        put(&store, namespace, key, json!({"at": key})).await;
    }
    assert_eq!(
        under(&store, &["foo"]).await,
        ["foo", "foo.child", "foo.child.deep"],
        "ST-SR-01: prefix foo"
    );
    assert_eq!(
        under(&store, &["foobar"]).await,
        ["foobar", "foobar.baz"],
        "ST-SR-01: prefix foobar"
    );
    assert_eq!(
        under(&store, &["foo2"]).await,
        ["foo2"],
        "ST-SR-01: prefix foo2"
    );
    assert!(
        under(&store, &["fo"]).await.is_empty(),
        "ST-SR-01: prefix fo"
    );
    assert_eq!(
        under(&store, &["foo", "child"]).await,
        ["foo.child", "foo.child.deep"],
        "ST-SR-01: prefix foo/child"
    );
    assert!(
        under(&store, &["foo", "chi"]).await.is_empty(),
        "ST-SR-01: prefix foo/chi"
    );
}

/// ST-SR-02: labels with `_`, `%`, `*` are literal in a search prefix: the
/// real label finds itself and its children, never the look-alike decoy.
pub async fn st_sr_02_prefix_metacharacters_are_literal(h: &impl StoreHarness) {
    let store = fresh(h).await;
    let pairs = [("user_1", "userX1"), ("a%b", "axxb"), ("star*", "starX")];
    for (real, decoy) in pairs {
        put(&store, &[real], "self", json!({})).await;
        put(&store, &[real, "child"], "child", json!({})).await;
        put(&store, &[decoy], "decoy", json!({})).await;
        put(&store, &[decoy, "child"], "decoy-child", json!({})).await;
    }
    for (real, _) in pairs {
        assert_eq!(
            under(&store, &[real]).await,
            ["child", "self"],
            "ST-SR-02: prefix {real:?}"
        );
    }
    assert_eq!(
        under(&store, &["user%"]).await,
        Vec::<String>::new(),
        "ST-SR-02: `%` is not a wildcard"
    );
    assert_eq!(
        under(&store, &["*"]).await,
        Vec::<String>::new(),
        "ST-SR-02: `*` is not a wildcard in a search prefix"
    );
}

/// ST-SR-03: the empty prefix finds every item in every namespace.
pub async fn st_sr_03_empty_prefix_matches_everything(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["a"], "1", json!({})).await;
    put(&store, &["b", "c"], "2", json!({})).await;
    put(&store, &["d", "e", "f"], "3", json!({})).await;
    assert_eq!(
        under(&store, &[]).await,
        ["1", "2", "3"],
        "ST-SR-03: every namespace"
    );
}

/// ST-SR-04: a plain `{"author": "Alice"}` filter finds exactly Alice's
/// items.
pub async fn st_sr_04_exact_match_filter(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "a1", json!({"author": "Alice", "n": 1})).await;
    put(&store, &["f"], "b1", json!({"author": "Bob", "n": 2})).await;
    put(&store, &["f"], "a2", json!({"author": "Alice", "n": 3})).await;
    put(&store, &["f"], "a3", json!({"author": "alice", "n": 4})).await;
    assert_eq!(
        filtered(&store, json!({"author": "Alice"})).await,
        ["a1", "a2"],
        "ST-SR-04: Alice only (case-sensitive)"
    );
    assert_eq!(
        filtered(&store, json!({"author": "Alice", "n": 3})).await,
        ["a2"],
        "ST-SR-04: conditions combine with AND"
    );
    assert!(
        filtered(&store, json!({"author": "Carol"}))
            .await
            .is_empty(),
        "ST-SR-04: no match"
    );
}

/// ST-SR-05: a list filter value matches lists equal to it as a whole (not
/// containment), objects likewise.
pub async fn st_sr_05_list_values_compare_whole(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "draft", json!({"tags": ["draft"]})).await;
    put(&store, &["f"], "both", json!({"tags": ["draft", "final"]})).await;
    put(&store, &["f"], "final", json!({"tags": ["final"]})).await;
    put(&store, &["f"], "scalar", json!({"tags": "draft"})).await;
    put(&store, &["f"], "meta", json!({"meta": {"a": 1, "b": [2]}})).await;
    assert_eq!(
        filtered(&store, json!({"tags": ["draft"]})).await,
        ["draft"],
        "ST-SR-05: whole-list equality"
    );
    assert_eq!(
        filtered(&store, json!({"tags": ["final", "draft"]})).await,
        Vec::<String>::new(),
        "ST-SR-05: list order matters"
    );
    assert_eq!(
        filtered(&store, json!({"meta": {"b": [2], "a": 1}})).await,
        ["meta"],
        "ST-SR-05: whole-object equality"
    );
    assert!(
        filtered(&store, json!({"meta": {"a": 1}})).await.is_empty(),
        "ST-SR-05: no partial object containment"
    );
}

/// ST-SR-06: `$eq $ne $gt $gte $lt $lte` with numeric semantics, and several
/// conditions combined with AND.
pub async fn st_sr_06_comparison_operators(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "s3", json!({"score": 3.0, "color": "red"})).await;
    put(&store, &["f"], "s4", json!({"score": 4, "color": "green"})).await;
    put(
        &store,
        &["f"],
        "s45",
        json!({"score": 4.5, "color": "green"}),
    )
    .await;
    put(&store, &["f"], "s5", json!({"score": 5, "color": "blue"})).await;
    let cases = [
        (json!({"score": {"$eq": 4.0}}), vec!["s4"]),
        (json!({"score": {"$ne": 4}}), vec!["s3", "s45", "s5"]),
        (json!({"score": {"$gt": 4}}), vec!["s45", "s5"]),
        (json!({"score": {"$gte": 4}}), vec!["s4", "s45", "s5"]),
        (json!({"score": {"$lt": 4.5}}), vec!["s3", "s4"]),
        (json!({"score": {"$lte": 4.5}}), vec!["s3", "s4", "s45"]),
        (json!({"score": {"$gt": 3, "$lt": 5}}), vec!["s4", "s45"]),
        (
            json!({"score": {"$gte": 4.0}, "color": "green"}),
            vec!["s4", "s45"],
        ),
        (
            json!({"score": {"$gte": 4.0}, "color": {"$ne": "green"}}),
            vec!["s5"],
        ),
        (json!({"color": {"$eq": "red"}}), vec!["s3"]),
        (json!({"color": {"$gt": "green"}}), vec!["s3"]),
    ];
    for (filter, expected) in cases {
        assert_eq!(
            filtered(&store, filter.clone()).await,
            expected,
            "ST-SR-06: {filter}"
        );
    }
}

/// ST-SR-07: numbers compare as numbers, not as text: `{price: {$gt: 15}}`
/// over 10/20/30 finds 2, and `$gt: 9` finds all three (as text `"10" <
/// "9"`).
pub async fn st_sr_07_numbers_compare_as_numbers(h: &impl StoreHarness) {
    let store = fresh(h).await;
    for price in [10, 20, 30] {
        put(
            &store,
            &["f"],
            &format!("p{price}"),
            json!({ "price": price }),
        )
        .await;
    }
    assert_eq!(
        filtered(&store, json!({"price": {"$gt": 15}})).await,
        ["p20", "p30"],
        "ST-SR-07: $gt 15"
    );
    assert_eq!(
        filtered(&store, json!({"price": {"$gt": 9}})).await,
        ["p10", "p20", "p30"],
        "ST-SR-07: $gt 9 (numeric, not lexicographic)"
    );
    assert_eq!(
        filtered(&store, json!({"price": {"$lte": 20.0}})).await,
        ["p10", "p20"],
        "ST-SR-07: integers against a float operand"
    );
    assert_eq!(
        filtered(&store, json!({"price": 20.0})).await,
        ["p20"],
        "ST-SR-07: 20 equals 20.0"
    );
}

/// ST-SR-08: extreme operands: `$lt` the largest float and `$lt 1e100` find
/// all, `$gt` the most negative float finds all; negative numbers compare
/// correctly; a non-finite float (which JSON cannot carry: `serde_json`
/// makes it `null`) matches nothing and is no error.
pub async fn st_sr_08_extreme_numeric_operands(h: &impl StoreHarness) {
    let store = fresh(h).await;
    for price in [10, 20, 30] {
        put(
            &store,
            &["f"],
            &format!("p{price}"),
            json!({ "price": price }),
        )
        .await;
    }
    let all = ["p10", "p20", "p30"];
    assert_eq!(
        filtered(&store, json!({"price": {"$lt": f64::MAX}})).await,
        all,
        "ST-SR-08: $lt max float"
    );
    assert_eq!(
        filtered(&store, json!({"price": {"$gt": f64::MIN}})).await,
        all,
        "ST-SR-08: $gt min float"
    );
    assert_eq!(
        filtered(&store, json!({"price": {"$lt": 1e100}})).await,
        all,
        "ST-SR-08: $lt 1e100"
    );
    assert_eq!(
        filtered(&store, json!({"price": {"$lt": u64::MAX}})).await,
        all,
        "ST-SR-08: $lt u64::MAX"
    );
    assert!(
        filtered(&store, json!({"price": {"$gt": 1e100}}))
            .await
            .is_empty(),
        "ST-SR-08: $gt 1e100"
    );
    for non_finite in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(
            filtered(&store, json!({"price": {"$eq": non_finite}}))
                .await
                .is_empty(),
            "ST-SR-08: $eq {non_finite} matches nothing"
        );
    }
    put(&store, &["n"], "m5", json!({"n": -5})).await;
    put(&store, &["n"], "m1", json!({"n": -1.5})).await;
    put(&store, &["n"], "p3", json!({"n": 3})).await;
    let mut found = search_filtered(&store, &["n"], json!({"n": {"$lt": 0}})).await;
    found.sort();
    assert_eq!(found, ["m1", "m5"], "ST-SR-08: negative numbers");
    let mut found = search_filtered(&store, &["n"], json!({"n": {"$gt": -5}})).await;
    found.sort();
    assert_eq!(found, ["m1", "p3"], "ST-SR-08: $gt -5 excludes -5");
    let mut found = search_filtered(&store, &["n"], json!({"n": {"$gte": -5, "$lt": -1}})).await;
    found.sort();
    assert_eq!(found, ["m1", "m5"], "ST-SR-08: -5 <= n < -1");
}

/// ST-SR-09: booleans match booleans only: `true` finds the two `true`
/// items (not `1` or `"true"`), `false` the one `false` item (not `0`).
pub async fn st_sr_09_booleans_are_not_numbers(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "t1", json!({"active": true})).await;
    put(&store, &["f"], "t2", json!({"active": true})).await;
    put(&store, &["f"], "f1", json!({"active": false})).await;
    put(&store, &["f"], "one", json!({"active": 1})).await;
    put(&store, &["f"], "zero", json!({"active": 0})).await;
    put(&store, &["f"], "text", json!({"active": "true"})).await;
    assert_eq!(
        filtered(&store, json!({"active": true})).await,
        ["t1", "t2"],
        "ST-SR-09: true"
    );
    assert_eq!(
        filtered(&store, json!({"active": false})).await,
        ["f1"],
        "ST-SR-09: false"
    );
    assert_eq!(
        filtered(&store, json!({"active": 1})).await,
        ["one"],
        "ST-SR-09: 1 is not true"
    );
    assert_eq!(
        filtered(&store, json!({"active": {"$eq": 0}})).await,
        ["zero"],
        "ST-SR-09: 0 is not false"
    );
}

/// ST-SR-10: string filter values are literals: SQL-looking strings, NUL
/// and typographic quotes match nothing; `O'Brien's Document` matches its
/// one item.
pub async fn st_sr_10_string_values_are_literals(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(
        &store,
        &["f"],
        "obrien",
        json!({"title": "O'Brien's Document"}),
    )
    .await;
    put(&store, &["f"], "plain", json!({"title": "Plain"})).await;
    assert_eq!(
        filtered(&store, json!({"title": "O'Brien's Document"})).await,
        ["obrien"],
        "ST-SR-10: the apostrophes are literal"
    );
    for injected in [
        "' OR '1'='1",
        "Plain' --",
        "--",
        "x' UNION SELECT * FROM store --",
        "Plain\u{0}",
        "O’Brien’s Document",
        "%",
        "_lain",
    ] {
        assert!(
            filtered(&store, json!({ "title": injected }))
                .await
                .is_empty(),
            "ST-SR-10: {injected:?} matches nothing"
        );
    }
    put(&store, &["f"], "inj", json!({"title": "' OR '1'='1"})).await;
    assert_eq!(
        filtered(&store, json!({"title": "' OR '1'='1"})).await,
        ["inj"],
        "ST-SR-10: an injection-shaped value matches itself only"
    );
}

/// ST-SR-11: a filter key that is not a dotted path of `[A-Za-z0-9_-]`
/// segments (SQL, spaces, quotes, empty segments) fails the search with
/// `InvalidFilterKey` ("invalid filter key").
pub async fn st_sr_11_injection_shaped_keys_are_refused(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "doc", json!({"access": "public"})).await;
    for key in [
        "access') = 'public' OR '1'='1",
        "access' OR 1=1 --",
        "a b",
        "a..b",
        ".a",
        "a.",
        "",
        "value->>'x'",
        "a;DROP TABLE store",
    ] {
        let op = SearchOp::new(n(&["f"])).with_filter(obj(json!({ key: "public" })));
        let err = expect_err(store.search(op).await, "ST-SR-11");
        assert!(
            matches!(err, StoreError::InvalidFilterKey { .. }),
            "ST-SR-11: key {key:?}: expected InvalidFilterKey, got {err:?}"
        );
        assert!(
            err.to_string().contains("invalid filter key"),
            "ST-SR-11: message {err}"
        );
    }
    let op = SearchOp::new(n(&["f"])).with_filter(obj(json!({"access": {"$like": "%"}})));
    let err = expect_err(store.search(op).await, "ST-SR-11 (operator)");
    assert!(
        matches!(err, StoreError::InvalidFilter { .. }),
        "ST-SR-11: an unknown operator is InvalidFilter, got {err:?}"
    );
}

/// ST-SR-12: keys with hyphens and leading digits and dotted paths into
/// nested objects (`access-level`, `user.access-level`, `123abc`,
/// `user.123abc`) each find their one document; a top-level key containing
/// dots is found before the nested path.
pub async fn st_sr_12_hyphens_digits_and_nested_keys(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "hyphen", json!({"access-level": "x"})).await;
    put(
        &store,
        &["f"],
        "nested",
        json!({"user": {"access-level": "x"}}),
    )
    .await;
    put(&store, &["f"], "digits", json!({"123abc": "x"})).await;
    put(
        &store,
        &["f"],
        "nested-digits",
        json!({"user": {"123abc": "x"}}),
    )
    .await;
    put(
        &store,
        &["f"],
        "deep",
        json!({"a": {"b": {"c-d": {"9": "x"}}}}),
    )
    .await;
    let cases = [
        ("access-level", "hyphen"),
        ("user.access-level", "nested"),
        ("123abc", "digits"),
        ("user.123abc", "nested-digits"),
        ("a.b.c-d.9", "deep"),
    ];
    for (key, expected) in cases {
        assert_eq!(
            filtered(&store, json!({ key: "x" })).await,
            [expected],
            "ST-SR-12: key {key}"
        );
    }
    put(&store, &["g"], "dotted", json!({"user.role": "admin"})).await;
    put(
        &store,
        &["g"],
        "both",
        json!({"user.role": "admin", "user": {"role": "guest"}}),
    )
    .await;
    put(&store, &["g"], "path", json!({"user": {"role": "admin"}})).await;
    let mut found = search_filtered(&store, &["g"], json!({"user.role": "admin"})).await;
    found.sort();
    assert_eq!(
        found,
        ["both", "dotted", "path"],
        "ST-SR-12: a top-level dotted key first, else the nested path"
    );
}

/// ST-SR-13: pagination and order: without a query, by namespace, then
/// key (LangGraph's in-memory order on its golden trace); `limit 2 offset
/// 0` and `offset 2` over 4 items are disjoint and cover all; updating an
/// item does not move it; the default limit is 10.
pub async fn st_sr_13_pagination_and_order(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = fresh_at(h, &clock).await;
    for key in ["d", "b", "c", "a"] {
        put(&store, &["page"], key, json!({ "key": key })).await;
        clock.advance_seconds(1.0);
    }
    let page = |offset| SearchOp::new(n(&["page"])).with_page(2, offset);
    let first = keys(&search(&store, page(0)).await);
    let second = keys(&search(&store, page(2)).await);
    assert_eq!(first, ["a", "b"], "ST-SR-13: first page, by key");
    assert_eq!(second, ["c", "d"], "ST-SR-13: second page");
    assert!(
        keys(&search(&store, page(4)).await).is_empty(),
        "ST-SR-13: past the end"
    );
    put(&store, &["page"], "c", json!({"key": "c", "updated": true})).await;
    assert_eq!(
        keys(&search(&store, page(2)).await),
        ["c", "d"],
        "ST-SR-13: an update does not move an item"
    );

    put(&store, &["tie", "b"], "x2", json!({})).await;
    put(&store, &["tie", "b"], "x1", json!({})).await;
    put(&store, &["tie", "a"], "y", json!({})).await;
    let found = search(&store, SearchOp::new(n(&["tie"]))).await;
    let order: Vec<(String, String)> = found
        .iter()
        .map(|found| (found.item.namespace[1].clone(), found.item.key.clone()))
        .collect();
    assert_eq!(
        order,
        [
            ("a".to_owned(), "y".to_owned()),
            ("b".to_owned(), "x1".to_owned()),
            ("b".to_owned(), "x2".to_owned()),
        ],
        "ST-SR-13: namespace, then key"
    );
    assert!(
        found.iter().all(|found| found.score.is_none()),
        "ST-SR-13: no query, no score"
    );

    for i in 0..12 {
        put(&store, &["many"], &format!("k{i:02}"), json!({})).await;
    }
    let found = search(&store, SearchOp::new(n(&["many"]))).await;
    assert_eq!(found.len(), 10, "ST-SR-13: the default limit is 10");
}

/// ST-SR-14: integers beyond 2^53 compare exactly: `$eq 9007199254740993`
/// finds only that item, `$gt 9007199254740992` too, also against the
/// float operand `9007199254740992.0`.
pub async fn st_sr_14_integers_beyond_2_pow_53(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(
        &store,
        &["f"],
        "even",
        json!({"n": 9_007_199_254_740_992_u64}),
    )
    .await;
    put(
        &store,
        &["f"],
        "odd",
        json!({"n": 9_007_199_254_740_993_u64}),
    )
    .await;
    put(&store, &["f"], "max", json!({"n": i64::MAX})).await;
    put(&store, &["f"], "min", json!({"n": i64::MIN})).await;
    let cases = [
        (json!({"n": 9_007_199_254_740_993_u64}), vec!["odd"]),
        (
            json!({"n": {"$eq": 9_007_199_254_740_992_u64}}),
            vec!["even"],
        ),
        (
            json!({"n": {"$gt": 9_007_199_254_740_992_u64, "$lt": 9_007_199_254_741_000_u64}}),
            vec!["odd"],
        ),
        (
            json!({"n": {"$gt": 9_007_199_254_740_992.0, "$lt": 1e18}}),
            vec!["odd"],
        ),
        (json!({"n": {"$eq": 9_007_199_254_740_992.0}}), vec!["even"]),
        (json!({"n": {"$gte": i64::MAX}}), vec!["max"]),
        (json!({"n": {"$lte": i64::MIN}}), vec!["min"]),
        (json!({"n": {"$gt": i64::MAX}}), vec![]),
    ];
    for (filter, expected) in cases {
        assert_eq!(
            filtered(&store, filter.clone()).await,
            expected,
            "ST-SR-14: {filter}"
        );
    }
}

/// ST-SR-15: a key holding different types across items (number, numeric
/// string, boolean, null, missing) is no error; each comparison matches
/// only type-compatible values, and `$ne` matches every other item.
pub async fn st_sr_15_mixed_types_never_match(h: &impl StoreHarness) {
    let store = fresh(h).await;
    put(&store, &["f"], "number", json!({"v": 5})).await;
    put(&store, &["f"], "string", json!({"v": "5"})).await;
    put(&store, &["f"], "bool", json!({"v": true})).await;
    put(&store, &["f"], "null", json!({"v": null})).await;
    put(&store, &["f"], "list", json!({"v": [5]})).await;
    put(&store, &["f"], "missing", json!({"other": 5})).await;
    let cases = [
        (json!({"v": {"$gt": 1}}), vec!["number"]),
        (json!({"v": {"$gt": "1"}}), vec!["string"]),
        (json!({"v": 5}), vec!["number"]),
        (json!({"v": "5"}), vec!["string"]),
        (json!({"v": null}), vec!["null"]),
        (json!({"v": {"$lte": true}}), vec!["bool"]),
        (
            json!({"v": {"$ne": 5}}),
            vec!["bool", "list", "missing", "null", "string"],
        ),
    ];
    for (filter, expected) in cases {
        assert_eq!(
            filtered(&store, filter.clone()).await,
            expected,
            "ST-SR-15: {filter}"
        );
    }
}
