//! The `CheckpointSaver` trait, its object-safe twin and list queries.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, Stream, StreamExt};
use stategraph_core::{CheckpointId, JsonMap, Value};

use crate::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointTuple, Error, MetadataFilter, Result,
};

/// What a saver implements beyond the base operations (put, put_writes,
/// get_tuple, list, delete_thread, which every saver has).
///
/// The conformance suite runs the cases of a capability only for savers that
/// claim it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SaverCapabilities {
    /// `delete_for_runs` removes the checkpoints and writes of given runs.
    pub delete_for_runs: bool,
    /// `copy_thread` copies a thread's history under a new thread id.
    pub copy_thread: bool,
    /// `prune` thins threads down to their latest checkpoints.
    pub prune: bool,
    /// `put_if_head` stores a checkpoint only as the child of the current
    /// head of its thread and namespace (compare-and-set).
    pub put_if_head: bool,
}

impl SaverCapabilities {
    /// Only the base operations.
    pub const fn base() -> Self {
        Self {
            delete_for_runs: false,
            copy_thread: false,
            prune: false,
            put_if_head: false,
        }
    }

    /// Every operation the trait defines.
    pub const fn all() -> Self {
        Self {
            delete_for_runs: true,
            copy_thread: true,
            prune: true,
            put_if_head: true,
        }
    }

    /// Claims `delete_for_runs`.
    #[must_use]
    pub const fn with_delete_for_runs(mut self) -> Self {
        self.delete_for_runs = true;
        self
    }

    /// Claims `copy_thread`.
    #[must_use]
    pub const fn with_copy_thread(mut self) -> Self {
        self.copy_thread = true;
        self
    }

    /// Claims `put_if_head`.
    #[must_use]
    pub const fn with_put_if_head(mut self) -> Self {
        self.put_if_head = true;
        self
    }

    /// Claims `prune`.
    #[must_use]
    pub const fn with_prune(mut self) -> Self {
        self.prune = true;
        self
    }
}

/// How `prune` thins a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PruneStrategy {
    /// Keep the latest checkpoint of every namespace (and its writes).
    KeepLatest,
    /// Delete everything.
    Delete,
}

/// Which checkpoints `list` returns.
///
/// ```
/// use serde_json::json;
/// use stategraph_checkpoint::ListQuery;
///
/// let query = ListQuery::thread("t-1")
///     .ns("")
///     .filter(json!({"source": "loop"}))
///     .limit(10);
/// assert_eq!(query.limit, Some(10));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ListQuery {
    /// Only this thread (`None` = every thread).
    pub thread_id: Option<String>,
    /// Only this namespace (`None` = every namespace).
    pub checkpoint_ns: Option<String>,
    /// Only this checkpoint.
    pub checkpoint_id: Option<CheckpointId>,
    /// Metadata filter; every entry must match (see [`MetadataFilter`]).
    pub filter: JsonMap,
    /// Only checkpoints with an id strictly less than this one.
    pub before: Option<CheckpointId>,
    /// At most this many results (`Some(0)` returns nothing).
    pub limit: Option<usize>,
    /// What [`ListQuery::filter`] was given instead of a JSON object (`"an
    /// array"`, ...), reported by [`ListQuery::metadata_filter`].
    rejected_filter: Option<&'static str>,
}

impl ListQuery {
    /// Every checkpoint of every thread.
    pub fn all() -> Self {
        Self::default()
    }

