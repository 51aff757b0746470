//! The SQLite checkpoint saver of stategraph.
#![doc = include_str!("../README.md")]

mod error;
mod ops;
mod pool;
mod saver;
mod schema;
mod store;
#[cfg(feature = "sqlite-vec")]
mod vec;
mod writer;

pub use error::{CorruptRowError, MigrationChecksumError, SchemaTooNewError};
pub use saver::SqliteSaver;
pub use store::SqliteStore;

#[cfg(feature = "_bench")]
#[doc(hidden)]
pub mod bench_baseline;
