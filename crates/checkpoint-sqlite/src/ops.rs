//! The saver's operations as blocking functions on one connection.
//!
//! Writers open `BEGIN IMMEDIATE` transactions: the write lock is taken (with
//! the busy timeout) before anything is read, so a transaction never has to
//! upgrade a read lock, which SQLite would refuse with `SQLITE_BUSY` without
//! waiting. Readers open deferred transactions so that a checkpoint, its
//! values and its writes come from one snapshot.

use std::collections::{BTreeMap, HashSet};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Savepoint, params};
use stategraph_checkpoint::pieces::{self, PIECED_TAG, PieceId, Stored};
use stategraph_checkpoint::serde::{JsonSerializer, Serializer};
use stategraph_checkpoint::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointId, CheckpointMetadata,
    CheckpointTuple, DecodedValues, Error, ListQuery, MetadataFilter, PendingWrite, PruneStrategy,
    Result, Value, write_index,
};

use crate::error::{CorruptRowError, backend, in_operation, sqlite_in};

/// The tag of a blob that records a version without a value (the channel
/// was cleared). The serializer never writes it.
const EMPTY_TAG: &str = "empty";

/// The checkpoint columns every read selects, in [`StoredRow`] order.
const ROW_COLUMNS: &str =
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata";

/// A checkpoint ready to be stored: everything serialized, nothing borrowed.
pub(crate) struct PutRequest {
    thread_id: String,
    checkpoint_ns: String,
    checkpoint_id: String,
    parent: Option<String>,
    document: String,
    metadata: String,
    /// (channel, version, value); `None` records the version without a value.
    blobs: Vec<(String, String, Option<Stored>)>,
    require_head: bool,
}

impl PutRequest {
    /// Serializes a checkpoint for [`put`]. The channel values go to blobs
    /// (only those of `new_versions`); the document keeps everything else.
    pub(crate) fn new(
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: &ChannelVersions,
        require_head: bool,
    ) -> Result<Self> {
        let operation = operation(require_head);
        let mut blobs = Vec::with_capacity(new_versions.len());
        for (channel, version) in new_versions {
            let encoded = match checkpoint.channel_values.get(channel) {
                Some(value) => Some(Stored::new(
                    JsonSerializer
                        .dumps(channel, value)
                        .map_err(|err| in_operation(operation, err))?,
                )),
                None => None,
            };
            blobs.push((channel.clone(), version.to_string(), encoded));
        }
        checkpoint.channel_values.clear();
        let document = serde_json::to_string(&checkpoint).map_err(|err| backend(operation, err))?;
        let metadata =
            serde_json::to_string(&metadata.sanitized()).map_err(|err| backend(operation, err))?;
        Ok(Self {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
            checkpoint_id: checkpoint.id.as_str().to_owned(),
            parent: config
                .checkpoint_id
                .as_ref()
                .map(|id| id.as_str().to_owned()),
            document,
            metadata,
            blobs,
            require_head,
        })
    }

    /// The address the checkpoint is stored at.
    pub(crate) fn address(&self) -> CheckpointConfig {
        CheckpointConfig {
            thread_id: self.thread_id.clone(),
            checkpoint_ns: self.checkpoint_ns.clone(),
            checkpoint_id: Some(CheckpointId::from(self.checkpoint_id.as_str())),
        }
    }
}

fn operation(require_head: bool) -> &'static str {
    if require_head { "put_if_head" } else { "put" }
}

