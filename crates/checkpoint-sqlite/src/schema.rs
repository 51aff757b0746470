//! Connection settings and the versioned, idempotent migrations.
//!
//! Every migration runs in its own `BEGIN IMMEDIATE` transaction together
//! with its row in `stategraph_migrations`, after re-checking inside that
//! transaction that no other connection (or process) applied it first. A
//! crash therefore leaves a migration either fully applied and recorded or
//! not at all, concurrent `setup()` calls queue on SQLite's write lock, and
//! every statement is `IF NOT EXISTS` so a database whose version table was
//! dropped migrates again without error.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use stategraph_checkpoint::Result;

use crate::error::{MigrationChecksumError, SchemaTooNewError, backend, sqlite_in};

/// How long a connection waits for another connection's lock before SQLite
/// reports `SQLITE_BUSY`.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The migrations, in order; migration `i` has version `i + 1`. Append only:
/// a shipped migration never changes (its checksum is recorded).
const MIGRATIONS: &[&str] = &[
    // 1: checkpoint documents (channel values live in `blobs`) and their metadata.
    "CREATE TABLE IF NOT EXISTS checkpoints (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        checkpoint TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    );
    CREATE INDEX IF NOT EXISTS checkpoints_thread_newest
        ON checkpoints (thread_id, checkpoint_id, checkpoint_ns);
    CREATE INDEX IF NOT EXISTS checkpoints_newest
        ON checkpoints (checkpoint_id, thread_id, checkpoint_ns);",
    // 2: channel values, stored once per (thread, namespace, channel, version).
    "CREATE TABLE IF NOT EXISTS blobs (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        channel TEXT NOT NULL,
        version TEXT NOT NULL,
        tag TEXT NOT NULL,
        bytes BLOB,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    );",
    // 3: pending writes. No foreign key: writes may arrive before their checkpoint.
    "CREATE TABLE IF NOT EXISTS writes (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        tag TEXT NOT NULL,
        bytes BLOB,
        task_path TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    );",
    // 4: the long-term memory store (`SqliteStore`). Namespaces are their
    // labels joined with `.` (labels cannot contain `.`); times are
    // nanoseconds since the Unix epoch; vectors are little-endian f32
    // blobs, deleted explicitly with their item (no foreign key, so nothing
    // depends on the `foreign_keys` pragma).
    "CREATE TABLE IF NOT EXISTS store_items (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        ttl_minutes REAL,
        expires_at INTEGER,
        PRIMARY KEY (namespace, key)
    );
    CREATE INDEX IF NOT EXISTS store_items_expires_at
        ON store_items (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE IF NOT EXISTS store_vectors (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        embedding BLOB NOT NULL,
        PRIMARY KEY (namespace, key, idx)
    );",
    // 5: large strings cut out of stored values, once per thread
    // (`stategraph_checkpoint::pieces`); `id` is the SHA-256 of `bytes`.
    "CREATE TABLE IF NOT EXISTS pieces (
        thread_id TEXT NOT NULL,
        id BLOB NOT NULL,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, id)
    );",
];

/// The schema version this build writes and reads.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The size a write-ahead log is cut back to once its content is in the
/// database: one large write no longer leaves a log as large as itself on
/// disk for good.
const WAL_SIZE_LIMIT: i64 = 16 << 20;

/// Applies the settings every connection gets: the busy timeout (first, so
/// that the other statements wait for locks too), a statement cache, the
/// log's size limit and, with the `sqlite-vec` feature, sqlite-vec's
/// functions.
pub(crate) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    #[cfg(feature = "sqlite-vec")]
    crate::vec::register(conn)?;
    Ok(())
}

/// Puts a file database into WAL mode with `synchronous = NORMAL`, which in
/// WAL mode is durable against crashes of the process (a power loss may
/// lose the last transactions, never corrupt the file).
///
/// WAL is a property of the file: once set, every later connection uses it.
pub(crate) fn enable_wal(conn: &Connection) -> Result<()> {
    // Switching the journal mode needs a moment of exclusive access; when
    // other processes open the same fresh file at once, SQLite can answer
    // SQLITE_BUSY without calling the busy handler, so retry a bounded time.
    //
    // The mode SQLite answers is not checked: file systems without shared
    // memory (some network mounts) cannot use WAL, and SQLite then keeps its
    // rollback journal, which is slower but equally correct with
    // `BEGIN IMMEDIATE` writes.
    crate::pool::retry_busy(|| {
        conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        })
        .map_err(sqlite_in("open"))
    })?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite_in("open"))
}

