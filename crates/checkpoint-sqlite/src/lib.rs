//! The SQLite checkpoint saver of stategraph.
#![doc = include_str!("../README.md")]

mod error;
mod ops;
mod pool;
mod saver;
mod schema;

pub use error::{CorruptRowError, MigrationChecksumError, SchemaTooNewError};
pub use saver::SqliteSaver;

#[cfg(feature = "_bench")]
#[doc(hidden)]
pub mod raw;
