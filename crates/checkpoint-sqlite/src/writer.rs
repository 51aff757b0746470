//! The writer thread of a database: it owns the one connection that
//! writes, and commits the writes waiting for it together (group commit).
//!
//! Callers queue jobs and wait for their answers. The thread takes every
//! job waiting when it wakes (up to [`MAX_BATCH`]) and runs them in one
//! `BEGIN IMMEDIATE` … `COMMIT`: each job keeps its own atomicity with a
//! savepoint of its own, and gets its answer only once the batch committed,
//! so no caller hears "done" for a write that is not in the file. Under
//! load a commit (its lock, its WAL frames, and a page shared by several
//! writes) serves many writes, and no two threads of ours contend for the
//! connection; alone, a write costs what it did.
//!
//! Jobs that manage their own transaction (migrations) run alone, between
//! batches. A panic in a job is caught here, its savepoint rolled back by
//! its guard, and handed back to the caller, whose thread resumes it.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

/// Jobs committed together, at most.
const MAX_BATCH: usize = 256;

/// How often a batch's `BEGIN IMMEDIATE` is attempted while the file is
/// busy, before its jobs are answered with that error.
const BEGIN_ATTEMPTS: u32 = 4;

/// Why a job has no answer.
pub(crate) enum Failed {
    /// Its batch's `COMMIT` failed: its writes are not in the file.
    Commit(rusqlite::Error),
    /// It panicked; the payload, to resume on the caller's thread.
    Panic(Box<dyn Any + Send>),
    /// The writer thread is gone (the database is being dropped).
    Gone,
}

/// What a batched job leaves once it ran: the answer to send when the
/// batch's fate is known (`None`: committed).
type Settle = Box<dyn FnOnce(Option<&rusqlite::Error>) + Send>;

/// A batched job: it runs inside a batch's transaction (`Some` connection)
/// or is refused (`None`: the batch could not begin).
type BatchedJob = Box<dyn FnOnce(Option<&mut Connection>) -> Settle + Send>;

enum Job {
    /// Runs inside a batch's transaction; its closure must not begin one.
    Batched(BatchedJob),
    /// Runs alone, outside any transaction of the writer's.
    Alone(Box<dyn FnOnce(&mut Connection) + Send>),
}

/// The handle on a writer thread; dropping it lets the thread finish the
/// queued jobs, close the connection and end.
pub(crate) struct Writer {
    // `Option` only so that `Drop` can close the queue before joining.
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// The answer to a queued job.
pub(crate) type Answer<T> = oneshot::Receiver<Result<T, Failed>>;

impl Writer {
    /// Starts the thread that owns `conn`.
    pub(crate) fn start(conn: Connection) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || serve(conn, &queue))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues `op` to run in the next batch's transaction, in a savepoint
    /// of its own: rolled back when `op` fails or panics, so the batch
    /// keeps none of its writes. Its answer comes once the batch
    /// committed. `op` must not begin a transaction (savepoints are fine).
    pub(crate) fn batched<T: Send + 'static, E: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> Answer<Result<T, E>> {
        let (answer, answered) = oneshot::channel();
        let job = Job::Batched(Box::new(move |conn: Option<&mut Connection>| -> Settle {
            let (outcome, failed) = match conn {
                Some(conn) => in_savepoint(conn, op),
                None => (None, None),
            };
            Box::new(move |commit: Option<&rusqlite::Error>| {
                let result = match (outcome, failed.as_ref().or(commit)) {
                    (Some(Err(panic)), _) => Err(Failed::Panic(panic)),
                    // Its own failure, whatever became of the batch: none
                    // of its writes are kept either way.
                    (Some(Ok(Err(err))), _) => Ok(Err(err)),
                    (_, Some(err)) => Err(Failed::Commit(copy_error(err))),
                    (Some(Ok(value)), None) => Ok(value),
                    // Not run, and nothing said why (cannot happen: a
                    // refused batch is settled with its error).
                    (None, None) => Err(Failed::Gone),
                };
                // The caller may have stopped waiting.
                let _ = answer.send(result);
            })
        }));
        self.queue(job);
        answered
    }

    /// Queues `op` to run alone, outside any transaction of the writer's
    /// (for work that opens its own, or reads).
    pub(crate) fn alone<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> T + Send + 'static,
    ) -> Answer<T> {
        let (answer, answered) = oneshot::channel();
        self.queue(Job::Alone(Box::new(move |conn: &mut Connection| {
            let result = catch_unwind(AssertUnwindSafe(|| op(conn))).map_err(Failed::Panic);
            let _ = answer.send(result);
        })));
        answered
    }

    fn queue(&self, job: Job) {
        // A closed queue drops the job, and with it the answer's sender:
        // the caller sees `Failed::Gone`.
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            // Dropped by a job on the writer thread itself: it ends once
            // that job returns.
            if thread.thread().id() == std::thread::current().id() {
                return;
            }
            // The thread catches its jobs' panics; a join error is not ours
            // to raise in a destructor.
            let _ = thread.join();
        }
    }
}

