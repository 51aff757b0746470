//! Errors of graph runs.

use std::borrow::Cow;
use std::fmt;

use stategraph_channels::ChannelError;
use stategraph_core::{ErrorKind, ValueError};
use std::sync::Arc;

/// Result of runtime operations.
pub type Result<T, E = PregelError> = std::result::Result<T, E>;

/// A failure raised by a node (user code).
///
/// Carries an error *class* (LangGraph reports the Python exception class; we
/// report the Rust type name, or a class given explicitly) used by retry
/// policies and shown in traces, plus the message and the original error.
///
/// One pointer wide: a node's result (`Result<_, NodeError>`), which every
/// node call returns, stays small; only a failure allocates.
pub struct NodeError(Box<NodeErrorParts>);

struct NodeErrorParts {
    class: Cow<'static, str>,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl NodeError {
    /// An error of an explicit class, e.g. `NodeError::new("ValueError", "bad input")`.
    pub fn new(class: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self(Box::new(NodeErrorParts {
            class: class.into(),
            message: message.into(),
            source: None,
        }))
    }

    /// An error of an explicit class that keeps `source` as its cause (its
    /// message is the source's).
    pub fn with_source(
        class: impl Into<Cow<'static, str>>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self(Box::new(NodeErrorParts {
            class: class.into(),
            message: source.to_string(),
            source: Some(Box::new(source)),
        }))
    }

    /// The error class (a Rust type name or an explicit class).
    pub fn class(&self) -> &str {
        &self.0.class
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The original error, when the node returned a Rust error.
    pub fn source_error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.source.as_deref()
    }

    /// The interrupts this error carries, when the node returned the
    /// [`Interrupted`](crate::Interrupted) of `TaskContext::interrupt` (or of
    /// a subgraph).
    pub fn interrupts(&self) -> Option<&[crate::interrupt::Interrupt]> {
        self.0
            .source
            .as_deref()
            .and_then(|source| source.downcast_ref::<crate::interrupt::Interrupted>())
            .map(|interrupted| interrupted.0.as_slice())
    }

    /// `Class('message')`, the form LangGraph stores for a failed task (the
    /// message quoted as Python's `repr` quotes a string).
    pub fn repr(&self) -> String {
        let message = stategraph_llm::python_str_repr(&self.0.message);
        format!("{}({message})", self.0.class)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for NodeError {
    fn from(err: E) -> Self {
        let full = std::any::type_name::<E>();
        let class = full.rsplit("::").next().unwrap_or(full);
        Self(Box::new(NodeErrorParts {
            class: Cow::Owned(class.to_owned()),
            message: err.to_string(),
            source: Some(Box::new(err)),
        }))
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.class, self.0.message)
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeError")
            .field("class", &self.0.class)
            .field("message", &self.0.message)
            .finish()
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PregelError {
    /// The run took more supersteps than the recursion limit allows.
    #[error(
        "Recursion limit of {limit} reached without hitting a stop condition. You can increase the limit by setting the `recursion_limit` config key."
    )]
    GraphRecursion {
        /// The limit in force.
        limit: usize,
    },
    /// The writes of a step are invalid (LangGraph's `InvalidUpdateError`).
    #[error("{0}")]
    InvalidUpdate(String),
    /// A channel refused the writes of a step.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// A node failed (after its retries).
    #[error("node {node:?} failed: {error}")]
    Node {
        /// The node.
        node: String,
        /// What it raised.
        error: NodeError,
    },
    /// The run was given no input and there is nothing to resume.
    #[error("Received no input for {0}")]
    EmptyInput(String),
    /// The graph definition or a run argument is invalid.
    #[error("{0}")]
    InvalidGraph(String),
    /// A node of a subgraph returned `Command { graph: Parent, .. }`: the
    /// subgraph stops and its parent applies the command (LangGraph's
    /// `ParentCommand`). A root graph turns it into an `InvalidUpdate`.
    #[error("a Command addressed to the parent graph")]
    ParentCommand(Box<crate::command::Command>),
    /// The run cannot proceed as asked (LangGraph's `RuntimeError`).
    #[error("{0}")]
    Runtime(String),
    /// A value did not have the expected shape.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// The checkpoint saver failed.
    #[error(transparent)]
    Checkpoint(#[from] stategraph_checkpoint::Error),
    /// Another run or update moved the thread's head while this one was
    /// working on it. Nothing this run saved after that became the head:
    /// the winner's checkpoints stay the thread's state. Run again (on the
    /// new head) or report the thread busy.
    #[error("thread {thread_id:?} (namespace {checkpoint_ns:?}) is busy: {source}")]
    ThreadBusy {
        /// The thread.
        thread_id: String,
        /// The namespace whose head moved.
        checkpoint_ns: String,
        /// The saver's conflict.
        #[source]
        source: Box<stategraph_checkpoint::Error>,
    },
    /// The graph has a checkpointer but the run's config names no thread
    /// (LangGraph's `ValueError` about the `configurable` keys).
    #[error(
        "Checkpointer requires one or more of the following 'configurable' keys: thread_id, checkpoint_ns, checkpoint_id"
    )]
    MissingThreadId,
    /// A state operation (`get_state`, `get_state_history`) on a graph
    /// compiled without a checkpointer.
    #[error("No checkpointer set")]
    NoCheckpointer,
    /// A LangGraph feature this version does not implement yet.
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// A run context given as JSON (`RunOptions::context_json`) does not
    /// decode into the graph's declared context type; the run did not
    /// start. The source names the type and the path of the bad part.
    #[error("invalid run context: {0}")]
    InvalidContext(#[source] Box<ValueError>),
}

