//! The store conformance suite (`stategraph-conformance`) run against the
//! in-memory store, with both optional capabilities.

use stategraph_conformance::store::{StoreHarness, StoreOptions};
use stategraph_store::InMemoryStore;

/// Builds in-memory stores from the kit's options.
struct InMemoryHarness;

impl StoreHarness for InMemoryHarness {
    type Store = InMemoryStore;

    async fn store(&self, options: StoreOptions) -> InMemoryStore {
        InMemoryStore::new().with_options(options)
    }

    async fn sweep<'a>(&'a self, store: &'a InMemoryStore) -> usize {
        store.sweep_expired()
    }
}

stategraph_conformance::store_conformance!(InMemoryHarness, capabilities: [vector_search, ttl]);

/// ST-LIM-05, once: it moves a 64 MiB value.
#[tokio::test]
async fn value_size_limit() {
    stategraph_conformance::store::limits::value_size_limit(&InMemoryHarness).await;
}