    /// Every checkpoint of one thread, in every namespace.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: Some(thread_id.into()),
            ..Self::default()
        }
    }

    /// The checkpoints a config addresses: its thread, its namespace, and its
    /// checkpoint id when set.
    pub fn config(config: &CheckpointConfig) -> Self {
        Self {
            thread_id: Some(config.thread_id.clone()),
            checkpoint_ns: Some(config.checkpoint_ns.clone()),
            checkpoint_id: config.checkpoint_id.clone(),
            ..Self::default()
        }
    }

    /// Restricts to one namespace.
    #[must_use]
    pub fn ns(mut self, ns: impl Into<String>) -> Self {
        self.checkpoint_ns = Some(ns.into());
        self
    }

    /// Sets the metadata filter from a JSON object.
    ///
    /// Anything else (`null`, an array, a string, ...) is not a filter: the
    /// query keeps no filter and `list` fails with [`Error::InvalidInput`]
    /// (see [`ListQuery::metadata_filter`]), rather than listing everything.
    #[must_use]
    pub fn filter(mut self, filter: serde_json::Value) -> Self {
        match filter {
            serde_json::Value::Object(map) => {
                self.filter = map;
                self.rejected_filter = None;
            }
            other => {
                self.filter = JsonMap::new();
                self.rejected_filter = Some(json_type(&other));
            }
        }
        self
    }

    /// Only checkpoints older than `id`.
    #[must_use]
    pub fn before(mut self, id: impl Into<CheckpointId>) -> Self {
        self.before = Some(id.into());
        self
    }

    /// At most `limit` results.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Validates the metadata filter. Every saver calls it before listing.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when [`ListQuery::filter`] was given something
    /// other than a JSON object; [`Error::InvalidFilterKey`] for a bad key.
    pub fn metadata_filter(&self) -> Result<MetadataFilter> {
        if let Some(found) = self.rejected_filter {
            return Err(Error::InvalidInput {
                operation: "list",
                message: format!("the metadata filter must be a JSON object, not {found}"),
            });
        }
        MetadataFilter::new(self.filter.clone())
    }
}

