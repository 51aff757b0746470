//! Store cases every SQL backend runs (ST-* ids of
//! shared/reliability/STORE-CONFORMANCE.md). Identical in the store

use serde_json::{Value as Json, json};
use stategraph_core::ErrorKind;
use stategraph_core::JsonMap;
use stategraph_store::{
    GetOp, IndexConfig, IndexFields, ListNamespacesOp, Namespace, Op, OpResult, PutOp, SearchOp,
    Store, StoreError, Ttl, TtlConfig, ns,
};

use super::{Backend, ManualClock, StoreOptions, hash_index, obj};

fn keys(found: &[stategraph_store::SearchItem]) -> Vec<String> {
    found.iter().map(|f| f.item.key.clone()).collect()
}

fn namespaces(found: &[stategraph_store::SearchItem]) -> Vec<Namespace> {
    found.iter().map(|f| f.item.namespace.clone()).collect()
}

/// ST-KV-01..05, ST-KV-07: put, get, update keeps `created_at`, delete.
pub async fn put_get_update_delete(backend: &impl Backend) {
    let clock = ManualClock::new();
    let store = backend.store(StoreOptions::new().with_clock(&clock)).await;
    let at = ["users", "alice"];
    store
        .put(&at, "doc1", json!({"text": "hello", "n": 1}))
        .await
        .unwrap();
    let first = store.get(&at, "doc1").await.unwrap().unwrap();
    assert_eq!(first.namespace, ns(at));
    assert_eq!(first.key, "doc1");
    assert_eq!(first.value, obj(json!({"text": "hello", "n": 1})));
    assert_eq!(first.created_at, clock.now());
    assert_eq!(first.updated_at, clock.now());

    clock.advance_seconds(1.5);
    store
        .put(&at, "doc1", json!({"text": "bye"}))
        .await
        .unwrap();
    let second = store.get(&at, "doc1").await.unwrap().unwrap();
    assert_eq!(second.value, obj(json!({"text": "bye"})));
    assert_eq!(
        second.created_at, first.created_at,
        "an update keeps created_at"
    );
    assert_eq!(second.updated_at, clock.now());
    assert!(second.updated_at > first.updated_at);

    assert_eq!(store.get(&["users", "bob"], "doc1").await.unwrap(), None);
    store.delete(&at, "doc1").await.unwrap();
    assert_eq!(store.get(&at, "doc1").await.unwrap(), None);
    store.delete(&at, "missing").await.unwrap();

    // A put after a delete starts a new item.
    clock.advance_seconds(1.0);
    store.put(&at, "doc1", json!({})).await.unwrap();
    let third = store.get(&at, "doc1").await.unwrap().unwrap();
    assert_eq!(third.created_at, clock.now());
    assert_eq!(third.value, obj(json!({})));
}

