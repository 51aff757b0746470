//! Shared vocabulary of stategraph: values, run configuration, ids and error kinds.
#![doc = include_str!("../README.md")]

mod config;
mod error;
mod fxhash;
mod guard;
mod id;
pub mod json;
pub mod limits;
mod list;
mod value;

pub use config::{Configurable, RunnableConfig};
pub use error::ErrorKind;
pub use fxhash::{FxBuild, FxHasher};
pub use id::{CheckpointId, random_u64, random_unit, random_uuid};
pub use list::{Iter as ListIter, List};
pub use value::{ShortTypeName, StateValue, Value, ValueError};

/// A JSON object, the shape of metadata and free-form configuration.
pub type JsonMap = serde_json::Map<String, serde_json::Value>;
