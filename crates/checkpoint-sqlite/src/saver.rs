//! [`SqliteSaver`]: the [`CheckpointSaver`] on SQLite.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use futures::stream::{self, Stream};
use stategraph_checkpoint::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver,
    CheckpointTuple, ListQuery, MetadataFilter, PruneStrategy, Result, SaverCapabilities, Value,
    limits,
};

use crate::error::backend;
use crate::ops::{self, ListCursor, PutRequest, WritesRequest};
use crate::pool::Database;
use crate::schema;

/// Checkpoints a `list` reads from SQLite per round trip (fewer when the
/// query has a smaller `limit` and no filter).
const PAGE_ROWS: usize = 64;

/// A checkpoint saver that stores threads in a SQLite database.
///
/// - [`SqliteSaver::open`] uses a database file in WAL mode: one writer
///   connection and a small pool of reader connections, so reads run
///   concurrently with each other and with the writer. Several savers and
///   several processes may open the same file; writes take SQLite's write
///   lock with `BEGIN IMMEDIATE` and wait for it (busy timeout), so no
///   caller sees "database is locked" under normal contention.
/// - [`SqliteSaver::in_memory`] keeps a private database in one connection;
///   it disappears with the last clone of the saver.
///
/// Every operation runs on tokio's blocking pool (`spawn_blocking`), so
/// the saver must be used inside a tokio runtime. Clones share the
/// connections. Values are stored with
/// [`JsonSerializer`](stategraph_checkpoint::serde::JsonSerializer), once per
/// (thread, namespace, channel, version); metadata is stored as JSON text.
#[derive(Clone)]
pub struct SqliteSaver {
    db: Arc<Database>,
}

impl fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSaver")
            .field("path", &self.db.path())
            .finish_non_exhaustive()
    }
}

impl SqliteSaver {
    /// Opens (creating if needed) the database file at `path`, switches it to
    /// WAL mode and applies the migrations this build knows.
    ///
    /// Blocks while it opens the file and migrates: call it at start-up (or
    /// inside `spawn_blocking`), not in a latency-sensitive task.
    ///
    /// # Errors
    /// [`Error::Backend`](stategraph_checkpoint::Error::Backend) when SQLite cannot open or migrate the file, or
    /// when the file was migrated by a newer build
    /// ([`SchemaTooNewError`](crate::SchemaTooNewError) as the source).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self {
            db: Arc::new(Database::open(path.as_ref().to_path_buf())?),
        })
    }

    /// A private in-memory database, migrated.
    ///
    /// # Errors
    /// [`Error::Backend`](stategraph_checkpoint::Error::Backend) when SQLite cannot allocate the database.
    pub fn in_memory() -> Result<Self> {
        Ok(Self {
            db: Arc::new(Database::in_memory()?),
        })
    }

    /// Applies the migrations that are not applied yet. [`SqliteSaver::open`]
    /// already does; calling this again is a no-op, also when other
    /// processes set up the same file at the same time.
    ///
    /// # Errors
    /// As [`SqliteSaver::open`].
    pub async fn setup(&self) -> Result<()> {
        self.blocking("setup", |db| db.write_alone(schema::migrate))
            .await
    }

    /// The database file, or `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.db.path().map(|path| path.as_path())
    }

    /// Runs `op` on the saver's writer connection, between (and committed
    /// together with) the saver's own writes: for tables of your own in the
    /// same file (the server keeps its records this way). One writer per
    /// file means no two connections of this process contend for SQLite's
    /// write lock. `op` runs inside the writer's transaction, in a savepoint
    /// of its own that is rolled back when it returns `Err` (so it is
    /// atomic); it must not begin or end a transaction, and must not touch
    /// the saver's tables. The answer comes once the writes are committed.
    ///
    /// # Errors
    /// [`Error::Backend`](stategraph_checkpoint::Error::Backend) when the
    /// commit failed (`op`'s writes are not in the file) or the saver is
    /// being dropped; `op`'s own error as the inner `Err`.
    pub async fn write_with<T: Send + 'static, E: Send + 'static>(
        &self,
        op: impl FnOnce(&mut rusqlite::Connection) -> std::result::Result<T, E> + Send + 'static,
    ) -> Result<std::result::Result<T, E>> {
        self.db.write_with(op).await
    }

    /// Runs `op` on a reader connection of the saver (tokio's blocking
    /// pool), for reads of your own tables in the same file: it sees every
    /// write answered before it started, and waits for no writer.
    ///
    /// # Errors
    /// [`Error::Backend`](stategraph_checkpoint::Error::Backend) when no
    /// reader connection can be opened or the runtime is shutting down;
    /// `op`'s own error as the inner `Err`.
    pub async fn read_with<T: Send + 'static, E: Send + 'static>(
        &self,
        mut op: impl FnMut(&rusqlite::Connection) -> std::result::Result<T, E> + Send + 'static,
    ) -> Result<std::result::Result<T, E>> {
        self.blocking("read_with", move |db| db.read(move |conn| Ok(op(conn))))
            .await
    }

    /// The connections, shared with stores built from this saver.
    pub(crate) fn database(&self) -> &Arc<Database> {
        &self.db
    }

    async fn blocking<T: Send + 'static>(
        &self,
        operation: &'static str,
        op: impl FnOnce(&Database) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        run_blocking(self.db.clone(), operation, op).await
    }

    async fn put_checked(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        require_head: bool,
    ) -> Result<CheckpointConfig> {
        let config = config.clone();
        let operation = if require_head { "put_if_head" } else { "put" };
        limits::check_put(operation, &config, &checkpoint, &metadata, &new_versions)?;
        stategraph_checkpoint::Error::check_child_order(operation, &config, &checkpoint.id)?;
        // Serialized by the calling task (as LangGraph's savers do), so the
        // writer thread, which commits for everyone, only writes.
        let request = PutRequest::new(&config, checkpoint, metadata, &new_versions, require_head)?;
        let address = request.address();
        self.db
            .write_async(move |conn| ops::put(conn, &request))
            .await?;
        Ok(address)
    }
}

