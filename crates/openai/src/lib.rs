//! OpenAI-compatible chat completions and embeddings for stategraph.
#![doc = include_str!("../README.md")]

mod chat;
mod client;
mod config;
mod embeddings;
mod wire;

pub use chat::ChatOpenAi;
pub use config::{ConfigError, DEFAULT_BASE_URL, OpenAiConfig};
pub use embeddings::OpenAiEmbeddings;
