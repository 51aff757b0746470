//! Errors of checkpoint savers.

use stategraph_core::{ErrorKind, ValueError};

/// Result of checkpoint operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A checkpoint saver failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A metadata filter key contains characters outside `[A-Za-z0-9_.-]`.
    #[error(
        "invalid metadata filter key {key:?}: only letters, digits, '_', '.' and '-' are allowed"
    )]
    InvalidFilterKey {
        /// The rejected key.
        key: String,
    },
    /// The request itself is malformed.
    #[error("{operation} failed: {message}")]
    InvalidInput {
        /// The saver operation (`put`, `list`, ...).
        operation: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Another writer changed the thread first.
    #[error("{operation} failed for thread {thread_id:?}: {message}")]
    Conflict {
        /// The saver operation.
        operation: &'static str,
        /// The thread.
        thread_id: String,
        /// What conflicted.
        message: String,
    },
    /// The saver does not implement this operation.
    #[error("{operation} is not supported by {saver}")]
    Unsupported {
        /// The saver operation.
        operation: &'static str,
        /// The saver type.
        saver: &'static str,
    },
    /// A stored or written value could not be (de)serialized.
    #[error("{operation} failed for channel {channel:?}: {source}")]
    Value {
        /// The saver operation.
        operation: &'static str,
        /// The channel whose value failed.
        channel: String,
        /// The underlying value error, naming the path inside the value.
        #[source]
        source: ValueError,
    },
    /// Stored bytes carry a serialization tag this serializer does not know.
    #[error("cannot decode stored value: unknown serialization tag {tag:?}")]
    UnknownTag {
        /// The tag found in storage.
        tag: String,
    },
    /// The storage backend failed.
    #[error("{operation} failed: {source}")]
    Backend {
        /// The saver operation.
        operation: &'static str,
        /// The backend's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidFilterKey { .. } | Self::InvalidInput { .. } => ErrorKind::InvalidInput,
            Self::Conflict { .. } => ErrorKind::Conflict,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::Value { .. } | Self::UnknownTag { .. } => ErrorKind::Serialization,
            Self::Backend { .. } => ErrorKind::Backend,
        }
    }

    /// An [`Error::Unsupported`] for saver type `S`.
    pub fn unsupported<S: ?Sized>(operation: &'static str) -> Self {
        Self::Unsupported {
            operation,
            saver: std::any::type_name::<S>(),
        }
    }
}
