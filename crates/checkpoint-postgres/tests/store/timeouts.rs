//! Time limits of `PostgresStore`: a put waiting for a row lock is
//! cancelled by the server's statement timeout, and a batch on a
//! connection that went silent mid-query (a loopback proxy that stops
//! forwarding) is abandoned at the client's deadline. Both fail with
//! `StoreError::Timeout`; afterwards the store works again. The tests
//! assert errors and stored data, never durations.

use std::time::Duration;

use serde_json::json;
use stategraph_checkpoint_postgres::PostgresStore;
use stategraph_checkpoint_postgres::sqlx::{self, PgPool};
use stategraph_core::ErrorKind;
use stategraph_store::{Store, StoreError};

use crate::common::{self, Schema, proxy::Proxy};

/// The statement timeout of these tests: short, so they stay quick.
const LIMIT: Duration = Duration::from_millis(300);

/// Fails a test body that has not finished after a minute (each needs a
/// few seconds), so a hang fails the test instead of stalling the run.
async fn guarded(body: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), body)
        .await
        .expect("the test hung: a batch was not bounded by its time limit");
}

/// Checks `err` is the store's timeout of `operation` after `limit`.
fn assert_timeout(err: &StoreError, operation: &str, limit: Duration) {
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    match err {
        StoreError::Timeout {
            store,
            operation: op,
            limit: reached,
            ..
        } => {
            assert_eq!(*store, "PostgresStore");
            assert_eq!(*op, operation, "{err}");
            assert_eq!(*reached, limit, "{err}");
        }
        other => panic!("expected StoreError::Timeout, got {other:?}"),
    }
}

/// Locks the row of item `key` in `namespace` (one label) in an open
/// transaction of `pool`, until the returned transaction ends.
async fn lock_item(
    pool: &PgPool,
    namespace: &str,
    key: &str,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    let locked = sqlx::query(
        "SELECT 1 FROM stategraph_store_items WHERE namespace = $1 AND key = $2 FOR UPDATE",
    )
    .bind(namespace.as_bytes())
    .bind(key.as_bytes())
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    assert_eq!(locked.len(), 1, "the item exists");
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_waiting_for_a_row_lock_is_cancelled_by_the_server() {
    let Some(url) = common::url("a_put_waiting_for_a_row_lock_is_cancelled_by_the_server") else {
        return;
    };
    guarded(async {
        let schema = Schema::create(&url).await;
        let store =
            PostgresStore::from_pool(schema.pool(2, None).await).with_statement_timeout(LIMIT);
        store.setup().await.unwrap();
        store.put(&["notes"], "k", json!({"v": 1})).await.unwrap();

        let blocker = schema.pool(1, None).await;
        let held = lock_item(&blocker, "notes", "k").await;
        let err = store
            .put(&["notes"], "k", json!({"v": 2}))
            .await
            .unwrap_err();
        assert_timeout(&err, "batch", LIMIT);
        let code = std::error::Error::source(&err)
            .and_then(|source| source.downcast_ref::<sqlx::Error>())
            .and_then(|source| match source {
                sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
                _ => None,
            });
        assert_eq!(
            code.as_deref(),
            Some("57014"),
            "cancelled by the server: {err}"
        );
        held.rollback().await.unwrap();

        store.put(&["notes"], "k", json!({"v": 2})).await.unwrap();
        let item = store.get(&["notes"], "k").await.unwrap().unwrap();
        assert_eq!(item.value["v"], json!(2));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_times_out_and_the_store_recovers() {
    let Some(url) = common::url("a_silent_connection_times_out_and_the_store_recovers") else {
        return;
    };
    guarded(async {
        let schema = Schema::create(&url).await;
        let proxy = Proxy::start(&schema.options()).await;
        // One connection: a timed-out one kept by the pool would starve it.
        let pool = schema.pool_with(proxy.options(schema.options()), 1).await;
        let store = PostgresStore::from_pool(pool).with_statement_timeout(LIMIT);
        store.setup().await.unwrap();
        store.put(&["notes"], "k", json!({"v": 1})).await.unwrap();

        // Silent once the new value (bound as JSON text) reached the
        // server, before its answer and before `COMMIT`.
        common::wait_until_idle(store.pool()).await;
        proxy.silence_after(br#"{"v":2}"#);
        let err = store
            .put(&["notes"], "k", json!({"v": 2}))
            .await
            .unwrap_err();
        assert_timeout(&err, "batch", LIMIT);
        assert!(
            err.to_string()
                .contains("may or may not have been committed"),
            "{err}"
        );
        // Still silent: a new connection's handshake gets no answer.
        let err = store.get(&["notes"], "k").await.unwrap_err();
        assert_timeout(&err, "batch", LIMIT);
        assert_eq!(
            store.pool().size(),
            0,
            "timed-out connections are closed, not returned to the pool"
        );

        proxy.resume();
        let item = store.get(&["notes"], "k").await.unwrap().unwrap();
        assert_eq!(
            item.value["v"],
            json!(1),
            "the abandoned put did not commit"
        );
        store.put(&["notes"], "k", json!({"v": 2})).await.unwrap();
        let item = store.get(&["notes"], "k").await.unwrap().unwrap();
        assert_eq!(item.value["v"], json!(2));
    })
    .await;
}
