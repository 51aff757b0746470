//! The baseline of the `checkpoint_postgres_*` benchmarks (feature `_bench`,
//! not a public API): the same rows the saver writes, inserted with plain
//! sqlx (cached prepared statements, one transaction per checkpoint, no
//! retry, no parent check); the latest checkpoint read back with the
//! saver's query, its JSON parsed into `serde_json::Value`s; and a scratch
//! schema for the benchmark.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Connection, PgConnection, Row};
use stategraph_checkpoint::{Error, Result};

use crate::PostgresSaver;
use crate::error::backend;

/// A uniquely named schema, dropped (with everything in it) when this value
/// is dropped.
#[derive(Debug)]
pub struct ScratchSchema {
    url: String,
    name: String,
}

impl ScratchSchema {
    /// Creates a schema on the server at `url`.
    ///
    /// # Errors
    /// A backend error when the server fails.
    pub async fn create(url: &str) -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("sg_bench_{}_{nanos}", std::process::id());
        let mut conn = PgConnection::connect(url)
            .await
            .map_err(|err| backend("bench", None, err))?;
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .execute(&mut conn)
            .await
            .map_err(|err| backend("bench", None, err))?;
        Ok(Self {
            url: url.to_owned(),
            name,
        })
    }

    /// A pool of `connections` whose `search_path` is this schema.
    ///
    /// # Errors
    /// A backend error when the server fails.
    pub async fn pool(&self, connections: u32) -> Result<PgPool> {
        let options = PgConnectOptions::from_str(&self.url)
            .map_err(|err| Error::InvalidInput {
                operation: "bench",
                message: err.to_string(),
            })?
            .options([("search_path", self.name.as_str())]);
        PostgresSaver::pool_options()
            .max_connections(connections)
            .connect_with(options)
            .await
            .map_err(|err| backend("bench", None, err))
    }
}

impl Drop for ScratchSchema {
    fn drop(&mut self) {
        let url = self.url.clone();
        let drop = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        // May run inside a runtime, which cannot be blocked on: drop from a
        // thread with its own runtime, and wait for it.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&url).await.ok()?;
                sqlx::raw_sql(AssertSqlSafe(drop))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        });
        let _ = cleanup.join();
    }
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
    pub document: &'a serde_json::Value,
    /// The metadata (JSON).
    pub metadata: &'a serde_json::Value,
    /// Channels, versions and JSON bytes of the changed channels.
    pub channels: &'a [String],
    /// See `channels`.
    pub versions: &'a [String],
    /// See `channels`.
    pub values: &'a [Vec<u8>],
}

/// Inserts pre-serialized checkpoint rows into the saver's tables.
#[derive(Debug, Clone)]
pub struct RawWriter {
    pool: PgPool,
}

impl RawWriter {
    /// A writer on `pool` (whose schema `PostgresSaver::setup` created).
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Inserts one checkpoint row and its blobs in one transaction: the
    /// blobs in one multi-row statement, then the checkpoint.
    ///
    /// # Errors
    /// A backend error when the server fails.
    pub async fn put(&self, row: &RawCheckpoint<'_>) -> Result<()> {
        let fail = |err| backend("bench", None, err);
        let mut tx = self.pool.begin().await.map_err(fail)?;
        sqlx::query(
            "INSERT INTO stategraph_checkpoint_blobs \
                 (thread_id, checkpoint_ns, channel, version, tag, value) \
             SELECT $1, '', b.channel, b.version, 'json', b.value \
             FROM UNNEST($2::text[], $3::text[], $4::bytea[]) AS b(channel, version, value)",
        )
        .bind(row.thread_id)
        .bind(row.channels)
        .bind(row.versions)
        .bind(row.values)
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        sqlx::query(
            "INSERT INTO stategraph_checkpoints \
                 (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata) \
             VALUES ($1, '', $2, $3, $4, $5)",
        )
        .bind(row.thread_id)
        .bind(row.checkpoint_id)
        .bind(row.parent)
        .bind(Json(row.document))
        .bind(Json(row.metadata))
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)
    }

    /// Inserts one task's writes (channel, JSON bytes) on a checkpoint in
    /// one multi-row statement (cached prepared, no transaction, no
    /// conflict clause), indexes from 0.
    ///
    /// # Errors
    /// A backend error when the server fails (a write already stored
    /// included).
    pub async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        task_id: &str,
        channels: &[String],
        values: &[Vec<u8>],
    ) -> Result<()> {
        let indexes: Vec<i64> = (0..channels.len())
            .map(|idx| i64::try_from(idx).unwrap_or(i64::MAX))
            .collect();
        sqlx::query(
            "INSERT INTO stategraph_checkpoint_writes \
                 (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, tag, value) \
             SELECT $1, '', $2, $3, '', w.idx, w.channel, 'json', w.value \
             FROM UNNEST($4::bigint[], $5::text[], $6::bytea[]) AS w(idx, channel, value)",
        )
        .bind(thread_id)
        .bind(checkpoint_id)
        .bind(task_id)
        .bind(indexes)
        .bind(channels)
        .bind(values)
        .execute(&self.pool)
        .await
        .map_err(|err| backend("bench", None, err))?;
        Ok(())
    }

    /// Reads the `limit` newest checkpoints of a thread (root namespace),
    /// newest first, with the saver's one-statement query (cached prepared
    /// statement): their rows, the blob of each channel version, their
    /// writes. Returns each one's document, metadata, channel values and
    /// writes, parsed.
    ///
    /// # Errors
    /// A backend error when the server fails or a stored value is not JSON.
    pub async fn latest(&self, thread_id: &str, limit: usize) -> Result<Vec<RawTuple>> {
        let fail = |err| backend("bench", None, err);
        let sql = format!(
            "{} AND c.thread_id = $1 AND c.checkpoint_ns = '' \
             ORDER BY c.checkpoint_id DESC LIMIT $2",
            crate::sql::SELECT_TUPLES
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(thread_id)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(fail)?;
        let parse = |bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|err| Error::InvalidInput {
                operation: "bench",
                message: err.to_string(),
            })
        };
        let mut tuples = Vec::with_capacity(rows.len());
        for row in rows {
            let Json(document): Json<serde_json::Value> =
                row.try_get("checkpoint").map_err(fail)?;
            let Json(metadata): Json<serde_json::Value> = row.try_get("metadata").map_err(fail)?;
            let arrays = |name: &str| -> Result<Vec<String>> {
                Ok(row
                    .try_get::<Option<Vec<String>>, _>(name)
                    .map_err(fail)?
                    .unwrap_or_default())
            };
            let bytes = |name: &str| -> Result<Vec<Vec<u8>>> {
                Ok(row
                    .try_get::<Option<Vec<Vec<u8>>>, _>(name)
                    .map_err(fail)?
                    .unwrap_or_default())
            };
            let mut values = Vec::new();
            for (channel, blob) in arrays("blob_channels")?
                .into_iter()
                .zip(bytes("blob_values")?)
            {
                values.push((channel, parse(&blob)?));
            }
            let mut writes = Vec::new();
            let write_keys = arrays("write_tasks")?
                .into_iter()
                .zip(arrays("write_channels")?);
            for ((task_id, channel), blob) in write_keys.zip(bytes("write_values")?) {
                writes.push((task_id, channel, parse(&blob)?));
            }
            tuples.push(RawTuple {
                document,
                metadata,
                values,
                writes,
            });
        }
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

