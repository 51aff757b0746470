//! Time limits of `PostgresSaver` (issue 21, item 11): the server cancels a
//! statement that waits too long (`SET LOCAL statement_timeout`, also
//! through a transaction-mode pooler), and the client abandons an operation
//! whose connection went silent (a loopback proxy that stops forwarding
//! mid-query). Both fail with `ErrorKind::Timeout`; afterwards the saver
//! works again and the thread holds each checkpoint once or not at all.
//!
//! The tests assert errors and stored data, never durations. Each test
//! body runs under a generous guard, so a regression that hangs fails the
//! test instead of stalling the run.
//!
//! Each test needs `STATEGRAPH_TEST_POSTGRES_URL`; without it, it prints
//! one line and returns (`tests/conformance.rs` fails under CI in that
//! case).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use futures::TryStreamExt;
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver,
    CheckpointSource, Error, ListQuery, Value,
};
use stategraph_checkpoint_postgres::sqlx::{self, PgPool};
use stategraph_checkpoint_postgres::{DatabaseError, PostgresSaver};
use stategraph_core::ErrorKind;

use common::Schema;
use common::proxy::Proxy;

/// The statement timeout of these tests: short, so the suite stays quick.
const LIMIT: Duration = Duration::from_millis(300);

/// Fails a test body that has not finished after a minute (each one needs
/// a few seconds): a hang is a failure, not a stalled run.
async fn guarded(body: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), body)
        .await
        .expect("the test hung: an operation was not bounded by its time limit");
}

fn step(
    step: u64,
) -> (
    Checkpoint,
    CheckpointMetadata,
    stategraph_checkpoint::ChannelVersions,
) {
    let version = ChannelVersion::new(step + 1, 0);
    let checkpoint = Checkpoint::empty().with_channel("step", Value::new(step), version);
    let versions = checkpoint.channel_versions.clone();
    let metadata = CheckpointMetadata::new(CheckpointSource::Loop, i64::try_from(step).unwrap());
    (checkpoint, metadata, versions)
}

/// Extends the head `parent` with checkpoint `checkpoint` of step `n`.
async fn extend(
    saver: &PostgresSaver,
    parent: &CheckpointConfig,
    n: u64,
    checkpoint: Option<Checkpoint>,
) -> stategraph_checkpoint::Result<CheckpointConfig> {
    let (fresh, metadata, versions) = step(n);
    saver
        .put_if_head(parent, checkpoint.unwrap_or(fresh), metadata, versions)
        .await
}

/// The ids of the thread's checkpoints, newest first.
async fn history(saver: &PostgresSaver, tid: &str) -> Vec<CheckpointConfig> {
    let tuples: Vec<_> = saver
        .list(ListQuery::thread(tid))
        .try_collect()
        .await
        .unwrap();
    tuples.into_iter().map(|tuple| tuple.config).collect()
}

/// Checks `err` is the saver's timeout of `operation` after `limit`.
fn assert_timeout(err: &Error, operation: &str, limit: Duration) {
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    match err {
        Error::Timeout {
            operation: op,
            limit: reached,
            ..
        } => {
            assert_eq!(*op, operation, "{err}");
            assert_eq!(*reached, limit, "{err}");
        }
        other => panic!("expected Error::Timeout, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{operation} timed out after {limit:?}: ")),
        "{text}"
    );
}

/// The SQLSTATE of the database error under `err`, if there is one.
fn sqlstate(err: &Error) -> Option<String> {
    let source = std::error::Error::source(err)?.downcast_ref::<DatabaseError>()?;
    match source.sqlx() {
        sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
        _ => None,
    }
}

/// Holds the advisory lock `put_if_head` takes for `(thread, "")`, in an
/// open transaction of `pool`, until the returned transaction ends.
async fn hold_head_lock(pool: &PgPool, tid: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))")
        .bind(tid)
        .bind("")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// Waits until no backend reporting `application_name` holds an advisory
