//! Runs one operation of the saver or the store: attempts on pooled
//! connections, retried while they fail transiently, all within one
//! client-side deadline; and the `BEGIN` that sets the server-side
//! statement timeout.
//!
//! The runner, not the attempt, owns the connection: it lends it to the
//! attempt ([`Lent`]). An attempt cut off by the deadline leaves its
//! connection mid-conversation (a query sent, its answer unread, perhaps
//! over a socket that went silent), so the runner detaches it from the pool
//! and drops it, which closes the socket: sqlx would otherwise return it to
//! the pool through a ping that gets no answer either, and that pending
//! return keeps its slot of the pool for as long as the socket stays open.

use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool};
use sqlx::{AssertSqlSafe, Postgres, SqlSafeStr, SqlStr};
use tokio::time::Instant;

use crate::error::is_transient;

/// Why one attempt of an operation failed.
pub(crate) enum Failure<E> {
    /// The database failed; retried when transient.
    Db(sqlx::Error),
    /// `COMMIT` failed: the transaction may or may not have committed.
    Commit(sqlx::Error),
    /// A failure of the caller's own (a conflict, bad input, corrupt data):
    /// final.
    Final(E),
}

impl<E> From<sqlx::Error> for Failure<E> {
    fn from(err: sqlx::Error) -> Self {
        Self::Db(err)
    }
}

/// The result of one attempt.
pub(crate) type Attempt<T, E> = std::result::Result<T, Failure<E>>;

/// A pooled connection lent to one attempt of an operation.
///
/// `'s` is the lifetime of what the operation borrows (the saver, the
/// caller's arguments). An attempt receives `&'c mut Lent<'s>`, whose type
/// implies `'s: 'c`, so the future it returns (boxed, living for `'c`) may
/// hold those borrows. An `AsyncFnMut` would say the same without the box,
/// but rustc cannot yet prove its futures `Send` for every `'c`, which the
/// saver's trait methods require.
pub(crate) struct Lent<'s> {
    conn: PoolConnection<Postgres>,
    scope: PhantomData<&'s ()>,
}

impl Deref for Lent<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for Lent<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

/// How an operation that did not succeed ended.
pub(crate) enum Stop<E> {
    /// A final failure of the caller's own.
    Final(E),
    /// The database failed, and the failure was not transient or the
    /// attempts ran out. `commit` when it was the answer to `COMMIT` that
    /// failed (the transaction may have committed).
    Db { error: sqlx::Error, commit: bool },
    /// The client-side deadline passed before the operation finished;
    /// `limit` is the statement timeout it was derived from.
    Deadline { limit: Duration },
}

/// The time and retry limits of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Attempts of an operation that fails transiently (at least 1).
    pub(crate) max_attempts: u32,
    /// The server-side statement timeout; with [`DEADLINE_GRACE`] added, the
    /// client-side deadline of a whole operation. `None`: no limit.
    // Invariant: never `Some(Duration::ZERO)` (PostgreSQL reads 0 as "off").
    pub(crate) statement_timeout: Option<Duration>,
}

/// How much longer than the statement timeout the client waits for an
/// operation: the server cancels a slow statement first, which keeps the
/// connection usable; the client's deadline catches a server or network
/// that no longer answers at all.
pub(crate) const DEADLINE_GRACE: Duration = Duration::from_secs(1);

/// The largest `statement_timeout` PostgreSQL accepts, in milliseconds.
const MAX_STATEMENT_TIMEOUT_MS: u128 = i32::MAX as u128;

impl Limits {
    /// `timeout` as a statement timeout: zero means none, as in PostgreSQL.
    pub(crate) fn statement_timeout(timeout: Option<Duration>) -> Option<Duration> {
        timeout.filter(|timeout| !timeout.is_zero())
    }

    /// The statement that starts a transaction: `begin` (`BEGIN` or `BEGIN
    /// ISOLATION LEVEL ...`), followed in the same simple-query message by
    /// `SET LOCAL statement_timeout` when there is a limit. The setting
    /// ends with the transaction, so it works through transaction-mode
    /// poolers and never leaks to the next user of the server connection.
    pub(crate) fn begin(&self, begin: &'static str) -> SqlStr {
        match self.statement_timeout_ms() {
            None => begin.into_sql_str(),
            Some(ms) => {
                AssertSqlSafe(format!("{begin}; SET LOCAL statement_timeout = {ms}")).into_sql_str()
            }
        }
    }

    /// The statement timeout in whole milliseconds, rounded up (a limit
    /// below 1 ms must not become 0, "no limit") and capped at PostgreSQL's
    /// maximum.
    fn statement_timeout_ms(&self) -> Option<u128> {
        let timeout = self.statement_timeout?;
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        Some(ms.clamp(1, MAX_STATEMENT_TIMEOUT_MS))
    }

    /// When an operation starting now must have finished.
    fn deadline(&self) -> Option<Deadline> {
        let limit = self.statement_timeout?;
        let at = Instant::now().checked_add(limit.checked_add(DEADLINE_GRACE)?)?;
        Some(Deadline { at, limit })
    }
}