/// Stores a checkpoint and its new blobs in one transaction, checking the
/// head first for `put_if_head`.
pub(crate) fn put(conn: &mut Connection, req: &PutRequest) -> Result<()> {
    let op = operation(req.require_head);
    let tx = immediate(conn, op)?;
    if req.require_head {
        let head: Option<String> = tx
            .prepare_cached(
                "SELECT checkpoint_id FROM checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2
                 ORDER BY checkpoint_id DESC LIMIT 1",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![req.thread_id, req.checkpoint_ns], |row| row.get(0))
                    .optional()
            })
            .map_err(sqlite_in(op))?;
        if head != req.parent {
            return Err(Error::Conflict {
                operation: op,
                thread_id: req.thread_id.clone(),
                message: format!(
                    "the parent {:?} is not the head {:?} of namespace {:?}",
                    req.parent, head, req.checkpoint_ns
                ),
            });
        }
    }
    let existing: Option<Option<String>> = tx
        .prepare_cached(
            "SELECT parent_checkpoint_id FROM checkpoints
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_row(
                params![req.thread_id, req.checkpoint_ns, req.checkpoint_id],
                |row| row.get(0),
            )
            .optional()
        })
        .map_err(sqlite_in(op))?;
    if let Some(existing) = existing
        && existing != req.parent
    {
        return Err(Error::Conflict {
            operation: op,
            thread_id: req.thread_id.clone(),
            message: format!(
                "checkpoint {} is already stored with parent {existing:?}, not {:?}",
                req.checkpoint_id, req.parent
            ),
        });
    }
    tx.prepare_cached(
        "INSERT INTO checkpoints
             (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
         DO UPDATE SET checkpoint = excluded.checkpoint, metadata = excluded.metadata",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            req.thread_id,
            req.checkpoint_ns,
            req.checkpoint_id,
            req.parent,
            req.document,
            req.metadata
        ])
    })
    .map_err(sqlite_in(op))?;
    if !req.blobs.is_empty() {
        // A version is written once: history stays immutable even if a
        // caller reuses a version for another value.
        let mut stmt = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs
                     (thread_id, checkpoint_ns, channel, version, tag, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(sqlite_in(op))?;
        for (channel, version, stored) in &req.blobs {
            let (tag, bytes) = match stored {
                Some(stored) => (stored.tag(), Some(stored.bytes())),
                None => (EMPTY_TAG, None),
            };
            stmt.execute(params![
                req.thread_id,
                req.checkpoint_ns,
                channel,
                version,
                tag,
                bytes
            ])
            .map_err(sqlite_in(op))?;
        }
        put_pieces(&tx, &req.thread_id, req.blobs.iter().flat_map(|b| &b.2), op)?;
    }
    tx.commit().map_err(sqlite_in(op))
}

/// Stores the pieces of `values` for `thread_id`, each once.
fn put_pieces<'a>(
    tx: &Connection,
    thread_id: &str,
    values: impl Iterator<Item = &'a Stored>,
    op: &'static str,
) -> Result<()> {
    let mut seen = HashSet::new();
    for (id, bytes) in values.flat_map(Stored::pieces) {
        if seen.insert(*id) {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO pieces (thread_id, id, bytes) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut stmt| stmt.execute(params![thread_id, &id.as_bytes()[..], bytes]))
            .map_err(sqlite_in(op))?;
        }
    }
    Ok(())
}

/// Writes of one task, ready to be stored.
pub(crate) struct WritesRequest {
    thread_id: String,
    checkpoint_ns: String,
    checkpoint_id: String,
    task_id: String,
    task_path: String,
    /// (index, channel, value).
    writes: Vec<(i64, String, Stored)>,
}