/// ST-KV-06, ST-KV-08, ST-KV-09: values and keys round-trip exactly (a
/// NUL inside a value too; in a key or label it is refused, ST-LIM-03).
pub async fn values_and_keys_round_trip(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let value = json!({
        "zh": "这是中文", "emoji": "🦀", "quote": "O'Brien's \"doc\"", "nul": "a\u{0}b",
        "big": 9_007_199_254_740_993_u64, "min": i64::MIN, "max": u64::MAX,
        "float": 0.1, "exp": 1e300, "tiny": 1.5e-7, "whole": 1e18, "neg": -0.0,
        "nested": {"deep": [1, [2, [3, {"x": null}]]]}, "empty": {}, "list": [],
        "ключ": true, "z": false, "a": 1
    });
    for key in ["doc/1", "dots.in.key", "ключ", "", &"k".repeat(1024)] {
        store
            .put(&["round", "trip"], key, value.clone())
            .await
            .unwrap();
        let item = store.get(&["round", "trip"], key).await.unwrap().unwrap();
        assert_eq!(item.key, key);
        assert_eq!(item.value, obj(value.clone()));
        assert_eq!(
            serde_json::to_string(&item.value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }
    let labels = ["a%b", "user_1", "star*", "q?m", "br[ack]et", "back\\slash"];
    store.put(&labels, "k", json!({"v": 1})).await.unwrap();
    let item = store.get(&labels, "k").await.unwrap().unwrap();
    assert_eq!(item.namespace, ns(labels));
    // Issue 21: a value nested as deep as a read accepts round-trips; one
    // level deeper is refused when written, not when read.
    let nested = |depth: usize| (0..depth).fold(json!(1), |inner, _| Json::Array(vec![inner]));
    let limit = stategraph_core::json::MAX_DEPTH;
    let deepest = json!({"v": nested(limit - 1)});
    store.put(&["deep"], "ok", deepest.clone()).await.unwrap();
    let item = store.get(&["deep"], "ok").await.unwrap().unwrap();
    assert_eq!(item.value, obj(deepest));
    for depth in [limit, 1_000, 100_000] {
        // Built without `json!`, which copies a value by serializing it.
        let mut value = JsonMap::new();
        value.insert("v".to_owned(), nested(depth));
        let err = store
            .put(&["deep"], "too", Json::Object(value))
            .await
            .unwrap_err();
        assert!(
            matches!(err, stategraph_store::StoreError::ValueTooDeep { .. }),
            "{err}"
        );
    }
    assert!(store.get(&["deep"], "too").await.unwrap().is_none());
}

/// ST-NS-01..03, ST-NS-05..07: namespace rules and typed errors.
pub async fn namespaces_are_validated(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let bad_namespaces: [&[&str]; 3] = [&[], &["the", "thing.about"], &["some", "fun", ""]];
    for bad in bad_namespaces {
        let err = store.put(bad, "k", json!({})).await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
    let err = store
        .put(&["langgraph", "foo"], "k", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    store
        .put(&["foo", "langgraph", "foo"], "k", json!({"a": 1}))
        .await
        .unwrap();
    assert!(
        store
            .get(&["foo", "langgraph", "foo"], "k")
            .await
            .unwrap()
            .is_some()
    );
    // System writes through `batch` may use the reserved root.
    let put = PutOp::put(ns(["langgraph", "foo"]), "k", obj(json!({"a": 1})));
    store.batch(vec![Op::Put(put)]).await.unwrap();
    assert!(
        store
            .get(&["langgraph", "foo"], "k")
            .await
            .unwrap()
            .is_some()
    );
    let err = store.put(&["a"], "k", json!([1])).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAnObject { .. }), "{err}");
    let err = store
        .batch(vec![Op::Get(GetOp::new(ns(["a", ""]), "k"))])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
}

/// ST-BA-01, ST-BA-04, ST-BA-07, ST-BA-08: results at their op's position;
/// every read sees the store as it was before the batch, then the puts
/// apply in order (the last put of a key wins).
pub async fn batches_read_before_they_write(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let at = ns(["test", "batch"]);
    store
        .put(&["test", "batch"], "old", json!({"v": 0}))
        .await
        .unwrap();
    let results = store
        .batch(vec![
            Op::Get(GetOp::new(at.clone(), "old")),
            Op::Put(PutOp::put(at.clone(), "k", obj(json!({"v": 1})))),
            Op::Get(GetOp::new(at.clone(), "k")),
            Op::Put(PutOp::put(at.clone(), "k", obj(json!({"v": 2})))),
            Op::Search(SearchOp::new(at.clone())),
            Op::Put(PutOp::delete(at.clone(), "old")),
            Op::ListNamespaces(ListNamespacesOp::new()),
            Op::Get(GetOp::new(at.clone(), "old")),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 8);
    assert!(matches!(&results[0], OpResult::Item(Some(item)) if item.value["v"] == 0));
    assert_eq!(results[1], OpResult::Done);
    assert_eq!(
        results[2],
        OpResult::Item(None),
        "the put applies after the reads"
    );
    assert_eq!(results[3], OpResult::Done);
    let OpResult::Items(found) = &results[4] else {
        panic!("{:?}", results[4])
    };
    assert_eq!(keys(found), ["old"]);
    assert_eq!(results[6], OpResult::Namespaces(vec![at.clone()]));
    assert!(matches!(&results[7], OpResult::Item(Some(item)) if item.key == "old"));
    let k = store.get(&["test", "batch"], "k").await.unwrap().unwrap();
    assert_eq!(k.value, obj(json!({"v": 2})), "the last put of a key wins");
    assert_eq!(store.get(&["test", "batch"], "old").await.unwrap(), None);
    // A delete then a put of one key in one batch leaves the put.
    store
        .batch(vec![
            Op::Put(PutOp::delete(at.clone(), "k")),
            Op::Put(PutOp::put(at.clone(), "k", obj(json!({"v": 3})))),
        ])
        .await
        .unwrap();
    let k = store.get(&["test", "batch"], "k").await.unwrap().unwrap();
    assert_eq!(k.value, obj(json!({"v": 3})));
    assert_eq!(store.batch(Vec::new()).await.unwrap(), Vec::new());
}

/// ST-BA-09 (P), ST-VS-15 (P): a batch that fails before writing changes
/// nothing.
pub async fn failing_batches_change_nothing(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let at = ns(["atomic"]);
    let mut ops: Vec<Op> = (0..49)
        .map(|i| {
            Op::Put(PutOp::put(
                at.clone(),
                format!("k{i}"),
                obj(json!({"i": i})),
            ))
        })
        .collect();
    ops.push(Op::Put(PutOp::put(ns(["bad.label"]), "k", obj(json!({})))));
    let err = store.batch(ops).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    let search = SearchOp::new(at.clone()).with_page(100, 0);
    assert!(store.search(search.clone()).await.unwrap().is_empty());

    let ops = vec![
        Op::Put(PutOp::put(at.clone(), "k", obj(json!({})))),
        Op::Search(SearchOp::new(at.clone()).with_filter(obj(json!({"a b": 1})))),
    ];
    let err = store.batch(ops).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidFilterKey { .. }), "{err}");
    assert!(store.search(search.clone()).await.unwrap().is_empty());

    // A TTL on a store without expiry is refused, the whole batch with it.
    let ops = vec![
        Op::Put(PutOp::put(at.clone(), "k", obj(json!({})))),
        Op::Put(PutOp::put(at.clone(), "t", obj(json!({}))).with_ttl(Ttl::Minutes(5.0))),
    ];
    let err = store.batch(ops).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(store.search(search).await.unwrap().is_empty());
    store
        .put_with(
            &["atomic"],
            "n",
            json!({}),
            IndexFields::Default,
            Ttl::Never,
        )
        .await
        .unwrap();
}

/// ST-SR-04..15: filters mean what `Filter` means.
pub async fn search_filters(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let at = ["shop"];
    for (key, price, active, tags) in [
        ("p10", json!(10), true, json!(["draft"])),
        ("p20", json!(20), false, json!(["draft", "x"])),
        ("p30", json!(30.0), true, json!([])),
        ("pstr", json!("25"), true, json!("draft")),
    ] {
        let value = json!({"price": price, "active": active, "tags": tags,
                           "user": {"access-level": key}, "title": "O'Brien's Document"});
        store.put(&at, key, value).await.unwrap();
    }
    let search = |filter: serde_json::Value| {
        let store = store.clone();
        async move {
            let mut found = keys(
                &store
                    .search(SearchOp::new(ns(["shop"])).with_filter(obj(filter)))
                    .await
                    .unwrap(),
            );
            found.sort();
            found
        }
    };
    assert_eq!(search(json!({"price": {"$gt": 15}})).await, ["p20", "p30"]);
    assert_eq!(
        search(json!({"price": {"$gte": 20, "$lt": 30}})).await,
        ["p20"]
    );
    assert_eq!(search(json!({"price": {"$lte": 10}})).await, ["p10"]);
    assert_eq!(
        search(json!({"price": {"$ne": 10}})).await,
        ["p20", "p30", "pstr"]
    );
    assert_eq!(search(json!({"price": 30})).await, ["p30"]);
    assert_eq!(
        search(json!({"price": {"$lt": 1e100}})).await,
        ["p10", "p20", "p30"]
    );
    assert_eq!(search(json!({"price": {"$gt": "2"}})).await, ["pstr"]);
    assert_eq!(
        search(json!({"active": true})).await,
        ["p10", "p30", "pstr"]
    );
    assert_eq!(search(json!({"active": false})).await, ["p20"]);
    assert_eq!(search(json!({"tags": ["draft"]})).await, ["p10"]);
    assert_eq!(search(json!({"user.access-level": "p20"})).await, ["p20"]);
    assert_eq!(
        search(json!({"title": "O'Brien's Document"})).await.len(),
        4
    );
    for injected in ["' OR '1'='1", "--", "x UNION SELECT 1", "\u{0}"] {
        assert!(search(json!({ "title": injected })).await.is_empty());
    }
    let err = store
        .search(
            SearchOp::new(ns(["shop"]))
                .with_filter(obj(json!({"access') = 'public' OR '1'='1": 1}))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidFilterKey { .. }), "{err}");
    let err = store
        .search(SearchOp::new(ns(["shop"])).with_filter(obj(json!({"a": {"$like": "x"}}))))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidFilter { .. }), "{err}");
}

