//! The checkpoint-saver conformance suite (`stategraph-conformance`) run
//! against `SqliteSaver`, once on a database file per test and once on an
//! in-memory database, claiming every extended capability.

mod file {
    use futures::Stream;
    use stategraph_checkpoint::{
        ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
        CheckpointSaver, CheckpointTuple, ListQuery, PruneStrategy, Result, SaverCapabilities,
        Value,
    };
    use stategraph_checkpoint_sqlite::SqliteSaver;

    /// A saver on a fresh database file that deletes its temporary directory
    /// when the test drops it.
    #[derive(Debug)]
    struct TempFileSaver {
        saver: SqliteSaver,
        _dir: tempfile::TempDir,
    }

    async fn factory() -> TempFileSaver {
        let dir = tempfile::Builder::new()
            .prefix("stategraph-sqlite-conformance-")
            .tempdir()
            .unwrap_or_else(|err| panic!("cannot create a temporary directory: {err}"));
        let saver = SqliteSaver::open(dir.path().join("checkpoints.db"))
            .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
        TempFileSaver { saver, _dir: dir }
    }

    impl CheckpointSaver for TempFileSaver {
        fn capabilities(&self) -> SaverCapabilities {
            self.saver.capabilities()
        }
        async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
            self.saver.get_tuple(config).await
        }
        fn list(
            &self,
            query: ListQuery,
        ) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
            self.saver.list(query)
        }
        async fn put(
            &self,
            config: &CheckpointConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
        ) -> Result<CheckpointConfig> {
            self.saver
                .put(config, checkpoint, metadata, new_versions)
                .await
        }
        async fn put_if_head(
            &self,
            config: &CheckpointConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
        ) -> Result<CheckpointConfig> {
            self.saver
                .put_if_head(config, checkpoint, metadata, new_versions)
                .await
        }
        async fn put_writes(
            &self,
            config: &CheckpointConfig,
            writes: Vec<(String, Value)>,
            task_id: &str,
            task_path: &str,
        ) -> Result<()> {
            self.saver
                .put_writes(config, writes, task_id, task_path)
                .await
        }
        async fn delete_thread(&self, thread_id: &str) -> Result<()> {
            self.saver.delete_thread(thread_id).await
        }
        async fn delete_for_runs(&self, run_ids: &[String]) -> Result<()> {
            self.saver.delete_for_runs(run_ids).await
        }
        async fn copy_thread(&self, source: &str, target: &str) -> Result<()> {
            self.saver.copy_thread(source, target).await
        }
        async fn prune(&self, thread_ids: &[String], strategy: PruneStrategy) -> Result<()> {
            self.saver.prune(thread_ids, strategy).await
        }
        fn get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion {
            self.saver.get_next_version(current)
        }
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
