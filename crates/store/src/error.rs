//! The error type of stores.

use std::time::Duration;

use stategraph_core::ErrorKind;
use stategraph_core::limits::LimitError;

/// A `Result` with this crate's [`enum@StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What can go wrong in a store operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A namespace breaks the naming rules.
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The namespace given.
        namespace: Vec<String>,
        /// Which rule it breaks (LangGraph's wording).
        reason: String,
    },
    /// A filter key is not a dotted path of `[A-Za-z0-9_-]` segments.
    #[error(
        "invalid filter key `{key}`: use dot-separated segments of letters, digits, `_` and `-`"
    )]
    InvalidFilterKey {
        /// The key given.
        key: String,
    },
    /// A filter operator is unknown or has a bad operand.
    #[error("invalid filter on `{key}`: {message}")]
    InvalidFilter {
        /// The filtered key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A value that must be a JSON object is not one.
    #[error("the value of {namespace:?}/{key} must be a JSON object")]
    NotAnObject {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
    },
    /// A value nests arrays and objects deeper than
    /// [`MAX_DEPTH`](stategraph_core::json::MAX_DEPTH) levels (the item's
    /// object counts as one): no store could read it back.
    #[error("the value of {namespace:?}/{key} nests deeper than {limit} levels")]
    ValueTooDeep {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// The limit.
        limit: usize,
    },
    /// A value is larger than
    /// [`MAX_VALUE_BYTES`](stategraph_core::limits::MAX_VALUE_BYTES) as
    /// JSON.
    #[error("the value of {namespace:?}/{key} is larger than {limit} bytes as JSON")]
    ValueTooLarge {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// The limit.
        limit: usize,
    },
    /// A namespace or key breaks the limit table
    /// ([`stategraph_core::limits`]): too long, too many labels, or a NUL
    /// character. Every store refuses it before touching its storage.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The store does not support what was asked (TTL on a store without
    /// it, for example).
    #[error("{operation} is not supported by {store}")]
    Unsupported {
        /// The operation asked for.
        operation: String,
        /// The store.
        store: &'static str,
    },
    /// Embedding texts for the semantic index failed.
    #[error("embedding failed: {0}")]
    Embedding(#[source] stategraph_llm::Error),
    /// The embedder returned vectors of the wrong length.
    #[error("the embedder returned {got} dimensions, the index expects {expected}")]
    Dimensions {
        /// The index's `dims`.
        expected: usize,
        /// What the embedder returned.
        got: usize,
    },
    /// An operation did not finish within its time limit (a statement the
    /// database cancelled, or a database that stopped answering).
    #[error("{store} {operation} timed out after {limit:?}: {message}")]
    Timeout {
        /// The store.
        store: &'static str,
        /// The operation (`batch`, `sweep_expired`, ...).
        operation: &'static str,
        /// The limit that was reached.
        limit: Duration,
        /// What happened.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The backing database failed.
    #[error("{store} failed: {message}")]
    Backend {
        /// The store.
        store: &'static str,
        /// What happened.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl StoreError {
    /// The coarse classification of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidNamespace { .. }
            | Self::InvalidFilterKey { .. }
            | Self::InvalidFilter { .. }
            | Self::NotAnObject { .. }
            | Self::ValueTooDeep { .. }
            | Self::ValueTooLarge { .. }
            | Self::Limit(_)
            | Self::Dimensions { .. } => ErrorKind::InvalidInput,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::Embedding(err) => err.kind(),
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Backend { .. } => ErrorKind::Backend,
        }
    }

    /// A backend failure of `store` from any error.
    pub fn backend(
        store: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Backend {
            store,
            message: source.to_string(),
            source: Some(Box::new(source)),
        }
    }
}