/// Runs `op` on tokio's blocking pool. A panic inside `op` is resumed here.
async fn run_blocking<T: Send + 'static>(
    db: Arc<Database>,
    operation: &'static str,
    op: impl FnOnce(&Database) -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(move || op(&db)).await {
        Ok(result) => result,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        // The runtime is shutting down.
        Err(err) => Err(backend(operation, err)),
    }
}

impl CheckpointSaver for SqliteSaver {
    fn capabilities(&self) -> SaverCapabilities {
        SaverCapabilities::all()
    }

    async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
        limits::check_config("get_tuple", config)?;
        let config = config.clone();
        self.blocking("get_tuple", move |db| {
            db.read(move |conn| ops::get_tuple(conn, &config))
        })
        .await
    }

    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
        let start = limits::check_query(&query)
            .and_then(|()| query.metadata_filter())
            .map(|filter| Listing {
                db: self.db.clone(),
                remaining: query.limit.unwrap_or(usize::MAX),
                query: Arc::new((query, filter)),
                cursor: None,
                buffer: VecDeque::new(),
                done: false,
            });
        stream::unfold(Some(start), |state| async move {
            match state? {
                Err(err) => Some((Err(err), None)),
                Ok(mut listing) => {
                    let item = listing.next().await?;
                    Some((item, Some(Ok(listing))))
                }
            }
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
        let config = config.clone();
        let (task_id, task_path) = (task_id.to_owned(), task_path.to_owned());
        let request = WritesRequest::new(&config, writes, &task_id, &task_path)?;
        if request.is_empty() {
            return Ok(());
        }
        self.db
            .write_async(move |conn| ops::put_writes(conn, &request))
            .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        limits::check_thread_ids("delete_thread", [thread_id])?;
        let thread_id = thread_id.to_owned();
        self.db
            .write_async(move |conn| ops::delete_thread(conn, &thread_id))
            .await
    }

    async fn delete_for_runs(&self, run_ids: &[String]) -> Result<()> {
        if run_ids.is_empty() {
            return Ok(());
        }
        let run_ids = limits::stored_run_ids(run_ids).into_owned();
        self.db
            .write_async(move |conn| ops::delete_for_runs(conn, &run_ids))
            .await
    }

    async fn copy_thread(&self, source: &str, target: &str) -> Result<()> {
        limits::check_thread_ids("copy_thread", [source, target])?;
        let (source, target) = (source.to_owned(), target.to_owned());
        self.db
            .write_async(move |conn| ops::copy_thread(conn, &source, &target))
            .await
    }

    async fn prune(&self, thread_ids: &[String], strategy: PruneStrategy) -> Result<()> {
        limits::check_thread_ids("prune", thread_ids.iter().map(String::as_str))?;
        if thread_ids.is_empty() {
            return Ok(());
        }
        let thread_ids = thread_ids.to_vec();
        self.db
            .write_async(move |conn| ops::prune(conn, &thread_ids, strategy))
            .await
    }
}

/// The state of one `list` stream: a keyset cursor over the listing order
/// and the current page. At most one page is held in memory.
struct Listing {
    db: Arc<Database>,
    query: Arc<(ListQuery, MetadataFilter)>,
    cursor: Option<ListCursor>,
    /// Items still wanted (`limit` counts matches and unreadable rows, not
    /// rows read).
    remaining: usize,
    buffer: VecDeque<Result<CheckpointTuple>>,
    done: bool,
}

impl Listing {
    async fn next(&mut self) -> Option<Result<CheckpointTuple>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(item);
            }
            if self.done || self.remaining == 0 {
                return None;
            }
            let rows = if self.query.1.is_empty() {
                self.remaining.min(PAGE_ROWS)
            } else {
                PAGE_ROWS
            };
            let (query, cursor, want) = (self.query.clone(), self.cursor.clone(), self.remaining);
            let page = run_blocking(self.db.clone(), "list", move |db| {
                db.read(move |conn| {
                    let (query, filter) = &*query;
                    ops::list_page(conn, query, filter, cursor.as_ref(), rows, want)
                })
            })
            .await;
            match page {
                Ok(page) => {
                    self.remaining = self.remaining.saturating_sub(page.items.len());
                    self.buffer.extend(page.items);
                    if page.cursor.is_some() {
                        self.cursor = page.cursor;
                    }
                    self.done = page.exhausted;
                }
                Err(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
    }
}