impl WritesRequest {
    /// Serializes the writes for [`put_writes`].
    pub(crate) fn new(
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> Result<Self> {
        let Some(checkpoint_id) = &config.checkpoint_id else {
            return Err(Error::InvalidInput {
                operation: "put_writes",
                message: format!(
                    "config for thread {:?} names no checkpoint_id",
                    config.thread_id
                ),
            });
        };
        let writes = writes
            .into_iter()
            .enumerate()
            .map(|(position, (channel, value))| {
                let encoded = JsonSerializer
                    .dumps(&channel, &value)
                    .map_err(|err| in_operation("put_writes", err))?;
                Ok((
                    write_index(&channel, position),
                    channel,
                    Stored::new(encoded),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
            checkpoint_id: checkpoint_id.as_str().to_owned(),
            task_id: task_id.to_owned(),
            task_path: task_path.to_owned(),
            writes,
        })
    }

    /// Whether there is nothing to store.
    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
}

/// Stores writes in one transaction, decided per write: an ordinary write
/// (index ≥ 0) keeps the first row of its key, a special write (negative
/// index) replaces it.
pub(crate) fn put_writes(conn: &mut Connection, req: &WritesRequest) -> Result<()> {
    let op = "put_writes";
    let tx = immediate(conn, op)?;
    {
        let mut first_wins = tx
            .prepare_cached(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                     channel, tag, bytes, task_path)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING",
            )
            .map_err(sqlite_in(op))?;
        let mut last_wins = tx
            .prepare_cached(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                     channel, tag, bytes, task_path)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
                 DO UPDATE SET channel = excluded.channel, tag = excluded.tag,
                               bytes = excluded.bytes, task_path = excluded.task_path",
            )
            .map_err(sqlite_in(op))?;
        for (idx, channel, stored) in &req.writes {
            let stmt = if *idx >= 0 {
                &mut first_wins
            } else {
                &mut last_wins
            };
            stmt.execute(params![
                req.thread_id,
                req.checkpoint_ns,
                req.checkpoint_id,
                req.task_id,
                idx,
                channel,
                stored.tag(),
                stored.bytes(),
                req.task_path
            ])
            .map_err(sqlite_in(op))?;
        }
        put_pieces(&tx, &req.thread_id, req.writes.iter().map(|w| &w.2), op)?;
    }
    tx.commit().map_err(sqlite_in(op))
}

/// One row of `checkpoints`, undecoded.
struct StoredRow {
    thread_id: String,
    checkpoint_ns: String,
    checkpoint_id: String,
    parent: Option<String>,
    document: String,
    metadata: String,
}

impl StoredRow {
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            thread_id: row.get(0)?,
            checkpoint_ns: row.get(1)?,
            checkpoint_id: row.get(2)?,
            parent: row.get(3)?,
            document: row.get(4)?,
            metadata: row.get(5)?,
        })
    }

    fn corrupt(&self, what: &'static str, source: serde_json::Error) -> CorruptRowError {
        CorruptRowError {
            what,
            thread_id: self.thread_id.clone(),
            checkpoint_id: self.checkpoint_id.clone(),
            source,
        }
    }

    fn metadata(&self, op: &'static str) -> Result<CheckpointMetadata> {
        serde_json::from_str(&self.metadata)
            .map_err(|err| backend(op, self.corrupt("metadata", err)))
    }
}

/// Fetches one checkpoint (the latest of the namespace without an id).
pub(crate) fn get_tuple(
    conn: &Connection,
    config: &CheckpointConfig,
) -> Result<Option<CheckpointTuple>> {
    let op = "get_tuple";
    let tx = conn.unchecked_transaction().map_err(sqlite_in(op))?;
    let row = match &config.checkpoint_id {
        Some(id) => tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(
                    params![config.thread_id, config.checkpoint_ns, id.as_str()],
                    StoredRow::from_row,
                )
                .optional()
            }),
        None => tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2
                 ORDER BY checkpoint_id DESC LIMIT 1"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(
                    params![config.thread_id, config.checkpoint_ns],
                    StoredRow::from_row,
                )
                .optional()
            }),
    }
    .map_err(sqlite_in(op))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let metadata = row.metadata(op)?;
    let tuple = assemble(&tx, row, metadata, None, op)?;
    tx.commit().map_err(sqlite_in(op))?;
    Ok(Some(tuple))
}

