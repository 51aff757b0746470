//! The baseline of the `checkpoint_sqlite_*` benchmarks (feature `_bench`,
//! not a public API): the same rows the saver writes, inserted with plain
//! rusqlite on the calling thread, one transaction per checkpoint, with no
//! async hop, no head or parent check and no statement beyond the inserts;
//! and the latest checkpoint read back with the saver's statements, its JSON
//! parsed into `serde_json::Value`s.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use stategraph_checkpoint::Result;

use crate::error::sqlite_in;
use crate::schema;

/// A connection that inserts pre-serialized checkpoint rows.
#[derive(Debug)]
pub struct RawWriter {
    conn: Connection,
}

/// One checkpoint's rows, already serialized.
#[derive(Debug, Clone)]
pub struct RawCheckpoint<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The checkpoint id.
    pub checkpoint_id: &'a str,
    /// The parent checkpoint id.
    pub parent: Option<&'a str>,
    /// The checkpoint document (JSON without values).
    pub document: &'a str,
    /// The metadata (JSON).
    pub metadata: &'a str,
    /// (channel, version, JSON bytes) of the changed channels.
    pub blobs: &'a [(String, String, Vec<u8>)],
}

impl RawWriter {
    /// Opens a database file with the saver's settings and schema.
    ///
    /// # Errors
    /// A backend error when SQLite fails.
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path).map_err(sqlite_in("open"))?;
        schema::configure(&conn).map_err(sqlite_in("open"))?;
        schema::enable_wal(&conn)?;
        schema::migrate(&mut conn)?;
        Ok(Self { conn })
    }

    /// Inserts one checkpoint row and its blobs in one transaction.
    ///
    /// # Errors
    /// A backend error when SQLite fails.
    pub fn put(&mut self, row: &RawCheckpoint<'_>) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite_in("put"))?;
        tx.prepare_cached(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,
                 parent_checkpoint_id, checkpoint, metadata)
             VALUES (?1, '', ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                row.thread_id,
                row.checkpoint_id,
                row.parent,
                row.document,
                row.metadata
            ])
        })
        .map_err(sqlite_in("put"))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO blobs (thread_id, checkpoint_ns, channel, version, tag, bytes)
                     VALUES (?1, '', ?2, ?3, 'json', ?4)",
                )
                .map_err(sqlite_in("put"))?;
            for (channel, version, bytes) in row.blobs {
                stmt.execute(params![row.thread_id, channel, version, bytes])
                    .map_err(sqlite_in("put"))?;
            }
        }
        tx.commit().map_err(sqlite_in("put"))
    }

    /// Inserts one task's writes (channel, JSON bytes) on a checkpoint in
    /// one transaction, indexes from 0.
    ///
    /// # Errors
    /// A backend error when SQLite fails (a write already stored included).
    pub fn put_writes(
        &mut self,
        thread_id: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: &[(String, Vec<u8>)],
    ) -> Result<()> {
        let op = "put_writes";
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite_in(op))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                         channel, tag, bytes, task_path)
                     VALUES (?1, '', ?2, ?3, ?4, ?5, 'json', ?6, '')",
                )
                .map_err(sqlite_in(op))?;
            for (idx, (channel, bytes)) in writes.iter().enumerate() {
                let idx = i64::try_from(idx).unwrap_or(i64::MAX);
                stmt.execute(params![
                    thread_id,
                    checkpoint_id,
                    task_id,
                    idx,
                    channel,
                    bytes
                ])
                .map_err(sqlite_in(op))?;
            }
        }
        tx.commit().map_err(sqlite_in(op))
    }

    /// Reads the `limit` newest checkpoints of a thread (root namespace),
    /// newest first, in one transaction: their rows, the blob of each
    /// channel version, their writes. Returns each one's document, metadata,
    /// channel values and writes, parsed.
    ///
    /// # Errors
    /// A backend error when SQLite fails or a stored JSON text is invalid.
    pub fn latest(&self, thread_id: &str, limit: usize) -> Result<Vec<RawTuple>> {
        let op = "latest";
        let fail = |err| sqlite_in(op)(err);
        let parse = |text: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(text).map_err(|err| {
                stategraph_checkpoint::Error::InvalidInput {
                    operation: op,
                    message: err.to_string(),
                }
            })
        };
        let tx = self.conn.unchecked_transaction().map_err(&fail)?;
        let rows: Vec<(String, String, String)> = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT checkpoint_id, checkpoint, metadata FROM checkpoints
                     WHERE thread_id = ?1 AND checkpoint_ns = ''
                     ORDER BY checkpoint_id DESC LIMIT ?2",
                )
                .map_err(&fail)?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            stmt.query_map(params![thread_id, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .and_then(Iterator::collect)
            .map_err(&fail)?
        };
        let mut blob_stmt = tx
            .prepare_cached(
                "SELECT bytes FROM blobs
                 WHERE thread_id = ?1 AND checkpoint_ns = '' AND channel = ?2 AND version = ?3",
            )
            .map_err(&fail)?;
        let mut write_stmt = tx
            .prepare_cached(
                "SELECT task_id, channel, bytes FROM writes
                 WHERE thread_id = ?1 AND checkpoint_ns = '' AND checkpoint_id = ?2
                 ORDER BY task_id, idx",
            )
            .map_err(&fail)?;
        let mut tuples = Vec::with_capacity(rows.len());
        for (checkpoint_id, document, metadata) in rows {
            let document = parse(document.as_bytes())?;
            let metadata = parse(metadata.as_bytes())?;
            let mut values = Vec::new();
            let versions = document["channel_versions"]
                .as_object()
                .into_iter()
                .flatten();
            for (channel, version) in versions {
                let version = version.as_str().unwrap_or_default();
                let bytes: Option<Vec<u8>> = blob_stmt
                    .query_row(params![thread_id, channel, version], |r| r.get(0))
                    .optional()
                    .map_err(&fail)?;
                if let Some(bytes) = bytes {
                    values.push((channel.clone(), parse(&bytes)?));
                }
            }
            let mut writes = Vec::new();
            let rows = write_stmt
                .query_map(params![thread_id, checkpoint_id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                    ))
                })
                .map_err(&fail)?;
            for item in rows {
                let (task_id, channel, bytes) = item.map_err(&fail)?;
                writes.push((task_id, channel, parse(&bytes)?));
            }
            tuples.push(RawTuple {
                document,
                metadata,
                values,
                writes,
            });
        }
        drop((blob_stmt, write_stmt));
        tx.commit().map_err(&fail)?;
        Ok(tuples)
    }
}

