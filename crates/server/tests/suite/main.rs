//! The server over real HTTP on 127.0.0.1, checked against what the
//! official server 0.16.7 answered (../shared/server/TRANSCRIPTS.md).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod assistants;
mod auth;
mod crons;
mod http;
mod persistence;
mod runs;
mod sse;
mod state;
mod store;
mod support;
mod threads;
mod webhooks;
