//! [`ChatOpenAi`]: chat completions as a [`ChatModel`].

use futures::future::ready;
use futures::stream::{self, Stream, StreamExt, TryStreamExt};
use stategraph_llm::{AiMessage, AiMessageChunk, CallOptions, ChatModel, Message, Result};

use crate::client::Client;
use crate::config::ConfigError;
use crate::{OpenAiConfig, wire};

/// A chat model served by an OpenAI-compatible `/chat/completions`
/// endpoint: tools (`bind_tools`, tool choice), JSON-schema response
/// formats, stop sequences, usage, and token streaming over server-sent
/// events (tool-call deltas included).
///
/// Failures are [`stategraph_llm::Error`]s: `Provider` with the HTTP status
/// and the provider's own message, `Timeout`, `EmptyResponse` for an answer
/// without a choice; a stream that is cut or malformed ends with a
/// `Provider` error, never a panic. Tool-call arguments that are not JSON
/// become invalid tool calls.
///
/// ```no_run
/// use stategraph_llm::{CallOptions, ChatModel, Message};
/// use stategraph_openai::{ChatOpenAi, OpenAiConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ChatOpenAi::new(OpenAiConfig::from_env("gpt-4o-mini")?)?;
/// let answer = model.invoke(&[Message::human("Say hi")], &CallOptions::default()).await?;
/// println!("{}", answer.text());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ChatOpenAi {
    client: Client,
}

impl ChatOpenAi {
    /// A model with this configuration.
    ///
    /// # Errors
    /// [`ConfigError::BadBaseUrl`] when the base URL is not http(s).
    pub fn new(config: OpenAiConfig) -> std::result::Result<Self, ConfigError> {
        Ok(Self {
            client: Client::new(config)?,
        })
    }

    /// A model configured from the environment
    /// ([`OpenAiConfig::from_env`]).
    ///
    /// # Errors
    /// As [`OpenAiConfig::from_env`].
    pub fn from_env(default_model: &str) -> std::result::Result<Self, ConfigError> {
        Self::new(OpenAiConfig::from_env(default_model)?)
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        self.client.config()
    }
}

impl ChatModel for ChatOpenAi {
    fn model_name(&self) -> &str {
        self.config().model()
    }

    fn provider_name(&self) -> &str {
        wire::PROVIDER
    }

    async fn generate(&self, messages: &[Message], options: &CallOptions) -> Result<AiMessage> {
        let body = wire::chat_request(self.config(), messages, options, false)?;
        let answer = self.client.post_json("/chat/completions", &body).await?;
        wire::chat_response(answer, self.model_name())
    }

    fn generate_stream<'a>(
        &'a self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a>> {
        let body = wire::chat_request(self.config(), messages, options, true);
        let client = self.client.clone();
        let events = stream::once(async move {
            let body = body?;
            client.post_events("/chat/completions", &body).await
        })
        .try_flatten();
        let chunks = events.try_filter_map(|event| ready(wire::stream_chunk(&event)));
        Some(mark_last(chunks))
    }
}

/// Marks the last chunk of the stream [`ChunkPosition::Last`]
/// (`stategraph_llm::ChunkPosition`) by holding each chunk until the next
/// one arrives. An error comes after the chunk held before it.
fn mark_last<S>(chunks: S) -> impl Stream<Item = Result<AiMessageChunk>> + Send
where
    S: Stream<Item = Result<AiMessageChunk>> + Send,
{
    type Held = (Option<AiMessageChunk>, Option<stategraph_llm::Error>);
    let start: Held = (None, None);
    stream::unfold(
        (Box::pin(chunks), start),
        |(mut chunks, (mut held, failed))| async move {
            if let Some(err) = failed {
                return Some((Err(err), (chunks, (None, None))));
            }
            loop {
                match chunks.next().await {
                    Some(Ok(chunk)) => {
                        if let Some(previous) = held.replace(chunk) {
                            return Some((Ok(previous), (chunks, (held, None))));
                        }
                    }
                    Some(Err(err)) => {
                        return Some(match held.take() {
                            Some(previous) => (Ok(previous), (chunks, (None, Some(err)))),
                            None => (Err(err), (chunks, (None, None))),
                        });
                    }
                    None => {
                        let last = held.take()?.last();
                        return Some((Ok(last), (chunks, (None, None))));
                    }
                }
            }
        },
    )
}