/// Builds the tuple of a row: decodes the document, reads the blobs of its
/// channel versions (from `cache` when a checkpoint read before it decoded
/// them) and its pending writes.
fn assemble(
    conn: &Connection,
    row: StoredRow,
    metadata: CheckpointMetadata,
    mut cache: Option<&mut DecodedValues>,
    op: &'static str,
) -> Result<CheckpointTuple> {
    let mut checkpoint: Checkpoint = serde_json::from_str(&row.document)
        .map_err(|err| backend(op, row.corrupt("checkpoint", err)))?;
    let mut values = BTreeMap::new();
    {
        let mut stmt = conn
            .prepare_cached(
                "SELECT tag, bytes FROM blobs
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version = ?4",
            )
            .map_err(sqlite_in(op))?;
        for (channel, version) in &checkpoint.channel_versions {
            let (thread_id, ns) = (&row.thread_id, &row.checkpoint_ns);
            let read = || {
                let blob: Option<(String, Option<Vec<u8>>)> = stmt
                    .query_row(params![thread_id, ns, channel, version.to_string()], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()
                    .map_err(sqlite_in(op))?;
                // No row at all is data loss; a row tagged `empty` is a cleared channel.
                let Some((tag, bytes)) = blob else {
                    return Err(Error::Integrity {
                        operation: op,
                        thread_id: thread_id.clone(),
                        checkpoint_ns: ns.clone(),
                        checkpoint_id: CheckpointId::from(row.checkpoint_id.as_str()),
                        channel: channel.clone(),
                        version: *version,
                    });
                };
                decode(conn, thread_id, channel, &tag, bytes.as_deref(), op)
            };
            let cache = cache.as_deref_mut();
            if let Some(value) =
                DecodedValues::get_or_decode(cache, thread_id, ns, channel, *version, read)?
            {
                values.insert(channel.clone(), value);
            }
        }
    }
    checkpoint.channel_values = values;
    let pending_writes = {
        let mut stmt = conn
            .prepare_cached(
                "SELECT task_id, channel, tag, bytes FROM writes
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3
                 ORDER BY task_id, idx",
            )
            .map_err(sqlite_in(op))?;
        let rows = stmt
            .query_map(
                params![row.thread_id, row.checkpoint_ns, row.checkpoint_id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<Vec<u8>>>(3)?,
                    ))
                },
            )
            .map_err(sqlite_in(op))?;
        let mut writes = Vec::new();
        for item in rows {
            let (task_id, channel, tag, bytes) = item.map_err(sqlite_in(op))?;
            let value = decode(conn, &row.thread_id, &channel, &tag, bytes.as_deref(), op)?
                .unwrap_or_else(Value::null);
            writes.push(PendingWrite {
                task_id,
                channel,
                value,
            });
        }
        writes
    };
    let address = |checkpoint_id: String| CheckpointConfig {
        thread_id: row.thread_id.clone(),
        checkpoint_ns: row.checkpoint_ns.clone(),
        checkpoint_id: Some(CheckpointId::from(checkpoint_id)),
    };
    let parent_config = row.parent.clone().map(address);
    Ok(CheckpointTuple::new(
        address(row.checkpoint_id.clone()),
        checkpoint,
        metadata,
        parent_config,
        pending_writes,
    ))
}