/// The baseline of the `store_postgres_*` benchmarks: the item rows
/// `PostgresStore` writes, with plain sqlx (cached prepared statements, no
/// retry, no plan, no TTL or vector handling), and the reads done the
/// obvious way: a lookup by key, and a filtered search in SQL.
#[derive(Debug, Clone)]
pub struct RawStore {
    pool: PgPool,
}

impl RawStore {
    /// A store on `pool` (whose schema `PostgresStore::setup` created).
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Upserts `items` (joined namespace, key, JSON text) in one multi-row
    /// statement (created_at kept on conflict).
    ///
    /// # Errors
    /// A backend error when the server fails.
    pub async fn put_many(&self, items: &[(String, String, String)], now_nanos: i64) -> Result<()> {
        let (mut namespaces, mut keys, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for (namespace, key, value) in items {
            namespaces.push(namespace.as_bytes());
            keys.push(key.as_bytes());
            values.push(value.as_str());
        }
        sqlx::query(
            "INSERT INTO stategraph_store_items \
                 (namespace, key, value, created_at, updated_at) \
             SELECT u.namespace, u.key, u.value, $4, $4 \
             FROM UNNEST($1::bytea[], $2::bytea[], $3::text[]) AS u(namespace, key, value) \
             ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, \
                 updated_at = EXCLUDED.updated_at",
        )
        .bind(namespaces)
        .bind(keys)
        .bind(values)
        .bind(now_nanos)
        .execute(&self.pool)
        .await
        .map_err(|err| backend("bench", None, err))?;
        Ok(())
    }

    /// The value of one item, parsed.
    ///
    /// # Errors
    /// A backend error when the server fails or the value is not JSON.
    pub async fn get(&self, namespace: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let row = sqlx::query(
            "SELECT value FROM stategraph_store_items WHERE namespace = $1 AND key = $2",
        )
        .bind(namespace.as_bytes())
        .bind(key.as_bytes())
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| backend("bench", None, err))?;
        row.map(|row| {
            let text: String = row.try_get(0).map_err(|err| backend("bench", None, err))?;
            parse_json(&text)
        })
        .transpose()
    }

    /// The first `limit` items under `prefix` (in namespace, key order)
    /// whose value has `field` equal to `text` and `number_field` at least
    /// `min`, parsed.
    ///
    /// # Errors
    /// A backend error when the server fails or a value is not JSON.
    pub async fn search_eq_gte(
        &self,
        prefix: &str,
        (field, text): (&str, &str),
        (number_field, min): (&str, f64),
        limit: i64,
    ) -> Result<Vec<serde_json::Value>> {
        let (low, high) = (format!("{prefix}."), format!("{prefix}/"));
        let rows = sqlx::query(
            "SELECT value FROM stategraph_store_items \
             WHERE (namespace = $1 OR (namespace >= $2 AND namespace < $3)) \
             AND value::jsonb ->> $4 = $5 AND (value::jsonb ->> $6)::float8 >= $7 \
             ORDER BY namespace, key LIMIT $8",
        )
        .bind(prefix.as_bytes())
        .bind(low.as_bytes())
        .bind(high.as_bytes())
        .bind(field)
        .bind(text)
        .bind(number_field)
        .bind(min)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(|err| backend("bench", None, err))?;
        rows.iter()
            .map(|row| {
                let text: String = row.try_get(0).map_err(|err| backend("bench", None, err))?;
                parse_json(&text)
            })
            .collect()
    }
}

/// A stored JSON text, parsed.
fn parse_json(text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|err| Error::InvalidInput {
        operation: "bench",
        message: format!("stored JSON does not parse: {err}"),
    })
}
