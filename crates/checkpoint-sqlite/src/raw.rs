//! The baseline of the `checkpoint_sqlite_*` benchmarks (feature `_bench`,
//! not a public API): the same rows the saver writes, inserted with plain
//! rusqlite on the calling thread, one transaction per checkpoint, with no
//! async hop, no head or parent check and no statement beyond the inserts.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior, params};
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
        schema::configure(&conn)?;
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
}