/// Decodes a stored value of `thread_id` (`None`: a cleared channel),
/// joining a skeleton with its pieces first.
fn decode(
    conn: &Connection,
    thread_id: &str,
    channel: &str,
    tag: &str,
    bytes: Option<&[u8]>,
    op: &'static str,
) -> Result<Option<Value>> {
    if tag == EMPTY_TAG {
        return Ok(None);
    }
    let bytes = bytes.unwrap_or_default();
    let value = if tag == PIECED_TAG {
        let mut stmt = conn
            .prepare_cached("SELECT bytes FROM pieces WHERE thread_id = ?1 AND id = ?2")
            .map_err(sqlite_in(op))?;
        let joined = pieces::join(bytes, |id| {
            stmt.query_row(params![thread_id, &id.as_bytes()[..]], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .optional()
            .map_err(sqlite_in(op))
        })?
        .map_err(|source| Error::Piece {
            operation: op,
            thread_id: thread_id.to_owned(),
            channel: channel.to_owned(),
            source,
        })?;
        JsonSerializer.loads(channel, JsonSerializer::TAG, &joined)
    } else {
        JsonSerializer.loads(channel, tag, bytes)
    };
    value.map(Some).map_err(|err| in_operation(op, err))
}

/// Where a listing stopped: the sort key of the last row examined.
#[derive(Clone, Debug)]
pub(crate) struct ListCursor {
    checkpoint_id: String,
    thread_id: String,
    checkpoint_ns: String,
}

/// One page of a listing.
pub(crate) struct Page {
    /// The matching checkpoints, newest first; an `Err` in place of a
    /// checkpoint that cannot be read.
    pub(crate) items: Vec<Result<CheckpointTuple>>,
    /// Where the next page starts (`None` when nothing was examined).
    pub(crate) cursor: Option<ListCursor>,
    /// Whether no rows remain after this page.
    pub(crate) exhausted: bool,
}

/// Reads at most `rows` checkpoints after `cursor` in listing order
/// (descending id, then thread, then namespace), keeps those `filter`
/// matches, and stops early once it has `want` items. SQL only narrows by
/// thread, namespace, id and `before`; the filter runs here, on the decoded
/// metadata, so it means exactly what it means for every other saver.
///
/// A row that cannot be read (its metadata, document, values or writes) is
/// an `Err` item of its own and counts as a match: the page goes on with the
/// next row. Only a failure of the page's own query fails the page.
pub(crate) fn list_page(
    conn: &Connection,
    query: &ListQuery,
    filter: &MetadataFilter,
    cursor: Option<&ListCursor>,
    rows: usize,
    want: usize,
) -> Result<Page> {
    let op = "list";
    let (sql, args) = list_sql(query, cursor, rows);
    let tx = conn.unchecked_transaction().map_err(sqlite_in(op))?;
    let fetched: Vec<StoredRow> = {
        let mut stmt = tx.prepare_cached(&sql).map_err(sqlite_in(op))?;
        stmt.query_map(rusqlite::params_from_iter(args), StoredRow::from_row)
            .and_then(|rows| rows.collect())
            .map_err(sqlite_in(op))?
    };
    let total = fetched.len();
    let mut cache = DecodedValues::default();
    let mut page = Page {
        items: Vec::new(),
        cursor: None,
        exhausted: total < rows,
    };
    for (examined, row) in fetched.into_iter().enumerate() {
        page.cursor = Some(ListCursor {
            checkpoint_id: row.checkpoint_id.clone(),
            thread_id: row.thread_id.clone(),
            checkpoint_ns: row.checkpoint_ns.clone(),
        });
        let item = match row.metadata(op) {
            Ok(metadata) if filter.matches(&metadata) => {
                assemble(&tx, row, metadata, Some(&mut cache), op)
            }
            Ok(_) => continue,
            // Unreadable metadata cannot be filtered: report the row.
            Err(err) => Err(err),
        };
        page.items.push(item);
        if page.items.len() >= want {
            // Rows after this one are still unexamined.
            page.exhausted = page.exhausted && examined + 1 == total;
            break;
        }
    }
    tx.commit().map_err(sqlite_in(op))?;
    Ok(page)
}

/// The statement of one listing page and its arguments.
fn list_sql(
    query: &ListQuery,
    cursor: Option<&ListCursor>,
    rows: usize,
) -> (String, Vec<SqlValue>) {
    let mut conditions: Vec<String> = Vec::new();
    let mut args: Vec<SqlValue> = Vec::new();
    // The sort key, minus the columns fixed by an equality.
    let mut order: Vec<&str> = vec!["checkpoint_id"];
    if let Some(thread_id) = &query.thread_id {
        conditions.push("thread_id = ?".into());
        args.push(SqlValue::Text(thread_id.clone()));
    } else {
        order.push("thread_id");
    }
    if let Some(ns) = &query.checkpoint_ns {
        conditions.push("checkpoint_ns = ?".into());
        args.push(SqlValue::Text(ns.clone()));
    } else {
        order.push("checkpoint_ns");
    }
    if let Some(id) = &query.checkpoint_id {
        conditions.push("checkpoint_id = ?".into());
        args.push(SqlValue::Text(id.as_str().to_owned()));
    }
    // Past the first page the cursor is below `before` already; leaving
    // `before` out lets SQLite seek straight to the cursor.
    if let Some(before) = query.before.as_ref().filter(|_| cursor.is_none()) {
        conditions.push("checkpoint_id < ?".into());
        args.push(SqlValue::Text(before.as_str().to_owned()));
    }
    if let Some(cursor) = cursor {
        let placeholders = vec!["?"; order.len()].join(", ");
        conditions.push(format!("({}) < ({placeholders})", order.join(", ")));
        for column in &order {
            let value = match *column {
                "checkpoint_id" => &cursor.checkpoint_id,
                "thread_id" => &cursor.thread_id,
                _ => &cursor.checkpoint_ns,
            };
            args.push(SqlValue::Text(value.clone()));
        }
    }
    let mut sql = format!("SELECT {ROW_COLUMNS} FROM checkpoints");
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY ");
    sql.push_str(
        &order
            .iter()
            .map(|column| format!("{column} DESC"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    sql.push_str(" LIMIT ?");
    args.push(SqlValue::Integer(i64::try_from(rows).unwrap_or(i64::MAX)));

    (sql, args)
}

/// Deletes a thread: every namespace, checkpoint, blob and write.
pub(crate) fn delete_thread(conn: &mut Connection, thread_id: &str) -> Result<()> {
    let op = "delete_thread";
    let tx = immediate(conn, op)?;
    remove_thread(&tx, thread_id, op)?;
    tx.commit().map_err(sqlite_in(op))
}

fn remove_thread(tx: &Connection, thread_id: &str, op: &'static str) -> Result<()> {
    for sql in [
        "DELETE FROM writes WHERE thread_id = ?1",
        "DELETE FROM blobs WHERE thread_id = ?1",
        "DELETE FROM pieces WHERE thread_id = ?1",
        "DELETE FROM checkpoints WHERE thread_id = ?1",
    ] {
        tx.prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute([thread_id]))
            .map_err(sqlite_in(op))?;
    }
    Ok(())
}

/// Deletes the checkpoints whose metadata `run_id` is listed, their writes
/// and the blobs nothing references any more, in one transaction.
pub(crate) fn delete_for_runs(conn: &mut Connection, run_ids: &[String]) -> Result<()> {
    let op = "delete_for_runs";
    if run_ids.is_empty() {
        return Ok(());
    }
    let runs = serde_json::to_string(run_ids).map_err(|err| backend(op, err))?;
    let tx = immediate(conn, op)?;
    let threads: Vec<String> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT DISTINCT thread_id FROM checkpoints
                 WHERE json_extract(metadata, '$.run_id') IN (SELECT value FROM json_each(?1))",
            )
            .map_err(sqlite_in(op))?;
        stmt.query_map([&runs], |row| row.get(0))
            .and_then(|rows| rows.collect())
            .map_err(sqlite_in(op))?
    };
    for thread_id in &threads {
        for sql in [
            "DELETE FROM writes WHERE thread_id = ?2 AND EXISTS (
                 SELECT 1 FROM checkpoints c
                 WHERE c.thread_id = writes.thread_id
                   AND c.checkpoint_ns = writes.checkpoint_ns
                   AND c.checkpoint_id = writes.checkpoint_id
                   AND json_extract(c.metadata, '$.run_id') IN (SELECT value FROM json_each(?1)))",
            "DELETE FROM checkpoints WHERE thread_id = ?2
                 AND json_extract(metadata, '$.run_id') IN (SELECT value FROM json_each(?1))",
        ] {
            tx.prepare_cached(sql)
                .and_then(|mut stmt| stmt.execute(params![runs, thread_id]))
                .map_err(sqlite_in(op))?;
        }
        collect_garbage(&tx, thread_id, op)?;
    }
    tx.commit().map_err(sqlite_in(op))
}

