//! The connections of one saver: one writer and a small pool of readers.
//!
//! SQLite in WAL mode lets any number of readers run beside one writer, each
//! reader seeing the snapshot of the moment its transaction started. So a
//! file database gets one writer connection, owned by a thread of its own
//! that commits the writes waiting for it together ([`crate::writer`]),
//! and reader connections taken from a pool, opened on demand, so reads
//! never wait for a lock of ours. An in-memory database lives inside its
//! one connection, so it has no pool: reads go to the writer thread too.
//!
//! Writes are awaited ([`Database::write_async`]); everything else here
//! blocks, and the saver and the store call it from
//! `tokio::task::spawn_blocking`. Operations end with
//! the error type of
//! whoever runs them ([`DbError`]): the saver's
//! [`stategraph_checkpoint::Error`] or the store's
//! [`StoreError`](stategraph_store::StoreError).

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use stategraph_checkpoint::Result;

use crate::error::{OpenFailed, backend, is_busy, sqlite, sqlite_in};
use crate::schema;
use crate::writer::{self, Failed, Writer};

/// Reader connections open at once, at most; a read waits for a free one
/// beyond that.
const MAX_READERS: usize = 8;

/// Idle reader connections kept open; a connection returned to a full idle
/// list is closed.
const MAX_IDLE_READERS: usize = 4;

/// How often an operation that failed with `SQLITE_BUSY` is attempted in all.
const BUSY_ATTEMPTS: u32 = 8;

/// The error an operation on the database ends with.
pub(crate) trait DbError: Sized {
    /// A reader connection could not be opened.
    fn open_failed(err: rusqlite::Error) -> Self;

    /// Whether SQLite said another connection holds a lock (`SQLITE_BUSY`
    /// or `SQLITE_LOCKED`), so the operation may succeed when run again.
    fn is_busy(&self) -> bool;

    /// SQLite failed around the operation (its batch did not commit).
    fn commit_failed(err: rusqlite::Error) -> Self;

    /// The writer thread answered `failed` instead of running the
    /// operation; a panic in it is resumed here.
    fn from_failed(failed: Failed) -> Self {
        match failed {
            Failed::Commit(err) => Self::commit_failed(err),
            Failed::Panic(panic) => std::panic::resume_unwind(panic),
            Failed::Gone => Self::commit_failed(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISUSE),
                Some("the database's writer has stopped".into()),
            )),
        }
    }
}

impl DbError for stategraph_checkpoint::Error {
    fn open_failed(err: rusqlite::Error) -> Self {
        sqlite("open", err)
    }

    fn commit_failed(err: rusqlite::Error) -> Self {
        sqlite("commit", err)
    }

    fn is_busy(&self) -> bool {
        is_busy(self)
    }
}

/// The connections of one saver (or store, or both: they may share them).
pub(crate) struct Database {
    writer: Writer,
    // `None` for an in-memory database: reads use the writer.
    readers: Option<ReaderPool>,
}

struct ReaderPool {
    path: PathBuf,
    state: Mutex<Readers>,
    // Signalled when a reader is returned or closed.
    returned: Condvar,
}

#[derive(Default)]
struct Readers {
    idle: Vec<Connection>,
    // Invariant: `open` counts the idle connections and those checked out.
    open: usize,
}

impl Database {
    /// Opens (creating if needed) a database file in WAL mode and migrates it.
    pub(crate) fn open(path: PathBuf) -> Result<Self> {
        let named = |source| {
            let path = path.clone();
            backend("open", OpenFailed { path, source })
        };
        let mut writer = Connection::open(&path).map_err(named)?;
        schema::configure(&writer).map_err(named)?;
        schema::enable_wal(&writer)?;
        schema::migrate(&mut writer)?;
        Ok(Self {
            writer: Writer::start(writer).map_err(named_io("open"))?,
            readers: Some(ReaderPool {
                path,
                state: Mutex::new(Readers::default()),
                returned: Condvar::new(),
            }),
        })
    }

    /// Opens a private in-memory database and migrates it.
    pub(crate) fn in_memory() -> Result<Self> {
        let mut writer = Connection::open_in_memory().map_err(sqlite_in("open"))?;
        schema::configure(&writer).map_err(sqlite_in("open"))?;
        schema::migrate(&mut writer)?;
        Ok(Self {
            writer: Writer::start(writer).map_err(named_io("open"))?,
            readers: None,
        })
    }

