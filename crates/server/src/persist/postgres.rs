//! The PostgreSQL repository (`database.url = "postgres://..."`): the
//! server's records in the database that also holds its checkpoints and
//! store, on one pool. Every statement is an unnamed prepared statement
//! inside an explicit transaction, as the saver's, so a transaction-mode
//! pooler in front works: nothing outlives the transaction that uses it. Records are JSON documents
//! beside the columns a lookup or an order needs; thread searches filter in
//! Rust with the rules every backend shares ([`ThreadFilter::matches`]).

use futures::future::{BoxFuture, FutureExt};
use sqlx::postgres::{PgArguments, PgPool};
use sqlx::{Postgres, Row};

use super::{Inserted, PersistError, Repository, Result};
use crate::assistants::{Assistant, AssistantChange, AssistantFilter, AssistantVersion, Changed};
use crate::crons::{Cron, CronFilter, CronPatch};
use crate::runs::{Run, RunQuery};
use crate::threads::{Thread, ThreadFilter, ThreadPatch, ThreadSearch};
use chrono::{DateTime, Utc};

/// The advisory lock the migrations run under (one server migrates at a
/// time).
const MIGRATION_LOCK: i64 = 0x5347_5345_5256_0001;

/// Records in PostgreSQL.
#[derive(Debug, Clone)]
pub(crate) struct PostgresRepository {
    pool: PgPool,
    /// Named, cached prepared statements, single statements without a
    /// transaction around them (`database.prepared_statements`); `false`:
    /// unnamed statements in transactions, which transaction-mode poolers
    /// need.
    prepared: bool,
}

impl From<sqlx::Error> for PersistError {
    fn from(err: sqlx::Error) -> Self {
        Self(format!("postgres: {err}"))
    }
}

