//! Long-term memory store workloads: puts, gets, filtered search and
//! semantic search over 10,000 items (384-dimension vectors).

use serde_json::json;
use stategraph_checkpoint_postgres::PostgresStore;
use stategraph_checkpoint_postgres::bench_baseline::RawStore as PgRawStore;
use stategraph_checkpoint_sqlite::SqliteStore;
use stategraph_checkpoint_sqlite::bench_baseline::{RawItem, RawStore};
use stategraph_llm::HashEmbeddings;
use stategraph_store::{
    InMemoryStore, IndexConfig, Op, PutOp, SearchOp, SharedStore, Store, StoreOptions, ns,
};
use tokio::runtime::Runtime;

use crate::{Outcome, Runner, Workload};

const ITEMS: usize = 1_000;
const SEMANTIC_ITEMS: usize = 10_000;
const DIMS: usize = 384;

pub(crate) fn workloads() -> Vec<Workload> {
    let mut all = vec![
        Workload {
            name: "store_memory_put_1000",
            setup: put_1000::<Memory>,
        },
        Workload {
            name: "store_memory_get_1000",
            setup: get_1000::<Memory>,
        },
        Workload {
            name: "store_memory_search_filter_1000",
            setup: search_filter_1000::<Memory>,
        },
        Workload {
            name: "store_memory_semantic_search_10k",
            setup: semantic_search_10k::<Memory>,
        },
        Workload {
            name: "store_sqlite_put_1000",
            setup: put_1000::<Sqlite>,
        },
        Workload {
            name: "store_sqlite_get_1000",
            setup: get_1000::<Sqlite>,
        },
        Workload {
            name: "store_sqlite_search_filter_1000",
            setup: search_filter_1000::<Sqlite>,
        },
        Workload {
            // With the `sqlite-vec` feature SQLite computes the scores.
            name: if cfg!(feature = "sqlite-vec") {
                "store_sqlite_semantic_search_10k_vec"
            } else {
                "store_sqlite_semantic_search_10k"
            },
            setup: semantic_search_10k::<Sqlite>,
        },
        Workload {
            name: "store_sqlite_put_1000_raw",
            setup: raw_sqlite_put_1000,
        },
        Workload {
            name: "store_sqlite_get_1000_raw",
            setup: raw_sqlite_get_1000,
        },
        Workload {
            name: "store_sqlite_search_filter_1000_raw",
            setup: raw_sqlite_search_filter_1000,
        },
    ];
    if std::env::var_os(POSTGRES_URL).is_some() {
        all.extend([
            Workload {
                name: "store_postgres_put_1000",
                setup: put_1000::<Postgres>,
            },
            Workload {
                name: "store_postgres_get_1000",
                setup: get_1000::<Postgres>,
            },
            Workload {
                name: "store_postgres_search_filter_1000",
                setup: search_filter_1000::<Postgres>,
            },
            Workload {
                name: "store_postgres_semantic_search_10k",
                setup: semantic_search_10k::<Postgres>,
            },
            Workload {
                name: "store_postgres_put_1000_raw",
                setup: raw_postgres_put_1000,
            },
            Workload {
                name: "store_postgres_get_1000_raw",
                setup: raw_postgres_get_1000,
            },
            Workload {
                name: "store_postgres_search_filter_1000_raw",
                setup: raw_postgres_search_filter_1000,
            },
        ]);
    }
    all
}

const POSTGRES_URL: &str = "STATEGRAPH_TEST_POSTGRES_URL";

/// A store backend the workloads run on.
trait Backend {
    /// A fresh store (an empty namespace root of its own for a database
    /// that outlives the run), with `options`.
    fn open(runtime: &Runtime, options: StoreOptions) -> SharedStore;
}

struct Memory;
struct Sqlite;
struct Postgres;

impl Backend for Memory {
    fn open(_: &Runtime, options: StoreOptions) -> SharedStore {
        InMemoryStore::new().with_options(options).into_shared()
    }
}

impl Backend for Sqlite {
    fn open(runtime: &Runtime, options: StoreOptions) -> SharedStore {
        let path = std::env::temp_dir().join(format!(
            "stategraph-bench-store-{}-{}.db",
            std::process::id(),
            stategraph_core::random_u64()
        ));
        let store = runtime
            .block_on(SqliteStore::open(&path))
            .unwrap_or_else(|err| panic!("cannot open {}: {err}", path.display()));
        store.with_options(options).into_shared()
    }
}

