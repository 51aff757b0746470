//! The in-memory repository: for tests, demos and `database.url = "memory"`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::{BoxFuture, FutureExt};

use super::{Inserted, Repository, Result};
use crate::assistants::{Assistant, AssistantChange, AssistantFilter, AssistantVersion, Changed};
use crate::crons::{Cron, CronFilter, CronPatch};
use crate::runs::{Run, RunQuery, RunStatus};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};
use chrono::{DateTime, Utc};

/// Records in a map behind one lock; every operation is one short critical
/// section, so each is atomic.
#[derive(Debug, Default)]
pub(crate) struct MemoryRepository {
    threads: Mutex<HashMap<String, Thread>>,
    // By run id; a thread's runs are found by scanning (lists are short).
    runs: Mutex<HashMap<String, Run>>,
    // By id, with every version (oldest first) beside it.
    assistants: Mutex<HashMap<String, (Assistant, Vec<AssistantVersion>)>>,
    crons: Mutex<HashMap<String, Cron>>,
}

/// A lock's data even after a panic elsewhere: each write is one insert,
/// removal or in-place patch, so records are whole.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryRepository {
    fn threads(&self) -> MutexGuard<'_, HashMap<String, Thread>> {
        lock(&self.threads)
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        lock(&self.runs)
    }

    fn assistants(&self) -> MutexGuard<'_, HashMap<String, (Assistant, Vec<AssistantVersion>)>> {
        lock(&self.assistants)
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
        let existed = self.threads().remove(thread_id).is_some();
        self.runs().retain(|_, run| run.thread_id != thread_id);
        std::future::ready(Ok(existed)).boxed()
    }

    fn search_threads<'a>(
        &'a self,
        search: &'a ThreadSearch,
    ) -> BoxFuture<'a, Result<(Vec<Thread>, usize)>> {
        let found: Vec<Thread> = self
            .threads()
            .values()
            .filter(|thread| search.filter.matches(thread))
            .cloned()
            .collect();
        let (page, total) = super::page(found, search);
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

    fn expired_threads(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Thread>>> {
        let mut expired: Vec<Thread> = self
            .threads()
            .values()
            .filter(|thread| thread.ttl.as_ref().is_some_and(|ttl| ttl.expires_at < now))
            .cloned()
            .collect();
        expired.sort_by_key(|thread| thread.ttl.as_ref().map(|ttl| ttl.expires_at));
        expired.truncate(limit);
        std::future::ready(Ok(expired)).boxed()
    }

    fn insert_run(&self, run: Run) -> BoxFuture<'_, Result<()>> {
        self.runs().insert(run.run_id.clone(), run);
        std::future::ready(Ok(())).boxed()
    }

    fn get_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Run>>> {
        let run = self
            .runs()
            .get(run_id)
            .filter(|run| run.thread_id == thread_id)
            .cloned();
        std::future::ready(Ok(run)).boxed()
    }

    fn replace_run(&self, run: Run) -> BoxFuture<'_, Result<bool>> {
        let replaced = match self.runs().get_mut(&run.run_id) {
            Some(stored) => {
                *stored = run;
                true
            }
            None => false,
        };
        std::future::ready(Ok(replaced)).boxed()
    }

    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<Run>>> {
        let mut runs: Vec<Run> = self
            .runs()
            .values()
            .filter(|run| run.thread_id == thread_id)
            .filter(|run| query.status.is_none_or(|status| run.status == status))
            .cloned()
            .collect();
        // Newest first; run ids are time-ordered, so they break ties.
        runs.sort_by(|a, b| (b.created_at, &b.run_id).cmp(&(a.created_at, &a.run_id)));
        let page = runs
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect();
        std::future::ready(Ok(page)).boxed()
    }

    fn in_flight_runs(&self) -> BoxFuture<'_, Result<Vec<Run>>> {
        let mut runs: Vec<Run> = self
            .runs()
            .values()
            .filter(|run| matches!(run.status, RunStatus::Pending | RunStatus::Running))
            .cloned()
            .collect();
        runs.sort_by(|a, b| (a.created_at, &a.run_id).cmp(&(b.created_at, &b.run_id)));
        std::future::ready(Ok(runs)).boxed()
    }

    fn delete_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        let mut runs = self.runs();
        let found = runs
            .get(run_id)
            .is_some_and(|run| run.thread_id == thread_id);
        if found {
            runs.remove(run_id);
        }
        std::future::ready(Ok(found)).boxed()
    }

    fn insert_assistant(&self, assistant: Assistant) -> BoxFuture<'_, Result<Inserted<Assistant>>> {
        let mut assistants = self.assistants();
        let inserted = match assistants.get(&assistant.assistant_id) {
            Some((existing, _)) => Inserted::Existing(existing.clone()),
            None => {
                let versions = vec![assistant.as_version()];
                assistants.insert(
                    assistant.assistant_id.clone(),
                    (assistant.clone(), versions),
                );
                Inserted::New(assistant)
            }
        };
        std::future::ready(Ok(inserted)).boxed()
    }

    fn get_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Assistant>>> {
        let found = self.assistants().get(assistant_id).map(|(a, _)| a.clone());
        std::future::ready(Ok(found)).boxed()
    }

    fn change_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
        change: AssistantChange,
    ) -> BoxFuture<'a, Result<Changed>> {
        let mut assistants = self.assistants();
        let changed = match assistants.get_mut(assistant_id) {
            None => Changed::NoAssistant,
            Some((stored, versions)) => {
                let newest = versions.iter().map(|v| v.version).max().unwrap_or(0);
                let changed = change.apply(
                    stored.clone(),
                    newest,
                    |wanted| versions.iter().find(|v| v.version == wanted).cloned(),
                    chrono::Utc::now(),
                );
                if let Changed::Done(assistant, record) = &changed {
                    stored.clone_from(assistant);
                    versions.extend(record.clone());
                }
                changed
            }
        };
        std::future::ready(Ok(changed)).boxed()
    }

    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        let existed = self.assistants().remove(assistant_id).is_some();
        std::future::ready(Ok(existed)).boxed()
    }

    fn find_assistants<'a>(
        &'a self,
        filter: &'a AssistantFilter,
    ) -> BoxFuture<'a, Result<Vec<Assistant>>> {
        let found = self
            .assistants()
            .values()
            .map(|(assistant, _)| assistant)
            .filter(|assistant| filter.matches(assistant))
            .cloned()
            .collect();
        std::future::ready(Ok(found)).boxed()
    }

    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AssistantVersion>>> {
        let versions = self
            .assistants()
            .get(assistant_id)
            .map(|(_, versions)| versions.clone())
            .unwrap_or_default();
        std::future::ready(Ok(versions)).boxed()
    }

    fn insert_cron(&self, cron: Cron) -> BoxFuture<'_, Result<()>> {
        lock(&self.crons).insert(cron.cron_id.clone(), cron);
        std::future::ready(Ok(())).boxed()
    }

    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>>> {
        std::future::ready(Ok(lock(&self.crons).get(cron_id).cloned())).boxed()
    }

    fn patch_cron<'a>(
        &'a self,
        cron_id: &'a str,
        patch: CronPatch,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<Cron>>> {
        let patched = lock(&self.crons).get_mut(cron_id).map(|cron| {
            patch.apply(cron, now);
            cron.clone()
        });
        std::future::ready(Ok(patched)).boxed()
    }

    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        std::future::ready(Ok(lock(&self.crons).remove(cron_id).is_some())).boxed()
    }

    fn find_crons<'a>(&'a self, filter: &'a CronFilter) -> BoxFuture<'a, Result<Vec<Cron>>> {
        let found = lock(&self.crons)
            .values()
            .filter(|cron| filter.matches(cron))
            .cloned()
            .collect();
        std::future::ready(Ok(found)).boxed()
    }

    fn claim_due_crons(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<Cron>>> {
        let mut claimed = Vec::new();
        for cron in lock(&self.crons).values_mut() {
            if cron.is_due(now) {
                claimed.push(cron.clone());
                cron.next_run_date = cron.next_after(now);
            }
        }
        std::future::ready(Ok(claimed)).boxed()
    }
}
