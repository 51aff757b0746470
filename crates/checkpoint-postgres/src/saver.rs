//! `PostgresSaver`: the `CheckpointSaver` on a sqlx connection pool.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, Stream};
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{Arguments, AssertSqlSafe, Connection, PgConnection, Postgres, Row, Transaction};
use stategraph_checkpoint::pieces::{self, PIECED_TAG, PieceId, Stored};
use stategraph_checkpoint::serde::{JsonSerializer, Serializer};
use stategraph_checkpoint::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointId, CheckpointMetadata,
    CheckpointSaver, CheckpointTuple, DecodedValues, Error, ListQuery, MetadataFilter,
    PendingWrite, PruneStrategy, Result, SaverCapabilities, Value, limits, write_index,
};

use crate::attempt::{self, Failure, Lent, Limits, Stop};
use crate::error::{backend, corrupt, failed, unanswered};
use crate::migrations;
use crate::sql;

/// The `application_name` the saver's connections report when the URL sets
/// none (so `pg_stat_activity` shows whose connections they are).
pub const APPLICATION_NAME: &str = "stategraph-checkpoint-postgres";

/// A checkpoint saver that stores threads in PostgreSQL through a sqlx pool.
///
/// Every operation checks a connection out of the pool for one transaction
/// and returns it: there is no saver-wide lock, so threads never queue behind
/// each other, and no connection is held between operations (or across the
/// pages of a `list`). Clones share the pool.
///
/// - **Schema.** Call [`setup`](Self::setup) once per database (safe to call
///   from many processes at once, and again on every start).
/// - **Poolers.** By default every statement is sent as an *unnamed*
///   prepared statement inside an explicit transaction, so it works through
///   transaction-mode poolers (pgbouncer, Supavisor): nothing outlives the
///   transaction that uses it. See
///   [`with_prepared_statements`](Self::with_prepared_statements).
/// - **Lost connections.** The pool pings a connection before handing it
///   out and replaces dead ones; an operation that loses its connection
///   midway (server restart, `pg_terminate_backend`, idle timeout) is retried
///   whole on a fresh one, up to [`with_max_attempts`](Self::with_max_attempts)
///   times. Every operation is idempotent or runs in one transaction that
///   either committed or did not; `put_if_head` checks whether a commit whose
///   answer was lost took effect before retrying.
/// - **Time limits.** PostgreSQL cancels a statement that runs longer than
///   the statement timeout (30 s by default), and the saver gives up on an
///   operation that has no answer a second after that, closing its
///   connection, so a lock wait or a silent network cannot hang a call: see
///   [`with_statement_timeout`](Self::with_statement_timeout).
/// - **Values** are stored through a [`Serializer`] ([`JsonSerializer`] by
///   default), once per (thread, namespace, channel, version).
#[derive(Clone)]
pub struct PostgresSaver {
    pool: PgPool,
    serializer: Arc<dyn Serializer>,
    prepared: bool,
    page_size: usize,
    limits: Limits,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("pool_size", &self.pool.size())
            .field("serializer", &self.serializer)
            .field("prepared_statements", &self.prepared)
            .field("page_size", &self.page_size)
            .field("max_attempts", &self.limits.max_attempts)
            .field("statement_timeout", &self.limits.statement_timeout)
            .finish()
    }
}

/// The default pool ([`PostgresSaver::pool_options`]) on `options`, which
/// report [`APPLICATION_NAME`] unless they name an application.
pub(crate) async fn connect_pool(options: PgConnectOptions) -> Result<PgPool, sqlx::Error> {
    let options = if options.get_application_name().is_none() {
        options.application_name(APPLICATION_NAME)
    } else {
        options
    };
    PostgresSaver::pool_options().connect_with(options).await
}

impl From<Error> for Failure<Error> {
    fn from(err: Error) -> Self {
        Self::Final(err)
    }
}

/// The result of one attempt of a saver operation.
type Attempt<T> = attempt::Attempt<T, Error>;

impl PostgresSaver {
    /// The default number of attempts of an operation that loses its connection.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
    /// The default number of checkpoints `list` fetches per query.
    pub const DEFAULT_PAGE_SIZE: usize = 64;
    /// The default [statement timeout](Self::with_statement_timeout).
    pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
    /// How much longer than the statement timeout the saver waits for an
    /// operation before it gives up (see
    /// [`with_statement_timeout`](Self::with_statement_timeout)).
    pub const DEADLINE_GRACE: Duration = attempt::DEADLINE_GRACE;

