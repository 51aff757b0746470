//! The coarse error classification shared by every crate.

use std::fmt;

/// What went wrong, independent of which crate or backend reported it.
///
/// Every error type in the workspace exposes `kind() -> ErrorKind`, so callers
/// match on kinds and never on rusqlite, sqlx or serde types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The thing asked for does not exist.
    NotFound,
    /// Another writer got there first (optimistic concurrency).
    Conflict,
    /// The caller passed something invalid: a bad graph, filter, id or value.
    InvalidInput,
    /// The operation is not implemented by this backend or not built yet.
    Unsupported,
    /// The storage backend or a remote service failed.
    Backend,
    /// A value could not be serialized or deserialized.
    Serialization,
    /// The operation was cancelled.
    Cancelled,
    /// The operation ran out of time.
    Timeout,
    /// A bug: an invariant of stategraph itself did not hold.
    Internal,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::NotFound => "not found",
            Self::Conflict => "conflict",
            Self::InvalidInput => "invalid input",
            Self::Unsupported => "unsupported",
            Self::Backend => "backend",
            Self::Serialization => "serialization",
            Self::Cancelled => "cancelled",
            Self::Timeout => "timeout",
            Self::Internal => "internal",
        };
        f.write_str(name)
    }
}
