//! Errors of checkpoint savers.

use std::time::Duration;

use stategraph_core::limits::LimitError;
use stategraph_core::{CheckpointId, ErrorKind, ValueError};

use crate::ChannelVersion;
use crate::pieces::JoinError;

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
    /// A checkpoint's id does not sort above its parent's. Ids grow along
    /// a thread (string order is creation order), so such a child could
    /// never be the thread's latest checkpoint; the usual cause is a writer
    /// whose clock runs behind the one that wrote the parent.
    #[error(
        "{operation} failed for thread {thread_id:?}: checkpoint id {checkpoint_id:?} does not sort above its parent {parent:?}"
    )]
    IdBeforeParent {
        /// The saver operation.
        operation: &'static str,
        /// The thread.
        thread_id: String,
        /// The id that was refused.
        checkpoint_id: String,
        /// The parent's id.
        parent: String,
    },
    /// An id, name or the metadata breaks the limit table
    /// ([`stategraph_core::limits`]): refused by every saver before it
    /// touches its storage.
    #[error("{operation} failed: {limit}")]
    Limit {
        /// The saver operation.
        operation: &'static str,
        /// The limit broken, naming the text or value.
        #[source]
        limit: LimitError,
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
    /// A stored checkpoint is incomplete: it lists a channel at a version
    /// for which no value row is stored (deleted behind the saver's back, or
    /// never written because a `put` named the version as unchanged).
    ///
    /// A version stored without a value (a cleared channel) is not missing:
    /// the channel reads as absent. The checkpoint is unreadable rather than
    /// read as if the channel were empty, which would silently lose history.
    #[error(
        "{operation} failed for thread {thread_id:?}, namespace {checkpoint_ns:?}, \
         checkpoint {checkpoint_id}: no value is stored for channel {channel:?} at version {version}"
    )]
    Integrity {
        /// The saver operation.
        operation: &'static str,
        /// The thread of the checkpoint.
        thread_id: String,
        /// The namespace of the checkpoint.
        checkpoint_ns: String,
        /// The incomplete checkpoint.
        checkpoint_id: CheckpointId,
        /// The channel whose value is missing.
        channel: String,
        /// The version the checkpoint lists for the channel.
        version: ChannelVersion,
    },
    /// A stored value refers to a piece (a large string stored once per
    /// thread, see [`crate::pieces`]) that is not stored, or its stored
    /// skeleton is malformed: deleted or damaged behind the saver's back.
    #[error("{operation} failed for thread {thread_id:?}, channel {channel:?}: {source}")]
    Piece {
        /// The saver operation.
        operation: &'static str,
        /// The thread of the value.
        thread_id: String,
        /// The channel of the value.
        channel: String,
        /// What is wrong with the piece.
        #[source]
        source: JoinError,
    },
    /// The operation did not finish within its time limit (a statement the
    /// database cancelled, or a backend that stopped answering).
    #[error("{operation} timed out after {limit:?}: {source}")]
    Timeout {
        /// The saver operation.
        operation: &'static str,
        /// The limit that was reached.
        limit: Duration,
        /// What ran out of time: the backend's own error, or an explanation.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
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
            Self::InvalidFilterKey { .. } | Self::InvalidInput { .. } | Self::Limit { .. } => {
                ErrorKind::InvalidInput
            }
            Self::Conflict { .. } | Self::IdBeforeParent { .. } => ErrorKind::Conflict,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::Value { .. } | Self::UnknownTag { .. } => ErrorKind::Serialization,
            // Stored data that is gone is a failure of the storage, not of the
            // request (`InvalidInput`) nor of a value's encoding
            // (`Serialization`); corrupt rows are `Backend` errors too.
            Self::Integrity { .. } | Self::Piece { .. } | Self::Backend { .. } => {
                ErrorKind::Backend
            }
            Self::Timeout { .. } => ErrorKind::Timeout,
        }
    }

    /// Checks that a put's checkpoint sorts above its parent (the
    /// config's `checkpoint_id`): every saver refuses it otherwise with
    /// [`Error::IdBeforeParent`], before it stores anything.
    pub fn check_child_order(
        operation: &'static str,
        config: &crate::CheckpointConfig,
        checkpoint_id: &stategraph_core::CheckpointId,
    ) -> Result<()> {
        match &config.checkpoint_id {
            Some(parent) if checkpoint_id <= parent => Err(Self::IdBeforeParent {
                operation,
                thread_id: config.thread_id.clone(),
                checkpoint_id: checkpoint_id.to_string(),
                parent: parent.to_string(),
            }),
            _ => Ok(()),
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