    /// Connects to `url` (`postgres://user:password@host:port/database`) with
    /// the default pool (see [`pool_options`](Self::pool_options)).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a malformed URL, [`Error::Backend`] when
    /// no connection can be made.
    pub async fn connect(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url).map_err(|err| Error::InvalidInput {
            operation: "connect",
            message: format!("invalid PostgreSQL URL: {err}"),
        })?;
        Self::connect_with(options).await
    }

    /// Connects with explicit connection options and the default pool.
    ///
    /// # Errors
    /// [`Error::Backend`] when no connection can be made.
    pub async fn connect_with(options: PgConnectOptions) -> Result<Self> {
        let pool = connect_pool(options)
            .await
            .map_err(|err| backend("connect", None, err))?;
        Ok(Self::from_pool(pool))
    }

    /// The pool [`connect`](Self::connect) builds: at most 10 connections,
    /// each pinged before it is handed out (`test_before_acquire`) so a
    /// connection the server or a proxy closed is replaced, not used; idle
    /// connections closed after 5 minutes and every connection recycled
    /// after 30 (cloud proxies drop long-idle ones); 30 s to acquire.
    pub fn pool_options() -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(10)
            .test_before_acquire(true)
            .idle_timeout(Duration::from_secs(5 * 60))
            .max_lifetime(Duration::from_secs(30 * 60))
            .acquire_timeout(Duration::from_secs(30))
    }

    /// A saver on an existing pool. Keep sqlx's default
    /// `test_before_acquire(true)` on that pool so dead connections are
    /// replaced.
    pub fn from_pool(pool: PgPool) -> Self {
        Self {
            pool,
            serializer: Arc::new(JsonSerializer),
            prepared: false,
            page_size: Self::DEFAULT_PAGE_SIZE,
            limits: Limits {
                max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
                statement_timeout: Some(Self::DEFAULT_STATEMENT_TIMEOUT),
            },
        }
    }

    /// Stores values with `serializer` instead of [`JsonSerializer`]. Every
    /// saver on one database must use serializers that read each other's tags.
    #[must_use]
    pub fn with_serializer(mut self, serializer: impl Serializer) -> Self {
        self.serializer = Arc::new(serializer);
        self
    }

    /// Whether to use named, cached prepared statements (default `false`).
    ///
    /// `false` sends every statement unnamed inside an explicit transaction:
    /// it works through transaction-mode poolers, which hand each
    /// transaction a different server connection where a named statement
    /// prepared earlier does not exist ("prepared statement ... does not
    /// exist"), at the cost of one extra round trip per statement. `true`
    /// saves that round trip and the transaction around single statements;
    /// use it only with direct connections or a pooler that tracks prepared
    /// statements (pgbouncer >= 1.21 with `max_prepared_statements` set).
    #[must_use]
    pub fn with_prepared_statements(mut self, prepared: bool) -> Self {
        self.prepared = prepared;
        self
    }

    /// How many checkpoints `list` fetches per query (default 64, at least 1).
    /// Memory use of a listing is bounded by one page.
    #[must_use]
    pub fn with_list_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// How many times an operation is tried when it loses its connection
    /// (default 5, at least 1), with exponential backoff from 10 ms.
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.limits.max_attempts = attempts.max(1);
        self
    }

    /// Bounds every operation in time (default
    /// [`DEFAULT_STATEMENT_TIMEOUT`](Self::DEFAULT_STATEMENT_TIMEOUT), 30 s);
    /// `None` or [`Duration::ZERO`] turns both limits below off.
    ///
    /// - **On the server.** Every transaction begins with `SET LOCAL
    ///   statement_timeout`, sent in the same message as `BEGIN` (no extra
    ///   round trip), so PostgreSQL cancels a statement that runs longer,
    ///   waiting for a lock included. The setting ends with the
    ///   transaction: it works through transaction-mode poolers and never
    ///   reaches another session. A cancelled statement leaves its
    ///   connection usable. With
    ///   [`with_prepared_statements(true)`](Self::with_prepared_statements),
    ///   reads and single-statement writes run outside a transaction and
    ///   only the client limit applies to them (set `statement_timeout` on
    ///   the role or in the connection options to have the server cancel
    ///   those too).
    /// - **On the client.** An operation that has not finished
    ///   [`DEADLINE_GRACE`](Self::DEADLINE_GRACE) (1 s) after the timeout
    ///   (acquiring a connection, every statement and every retry
    ///   included) is abandoned, and its connection is closed, never
    ///   returned to the pool. This catches what the server cannot: a
    ///   connection that went silent (socket open, no bytes) mid-query or
    ///   while idle in the pool.
    ///
    /// Either way the operation fails with [`Error::Timeout`]
    /// ([`ErrorKind::Timeout`](stategraph_core::ErrorKind::Timeout)),
    /// naming the operation and the limit, and is not retried. A write
    /// abandoned by the client may or may not have committed (the error
    /// says so): read the thread again before deciding what to do. Each
    /// page of a `list` is one operation; [`setup`](Self::setup) is not
    /// bounded (a migration may take long on a large table).
    #[must_use]
    pub fn with_statement_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.limits.statement_timeout = Limits::statement_timeout(timeout.into());
        self
    }

    /// The pool the saver uses.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Creates or upgrades the tables in the connection's current schema
    /// (the first schema of its `search_path`).
    ///
    /// Safe to call concurrently from many processes and to call again:
    /// each migration runs once, in a transaction holding an advisory lock,
    /// with the row that records it in `stategraph_checkpoint_migrations`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the database was migrated by a newer
    /// version of this crate; [`Error::Backend`] when the database fails.
    pub async fn setup(&self) -> Result<()> {
        // Not bounded in time: a migration may rightly take long. Only
        // failing to get a connection is retried; a failed migration is
        // final.
        let limits = Limits {
            statement_timeout: None,
            ..self.limits
        };
        attempt::run(&self.pool, limits, "setup", false, |conn| {
            Box::pin(async move { Ok(migrations::run(conn).await) })
        })
        .await
        .map_err(|stop| self.stopped("setup", None, false, stop))?
    }

    /// The schema versions applied to the database, ascending (empty before
    /// the first [`setup`](Self::setup)).
    ///
    /// # Errors
    /// [`Error::Backend`] when the database fails.
    pub async fn schema_versions(&self) -> Result<Vec<i32>> {
        self.retry("schema_versions", None, false, |conn| {
            Box::pin(async move {
                let mut tx = self.begin(conn).await?;
                let versions = migrations::applied(&mut tx).await?;
                tx.commit().await?;
                Ok(versions)
            })
        })
        .await
    }

    /// The newest schema version this version of the crate creates.
    pub fn latest_schema_version() -> i32 {
        migrations::latest()
    }

    fn query(&self, sql: &'static str) -> sqlx::query::Query<'static, Postgres, PgArguments> {
        sqlx::query(sql).persistent(self.prepared)
    }

    /// Runs `attempt` on pooled connections while it fails transiently,
    /// within the operation's time limit (see [`attempt::run`]). `writes`:
    /// whether the operation changes the database (an abandoned write may
    /// have committed, and its error says so).
    async fn retry<'s, T>(
        &'s self,
        operation: &'static str,
        key: Option<&(dyn Fn() -> String + Sync)>,
        writes: bool,
        attempt: impl for<'c> FnMut(&'c mut Lent<'s>) -> BoxFuture<'c, Attempt<T>>,
    ) -> Result<T> {
        attempt::run(&self.pool, self.limits, operation, true, attempt)
            .await
            .map_err(|stop| self.stopped(operation, key.map(|key| key()), writes, stop))
    }

    /// The error of an operation that stopped without succeeding.
    fn stopped(
        &self,
        operation: &'static str,
        key: Option<String>,
        writes: bool,
        stop: Stop<Error>,
    ) -> Error {
        match stop {
            Stop::Final(err) => err,
            Stop::Db { error, .. } => failed(operation, key, error, self.limits, &self.pool),
            Stop::Deadline { limit } => unanswered(operation, key, writes, limit),
        }
    }

    /// Starts a transaction on `conn` with the statement timeout.
    fn begin<'c>(
        &self,
        conn: &'c mut PgConnection,
    ) -> impl Future<Output = Result<Transaction<'c, Postgres>, sqlx::Error>> + Send + 'c {
        conn.begin_with(self.limits.begin("BEGIN"))
    }

    /// Whether statements are named and cached.
    pub(crate) fn prepared_statements(&self) -> bool {
        self.prepared
    }

    /// The retry and time limits of an operation.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs a statement that returns rows, in a transaction unless prepared
    /// statements are on (a single statement is atomic by itself).
    async fn fetch_all(
        &self,
        conn: &mut PgConnection,
        query: sqlx::query::Query<'_, Postgres, PgArguments>,
    ) -> Attempt<Vec<PgRow>> {
        if self.prepared {
            return Ok(query.fetch_all(conn).await?);
        }
        let mut tx = self.begin(conn).await?;
        let rows = query.fetch_all(&mut *tx).await?;
        tx.commit().await.map_err(Failure::Commit)?;
        Ok(rows)
    }

    /// Like [`fetch_all`](Self::fetch_all) for a statement without rows.
    async fn execute(
        &self,
        conn: &mut PgConnection,
        query: sqlx::query::Query<'_, Postgres, PgArguments>,
    ) -> Attempt<()> {
        if self.prepared {
            query.execute(conn).await?;
            return Ok(());
        }
        let mut tx = self.begin(conn).await?;
        query.execute(&mut *tx).await?;
        tx.commit().await.map_err(Failure::Commit)?;
        Ok(())
    }

    /// One attempt of `put` / `put_if_head`, in one transaction.
    async fn put_attempt(
        &self,
        conn: &mut PgConnection,
        put: &PreparedPut,
        require_head: bool,
    ) -> Attempt<()> {
        let mut tx = self.begin(conn).await?;
        let parent = put.parent.as_deref();
        let values = Bound::new(put.blobs.iter().map(Option::as_ref));
        if !values.piece_ids.is_empty() {
            self.query(sql::SHARE_PIECES)
                .bind(&put.thread_id)
                .execute(&mut *tx)
                .await?;
        }
        if require_head {
            self.query(sql::LOCK_HEAD)
                .bind(&put.thread_id)
                .bind(&put.checkpoint_ns)
                .execute(&mut *tx)
                .await?;
            let head: Option<String> = self
                .query(sql::HEAD)
                .bind(&put.thread_id)
                .bind(&put.checkpoint_ns)
                .fetch_optional(&mut *tx)
                .await?
                .map(|row| row.try_get(0))
                .transpose()?;
            if head.as_deref() != parent {
                return Err(Failure::Final(Error::Conflict {
                    operation: "put_if_head",
                    thread_id: put.thread_id.clone(),
                    message: format!(
                        "the parent {parent:?} is not the head {:?} of namespace {:?}",
                        head.as_deref(),
                        put.checkpoint_ns
                    ),
                }));
            }
        }
        let stored = self
            .query(sql::PUT)
            .bind(&put.thread_id)
            .bind(&put.checkpoint_ns)
            .bind(&put.checkpoint_id)
            .bind(parent)
            .bind(Json(&put.checkpoint))
            .bind(Json(&put.metadata))
            .bind(&put.blob_channels)
            .bind(&put.blob_versions)
            .bind(&values.tags)
            .bind(&values.values)
            .bind(&values.piece_ids)
            .bind(&values.piece_values)
            .fetch_optional(&mut *tx)
            .await?;
        if stored.is_none() {
            let existing: Option<String> = self
                .query(sql::STORED_PARENT)
                .bind(&put.thread_id)
                .bind(&put.checkpoint_ns)
                .bind(&put.checkpoint_id)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
            // Dropping `tx` rolls back, blobs included.
            return Err(Failure::Final(Error::Conflict {
                operation: if require_head { "put_if_head" } else { "put" },
                thread_id: put.thread_id.clone(),
                message: format!(
                    "checkpoint {} is already stored with parent {:?}, not {parent:?}",
                    put.checkpoint_id,
                    existing.as_deref(),
                ),
            }));
        }
        tx.commit().await.map_err(Failure::Commit)?;
        Ok(())
    }

    /// Whether the checkpoint of `put` is stored with its parent (after a
    /// commit whose outcome is unknown).
    async fn is_stored(&self, conn: &mut PgConnection, put: &PreparedPut) -> Attempt<bool> {
        let rows = self
            .fetch_all(
                conn,
                self.query(sql::STORED_PARENT)
                    .bind(&put.thread_id)
                    .bind(&put.checkpoint_ns)
                    .bind(&put.checkpoint_id),
            )
            .await?;
        match rows.first() {
            None => Ok(false),
            Some(row) => {
                let parent: Option<String> = row.try_get(0)?;
                Ok(parent == put.parent)
            }
        }
    }

    async fn put_checked(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        require_head: bool,
    ) -> Result<CheckpointConfig> {
        let operation = if require_head { "put_if_head" } else { "put" };
        limits::check_put(operation, config, &checkpoint, &metadata, &new_versions)?;
        Error::check_child_order(operation, config, &checkpoint.id)?;
        let put = PreparedPut::new(
            &*self.serializer,
            config,
            checkpoint,
            metadata,
            &new_versions,
        )?;
        let key = || {
            format!(
                "thread {:?}, checkpoint {:?}",
                put.thread_id, put.checkpoint_id
            )
        };
        // A lost COMMIT answer: `put` is idempotent, so it may simply run
        // again; `put_if_head` would then see its own checkpoint as the head
        // and report a conflict, so the next attempt looks first, on its
        // fresh connection (and keeps looking until a look succeeds).
        let commit_lost = &AtomicBool::new(false);
        let prepared = &put;
        let stored = attempt::run(&self.pool, self.limits, operation, true, |conn| {
            Box::pin(async move {
                if commit_lost.load(Ordering::Relaxed) {
                    if self.is_stored(conn, prepared).await? {
                        return Ok(());
                    }
                    commit_lost.store(false, Ordering::Relaxed);
                }
                let result = self.put_attempt(conn, prepared, require_head).await;
                let lost = require_head && matches!(result, Err(Failure::Commit(_)));
                commit_lost.store(lost, Ordering::Relaxed);
                result
            })
        })
        .await;
        match stored {
            Ok(()) => {}
            // The last attempt lost its COMMIT answer: one more look, so a
            // `put_if_head` that took effect is not reported as failed.
            Err(Stop::Db {
                error,
                commit: true,
            }) if require_head => {
                let look = self
                    .retry(operation, Some(&key), false, |conn| {
                        Box::pin(async move { self.is_stored(conn, prepared).await })
                    })
                    .await;
                if !matches!(look, Ok(true)) {
                    return Err(failed(
                        operation,
                        Some(key()),
                        error,
                        self.limits,
                        &self.pool,
                    ));
                }
            }
            Err(stop) => return Err(self.stopped(operation, Some(key()), true, stop)),
        }
        Ok(CheckpointConfig {
            thread_id: put.thread_id,
            checkpoint_ns: put.checkpoint_ns,
            checkpoint_id: Some(CheckpointId::from(put.checkpoint_id)),
        })
    }

    /// The pieces the skeletons of `rows` refer to, fetched in one
    /// statement (none at all when no row holds a skeleton). Columns that
    /// do not read are skipped here; decoding the row reports them.
    async fn pieces_of(&self, operation: &'static str, rows: &[PgRow]) -> Result<PieceMap> {
        let mut threads: Vec<String> = Vec::new();
        let mut ids: Vec<Vec<u8>> = Vec::new();
        let mut seen = HashSet::new();
        for row in rows {
            let Ok(thread_id) = row.try_get::<String, _>("thread_id") else {
                continue;
            };
            for (tags, values) in [("blob_tags", "blob_values"), ("write_tags", "write_values")] {
                let tags: Vec<String> = column(row, tags).unwrap_or_default();
                if !tags.iter().any(|tag| tag == PIECED_TAG) {
                    continue;
                }
                let values: Vec<Option<Vec<u8>>> = column(row, values).unwrap_or_default();
                for (_, skeleton) in tags.iter().zip(&values).filter(|(t, _)| *t == PIECED_TAG) {
                    for id in pieces::references(skeleton.as_deref().unwrap_or_default()) {
                        if seen.insert((thread_id.clone(), id)) {
                            threads.push(thread_id.clone());
                            ids.push(id.as_bytes().to_vec());
                        }
                    }
                }
            }
        }
        if ids.is_empty() {
            return Ok(PieceMap::new());
        }
        let (threads, ids) = (&threads, &ids);
        let rows = self
            .retry(operation, None, false, |conn| {
                Box::pin(async move {
                    let query = self.query(sql::SELECT_PIECES).bind(threads).bind(ids);
                    self.fetch_all(conn, query).await
                })
            })
            .await?;
        let mut found = PieceMap::with_capacity(rows.len());
        for row in rows {
            let read = || -> std::result::Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<String, _>(0)?,
                    row.try_get::<Vec<u8>, _>(1)?,
                    row.try_get::<Vec<u8>, _>(2)?,
                ))
            };
            let (thread_id, id, value) = read().map_err(|err| backend(operation, None, err))?;
            if let Some(id) = PieceId::from_slice(&id) {
                found.insert((thread_id, id), value);
            }
        }
        Ok(found)
    }

    /// Decodes a stored value of `thread_id`, joining a skeleton with its
    /// pieces first.
    fn load(
        &self,
        operation: &'static str,
        pieces: &PieceMap,
        thread_id: &str,
        channel: &str,
        tag: &str,
        bytes: &[u8],
    ) -> Result<Value> {
        if tag != PIECED_TAG {
            return self.serializer.loads(channel, tag, bytes);
        }
        let joined = pieces::join(bytes, |id| Ok(pieces.get(&(thread_id.to_owned(), id))))?
            .map_err(|source| Error::Piece {
                operation,
                thread_id: thread_id.to_owned(),
                channel: channel.to_owned(),
                source,
            })?;
        self.serializer.loads(channel, JsonSerializer::TAG, &joined)
    }

    /// Turns a row of [`sql::SELECT_TUPLES`] into a tuple, or `None` when its
    /// metadata does not match `filter`. Values come from `cache` when an
    /// earlier row of the same read decoded them; skeletons are joined with
    /// `pieces` ([`pieces_of`](Self::pieces_of) the rows).
    fn decode(
        &self,
        operation: &'static str,
        row: &PgRow,
        filter: &MetadataFilter,
        pieces: &PieceMap,
        mut cache: Option<&mut DecodedValues>,
    ) -> Result<Option<CheckpointTuple>> {
        let column_error = |err: sqlx::Error| backend(operation, None, err);
        let thread_id: String = row.try_get("thread_id").map_err(column_error)?;
        let checkpoint_ns: String = row.try_get("checkpoint_ns").map_err(column_error)?;
        let checkpoint_id: String = row.try_get("checkpoint_id").map_err(column_error)?;
        let key = || format!("thread {thread_id:?}, checkpoint {checkpoint_id:?}");
        let Json(metadata): Json<serde_json::Value> =
            row.try_get("metadata").map_err(column_error)?;
        let metadata: CheckpointMetadata = serde_json::from_value(metadata)
            .map_err(|err| corrupt(operation, key(), format!("metadata: {err}")))?;
        if !filter.matches(&metadata) {
            return Ok(None);
        }
        let parent: Option<String> = row.try_get("parent_checkpoint_id").map_err(column_error)?;
        let Json(document): Json<serde_json::Value> =
            row.try_get("checkpoint").map_err(column_error)?;
        let mut checkpoint: Checkpoint = serde_json::from_value(document)
            .map_err(|err| corrupt(operation, key(), format!("checkpoint: {err}")))?;
        checkpoint.channel_values.clear();

        let channels: Vec<String> = column(row, "blob_channels").map_err(column_error)?;
        // The join yields at most one blob per listed channel (one version
        // each): fewer blobs than channels means some value row is gone.
        if channels.len() < checkpoint.channel_versions.len()
            && let Some((channel, version)) = checkpoint
                .channel_versions
                .iter()
                .find(|(channel, _)| !channels.contains(channel))
        {
            return Err(Error::Integrity {
                operation,
                channel: channel.clone(),
                version: *version,
                thread_id,
                checkpoint_ns,
                checkpoint_id: CheckpointId::from(checkpoint_id),
            });
        }
        let tags: Vec<String> = column(row, "blob_tags").map_err(column_error)?;
        let values: Vec<Option<Vec<u8>>> = column(row, "blob_values").map_err(column_error)?;
        for ((channel, tag), bytes) in channels.into_iter().zip(tags).zip(values) {
            if tag == sql::EMPTY_TAG {
                continue;
            }
            let Some(version) = checkpoint.channel_versions.get(&channel) else {
                continue;
            };
            let bytes = bytes.as_deref().unwrap_or_default();
            let load = || {
                self.load(operation, pieces, &thread_id, &channel, &tag, bytes)
                    .map(Some)
            };
            let cache = cache.as_deref_mut();
            let value = DecodedValues::get_or_decode(
                cache,
                &thread_id,
                &checkpoint_ns,
                &channel,
                *version,
                load,
            )?;
            if let Some(value) = value {
                checkpoint.channel_values.insert(channel, value);
            }
        }

        let tasks: Vec<String> = column(row, "write_tasks").map_err(column_error)?;
        let channels: Vec<String> = column(row, "write_channels").map_err(column_error)?;
        let tags: Vec<String> = column(row, "write_tags").map_err(column_error)?;
        let values: Vec<Vec<u8>> = column(row, "write_values").map_err(column_error)?;
        let mut pending_writes = Vec::with_capacity(tasks.len());
        for (((task_id, channel), tag), bytes) in
            tasks.into_iter().zip(channels).zip(tags).zip(values)
        {
            let value = self.load(operation, pieces, &thread_id, &channel, &tag, &bytes)?;
            pending_writes.push(PendingWrite {
                task_id,
                channel,
                value,
            });
        }

        let address = |id: String| CheckpointConfig {
            thread_id: thread_id.clone(),
            checkpoint_ns: checkpoint_ns.clone(),
            checkpoint_id: Some(CheckpointId::from(id)),
        };
        Ok(Some(CheckpointTuple::new(
            address(checkpoint_id.clone()),
            checkpoint,
            metadata,
            parent.map(address),
            pending_writes,
        )))
    }

    /// Deletes with `statement`, then collects the blobs no checkpoint of the
    /// touched threads refers to any more, in one transaction. The touched
    /// threads are what the statement returns (`returns_threads`) or `keys`.
    async fn delete_and_collect(
        &self,
        operation: &'static str,
        statement: &'static str,
        keys: &[String],
        returns_threads: bool,
    ) -> Result<()> {
        self.retry(operation, None, true, |conn| {
            Box::pin(async move {
                let mut tx = self.begin(conn).await?;
                let rows = self.query(statement).bind(keys).fetch_all(&mut *tx).await?;
                let threads: Vec<String> = if returns_threads {
                    rows.iter()
                        .map(|row| row.try_get(0))
                        .collect::<Result<_, _>>()?
                } else {
                    keys.to_vec()
                };
                if !threads.is_empty() {
                    self.query(sql::COLLECT_BLOBS)
                        .bind(&threads)
                        .execute(&mut *tx)
                        .await?;
                    self.collect_pieces(&mut tx, &threads).await?;
                }
                tx.commit().await?;
                Ok(())
            })
        })
        .await
    }
}