/// Waits (blocking the thread) for an answer; for callers off the async
/// executor.
pub(crate) fn wait<T>(answer: Answer<T>) -> Result<T, Failed> {
    answer.blocking_recv().unwrap_or(Err(Failed::Gone))
}

/// Waits for an answer without blocking the executor.
pub(crate) async fn wait_async<T>(answer: Answer<T>) -> Result<T, Failed> {
    answer.await.unwrap_or(Err(Failed::Gone))
}

/// The writer thread: jobs in order, the batched ones that wait together
/// committed together.
fn serve(mut conn: Connection, queue: &mpsc::Receiver<Job>) {
    let mut next = None;
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(mpsc::RecvError) => return,
            },
        };
        match job {
            Job::Alone(run) => run(&mut conn),
            Job::Batched(first) => {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match queue.try_recv() {
                        Ok(Job::Batched(job)) => batch.push(job),
                        Ok(alone) => {
                            next = Some(alone);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                commit_together(&mut conn, batch);
            }
        }
    }
}

/// Runs `op` in a savepoint, rolled back unless `op` returns `Ok`; outside
/// a transaction the savepoint is one, committed by its release. Returns
/// `op`'s outcome (`None` when it could not start) and the error that kept
/// its writes out, if any.
fn in_savepoint<T, E>(
    conn: &mut Connection,
    op: impl FnOnce(&mut Connection) -> Result<T, E>,
) -> (
    Option<std::thread::Result<Result<T, E>>>,
    Option<rusqlite::Error>,
) {
    if let Err(err) = conn.execute_batch("SAVEPOINT sg_job") {
        return (None, Some(err));
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| op(conn)));
    if !matches!(outcome, Ok(Ok(_)))
        && let Err(err) = conn.execute_batch("ROLLBACK TO sg_job")
    {
        let _ = conn.execute_batch("RELEASE sg_job");
        return (Some(outcome), Some(err));
    }
    let released = conn.execute_batch("RELEASE sg_job");
    (Some(outcome), released.err())
}

/// Runs `batch` in one transaction and settles every job with its outcome.
/// When the transaction cannot begin (another process held the write lock
/// past the busy timeout, every attempt), no job runs and each gets that
/// error.
fn commit_together(conn: &mut Connection, batch: Vec<BatchedJob>) {
    if let Err(err) = begin(conn) {
        for job in batch {
            job(None)(Some(&err));
        }
        return;
    }
    let mut settles: Vec<Settle> = Vec::with_capacity(batch.len());
    let mut jobs = batch.into_iter();
    while let Some(job) = jobs.next() {
        settles.push(job(Some(conn)));
        // SQLite rolls a transaction back by itself on some errors (disk
        // full, I/O, out of memory): the batch's earlier writes are gone,
        // and a later job would run, and commit, on its own. So every job
        // of the batch hears of it, and the rest do not run.
        if conn.is_autocommit() {
            let lost = rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                Some("SQLite rolled back the batch's transaction after an error in one of its writes".into()),
            );
            for settle in settles {
                settle(Some(&lost));
            }
            for job in jobs {
                job(None)(Some(&lost));
            }
            return;
        }
    }
    let committed = conn.execute_batch("COMMIT");
    if committed.is_err() && !conn.is_autocommit() {
        // Nothing of the batch is kept; a failed rollback leaves the
        // connection to SQLite's own recovery.
        let _ = conn.execute_batch("ROLLBACK");
    }
    let failure = committed.err();
    for settle in settles {
        settle(failure.as_ref());
    }
}