/// A checkpoint read back by [`RawWriter::latest`].
#[derive(Debug, Clone)]
pub struct RawTuple {
    /// The checkpoint document (without values).
    pub document: serde_json::Value,
    /// The metadata.
    pub metadata: serde_json::Value,
    /// (channel, value) of every channel with a stored blob.
    pub values: Vec<(String, serde_json::Value)>,
    /// (task id, channel, value) of the pending writes.
    pub writes: Vec<(String, String, serde_json::Value)>,
}

/// The baseline of the `store_sqlite_*` benchmarks: the rows `SqliteStore`
/// writes, with plain rusqlite on the calling thread (no async hop, no
/// plan, no TTL or vector handling), and the reads done the obvious way:
/// a lookup by key, and a filtered search in SQL with `json_extract`.
#[derive(Debug)]
pub struct RawStore {
    conn: Connection,
}

/// An item as [`RawStore`] writes it: the joined namespace, the key and the
/// value as JSON text.
pub type RawItem = (String, String, String);

impl RawStore {
    /// Opens a database file with the store's settings and schema.
    ///
    /// # Errors
    /// A backend error when SQLite fails.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            conn: RawWriter::open(path)?.conn,
        })
    }

    /// Upserts `items` in one transaction (created_at kept on conflict).
    ///
    /// # Errors
    /// A backend error when SQLite fails.
    pub fn put_many(&mut self, items: &[RawItem], now_nanos: i64) -> Result<()> {
        let fail = |err| sqlite_in("store put")(err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&fail)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO store_items (namespace, key, value, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (namespace, key) DO UPDATE SET \
                     value = excluded.value, updated_at = excluded.updated_at",
                )
                .map_err(&fail)?;
            for (namespace, key, value) in items {
                insert
                    .execute(params![namespace, key, value, now_nanos])
                    .map_err(&fail)?;
            }
        }
        tx.commit().map_err(&fail)
    }

    /// The value of one item, parsed.
    ///
    /// # Errors
    /// A backend error when SQLite fails or the value is not JSON.
    pub fn get(&self, namespace: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let fail = |err| sqlite_in("store get")(err);
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT value FROM store_items WHERE namespace = ?1 AND key = ?2")
            .map_err(&fail)?
            .query_row(params![namespace, key], |row| row.get(0))
            .optional()
            .map_err(&fail)?;
        text.map(|text| parse_json("store get", &text)).transpose()
    }

    /// The first `limit` items under `prefix` (in namespace, key order)
    /// whose value has `field` equal to `text` and `number_field` at least
    /// `min`, parsed.
    ///
    /// # Errors
    /// A backend error when SQLite fails or a value is not JSON.
    pub fn search_eq_gte(
        &self,
        prefix: &str,
        (field, text): (&str, &str),
        (number_field, min): (&str, f64),
        limit: i64,
    ) -> Result<Vec<serde_json::Value>> {
        let fail = |err| sqlite_in("store search")(err);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT value FROM store_items \
                 WHERE (namespace = ?1 OR (namespace >= ?1 || '.' AND namespace < ?1 || '/')) \
                 AND json_extract(value, '$.' || ?2) = ?3 \
                 AND json_extract(value, '$.' || ?4) >= ?5 \
                 ORDER BY namespace, key LIMIT ?6",
            )
            .map_err(&fail)?;
        let rows = stmt
            .query_map(
                params![prefix, field, text, number_field, min, limit],
                |row| row.get::<_, String>(0),
            )
            .map_err(&fail)?;
        let mut found = Vec::new();
        for text in rows {
            found.push(parse_json("store search", &text.map_err(&fail)?)?);
        }
        Ok(found)
    }
}

/// A stored JSON text, parsed.
fn parse_json(operation: &'static str, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|err| stategraph_checkpoint::Error::InvalidInput {
        operation,
        message: format!("stored JSON does not parse: {err}"),
    })
}