/// Pieces fetched for a read, by thread and id.
type PieceMap = HashMap<(String, PieceId), Vec<u8>>;

impl PostgresSaver {
    /// Deletes the pieces of `threads` that no stored value refers to any
    /// more, holding each thread's pieces lock so that no transaction that
    /// relies on a stored piece commits meanwhile.
    async fn collect_pieces(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        threads: &[String],
    ) -> std::result::Result<(), sqlx::Error> {
        self.query(sql::LOCK_PIECES)
            .bind(threads)
            .execute(&mut **tx)
            .await?;
        let rows = self
            .query(sql::STORED_SKELETONS)
            .bind(threads)
            .bind(PIECED_TAG)
            .fetch_all(&mut **tx)
            .await?;
        let mut kept = HashSet::new();
        for row in &rows {
            let thread_id: String = row.try_get(0)?;
            let skeleton: Option<Vec<u8>> = row.try_get(1)?;
            for id in pieces::references(skeleton.as_deref().unwrap_or_default()) {
                kept.insert((thread_id.clone(), id));
            }
        }
        let (kept_threads, kept_ids): (Vec<String>, Vec<Vec<u8>>) = kept
            .into_iter()
            .map(|(thread_id, id)| (thread_id, id.as_bytes().to_vec()))
            .unzip();
        self.query(sql::COLLECT_PIECES)
            .bind(threads)
            .bind(kept_threads)
            .bind(kept_ids)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

/// A nullable array column read as an empty vector when NULL (an aggregate
/// over no rows).
fn column<T>(row: &PgRow, name: &str) -> std::result::Result<Vec<T>, sqlx::Error>
where
    T: for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
    Vec<T>: for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    Ok(row.try_get::<Option<Vec<T>>, _>(name)?.unwrap_or_default())
}

/// A `put` with everything encoded, ready to send (and to send again).
struct PreparedPut {
    thread_id: String,
    checkpoint_ns: String,
    checkpoint_id: String,
    parent: Option<String>,
    checkpoint: serde_json::Value,
    metadata: serde_json::Value,
    // Invariant: the three blob vectors have one entry per new version,
    // ordered by channel (a fixed lock order for concurrent puts); `None`
    // records a version without a value.
    blob_channels: Vec<String>,
    blob_versions: Vec<String>,
    blobs: Vec<Option<Stored>>,
}

/// Values as bound to a statement: the tag and row bytes of each (`empty`
/// and no bytes for `None`), and their pieces, each once.
struct Bound<'a> {
    tags: Vec<&'a str>,
    values: Vec<Option<&'a [u8]>>,
    piece_ids: Vec<&'a [u8]>,
    piece_values: Vec<&'a [u8]>,
}