    /// The database file, `None` in memory.
    pub(crate) fn path(&self) -> Option<&PathBuf> {
        self.readers.as_ref().map(|pool| &pool.path)
    }

    /// Runs `op` on the writer connection, in the writer's next batch
    /// (see [`crate::writer`]): in a savepoint of its own, rolled back if it
    /// fails; it returns once the batch committed. `op` must not begin a
    /// transaction.
    pub(crate) async fn write_async<T: Send + 'static, E: DbError + Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E> {
        writer::wait_async(self.writer.batched(op))
            .await
            .unwrap_or_else(|failed| Err(E::from_failed(failed)))
    }

    /// Runs `op` alone on the writer connection, outside any batch (for
    /// work that opens its own transaction, such as a migration).
    pub(crate) fn write_alone<T: Send + 'static, E: DbError + Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E> {
        writer::wait(self.writer.alone(op)).unwrap_or_else(|failed| Err(E::from_failed(failed)))
    }

    /// Runs `op` in the writer's next batch, for a caller's own tables
    /// ([`SqliteSaver::write_with`](crate::SqliteSaver::write_with)): its
    /// error is its own, the outer one the batch's.
    pub(crate) async fn write_with<T: Send + 'static, E: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<Result<T, E>> {
        writer::wait_async(self.writer.batched(op))
            .await
            .map_err(stategraph_checkpoint::Error::from_failed)
    }

    /// Runs `op` on a reader connection, again when SQLite reports busy. `op`
    /// opens its own read transaction when it runs more than one statement.
    pub(crate) fn read<T: Send + 'static, E: DbError + Send + 'static>(
        &self,
        mut op: impl FnMut(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E> {
        let Some(pool) = &self.readers else {
            return writer::wait(self.writer.alone(move |conn| op(conn)))
                .unwrap_or_else(|failed| Err(E::from_failed(failed)));
        };
        let reader = pool.checkout().map_err(E::open_failed)?;
        retry_busy(|| op(reader.conn()))
    }
}

/// The writer thread could not be started.
fn named_io(
    operation: &'static str,
) -> impl FnOnce(std::io::Error) -> stategraph_checkpoint::Error {
    move |err| backend(operation, err)
}

impl ReaderPool {
    fn checkout(&self) -> rusqlite::Result<Reader<'_>> {
        let mut state = lock(&self.state);
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Reader {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < MAX_READERS {
                state.open += 1;
                break;
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        drop(state);
        match self.connect() {
            Ok(conn) => Ok(Reader {
                pool: self,
                conn: Some(conn),
            }),
            Err(err) => {
                self.close_one();
                Err(err)
            }
        }
    }

    fn connect(&self) -> rusqlite::Result<Connection> {
        // The writer created the file and set WAL mode, which persists.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags)?;
        schema::configure(&conn)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(conn)
    }

    fn checkin(&self, conn: Connection) {
        // A connection left inside a transaction (a failed statement after
        // BEGIN whose rollback also failed, or a panic) is closed, not reused.
        let mut state = lock(&self.state);
        if conn.is_autocommit() && state.idle.len() < MAX_IDLE_READERS {
            state.idle.push(conn);
        } else {
            state.open -= 1;
        }
        drop(state);
        self.returned.notify_one();
    }

    fn close_one(&self) {
        lock(&self.state).open -= 1;
        self.returned.notify_one();
    }
}

/// A reader connection checked out of the pool; returned when dropped,
/// also when the operation panicked.
struct Reader<'p> {
    pool: &'p ReaderPool,
    // Invariant: `Some` until dropped.
    conn: Option<Connection>,
}

impl Reader<'_> {
    fn conn(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("a checked-out reader holds its connection until dropped")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.checkin(conn);
        }
    }
}

/// Runs `op` until it does not fail with `SQLITE_BUSY`, at most
/// [`BUSY_ATTEMPTS`] times with a growing pause.
///
/// The busy timeout already makes SQLite wait for locks; this covers the
/// cases where SQLite reports busy without waiting (a WAL recovery in
/// progress, a journal-mode switch).
pub(crate) fn retry_busy<T, E: DbError>(mut op: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        match op() {
            Err(err) if attempt < BUSY_ATTEMPTS && err.is_busy() => {
                std::thread::sleep(Duration::from_millis(5 << attempt));
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Locks a mutex, also after a panic in another holder: every operation runs
/// in a transaction that rolls back when its guard is dropped, so the
/// connection is consistent again.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
