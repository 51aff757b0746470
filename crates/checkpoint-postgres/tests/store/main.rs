//! `PostgresStore`: the store conformance kit of `stategraph-conformance`,
//! the shared store cases and the differential run against
//! `InMemoryStore` (a fresh schema per store), and what only PostgreSQL
//! shows: atomicity of a batch failing in the server, setup shared with the
//! saver, bounded sweeps, concurrent writers of one key, a transaction-mode
//! pooler, and time limits (`timeouts`). One test binary for all of it.
//!
//! Each test needs `STATEGRAPH_TEST_POSTGRES_URL` (`cargo xtask
//! with-postgres -- cargo test -p stategraph-checkpoint-postgres` sets it);
//! without it, it prints one line and returns, except under CI, where
//! `postgres_is_configured_in_ci` fails.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod conformance;
mod timeouts;

use serde_json::json;
use stategraph_checkpoint_postgres::sqlx::{self, AssertSqlSafe};
use stategraph_checkpoint_postgres::{PostgresSaver, PostgresStore};
use stategraph_store::{ListNamespacesOp, Op, PutOp, SearchOp, Store, StoreError, TtlConfig, ns};

use stategraph_conformance::store::scenarios::{self as support, cases, differential};
use support::{Backend, StoreOptions, hash_index, obj};

/// Stores on fresh schemas of the test server.
struct Schemas {
    url: String,
}

async fn count(store: &PostgresStore, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql)
        .persistent(false)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

impl Backend for Schemas {
    type Store = PostgresStore;

    async fn store(&self, options: StoreOptions) -> PostgresStore {
        // The pool owns the schema, which is dropped with the last pool.
        let schema = common::Schema::create(&self.url).await;
        let store = PostgresStore::from_pool(schema.pool(4, None).await).with_options(options);
        store.setup().await.unwrap();
        store
    }

    async fn sweep(&self, store: &PostgresStore) -> usize {
        store.sweep_expired().await.unwrap()
    }

    async fn vector_count(&self, store: &PostgresStore) -> i64 {
        count(store, "SELECT count(*) FROM stategraph_store_vectors").await
    }
}

fn schemas(test: &str) -> Option<Schemas> {
    common::url(test).map(|url| Schemas { url })
}

/// Fails under CI when no PostgreSQL server is configured, so these tests
/// cannot be skipped there without anyone noticing.
#[test]
fn postgres_is_configured_in_ci() {
    let url = std::env::var(common::URL_VAR).unwrap_or_default();
    let ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false");
    assert!(
        !ci || !url.is_empty(),
        "CI is set but {} is not: the PostgreSQL store tests would be skipped",
        common::URL_VAR
    );
}

/// One `#[tokio::test]` per shared case.
macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some(backend) = crate::schemas(stringify!($case)) else {
                    return;
                };
                crate::cases::$case(&backend).await;
            }
        )*
    };
}

mod shared {
    cases!(
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_answers_as_the_in_memory_store() {
    let Some(backend) = schemas("same_answers_as_the_in_memory_store") else {
        return;
    };
    // About 10,000 ops (T13): 1,000 batches of 1-4 ops in each of 4 configurations.
    differential::compare_with_memory(&backend, 11, 1000).await;
}

/// ST-BA-09: a batch failing inside PostgreSQL (a trigger refuses its last
/// put) leaves nothing of the batch behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_failing_in_postgres_rolls_back_whole() {
    let Some(backend) = schemas("a_batch_failing_in_postgres_rolls_back_whole") else {
        return;
    };
    let store = backend
        .store(StoreOptions::new().with_index(hash_index()))
        .await;
    store.put(&["a"], "kept", json!({"v": 1})).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(
        "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NEW.key = convert_to('boom', 'UTF8') THEN RAISE EXCEPTION 'boom refused'; END IF;
             RETURN NEW;
         END $$;
         CREATE TRIGGER refuse_boom BEFORE INSERT ON stategraph_store_items
             FOR EACH ROW EXECUTE FUNCTION refuse_boom();",
    ))
    .execute(store.pool())
    .await
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
                store: "PostgresStore",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("boom refused"), "{err}");
    let kept = store.get(&["a"], "kept").await.unwrap().unwrap();
    assert_eq!(kept.value, obj(json!({"v": 1})));
    assert_eq!(store.get(&["a"], "new").await.unwrap(), None);
    assert_eq!(
        count(&store, "SELECT count(*) FROM stategraph_store_vectors").await,
        1
    );
}