impl<'a> Bound<'a> {
    fn new(stored: impl Iterator<Item = Option<&'a Stored>>) -> Self {
        let mut bound = Self {
            tags: Vec::new(),
            values: Vec::new(),
            piece_ids: Vec::new(),
            piece_values: Vec::new(),
        };
        let mut seen = HashSet::new();
        for value in stored {
            bound.tags.push(value.map_or(sql::EMPTY_TAG, Stored::tag));
            bound.values.push(value.map(Stored::bytes));
            for (id, bytes) in value.into_iter().flat_map(Stored::pieces) {
                if seen.insert(*id) {
                    bound.piece_ids.push(id.as_bytes());
                    bound.piece_values.push(bytes);
                }
            }
        }
        bound
    }
}

impl PreparedPut {
    fn new(
        serializer: &dyn Serializer,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: &ChannelVersions,
    ) -> Result<Self> {
        let mut put = Self {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
            checkpoint_id: checkpoint.id.as_str().to_owned(),
            parent: config
                .checkpoint_id
                .as_ref()
                .map(|id| id.as_str().to_owned()),
            checkpoint: serde_json::Value::Null,
            metadata: metadata.sanitized().to_json(),
            blob_channels: Vec::with_capacity(new_versions.len()),
            blob_versions: Vec::with_capacity(new_versions.len()),
            blobs: Vec::with_capacity(new_versions.len()),
        };
        for (channel, version) in new_versions {
            let stored = match checkpoint.channel_values.get(channel) {
                Some(value) => Some(Stored::new(serializer.dumps(channel, value)?)),
                None => None,
            };
            put.blob_channels.push(channel.clone());
            put.blob_versions.push(version.to_string());
            put.blobs.push(stored);
        }
        checkpoint.channel_values.clear();
        put.checkpoint = serde_json::to_value(&checkpoint).map_err(|err| Error::InvalidInput {
            operation: "put",
            message: format!("checkpoint {} does not serialize: {err}", put.checkpoint_id),
        })?;
        Ok(put)
    }
}