impl Backend for Postgres {
    fn open(runtime: &Runtime, options: StoreOptions) -> SharedStore {
        let url = std::env::var(POSTGRES_URL).unwrap_or_default();
        let store = runtime.block_on(async {
            let store = PostgresStore::connect(&url).await?;
            store.setup().await?;
            Ok::<_, stategraph_store::StoreError>(store)
        });
        let store = store.unwrap_or_else(|err| panic!("cannot open the PostgreSQL store: {err}"));
        store.with_options(options).into_shared()
    }
}

/// Every workload's items live under a root of their own, so a database
/// shared between runs does not mix them.
fn root() -> String {
    format!("bench-{}", stategraph_core::random_u64())
}

fn put_1000<B: Backend>() -> Runner {
    let runtime = runtime();
    let store = B::open(&runtime, StoreOptions::new());
    Box::new(move || {
        runtime.block_on(put_items(&store, &root(), ITEMS));
        Outcome {
            chunks: ITEMS,
            check: json!({"items": ITEMS}).into(),
        }
    })
}

fn get_1000<B: Backend>() -> Runner {
    let runtime = runtime();
    let store = B::open(&runtime, StoreOptions::new());
    let root = root();
    runtime.block_on(put_items(&store, &root, ITEMS));
    Box::new(move || {
        let found = runtime.block_on(async {
            let mut found = 0;
            for i in 0..ITEMS {
                let item = store.get(&[&root, &user(i)], &key(i)).await;
                found += usize::from(matches!(item, Ok(Some(_))));
            }
            found
        });
        Outcome {
            chunks: ITEMS,
            check: json!({"found": found}).into(),
        }
    })
}

fn search_filter_1000<B: Backend>() -> Runner {
    let runtime = runtime();
    let store = B::open(&runtime, StoreOptions::new());
    let root = root();
    runtime.block_on(put_items(&store, &root, ITEMS));
    Box::new(move || {
        let filter = json!({"rating": {"$gte": 5}, "kind": "note"});
        let op = SearchOp::new(ns([root.as_str()]))
            .with_filter(filter.as_object().cloned().unwrap_or_default())
            .with_page(10, 0);
        let found = runtime.block_on(store.search(op)).map_or(0, |r| r.len());
        Outcome {
            chunks: 1,
            check: json!({"results": found}).into(),
        }
    })
}

fn semantic_search_10k<B: Backend>() -> Runner {
    let runtime = runtime();
    let index = IndexConfig::new(DIMS, HashEmbeddings::new(DIMS)).with_fields(["text"]);
    let store = B::open(&runtime, StoreOptions::new().with_index(index));
    let root = root();
    runtime.block_on(put_items(&store, &root, SEMANTIC_ITEMS));
    Box::new(move || {
        let op = SearchOp::new(ns([root.as_str()]))
            .with_query("notes about topic 42 and gardens")
            .with_page(10, 0);
        let found = runtime.block_on(store.search(op)).unwrap_or_default();
        let ranked = found.iter().filter(|f| f.score.is_some()).count();
        Outcome {
            chunks: 1,
            check: json!({"results": found.len(), "ranked": ranked}).into(),
        }
    })
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"))
}

fn user(i: usize) -> String {
    format!("user-{}", i % 50)
}

fn key(i: usize) -> String {
    format!("memory-{i}")
}

