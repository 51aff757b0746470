//! The LangGraph Server API for stategraph graphs.
#![doc = include_str!("../README.md")]

mod api;
mod assistants;
pub mod auth;
mod crons;
mod error;
#[cfg(feature = "fixtures")]
pub mod fixtures;
mod persist;
mod runs;
mod server;
mod settings;
mod state;
mod threads;
mod webhooks;
mod wire;

pub use error::Error;
pub use server::{BoundServer, Server, ServerBuilder};
pub use settings::{
    CronSettings, DatabaseSettings, HttpSettings, RunSettings, ServerSettings, Settings,
    StoreSettings, StreamSettings, ThreadSettings, TtlStrategy, WebhookSettings,
};