/// The position of a listing: the last row it fetched.
#[derive(Clone)]
struct Cursor {
    checkpoint_id: String,
    thread_id: String,
    checkpoint_ns: String,
}

/// The state of a `list` stream between pages.
struct Listing<'a> {
    saver: &'a PostgresSaver,
    query: ListQuery,
    filter: MetadataFilter,
    // Filter entries PostgreSQL can pre-check with `metadata @> ...` without
    // ever dropping a checkpoint the filter matches.
    contains: Option<serde_json::Value>,
    cursor: Option<Cursor>,
    // Items still wanted, unreadable rows included (`None` = no limit).
    remaining: Option<usize>,
    buffer: VecDeque<Result<CheckpointTuple>>,
    done: bool,
}

impl<'a> Listing<'a> {
    fn new(saver: &'a PostgresSaver, query: ListQuery) -> Self {
        let mut listing = Self {
            saver,
            filter: MetadataFilter::default(),
            contains: None,
            cursor: None,
            remaining: query.limit,
            buffer: VecDeque::new(),
            done: query.limit == Some(0),
            query,
        };
        match limits::check_query(&listing.query).and_then(|()| listing.query.metadata_filter()) {
            Ok(filter) => {
                listing.contains = containment(&filter);
                listing.filter = filter;
            }
            Err(err) => {
                listing.buffer.push_back(Err(err));
                listing.done = true;
            }
        }
        listing
    }