/// An unnamed statement (pooler-safe).
fn unnamed(sql: &'static str) -> sqlx::query::Query<'static, Postgres, PgArguments> {
    sqlx::query(sql).persistent(false)
}

impl PostgresRepository {
    /// The repository on `pool`, its migrations applied.
    ///
    /// # Errors
    /// The database's, or a schema this server did not write.
    pub(crate) async fn open(pool: PgPool, prepared: bool) -> Result<Self> {
        let mut tx = pool.begin().await?;
        unnamed("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await?;
        unnamed("CREATE TABLE IF NOT EXISTS sg_schema_migrations (version INTEGER PRIMARY KEY, text TEXT NOT NULL)")
            .execute(&mut *tx)
            .await?;
        let applied: Vec<(i64, String)> =
            unnamed("SELECT version, text FROM sg_schema_migrations ORDER BY version")
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|row| Ok((i64::from(row.try_get::<i32, _>(0)?), row.try_get(1)?)))
                .collect::<std::result::Result<_, sqlx::Error>>()?;
        for (version, text) in super::missing_migrations(&applied)? {
            // The texts are the repository's own constants.
            sqlx::raw_sql(sqlx::AssertSqlSafe(text))
                .execute(&mut *tx)
                .await?;
            unnamed("INSERT INTO sg_schema_migrations (version, text) VALUES ($1, $2)")
                .bind(i32::try_from(version).unwrap_or(i32::MAX))
                .bind(text)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Self { pool, prepared })
    }
}

fn thread_doc(thread: &Thread) -> Result<String> {
    Ok(serde_json::to_string(thread)?)
}

fn status_text(run: &Run) -> Result<String> {
    match serde_json::to_value(run.status)? {
        serde_json::Value::String(status) => Ok(status),
        other => Err(PersistError(format!("a run status as {other}"))),
    }
}

fn docs<T: serde::de::DeserializeOwned>(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<T>> {
    rows.iter()
        .map(|row| {
            let doc: String = row.try_get(0)?;
            Ok(serde_json::from_str(&doc)?)
        })
        .collect()
}

impl PostgresRepository {
    /// A statement: named and cached with prepared statements on, else
    /// unnamed.
    fn query(&self, sql: &'static str) -> sqlx::query::Query<'static, Postgres, PgArguments> {
        sqlx::query(sql).persistent(self.prepared)
    }

    /// The rows of one statement; without prepared statements in a
    /// transaction of its own (a pooler may otherwise run its parse and its
    /// execution on different server connections).
    async fn fetch(
        &self,
        statement: sqlx::query::Query<'_, Postgres, PgArguments>,
    ) -> Result<Vec<sqlx::postgres::PgRow>> {
        if self.prepared {
            return Ok(statement.fetch_all(&self.pool).await?);
        }
        let mut tx = self.pool.begin().await?;
        let rows = statement.fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok(rows)
    }

    /// [`fetch`](Self::fetch) for a statement without rows: how many rows
    /// it changed.
    async fn exec(&self, statement: sqlx::query::Query<'_, Postgres, PgArguments>) -> Result<u64> {
        if self.prepared {
            return Ok(statement.execute(&self.pool).await?.rows_affected());
        }
        let mut tx = self.pool.begin().await?;
        let done = statement.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }

    async fn matching(&self, filter: &ThreadFilter) -> Result<Vec<Thread>> {
        let rows = self
            .fetch(
                self.query("SELECT doc FROM sg_threads WHERE $1::text IS NULL OR status = $1")
                    .bind(filter.status.map(|status| status.as_str())),
            )
            .await?;
        Ok(docs::<Thread>(&rows)?
            .into_iter()
            .filter(|thread| filter.matches(thread))
            .collect())
    }
}

/// A thread's `expires_at` column.
fn expiry(thread: &Thread) -> Option<String> {
    thread
        .ttl
        .as_ref()
        .map(|ttl| crate::wire::sortable(ttl.expires_at))
}

impl Repository for PostgresRepository {
    fn insert_thread(&self, thread: Thread) -> BoxFuture<'_, Result<Inserted>> {
        async move {
            let inserted = self.exec(self.query(
                "INSERT INTO sg_threads (thread_id, updated_at, status, expires_at, doc) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (thread_id) DO NOTHING",
            )
            .bind(&thread.thread_id)
            .bind(crate::wire::sortable(thread.updated_at))
            .bind(thread.status.as_str())
            .bind(expiry(&thread))
            .bind(thread_doc(&thread)?)
            )
            .await?;
            if inserted == 1 {
                return Ok(Inserted::New(thread));
            }
            let existing = self
                .get_thread(&thread.thread_id)
                .await?
                .ok_or_else(|| PersistError("a thread vanished while it was inserted".into()))?;
            Ok(Inserted::Existing(existing))
        }
        .boxed()
    }

    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>>> {
        async move {
            let rows = self
                .fetch(
                    self.query("SELECT doc FROM sg_threads WHERE thread_id = $1")
                        .bind(thread_id),
                )
                .await?;
            Ok(docs(&rows)?.into_iter().next())
        }
        .boxed()
    }

    fn patch_thread<'a>(
        &'a self,
        thread_id: &'a str,
        patch: ThreadPatch,
    ) -> BoxFuture<'a, Result<Option<Thread>>> {
        async move {
            let mut tx = self.pool.begin().await?;
            let rows = self.query("SELECT doc FROM sg_threads WHERE thread_id = $1 FOR UPDATE")
                .bind(thread_id)
                .fetch_all(&mut *tx)
                .await?;
            let Some(mut thread) = docs::<Thread>(&rows)?.into_iter().next() else {
                return Ok(None);
            };
            patch.apply(&mut thread, chrono::Utc::now());
            self.query(
                "UPDATE sg_threads SET updated_at = $2, status = $3, expires_at = $4, doc = $5 WHERE thread_id = $1",
            )
            .bind(thread_id)
            .bind(crate::wire::sortable(thread.updated_at))
            .bind(thread.status.as_str())
            .bind(expiry(&thread))
            .bind(thread_doc(&thread)?)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(thread))
        }
        .boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        async move {
            let mut tx = self.pool.begin().await?;
            self.query("DELETE FROM sg_runs WHERE thread_id = $1")
                .bind(thread_id)
                .execute(&mut *tx)
                .await?;
            let deleted = self
                .query("DELETE FROM sg_threads WHERE thread_id = $1")
                .bind(thread_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(deleted.rows_affected() == 1)
        }
        .boxed()
    }

    fn search_threads<'a>(
        &'a self,
        search: &'a ThreadSearch,
    ) -> BoxFuture<'a, Result<(Vec<Thread>, usize)>> {
        async move { Ok(super::page(self.matching(&search.filter).await?, search)) }.boxed()
    }

    fn count_threads<'a>(&'a self, filter: &'a ThreadFilter) -> BoxFuture<'a, Result<usize>> {
        async move { Ok(self.matching(filter).await?.len()) }.boxed()
    }

    fn expired_threads(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Thread>>> {
        async move {
            let rows = self
                .fetch(
                    self.query(
                        "SELECT doc FROM sg_threads WHERE expires_at < $1 ORDER BY expires_at LIMIT $2",
                    )
                    .bind(crate::wire::sortable(now))
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
                )
                .await?;
            docs(&rows)
        }
        .boxed()
    }

    fn insert_run(&self, run: Run) -> BoxFuture<'_, Result<()>> {
        async move {
            self.exec(self.query("INSERT INTO sg_runs (run_id, thread_id, created_at, status, doc) VALUES ($1, $2, $3, $4, $5)")
                .bind(&run.run_id)
                .bind(&run.thread_id)
                .bind(crate::wire::sortable(run.created_at))
                .bind(status_text(&run)?)
                .bind(serde_json::to_string(&run)?)
                )
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn get_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Run>>> {
        async move {
            let rows = self
                .fetch(
                    self.query("SELECT doc FROM sg_runs WHERE run_id = $1 AND thread_id = $2")
                        .bind(run_id)
                        .bind(thread_id),
                )
                .await?;
            Ok(docs(&rows)?.into_iter().next())
        }
        .boxed()
    }

    fn replace_run(&self, run: Run) -> BoxFuture<'_, Result<bool>> {
        async move {
            let replaced = self
                .exec(
                    self.query("UPDATE sg_runs SET status = $2, doc = $3 WHERE run_id = $1")
                        .bind(&run.run_id)
                        .bind(status_text(&run)?)
                        .bind(serde_json::to_string(&run)?),
                )
                .await?;
            Ok(replaced == 1)
        }
        .boxed()
    }

    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        query_: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<Run>>> {
        async move {
            let status = query_
                .status
                .map(|status| serde_json::to_value(status).map(|v| v.as_str().map(str::to_owned)))
                .transpose()?
                .flatten();
            let rows = self.fetch(self.query(
                "SELECT doc FROM sg_runs WHERE thread_id = $1 AND ($2::text IS NULL OR status = $2) \
                 ORDER BY created_at DESC, run_id DESC LIMIT $3 OFFSET $4",
            )
            .bind(thread_id)
            .bind(status)
            .bind(i64::try_from(query_.limit).unwrap_or(i64::MAX))
            .bind(i64::try_from(query_.offset).unwrap_or(i64::MAX))
            )
            .await?;
            docs(&rows)
        }
        .boxed()
    }

    fn in_flight_runs(&self) -> BoxFuture<'_, Result<Vec<Run>>> {
        async move {
            let rows = self.fetch(self.query(
                "SELECT doc FROM sg_runs WHERE status IN ('pending', 'running') ORDER BY created_at, run_id",
            )
            )
            .await?;
            docs(&rows)
        }
        .boxed()
    }

    fn delete_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        async move {
            let deleted = self
                .exec(
                    self.query("DELETE FROM sg_runs WHERE run_id = $1 AND thread_id = $2")
                        .bind(run_id)
                        .bind(thread_id),
                )
                .await?;
            Ok(deleted == 1)
        }
        .boxed()
    }

    fn insert_assistant(&self, assistant: Assistant) -> BoxFuture<'_, Result<Inserted<Assistant>>> {
        async move {
            let mut tx = self.pool.begin().await?;
            let inserted = self.query(
                "INSERT INTO sg_assistants (assistant_id, doc) VALUES ($1, $2) ON CONFLICT (assistant_id) DO NOTHING",
            )
            .bind(&assistant.assistant_id)
            .bind(serde_json::to_string(&assistant)?)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 1 {
                insert_version(&mut tx, &assistant.as_version()).await?;
                tx.commit().await?;
                return Ok(Inserted::New(assistant));
            }
            let rows = self.query("SELECT doc FROM sg_assistants WHERE assistant_id = $1")
                .bind(&assistant.assistant_id)
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            let existing = docs(&rows)?.into_iter().next().ok_or_else(|| {
                PersistError("an assistant vanished while it was inserted".into())
            })?;
            Ok(Inserted::Existing(existing))
        }
        .boxed()
    }

    fn get_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Assistant>>> {
        async move {
            let rows = self
                .fetch(
                    self.query("SELECT doc FROM sg_assistants WHERE assistant_id = $1")
                        .bind(assistant_id),
                )
                .await?;
            Ok(docs(&rows)?.into_iter().next())
        }
        .boxed()
    }

    fn change_assistant<'a>(
        &'a self,
        assistant_id: &'a str,
        change: AssistantChange,
    ) -> BoxFuture<'a, Result<Changed>> {
        async move {
            let mut tx = self.pool.begin().await?;
            let rows = self
                .query("SELECT doc FROM sg_assistants WHERE assistant_id = $1 FOR UPDATE")
                .bind(assistant_id)
                .fetch_all(&mut *tx)
                .await?;
            let Some(stored) = docs::<Assistant>(&rows)?.into_iter().next() else {
                return Ok(Changed::NoAssistant);
            };
            let rows = self
                .query("SELECT doc FROM sg_assistant_versions WHERE assistant_id = $1")
                .bind(assistant_id)
                .fetch_all(&mut *tx)
                .await?;
            let versions: Vec<AssistantVersion> = docs(&rows)?;
            let newest = versions.iter().map(|v| v.version).max().unwrap_or(0);
            let changed = change.apply(
                stored,
                newest,
                |wanted| versions.into_iter().find(|v| v.version == wanted),
                chrono::Utc::now(),
            );
            if let Changed::Done(assistant, record) = &changed {
                self.query("UPDATE sg_assistants SET doc = $2 WHERE assistant_id = $1")
                    .bind(assistant_id)
                    .bind(serde_json::to_string(assistant)?)
                    .execute(&mut *tx)
                    .await?;
                if let Some(record) = record {
                    insert_version(&mut tx, record).await?;
                }
            }
            tx.commit().await?;
            Ok(changed)
        }
        .boxed()
    }

    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        async move {
            let mut tx = self.pool.begin().await?;
            self.query("DELETE FROM sg_assistant_versions WHERE assistant_id = $1")
                .bind(assistant_id)
                .execute(&mut *tx)
                .await?;
            let deleted = self
                .query("DELETE FROM sg_assistants WHERE assistant_id = $1")
                .bind(assistant_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(deleted == 1)
        }
        .boxed()
    }

    fn find_assistants<'a>(
        &'a self,
        filter: &'a AssistantFilter,
    ) -> BoxFuture<'a, Result<Vec<Assistant>>> {
        async move {
            let rows = self
                .fetch(self.query("SELECT doc FROM sg_assistants"))
                .await?;
            Ok(docs::<Assistant>(&rows)?
                .into_iter()
                .filter(|assistant| filter.matches(assistant))
                .collect())
        }
        .boxed()
    }

    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AssistantVersion>>> {
        async move {
            let rows = self
                .fetch(
                    self.query("SELECT doc FROM sg_assistant_versions WHERE assistant_id = $1")
                        .bind(assistant_id),
                )
                .await?;
            docs(&rows)
        }
        .boxed()
    }

    fn insert_cron(&self, cron: Cron) -> BoxFuture<'_, Result<()>> {
        async move {
            self.exec(
                self.query(
                    "INSERT INTO sg_crons (cron_id, next_run_date, doc) VALUES ($1, $2, $3)",
                )
                .bind(&cron.cron_id)
                .bind(next_run(&cron))
                .bind(serde_json::to_string(&cron)?),
            )
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>>> {
        async move {
            let rows = self
                .fetch(
                    self.query("SELECT doc FROM sg_crons WHERE cron_id = $1")
                        .bind(cron_id),
                )
                .await?;
            Ok(docs(&rows)?.into_iter().next())
        }
        .boxed()
    }

    fn patch_cron<'a>(
        &'a self,
        cron_id: &'a str,
        patch: CronPatch,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<Cron>>> {
        async move {
            let mut tx = self.pool.begin().await?;
            let rows = self
                .query("SELECT doc FROM sg_crons WHERE cron_id = $1 FOR UPDATE")
                .bind(cron_id)
                .fetch_all(&mut *tx)
                .await?;
            let Some(mut cron) = docs::<Cron>(&rows)?.into_iter().next() else {
                return Ok(None);
            };
            patch.apply(&mut cron, now);
            write_cron(&mut tx, &cron).await?;
            tx.commit().await?;
            Ok(Some(cron))
        }
        .boxed()
    }

    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        async move {
            let deleted = self
                .exec(
                    self.query("DELETE FROM sg_crons WHERE cron_id = $1")
                        .bind(cron_id),
                )
                .await?;
            Ok(deleted == 1)
        }
        .boxed()
    }

    fn find_crons<'a>(&'a self, filter: &'a CronFilter) -> BoxFuture<'a, Result<Vec<Cron>>> {
        async move {
            let rows = self.fetch(self.query("SELECT doc FROM sg_crons")).await?;
            Ok(docs::<Cron>(&rows)?
                .into_iter()
                .filter(|cron| filter.matches(cron))
                .collect())
        }
        .boxed()
    }

    fn claim_due_crons(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<Cron>>> {
        async move {
            let mut tx = self.pool.begin().await?;
            // Another scheduler's claim in flight skips those rows, and
            // finds them moved past `now` once it commits.
            let rows = self
                .query("SELECT doc FROM sg_crons WHERE next_run_date <= $1 FOR UPDATE SKIP LOCKED")
                .bind(crate::wire::sortable(now))
                .fetch_all(&mut *tx)
                .await?;
            let mut claimed = Vec::new();
            for mut cron in docs::<Cron>(&rows)? {
                if cron.is_due(now) {
                    claimed.push(cron.clone());
                    cron.next_run_date = cron.next_after(now);
                    write_cron(&mut tx, &cron).await?;
                }
            }
            tx.commit().await?;
            Ok(claimed)
        }
        .boxed()
    }
}

/// Adds a version record inside `tx`.
async fn insert_version(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    version: &AssistantVersion,
) -> Result<()> {
    unnamed("INSERT INTO sg_assistant_versions (assistant_id, version, doc) VALUES ($1, $2, $3)")
        .bind(&version.assistant_id)
        .bind(i64::from(version.version))
        .bind(serde_json::to_string(version)?)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The column a due-cron lookup orders by.
fn next_run(cron: &Cron) -> Option<String> {
    cron.next_run_date.map(crate::wire::sortable)
}

async fn write_cron(tx: &mut sqlx::Transaction<'_, Postgres>, cron: &Cron) -> Result<()> {
    unnamed("UPDATE sg_crons SET next_run_date = $2, doc = $3 WHERE cron_id = $1")
        .bind(&cron.cron_id)
        .bind(next_run(cron))
        .bind(serde_json::to_string(cron)?)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
