//! OpenAI-compatible chat completions and embeddings for stategraph.
#![doc = include_str!("../README.md")]

mod chat;
mod client;
mod config;
mod embeddings;
mod error;
#[cfg(feature = "_fuzz")]
#[doc(hidden)]
pub mod fuzzing;
// `SseDecoder` is public for the benchmark and the fuzz targets only
// (`_bench`, `_fuzz`).
#[cfg_attr(
    not(any(feature = "_bench", feature = "_fuzz")),
    allow(unreachable_pub)
)]
mod sse;
mod wire;

pub use chat::ChatOpenAi;
pub use config::{ConfigError, DEFAULT_BASE_URL, OpenAiConfig};
pub use embeddings::OpenAiEmbeddings;
pub use error::ResponseError;
#[cfg(feature = "_bench")]
#[doc(hidden)]
pub use sse::SseDecoder;
