//! What the client does with bytes a server sent and with its own
//! configuration, without HTTP around it: the entry points of the fuzz
//! targets in `fuzz/` (feature `_fuzz`). Not a public API.

use serde_json::Value as Json;
use stategraph_llm::{AiMessage, AiMessageChunk, CallOptions, Message, Result};

use crate::client::{self, Client};
pub use crate::sse::SseDecoder;
use crate::{OpenAiConfig, wire};

/// The operation named in the errors below.
const OPERATION: &str = "POST /chat/completions";

/// A chat completion body read as [`ChatOpenAi::generate`](crate::ChatOpenAi)
/// reads it: parsed within the nesting limit, then turned into an AI
/// message.
///
/// # Errors
/// What `generate` returns for that body.
pub fn chat_response(body: &[u8], model: &str) -> Result<AiMessage> {
    let json = client::parse_json(body, "not JSON", OPERATION)?;
    wire::chat_response(json, model)
}

/// The data of one server-sent event read as a streamed reply reads it:
/// `None` for the `[DONE]` that ends the stream, else the event's chunk
/// (`Ok(None)` for an event that carries nothing).
///
/// # Errors
/// What the stream yields for that event.
pub fn stream_event(data: &[u8]) -> Option<Result<Option<AiMessageChunk>>> {
    client::event_json(data, OPERATION).map(|json| wire::stream_chunk(&json?))
}

/// The body a request for `messages` sends.
///
/// # Errors
/// A message no request can carry.
pub fn chat_request(config: &OpenAiConfig, messages: &[Message]) -> Result<Json> {
    wire::chat_request(config, messages, &CallOptions::default(), true)
}

/// The HTTP request a chat call with this configuration and `messages`
/// sends, built but not sent.
///
/// # Errors
/// The configuration's or the message's error, or reqwest's when it
/// cannot build the request (a base URL that does not parse, a key that
/// is not a header value), as text.
pub fn build_request(
    config: OpenAiConfig,
    messages: &[Message],
) -> std::result::Result<reqwest::Request, String> {
    let body = chat_request(&config, messages).map_err(|err| err.to_string())?;
    let client = Client::new(config).map_err(|err| err.to_string())?;
    client
        .request("/chat/completions", &body)
        .build()
        .map_err(|err| err.to_string())
}
