//! `SqliteStore`: the store conformance kit of `stategraph-conformance` and
//! the shared store cases (on a database file per store and on in-memory
//! databases), the differential run against `InMemoryStore`,
//! and what only a file shows: persistence across reopening, atomicity of
//! a batch that fails inside SQLite, sharing a saver's connections, setup;
//! with the `sqlite-vec` feature, that SQLite computes the scores.
//! One test binary (one link) for all of it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod conformance;
#[cfg(feature = "sqlite-vec")]
mod vec_scores;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::json;
use stategraph_checkpoint_sqlite::{SqliteSaver, SqliteStore};
use stategraph_store::{IndexFields, Op, PutOp, SearchOp, Store, StoreError, Ttl, TtlConfig, ns};

use differential::ScoreTolerance;
use stategraph_conformance::store::scenarios::{self as support, cases, differential};
use support::{Backend, ManualClock, StoreOptions, hash_index, obj};

/// How the differential compares search scores with `InMemoryStore`'s.
///
/// Without the `sqlite-vec` feature the store scores in Rust with the
/// shared code, so scores must be equal to the bit. With it, sqlite-vec
/// computes each cosine in `f32` (sequential sums, `f64` square roots)
/// where Rust sums in 32 lanes, so scores may differ in the last bits:
/// within 1e-5 (the differential's 16-dimension unit vectors differ by a
/// few `f32` ulps, about 1e-7; the module `vec_scores` checks 1e-5 on
/// 384 dimensions), and results whose scores are that close may swap
/// places. Everything else must still be exact.
const SCORES: ScoreTolerance = if cfg!(feature = "sqlite-vec") {
    ScoreTolerance::Absolute(1e-5)
} else {
    ScoreTolerance::Exact
};

/// Stores on database files in one temporary directory.
struct Files {
    dir: tempfile::TempDir,
    count: Mutex<usize>,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("stategraph-sqlite-store-")
            .tempdir()
            .unwrap();
        Self {
            dir,
            count: Mutex::new(0),
        }
    }

    fn next_path(&self) -> PathBuf {
        let mut count = self.count.lock().unwrap();
        *count += 1;
        self.dir.path().join(format!("store-{count}.db"))
    }
}

fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    conn
}

fn count(path: &Path, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |row| row.get(0)).unwrap()
}

impl Backend for Files {
    type Store = SqliteStore;

    async fn store(&self, options: StoreOptions) -> SqliteStore {
        SqliteStore::open(self.next_path())
            .await
            .unwrap()
            .with_options(options)
    }

    async fn sweep(&self, store: &SqliteStore) -> usize {
        store.sweep_expired().await.unwrap()
    }

    async fn vector_count(&self, store: &SqliteStore) -> i64 {
        count(store.path().unwrap(), "SELECT count(*) FROM store_vectors")
    }
}

/// Stores on private in-memory databases (no vector count: nothing else
/// can open them).
struct Memory;

impl Backend for Memory {
    type Store = SqliteStore;

    async fn store(&self, options: StoreOptions) -> SqliteStore {
        SqliteStore::in_memory()
            .await
            .unwrap()
            .with_options(options)
    }

    async fn sweep(&self, store: &SqliteStore) -> usize {
        store.sweep_expired().await.unwrap()
    }

    async fn vector_count(&self, _store: &SqliteStore) -> i64 {
        panic!("the vector count of an in-memory database is not observable")
    }
}

/// One `#[tokio::test]` per shared case, on `$backend`.
macro_rules! cases {
    ($backend:expr => $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                crate::cases::$case(&$backend).await;
            }
        )*
    };
}

mod file {
    use super::*;

    cases!(Files::new() =>
        put_get_update_delete,
        values_and_keys_round_trip,
        namespaces_are_validated,
        batches_read_before_they_write,
        failing_batches_change_nothing,
        search_filters,
        search_prefixes_and_pages,
        list_namespaces,
        vector_search,
        wrong_dimensions_are_refused,
        ttl_expiry_refresh_and_sweep,
        ttl_without_omit_or_refresh,
        fractional_ttls_survive_refresh,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn same_answers_as_the_in_memory_store() {
        crate::differential::compare_with_memory_within(&Files::new(), 7, 400, crate::SCORES).await;
    }
}

mod in_memory {
    use super::*;

    cases!(Memory =>
        put_get_update_delete,
        values_and_keys_round_trip,
        batches_read_before_they_write,
        search_filters,
        search_prefixes_and_pages,
        list_namespaces,
        ttl_expiry_refresh_and_sweep,
        ttl_without_omit_or_refresh,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn same_answers_as_the_in_memory_store() {
        for seed in [1, 2, 3] {
            crate::differential::compare_with_memory_within(&Memory, seed, 700, crate::SCORES)
                .await;
        }
    }
}

/// Items, vectors, timestamps and expiry survive closing and reopening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_persist_across_reopening() {
    let files = Files::new();
    let path = files.next_path();
    let clock = ManualClock::new();
    let ttl = TtlConfig::default().with_omit_expired(true);
    let open = |path: PathBuf| {
        let clock = clock.clock();
        async move {
            SqliteStore::open(path).await.unwrap().with_options(
                StoreOptions::new()
                    .with_index(hash_index().with_fields(["text"]))
                    .with_ttl(ttl)
                    .with_clock(clock),
            )
        }
    };
    let store = open(path.clone()).await;
    store
        .put(&["m"], "pizza", json!({"text": "likes pizza"}))
        .await
        .unwrap();
    store
        .put_with(
            &["m"],
            "brief",
            json!({"text": "brief memory"}),
            IndexFields::Default,
            Ttl::Minutes(1.0),
        )
        .await
        .unwrap();
    let before = store.get(&["m"], "pizza").await.unwrap().unwrap();
    drop(store);

