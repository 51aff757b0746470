//! The checkpoint-saver conformance suite (`stategraph-conformance`) run
//! against `SqliteSaver`, once on a database file per test and once on an
//! in-memory database, claiming every extended capability.

mod file {
    use stategraph_checkpoint_sqlite::SqliteSaver;
    use stategraph_conformance::Guarded;

    /// A saver on a fresh database file, whose temporary directory goes
    /// when the test drops the saver.
    async fn factory() -> Guarded<SqliteSaver, tempfile::TempDir> {
        let dir = tempfile::Builder::new()
            .prefix("stategraph-sqlite-conformance-")
            .tempdir()
            .unwrap_or_else(|err| panic!("cannot create a temporary directory: {err}"));
        let saver = SqliteSaver::open(dir.path().join("checkpoints.db"))
            .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
        Guarded::new(saver, dir)
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

mod memory {
    use stategraph_checkpoint_sqlite::SqliteSaver;

    async fn factory() -> SqliteSaver {
        SqliteSaver::in_memory()
            .unwrap_or_else(|err| panic!("cannot open an in-memory database: {err}"))
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);
}
