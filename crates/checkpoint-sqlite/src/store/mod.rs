//! [`SqliteStore`]: the long-term memory [`Store`] on SQLite.

use stategraph_store::sql as plan;
mod sql;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use stategraph_store::{Op, OpResult, Result, Store, StoreCapabilities, StoreError, StoreOptions};

use crate::SqliteSaver;
use crate::pool::{Database, DbError};
use crate::schema;

/// The store's name in errors.
const NAME: &str = "SqliteStore";

/// A long-term memory [`Store`] in a SQLite database: items, their
/// vectors for semantic search, and expiry, with the answers of
/// [`InMemoryStore`](stategraph_store::InMemoryStore) for every batch.
///
/// - [`SqliteStore::open`] uses a database file (WAL mode, one writer
///   connection and a pool of readers, as [`SqliteSaver`]);
///   [`SqliteStore::in_memory`] a private in-memory database;
///   [`SqliteStore::from_saver`] the connections of a saver, so one file
///   holds checkpoints and memories behind one writer.
/// - A batch runs in one transaction (`BEGIN IMMEDIATE` when it may write,
///   a read transaction otherwise), all of it or nothing: its reads in
///   order, each seeing the store as it was before the batch, then its puts
///   in order (the last put of a key wins), as `InMemoryStore` does.
/// - SQL selects candidates by namespace (whole labels, as a range over the
///   labels joined with `.`, bound as parameters) and expiry; filters,
///   similarity scores, ranking, paging and namespace listings are computed
///   in Rust with `stategraph-store`'s shared code. With the `sqlite-vec`
///   feature, SQLite computes the similarity scores (sqlite-vec's cosine
///   distance, in `f32`), which may differ from Rust's in the last bits.
/// - Times are stored as nanoseconds since the Unix epoch, so the clock
///   must read between the years 1677 and 2262
///   ([`StoreError::Unsupported`] otherwise).
///
/// Every operation runs on tokio's blocking pool, so use the store inside a
/// tokio runtime. Clones share the connections.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Database>,
    options: StoreOptions,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.db.path())
            .field("index", &self.options.index)
            .field("ttl", &self.options.ttl)
            .finish_non_exhaustive()
    }
}

impl DbError for StoreError {
    fn open_failed(err: rusqlite::Error) -> Self {
        sql::db(err)
    }

    fn commit_failed(err: rusqlite::Error) -> Self {
        sql::db(err)
    }

    fn is_busy(&self) -> bool {
        let StoreError::Backend {
            source: Some(source),
            ..
        } = self
        else {
            return false;
        };
        source
            .downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code)
            .is_some_and(|code| {
                matches!(
                    code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                )
            })
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` in WAL mode
    /// and applies the migrations this build knows (the saver's and the
    /// store's: one file may hold both).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite cannot open or migrate the file,
    /// or the file was migrated by a newer build.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let db = spawn(move || Database::open(path).map_err(|err| StoreError::backend(NAME, err)))
            .await?;
        Ok(Self::on(Arc::new(db)))
    }

    /// A private in-memory database, migrated; it disappears with the last
    /// clone of the store.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite cannot allocate the database.
    pub async fn in_memory() -> Result<Self> {
        let db =
            spawn(|| Database::in_memory().map_err(|err| StoreError::backend(NAME, err))).await?;
        Ok(Self::on(Arc::new(db)))
    }

    /// A store on the connections of `saver` (its file or its in-memory
    /// database), whose migrations already created the store's tables.
    pub fn from_saver(saver: &SqliteSaver) -> Self {
        Self::on(saver.database().clone())
    }

    fn on(db: Arc<Database>) -> Self {
        Self {
            db,
            options: StoreOptions::new(),
        }
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

    /// The database file, or `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.db.path().map(|path| path.as_path())
    }

    /// The version of sqlite-vec that scores this store's searches, as
    /// SQLite reports it on the store's connection (`vec_version()`, such
    /// as `"v0.1.9"`). Only with the `sqlite-vec` feature.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite fails.
    #[cfg(feature = "sqlite-vec")]
    pub async fn sqlite_vec_version(&self) -> Result<String> {
        let db = self.db.clone();
        spawn(move || {
            db.read(move |conn| {
                conn.query_row("SELECT vec_version()", [], |row| row.get(0))
                    .map_err(sql::db)
            })
        })
        .await
    }

    /// Applies the migrations that are not applied yet; a no-op once they
    /// are ([`SqliteStore::open`] already does).
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub async fn setup(&self) -> Result<()> {
        let db = self.db.clone();
        spawn(move || {
            db.write_alone(schema::migrate)
                .map_err(|err| StoreError::backend(NAME, err))
        })
        .await
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

    /// Deletes every item expired at the clock's time with its vectors, in
    /// transactions of at most 500 items (so a large sweep never holds the
    /// write lock long); returns how many.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite fails (the batches already
    /// committed stay deleted); [`StoreError::Unsupported`] for a clock
    /// outside the years 1677..2262.
    pub async fn sweep_expired(&self) -> Result<usize> {
        let (_, now) = plan::read_clock(&self.options.clock, NAME)?;
        let mut swept = 0;
        loop {
            let db = self.db.clone();
            let deleted = db
                .write_async(move |conn| sql::sweep_some(conn, now))
                .await?;
            swept += deleted;
            if deleted < sql::SWEEP_BATCH {
                return Ok(swept);
            }
        }
    }
}

/// Runs `op` on tokio's blocking pool. A panic inside `op` is resumed here.
async fn spawn<T: Send + 'static>(op: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    match tokio::task::spawn_blocking(op).await {
        Ok(result) => result,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        // The runtime is shutting down.
        Err(err) => Err(StoreError::backend(NAME, err)),
    }
}

impl Store for SqliteStore {
    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        let settings = plan::Settings {
            store: NAME,
            options: &self.options,
        };
        let plan = plan::prepare(ops, &settings).await?;
        if plan.steps.is_empty() {
            return Ok(Vec::new());
        }
        if plan.writes {
            return self
                .db
                .write_async(move |conn| sql::write_batch(conn, &plan))
                .await;
        }
        let db = self.db.clone();
        spawn(move || db.read(move |conn| sql::read_batch(conn, &plan))).await
    }

    fn capabilities(&self) -> StoreCapabilities {
        self.options.capabilities()
    }
}
