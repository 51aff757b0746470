//! The store conformance suite (`stategraph-conformance`) run against the
//! in-memory store, with both optional capabilities.

use stategraph_conformance::store::{StoreHarness, StoreOptions};
use stategraph_store::InMemoryStore;

/// Builds in-memory stores from the kit's options.
struct InMemoryHarness;

impl StoreHarness for InMemoryHarness {
    type Store = InMemoryStore;

    async fn store(&self, options: StoreOptions) -> InMemoryStore {
        let mut store = InMemoryStore::new().with_clock(options.clock);
        if let Some(index) = options.index {
            store = store.with_index(index);
        }
        if let Some(ttl) = options.ttl {
            store = store.with_ttl(ttl);
        }
        store
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
