//! How SQLite failures become [`stategraph_checkpoint::Error`]s.
//!
//! Every rusqlite error is returned as [`Error::Backend`] with the rusqlite
//! error kept as its source, so callers match on
//! [`ErrorKind`](stategraph_core::ErrorKind) and can still downcast to
//! [`rusqlite::Error`] when they need the SQLite result code.

use stategraph_checkpoint::Error;

/// The database was migrated by a newer build of this crate: this build does
/// not know its schema and refuses to touch it.
///
/// Returned (as the source of an [`Error::Backend`]) by
/// [`SqliteSaver::open`](crate::SqliteSaver::open) and
/// [`SqliteSaver::setup`](crate::SqliteSaver::setup).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the database schema is at version {found}, but this build of \
     stategraph-checkpoint-sqlite only knows versions up to {supported}"
)]
pub struct SchemaTooNewError {
    /// The highest migration recorded in the database.
    pub found: i64,
    /// The highest migration this build knows.
    pub supported: i64,
}

/// A migration recorded in the database differs from the one this build
/// would apply under the same version number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "migration {version} recorded in the database has checksum {found}, \
     but this build's migration {version} has checksum {expected}"
)]
pub struct MigrationChecksumError {
    /// The migration version.
    pub version: i64,
    /// The checksum stored when the migration was applied.
    pub found: String,
    /// The checksum of this build's migration.
    pub expected: String,
}

/// A stored row could not be read back (the checkpoint document or metadata
/// is not valid JSON).
#[derive(Debug, thiserror::Error)]
#[error(
    "stored {what} of checkpoint {checkpoint_id:?} in thread {thread_id:?} is unreadable: {source}"
)]
pub struct CorruptRowError {
    /// Which column (`"checkpoint"` or `"metadata"`).
    pub what: &'static str,
    /// The thread of the row.
    pub thread_id: String,
    /// The checkpoint id of the row.
    pub checkpoint_id: String,
    /// What the JSON parser said.
    #[source]
    pub source: serde_json::Error,
}

/// `operation` failed inside SQLite.
pub(crate) fn sqlite(operation: &'static str, err: rusqlite::Error) -> Error {
    Error::Backend {
        operation,
        source: Box::new(err),
    }
}

/// Adapts [`sqlite`] for `map_err`.
pub(crate) fn sqlite_in(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
    move |err| sqlite(operation, err)
}

/// `operation` failed for a reason of this crate's own.
pub(crate) fn backend(
    operation: &'static str,
    err: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Backend {
        operation,
        source: Box::new(err),
    }
}

/// Whether `err` is SQLite saying another connection holds a lock
/// (`SQLITE_BUSY` or `SQLITE_LOCKED`): the busy timeout ran out, or SQLite
/// skipped the busy handler (it does so when waiting could deadlock).
pub(crate) fn is_busy(err: &Error) -> bool {
    let Error::Backend { source, .. } = err else {
        return false;
    };
    source
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        .is_some_and(|code| {
            matches!(
                code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            )
        })
}

/// Renames the operation of a value (de)serialization error, so it names
/// the saver operation that failed (`put`, `get_tuple`, ...) rather than the
/// serializer's step.
pub(crate) fn in_operation(operation: &'static str, err: Error) -> Error {
    match err {
        Error::Value {
            channel, source, ..
        } => Error::Value {
            operation,
            channel,
            source,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use stategraph_core::ErrorKind;

    use super::*;

    #[test]
    fn busy_errors_are_recognised() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let err = sqlite("put", busy);
        assert!(is_busy(&err));
        assert_eq!(err.kind(), ErrorKind::Backend);
        assert!(err.to_string().starts_with("put failed: "), "{err}");
        let other = sqlite("put", rusqlite::Error::QueryReturnedNoRows);
        assert!(!is_busy(&other));
    }
}

/// SQLite could not open or set up the database file at `path`.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the SQLite database {}: {source}", .path.display())]
pub(crate) struct OpenFailed {
    pub(crate) path: std::path::PathBuf,
    pub(crate) source: rusqlite::Error,
}
