//! [`PostgresStore`]: the long-term memory [`Store`] on PostgreSQL.

use stategraph_store::sql as plan;
mod sql;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgPool};
use sqlx::{Connection, PgConnection};
use stategraph_store::{Op, OpResult, Result, Store, StoreCapabilities, StoreError, StoreOptions};

use crate::PostgresSaver;
use crate::attempt::{self, DEADLINE_GRACE, Lent, Limits, Stop};
use crate::error::reached_limit;
use crate::saver::connect_pool;

/// The store's name in errors.
const NAME: &str = "PostgresStore";

/// A long-term memory [`Store`] in PostgreSQL through a sqlx pool: items,
/// their vectors for semantic search, and expiry, with the answers of
/// [`InMemoryStore`](stategraph_store::InMemoryStore) for every batch.
///
/// - **Schema.** Call [`setup`](Self::setup) once per database: it runs the
///   migrations of [`PostgresSaver::setup`] (the same versioned, locked,
///   idempotent list, which holds the store's tables too).
/// - **Batches.** A batch runs in one transaction, all of it or nothing:
///   its reads in order, each seeing the store as it was before the batch,
///   then its puts in order (the last put of a key wins), as
///   `InMemoryStore` does. A batch that neither writes nor refreshes a TTL reads
///   one snapshot (`REPEATABLE READ READ ONLY`); one that writes runs in
///   `READ COMMITTED`, so concurrent puts of one key queue instead of
///   failing, and a TTL refresh applies only if the item's deadline is
///   still the one read. Validation and embedding happen before the
///   transaction.
/// - **Design rule.** SQL selects candidates by namespace (whole labels, as
///   a byte range over the labels joined with `.`, bound as parameters) and
///   expiry; filters, similarity scores, ranking, paging and namespace
///   listings are computed in Rust with `stategraph-store`'s shared code.
/// - **Poolers and lost connections** as [`PostgresSaver`]: unnamed
///   statements inside explicit transactions by default, and a batch that
///   loses its connection (or a deadlock race) before `COMMIT` is
///   retried whole, up to [`with_max_attempts`](Self::with_max_attempts).
///   A batch that writes and loses the answer to its `COMMIT` is not
///   retried (its reads might then see its own writes); the error says so.
/// - **Time limits** as [`PostgresSaver`]: a statement timeout (30 s by
///   default) the server enforces, and a client-side deadline a second
///   later; see [`with_statement_timeout`](Self::with_statement_timeout).
/// - Times are stored as nanoseconds since the Unix epoch, so the clock
///   must read between the years 1677 and 2262
///   ([`StoreError::Unsupported`] otherwise).
///
/// Clones share the pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    prepared: bool,
    limits: Limits,
    options: StoreOptions,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool_size", &self.pool.size())
            .field("prepared_statements", &self.prepared)
            .field("max_attempts", &self.limits.max_attempts)
            .field("statement_timeout", &self.limits.statement_timeout)
            .field("index", &self.options.index)
            .field("ttl", &self.options.ttl)
            .finish_non_exhaustive()
    }
}

/// Why one attempt of a batch failed (a store-level failure, such as
/// corrupt data, is `Failure::Final`).
pub(crate) type Failure = attempt::Failure<StoreError>;

/// The result of one attempt of a store operation.
pub(crate) type Attempt<T> = attempt::Attempt<T, StoreError>;