/// How a JSON value that is not an object is named in an error.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Stores checkpoints and pending writes for threads.
///
/// Implement this for a backend; hold savers as `S: CheckpointSaver` in
/// generic code or as [`SharedSaver`] (`Arc<dyn DynCheckpointSaver>`), which
/// implements this trait too. Every method takes `&self`: backends keep their
/// pool or maps behind interior mutability.
///
/// # Behavior
/// - `put` stores the checkpoint under `config.thread_id` and
///   `config.checkpoint_ns`, records `config.checkpoint_id` as its parent, and
///   returns the stored checkpoint's address. Stored history is immutable: later
///   puts never change what an earlier checkpoint reads back. Only the channels
///   in `new_versions` need new value storage; the others are found under their
///   (unchanged) version. A re-put of the same id replaces it; a re-put with a
///   different parent is a [`Error::Conflict`].
/// - `put_writes` attaches writes to the checkpoint `config.checkpoint_id`
///   (which may not be stored yet). Write `i` of a task is stored at
///   [`write_index`](crate::write_index)`(channel, i)`: ordinary writes are
///   first-writer-wins per `(task_id, index)`, special writes last-writer-wins.
/// - `get_tuple` with no checkpoint id returns the latest checkpoint of the
///   thread and namespace, its config carrying the resolved id; a missing
///   thread or id is `Ok(None)`.
/// - A checkpoint that lists a channel version whose value is not stored is
///   an [`Error::Integrity`] from `get_tuple` and `list`, never read as an
///   empty channel. A version stored without a value (a cleared channel)
///   reads as an absent channel.
/// - `list` yields newest first (descending id), applies `filter`, `before`,
///   and `limit`, and includes pending writes. A checkpoint that cannot be
///   read (missing value, corrupt row) is one `Err` item in its place, and
///   the listing goes on with the next checkpoints; `limit` counts such items.
///   A query that cannot run at all (a filter that is not a JSON object or has
///   a bad key, a lost database) yields one `Err` and ends.
/// - `delete_thread` removes every namespace, checkpoint, write and value of a
///   thread; deleting a missing thread is not an error.
pub trait CheckpointSaver: Send + Sync + fmt::Debug + 'static {
    /// The optional operations this saver implements.
    fn capabilities(&self) -> SaverCapabilities;

    /// Fetches one checkpoint (the latest when `config.checkpoint_id` is `None`).
    fn get_tuple(
        &self,
        config: &CheckpointConfig,
    ) -> impl Future<Output = Result<Option<CheckpointTuple>>> + Send;

    /// Lists checkpoints newest first.
    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_;

    /// Stores a checkpoint as a child of `config.checkpoint_id` (none for
    /// a thread's first).
    ///
    /// # Errors
    /// [`Error::IdBeforeParent`] when the checkpoint's id does not sort
    /// above its parent's (see [`Error::check_child_order`]); a re-put of
    /// a stored id with another parent is a [`Error::Conflict`].
    fn put(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> impl Future<Output = Result<CheckpointConfig>> + Send;

    /// Stores writes of one task against `config.checkpoint_id`.
    fn put_writes(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes everything stored for a thread.
    fn delete_thread(&self, thread_id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Stores a checkpoint only if `config.checkpoint_id` (its parent) is the
    /// current head (latest checkpoint) of the thread and namespace, or the
    /// namespace is empty and there is no parent: a compare-and-set that lets
    /// exactly one of several concurrent writers extend a thread. Plain `put`
    /// still accepts any parent (forks, time travel).
    ///
    /// # Errors
    /// [`Error::Conflict`] when the parent is not the head; the others as `put`.
    fn put_if_head(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> impl Future<Output = Result<CheckpointConfig>> + Send {
        let _ = (config, checkpoint, metadata, new_versions);
        std::future::ready(Err(Error::unsupported::<Self>("put_if_head")))
    }

    /// Deletes the checkpoints (and their writes) whose metadata `run_id` is listed.
    fn delete_for_runs(&self, run_ids: &[String]) -> impl Future<Output = Result<()>> + Send {
        let _ = run_ids;
        std::future::ready(Err(Error::unsupported::<Self>("delete_for_runs")))
    }

    /// Copies every checkpoint, write and value of `source` to `target`, keeping ids.
    fn copy_thread(&self, source: &str, target: &str) -> impl Future<Output = Result<()>> + Send {
        let _ = (source, target);
        std::future::ready(Err(Error::unsupported::<Self>("copy_thread")))
    }

    /// Thins the given threads.
    fn prune(
        &self,
        thread_ids: &[String],
        strategy: PruneStrategy,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (thread_ids, strategy);
        std::future::ready(Err(Error::unsupported::<Self>("prune")))
    }

    /// The version a channel gets when it changes after `current`.
    fn get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion {
        ChannelVersion::next(current)
    }
}

/// The object-safe twin of [`CheckpointSaver`], implemented for every saver.
///
/// Use it through [`SharedSaver`]; call methods through [`CheckpointSaver`].
pub trait DynCheckpointSaver: Send + Sync + fmt::Debug + 'static {
    /// See [`CheckpointSaver::capabilities`].
    fn dyn_capabilities(&self) -> SaverCapabilities;
    /// See [`CheckpointSaver::get_tuple`].
    fn dyn_get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>>>;
    /// See [`CheckpointSaver::list`].
    fn dyn_list(&self, query: ListQuery) -> BoxStream<'_, Result<CheckpointTuple>>;
    /// See [`CheckpointSaver::put`].
    fn dyn_put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig>>;
    /// See [`CheckpointSaver::put_if_head`].
    fn dyn_put_if_head<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig>>;
    /// See [`CheckpointSaver::put_writes`].
    fn dyn_put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &'a str,
        task_path: &'a str,
    ) -> BoxFuture<'a, Result<()>>;
    /// See [`CheckpointSaver::delete_thread`].
    fn dyn_delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<()>>;
    /// See [`CheckpointSaver::delete_for_runs`].
    fn dyn_delete_for_runs<'a>(&'a self, run_ids: &'a [String]) -> BoxFuture<'a, Result<()>>;
    /// See [`CheckpointSaver::copy_thread`].
    fn dyn_copy_thread<'a>(&'a self, source: &'a str, target: &'a str)
    -> BoxFuture<'a, Result<()>>;
    /// See [`CheckpointSaver::prune`].
    fn dyn_prune<'a>(
        &'a self,
        thread_ids: &'a [String],
        strategy: PruneStrategy,
    ) -> BoxFuture<'a, Result<()>>;
    /// See [`CheckpointSaver::get_next_version`].
    fn dyn_get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion;
}

