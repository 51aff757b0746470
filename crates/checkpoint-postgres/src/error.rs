//! Converts sqlx failures into `stategraph_checkpoint::Error`, and tells which
//! of them are worth retrying.

use std::fmt;

use stategraph_checkpoint::Error;

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
    fn lost_connections_are_transient_and_bugs_are_not() {
        let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof");
        assert!(is_transient(&sqlx::Error::Io(io)));
        assert!(!is_transient(&sqlx::Error::RowNotFound));
        assert!(!is_transient(&sqlx::Error::PoolTimedOut));
        assert!(!is_transient(&sqlx::Error::ColumnNotFound("x".into())));
    }
}