/// Begins a batch's transaction, trying again while the file is busy
/// (SQLite waits the busy timeout first, but skips it in a few cases, such
/// as a WAL recovery in progress).
fn begin(conn: &Connection) -> rusqlite::Result<()> {
    let mut attempt = 1;
    loop {
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Err(err) if is_busy(&err) && attempt < BEGIN_ATTEMPTS => {
                std::thread::sleep(Duration::from_millis(5 << attempt));
                attempt += 1;
            }
            done => return done,
        }
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A copy of a commit's error for each job of the batch (`rusqlite::Error`
/// is not `Clone`): the SQLite code and message are kept.
fn copy_error(err: &rusqlite::Error) -> rusqlite::Error {
    match err {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    fn writer() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v INTEGER NOT NULL)")
            .unwrap();
        (dir, Writer::start(conn).unwrap())
    }

    fn insert(v: i64) -> impl FnOnce(&mut Connection) -> rusqlite::Result<bool> {
        move |conn| {
            conn.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
            // Inside the batch's transaction.
            Ok(!conn.is_autocommit())
        }
    }

    fn values(writer: &Writer) -> Vec<i64> {
        let read = writer.alone(|conn: &mut Connection| {
            let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").unwrap();
            stmt.query_map([], |row| row.get(0))
                .unwrap()
                .collect::<rusqlite::Result<Vec<i64>>>()
                .unwrap()
        });
        wait(read).ok().unwrap()
    }

    /// Jobs queued while the writer is busy are committed in one batch; a
    /// job that fails keeps none of its writes, a panicking one gives its
    /// panic back, and the others of the batch are committed.
    #[test]
    fn waiting_jobs_commit_together_and_a_failed_one_keeps_nothing() {
        let (_dir, writer) = writer();
        let gate = Arc::new(Barrier::new(2));
        let held = Arc::clone(&gate);
        let busy = writer.alone(move |_: &mut Connection| {
            held.wait();
        });
        let first = writer.batched(insert(1));
        let failing = writer.batched(|conn: &mut Connection| {
            conn.execute("INSERT INTO t (v) VALUES (2)", [])?;
            conn.execute("INSERT INTO nowhere VALUES (1)", [])
        });
        let panicking = writer.batched(|conn: &mut Connection| -> rusqlite::Result<()> {
            conn.execute("INSERT INTO t (v) VALUES (3)", [])?;
            panic!("a job's own bug")
        });
        let last = writer.batched(insert(4));
        gate.wait();
        wait(busy).ok().unwrap();
        assert!(
            wait(first).ok().unwrap().unwrap(),
            "ran inside a transaction"
        );
        assert!(wait(failing).ok().unwrap().is_err());
        assert!(matches!(wait(panicking), Err(Failed::Panic(_))));
        assert!(wait(last).ok().unwrap().unwrap());
        assert_eq!(values(&writer), vec![1, 4]);
    }

    /// When the batch's transaction ends under it (here a job rolls it
    /// back, as SQLite does by itself on a full disk), no job of the batch
    /// is answered success: the earlier ones lost their writes, the later
    /// ones do not run.
    #[test]
    fn a_batch_whose_transaction_is_lost_answers_every_job_with_the_loss() {
        let (_dir, writer) = writer();
        let gate = Arc::new(Barrier::new(2));
        let held = Arc::clone(&gate);
        let busy = writer.alone(move |_: &mut Connection| {
            held.wait();
        });
        let before = writer.batched(insert(1));
        let lose = writer.batched(|conn: &mut Connection| conn.execute_batch("ROLLBACK"));
        let after = writer.batched(insert(3));
        gate.wait();
        wait(busy).ok().unwrap();
        for answer in [before, after] {
            assert!(matches!(wait(answer), Err(Failed::Commit(_))));
        }
        assert!(matches!(wait(lose), Err(Failed::Commit(_))));
        assert_eq!(values(&writer), Vec::<i64>::new());
        // The writer goes on.
        assert!(wait(writer.batched(insert(4))).ok().unwrap().unwrap());
        assert_eq!(values(&writer), vec![4]);
    }

    /// A job alone may open its own transaction; a dropped writer answers
    /// nothing more and its thread ends.
    #[test]
    fn a_job_alone_manages_its_own_transaction() {
        let (_dir, writer) = writer();
        let own = writer.alone(|conn: &mut Connection| {
            let tx = conn.transaction().unwrap();
            tx.execute("INSERT INTO t (v) VALUES (7)", []).unwrap();
            tx.commit().unwrap();
        });
        wait(own).ok().unwrap();
        assert_eq!(values(&writer), vec![7]);
        drop(writer);
    }
}