/// The items [`put_items`] writes, as rows: joined namespace, key, JSON.
fn raw_items(root: &str, n: usize) -> Vec<RawItem> {
    (0..n)
        .map(|i| {
            (
                format!("{root}.{}", user(i)),
                key(i),
                item_value(i).to_string(),
            )
        })
        .collect()
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn raw_sqlite() -> RawStore {
    let path = std::env::temp_dir().join(format!(
        "stategraph-bench-raw-store-{}-{}.db",
        std::process::id(),
        stategraph_core::random_u64()
    ));
    RawStore::open(&path).unwrap_or_else(|err| panic!("cannot open {}: {err}", path.display()))
}

/// [`put_items`] with plain rusqlite: ten transactions of 100 upserts.
fn raw_put(store: &mut RawStore, root: &str, n: usize) {
    for batch in raw_items(root, n).chunks(100) {
        store
            .put_many(batch, now_nanos())
            .unwrap_or_else(|err| panic!("the raw store refused a put: {err}"));
    }
}

fn raw_sqlite_put_1000() -> Runner {
    let mut store = raw_sqlite();
    Box::new(move || {
        raw_put(&mut store, &root(), ITEMS);
        Outcome {
            chunks: ITEMS,
            check: json!({"items": ITEMS}).into(),
        }
    })
}

fn raw_sqlite_get_1000() -> Runner {
    let mut store = raw_sqlite();
    let root = root();
    raw_put(&mut store, &root, ITEMS);
    Box::new(move || {
        let found = (0..ITEMS)
            .filter(|i| {
                matches!(
                    store.get(&format!("{root}.{}", user(*i)), &key(*i)),
                    Ok(Some(_))
                )
            })
            .count();
        Outcome {
            chunks: ITEMS,
            check: json!({"found": found}).into(),
        }
    })
}

fn raw_sqlite_search_filter_1000() -> Runner {
    let mut store = raw_sqlite();
    let root = root();
    raw_put(&mut store, &root, ITEMS);
    Box::new(move || {
        let found = store
            .search_eq_gte(&root, ("kind", "note"), ("rating", 5.0), 10)
            .map_or(0, |r| r.len());
        Outcome {
            chunks: 1,
            check: json!({"results": found}).into(),
        }
    })
}

/// A plain-sqlx store on the pool of a `PostgresStore` (whose setup made
/// the tables).
fn raw_postgres(runtime: &Runtime) -> PgRawStore {
    let url = std::env::var(POSTGRES_URL).unwrap_or_default();
    let store = runtime.block_on(async {
        let store = PostgresStore::connect(&url).await?;
        store.setup().await?;
        Ok::<_, stategraph_store::StoreError>(store)
    });
    let store = store.unwrap_or_else(|err| panic!("cannot open the PostgreSQL store: {err}"));
    PgRawStore::new(store.pool().clone())
}

/// [`put_items`] with plain sqlx: ten multi-row upserts of 100 items.
async fn raw_postgres_put(store: &PgRawStore, root: &str, n: usize) {
    for batch in raw_items(root, n).chunks(100) {
        store
            .put_many(batch, now_nanos())
            .await
            .unwrap_or_else(|err| panic!("the raw store refused a put: {err}"));
    }
}

fn raw_postgres_put_1000() -> Runner {
    let runtime = runtime();
    let store = raw_postgres(&runtime);
    Box::new(move || {
        runtime.block_on(raw_postgres_put(&store, &root(), ITEMS));
        Outcome {
            chunks: ITEMS,
            check: json!({"items": ITEMS}).into(),
        }
    })
}

fn raw_postgres_get_1000() -> Runner {
    let runtime = runtime();
    let store = raw_postgres(&runtime);
    let root = root();
    runtime.block_on(raw_postgres_put(&store, &root, ITEMS));
    Box::new(move || {
        let found = runtime.block_on(async {
            let mut found = 0;
            for i in 0..ITEMS {
                let item = store.get(&format!("{root}.{}", user(i)), &key(i)).await;
                found += usize::from(matches!(item, Ok(Some(_))));
            }
            found
        });
        Outcome {
            chunks: ITEMS,
            check: json!({"found": found}).into(),
        }
    })
}

fn raw_postgres_search_filter_1000() -> Runner {
    let runtime = runtime();
    let store = raw_postgres(&runtime);
    let root = root();
    runtime.block_on(raw_postgres_put(&store, &root, ITEMS));
    Box::new(move || {
        let found = runtime
            .block_on(store.search_eq_gte(&root, ("kind", "note"), ("rating", 5.0), 10))
            .map_or(0, |r| r.len());
        Outcome {
            chunks: 1,
            check: json!({"results": found}).into(),
        }
    })
}

/// The value of item `i`.
fn item_value(i: usize) -> serde_json::Value {
    json!({
        "text": format!("note {i} about topic {} and gardens of user {}", i % 97, i % 50),
        "rating": i % 10,
        "kind": if i.is_multiple_of(3) { "task" } else { "note" },
    })
}

/// Puts `n` items across 50 users' namespaces under `root` in batches of
/// 100.
async fn put_items(store: &SharedStore, root: &str, n: usize) {
    let ops: Vec<Op> = (0..n)
        .map(|i| {
            let value = item_value(i);
            Op::Put(PutOp::put(
                ns([root, &user(i)]),
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
