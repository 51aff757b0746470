//! Scenarios for SQL-backed stores beyond the ST-* cases: each takes a
//! [`Backend`] (fresh stores with options, a sweep, and a count of stored
//! vectors) and asserts what the store must do; [`differential`] replays
//! seeded random batches on a backend and on `InMemoryStore` side by side
//! and requires equal answers. `stategraph-checkpoint-sqlite` and
//! `stategraph-checkpoint-postgres` run them.

pub mod cases;
pub mod differential;

pub use super::{ManualClock, StoreOptions};

use std::future::Future;

use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_llm::HashEmbeddings;
use stategraph_store::{IndexConfig, Store};

/// A backend under test: fresh, empty stores on demand.
pub trait Backend: Sync {
    /// The store type.
    type Store: Store + Clone;

    /// A fresh, empty store.
    fn store(&self, options: StoreOptions) -> impl Future<Output = Self::Store> + Send;

    /// Deletes the expired items; how many.
    fn sweep<'a>(&'a self, store: &'a Self::Store) -> impl Future<Output = usize> + Send + 'a;

    /// How many vectors the store holds for all its items.
    fn vector_count<'a>(&'a self, store: &'a Self::Store) -> impl Future<Output = i64> + Send + 'a;
}

/// The semantic index of the cases: 64-dimension hash embeddings.
pub fn hash_index() -> IndexConfig {
    IndexConfig::new(64, HashEmbeddings::new(64))
}

/// A JSON object from a `json!` literal.
pub fn obj(value: Json) -> JsonMap {
    match value {
        Json::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
