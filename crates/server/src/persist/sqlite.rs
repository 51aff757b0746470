//! The SQLite repository: the server's records in the SQLite file that also
//! holds its checkpoints and store (`database.url = "sqlite://PATH"`, the
//! embedded default). Each record is one JSON document with the columns a
//! lookup or an order needs beside it; searches filter in Rust with the
//! same rules as every backend ([`ThreadFilter::matches`]), which suits one
//! process on one file.

use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use stategraph::checkpoint_sqlite::SqliteSaver;

use super::{Inserted, PersistError, Repository, Result};
use crate::assistants::{Assistant, AssistantChange, AssistantFilter, AssistantVersion, Changed};
use crate::crons::{Cron, CronFilter, CronPatch};
use crate::runs::{Run, RunQuery};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};
use chrono::{DateTime, Utc};

/// How long a write waits for another process's lock on the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Records in the SQLite file of the server's saver, written through the
/// saver's one writer connection (so the records and the checkpoints never
/// contend for the file's write lock).
#[derive(Clone)]
pub(crate) struct SqliteRepository {
    saver: SqliteSaver,
}

impl std::fmt::Debug for SqliteRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteRepository")
            .field("saver", &self.saver)
            .finish()
    }
}

impl From<rusqlite::Error> for PersistError {
    fn from(err: rusqlite::Error) -> Self {
        Self(format!("sqlite: {err}"))
    }
}

impl From<serde_json::Error> for PersistError {
    fn from(err: serde_json::Error) -> Self {
        Self(format!("a stored record does not read back: {err}"))
    }
}

impl SqliteRepository {
    /// The records in `saver`'s file, after applying the migrations it
    /// lacks (on a connection of its own, closed after).
    ///
    /// # Errors
    /// SQLite cannot open the file, or its schema is not one this server
    /// wrote (newer, or changed); the saver has no file (in memory).
    pub(crate) fn open(saver: SqliteSaver) -> Result<Self> {
        let path = saver
            .path()
            .ok_or_else(|| PersistError("the saver keeps no file".into()))?;
        let mut connection = Connection::open(path)?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        migrate(&mut connection)?;
        Ok(Self { saver })
    }

    /// Runs `op`, which only reads, on one of the saver's reader
    /// connections: it waits for no batch.
    fn on_reader<T: Send + 'static>(
        &self,
        op: impl FnMut(&Connection) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let saver = self.saver.clone();
        async move {
            saver
                .read_with(op)
                .await
                .map_err(|err| PersistError(format!("a repository read failed: {err}")))?
        }
        .boxed()
    }

    /// Runs `op` on the saver's writer connection, in its next batch (its
    /// writes committed with the saver's; rolled back when it fails).
    fn on_writer<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let saver = self.saver.clone();
        async move {
            saver
                .write_with(op)
                .await
                .map_err(|err| PersistError(format!("a repository write failed: {err}")))?
        }
        .boxed()
    }
}

