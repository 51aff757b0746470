//! The server's saver: the backend's, with each checkpoint's metadata
//! naming its thread (`metadata.thread_id`), as LangGraph Server's
//! checkpointer writes it. LangGraph itself leaves `thread_id` out of
//! checkpoint metadata, so the graphs the server runs do too; the server
//! adds it where it stores them.

use futures::stream::Stream;
use stategraph::checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointTuple, ListQuery, PruneStrategy, Result, SaverCapabilities,
    SharedSaver, Value,
};

/// A saver whose puts stamp `thread_id` into the metadata.
#[derive(Debug, Clone)]
pub(crate) struct ThreadStamped(pub(crate) SharedSaver);

fn stamped(config: &CheckpointConfig, mut metadata: CheckpointMetadata) -> CheckpointMetadata {
    metadata.extra.insert(
        "thread_id".into(),
        serde_json::Value::String(config.thread_id.clone()),
    );
    metadata
}

impl CheckpointSaver for ThreadStamped {
    fn capabilities(&self) -> SaverCapabilities {
        self.0.capabilities()
    }

    fn get_tuple(
        &self,
        config: &CheckpointConfig,
    ) -> impl Future<Output = Result<Option<CheckpointTuple>>> + Send {
        self.0.get_tuple(config)
    }

    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
        self.0.list(query)
    }

    fn put(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> impl Future<Output = Result<CheckpointConfig>> + Send {
        self.0
            .put(config, checkpoint, stamped(config, metadata), new_versions)
    }

    fn put_if_head(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> impl Future<Output = Result<CheckpointConfig>> + Send {
        self.0
            .put_if_head(config, checkpoint, stamped(config, metadata), new_versions)
    }

    fn put_writes(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> impl Future<Output = Result<()>> + Send {
        self.0.put_writes(config, writes, task_id, task_path)
    }

    fn delete_thread(&self, thread_id: &str) -> impl Future<Output = Result<()>> + Send {
        self.0.delete_thread(thread_id)
    }

    fn delete_for_runs(&self, run_ids: &[String]) -> impl Future<Output = Result<()>> + Send {
        self.0.delete_for_runs(run_ids)
    }

    fn copy_thread(&self, source: &str, target: &str) -> impl Future<Output = Result<()>> + Send {
        self.0.copy_thread(source, target)
    }

    fn prune(
        &self,
        thread_ids: &[String],
        strategy: PruneStrategy,
    ) -> impl Future<Output = Result<()>> + Send {
        self.0.prune(thread_ids, strategy)
    }

    fn get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion {
        self.0.get_next_version(current)
    }
}
