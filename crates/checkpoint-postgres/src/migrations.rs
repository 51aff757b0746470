//! Versioned, idempotent schema migrations.
//!
//! Each migration runs in its own transaction together with the row that
//! records it in `stategraph_checkpoint_migrations`, while that transaction
//! holds a database-wide advisory lock: concurrent `setup()` calls (several
//! processes starting at once) queue on the lock, and each one re-reads the
//! applied versions after getting it, so every migration runs exactly once.
//! Every statement is idempotent (`IF NOT EXISTS`), so a run after the
//! version table was dropped, or after a crash, completes too. No statement
//! builds an index `CONCURRENTLY`: that cannot run inside a transaction (the
//! LangGraph saver's `setup()` fails for exactly this reason inside a
//! caller's transaction). The tables are created empty, so a plain index
//! build costs nothing; a future index on a large existing table would need
//! its own non-transactional step.

use sqlx::{Connection, PgConnection, Row};
use stategraph_checkpoint::{Error, Result};

use crate::error::backend;

/// The key of the advisory lock that serialises `setup()` ("stgpckpt").
pub(crate) const SETUP_LOCK: i64 = 0x7374_6770_636b_7074;

/// `(version, statements)`, in order. Append only: never edit or renumber a
/// released migration.
pub(crate) const MIGRATIONS: &[(i32, &[&str])] = &[
    (
        1,
        &[r#"CREATE TABLE IF NOT EXISTS stategraph_checkpoints (
            thread_id TEXT COLLATE "C" NOT NULL,
            checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
            checkpoint_id TEXT COLLATE "C" NOT NULL,
            parent_checkpoint_id TEXT COLLATE "C",
            checkpoint JSONB NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}',
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        )"#],
    ),
    (
        2,
        &[r#"CREATE TABLE IF NOT EXISTS stategraph_checkpoint_blobs (
            thread_id TEXT COLLATE "C" NOT NULL,
            checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
            channel TEXT COLLATE "C" NOT NULL,
            version TEXT COLLATE "C" NOT NULL,
            tag TEXT NOT NULL,
            value BYTEA,
            PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
        )"#],
    ),
    (
        3,
        &[r#"CREATE TABLE IF NOT EXISTS stategraph_checkpoint_writes (
            thread_id TEXT COLLATE "C" NOT NULL,
            checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
            checkpoint_id TEXT COLLATE "C" NOT NULL,
            task_id TEXT COLLATE "C" NOT NULL,
            idx BIGINT NOT NULL,
            channel TEXT COLLATE "C" NOT NULL,
            tag TEXT NOT NULL,
            value BYTEA NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        )"#],
    ),
    (
        4,
        // Lists a thread across namespaces newest first (the primary key
        // serves one namespace).
        &[
            "CREATE INDEX IF NOT EXISTS stategraph_checkpoints_thread_id_idx \
           ON stategraph_checkpoints (thread_id, checkpoint_id, checkpoint_ns)",
        ],
    ),
    (
        5,
        // The long-term memory store (`PostgresStore`). Namespaces (labels
        // joined with `.`) and keys are UTF-8 bytes, so any string round
        // trips (TEXT refuses NUL) and order is byte order; the value is
        // JSON text, kept exactly as serialized (JSONB would rewrite
        // numbers); times are nanoseconds since the Unix epoch; vectors are
        // little-endian f32 bytes, deleted with their item by the foreign key.
        &[
            "CREATE TABLE IF NOT EXISTS stategraph_store_items (
                namespace BYTEA NOT NULL,
                key BYTEA NOT NULL,
                value TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                ttl_minutes DOUBLE PRECISION,
                expires_at BIGINT,
                PRIMARY KEY (namespace, key)
            )",
            "CREATE INDEX IF NOT EXISTS stategraph_store_items_expires_at_idx \
             ON stategraph_store_items (expires_at) WHERE expires_at IS NOT NULL",
            "CREATE TABLE IF NOT EXISTS stategraph_store_vectors (
                namespace BYTEA NOT NULL,
                key BYTEA NOT NULL,
                idx INTEGER NOT NULL,
                embedding BYTEA NOT NULL,
                PRIMARY KEY (namespace, key, idx),
                FOREIGN KEY (namespace, key)
                    REFERENCES stategraph_store_items (namespace, key) ON DELETE CASCADE
            )",
        ],
    ),
    (
        6,
        // Large strings cut out of stored values, once per thread
        // (`stategraph_checkpoint::pieces`); `id` is the SHA-256 of `value`.
        &[r#"CREATE TABLE IF NOT EXISTS stategraph_checkpoint_pieces (
            thread_id TEXT COLLATE "C" NOT NULL,
            id BYTEA NOT NULL,
            value BYTEA NOT NULL,
            PRIMARY KEY (thread_id, id)
        )"#],
    ),
];

/// The newest schema version this code knows.
pub(crate) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |(version, _)| *version)
}

const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS stategraph_checkpoint_migrations (
    v INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

/// What one locked pass over the version table did.
enum Pass {
    Applied,
    UpToDate,
}

/// Applies every missing migration, one transaction each.
pub(crate) async fn run(conn: &mut PgConnection) -> Result<()> {
    loop {
        match pass(conn)
            .await
            .map_err(|err| backend("setup", None, err))??
        {
            Pass::Applied => continue,
            Pass::UpToDate => return Ok(()),
        }
    }
}

/// Takes the lock, applies the first missing migration (if any) and commits.
async fn pass(conn: &mut PgConnection) -> Result<Result<Pass>, sqlx::Error> {
    let mut tx = conn.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(SETUP_LOCK)
        .persistent(false)
        .execute(&mut *tx)
        .await?;
    sqlx::query(CREATE_VERSION_TABLE)
        .persistent(false)
        .execute(&mut *tx)
        .await?;
    let applied: Vec<i32> =
        sqlx::query("SELECT v FROM stategraph_checkpoint_migrations ORDER BY v")
            .persistent(false)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|row| row.try_get::<i32, _>(0))
            .collect::<Result<_, _>>()?;
    if let Some(newest) = applied.last().filter(|v| **v > latest()) {
        return Ok(Err(Error::InvalidInput {
            operation: "setup",
            message: format!(
                "the database schema is at version {newest}, newer than version {} of this \
                 stategraph-checkpoint-postgres: upgrade the library",
                latest()
            ),
        }));
    }
    let Some((version, statements)) = MIGRATIONS
        .iter()
        .find(|(version, _)| applied.binary_search(version).is_err())
    else {
        tx.commit().await?;
        return Ok(Ok(Pass::UpToDate));
    };
    for statement in *statements {
        sqlx::query(*statement)
            .persistent(false)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("INSERT INTO stategraph_checkpoint_migrations (v) VALUES ($1)")
        .bind(version)
        .persistent(false)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::debug!(version, "stategraph-checkpoint-postgres: applied migration");
    Ok(Ok(Pass::Applied))
}

/// The applied schema versions, ascending (empty before the first `setup()`).
pub(crate) async fn applied(conn: &mut PgConnection) -> Result<Vec<i32>, sqlx::Error> {
    let exists: bool =
        sqlx::query_scalar("SELECT to_regclass('stategraph_checkpoint_migrations') IS NOT NULL")
            .persistent(false)
            .fetch_one(&mut *conn)
            .await?;
    if !exists {
        return Ok(Vec::new());
    }
    sqlx::query_scalar("SELECT v FROM stategraph_checkpoint_migrations ORDER BY v")
        .persistent(false)
        .fetch_all(&mut *conn)
        .await
}