/// ST-SR-01..03, ST-SR-13, ST-NS-08..10, ST-LN-13..14: prefixes match whole
/// labels; metacharacters mean themselves; order and pages.
pub async fn search_prefixes_and_pages(backend: &impl Backend) {
    let clock = ManualClock::new();
    let store = backend.store(StoreOptions::new().with_clock(&clock)).await;
    let spaces: &[&[&str]] = &[
        &["foo"],
        &["foo", "child"],
        &["foo", "child", "deep"],
        &["foobar"],
        &["foobar", "baz"],
        &["foo2"],
        &["foo-bar"],
        &["user_1"],
        &["userX1"],
        &["a%b"],
        &["axxb"],
        &["star*"],
        &["starX"],
        &["users", "alice"],
        &["users", "alice\n"],
        &["Foo"],
    ];
    for space in spaces {
        clock.advance_seconds(1.0);
        store
            .put(space, "k", json!({"at": space.join("/")}))
            .await
            .unwrap();
    }
    let under = |prefix: &[&str]| {
        let store = store.clone();
        let prefix = ns(prefix.iter().copied());
        async move {
            let mut found = namespaces(
                &store
                    .search(SearchOp::new(prefix).with_page(100, 0))
                    .await
                    .unwrap(),
            );
            found.sort();
            found
        }
    };
    assert_eq!(
        under(&["foo"]).await,
        [
            ns(["foo"]),
            ns(["foo", "child"]),
            ns(["foo", "child", "deep"])
        ]
    );
    assert_eq!(
        under(&["foobar"]).await,
        [ns(["foobar"]), ns(["foobar", "baz"])]
    );
    assert_eq!(under(&["foo2"]).await, [ns(["foo2"])]);
    assert!(under(&["fo"]).await.is_empty());
    assert_eq!(under(&["user_1"]).await, [ns(["user_1"])]);
    assert_eq!(under(&["a%b"]).await, [ns(["a%b"])]);
    assert_eq!(under(&["star*"]).await, [ns(["star*"])]);
    assert!(under(&["%"]).await.is_empty());
    assert!(under(&["*"]).await.is_empty());
    assert!(
        under(&["foo.child"]).await.is_empty(),
        "a label never spans a dot"
    );
    assert_eq!(under(&["users", "alice"]).await, [ns(["users", "alice"])]);
    assert_eq!(under(&["Foo"]).await, [ns(["Foo"])]);
    assert_eq!(under(&[]).await.len(), spaces.len());

    // Without a query: by namespace (label by label), then key, whatever
    // the order of updates.
    let ordered = store.search(SearchOp::new(ns(["foo"]))).await.unwrap();
    assert_eq!(
        namespaces(&ordered),
        [
            ns(["foo"]),
            ns(["foo", "child"]),
            ns(["foo", "child", "deep"])
        ]
    );
    assert!(ordered.iter().all(|f| f.score.is_none()));
    let page = |limit, offset| {
        let store = store.clone();
        async move {
            namespaces(
                &store
                    .search(SearchOp::new(Vec::new()).with_page(limit, offset))
                    .await
                    .unwrap(),
            )
        }
    };
    let all = page(100, 0).await;
    assert_eq!(page(2, 0).await, all[..2]);
    assert_eq!(page(2, 2).await, all[2..4]);
    assert_eq!(page(10, 0).await.len(), 10);
    assert!(page(5, 100).await.is_empty());
    // Label by label: ["a", "b"] before ["a!"], though "a.b" > "a!".
    clock.advance_seconds(1.0);
    store.put(&["a!"], "k", json!({})).await.unwrap();
    store.put(&["a", "b"], "k", json!({})).await.unwrap();
    let all = namespaces(
        &store
            .search(SearchOp::new(Vec::new()).with_page(3, 0))
            .await
            .unwrap(),
    );
    assert_eq!(all, [ns(["Foo"]), ns(["a", "b"]), ns(["a!"])]);
    for key in ["b", "a", "c"] {
        store.put(&["tie"], key, json!({})).await.unwrap();
    }
    assert_eq!(
        keys(&store.search(SearchOp::new(ns(["tie"]))).await.unwrap()),
        ["a", "b", "c"]
    );
}

