//! Where the server keeps its own records (threads; runs and assistants
//! follow): the [`Repository`] trait and its backends. Checkpoints and the
//! store stay in the savers and stores of the layers below.

mod memory;
mod postgres;
mod sqlite;
mod stamped;

use futures::future::BoxFuture;

pub(crate) use memory::MemoryRepository;
pub(crate) use postgres::PostgresRepository;
pub(crate) use sqlite::SqliteRepository;

use crate::assistants::{Assistant, AssistantChange, AssistantFilter, AssistantVersion, Changed};
use crate::crons::{Cron, CronFilter, CronPatch};
use crate::runs::{Run, RunQuery};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};
use chrono::{DateTime, Utc};

/// The server's storage: its records, and the saver and store its graphs
/// are bound to, all on the backend `database.url` names.
pub(crate) struct Storage {
    pub(crate) repository: std::sync::Arc<dyn Repository>,
    pub(crate) saver: stategraph::checkpoint::SharedSaver,
    pub(crate) store: stategraph::store::SharedStore,
    /// Deletes the store's expired items while the storage is open.
    pub(crate) sweeper: stategraph::store::Sweeper,
}

impl Storage {
    /// Opens the storage `url` names (its saver stamps each checkpoint's
    /// thread into its metadata, as LangGraph Server's does): `memory`, `sqlite://PATH` (one file
    /// for records, checkpoints and store items; created if needed), or
    /// `postgres://...` (one database and pool for all three; migrated).
    ///
    /// # Errors
    /// [`Error::Database`](crate::Error::Database) when the file cannot be
    /// opened or migrated; [`Error::Unsupported`](crate::Error::Unsupported)
    /// for another kind of URL.
    pub(crate) async fn open(
        database: &crate::settings::DatabaseSettings,
        store: &crate::settings::StoreSettings,
    ) -> std::result::Result<Self, crate::Error> {
        let mut storage = Self::open_backend(database, store.options()).await?;
        storage.saver = std::sync::Arc::new(stamped::ThreadStamped(storage.saver));
        Ok(storage)
    }

    async fn open_backend(
        database: &crate::settings::DatabaseSettings,
        options: stategraph::store::StoreOptions,
    ) -> std::result::Result<Self, crate::Error> {
        let url = database.url.as_str();
        let prepared = database.prepared_statements;
        use std::sync::Arc;

        use stategraph::checkpoint::InMemorySaver;
        use stategraph::checkpoint_sqlite::{SqliteSaver, SqliteStore};
        use stategraph::store::InMemoryStore;

        if url == "memory" {
            let store = InMemoryStore::new().with_options(options);
            return Ok(Self {
                repository: Arc::new(MemoryRepository::default()),
                saver: Arc::new(InMemorySaver::new()),
                sweeper: store.start_sweeper(),
                store: Arc::new(store),
            });
        }
        let database = |message: String| crate::Error::Database {
            url: url.to_owned(),
            message,
        };
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err(database("no file after `sqlite://`".into()));
            }
            let path = std::path::Path::new(path);
            let saver = SqliteSaver::open(path).map_err(|err| database(err.to_string()))?;
            let store = SqliteStore::from_saver(&saver).with_options(options);
            let repository =
                SqliteRepository::open(saver.clone()).map_err(|err| database(err.0))?;
            return Ok(Self {
                repository: Arc::new(repository),
                saver: Arc::new(saver),
                sweeper: store.start_sweeper(),
                store: Arc::new(store),
            });
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            use stategraph::checkpoint_postgres::{PostgresSaver, PostgresStore};
            let pool = PostgresSaver::pool_options()
                .connect(url)
                .await
                .map_err(|err| database(err.to_string()))?;
            let saver = PostgresSaver::from_pool(pool.clone()).with_prepared_statements(prepared);
            saver
                .setup()
                .await
                .map_err(|err| database(err.to_string()))?;
            let store = PostgresStore::from_pool(pool.clone()).with_options(options);
            let repository = PostgresRepository::open(pool, prepared)
                .await
                .map_err(|err| database(err.0))?;
            return Ok(Self {
                repository: Arc::new(repository),
                saver: Arc::new(saver),
                sweeper: store.start_sweeper(),
                store: Arc::new(store),
            });
        }
        Err(crate::Error::Unsupported(format!(
            "database.url {url:?}: \"memory\", \"sqlite://PATH\" and \"postgres://...\" are served"
        )))
    }
}

/// The schema of the SQL repositories, one entry per version, applied in
/// order and never edited: a database records the text of each migration
/// it applied, and the server refuses one whose history differs from this
/// list or is longer. SQLite and PostgreSQL take the same statements.
const MIGRATIONS: &[&str] = &[
    "\
CREATE TABLE sg_threads (
    thread_id TEXT PRIMARY KEY,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE TABLE sg_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX sg_runs_by_thread ON sg_runs (thread_id, created_at);
",
    "\
CREATE TABLE sg_assistants (
    assistant_id TEXT PRIMARY KEY,
    doc TEXT NOT NULL
);
CREATE TABLE sg_assistant_versions (
    assistant_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
",
    "\
CREATE TABLE sg_crons (
    cron_id TEXT PRIMARY KEY,
    next_run_date TEXT,
    doc TEXT NOT NULL
);
CREATE INDEX sg_crons_by_next_run ON sg_crons (next_run_date);
",
    "\
ALTER TABLE sg_threads ADD COLUMN expires_at TEXT;
CREATE INDEX sg_threads_by_expiry ON sg_threads (expires_at);
",
];