/// lock: connections the client closed while the proxy was silent end
/// once it forwards their close.
async fn wait_until_locks_released(admin: &PgPool, application_name: &str) {
    for _ in 0..400 {
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND a.application_name = $1",
        )
        .bind(application_name)
        .fetch_one(admin)
        .await
        .unwrap();
        if held == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("a closed connection still holds its advisory lock");
}

/// A `put_if_head` waiting for the thread's head lock, which another
/// session holds, is cancelled by the server once it has waited the
/// statement timeout: `Error::Timeout` over SQLSTATE 57014. The lock
/// released, the same checkpoint goes in, once.
async fn server_cancels_a_lock_wait(saver: &PostgresSaver, blocker: &PgPool) {
    let tid = uuid::Uuid::new_v4().to_string();
    let root = CheckpointConfig::thread(&tid);
    let first = extend(saver, &root, 0, None).await.unwrap();

    let held = hold_head_lock(blocker, &tid).await;
    let (second, _, _) = step(1);
    let err = extend(saver, &first, 1, Some(second.clone()))
        .await
        .unwrap_err();
    assert_timeout(&err, "put_if_head", LIMIT);
    assert_eq!(
        sqlstate(&err).as_deref(),
        Some("57014"),
        "the server cancelled the statement: {err}"
    );
    held.rollback().await.unwrap();

    let stored = extend(saver, &first, 1, Some(second)).await.unwrap();
    assert_eq!(history(saver, &tid).await, [stored, first]);
}

/// The statement timeout is set per transaction, so it holds with unnamed
/// and with named statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_a_lock_wait_on_the_server() {
    let Some(url) = common::url("statement_timeout_cancels_a_lock_wait_on_the_server") else {
        return;
    };
    guarded(async {
        let blocker = common::admin_pool(&url).await;
        for prepared in [false, true] {
            let schema = Schema::create(&url).await;
            let saver = PostgresSaver::from_pool(schema.pool(2, None).await)
                .with_prepared_statements(prepared)
                .with_statement_timeout(LIMIT);
            saver.setup().await.unwrap();
            server_cancels_a_lock_wait(&saver, &blocker).await;
        }
    })
    .await;
}

/// `SET LOCAL` reaches the server connection a transaction-mode pooler
/// (pgbouncer, `STATEGRAPH_TEST_PGBOUNCER_URL`) lends the transaction,
/// where a session `SET` would not be reliable. Without the pooler the
/// test passes with one line, except under CI, where it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_works_through_a_transaction_mode_pooler() {
    let Some(url) = common::url("statement_timeout_works_through_a_transaction_mode_pooler") else {
        return;
    };
    let ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false");
    let pooler = match std::env::var("STATEGRAPH_TEST_PGBOUNCER_URL") {
        Ok(pooler) if !pooler.is_empty() => pooler,
        _ => {
            assert!(
                !ci,
                "CI is set but STATEGRAPH_TEST_PGBOUNCER_URL is not: the pooler test would be skipped"
            );
            #[allow(clippy::print_stdout)]
            {
                println!(
                    "statement_timeout_works_through_a_transaction_mode_pooler: \
                     STATEGRAPH_TEST_PGBOUNCER_URL is unset, skipped"
                );
            }
            return;
        }
    };
    guarded(async {
        // The pooler's database is the server's `postgres` database, so a
        // direct session can hold the lock the pooled saver waits for.
        let blocker = common::admin_pool(&url).await;
        let saver = PostgresSaver::connect(&pooler)
            .await
            .unwrap()
            .with_statement_timeout(LIMIT);
        saver.setup().await.unwrap();
        server_cancels_a_lock_wait(&saver, &blocker).await;
    })
    .await;
}

