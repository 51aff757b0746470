//! PostgreSQL checkpoint saver.
#![doc = include_str!("../README.md")]

mod attempt;
#[cfg(feature = "_bench")]
#[doc(hidden)]
pub mod bench_baseline;
mod error;
mod migrations;
mod saver;
mod sql;
mod store;

pub use error::DatabaseError;
pub use saver::{APPLICATION_NAME, PostgresSaver};
pub use store::PostgresStore;

/// The sqlx crate this saver is built on, for building pools and connection
/// options ([`sqlx::postgres::PgPoolOptions`], [`sqlx::postgres::PgConnectOptions`]).
pub use sqlx;