/// A saver shared behind a pointer; what graphs hold.
pub type SharedSaver = Arc<dyn DynCheckpointSaver>;

impl<S: CheckpointSaver> DynCheckpointSaver for S {
    fn dyn_capabilities(&self) -> SaverCapabilities {
        self.capabilities()
    }
    fn dyn_get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>>> {
        Box::pin(self.get_tuple(config))
    }
    fn dyn_list(&self, query: ListQuery) -> BoxStream<'_, Result<CheckpointTuple>> {
        self.list(query).boxed()
    }
    fn dyn_put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig>> {
        Box::pin(self.put(config, checkpoint, metadata, new_versions))
    }
    fn dyn_put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &'a str,
        task_path: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put_writes(config, writes, task_id, task_path))
    }
    fn dyn_put_if_head<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig>> {
        Box::pin(self.put_if_head(config, checkpoint, metadata, new_versions))
    }
    fn dyn_delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.delete_thread(thread_id))
    }
    fn dyn_delete_for_runs<'a>(&'a self, run_ids: &'a [String]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.delete_for_runs(run_ids))
    }
    fn dyn_copy_thread<'a>(
        &'a self,
        source: &'a str,
        target: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.copy_thread(source, target))
    }
    fn dyn_prune<'a>(
        &'a self,
        thread_ids: &'a [String],
        strategy: PruneStrategy,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.prune(thread_ids, strategy))
    }
    fn dyn_get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion {
        self.get_next_version(current)
    }
}

impl CheckpointSaver for SharedSaver {
    fn capabilities(&self) -> SaverCapabilities {
        (**self).dyn_capabilities()
    }
    async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
        (**self).dyn_get_tuple(config).await
    }
    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
        (**self).dyn_list(query)
    }
    async fn put(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        (**self)
            .dyn_put(config, checkpoint, metadata, new_versions)
            .await
    }
    async fn put_writes(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> Result<()> {
        (**self)
            .dyn_put_writes(config, writes, task_id, task_path)
            .await
    }
    async fn put_if_head(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        (**self)
            .dyn_put_if_head(config, checkpoint, metadata, new_versions)
            .await
    }
    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        (**self).dyn_delete_thread(thread_id).await
    }
    async fn delete_for_runs(&self, run_ids: &[String]) -> Result<()> {
        (**self).dyn_delete_for_runs(run_ids).await
    }
    async fn copy_thread(&self, source: &str, target: &str) -> Result<()> {
        (**self).dyn_copy_thread(source, target).await
    }
    async fn prune(&self, thread_ids: &[String], strategy: PruneStrategy) -> Result<()> {
        (**self).dyn_prune(thread_ids, strategy).await
    }
    fn get_next_version(&self, current: Option<&ChannelVersion>) -> ChannelVersion {
        (**self).dyn_get_next_version(current)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stategraph_core::ErrorKind;

    use super::*;

    #[test]
    fn a_non_object_filter_is_rejected_until_an_object_replaces_it() {
        for (filter, named) in [
            (json!(null), "not null"),
            (json!(false), "not a boolean"),
            (json!(2), "not a number"),
            (json!("source"), "not a string"),
            (json!([{"step": 1}]), "not an array"),
        ] {
            let query = ListQuery::thread("t").filter(filter);
            assert!(query.filter.is_empty());
            let err = query.metadata_filter().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            assert_eq!(
                err.to_string(),
                format!("list failed: the metadata filter must be a JSON object, {named}")
            );
        }
        let query = ListQuery::all()
            .filter(json!([1]))
            .filter(json!({"step": 1}));
        let filter = query.metadata_filter().unwrap();
        assert_eq!(filter.entries().get("step"), Some(&json!(1)));
    }
}
