//! Issue 21: a store refuses at `put` a value no store could read back,
//! however deep, without overflowing the stack.

use serde_json::{Value as Json, json};
use stategraph_core::JsonMap;
use stategraph_core::json::MAX_DEPTH;
use stategraph_store::{InMemoryStore, Op, PutOp, Store, StoreError, ns};

fn nested(depth: usize) -> Json {
    (0..depth).fold(json!(1), |inner, _| Json::Array(vec![inner]))
}

/// `{"v": value}`, built without `json!`, which would copy `value` by
/// serializing it (recursively).
fn wrapped(value: Json) -> JsonMap {
    let mut map = JsonMap::new();
    map.insert("v".to_owned(), value);
    map
}

#[test]
fn values_past_the_depth_limit_are_refused_without_recursion() {
    // A 512 KiB stack: recursing into 100,000 levels would overflow it.
    let outcome = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            runtime.block_on(async {
                let store = InMemoryStore::new();
                store
                    .put(
                        &["deep"],
                        "ok",
                        Json::Object(wrapped(nested(MAX_DEPTH - 1))),
                    )
                    .await
                    .unwrap();
                let single = store
                    .put(&["deep"], "too", Json::Object(wrapped(nested(100_000))))
                    .await
                    .unwrap_err();
                // Two deep values in one batch: both dropped without recursion.
                let put =
                    |key: &str| Op::Put(PutOp::put(ns(["deep"]), key, wrapped(nested(100_000))));
                let batch = store.batch(vec![put("a"), put("b")]).await.unwrap_err();
                // Not an object at all: refused, and dropped the same way.
                let array = store
                    .put(&["deep"], "array", nested(100_000))
                    .await
                    .unwrap_err();
                let kept = store.get(&["deep"], "ok").await.unwrap().is_some();
                let refused = store.get(&["deep"], "too").await.unwrap().is_none();
                (single, batch, array, kept && refused)
            })
        })
        .unwrap()
        .join()
        .unwrap();
    let (single, batch, array, stored_as_expected) = outcome;
    for err in [&single, &batch] {
        assert!(
            matches!(err, StoreError::ValueTooDeep { limit, .. } if *limit == MAX_DEPTH),
            "{err}"
        );
    }
    assert!(matches!(array, StoreError::NotAnObject { .. }), "{array}");
    assert!(stored_as_expected);
}
