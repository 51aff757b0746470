//! The in-memory repository: for tests, demos and `database.url = "memory"`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::{BoxFuture, FutureExt};

use super::{Inserted, Repository, Result};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};

/// Records in a map behind one lock; every operation is one short critical
/// section, so each is atomic.
#[derive(Debug, Default)]
pub(crate) struct MemoryRepository {
    threads: Mutex<HashMap<String, Thread>>,
}

impl MemoryRepository {
    fn threads(&self) -> MutexGuard<'_, HashMap<String, Thread>> {
        // A panic elsewhere leaves whole records: each write is one insert
        // or one in-place patch.
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Repository for MemoryRepository {
    fn insert_thread(&self, thread: Thread) -> BoxFuture<'_, Result<Inserted>> {
        let mut threads = self.threads();
        let inserted = match threads.get(&thread.thread_id) {
            Some(existing) => Inserted::Existing(existing.clone()),
            None => {
                threads.insert(thread.thread_id.clone(), thread.clone());
                Inserted::New(thread)
            }
        };
        std::future::ready(Ok(inserted)).boxed()
    }

    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>>> {
        std::future::ready(Ok(self.threads().get(thread_id).cloned())).boxed()
    }

    fn patch_thread<'a>(
        &'a self,
        thread_id: &'a str,
        patch: ThreadPatch,
    ) -> BoxFuture<'a, Result<Option<Thread>>> {
        let now = chrono::Utc::now();
        let patched = self.threads().get_mut(thread_id).map(|thread| {
            patch.apply(thread, now);
            thread.clone()
        });
        std::future::ready(Ok(patched)).boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        std::future::ready(Ok(self.threads().remove(thread_id).is_some())).boxed()
    }

    fn search_threads<'a>(
        &'a self,
        search: &'a ThreadSearch,
    ) -> BoxFuture<'a, Result<(Vec<Thread>, usize)>> {
        let mut found: Vec<Thread> = self
            .threads()
            .values()
            .filter(|thread| search.filter.matches(thread))
            .cloned()
            .collect();
        found.sort_by(|a, b| search.compare(a, b));
        let total = found.len();
        let page = found
            .into_iter()
            .skip(search.offset)
            .take(search.limit)
            .collect();
        std::future::ready(Ok((page, total))).boxed()
    }

    fn count_threads<'a>(&'a self, filter: &'a ThreadFilter) -> BoxFuture<'a, Result<usize>> {
        let count = self
            .threads()
            .values()
            .filter(|thread| filter.matches(thread))
            .count();
        std::future::ready(Ok(count)).boxed()
    }
}