/// ST-LN-01..15: namespace listings.
pub async fn list_namespaces(backend: &impl Backend) {
    let store = backend.store(StoreOptions::new()).await;
    let list = |op: ListNamespacesOp| {
        let store = store.clone();
        async move { store.list_namespaces(op).await.unwrap() }
    };
    assert!(list(ListNamespacesOp::new()).await.is_empty());
    let fixture: &[&[&str]] = &[
        &["a", "b", "c"],
        &["a", "b", "d", "e"],
        &["a", "b", "d", "i"],
        &["a", "b", "f"],
        &["a", "c", "f"],
        &["b", "a", "f"],
        &["users", "123"],
        &["users", "456", "settings"],
        &["admin", "users", "789"],
        &["foobar", "x"],
        &["malice"],
        &["alice"],
        &["star*", "q?m"],
        &["a%b", "user_1"],
    ];
    for space in fixture {
        store.put(space, "k1", json!({})).await.unwrap();
        store.put(space, "k2", json!({})).await.unwrap();
    }
    let n = |labels: &[&str]| ns(labels.iter().copied());
    let prefix = |labels: &[&str]| ListNamespacesOp::new().with_prefix(n(labels));
    let suffix = |labels: &[&str]| ListNamespacesOp::new().with_suffix(n(labels));
    assert_eq!(
        list(prefix(&["a", "b"])).await,
        [
            n(&["a", "b", "c"]),
            n(&["a", "b", "d", "e"]),
            n(&["a", "b", "d", "i"]),
            n(&["a", "b", "f"])
        ]
    );
    assert_eq!(
        list(suffix(&["f"])).await,
        [
            n(&["a", "b", "f"]),
            n(&["a", "c", "f"]),
            n(&["b", "a", "f"])
        ]
    );
    assert_eq!(
        list(prefix(&["a"]).with_suffix(n(&["f"]))).await,
        [n(&["a", "b", "f"]), n(&["a", "c", "f"])]
    );
    assert_eq!(
        list(prefix(&["a", "b"]).with_max_depth(3)).await,
        [
            n(&["a", "b", "c"]),
            n(&["a", "b", "d"]),
            n(&["a", "b", "f"])
        ]
    );
    assert_eq!(
        list(prefix(&["a", "b"]).with_page(2, 0)).await,
        [n(&["a", "b", "c"]), n(&["a", "b", "d", "e"])]
    );
    assert_eq!(
        list(prefix(&["a", "b"]).with_page(2, 2)).await,
        [n(&["a", "b", "d", "i"]), n(&["a", "b", "f"])]
    );
    assert_eq!(
        list(prefix(&["a", "*", "f"])).await,
        [n(&["a", "b", "f"]), n(&["a", "c", "f"])]
    );
    assert_eq!(list(suffix(&["*", "f"])).await.len(), 3);
    assert!(list(prefix(&["nonexistent"])).await.is_empty());
    assert_eq!(
        list(prefix(&["users", "123"])).await,
        [n(&["users", "123"])]
    );
    assert_eq!(
        list(prefix(&["users", "*"])).await,
        [n(&["users", "123"]), n(&["users", "456", "settings"])]
    );
    assert!(
        list(prefix(&["*", "users"]).with_suffix(n(&["*", "settings"])))
            .await
            .is_empty()
    );
    assert_eq!(list(prefix(&["foo"])).await, Vec::<Namespace>::new());
    assert_eq!(list(suffix(&["alice"])).await, [n(&["alice"])]);
    assert_eq!(list(prefix(&["star*"])).await, [n(&["star*", "q?m"])]);
    assert_eq!(list(prefix(&["a%b"])).await, [n(&["a%b", "user_1"])]);
    assert!(list(prefix(&["a%"])).await.is_empty());
    assert_eq!(
        list(ListNamespacesOp::new().with_max_depth(1)).await,
        [
            "a", "a%b", "admin", "alice", "b", "foobar", "malice", "star*", "users"
        ]
        .map(|l| n(&[l]))
    );
    assert_eq!(list(ListNamespacesOp::new()).await.len(), fixture.len());
    assert_eq!(
        list(ListNamespacesOp::new().with_page(3, 12)).await.len(),
        2
    );
}