    async fn next(&mut self) -> Option<Result<CheckpointTuple>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if let Err(err) = self.fetch_page().await {
                self.done = true;
                return Some(Err(err));
            }
        }
    }

    async fn fetch_page(&mut self) -> Result<()> {
        let page = match self.remaining {
            // Without a filter every row is a match: fetch no more than wanted.
            Some(remaining) if self.filter.is_empty() => remaining.min(self.saver.page_size),
            _ => self.saver.page_size,
        };
        let this = &*self;
        let rows = self
            .saver
            .retry("list", None, false, |conn| {
                Box::pin(async move {
                    let query = this.select(page)?;
                    this.saver.fetch_all(conn, query).await
                })
            })
            .await?;
        if rows.len() < page {
            self.done = true;
        }
        let pieces = self.saver.pieces_of("list", &rows).await?;
        let mut cache = DecodedValues::default();
        for row in &rows {
            let read = |name: &str| {
                row.try_get::<String, _>(name)
                    .map_err(|err| backend("list", None, err))
            };
            self.cursor = Some(Cursor {
                checkpoint_id: read("checkpoint_id")?,
                thread_id: read("thread_id")?,
                checkpoint_ns: read("checkpoint_ns")?,
            });
            // A row that does not decode is an item of its own (unreadable
            // metadata counts as a match); the listing goes on past it.
            let item = self
                .saver
                .decode("list", row, &self.filter, &pieces, Some(&mut cache));
            if let Some(item) = item.transpose() {
                self.buffer.push_back(item);
                if let Some(remaining) = &mut self.remaining {
                    *remaining -= 1;
                    if *remaining == 0 {
                        self.done = true;
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The next page's query: keyset pagination below the cursor, in the
    /// order an index serves for the given restrictions.
    fn select(&self, page: usize) -> Attempt<sqlx::query::Query<'static, Postgres, PgArguments>> {
        let mut select = Select::new();
        let query = &self.query;
        if let Some(thread_id) = &query.thread_id {
            select.and("c.thread_id = ", thread_id.clone())?;
        }
        if let Some(ns) = &query.checkpoint_ns {
            select.and("c.checkpoint_ns = ", ns.clone())?;
        }
        if let Some(id) = &query.checkpoint_id {
            select.and("c.checkpoint_id = ", id.as_str().to_owned())?;
        }
        if let Some(before) = &query.before {
            select.and("c.checkpoint_id < ", before.as_str().to_owned())?;
        }
        if let Some(contains) = &self.contains {
            select.and("c.metadata @> ", Json(contains.clone()))?;
        }
        // Ties on the id (possible across threads and namespaces) are broken
        // by thread, then namespace, descending, as the in-memory saver does.
        let order = match (&query.thread_id, &query.checkpoint_ns) {
            (Some(_), Some(_)) => {
                if let Some(cursor) = &self.cursor {
                    select.and("c.checkpoint_id < ", cursor.checkpoint_id.clone())?;
                }
                " ORDER BY c.checkpoint_id DESC"
            }
            (Some(_), None) => {
                if let Some(cursor) = &self.cursor {
                    let id = select.bind(cursor.checkpoint_id.clone())?;
                    let ns = select.bind(cursor.checkpoint_ns.clone())?;
                    select.push(&format!(
                        " AND (c.checkpoint_id, c.checkpoint_ns) < ({id}, {ns})"
                    ));
                }
                " ORDER BY c.checkpoint_id DESC, c.checkpoint_ns DESC"
            }
            _ => {
                if let Some(cursor) = &self.cursor {
                    let id = select.bind(cursor.checkpoint_id.clone())?;
                    let thread = select.bind(cursor.thread_id.clone())?;
                    let ns = select.bind(cursor.checkpoint_ns.clone())?;
                    select.push(&format!(
                        " AND (c.checkpoint_id, c.thread_id, c.checkpoint_ns) < ({id}, {thread}, {ns})"
                    ));
                }
                " ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC"
            }
        };
        select.push(order);
        let limit = select.bind(i64::try_from(page).unwrap_or(i64::MAX))?;
        select.push(&format!(" LIMIT {limit}"));
        Ok(select.build(self.saver.prepared))
    }
}

/// Builds a [`sql::SELECT_TUPLES`] query: only fixed SQL fragments are
/// spliced in, every value is a bind parameter.
struct Select {
    sql: String,
    args: PgArguments,
    count: usize,
}

impl Select {
    fn new() -> Self {
        Self {
            sql: sql::SELECT_TUPLES.to_owned(),
            args: PgArguments::default(),
            count: 0,
        }
    }

    fn bind<T>(&mut self, value: T) -> Attempt<String>
    where
        T: for<'q> sqlx::Encode<'q, Postgres> + sqlx::Type<Postgres>,
    {
        self.args
            .add(value)
            .map_err(|err| Failure::Db(sqlx::Error::Encode(err)))?;
        self.count += 1;
        Ok(format!("${}", self.count))
    }

    fn and<T>(&mut self, condition: &str, value: T) -> Attempt<()>
    where
        T: for<'q> sqlx::Encode<'q, Postgres> + sqlx::Type<Postgres>,
    {
        let placeholder = self.bind(value)?;
        self.sql.push_str(" AND ");
        self.sql.push_str(condition);
        self.sql.push_str(&placeholder);
        Ok(())
    }

    fn push(&mut self, fragment: &str) {
        self.sql.push_str(fragment);
    }

    fn build(self, prepared: bool) -> sqlx::query::Query<'static, Postgres, PgArguments> {
        sqlx::query_with(AssertSqlSafe(self.sql), self.args).persistent(prepared)
    }
}

/// The filter entries that `metadata @> entries` can pre-check in SQL
/// without dropping a match: top-level keys (no dot, so no nested-path
/// lookup) whose value is a string, a bool or `null`, which match exactly
/// when JSONB containment holds. Numbers are left to Rust (JSONB compares
/// numerics exactly, the filter as `f64` past 2^53), and so are objects and
/// arrays (containment accepts partial objects and sub-arrays; extra rows are
/// fine but the rule is simpler this way). `None` when nothing qualifies.
fn containment(filter: &MetadataFilter) -> Option<serde_json::Value> {
    let entries: serde_json::Map<String, serde_json::Value> = filter
        .entries()
        .iter()
        .filter(|(key, value)| {
            !key.contains('.')
                && match value {
                    serde_json::Value::String(text) => !text.contains('\0'),
                    serde_json::Value::Bool(_) | serde_json::Value::Null => true,
                    _ => false,
                }
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!entries.is_empty()).then_some(serde_json::Value::Object(entries))
}

impl CheckpointSaver for PostgresSaver {
    fn capabilities(&self) -> SaverCapabilities {
        SaverCapabilities::all()
    }

    async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
        limits::check_config("get_tuple", config)?;
        let key = || format!("thread {:?}", config.thread_id);
        let rows = self
            .retry("get_tuple", Some(&key), false, |conn| {
                Box::pin(async move {
                    let mut select = Select::new();
                    select.and("c.thread_id = ", config.thread_id.clone())?;
                    select.and("c.checkpoint_ns = ", config.checkpoint_ns.clone())?;
                    if let Some(id) = &config.checkpoint_id {
                        select.and("c.checkpoint_id = ", id.as_str().to_owned())?;
                    }
                    select.push(" ORDER BY c.checkpoint_id DESC LIMIT 1");
                    self.fetch_all(conn, select.build(self.prepared)).await
                })
            })
            .await?;
        let pieces = self.pieces_of("get_tuple", &rows).await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => self.decode("get_tuple", row, &MetadataFilter::default(), &pieces, None),
        }
    }

    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
        stream::unfold(Listing::new(self, query), |mut listing| async move {
            let item = listing.next().await?;
            Some((item, listing))
        })
    }

    async fn put(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        self.put_checked(config, checkpoint, metadata, new_versions, false)
            .await
    }

    async fn put_if_head(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        self.put_checked(config, checkpoint, metadata, new_versions, true)
            .await
    }

    async fn put_writes(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> Result<()> {
        limits::check_writes(config, &writes, task_id, task_path)?;
        let Some(checkpoint_id) = &config.checkpoint_id else {
            return Err(Error::InvalidInput {
                operation: "put_writes",
                message: format!(
                    "config for thread {:?} names no checkpoint_id",
                    config.thread_id
                ),
            });
        };
        // One row per index: a later special write in the same batch replaces
        // an earlier one (last-writer-wins), as it would in separate calls;
        // PostgreSQL refuses to upsert one row twice in a statement.
        let mut indexes: Vec<i64> = Vec::with_capacity(writes.len());
        let mut channels: Vec<String> = Vec::with_capacity(writes.len());
        let mut stored: Vec<Stored> = Vec::with_capacity(writes.len());
        for (position, (channel, value)) in writes.iter().enumerate() {
            let idx = write_index(channel, position);
            let value = Stored::new(self.serializer.dumps(channel, value)?);
            match indexes.iter().position(|i| *i == idx) {
                Some(slot) if idx < 0 => {
                    channels[slot] = channel.clone();
                    stored[slot] = value;
                }
                Some(_) => {}
                None => {
                    indexes.push(idx);
                    channels.push(channel.clone());
                    stored.push(value);
                }
            }
        }
        let values = &Bound::new(stored.iter().map(Some));
        if indexes.is_empty() {
            return Ok(());
        }
        let key = || {
            format!(
                "thread {:?}, checkpoint {:?}, task {task_id:?}",
                config.thread_id,
                checkpoint_id.as_str()
            )
        };
        let (indexes, channels) = (&indexes, &channels);
        self.retry("put_writes", Some(&key), true, |conn| {
            Box::pin(async move {
                let query = self
                    .query(sql::PUT_WRITES)
                    .bind(&config.thread_id)
                    .bind(&config.checkpoint_ns)
                    .bind(checkpoint_id.as_str())
                    .bind(task_id)
                    .bind(task_path)
                    .bind(indexes)
                    .bind(channels)
                    .bind(&values.tags)
                    .bind(&values.values)
                    .bind(&values.piece_ids)
                    .bind(&values.piece_values);
                if values.piece_ids.is_empty() {
                    return self.execute(conn, query).await;
                }
                let mut tx = self.begin(conn).await?;
                self.query(sql::SHARE_PIECES)
                    .bind(&config.thread_id)
                    .execute(&mut *tx)
                    .await?;
                query.execute(&mut *tx).await?;
                tx.commit().await.map_err(Failure::Commit)?;
                Ok(())
            })
        })
        .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        limits::check_thread_ids("delete_thread", [thread_id])?;
        let threads = &[thread_id.to_owned()];
        let key = || format!("thread {thread_id:?}");
        self.retry("delete_thread", Some(&key), true, |conn| {
            Box::pin(async move {
                let query = self.query(sql::DELETE_THREADS).bind(&threads[..]);
                self.execute(conn, query).await
            })
        })
        .await
    }

    async fn delete_for_runs(&self, run_ids: &[String]) -> Result<()> {
        if run_ids.is_empty() {
            return Ok(());
        }
        let run_ids = limits::stored_run_ids(run_ids);
        self.delete_and_collect("delete_for_runs", sql::DELETE_RUNS, &run_ids, true)
            .await
    }

    async fn copy_thread(&self, source: &str, target: &str) -> Result<()> {
        limits::check_thread_ids("copy_thread", [source, target])?;
        if source == target {
            return Ok(());
        }
        let key = || format!("thread {source:?} to {target:?}");
        self.retry("copy_thread", Some(&key), true, |conn| {
            Box::pin(async move {
                let query = self.query(sql::COPY_THREAD).bind(source).bind(target);
                self.execute(conn, query).await
            })
        })
        .await
    }

    async fn prune(&self, thread_ids: &[String], strategy: PruneStrategy) -> Result<()> {
        limits::check_thread_ids("prune", thread_ids.iter().map(String::as_str))?;
        if thread_ids.is_empty() {
            return Ok(());
        }
        match strategy {
            PruneStrategy::Delete => {
                self.retry("prune", None, true, |conn| {
                    Box::pin(async move {
                        let query = self.query(sql::DELETE_THREADS).bind(thread_ids);
                        self.execute(conn, query).await
                    })
                })
                .await
            }
            PruneStrategy::KeepLatest => {
                self.delete_and_collect("prune", sql::PRUNE_KEEP_LATEST, thread_ids, false)
                    .await
            }
            // `PruneStrategy` is non-exhaustive: a strategy added later is
            // refused until this saver implements it.
            #[allow(unreachable_patterns)]
            _ => Err(Error::unsupported::<Self>("prune")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(value: serde_json::Value) -> MetadataFilter {
        MetadataFilter::new(value.as_object().cloned().unwrap_or_default()).unwrap()
    }

    /// A pool that never connects (nothing listens on port 1).
    fn idle_pool() -> PgPool {
        PgPoolOptions::new().connect_lazy_with(PgConnectOptions::new().host("127.0.0.1").port(1))
    }

    #[tokio::test]
    async fn the_statement_timeout_is_on_by_default_and_can_be_turned_off() {
        let saver = PostgresSaver::from_pool(idle_pool());
        let limit = |saver: &PostgresSaver| saver.limits().statement_timeout;
        assert_eq!(limit(&saver), Some(Duration::from_secs(30)));
        let short = saver
            .clone()
            .with_statement_timeout(Duration::from_millis(250));
        assert_eq!(limit(&short), Some(Duration::from_millis(250)));
        assert_eq!(limit(&short.clone().with_statement_timeout(None)), None);
        assert_eq!(limit(&short.with_statement_timeout(Duration::ZERO)), None);
        let retries = saver.with_max_attempts(0).limits();
        assert_eq!(retries.max_attempts, 1, "at least one attempt");
        assert_eq!(retries.statement_timeout, Some(Duration::from_secs(30)));
    }

    #[test]
    fn containment_keeps_only_entries_that_cannot_drop_a_match() {
        let f = filter(json!({
            "source": "loop",
            "flag": true,
            "nothing": null,
            "step": 1,
            "nested": {"a": 1},
            "tags": ["x"],
            "user.name": "dotted",
            "nul": "a\u{0}b",
        }));
        assert_eq!(
            containment(&f),
            Some(json!({"source": "loop", "flag": true, "nothing": null}))
        );
        assert_eq!(containment(&filter(json!({"step": 1}))), None);
        assert_eq!(containment(&MetadataFilter::default()), None);
    }

    #[test]
    fn prepared_put_encodes_blobs_in_channel_order() {
        let version = stategraph_checkpoint::ChannelVersion::next(None);
        let checkpoint = Checkpoint::empty()
            .with_channel("b", Value::new("two"), version)
            .with_channel("a", Value::new(1), version);
        let mut new_versions = checkpoint.channel_versions.clone();
        new_versions.insert("cleared".into(), version);
        let put = PreparedPut::new(
            &JsonSerializer,
            &CheckpointConfig::thread("t").with_id("parent"),
            checkpoint,
            CheckpointMetadata::default().with("k", json!("x\u{0}y")),
            &new_versions,
        )
        .unwrap();
        assert_eq!(put.blob_channels, ["a", "b", "cleared"]);
        let bound = Bound::new(put.blobs.iter().map(Option::as_ref));
        assert_eq!(bound.tags, ["json", "json", sql::EMPTY_TAG]);
        assert_eq!(bound.values[2], None);
        assert_eq!(put.parent.as_deref(), Some("parent"));
        assert_eq!(put.checkpoint["channel_values"], json!({}));
        assert_eq!(put.metadata["k"], json!("xy"), "metadata is sanitized");
    }
}
