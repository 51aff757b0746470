//! Checkpoints, the `CheckpointSaver` trait and the in-memory saver.
#![doc = include_str!("../README.md")]

mod decoded;
mod error;
mod filter;
pub mod limits;
mod memory;
pub mod pieces;
mod saver;
pub mod serde;
mod types;
mod version;

pub use decoded::DecodedValues;
pub use error::{Error, Result};
pub use filter::MetadataFilter;
pub use memory::InMemorySaver;
pub use saver::{
    CheckpointSaver, DynCheckpointSaver, ListQuery, PruneStrategy, SaverCapabilities, SharedSaver,
};
pub use types::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource,
    CheckpointTuple, EXCLUDED_METADATA_KEYS, PendingWrite, special, write_index,
};
pub use version::ChannelVersion;

pub use stategraph_core::{CheckpointId, Value};
