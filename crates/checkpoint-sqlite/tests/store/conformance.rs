//! The store conformance kit (`stategraph_conformance::store_conformance!`)
//! against `SqliteStore` with both capabilities, once on a database file per
//! store and once on in-memory databases.

use stategraph_checkpoint_sqlite::SqliteStore;
use stategraph_conformance::store::{StoreHarness, StoreOptions};

/// Stores on database files in a temporary directory the harness owns.
struct Files(crate::Files);

impl StoreHarness for Files {
    type Store = SqliteStore;

    async fn store(&self, options: StoreOptions) -> SqliteStore {
        let path = self.0.next_path();
        SqliteStore::open(path).await.unwrap().with_options(options)
    }

    async fn sweep<'a>(&'a self, store: &'a SqliteStore) -> usize {
        store.sweep_expired().await.unwrap()
    }
}

/// Stores on private in-memory databases.
struct Memory;

impl StoreHarness for Memory {
    type Store = SqliteStore;

    async fn store(&self, options: StoreOptions) -> SqliteStore {
        SqliteStore::in_memory()
            .await
            .unwrap()
            .with_options(options)
    }

    async fn sweep<'a>(&'a self, store: &'a SqliteStore) -> usize {
        store.sweep_expired().await.unwrap()
    }
}

mod file {
    stategraph_conformance::store_conformance!(
        super::Files(crate::Files::new()),
        capabilities: [vector_search, ttl]
    );

    /// ST-LIM-05, once per backend: it moves a 64 MiB value.
    #[tokio::test]
    async fn value_size_limit() {
        let files = super::Files(crate::Files::new());
        stategraph_conformance::store::limits::value_size_limit(&files).await;
    }
}

mod in_memory {
    stategraph_conformance::store_conformance!(
        super::Memory,
        capabilities: [vector_search, ttl]
    );
}