/// The client-side deadline of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Deadline {
    at: Instant,
    /// The statement timeout `at` was derived from.
    limit: Duration,
}

/// `future`'s output, or `None` when `deadline` passed first (`future` is
/// then dropped).
async fn within<F: Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
        None => Some(future.await),
    }
}

/// Closes a connection whose attempt was cut off, without returning it to
/// the pool (the pool opens a new one when it needs one).
fn discard(conn: PoolConnection<Postgres>) {
    drop(conn.detach());
}

/// Runs `attempt` on a connection of `pool` until it succeeds, fails for
/// good, runs out of attempts, or the deadline of `limits` passes.
///
/// A transient failure is retried on a fresh connection after a backoff;
/// so is a lost `COMMIT` answer when `retry_lost_commit` (the operation is
/// idempotent, or checks whether its commit took effect). A deadline is
/// final: the attempt in flight is dropped and its connection closed.
pub(crate) async fn run<'s, T, E>(
    pool: &PgPool,
    limits: Limits,
    operation: &'static str,
    retry_lost_commit: bool,
    mut attempt: impl for<'c> FnMut(&'c mut Lent<'s>) -> BoxFuture<'c, Attempt<T, E>>,
) -> std::result::Result<T, Stop<E>> {
    let deadline = limits.deadline();
    let at = deadline.map(|deadline| deadline.at);
    let timed_out = || Stop::Deadline {
        limit: deadline.map_or(Duration::ZERO, |deadline| deadline.limit),
    };
    let mut tries = 0;
    loop {
        tries += 1;
        let failure = match within(at, pool.acquire()).await {
            None => return Err(timed_out()),
            Some(Err(err)) => Failure::Db(err),
            Some(Ok(conn)) => {
                let mut lent = Lent {
                    conn,
                    scope: PhantomData,
                };
                match within(at, attempt(&mut lent)).await {
                    None => {
                        discard(lent.conn);
                        return Err(timed_out());
                    }
                    Some(Ok(value)) => return Ok(value),
                    Some(Err(failure)) => failure,
                }
            }
        };
        let (error, commit) = match failure {
            Failure::Final(err) => return Err(Stop::Final(err)),
            Failure::Db(error) => (error, false),
            Failure::Commit(error) => (error, true),
        };
        let retry =
            tries < limits.max_attempts && is_transient(&error) && (retry_lost_commit || !commit);
        if !retry {
            return Err(Stop::Db { error, commit });
        }
        let delay = backoff_delay(tries);
        // No time left for another attempt: the failure itself is the
        // better answer than a timeout.
        if at.is_some_and(|at| Instant::now() + delay >= at) {
            return Err(Stop::Db { error, commit });
        }
        tracing::warn!(operation, tries, ?delay, %error, "stategraph-checkpoint-postgres: retrying");
        tokio::time::sleep(delay).await;
    }
}

/// The wait before attempt `tries + 1`: exponential backoff from 10 ms, at
/// most 160 ms.
fn backoff_delay(tries: u32) -> Duration {
    Duration::from_millis(10 << tries.min(5).saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout: Option<Duration>) -> Limits {
        Limits {
            max_attempts: 1,
            statement_timeout: Limits::statement_timeout(timeout),
        }
    }

    #[test]
    fn begin_sets_the_statement_timeout_for_the_transaction_only() {
        let begin = limits(Some(Duration::from_millis(250))).begin("BEGIN");
        assert_eq!(begin.as_str(), "BEGIN; SET LOCAL statement_timeout = 250");
        let begin = limits(None).begin("BEGIN ISOLATION LEVEL READ COMMITTED");
        assert_eq!(begin.as_str(), "BEGIN ISOLATION LEVEL READ COMMITTED");
    }

    #[test]
    fn statement_timeouts_round_up_and_stay_in_postgres_range() {
        let ms = |timeout| limits(Some(timeout)).statement_timeout_ms();
        assert_eq!(
            ms(Duration::from_micros(1)),
            Some(1),
            "never 0, which is off"
        );
        assert_eq!(ms(Duration::from_micros(1_500)), Some(2));
        assert_eq!(ms(Duration::from_secs(30)), Some(30_000));
        assert_eq!(ms(Duration::MAX), Some(MAX_STATEMENT_TIMEOUT_MS));
    }

    #[test]
    fn zero_or_none_turns_the_limit_off() {
        assert_eq!(limits(Some(Duration::ZERO)).statement_timeout, None);
        assert_eq!(limits(None).statement_timeout_ms(), None);
        assert_eq!(limits(None).deadline(), None);
    }

    #[test]
    fn a_deadline_too_far_away_is_no_deadline() {
        assert_eq!(limits(Some(Duration::MAX)).deadline(), None);
    }

    #[test]
    fn backoff_doubles_from_10_ms_to_160_ms() {
        let delays: Vec<u64> = (1..=7)
            .map(|tries| u64::try_from(backoff_delay(tries).as_millis()).unwrap_or(u64::MAX))
            .collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 160, 160]);
    }
}
