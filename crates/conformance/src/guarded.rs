//! A saver that keeps something alive as long as itself.

use futures::Stream;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointTuple, ListQuery, PruneStrategy, Result, SaverCapabilities, Value,
};

/// A saver together with a guard it needs (a temporary directory, a
/// database cluster) that is dropped after it, so a backend's conformance
/// factory can return a saver whose storage lives exactly as long as the
/// test without writing a forwarding wrapper of its own:
///
/// ```
/// use stategraph_checkpoint::InMemorySaver;
/// use stategraph_conformance::Guarded;
///
/// // A file-backed saver would keep its `tempfile::TempDir` here.
/// #[derive(Debug)]
/// struct Storage;
///
/// async fn factory() -> Guarded<InMemorySaver, Storage> {
///     Guarded::new(InMemorySaver::new(), Storage)
/// }
/// ```
#[derive(Debug)]
pub struct Guarded<S, G> {
    saver: S,
    _guard: G,
}

impl<S, G> Guarded<S, G> {
    /// `saver`, keeping `guard` alive until it is dropped.
    pub fn new(saver: S, guard: G) -> Self {
        Self {
            saver,
            _guard: guard,
        }
    }
}

impl<S: CheckpointSaver, G: std::fmt::Debug + Send + Sync + 'static> CheckpointSaver
    for Guarded<S, G>
{
    fn capabilities(&self) -> SaverCapabilities {
        self.saver.capabilities()
    }
    async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
        self.saver.get_tuple(config).await
    }
    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
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