impl PregelError {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::GraphRecursion { .. }
            | Self::InvalidUpdate(_)
            | Self::EmptyInput(_)
            | Self::InvalidGraph(_)
            | Self::Runtime(_)
            | Self::ParentCommand(_)
            | Self::MissingThreadId
            | Self::NoCheckpointer
            | Self::InvalidContext(_) => ErrorKind::InvalidInput,
            Self::Unsupported(_) => ErrorKind::Unsupported,
            Self::Channel(err) => err.kind(),
            Self::Node { .. } => ErrorKind::Backend,
            Self::Value(err) => err.kind(),
            Self::Checkpoint(err) => err.kind(),
            Self::ThreadBusy { .. } => ErrorKind::Conflict,
        }
    }

    /// LangGraph's class name for this error (`GraphRecursionError`,
    /// `InvalidUpdateError`, `EmptyInputError`, or the node's error class).
    pub fn class(&self) -> &str {
        match self {
            Self::GraphRecursion { .. } => "GraphRecursionError",
            Self::InvalidUpdate(_) => "InvalidUpdateError",
            Self::Channel(err) if err.is_invalid_update() => "InvalidUpdateError",
            // A value that does not fit a typed key.
            Self::Channel(ChannelError::Value { source, .. }) => source.class(),
            Self::Channel(_) | Self::Value(_) => "ValueError",
            Self::Node { error, .. } => error.class(),
            Self::EmptyInput(_) => "EmptyInputError",
            Self::Runtime(_) => "RuntimeError",
            Self::ParentCommand(_) => "ParentCommand",
            Self::InvalidGraph(_) => "ValueError",
            Self::Checkpoint(_) => "CheckpointError",
            Self::ThreadBusy { .. } => "ThreadBusyError",
            Self::MissingThreadId | Self::NoCheckpointer => "ValueError",
            Self::Unsupported(_) => "NotImplementedError",
            // pydantic's, or the dataclass constructor's `TypeError`: a
            // context of the wrong shape is a validation failure.
            Self::InvalidContext(source) => source.class(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_quotes_like_python() {
        let repr = |m: &str| NodeError::new("ValueError", m).repr();
        assert_eq!(repr("boom"), "ValueError('boom')");
        assert_eq!(repr("it's"), "ValueError(\"it's\")");
        assert_eq!(repr("both ' and \""), "ValueError('both \\' and \"')");
        assert_eq!(repr("a\nb\\c"), "ValueError('a\\nb\\\\c')");
    }
}

/// A node's failure, as its error handler sees it (LangGraph's
/// `langgraph.errors.NodeError`): the node and what it failed with.
#[derive(Debug)]
#[non_exhaustive]
pub struct NodeFailure {
    /// The node that failed.
    pub node: Arc<str>,
    /// Its error, after its retries.
    pub error: NodeError,
}

impl From<crate::command::InvalidCommand> for PregelError {
    fn from(err: crate::command::InvalidCommand) -> Self {
        Self::InvalidUpdate(err.0)
    }
}