/// A connection that goes silent (the proxy stops forwarding, sockets stay
/// open) is abandoned at the client's deadline, with `Error::Timeout`:
///
/// 1. mid-`put_if_head`, after the server got the insert but before its
///    answer (and before `COMMIT`): the checkpoint is not stored;
/// 2. while silent, a `get_tuple` and a `put` (a new connection whose
///    handshake gets no answer) time out too;
/// 3. every abandoned connection was closed, none went back to the pool;
/// 4. forwarding again, the saver works, and the thread holds exactly what
///    committed;
/// 5. silent right after `COMMIT` was delivered: the call times out, the
///    checkpoint is stored exactly once, and a writer that retries blindly
///    gets `Conflict` instead of forking the thread.
async fn silent_network(test: &str, prepared: bool) {
    let Some(url) = common::url(test) else {
        return;
    };
    let schema = Schema::create(&url).await;
    let admin = common::admin_pool(&url).await;
    let proxy = Proxy::start(&schema.options()).await;
    let name = format!("sg_silent_{}", uuid::Uuid::new_v4().simple());
    let options = proxy.options(schema.options()).application_name(&name);
    // One connection: a timed-out one kept by the pool would starve it.
    let saver = PostgresSaver::from_pool(schema.pool_with(options, 1).await)
        .with_prepared_statements(prepared)
        .with_statement_timeout(LIMIT);
    saver.setup().await.unwrap();

    let tid = uuid::Uuid::new_v4().to_string();
    let root = CheckpointConfig::thread(&tid);
    let first = extend(&saver, &root, 0, None).await.unwrap();
    let read = saver.get_tuple(&root).await.unwrap().unwrap();
    assert_eq!(read.config, first);

    // 1. The new checkpoint's id first travels in the insert statement.
    let (second, _, _) = step(1);
    common::wait_until_idle(saver.pool()).await;
    proxy.silence_after(second.id.as_str().as_bytes());
    let err = extend(&saver, &first, 1, Some(second.clone()))
        .await
        .unwrap_err();
    assert_timeout(&err, "put_if_head", LIMIT);
    assert!(
        err.to_string()
            .contains("may or may not have been committed"),
        "{err}"
    );

    // 2. Still silent.
    let err = saver.get_tuple(&root).await.unwrap_err();
    assert_timeout(&err, "get_tuple", LIMIT);
    let (other, metadata, versions) = step(1);
    let err = saver
        .put(&first, other, metadata, versions)
        .await
        .unwrap_err();
    assert_timeout(&err, "put", LIMIT);

    // 3.
    assert_eq!(
        saver.pool().size(),
        0,
        "timed-out connections are closed, not returned to the pool"
    );

    // 4.
    proxy.resume();
    wait_until_locks_released(&admin, &name).await;
    let read = saver.get_tuple(&root).await.unwrap().unwrap();
    assert_eq!(read.config, first, "the abandoned put did not commit");
    assert_eq!(history(&saver, &tid).await, std::slice::from_ref(&first));
    let stored = extend(&saver, &first, 1, Some(second)).await.unwrap();
    assert_eq!(history(&saver, &tid).await, [stored.clone(), first.clone()]);

    // 5.
    let (third, _, _) = step(2);
    common::wait_until_idle(saver.pool()).await;
    proxy.silence_after(b"COMMIT");
    let err = extend(&saver, &stored, 2, Some(third.clone()))
        .await
        .unwrap_err();
    assert_timeout(&err, "put_if_head", LIMIT);
    proxy.resume();
    wait_until_locks_released(&admin, &name).await;
    let head = saver.get_tuple(&root).await.unwrap().unwrap();
    assert_eq!(head.checkpoint.id, third.id, "the commit took effect");
    assert_eq!(
        history(&saver, &tid).await,
        [head.config.clone(), stored.clone(), first],
        "stored once"
    );
    let err = extend(&saver, &stored, 2, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");

    saver
        .put_writes(&head.config, vec![("out".into(), Value::new(2))], "t", "")
        .await
        .unwrap();
    let head = saver.get_tuple(&root).await.unwrap().unwrap();
    assert_eq!(head.pending_writes.len(), 1, "the saver works again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_times_out_and_the_saver_recovers() {
    guarded(silent_network(
        "a_silent_connection_times_out_and_the_saver_recovers",
        false,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_times_out_with_prepared_statements() {
    guarded(silent_network(
        "a_silent_connection_times_out_with_prepared_statements",
        true,
    ))
    .await;
}
