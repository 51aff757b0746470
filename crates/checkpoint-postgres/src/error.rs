//! Converts sqlx failures into `stategraph_checkpoint::Error`, and tells which
//! of them are worth retrying and which of them are timeouts.

use std::fmt;
use std::time::Duration;

use sqlx::PgPool;
use stategraph_checkpoint::Error;

use crate::attempt::{DEADLINE_GRACE, Limits};

/// A database failure, with the key of the operation that hit it.
///
/// Kept as the `source` of [`Error::Backend`], so callers see
/// `put failed: thread "t1": error returned from database: ...` and can still
/// reach the [`sqlx::Error`] through [`std::error::Error::source`].
#[derive(Debug)]
pub struct DatabaseError {
    key: Option<String>,
    source: sqlx::Error,
}

impl DatabaseError {
    /// The underlying sqlx error.
    pub fn sqlx(&self) -> &sqlx::Error {
        &self.source
    }

    /// Whether the failure is transient: the connection was lost, the server
    /// is shutting the session down, or the transaction lost a serialization
    /// or deadlock race. Retrying the whole operation on a fresh connection
    /// may succeed.
    pub fn is_transient(&self) -> bool {
        is_transient(&self.source)
    }
}

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{key}: {}", self.source),
            None => write!(f, "{}", self.source),
        }
    }
}

impl std::error::Error for DatabaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps a sqlx error as [`Error::Backend`] for `operation`, naming `key`
/// (for example `thread "t1"`) when there is one.
pub(crate) fn backend(operation: &'static str, key: Option<String>, source: sqlx::Error) -> Error {
    Error::Backend {
        operation,
        source: Box::new(DatabaseError { key, source }),
    }
}

/// A database failure of `operation` that stopped it: [`Error::Timeout`]
/// when it says a time limit was reached (see [`reached_limit`]),
/// [`Error::Backend`] otherwise.
pub(crate) fn failed(
    operation: &'static str,
    key: Option<String>,
    source: sqlx::Error,
    limits: Limits,
    pool: &PgPool,
) -> Error {
    let acquire_timeout = pool.options().get_acquire_timeout();
    match reached_limit(&source, limits.statement_timeout, acquire_timeout) {
        Some(limit) => Error::Timeout {
            operation,
            limit,
            source: Box::new(DatabaseError { key, source }),
        },
        None => backend(operation, key, source),
    }
}

/// An operation abandoned at its client-side deadline: the database did not
/// answer within the statement timeout plus [`DEADLINE_GRACE`].
pub(crate) fn unanswered(
    operation: &'static str,
    key: Option<String>,
    writes: bool,
    limit: Duration,
) -> Error {
    let mut message = match key {
        Some(key) => format!("{key}: "),
        None => String::new(),
    };
    message.push_str(&format!(
        "no answer from PostgreSQL within the statement timeout plus {DEADLINE_GRACE:?}, \
         so its connection was closed"
    ));
    if writes {
        message.push_str("; the write may or may not have been committed");
    }
    Error::Timeout {
        operation,
        limit,
        source: message.into(),
    }
}

/// The limit `error` says was reached, if it says so: the statement
/// timeout when the server cancelled a statement while one is set
/// (SQLSTATE 57014, `query_canceled`: without our limit the cancel came
/// from someone else), the pool's acquire timeout when no connection came
/// in time.
pub(crate) fn reached_limit(
    error: &sqlx::Error,
    statement_timeout: Option<Duration>,
    acquire_timeout: Duration,
) -> Option<Duration> {
    match error {
        sqlx::Error::PoolTimedOut => Some(acquire_timeout),
        sqlx::Error::Database(db) if db.code().as_deref() == Some("57014") => statement_timeout,
        _ => None,
    }
}

/// A stored row that does not decode (a corrupt checkpoint or metadata
/// document, an unexpected column type).
pub(crate) fn corrupt(operation: &'static str, key: String, message: impl fmt::Display) -> Error {
    Error::Backend {
        operation,
        source: format!("{key}: stored data is corrupt: {message}").into(),
    }
}

/// Whether retrying on a fresh connection may succeed.
pub(crate) fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        // The socket died (a killed backend, a restarted pooler, a network blip).
        sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // 08: connection exception. 57P01-57P03: the server terminated the
            // session (pg_terminate_backend, shutdown) or is not ready yet.
            // 40001 / 40P01: serialization failure / deadlock, retried whole.
            code.starts_with("08")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
        }),
        // A connection that broke mid-message surfaces as a protocol error.
        sqlx::Error::Protocol(message) => {
            message.contains("unexpected end of file") || message.contains("connection")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_errors_keep_the_source_and_name_the_key() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let err = backend("put", Some("thread \"t1\"".into()), sqlx::Error::Io(io));
        assert_eq!(err.kind(), stategraph_core::ErrorKind::Backend);
        let text = err.to_string();
        assert!(text.starts_with("put failed: thread \"t1\": "), "{text}");
        let source =
            std::error::Error::source(&err).and_then(|s| s.downcast_ref::<DatabaseError>());
        let source = source.map(DatabaseError::sqlx);
        assert!(matches!(source, Some(sqlx::Error::Io(_))));
    }

    #[test]
    fn only_time_limits_are_timeouts() {
        let statement = Some(Duration::from_secs(30));
        let acquire = Duration::from_secs(5);
        let limit = |err: &sqlx::Error| reached_limit(err, statement, acquire);
        assert_eq!(limit(&sqlx::Error::PoolTimedOut), Some(acquire));
        assert_eq!(limit(&sqlx::Error::RowNotFound), None);
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        assert_eq!(
            limit(&sqlx::Error::Io(io)),
            None,
            "a lost connection is retried"
        );
    }

    #[test]
    fn abandoned_writes_say_their_outcome_is_unknown() {
        let limit = Duration::from_millis(250);
        let err = unanswered("put", Some("thread \"t1\"".into()), true, limit);
        assert_eq!(err.kind(), stategraph_core::ErrorKind::Timeout);
        let text = err.to_string();
        assert!(
            text.starts_with("put timed out after 250ms: thread \"t1\": "),
            "{text}"
        );
        assert!(
            text.ends_with("may or may not have been committed"),
            "{text}"
        );
        let read = unanswered("get_tuple", None, false, limit).to_string();
        assert!(!read.contains("committed"), "{read}");
    }

    #[test]
    fn lost_connections_are_transient_and_bugs_are_not() {
        let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof");
        assert!(is_transient(&sqlx::Error::Io(io)));
        assert!(!is_transient(&sqlx::Error::RowNotFound));
        assert!(!is_transient(&sqlx::Error::PoolTimedOut));
        assert!(!is_transient(&sqlx::Error::ColumnNotFound("x".into())));
    }
}
