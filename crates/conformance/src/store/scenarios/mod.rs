//! Scenarios for SQL-backed stores beyond the ST-* cases: each takes a
//! [`Backend`] (fresh stores with options, a sweep, and a count of stored
//! vectors) and asserts what the store must do; [`differential`] replays
//! seeded random batches on a backend and on `InMemoryStore` side by side
//! and requires equal answers. `stategraph-checkpoint-sqlite` and
//! `stategraph-checkpoint-postgres` run them.

pub mod cases;
pub mod differential;

pub use super::ManualClock;

use std::future::Future;

use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_llm::HashEmbeddings;
use stategraph_store::{Clock, IndexConfig, Store, TtlConfig};

/// How a case wants its store configured.
#[derive(Clone, Default)]
pub struct Options {
    /// A semantic index, if the case wants one.
    pub index: Option<IndexConfig>,
    /// Expiry, if the case wants it.
    pub ttl: Option<TtlConfig>,
    /// A clock, if the case moves time by hand.
    pub clock: Option<Clock>,
}

impl Options {
    /// With a semantic index.
    #[must_use]
    pub fn index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// With expiry.
    #[must_use]
    pub fn ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Reading the time from `clock`.
    #[must_use]
    pub fn clock(mut self, clock: &ManualClock) -> Self {
        self.clock = Some(clock.clock());
        self
    }
}

/// A backend under test: fresh, empty stores on demand.
pub trait Backend: Sync {
    /// The store type.
    type Store: Store + Clone;

    /// A fresh, empty store.
    fn store(&self, options: Options) -> impl Future<Output = Self::Store> + Send;

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
