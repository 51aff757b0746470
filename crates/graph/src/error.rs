//! Errors of building and compiling a `StateGraph`.

use stategraph_core::ErrorKind;

/// A graph definition mistake, named precisely.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// `START` and `END` cannot be node names.
    #[error("node `{0}` is reserved")]
    ReservedName(String),
    /// Node names cannot contain `|` or `:` (they delimit checkpoint namespaces).
    #[error(
        "'{character}' is a reserved character and is not allowed in the node names (node `{node}`)"
    )]
    ReservedCharacter {
        /// The node.
        node: String,
        /// The character.
        character: char,
    },
    /// A node was added twice.
    #[error("Node `{0}` already present.")]
    DuplicateNode(String),
    /// An edge or branch starts at a node that does not exist.
    #[error("Found edge starting at unknown node '{0}'")]
    UnknownSource(String),
    /// An edge ends at a node that does not exist.
    #[error("Found edge ending at unknown node `{0}`")]
    UnknownTarget(String),
    /// A branch's path map names a node that does not exist.
    #[error("At '{source_node}' node, '{branch}' branch found unknown target '{target}'")]
    UnknownBranchTarget {
        /// The node the branch leaves.
        source_node: String,
        /// The branch name.
        branch: String,
        /// The unknown target.
        target: String,
    },
    /// `END` cannot start an edge.
    #[error("END cannot be a start node")]
    EndAsSource,
    /// `START` cannot end an edge.
    #[error("START cannot be an end node")]
    StartAsTarget,
    /// Nothing leaves `START`.
    #[error("Graph must have an entrypoint: add at least one edge from START to another node")]
    NoEntrypoint,
    /// A branch of the same name leaves the node already.
    #[error("Branch with name `{branch}` already exists for node `{node}`")]
    DuplicateBranch {
        /// The node.
        node: String,
        /// The branch name.
        branch: String,
    },
    /// An interrupt names a node that does not exist.
    #[error("Interrupt node `{0}` not found")]
    UnknownInterruptNode(String),
    /// A state key is declared twice or an input/output key is unknown.
    #[error("{0}")]
    InvalidSchema(String),
    /// A node's timeout cannot be used.
    #[error("node `{node}`: {problem}")]
    InvalidTimeout {
        /// The node (`*` for the graph's defaults).
        node: String,
        /// What is wrong.
        problem: &'static str,
    },

    /// The node an error handler runs as already exists.
    #[error("Auto-generated error handler node `{0}` already exists.")]
    DuplicateErrorHandler(String),
    /// The feature is not built yet.
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
    /// The runtime refused the compiled graph.
    #[error(transparent)]
    Runtime(#[from] stategraph_pregel::PregelError),
}

impl GraphError {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Unsupported(_) => ErrorKind::Unsupported,
            Self::Runtime(err) => err.kind(),
            _ => ErrorKind::InvalidInput,
        }
    }
}