/// ST-VS-02..13: semantic search with hash embeddings.
pub async fn vector_search(backend: &impl Backend) {
    let index = hash_index().with_fields(["text"]);
    let store = backend
        .store(StoreOptions::new().with_index(index.clone()))
        .await;
    assert!(store.capabilities().vector_search);
    let at = ["docs"];
    store
        .put(
            &at,
            "zebra",
            json!({"text": "zany zebra Xerxes", "color": "red"}),
        )
        .await
        .unwrap();
    store
        .put(
            &at,
            "apple",
            json!({"text": "red apple pie", "color": "red"}),
        )
        .await
        .unwrap();
    store
        .put(
            &at,
            "banana",
            json!({"text": "yellow banana bread", "color": "yellow"}),
        )
        .await
        .unwrap();
    store
        .put(&at, "none", json!({"other": "zany zebra"}))
        .await
        .unwrap();
    store
        .put_with(
            &at,
            "unindexed",
            json!({"text": "zany zebra Xerxes"}),
            IndexFields::No,
            Ttl::Default,
        )
        .await
        .unwrap();

    let query = |text: &str, filter: serde_json::Value| {
        let store = store.clone();
        let op = SearchOp::new(ns(["docs"]))
            .with_query(text)
            .with_filter(obj(filter));
        async move { store.search(op).await.unwrap() }
    };
    let found = query("Zany Xerxes", json!({})).await;
    assert_eq!(found[0].item.key, "zebra");
    let s0 = found[0].score.unwrap();
    assert!(s0 > 0.5, "{s0}");
    assert_eq!(found.len(), 5);
    let unscored: Vec<_> = found
        .iter()
        .filter(|f| f.score.is_none())
        .map(|f| f.item.key.as_str())
        .collect();
    assert_eq!(
        unscored,
        ["none", "unindexed"],
        "unscored items come last, by key"
    );
    let expected = stategraph_llm::cosine_similarity(
        &stategraph_llm::HashEmbeddings::new(64).embed("Zany Xerxes"),
        &stategraph_llm::HashEmbeddings::new(64).embed("zany zebra Xerxes"),
    );
    assert!((s0 - f64::from(expected)).abs() < 1e-6);

    let red = query("apple", json!({"color": "red"})).await;
    assert_eq!(keys(&red), ["apple", "zebra"]);

    // Re-embedding on update.
    store
        .put(
            &at,
            "zebra",
            json!({"text": "new text about dogs", "color": "red"}),
        )
        .await
        .unwrap();
    let after = query("Zany Xerxes", json!({})).await;
    let zebra = after.iter().find(|f| f.item.key == "zebra").unwrap();
    assert!(zebra.score.unwrap() < s0);
    let dogs = query("dogs", json!({})).await;
    assert_eq!(dogs[0].item.key, "zebra");
    assert!(dogs[0].score.unwrap() > zebra.score.unwrap());

    // Several vectors per item: scored by the best one, listed once.
    let per_op = IndexFields::Fields(vec!["parts[*]".into()]);
    store
        .put_with(
            &at,
            "multi",
            json!({"parts": ["alpha beta", "gamma delta"]}),
            per_op,
            Ttl::Default,
        )
        .await
        .unwrap();
    let multi = query("gamma delta", json!({})).await;
    assert_eq!(multi[0].item.key, "multi");
    assert!((multi[0].score.unwrap() - 1.0).abs() < 1e-6);
    assert_eq!(multi.iter().filter(|f| f.item.key == "multi").count(), 1);
    let vectors_before = backend.vector_count(&store).await;
    assert_eq!(vectors_before, 5, "zebra, apple, banana, and two for multi");

    // Deleting an item deletes its vectors.
    store.delete(&at, "multi").await.unwrap();
    assert_eq!(backend.vector_count(&store).await, 3);
    store
        .put_with(
            &at,
            "apple",
            json!({"text": "x"}),
            IndexFields::No,
            Ttl::Default,
        )
        .await
        .unwrap();
    assert_eq!(
        backend.vector_count(&store).await,
        2,
        "a put without index drops the old vectors"
    );

    // Pages with a query; odd queries.
    let page1 = store
        .search(
            SearchOp::new(ns(["docs"]))
                .with_query("red")
                .with_page(2, 0),
        )
        .await
        .unwrap();
    let page2 = store
        .search(
            SearchOp::new(ns(["docs"]))
                .with_query("red")
                .with_page(2, 2),
        )
        .await
        .unwrap();
    assert_eq!(page1.len(), 2);
    assert_ne!(page1[0].item.key, page2[0].item.key);
    for odd in ["", "test!@#$%^&*()", &"test ".repeat(100)] {
        let found = store
            .search(SearchOp::new(ns(["docs"])).with_query(odd))
            .await
            .unwrap();
        assert_eq!(found.len(), 5);
    }

    // A store without an index ignores the query.
    let plain = backend.store(StoreOptions::new()).await;
    assert!(!plain.capabilities().vector_search);
    plain.put(&at, "k", json!({"text": "zebra"})).await.unwrap();
    let found = plain
        .search(SearchOp::new(ns(["docs"])).with_query("zebra"))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].score, None);
    assert_eq!(backend.vector_count(&plain).await, 0);
}