/// The migrations a database lacks, after checking the ones it applied
/// (`(version, text)`, in order) are this server's.
///
/// # Errors
/// A history that is longer than this server's, or differs from it.
fn missing_migrations(
    applied: &[(i64, String)],
) -> Result<impl Iterator<Item = (i64, &'static str)>> {
    if applied.len() > MIGRATIONS.len() {
        return Err(PersistError(format!(
            "the database's server schema is version {}, newer than this server's {}",
            applied.len(),
            MIGRATIONS.len()
        )));
    }
    for (index, (version, text)) in applied.iter().enumerate() {
        if usize::try_from(*version).ok() != Some(index + 1) || text != MIGRATIONS[index] {
            return Err(PersistError(format!(
                "the database's server schema migration {version} is not the one this server knows"
            )));
        }
    }
    Ok(MIGRATIONS
        .iter()
        .enumerate()
        .skip(applied.len())
        .map(|(index, text)| (i64::try_from(index + 1).unwrap_or(i64::MAX), *text)))
}

/// One page of `found` (every match) in `search`'s order, and the count of
/// matches.
fn page(found: Vec<Thread>, search: &ThreadSearch) -> (Vec<Thread>, usize) {
    crate::wire::sorted_page(
        found,
        |a, b| search.compare(a, b),
        search.offset,
        search.limit,
    )
}

/// A repository operation that failed in its backend.
#[derive(Debug, thiserror::Error)]
#[error("repository: {0}")]
pub(crate) struct PersistError(pub(crate) String);

pub(crate) type Result<T> = std::result::Result<T, PersistError>;

/// What an insert found.
#[derive(Debug)]
pub(crate) enum Inserted<T = Thread> {
    /// The record is new and now stored.
    New(T),
    /// A record with that id was there already; it is unchanged.
    Existing(T),
}

/// The server's records. Each method is one atomic step of its backend.
pub(crate) trait Repository: Send + Sync + std::fmt::Debug {
    /// Stores `thread` unless its id is taken.
    fn insert_thread(&self, thread: Thread) -> BoxFuture<'_, Result<Inserted>>;
    /// The thread, if there is one with that id.
    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>>>;
    /// Applies `patch`; the thread after it, or `None` when there is none.
    fn patch_thread<'a>(
        &'a self,
        thread_id: &'a str,
        patch: ThreadPatch,
    ) -> BoxFuture<'a, Result<Option<Thread>>>;
    /// Removes the thread and its runs; whether there was one.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool>>;
    /// One page of the matching threads, and how many match in all.
    fn search_threads<'a>(
        &'a self,
        search: &'a ThreadSearch,
    ) -> BoxFuture<'a, Result<(Vec<Thread>, usize)>>;
    /// How many threads match.
    fn count_threads<'a>(&'a self, filter: &'a ThreadFilter) -> BoxFuture<'a, Result<usize>>;
    /// Up to `limit` threads whose TTL ran out before `now`, the longest
    /// expired first.
    fn expired_threads(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Thread>>>;

    /// Stores a new run.
    fn insert_run(&self, run: Run) -> BoxFuture<'_, Result<()>>;
    /// The run of that thread with that id.
    fn get_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Run>>>;
    /// Replaces a run's record; whether it was there (a deleted run stays
    /// deleted).
    fn replace_run(&self, run: Run) -> BoxFuture<'_, Result<bool>>;
    /// A thread's runs, newest first.
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<Run>>>;
    /// Every pending or running run, oldest first (what a server starting
    /// on this database takes over).
    fn in_flight_runs(&self) -> BoxFuture<'_, Result<Vec<Run>>>;
    /// Removes a run; whether there was one.
    fn delete_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str)
    -> BoxFuture<'a, Result<bool>>;

    /// Stores `assistant` and its first version unless its id is taken.
    fn insert_assistant(&self, assistant: Assistant) -> BoxFuture<'_, Result<Inserted<Assistant>>>;
    /// The assistant, if there is one with that id.
    fn get_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Assistant>>>;
    /// Applies `change` to the stored assistant and its versions in one step.
    fn change_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
        change: AssistantChange,
    ) -> BoxFuture<'a, Result<Changed>>;
    /// Removes the assistant and its versions; whether there was one.
    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool>>;
    /// Every assistant that passes `filter`.
    fn find_assistants<'a>(
        &'a self,
        filter: &'a AssistantFilter,
    ) -> BoxFuture<'a, Result<Vec<Assistant>>>;
    /// Every version of the assistant (empty when there is none).
    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AssistantVersion>>>;

    /// Stores a new cron.
    fn insert_cron(&self, cron: Cron) -> BoxFuture<'_, Result<()>>;
    /// The cron, if there is one with that id.
    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>>>;
    /// Applies `patch` at `now`; the cron after it, or `None` when there is
    /// none.
    fn patch_cron<'a>(
        &'a self,
        cron_id: &'a str,
        patch: CronPatch,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<Cron>>>;
    /// Removes a cron; whether there was one.
    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool>>;
    /// Every cron that passes `filter`.
    fn find_crons<'a>(&'a self, filter: &'a CronFilter) -> BoxFuture<'a, Result<Vec<Cron>>>;
    /// Takes the crons due at `now` ([`Cron::is_due`]) and moves each one's
    /// `next_run_date` past `now`, in one step, so that two schedulers never
    /// fire the same cron time; the crons as they were.
    fn claim_due_crons(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<Cron>>>;
}