/// Brings the schema to [`SCHEMA_VERSION`]; a no-op when it is there.
///
/// # Errors
/// [`SchemaTooNewError`] or [`MigrationChecksumError`] (as the source of a
/// backend error) when the database does not match this build, or a SQLite
/// error.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    crate::pool::retry_busy(|| {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS stategraph_migrations (
                v INTEGER PRIMARY KEY,
                checksum TEXT NOT NULL,
                applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
            )",
        )
        .map_err(sqlite_in("setup"))
    })?;
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let version = i64::try_from(index).unwrap_or(i64::MAX).saturating_add(1);
        crate::pool::retry_busy(|| apply(conn, version, sql))?;
    }
    // Refuse a database a newer build migrated further: its data may not
    // mean what this build thinks.
    let found: Option<i64> = conn
        .query_row("SELECT max(v) FROM stategraph_migrations", [], |row| {
            row.get(0)
        })
        .map_err(sqlite_in("setup"))?;
    match found {
        Some(found) if found > SCHEMA_VERSION => Err(backend(
            "setup",
            SchemaTooNewError {
                found,
                supported: SCHEMA_VERSION,
            },
        )),
        _ => Ok(()),
    }
}

/// Applies migration `version` unless it is recorded, in one transaction.
fn apply(conn: &mut Connection, version: i64, sql: &str) -> Result<()> {
    let expected = checksum(sql);
    // Fast path without the write lock: already applied by someone.
    if let Some(found) = recorded(conn, version)? {
        return verify(version, found, expected);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite_in("setup"))?;
    // Re-check under the write lock: another connection may have won.
    if let Some(found) = recorded(&tx, version)? {
        return verify(version, found, expected);
    }
    tx.execute_batch(sql).map_err(sqlite_in("setup"))?;
    tx.execute(
        "INSERT INTO stategraph_migrations (v, checksum) VALUES (?1, ?2)",
        rusqlite::params![version, expected],
    )
    .map_err(sqlite_in("setup"))?;
    tx.commit().map_err(sqlite_in("setup"))
}

fn recorded(conn: &Connection, version: i64) -> Result<Option<String>> {
    conn.query_row(
        "SELECT checksum FROM stategraph_migrations WHERE v = ?1",
        [version],
        |row| row.get(0),
    )
    .optional()
    .map_err(sqlite_in("setup"))
}

fn verify(version: i64, found: String, expected: String) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        Err(backend(
            "setup",
            MigrationChecksumError {
                version,
                found,
                expected,
            },
        ))
    }
}

/// A stable checksum of a migration's text (64-bit FNV-1a, hex).
fn checksum(sql: &str) -> String {
    let hash = sql.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        conn
    }

    fn versions(conn: &Connection) -> Vec<i64> {
        let mut stmt = conn
            .prepare("SELECT v FROM stategraph_migrations ORDER BY v")
            .unwrap();
        stmt.query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn migrate_twice_is_a_no_op() {
        let mut conn = memory();
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(versions(&conn), (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    }

    #[test]
    fn migrate_after_dropping_the_version_table_succeeds() {
        let mut conn = memory();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, checkpoint) VALUES ('t', 'c', '{}');
             DROP TABLE stategraph_migrations;",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(versions(&conn), (1..=SCHEMA_VERSION).collect::<Vec<_>>());
        let kept: i64 = conn
            .query_row("SELECT count(*) FROM checkpoints", [], |row| row.get(0))
            .unwrap();
        assert_eq!(kept, 1, "re-running the migrations keeps the data");
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let mut conn = memory();
        migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO stategraph_migrations (v, checksum) VALUES (?1, 'future')",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.to_string().contains("newer") || err.to_string().contains("only knows"));
        let stategraph_checkpoint::Error::Backend { source, .. } = err else {
            panic!("expected a backend error, got {err:?}");
        };
        assert_eq!(
            source.downcast_ref::<SchemaTooNewError>(),
            Some(&SchemaTooNewError {
                found: SCHEMA_VERSION + 1,
                supported: SCHEMA_VERSION
            })
        );
    }

    #[test]
    fn a_changed_migration_is_refused() {
        let mut conn = memory();
        migrate(&mut conn).unwrap();
        conn.execute(
            "UPDATE stategraph_migrations SET checksum = 'edited' WHERE v = 2",
            [],
        )
        .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.to_string().contains("migration 2"), "{err}");
    }

    #[test]
    fn checksums_are_stable() {
        // FNV-1a test vectors.
        assert_eq!(checksum(""), "cbf29ce484222325");
        assert_eq!(checksum("a"), "af63dc4c8601ec8c");
    }
}
