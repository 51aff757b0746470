//! The error type of the LLM layer.

use stategraph_core::ErrorKind;

use crate::tool::ToolError;

/// A `Result` with this crate's [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in the LLM layer: bad messages, bad model output, tool
/// failures and provider failures.
///
/// Bad model output (an unknown tool, arguments that are not JSON, an empty
/// response) is always reported here or as an
/// [`InvalidToolCall`](crate::InvalidToolCall); nothing in this crate panics on
/// it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `RemoveMessage` names an id that no message has (LangGraph raises
    /// `ValueError`).
    #[error("attempting to delete a message with an id that doesn't exist ('{id}')")]
    UnknownRemoveId {
        /// The id the `RemoveMessage` named.
        id: String,
    },
    /// A value could not be read as a message.
    #[error("invalid message: {message}")]
    InvalidMessage {
        /// What is wrong with it.
        message: String,
    },
    /// The model called a tool that is not in the tool list.
    #[error("{name} is not a valid tool, try one of [{}]", available.join(", "))]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The names of the tools that exist.
        available: Vec<String>,
    },
    /// A tool failed, or its arguments did not fit its schema.
    #[error("tool `{tool}` failed: {source}")]
    Tool {
        /// The tool's name.
        tool: String,
        /// What the tool reported.
        #[source]
        source: ToolError,
    },
    /// The model answered with nothing: no message, no chunk, no choice.
    #[error("model `{model}` returned an empty response")]
    EmptyResponse {
        /// The model (or provider) that answered.
        model: String,
    },
    /// The model's answer does not fit the requested output schema.
    #[error("structured output `{schema}` is invalid: {message}")]
    StructuredOutput {
        /// The output schema's name.
        schema: String,
        /// What is wrong with the answer.
        message: String,
    },
    /// A provider (an HTTP API, a local server) failed; the provider's own
    /// message is kept.
    #[error("{provider} request failed{}: {message}", status.map(|s| format!(" with status {s}")).unwrap_or_default())]
    Provider {
        /// The provider's name (`openai`, `ollama`, ...).
        provider: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What the provider said.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The call ran out of time.
    #[error("{operation} timed out")]
    Timeout {
        /// What timed out.
        operation: String,
    },
    /// The model or tool does not support the operation.
    #[error("{operation} is not supported by {by}")]
    Unsupported {
        /// The operation asked for.
        operation: String,
        /// What does not support it.
        by: String,
    },
}

impl Error {
    /// The coarse classification of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownRemoveId { .. } | Self::InvalidMessage { .. } => ErrorKind::InvalidInput,
            Self::UnknownTool { .. } => ErrorKind::NotFound,
            Self::Tool { source, .. } => source.kind(),
            Self::EmptyResponse { .. } | Self::Provider { .. } => ErrorKind::Backend,
            Self::StructuredOutput { .. } => ErrorKind::Serialization,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
        }
    }

    /// A provider error without an HTTP status or source.
    pub fn provider(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Provider {
            provider: provider.into(),
            status: None,
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn invalid_message(message: impl Into<String>) -> Self {
        Self::InvalidMessage {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_is_wrong() {
        let err = Error::UnknownRemoveId { id: "nope".into() };
        assert_eq!(
            err.to_string(),
            "attempting to delete a message with an id that doesn't exist ('nope')"
        );
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let err = Error::UnknownTool {
            name: "missing_tool".into(),
            available: vec!["add".into(), "shout".into()],
        };
        assert_eq!(
            err.to_string(),
            "missing_tool is not a valid tool, try one of [add, shout]"
        );
        let err = Error::Provider {
            provider: "openai".into(),
            status: Some(429),
            message: "rate limited".into(),
            source: None,
        };
        assert_eq!(
            err.to_string(),
            "openai request failed with status 429: rate limited"
        );
        assert_eq!(err.kind(), ErrorKind::Backend);
    }
}