/// The store's tables come with the saver's migrations; setup is
/// idempotent, also after the version table was dropped (ST-MIG-02); a
/// store built from a saver shares its pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_is_shared_with_the_saver_and_idempotent() {
    let Some(url) = common::url("setup_is_shared_with_the_saver_and_idempotent") else {
        return;
    };
    let saver = common::Schema::saver(&url).await;
    assert_eq!(
        saver.schema_versions().await.unwrap(),
        (1..=PostgresSaver::latest_schema_version()).collect::<Vec<_>>()
    );
    let store = PostgresStore::from_saver(&saver);
    store.put(&["shared"], "k", json!({"v": 1})).await.unwrap();
    store.setup().await.unwrap();
    sqlx::raw_sql(AssertSqlSafe("DROP TABLE stategraph_checkpoint_migrations"))
        .execute(store.pool())
        .await
        .unwrap();
    store.setup().await.unwrap();
    let item = store.get(&["shared"], "k").await.unwrap().unwrap();
    assert_eq!(item.value, obj(json!({"v": 1})));
    let err = PostgresStore::connect("not a url").await.unwrap_err();
    assert!(err.to_string().contains("invalid PostgreSQL URL"), "{err}");
}

/// ST-TTL-16: a sweep of more items than one sweep statement (1,000)
/// holds removes them all, vectors included, and counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_sweeps_run_in_batches() {
    let Some(backend) = schemas("large_sweeps_run_in_batches") else {
        return;
    };
    cases::large_sweeps_run_in_batches(&backend, 2_345).await;
}

/// Concurrent batches writing one key queue (no serialization failures);
/// batches on distinct keys all land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_of_one_key_all_succeed() {
    let Some(backend) = schemas("concurrent_writers_of_one_key_all_succeed") else {
        return;
    };
    let ttl = TtlConfig::default().with_default_ttl(5.0);
    let store = backend.store(StoreOptions::new().with_ttl(ttl)).await;
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..15 {
                    store
                        .put(&["hot"], "key", json!({"task": task, "i": i}))
                        .await
                        .unwrap();
                    store.get(&["hot"], "key").await.unwrap().unwrap();
                    let key = format!("t{task}-{i}");
                    store.put(&["cold"], &key, json!({"i": i})).await.unwrap();
                    store
                        .search(SearchOp::new(ns(["hot"])).with_refresh_ttl(true))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let cold = store
        .search(SearchOp::new(ns(["cold"])).with_page(1_000, 0))
        .await
        .unwrap();
    assert_eq!(cold.len(), 120);
}

/// Through pgbouncer in transaction mode (xtask starts one): unnamed
/// statements only, so batches work on whatever server connection a
/// transaction gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_through_a_transaction_mode_pooler() {
    let ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false");
    let url = match std::env::var("STATEGRAPH_TEST_PGBOUNCER_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert!(
                !ci,
                "CI is set but STATEGRAPH_TEST_PGBOUNCER_URL is not: the pooler test would be skipped"
            );
            #[allow(clippy::print_stdout)]
            {
                println!(
                    "works_through_a_transaction_mode_pooler: \
                     STATEGRAPH_TEST_PGBOUNCER_URL is unset, skipped"
                );
            }
            return;
        }
    };
    let store = PostgresStore::connect(&url).await.unwrap().with_options(
        StoreOptions::new()
            .with_index(hash_index().with_fields(["text"]))
            .with_ttl(TtlConfig::default().with_default_ttl(10.0)),
    );
    store.setup().await.unwrap();
    // The pooler's database is shared: a root label of its own isolates
    // this run.
    let root = uuid::Uuid::new_v4().simple().to_string();
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let (store, root) = (store.clone(), root.clone());
            tokio::spawn(async move {
                let at = [root.as_str(), "w", &worker.to_string()];
                for i in 0..20 {
                    let key = format!("k{i}");
                    store
                        .put(&at, &key, json!({"text": format!("note {i} of {worker}")}))
                        .await
                        .unwrap();
                    let item = store.get(&at, &key).await.unwrap().unwrap();
                    assert_eq!(item.key, key);
                    let found = store
                        .search(SearchOp::new(ns(at)).with_query("note").with_page(100, 0))
                        .await
                        .unwrap();
                    assert_eq!(found.len(), i + 1);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let spaces = store
        .list_namespaces(ListNamespacesOp::new().with_prefix(ns([root.as_str()])))
        .await
        .unwrap();
    assert_eq!(spaces.len(), 8);
    for worker in 0..8 {
        for i in 0..20 {
            let at = [root.as_str(), "w", &worker.to_string()];
            store.delete(&at, &format!("k{i}")).await.unwrap();
        }
    }
}