/// Copies every checkpoint, blob and write of `source` to `target`, keeping
/// ids, in one transaction.
pub(crate) fn copy_thread(conn: &mut Connection, source: &str, target: &str) -> Result<()> {
    let op = "copy_thread";
    if source == target {
        return Ok(());
    }
    let tx = immediate(conn, op)?;
    for sql in [
        "INSERT INTO checkpoints
             (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
         SELECT ?2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata
         FROM checkpoints WHERE thread_id = ?1
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
             parent_checkpoint_id = excluded.parent_checkpoint_id,
             checkpoint = excluded.checkpoint, metadata = excluded.metadata",
        "INSERT OR IGNORE INTO blobs (thread_id, checkpoint_ns, channel, version, tag, bytes)
         SELECT ?2, checkpoint_ns, channel, version, tag, bytes
         FROM blobs WHERE thread_id = ?1",
        "INSERT OR IGNORE INTO pieces (thread_id, id, bytes)
         SELECT ?2, id, bytes FROM pieces WHERE thread_id = ?1",
        "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                             channel, tag, bytes, task_path)
         SELECT ?2, checkpoint_ns, checkpoint_id, task_id, idx, channel, tag, bytes, task_path
         FROM writes WHERE thread_id = ?1
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
             channel = excluded.channel, tag = excluded.tag, bytes = excluded.bytes,
             task_path = excluded.task_path",
    ] {
        tx.prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute([source, target]))
            .map_err(sqlite_in(op))?;
    }
    tx.commit().map_err(sqlite_in(op))
}

