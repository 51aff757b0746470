//! The store conformance kit (`stategraph_conformance::store_conformance!`)
//! against `PostgresStore` with both capabilities, a fresh schema per
//! store, with unnamed statements (the pooler-safe default) and with named
//! prepared statements.
//!
//! The cases exist only when `STATEGRAPH_TEST_POSTGRES_URL` was set at
//! build time (see `build.rs`); `postgres_is_configured_in_ci` fails under
//! CI when it is not.

#[cfg(stategraph_postgres_tests)]
mod postgres {
    use stategraph_checkpoint_postgres::PostgresStore;
    use stategraph_conformance::store::{StoreHarness, StoreOptions};

    use crate::common;

    /// Stores on fresh schemas of the test server.
    pub(super) struct Schemas {
        pub(super) prepared: bool,
    }

    impl StoreHarness for Schemas {
        type Store = PostgresStore;

        async fn store(&self, options: StoreOptions) -> PostgresStore {
            let url = std::env::var(common::URL_VAR).unwrap();
            // The pool owns the schema, which is dropped with the last pool.
            let schema = common::Schema::create(&url).await;
            let store = PostgresStore::from_pool(schema.pool(4, None).await)
                .with_prepared_statements(self.prepared)
                .with_options(options);
            store.setup().await.unwrap();
            store
        }

        async fn sweep<'a>(&'a self, store: &'a PostgresStore) -> usize {
            store.sweep_expired().await.unwrap()
        }
    }

    mod unnamed_statements {
        stategraph_conformance::store_conformance!(
            super::Schemas { prepared: false },
            capabilities: [vector_search, ttl]
        );

        /// ST-LIM-05, once per backend: it moves a 64 MiB value.
        #[tokio::test]
        async fn value_size_limit() {
            let schemas = super::Schemas { prepared: false };
            stategraph_conformance::store::limits::value_size_limit(&schemas).await;
        }
    }

    mod prepared_statements {
        stategraph_conformance::store_conformance!(
            super::Schemas { prepared: true },
            capabilities: [vector_search, ttl]
        );
    }
}