/// A sqlx failure as the store's error.
fn db(err: sqlx::Error) -> StoreError {
    StoreError::backend(NAME, err)
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`)
    /// with the saver's default pool ([`PostgresSaver::pool_options`]).
    /// Call [`setup`](Self::setup) before the first batch.
    ///
    /// # Errors
    /// [`StoreError::Backend`] for a malformed URL or when no connection can
    /// be made.
    pub async fn connect(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url).map_err(|err| StoreError::Backend {
            store: NAME,
            message: format!("invalid PostgreSQL URL: {err}"),
            source: Some(Box::new(err)),
        })?;
        Self::connect_with(options).await
    }

    /// Connects with explicit connection options and the default pool.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when no connection can be made.
    pub async fn connect_with(options: PgConnectOptions) -> Result<Self> {
        Ok(Self::from_pool(connect_pool(options).await.map_err(db)?))
    }

    /// A store on an existing pool (keep sqlx's default
    /// `test_before_acquire(true)` so dead connections are replaced).
    pub fn from_pool(pool: PgPool) -> Self {
        Self {
            pool,
            prepared: false,
            limits: Limits {
                max_attempts: PostgresSaver::DEFAULT_MAX_ATTEMPTS,
                statement_timeout: Some(PostgresSaver::DEFAULT_STATEMENT_TIMEOUT),
            },
            options: StoreOptions::new(),
        }
    }

    /// A store on the pool of `saver`, with its statement, retry and time
    /// settings.
    pub fn from_saver(saver: &PostgresSaver) -> Self {
        let mut store = Self::from_pool(saver.pool().clone())
            .with_prepared_statements(saver.prepared_statements());
        store.limits = saver.limits();
        store
    }

    /// The store with `options` in place of its own: a semantic index
    /// (puts embed the configured fields, searches with a query rank by
    /// cosine similarity), expiry, and the clock (the system clock by
    /// default).
    #[must_use]
    pub fn with_options(mut self, options: StoreOptions) -> Self {
        self.options = options;
        self
    }

    /// The store's index, expiry and clock.
    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Whether to use named, cached prepared statements (default `false`,
    /// which works through transaction-mode poolers); see
    /// [`PostgresSaver::with_prepared_statements`].
    #[must_use]
    pub fn with_prepared_statements(mut self, prepared: bool) -> Self {
        self.prepared = prepared;
        self
    }

    /// How many times a batch is tried when it loses its connection before
    /// `COMMIT` (default 5, at least 1), with exponential backoff from 10 ms.
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.limits.max_attempts = attempts.max(1);
        self
    }

    /// Bounds every batch and sweep in time (default
    /// [`PostgresSaver::DEFAULT_STATEMENT_TIMEOUT`], 30 s); `None` or
    /// [`Duration::ZERO`] turns both limits off. As for
    /// [`PostgresSaver::with_statement_timeout`]: every transaction sets
    /// `SET LOCAL statement_timeout`, so the server cancels a longer
    /// statement, and a batch with no answer
    /// [`PostgresSaver::DEADLINE_GRACE`] (1 s) after the timeout is
    /// abandoned and its connection closed. A single-key get runs outside
    /// a transaction and has only the client limit. Either way the batch
    /// fails with [`StoreError::Timeout`] (`ErrorKind::Timeout`) and is
    /// not retried; an abandoned batch that writes may or may not have
    /// committed.
    #[must_use]
    pub fn with_statement_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.limits.statement_timeout = Limits::statement_timeout(timeout.into());
        self
    }

    /// The pool the store uses.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Creates or upgrades the tables (checkpoints and store alike) in the
    /// connection's current schema; safe to call concurrently from many
    /// processes and on every start (see [`PostgresSaver::setup`]).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails or was migrated by
    /// a newer version of this crate.
    pub async fn setup(&self) -> Result<()> {
        PostgresSaver::from_pool(self.pool.clone())
            .with_max_attempts(self.limits.max_attempts)
            .setup()
            .await
            .map_err(|err| StoreError::backend(NAME, err))
    }

    /// Starts a task deleting expired items every
    /// `sweep_interval_minutes` of the TTL config (a minute if unset); it
    /// stops when the handle is dropped or stopped. Needs a tokio runtime.
    pub fn start_sweeper(&self) -> stategraph_store::Sweeper {
        let store = self.clone();
        stategraph_store::Sweeper::spawn(self.options.ttl.as_ref(), move || {
            let store = store.clone();
            async move { store.sweep_expired().await }
        })
    }

    /// Deletes every item expired at the clock's time with its vectors,
    /// 1,000 per transaction (so a large sweep never holds many locks for
    /// long; rows other transactions hold are skipped); returns how many.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails (the batches already
    /// committed stay deleted); [`StoreError::Unsupported`] for a clock
    /// outside the years 1677..2262.
    pub async fn sweep_expired(&self) -> Result<usize> {
        let (_, now) = plan::read_clock(&self.options.clock, NAME)?;
        let mut swept = 0;
        loop {
            // Deleting expired rows again is harmless, so a lost COMMIT
            // answer is retried too (the count may then miss that batch).
            let deleted = self
                .retry("sweep_expired", true, true, |conn| {
                    Box::pin(async move {
                        let mut tx = self.begin(conn, "BEGIN").await?;
                        let done = sqlx::query(sql::SWEEP)
                            .persistent(self.prepared)
                            .bind(now)
                            .bind(sql::SWEEP_BATCH)
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await.map_err(Failure::Commit)?;
                        Ok(done.rows_affected())
                    })
                })
                .await?;
            swept += usize::try_from(deleted).unwrap_or(usize::MAX);
            if deleted < sql::SWEEP_BATCH.unsigned_abs() {
                return Ok(swept);
            }
        }
    }

    /// Runs attempts on pooled connections while they fail transiently,
    /// within the operation's time limit; a lost `COMMIT` answer is
    /// retried only when `commit_idempotent`. `writes`: whether the
    /// operation changes the database (an abandoned write may have
    /// committed, and its error says so).
    async fn retry<'s, T>(
        &'s self,
        operation: &'static str,
        commit_idempotent: bool,
        writes: bool,
        attempt: impl for<'c> FnMut(&'c mut Lent<'s>) -> BoxFuture<'c, Attempt<T>>,
    ) -> Result<T> {
        let stop = match attempt::run(
            &self.pool,
            self.limits,
            operation,
            commit_idempotent,
            attempt,
        )
        .await
        {
            Ok(value) => return Ok(value),
            Err(stop) => stop,
        };
        Err(match stop {
            Stop::Final(err) => err,
            Stop::Deadline { limit } => StoreError::Timeout {
                store: NAME,
                operation,
                limit,
                message: format!(
                    "no answer from PostgreSQL within the statement timeout plus \
                     {DEADLINE_GRACE:?}, so its connection was closed{}",
                    if writes {
                        "; the batch may or may not have been committed"
                    } else {
                        ""
                    }
                ),
                source: None,
            },
            Stop::Db { error, commit } => {
                let acquire_timeout = self.pool.options().get_acquire_timeout();
                // Only a batch whose COMMIT is not retried can end here
                // with its outcome unknown.
                let unknown = commit && !commit_idempotent;
                let lost = if unknown {
                    "the answer to COMMIT was lost, so the batch may or may not have been \
                     applied: "
                } else {
                    ""
                };
                match reached_limit(&error, self.limits.statement_timeout, acquire_timeout) {
                    Some(limit) => StoreError::Timeout {
                        store: NAME,
                        operation,
                        limit,
                        message: format!("{lost}{error}"),
                        source: Some(Box::new(error)),
                    },
                    None if unknown => StoreError::Backend {
                        store: NAME,
                        message: format!("{lost}{error}"),
                        source: Some(Box::new(error)),
                    },
                    None => db(error),
                }
            }
        })
    }

    /// Starts a transaction on `conn` with `begin` (`BEGIN ...`) and the
    /// statement timeout.
    async fn begin<'c>(
        &self,
        conn: &'c mut PgConnection,
        begin: &'static str,
    ) -> std::result::Result<sqlx::Transaction<'c, sqlx::Postgres>, sqlx::Error> {
        conn.begin_with(self.limits.begin(begin)).await
    }
}

impl Store for PostgresStore {
    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let settings = plan::Settings {
            store: NAME,
            options: &self.options,
        };
        let plan = plan::prepare(ops, &settings).await?;
        if plan.steps.is_empty() {
            return Ok(Vec::new());
        }
        // A read-only batch reads one snapshot (and a read-only transaction
        // never fails to serialize); a writing batch runs in PostgreSQL's
        // default READ COMMITTED, where concurrent puts of one key wait for
        // each other instead of failing.
        let begin = if plan.writes {
            "BEGIN ISOLATION LEVEL READ COMMITTED"
        } else {
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        };
        // One read is one statement: no transaction around it (a third of
        // the round trips).
        let single_read = !plan.writes && matches!(plan.steps[..], [plan::Step::Get { .. }]);
        let plan = &plan;
        self.retry("batch", !plan.writes, plan.writes, |conn| {
            Box::pin(async move {
                if single_read {
                    let mut batch = sql::Batch {
                        conn,
                        prepared: self.prepared,
                    };
                    return batch.run(plan).await;
                }
                let mut tx = self.begin(conn, begin).await?;
                let mut batch = sql::Batch {
                    conn: &mut tx,
                    prepared: self.prepared,
                };
                let results = batch.run(plan).await?;
                tx.commit().await.map_err(Failure::Commit)?;
                Ok(results)
            })
        })
        .await
    }

    fn capabilities(&self) -> StoreCapabilities {
        self.options.capabilities()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_store_takes_the_time_limits_of_its_saver_or_its_own() {
        // A pool that never connects (nothing listens on port 1).
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy_with(PgConnectOptions::new().host("127.0.0.1").port(1));
        let saver = PostgresSaver::from_pool(pool.clone())
            .with_statement_timeout(Duration::from_secs(5))
            .with_max_attempts(2);
        assert_eq!(PostgresStore::from_saver(&saver).limits, saver.limits());
        let store = PostgresStore::from_pool(pool);
        let default = Some(PostgresSaver::DEFAULT_STATEMENT_TIMEOUT);
        assert_eq!(store.limits.statement_timeout, default);
        assert_eq!(
            store.with_statement_timeout(None).limits.statement_timeout,
            None
        );
    }
}