/// Applies the migrations the file lacks, in one transaction.
fn migrate(connection: &mut Connection) -> Result<()> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS sg_schema_migrations (version INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    )?;
    let applied: Vec<(i64, String)> = tx
        .prepare("SELECT version, text FROM sg_schema_migrations ORDER BY version")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (version, text) in super::missing_migrations(&applied)? {
        tx.execute_batch(text)?;
        tx.execute(
            "INSERT INTO sg_schema_migrations (version, text) VALUES (?1, ?2)",
            params![version, text],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// A thread's columns: `updated_at`, `status`, `expires_at`, `doc`.
fn thread_row(thread: &Thread) -> Result<(String, String, Option<String>, String)> {
    Ok((
        crate::wire::sortable(thread.updated_at),
        thread.status.as_str().to_owned(),
        thread
            .ttl
            .as_ref()
            .map(|ttl| crate::wire::sortable(ttl.expires_at)),
        serde_json::to_string(thread)?,
    ))
}

fn read_thread(connection: &Connection, thread_id: &str) -> Result<Option<Thread>> {
    let doc: Option<String> = connection
        .query_row(
            "SELECT doc FROM sg_threads WHERE thread_id = ?1",
            [thread_id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(doc.map(|doc| serde_json::from_str(&doc)).transpose()?)
}

/// Every thread that passes `filter` (its status picked by SQL, the rest
/// in Rust).
fn matching(connection: &Connection, filter: &ThreadFilter) -> Result<Vec<Thread>> {
    let docs: Vec<String> = match filter.status {
        Some(status) => connection
            .prepare("SELECT doc FROM sg_threads WHERE status = ?1")?
            .query_map([status.as_str()], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?,
        None => connection
            .prepare("SELECT doc FROM sg_threads")?
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?,
    };
    let mut found = Vec::new();
    for doc in docs {
        let thread: Thread = serde_json::from_str(&doc)?;
        if filter.matches(&thread) {
            found.push(thread);
        }
    }
    Ok(found)
}

fn run_doc(run: &Run) -> Result<String> {
    Ok(serde_json::to_string(run)?)
}

fn status_text(run: &Run) -> Result<String> {
    match serde_json::to_value(run.status)? {
        serde_json::Value::String(status) => Ok(status),
        other => Err(PersistError(format!("a run status as {other}"))),
    }
}

impl Repository for SqliteRepository {
    fn insert_thread(&self, thread: Thread) -> BoxFuture<'_, Result<Inserted>> {
        self.on_writer(move |connection| {
            let (updated_at, status, expires_at, doc) = thread_row(&thread)?;
            let inserted = connection.execute(
                "INSERT INTO sg_threads (thread_id, updated_at, status, expires_at, doc) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (thread_id) DO NOTHING",
                params![thread.thread_id, updated_at, status, expires_at, doc],
            )?;
            if inserted == 1 {
                return Ok(Inserted::New(thread));
            }
            let existing = read_thread(connection, &thread.thread_id)?
                .ok_or_else(|| PersistError("a thread vanished while it was inserted".into()))?;
            Ok(Inserted::Existing(existing))
        })
    }

    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>>> {
        let thread_id = thread_id.to_owned();
        self.on_reader(move |connection| read_thread(connection, &thread_id))
    }

    fn patch_thread<'a>(
        &'a self,
        thread_id: &'a str,
        patch: ThreadPatch,
    ) -> BoxFuture<'a, Result<Option<Thread>>> {
        let thread_id = thread_id.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            let Some(mut thread) = read_thread(&tx, &thread_id)? else {
                return Ok(None);
            };
            patch.apply(&mut thread, chrono::Utc::now());
            let (updated_at, status, expires_at, doc) = thread_row(&thread)?;
            tx.execute(
                "UPDATE sg_threads SET updated_at = ?2, status = ?3, expires_at = ?4, doc = ?5 WHERE thread_id = ?1",
                params![thread_id, updated_at, status, expires_at, doc],
            )?;
            tx.commit()?;
            Ok(Some(thread))
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        let thread_id = thread_id.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            tx.execute("DELETE FROM sg_runs WHERE thread_id = ?1", [&thread_id])?;
            let deleted =
                tx.execute("DELETE FROM sg_threads WHERE thread_id = ?1", [&thread_id])?;
            tx.commit()?;
            Ok(deleted == 1)
        })
    }

    fn search_threads<'a>(
        &'a self,
        search: &'a ThreadSearch,
    ) -> BoxFuture<'a, Result<(Vec<Thread>, usize)>> {
        let search = search.clone();
        self.on_writer(move |connection| {
            Ok(super::page(matching(connection, &search.filter)?, &search))
        })
    }

    fn count_threads<'a>(&'a self, filter: &'a ThreadFilter) -> BoxFuture<'a, Result<usize>> {
        let filter = filter.clone();
        self.on_writer(move |connection| Ok(matching(connection, &filter)?.len()))
    }

    fn expired_threads(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Thread>>> {
        let now = crate::wire::sortable(now);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.on_writer(move |connection| {
            let docs: Vec<String> = connection
                .prepare(
                    "SELECT doc FROM sg_threads WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2",
                )?
                .query_map(params![now, limit], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            docs.iter()
                .map(|doc| Ok(serde_json::from_str(doc)?))
                .collect()
        })
    }

    fn insert_run(&self, run: Run) -> BoxFuture<'_, Result<()>> {
        self.on_writer(move |connection| {
            connection.execute(
                "INSERT INTO sg_runs (run_id, thread_id, created_at, status, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    run.run_id,
                    run.thread_id,
                    crate::wire::sortable(run.created_at),
                    status_text(&run)?,
                    run_doc(&run)?
                ],
            )?;
            Ok(())
        })
    }

    fn get_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Run>>> {
        let (thread_id, run_id) = (thread_id.to_owned(), run_id.to_owned());
        self.on_reader(move |connection| {
            let doc: Option<String> = connection
                .query_row(
                    "SELECT doc FROM sg_runs WHERE run_id = ?1 AND thread_id = ?2",
                    [&run_id, &thread_id],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(doc.map(|doc| serde_json::from_str(&doc)).transpose()?)
        })
    }

    fn replace_run(&self, run: Run) -> BoxFuture<'_, Result<bool>> {
        self.on_writer(move |connection| {
            let replaced = connection.execute(
                "UPDATE sg_runs SET status = ?2, doc = ?3 WHERE run_id = ?1",
                params![run.run_id, status_text(&run)?, run_doc(&run)?],
            )?;
            Ok(replaced == 1)
        })
    }

    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<Run>>> {
        let thread_id = thread_id.to_owned();
        let query = query.clone();
        self.on_writer(move |connection| {
            let status = query
                .status
                .map(|status| serde_json::to_value(status).map(|v| v.as_str().map(str::to_owned)))
                .transpose()?
                .flatten();
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let docs: Vec<String> = connection
                .prepare(
                    "SELECT doc FROM sg_runs WHERE thread_id = ?1 AND (?2 IS NULL OR status = ?2) \
                     ORDER BY created_at DESC, run_id DESC LIMIT ?3 OFFSET ?4",
                )?
                .query_map(params![thread_id, status, limit, offset], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            docs.iter()
                .map(|doc| Ok(serde_json::from_str(doc)?))
                .collect()
        })
    }

    fn in_flight_runs(&self) -> BoxFuture<'_, Result<Vec<Run>>> {
        self.on_writer(|connection| {
            let docs: Vec<String> = connection
                .prepare(
                    "SELECT doc FROM sg_runs WHERE status IN ('pending', 'running') \
                     ORDER BY created_at, run_id",
                )?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            docs.iter()
                .map(|doc| Ok(serde_json::from_str(doc)?))
                .collect()
        })
    }

    fn delete_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        let (thread_id, run_id) = (thread_id.to_owned(), run_id.to_owned());
        self.on_writer(move |connection| {
            let deleted = connection.execute(
                "DELETE FROM sg_runs WHERE run_id = ?1 AND thread_id = ?2",
                [&run_id, &thread_id],
            )?;
            Ok(deleted == 1)
        })
    }

    fn insert_assistant(&self, assistant: Assistant) -> BoxFuture<'_, Result<Inserted<Assistant>>> {
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            let inserted = tx.execute(
                "INSERT INTO sg_assistants (assistant_id, doc) VALUES (?1, ?2) ON CONFLICT (assistant_id) DO NOTHING",
                params![assistant.assistant_id, serde_json::to_string(&assistant)?],
            )?;
            let outcome = if inserted == 1 {
                insert_version(&tx, &assistant.as_version())?;
                Inserted::New(assistant)
            } else {
                let existing = read_assistant(&tx, &assistant.assistant_id)?.ok_or_else(|| {
                    PersistError("an assistant vanished while it was inserted".into())
                })?;
                Inserted::Existing(existing)
            };
            tx.commit()?;
            Ok(outcome)
        })
    }

    fn get_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Assistant>>> {
        let assistant_id = assistant_id.to_owned();
        self.on_reader(move |connection| read_assistant(connection, &assistant_id))
    }

    fn change_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
        change: AssistantChange,
    ) -> BoxFuture<'a, Result<Changed>> {
        let assistant_id = assistant_id.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            let Some(stored) = read_assistant(&tx, &assistant_id)? else {
                return Ok(Changed::NoAssistant);
            };
            let versions = read_versions(&tx, &assistant_id)?;
            let newest = versions.iter().map(|v| v.version).max().unwrap_or(0);
            let changed = change.apply(
                stored,
                newest,
                |wanted| versions.into_iter().find(|v| v.version == wanted),
                chrono::Utc::now(),
            );
            if let Changed::Done(assistant, record) = &changed {
                tx.execute(
                    "UPDATE sg_assistants SET doc = ?2 WHERE assistant_id = ?1",
                    params![assistant_id, serde_json::to_string(assistant)?],
                )?;
                if let Some(record) = record {
                    insert_version(&tx, record)?;
                }
            }
            tx.commit()?;
            Ok(changed)
        })
    }

    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        let assistant_id = assistant_id.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            tx.execute(
                "DELETE FROM sg_assistant_versions WHERE assistant_id = ?1",
                [&assistant_id],
            )?;
            let deleted = tx.execute(
                "DELETE FROM sg_assistants WHERE assistant_id = ?1",
                [&assistant_id],
            )?;
            tx.commit()?;
            Ok(deleted == 1)
        })
    }

    fn find_assistants<'a>(
        &'a self,
        filter: &'a AssistantFilter,
    ) -> BoxFuture<'a, Result<Vec<Assistant>>> {
        let filter = filter.clone();
        self.on_writer(move |connection| {
            let docs: Vec<String> = connection
                .prepare("SELECT doc FROM sg_assistants")?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut found = Vec::new();
            for doc in docs {
                let assistant: Assistant = serde_json::from_str(&doc)?;
                if filter.matches(&assistant) {
                    found.push(assistant);
                }
            }
            Ok(found)
        })
    }

    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AssistantVersion>>> {
        let assistant_id = assistant_id.to_owned();
        self.on_reader(move |connection| read_versions(connection, &assistant_id))
    }

    fn insert_cron(&self, cron: Cron) -> BoxFuture<'_, Result<()>> {
        self.on_writer(move |connection| {
            connection.execute(
                "INSERT INTO sg_crons (cron_id, next_run_date, doc) VALUES (?1, ?2, ?3)",
                params![cron.cron_id, next_run(&cron), serde_json::to_string(&cron)?],
            )?;
            Ok(())
        })
    }

    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>>> {
        let cron_id = cron_id.to_owned();
        self.on_reader(move |connection| read_cron(connection, &cron_id))
    }

    fn patch_cron<'a>(
        &'a self,
        cron_id: &'a str,
        patch: CronPatch,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<Cron>>> {
        let cron_id = cron_id.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            let Some(mut cron) = read_cron(&tx, &cron_id)? else {
                return Ok(None);
            };
            patch.apply(&mut cron, now);
            write_cron(&tx, &cron)?;
            tx.commit()?;
            Ok(Some(cron))
        })
    }

    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        let cron_id = cron_id.to_owned();
        self.on_writer(move |connection| {
            Ok(connection.execute("DELETE FROM sg_crons WHERE cron_id = ?1", [&cron_id])? == 1)
        })
    }

    fn find_crons<'a>(&'a self, filter: &'a CronFilter) -> BoxFuture<'a, Result<Vec<Cron>>> {
        let filter = filter.clone();
        self.on_writer(move |connection| {
            let docs: Vec<String> = connection
                .prepare("SELECT doc FROM sg_crons")?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut found = Vec::new();
            for doc in docs {
                let cron: Cron = serde_json::from_str(&doc)?;
                if filter.matches(&cron) {
                    found.push(cron);
                }
            }
            Ok(found)
        })
    }

    fn claim_due_crons(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<Cron>>> {
        self.on_writer(move |connection| {
            let tx = connection.savepoint()?;
            let docs: Vec<String> = tx
                .prepare("SELECT doc FROM sg_crons WHERE next_run_date <= ?1")?
                .query_map([crate::wire::sortable(now)], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut claimed = Vec::new();
            for doc in docs {
                let mut cron: Cron = serde_json::from_str(&doc)?;
                if cron.is_due(now) {
                    claimed.push(cron.clone());
                    cron.next_run_date = cron.next_after(now);
                    write_cron(&tx, &cron)?;
                }
            }
            tx.commit()?;
            Ok(claimed)
        })
    }
}

fn read_assistant(connection: &Connection, assistant_id: &str) -> Result<Option<Assistant>> {
    let doc: Option<String> = connection
        .query_row(
            "SELECT doc FROM sg_assistants WHERE assistant_id = ?1",
            [assistant_id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(doc.map(|doc| serde_json::from_str(&doc)).transpose()?)
}

fn read_versions(connection: &Connection, assistant_id: &str) -> Result<Vec<AssistantVersion>> {
    let docs: Vec<String> = connection
        .prepare("SELECT doc FROM sg_assistant_versions WHERE assistant_id = ?1")?
        .query_map([assistant_id], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    docs.iter()
        .map(|doc| Ok(serde_json::from_str(doc)?))
        .collect()
}

fn insert_version(connection: &Connection, version: &AssistantVersion) -> Result<()> {
    connection.execute(
        "INSERT INTO sg_assistant_versions (assistant_id, version, doc) VALUES (?1, ?2, ?3)",
        params![
            version.assistant_id,
            version.version,
            serde_json::to_string(version)?
        ],
    )?;
    Ok(())
}

/// The column a due-cron lookup orders by.
fn next_run(cron: &Cron) -> Option<String> {
    cron.next_run_date.map(crate::wire::sortable)
}

fn read_cron(connection: &Connection, cron_id: &str) -> Result<Option<Cron>> {
    let doc: Option<String> = connection
        .query_row(
            "SELECT doc FROM sg_crons WHERE cron_id = ?1",
            [cron_id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(doc.map(|doc| serde_json::from_str(&doc)).transpose()?)
}

fn write_cron(connection: &Connection, cron: &Cron) -> Result<()> {
    connection.execute(
        "UPDATE sg_crons SET next_run_date = ?2, doc = ?3 WHERE cron_id = ?1",
        params![cron.cron_id, next_run(cron), serde_json::to_string(cron)?],
    )?;
    Ok(())
}