/// ST-VS-16 (P): an embedder of the wrong size is an error, nothing stored.
pub async fn wrong_dimensions_are_refused(backend: &impl Backend) {
    let index = IndexConfig::new(8, stategraph_llm::HashEmbeddings::new(16));
    let store = backend.store(StoreOptions::new().with_index(index)).await;
    let err = store
        .put(&["d"], "k", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Dimensions {
                expected: 8,
                got: 16
            }
        ),
        "{err}"
    );
    let err = store
        .search(SearchOp::new(ns(["d"])).with_query("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Dimensions { .. }), "{err}");
    assert_eq!(store.get(&["d"], "k").await.unwrap(), None);
}

/// ST-TTL-01..17 with a clock moved by hand.
pub async fn ttl_expiry_refresh_and_sweep(backend: &impl Backend) {
    let clock = ManualClock::new();
    // A store without expiry refuses TTLs.
    let plain = backend.store(StoreOptions::new().with_clock(&clock)).await;
    assert!(!plain.capabilities().ttl);
    let err = plain
        .put_with(
            &["t"],
            "k",
            json!({}),
            IndexFields::Default,
            Ttl::Minutes(5.0),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);

    let ttl = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_omit_expired(true);
    let store = backend
        .store(StoreOptions::new().with_ttl(ttl).with_clock(&clock))
        .await;
    assert!(store.capabilities().ttl);
    let at = ["t"];
    store.put(&at, "default", json!({"id": 1})).await.unwrap();
    store
        .put_with(
            &at,
            "short",
            json!({"id": 2}),
            IndexFields::Default,
            Ttl::Minutes(0.1),
        )
        .await
        .unwrap();
    store
        .put_with(
            &at,
            "forever",
            json!({"id": 3}),
            IndexFields::Default,
            Ttl::Never,
        )
        .await
        .unwrap();

    // 0.1 minutes = 6 s: refreshed by reads until it is not read.
    clock.advance_seconds(5.0);
    assert!(
        store.get(&at, "short").await.unwrap().is_some(),
        "read refreshes"
    );
    clock.advance_seconds(5.0);
    assert!(
        store.get(&at, "short").await.unwrap().is_some(),
        "refreshed at 5 s"
    );
    // A read without refresh leaves the deadline where it was.
    let mut no_refresh = GetOp::new(ns(at), "short");
    no_refresh.refresh_ttl = false;
    clock.advance_seconds(5.0);
    store
        .batch(vec![Op::Get(no_refresh.clone())])
        .await
        .unwrap();
    clock.advance_seconds(1.0);
    assert_eq!(
        store.batch(vec![Op::Get(no_refresh)]).await.unwrap(),
        [OpResult::Item(None)]
    );
    assert_eq!(
        store.get(&at, "short").await.unwrap(),
        None,
        "expired, omitted, not resurrected"
    );

    // Searches refresh only what they return.
    let search = SearchOp::new(ns(at)).with_filter(obj(json!({"id": 1})));
    assert_eq!(keys(&store.search(search).await.unwrap()), ["default"]);
    clock.advance_seconds(50.0);
    let all = store.search(SearchOp::new(ns(at))).await.unwrap();
    let mut all = keys(&all);
    all.sort();
    assert_eq!(
        all,
        ["default", "forever"],
        "refreshed by the search at 16 s"
    );
    clock.advance_seconds(61.0);
    assert_eq!(
        keys(&store.search(SearchOp::new(ns(at))).await.unwrap()),
        ["forever"]
    );
    assert_eq!(
        store
            .list_namespaces(ListNamespacesOp::new())
            .await
            .unwrap(),
        [ns(at)]
    );
    store
        .put_with(
            &["gone"],
            "k",
            json!({}),
            IndexFields::Default,
            Ttl::Minutes(0.0),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .list_namespaces(ListNamespacesOp::new())
            .await
            .unwrap(),
        [ns(at)]
    );

    assert_eq!(backend.sweep(&store).await, 3, "short, default, gone");
    assert_eq!(backend.sweep(&store).await, 0);
    assert!(store.get(&at, "forever").await.unwrap().is_some());

    // A put resets the deadline (ST-TTL-17).
    store.put(&at, "again", json!({})).await.unwrap();
    clock.advance_seconds(50.0);
    store.put(&at, "again", json!({"v": 2})).await.unwrap();
    clock.advance_seconds(50.0);
    assert!(store.get(&at, "again").await.unwrap().is_some());
}

/// ST-TTL-11, ST-TTL-09, ST-TTL-13: without `omit_expired`, expired items are
/// returned until swept but never refreshed; without `refresh_on_read`
/// reads do not extend.
pub async fn ttl_without_omit_or_refresh(backend: &impl Backend) {
    let clock = ManualClock::new();
    let ttl = TtlConfig::default().with_default_ttl(1.0);
    let store = backend
        .store(StoreOptions::new().with_ttl(ttl).with_clock(&clock))
        .await;
    store.put(&["t"], "k", json!({})).await.unwrap();
    clock.advance_seconds(61.0);
    assert!(
        store.get(&["t"], "k").await.unwrap().is_some(),
        "returned until swept"
    );
    assert_eq!(
        store.search(SearchOp::new(ns(["t"]))).await.unwrap().len(),
        1
    );
    assert_eq!(
        store
            .list_namespaces(ListNamespacesOp::new())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        backend.sweep(&store).await,
        1,
        "the reads did not resurrect it"
    );

    let ttl = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_refresh_on_read(false)
        .with_omit_expired(true);
    let store = backend
        .store(StoreOptions::new().with_ttl(ttl).with_clock(&clock))
        .await;
    store.put(&["t"], "k", json!({})).await.unwrap();
    clock.advance_seconds(50.0);
    assert!(store.get(&["t"], "k").await.unwrap().is_some());
    clock.advance_seconds(11.0);
    assert_eq!(store.get(&["t"], "k").await.unwrap(), None);

    // Expiry is filtered before paging.
    let ttl = TtlConfig::default().with_omit_expired(true);
    let store = backend
        .store(StoreOptions::new().with_ttl(ttl).with_clock(&clock))
        .await;
    for key in ["c", "b", "x", "a"] {
        clock.advance_seconds(1.0);
        let ttl = if key == "x" {
            Ttl::Minutes(0.01)
        } else {
            Ttl::Default
        };
        store
            .put_with(&["p"], key, json!({}), IndexFields::Default, ttl)
            .await
            .unwrap();
    }
    clock.advance_seconds(1.0);
    let page = |offset| {
        let store = store.clone();
        async move {
            keys(
                &store
                    .search(SearchOp::new(ns(["p"])).with_page(2, offset))
                    .await
                    .unwrap(),
            )
        }
    };
    assert_eq!(page(0).await, ["a", "b"]);
    assert_eq!(page(2).await, ["c"]);
}

/// Fractional minutes survive a refresh (ST-TTL-15).
pub async fn fractional_ttls_survive_refresh(backend: &impl Backend) {
    let clock = ManualClock::new();
    let ttl = TtlConfig::default().with_omit_expired(true);
    let store = backend
        .store(StoreOptions::new().with_ttl(ttl).with_clock(&clock))
        .await;
    store
        .put_with(
            &["f"],
            "k",
            json!({}),
            IndexFields::Default,
            Ttl::Minutes(0.1),
        )
        .await
        .unwrap();
    clock.advance(chrono::Duration::milliseconds(5_999));
    assert!(store.get(&["f"], "k").await.unwrap().is_some());
    clock.advance(chrono::Duration::milliseconds(5_999));
    assert!(store.get(&["f"], "k").await.unwrap().is_some());
    clock.advance(chrono::Duration::milliseconds(6_000));
    assert_eq!(store.get(&["f"], "k").await.unwrap(), None);
}

/// ST-TTL-16: a sweep of more items than one sweep transaction holds
/// (`items` of them) deletes them all, vectors included, counts them, and
/// keeps the item that never expires.
pub async fn large_sweeps_run_in_batches(backend: &impl Backend, items: usize) {
    let clock = ManualClock::new();
    let ttl = TtlConfig::default().with_default_ttl(1.0);
    let store = backend
        .store(
            StoreOptions::new()
                .with_ttl(ttl)
                .with_clock(&clock)
                .with_index(hash_index()),
        )
        .await;
    let ops: Vec<Op> = (0..items)
        .map(|i| {
            Op::Put(PutOp::put(
                ns(["bulk"]),
                format!("k{i}"),
                obj(json!({"i": i})),
            ))
        })
        .collect();
    store.batch(ops).await.unwrap();
    store
        .put_with(
            &["bulk"],
            "kept",
            json!({}),
            IndexFields::Default,
            Ttl::Never,
        )
        .await
        .unwrap();
    assert_eq!(backend.sweep(&store).await, 0);
    clock.advance_seconds(60.0);
    assert_eq!(backend.sweep(&store).await, items);
    let left = store
        .search(SearchOp::new(ns(["bulk"])).with_page(items + 1, 0))
        .await
        .unwrap();
    assert_eq!(keys(&left), ["kept"]);
    assert_eq!(backend.vector_count(&store).await, 1);
}
