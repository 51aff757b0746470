//! The LangGraph Server API for stategraph graphs.
#![doc = include_str!("../README.md")]

mod api;
mod assistants;
mod error;
mod persist;
mod server;
mod settings;
mod state;
mod threads;
mod wire;

pub use error::Error;
pub use server::{BoundServer, Server, ServerBuilder};
pub use settings::{HttpSettings, ServerSettings, Settings};