/// Thins the threads, all in one transaction.
pub(crate) fn prune(
    conn: &mut Connection,
    thread_ids: &[String],
    strategy: PruneStrategy,
) -> Result<()> {
    let op = "prune";
    if thread_ids.is_empty() {
        return Ok(());
    }
    let tx = immediate(conn, op)?;
    for thread_id in thread_ids {
        match strategy {
            PruneStrategy::KeepLatest => {
                // Older than the newest checkpoint of its own namespace.
                for sql in [
                    "DELETE FROM writes WHERE thread_id = ?1 AND EXISTS (
                         SELECT 1 FROM checkpoints c
                         WHERE c.thread_id = writes.thread_id
                           AND c.checkpoint_ns = writes.checkpoint_ns
                           AND c.checkpoint_id = writes.checkpoint_id
                           AND c.checkpoint_id < (
                               SELECT max(m.checkpoint_id) FROM checkpoints m
                               WHERE m.thread_id = c.thread_id
                                 AND m.checkpoint_ns = c.checkpoint_ns))",
                    "DELETE FROM checkpoints WHERE thread_id = ?1 AND checkpoint_id < (
                         SELECT max(m.checkpoint_id) FROM checkpoints m
                         WHERE m.thread_id = checkpoints.thread_id
                           AND m.checkpoint_ns = checkpoints.checkpoint_ns)",
                ] {
                    tx.prepare_cached(sql)
                        .and_then(|mut stmt| stmt.execute([thread_id]))
                        .map_err(sqlite_in(op))?;
                }
                collect_garbage(&tx, thread_id, op)?;
            }
            PruneStrategy::Delete => remove_thread(&tx, thread_id, op)?,
            // `PruneStrategy` is non-exhaustive: refuse what this build does not know.
            _ => {
                return Err(Error::unsupported::<crate::SqliteSaver>(
                    "prune with this strategy",
                ));
            }
        }
    }
    tx.commit().map_err(sqlite_in(op))
}

