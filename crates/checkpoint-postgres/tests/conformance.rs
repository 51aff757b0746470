//! The checkpoint-saver conformance suite (`stategraph-conformance`) run
//! against `PostgresSaver`, every extended capability included. Each test
//! gets a fresh schema, dropped with the saver.
//!
//! The cases exist only when `STATEGRAPH_TEST_POSTGRES_URL` was set at build
//! time (see `build.rs`): `cargo xtask with-postgres -- cargo test -p
//! stategraph-checkpoint-postgres` starts a server and sets it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

/// Fails under CI when no PostgreSQL server is configured, so the
/// conformance run cannot be skipped there without anyone noticing.
#[test]
fn postgres_is_configured_in_ci() {
    let url = std::env::var(common::URL_VAR).unwrap_or_default();
    let ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false");
    assert!(
        !ci || !url.is_empty(),
        "CI is set but {} is not: the PostgreSQL tests would be skipped",
        common::URL_VAR
    );
    if url.is_empty() {
        common::url("conformance");
    }
}

/// The default configuration: unnamed statements (pooler-safe), 64-row
/// list pages.
#[cfg(stategraph_postgres_tests)]
mod postgres {
    use stategraph_checkpoint_postgres::PostgresSaver;

    use crate::common;

    async fn factory() -> PostgresSaver {
        let url = std::env::var(common::URL_VAR).unwrap();
        common::Schema::saver(&url).await
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);

    /// CP-LIM-06, once per backend: it moves 64 MiB of metadata.
    #[tokio::test]
    async fn metadata_size_limit() {
        stategraph_conformance::limits::metadata_size_limit(&factory().await).await;
    }

    /// CP-LIM-07, once per backend: it moves 64 MiB values.
    #[tokio::test]
    async fn serialized_value_size_limit() {
        stategraph_conformance::limits::serialized_value_size_limit(&factory().await).await;
    }
}

/// Named, cached prepared statements (direct connections).
#[cfg(stategraph_postgres_tests)]
mod prepared_statements {
    use stategraph_checkpoint_postgres::PostgresSaver;

    use crate::common;

    async fn factory() -> PostgresSaver {
        let url = std::env::var(common::URL_VAR).unwrap();
        common::Schema::saver(&url)
            .await
            .with_prepared_statements(true)
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);
}

/// One checkpoint per `list` query: every listing case crosses pages, so
/// the keyset cursor is exercised with every filter, namespace and limit.
#[cfg(stategraph_postgres_tests)]
mod one_row_pages {
    use stategraph_checkpoint_postgres::PostgresSaver;

    use crate::common;

    async fn factory() -> PostgresSaver {
        let url = std::env::var(common::URL_VAR).unwrap();
        common::Schema::saver(&url).await.with_list_page_size(1)
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);
}
