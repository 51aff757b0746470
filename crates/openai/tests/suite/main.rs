//! The OpenAI-compatible provider against an in-process HTTP stand-in.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod chat;
mod embeddings;
mod limits;
mod stand_in;
