//! Where the server keeps its own records (threads; runs and assistants
//! follow): the [`Repository`] trait and its backends. Checkpoints and the
//! store stay in the savers and stores of the layers below.

mod memory;

use futures::future::BoxFuture;

pub(crate) use memory::MemoryRepository;

use crate::runs::{Run, RunQuery};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};

/// A repository operation that failed in its backend.
#[derive(Debug, thiserror::Error)]
#[error("repository: {0}")]
pub(crate) struct PersistError(pub(crate) String);

pub(crate) type Result<T> = std::result::Result<T, PersistError>;

/// What an insert found.
#[derive(Debug)]
pub(crate) enum Inserted {
    /// The thread is new and now stored.
    New(Thread),
    /// A thread with that id was there already; it is unchanged.
    Existing(Thread),
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
    /// Removes a run; whether there was one.
    fn delete_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str)
    -> BoxFuture<'a, Result<bool>>;
}
