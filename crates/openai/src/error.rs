//! [`ResponseError`]: a response the client stopped reading because it
//! broke one of its limits.

use stategraph_core::ErrorKind;

/// A response larger or more deeply nested than the client accepts.
///
/// The client reports it as a [`stategraph_llm::Error::Provider`] (kind
/// [`ErrorKind::Backend`]) whose `source` is this error, and whose message
/// names the request and the limit; [`find_in`](Self::find_in) gets it
/// back. The size limits are set on [`OpenAiConfig`](crate::OpenAiConfig);
/// a response that takes longer than its deadline is a
/// [`stategraph_llm::Error::Timeout`] instead.
///
/// ```
/// use stategraph_openai::ResponseError;
///
/// let err = ResponseError::LineTooLong { limit: 1024 };
/// assert_eq!(
///     err.to_string(),
///     "a server-sent event line is longer than the line limit of 1024 bytes"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// A line of a server-sent event stream is longer than
    /// [`OpenAiConfig::max_line_bytes`](crate::OpenAiConfig::max_line_bytes)
    /// (not counting its `\n`).
    #[error("a server-sent event line is longer than the line limit of {limit} bytes")]
    LineTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The data of one server-sent event (its `data` lines joined by `\n`)
    /// is larger than
    /// [`OpenAiConfig::max_event_bytes`](crate::OpenAiConfig::max_event_bytes).
    #[error("a server-sent event is larger than the event limit of {limit} bytes")]
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A response body is larger than
    /// [`OpenAiConfig::max_body_bytes`](crate::OpenAiConfig::max_body_bytes).
    #[error("the response body is larger than the body limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A JSON body or event nests arrays and objects deeper than serde_json
    /// parses (127 levels).
    #[error("the response JSON is nested deeper than {limit} levels")]
    TooDeep {
        /// The deepest nesting accepted.
        limit: usize,
    },
}

impl ResponseError {
    /// The coarse classification: [`ErrorKind::Backend`], since the
    /// remote service sent what the client does not accept.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::LineTooLong { .. }
            | Self::EventTooLarge { .. }
            | Self::BodyTooLarge { .. }
            | Self::TooDeep { .. } => ErrorKind::Backend,
        }
    }

    /// The limit error `err` carries, if it is one (the `source` of a
    /// [`Provider`](stategraph_llm::Error::Provider) error this crate
    /// returned).
    pub fn find_in(err: &stategraph_llm::Error) -> Option<&Self> {
        match err {
            stategraph_llm::Error::Provider {
                source: Some(source),
                ..
            } => source.downcast_ref(),
            _ => None,
        }
    }
}