/// Deletes the blobs of a thread that no remaining checkpoint of the thread
/// references (by namespace, channel and version), then the pieces no
/// remaining blob or write refers to.
fn collect_garbage(tx: &Connection, thread_id: &str, op: &'static str) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM blobs WHERE thread_id = ?1
           AND (checkpoint_ns, channel, version) NOT IN (
               SELECT c.checkpoint_ns, j.key, j.value
               FROM checkpoints c, json_each(c.checkpoint, '$.channel_versions') j
               WHERE c.thread_id = ?1)",
    )
    .and_then(|mut stmt| stmt.execute([thread_id]))
    .map_err(sqlite_in(op))?;
    let column = |sql: &str, args: &[&dyn rusqlite::ToSql]| -> Result<Vec<Vec<u8>>> {
        tx.prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_map(args, |r| r.get(0))?.collect())
            .map_err(sqlite_in(op))
    };
    let skeletons = column(
        "SELECT bytes FROM blobs WHERE thread_id = ?1 AND tag = ?2
         UNION ALL SELECT bytes FROM writes WHERE thread_id = ?1 AND tag = ?2",
        params![thread_id, PIECED_TAG],
    )?;
    let referenced: HashSet<PieceId> = skeletons
        .iter()
        .flat_map(|skeleton| pieces::references(skeleton))
        .collect();
    let stored = column(
        "SELECT id FROM pieces WHERE thread_id = ?1",
        params![thread_id],
    )?;
    let mut delete = tx
        .prepare_cached("DELETE FROM pieces WHERE thread_id = ?1 AND id = ?2")
        .map_err(sqlite_in(op))?;
    for id in stored {
        if PieceId::from_slice(&id).is_none_or(|id| !referenced.contains(&id)) {
            delete
                .execute(params![thread_id, id])
                .map_err(sqlite_in(op))?;
        }
    }
    Ok(())
}

/// Opens a savepoint for the statements of one operation: the writer runs
/// every write inside its batch's `BEGIN IMMEDIATE` transaction
/// ([`crate::writer`]), and outside one (tests on a bare connection) the
/// savepoint is a transaction of its own.
fn immediate<'c>(conn: &'c mut Connection, op: &'static str) -> Result<Savepoint<'c>> {
    conn.savepoint().map_err(sqlite_in(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::configure(&conn).unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        conn
    }

    fn plan(conn: &Connection, sql: &str, args: Vec<SqlValue>) -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |row| {
                row.get::<_, String>(3)
            })
            .unwrap();
        rows.map(|row| row.unwrap()).collect::<Vec<_>>().join("; ")
    }

    fn cursor() -> ListCursor {
        ListCursor {
            checkpoint_id: "c".into(),
            thread_id: "t".into(),
            checkpoint_ns: "".into(),
        }
    }

    /// Every listing page is an index range scan in listing order: no page
    /// sorts (or reads) the whole history.
    #[test]
    fn listing_pages_use_an_index_in_order() {
        let conn = migrated();
        let queries = [
            ListQuery::thread("t").ns(""),
            ListQuery::thread("t"),
            ListQuery::all(),
            ListQuery::thread("t").ns("").before("b"),
            ListQuery::thread("t").before("b"),
            ListQuery::all().before("b"),
        ];
        for query in queries {
            for cursor in [None, Some(cursor())] {
                let (sql, args) = list_sql(&query, cursor.as_ref(), 64);
                let plan = plan(&conn, &sql, args);
                assert!(
                    !plan.contains("TEMP B-TREE"),
                    "{query:?} {cursor:?}: {plan}"
                );
                assert!(
                    plan.contains("USING INDEX") || plan.contains("USING PRIMARY KEY"),
                    "{query:?}: {plan}"
                );
                if cursor.is_some() {
                    // The seek starts at the cursor, whatever `before` says.
                    let seek = if query.thread_id.is_some() && query.checkpoint_ns.is_some() {
                        "checkpoint_id<?)"
                    } else {
                        ")<("
                    };
                    assert!(
                        plan.contains(seek),
                        "{query:?}: the cursor bounds the scan: {plan}"
                    );
                } else if query.before.is_some() {
                    assert!(
                        plan.contains("checkpoint_id<?"),
                        "{query:?}: a range scan: {plan}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_latest_checkpoint_is_one_index_probe() {
        let conn = migrated();
        let plan = plan(
            &conn,
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2
             ORDER BY checkpoint_id DESC LIMIT 1",
            vec![SqlValue::Text("t".into()), SqlValue::Text("".into())],
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(plan.contains("thread_id=? AND checkpoint_ns=?"), "{plan}");
    }
}