    let store = open(path.clone()).await;
    assert_eq!(store.get(&["m"], "pizza").await.unwrap().unwrap(), before);
    let found = store
        .search(SearchOp::new(ns(["m"])).with_query("pizza"))
        .await
        .unwrap();
    assert_eq!(found[0].item.key, "pizza");
    assert!(found[0].score.unwrap() > 0.5);
    clock.advance_seconds(61.0);
    assert_eq!(store.get(&["m"], "brief").await.unwrap(), None);
    assert_eq!(store.sweep_expired().await.unwrap(), 1);
    drop(store);
    assert_eq!(count(&path, "SELECT count(*) FROM store_items"), 1);
    assert_eq!(count(&path, "SELECT count(*) FROM store_vectors"), 1);
}

/// ST-BA-09: a batch failing inside SQLite (a trigger aborts its last put)
/// leaves nothing of the batch behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_failing_in_sqlite_rolls_back_whole() {
    let files = Files::new();
    let store = files
        .store(StoreOptions::new().with_index(hash_index()))
        .await;
    let path = store.path().unwrap().to_path_buf();
    store.put(&["a"], "kept", json!({"v": 1})).await.unwrap();
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER refuse_boom BEFORE INSERT ON store_items WHEN NEW.key = 'boom'
             BEGIN SELECT RAISE(ABORT, 'boom refused'); END;",
        )
        .unwrap();
    let ops = vec![
        Op::Put(PutOp::put(ns(["a"]), "kept", obj(json!({"v": 2})))),
        Op::Put(PutOp::put(ns(["a"]), "new", obj(json!({"v": 3})))),
        Op::Put(PutOp::delete(ns(["a"]), "kept")),
        Op::Put(PutOp::put(ns(["a"]), "boom", obj(json!({})))),
    ];
    let err = store.batch(ops).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Backend {
                store: "SqliteStore",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("boom refused"), "{err}");
    assert_eq!(
        store.get(&["a"], "kept").await.unwrap().unwrap().value,
        obj(json!({"v": 1}))
    );
    assert_eq!(store.get(&["a"], "new").await.unwrap(), None);
    assert_eq!(count(&path, "SELECT count(*) FROM store_vectors"), 1);
}

/// A saver and a store share one file and one writer; migrations are
/// idempotent, also after the migrations table was dropped (ST-MIG-02).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saver_and_a_store_share_a_file() {
    let files = Files::new();
    let path = files.next_path();
    let saver = SqliteSaver::open(&path).unwrap();
    let store = SqliteStore::from_saver(&saver);
    assert_eq!(store.path(), saver.path());
    store.put(&["shared"], "k", json!({"v": 1})).await.unwrap();
    store.setup().await.unwrap();
    raw(&path)
        .execute_batch("DROP TABLE stategraph_migrations")
        .unwrap();
    store.setup().await.unwrap();
    let reopened = SqliteStore::open(&path).await.unwrap();
    assert!(reopened.get(&["shared"], "k").await.unwrap().is_some());

    let memory_saver = SqliteSaver::in_memory().unwrap();
    let memory_store = SqliteStore::from_saver(&memory_saver);
    assert_eq!(memory_store.path(), None);
    memory_store.put(&["x"], "k", json!({})).await.unwrap();
    assert!(memory_store.get(&["x"], "k").await.unwrap().is_some());
}

/// ST-TTL-16: a sweep of more items than one sweep transaction (500)
/// holds deletes them all, and counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_sweeps_run_in_batches() {
    cases::large_sweeps_run_in_batches(&Files::new(), 1_234).await;
}

/// Concurrent batches from many tasks on one file all land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_all_land() {
    let files = Files::new();
    let store = files.store(StoreOptions::new()).await;
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..20 {
                    let key = format!("t{task}-{i}");
                    store
                        .put(&["c", &task.to_string()], &key, json!({"i": i}))
                        .await
                        .unwrap();
                    store
                        .get(&["c", &task.to_string()], &key)
                        .await
                        .unwrap()
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let all = store
        .search(SearchOp::new(ns(["c"])).with_page(1_000, 0))
        .await
        .unwrap();
    assert_eq!(all.len(), 320);
}

/// A clock outside the stored range is a typed error, not a wrong answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clocks_beyond_2262_are_refused() {
    let far = chrono::DateTime::parse_from_rfc3339("2300-01-01T00:00:00Z")
        .unwrap()
        .to_utc();
    let clock: stategraph_store::Clock = std::sync::Arc::new(move || far);
    let store = SqliteStore::in_memory()
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_clock(clock));
    let err = store.put(&["a"], "k", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), stategraph_core::ErrorKind::Unsupported, "{err}");
    assert!(store.sweep_expired().await.is_err());
}

/// ST-TTL-04 for the SQLite store's sweeper task: it deletes expired items
/// on its interval, without a manual sweep, and stops when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_task_deletes_expired_items() {
    let clock = ManualClock::new();
    let ttl = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_sweep_interval(0.0005); // 30 ms
    let store = SqliteStore::in_memory()
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_ttl(ttl).with_clock(&clock));
    store.put(&["s"], "k", json!({"v": 1})).await.unwrap();
    let sweeper = store.start_sweeper();
    clock.advance_minutes(2.0);
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let found = store
            .batch(vec![Op::Get(stategraph_store::GetOp::new(ns(["s"]), "k"))])
            .await
            .unwrap();
        if found == [stategraph_store::OpResult::Item(None)] {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "the sweeper did not delete the expired item within 2 s"
    );
    assert!(sweeper.stop());
}
