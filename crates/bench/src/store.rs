//! Long-term memory store workloads: puts, gets, filtered search and
//! semantic search over 10,000 items (384-dimension vectors).

use serde_json::json;
use stategraph_llm::HashEmbeddings;
use stategraph_store::{InMemoryStore, IndexConfig, Op, PutOp, SearchOp, Store, ns};
use tokio::runtime::Runtime;

use crate::{Outcome, Workload};

const ITEMS: usize = 1_000;
const SEMANTIC_ITEMS: usize = 10_000;
const DIMS: usize = 384;

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "store_memory_put_1000",
            setup: || {
                let runtime = runtime();
                Box::new(move || {
                    let store = InMemoryStore::new();
                    runtime.block_on(put_items(&store, ITEMS));
                    Outcome {
                        chunks: ITEMS,
                        check: json!({"items": ITEMS}),
                    }
                })
            },
        },
        Workload {
            name: "store_memory_get_1000",
            setup: || {
                let runtime = runtime();
                let store = InMemoryStore::new();
                runtime.block_on(put_items(&store, ITEMS));
                Box::new(move || {
                    let found = runtime.block_on(async {
                        let mut found = 0;
                        for i in 0..ITEMS {
                            let item = store.get(&["users", &user(i)], &key(i)).await;
                            found += usize::from(matches!(item, Ok(Some(_))));
                        }
                        found
                    });
                    Outcome {
                        chunks: ITEMS,
                        check: json!({"found": found}),
                    }
                })
            },
        },
        Workload {
            name: "store_memory_search_filter_1000",
            setup: || {
                let runtime = runtime();
                let store = InMemoryStore::new();
                runtime.block_on(put_items(&store, ITEMS));
                Box::new(move || {
                    let filter = json!({"rating": {"$gte": 5}, "kind": "note"});
                    let op = SearchOp::new(ns(["users"]))
                        .with_filter(filter.as_object().cloned().unwrap_or_default())
                        .with_page(10, 0);
                    let found = runtime.block_on(store.search(op)).map_or(0, |r| r.len());
                    Outcome {
                        chunks: 1,
                        check: json!({"results": found}),
                    }
                })
            },
        },
        Workload {
            name: "store_memory_semantic_search_10k",
            setup: || {
                let runtime = runtime();
                let store = InMemoryStore::new().with_index(
                    IndexConfig::new(DIMS, HashEmbeddings::new(DIMS)).with_fields(["text"]),
                );
                runtime.block_on(put_items(&store, SEMANTIC_ITEMS));
                Box::new(move || {
                    let op = SearchOp::new(ns(["users"]))
                        .with_query("notes about topic 42 and gardens")
                        .with_page(10, 0);
                    let found = runtime.block_on(store.search(op)).unwrap_or_default();
                    let ranked = found.iter().filter(|f| f.score.is_some()).count();
                    Outcome {
                        chunks: 1,
                        check: json!({"results": found.len(), "ranked": ranked}),
                    }
                })
            },
        },
    ]
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"))
}

fn user(i: usize) -> String {
    format!("user-{}", i % 50)
}

fn key(i: usize) -> String {
    format!("memory-{i}")
}

/// Puts `n` items across 50 users' namespaces in batches of 100.
async fn put_items(store: &InMemoryStore, n: usize) {
    let ops: Vec<Op> = (0..n)
        .map(|i| {
            let value = json!({
                "text": format!("note {i} about topic {} and gardens of user {}", i % 97, i % 50),
                "rating": i % 10,
                "kind": if i % 3 == 0 { "task" } else { "note" },
            });
            Op::Put(PutOp::put(
                ns(["users", &user(i)]),
                key(i),
                value.as_object().cloned().unwrap_or_default(),
            ))
        })
        .collect();
    for batch in ops.chunks(100) {
        if let Err(err) = store.batch(batch.to_vec()).await {
            panic!("the benchmark store refused a put: {err}");
        }
    }
}
