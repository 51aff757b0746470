//! The in-memory saver.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use dashmap::DashMap;
use futures::stream::{self, Stream};
use stategraph_core::{CheckpointId, Value};

use crate::limits;
use crate::serde::{Encoded, Serializer};
use crate::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointTuple, Error, ListQuery, PendingWrite, PruneStrategy, Result,
    SaverCapabilities, write_index,
};

/// A checkpoint saver that keeps everything in process memory.
///
/// By default values are stored as the live, immutable [`Value`]s the runtime
/// hands over: a checkpoint costs reference-count increments, not
/// serialization. [`InMemorySaver::with_serializer`] stores encoded bytes
/// instead, which checks that state survives a real backend's round trip.
/// Clones share the same storage. Threads are sharded (one lock per thread
/// shard), so concurrent threads do not contend.
#[derive(Clone, Default)]
pub struct InMemorySaver {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    threads: DashMap<String, ThreadData>,
    serializer: Option<Arc<dyn Serializer>>,
}

#[derive(Clone, Default)]
struct ThreadData {
    /// Namespace → checkpoint id → checkpoint (channel values stored as blobs).
    checkpoints: HashMap<String, BTreeMap<CheckpointId, StoredCheckpoint>>,
    /// Namespace → checkpoint id → (task id, index) → write.
    writes: HashMap<String, HashMap<CheckpointId, TaskWrites>>,
    /// Namespace → channel → version → value. Values are stored once per version.
    blobs: HashMap<String, HashMap<String, HashMap<ChannelVersion, Blob>>>,
}

/// (task id, write index) → write.
type TaskWrites = BTreeMap<(String, i64), StoredWrite>;

#[derive(Clone)]
struct StoredCheckpoint {
    // Invariant: `channel_values` is empty; values live in `ThreadData::blobs`.
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent: Option<CheckpointId>,
}

#[derive(Clone)]
struct StoredWrite {
    channel: String,
    value: Blob,
}

#[derive(Clone)]
enum Blob {
    /// The channel had a version but no value (it was cleared).
    Empty,
    Live(Value),
    Encoded(Encoded),
}

impl fmt::Debug for InMemorySaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemorySaver")
            .field("threads", &self.inner.threads.len())
            .field("serializer", &self.inner.serializer)
            .finish()
    }
}

impl InMemorySaver {
    /// An empty saver that shares live values.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty saver that stores every value encoded by `serializer`.
    pub fn with_serializer(serializer: impl Serializer) -> Self {
        Self {
            inner: Arc::new(Inner {
                threads: DashMap::new(),
                serializer: Some(Arc::new(serializer)),
            }),
        }
    }

    /// The number of threads stored.
    pub fn thread_count(&self) -> usize {
        self.inner.threads.len()
    }

    fn store(&self, channel: &str, value: &Value) -> Result<Blob> {
        match &self.inner.serializer {
            None => Ok(Blob::Live(value.clone())),
            Some(serializer) => serializer.dumps(channel, value).map(Blob::Encoded),
        }
    }

    fn load(&self, channel: &str, blob: &Blob) -> Result<Option<Value>> {
        match (blob, &self.inner.serializer) {
            (Blob::Empty, _) => Ok(None),
            (Blob::Live(value), _) => Ok(Some(value.clone())),
            (Blob::Encoded(encoded), Some(serializer)) => serializer
                .loads(channel, &encoded.tag, &encoded.bytes)
                .map(Some),
            (Blob::Encoded(encoded), None) => Err(Error::UnknownTag {
                tag: encoded.tag.clone(),
            }),
        }
    }

    fn tuple(
        &self,
        operation: &'static str,
        thread_id: &str,
        data: &ThreadData,
        ns: &str,
        id: &CheckpointId,
    ) -> Result<Option<CheckpointTuple>> {
        let Some(stored) = data.checkpoints.get(ns).and_then(|by_id| by_id.get(id)) else {
            return Ok(None);
        };
        let mut checkpoint = stored.checkpoint.clone();
        let blobs = data.blobs.get(ns);
        for (channel, version) in &checkpoint.channel_versions {
            let blob = blobs
                .and_then(|b| b.get(channel))
                .and_then(|v| v.get(version))
                .ok_or_else(|| Error::Integrity {
                    operation,
                    thread_id: thread_id.to_owned(),
                    checkpoint_ns: ns.to_owned(),
                    checkpoint_id: id.clone(),
                    channel: channel.clone(),
                    version: *version,
                })?;
            if let Some(value) = self.load(channel, blob)? {
                checkpoint.channel_values.insert(channel.clone(), value);
            }
        }
        let pending_writes = data
            .writes
            .get(ns)
            .and_then(|by_id| by_id.get(id))
            .into_iter()
            .flatten()
            .map(|((task_id, _), write)| {
                let value = self
                    .load(&write.channel, &write.value)?
                    .unwrap_or_else(Value::null);
                Ok(PendingWrite {
                    task_id: task_id.clone(),
                    channel: write.channel.clone(),
                    value,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let address = |checkpoint_id: CheckpointId| CheckpointConfig {
            thread_id: thread_id.to_owned(),
            checkpoint_ns: ns.to_owned(),
            checkpoint_id: Some(checkpoint_id),
        };
        Ok(Some(CheckpointTuple::new(
            address(id.clone()),
            checkpoint,
            stored.metadata.clone(),
            stored.parent.clone().map(address),
            pending_writes,
        )))
    }

    /// The items of a listing: one per matching checkpoint, an `Err` for
    /// one that cannot be read; a single `Err` when the query is invalid.
    fn list_now(&self, query: &ListQuery) -> Vec<Result<CheckpointTuple>> {
        let filter = match limits::check_query(query).and_then(|()| query.metadata_filter()) {
            Ok(filter) => filter,
            Err(err) => return vec![Err(err)],
        };
        let limit = query.limit.unwrap_or(usize::MAX);
        // Candidates sorted newest first: id descending, then thread and namespace.
        let mut candidates: Vec<(CheckpointId, String, String)> = Vec::new();
        let mut collect = |thread_id: &str, data: &ThreadData| {
            for (ns, by_id) in &data.checkpoints {
                if query
                    .checkpoint_ns
                    .as_ref()
                    .is_some_and(|wanted| wanted != ns)
                {
                    continue;
                }
                for (id, stored) in by_id {
                    let wanted_id = query
                        .checkpoint_id
                        .as_ref()
                        .is_none_or(|wanted| wanted == id);
                    let older = query.before.as_ref().is_none_or(|before| id < before);
                    if wanted_id && older && filter.matches(&stored.metadata) {
                        candidates.push((id.clone(), thread_id.to_owned(), ns.clone()));
                    }
                }
            }
        };
        match &query.thread_id {
            Some(thread_id) => {
                if let Some(data) = self.inner.threads.get(thread_id) {
                    collect(thread_id, &data);
                }
            }
            None => {
                for entry in &self.inner.threads {
                    collect(entry.key(), entry.value());
                }
            }
        }
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates.truncate(limit);
        candidates
            .into_iter()
            .filter_map(|(id, thread_id, ns)| {
                // A thread deleted since the scan simply drops out of the result.
                let data = self.inner.threads.get(&thread_id)?;
                self.tuple("list", &thread_id, &data, &ns, &id).transpose()
            })
            .collect()
    }
}

impl InMemorySaver {
    /// `put`, optionally only as the child of the namespace head (the check
    /// and the insert happen under the thread's lock).
    fn put_checked(
        &self,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        require_head: bool,
    ) -> Result<CheckpointConfig> {
        let operation = if require_head { "put_if_head" } else { "put" };
        limits::check_put(operation, config, &checkpoint, &metadata, &new_versions)?;
        Error::check_child_order(operation, config, &checkpoint.id)?;
        let mut new_blobs = Vec::with_capacity(new_versions.len());
        for (channel, version) in &new_versions {
            let blob = match checkpoint.channel_values.get(channel) {
                Some(value) => self.store(channel, value)?,
                None => Blob::Empty,
            };
            new_blobs.push((channel.clone(), *version, blob));
        }
        checkpoint.channel_values.clear();
        let id = checkpoint.id.clone();
        let ns = config.checkpoint_ns.clone();
        let mut data = self
            .inner
            .threads
            .entry(config.thread_id.clone())
            .or_default();
        let by_id = data.checkpoints.entry(ns.clone()).or_default();
        if require_head {
            let head = by_id.keys().next_back();
            if head != config.checkpoint_id.as_ref() {
                return Err(Error::Conflict {
                    operation: "put_if_head",
                    thread_id: config.thread_id.clone(),
                    message: format!(
                        "the parent {:?} is not the head {:?} of namespace {:?}",
                        config.checkpoint_id.as_ref().map(CheckpointId::as_str),
                        head.map(CheckpointId::as_str),
                        ns
                    ),
                });
            }
        }
        if let Some(existing) = by_id.get(&id)
            && existing.parent != config.checkpoint_id
        {
            return Err(Error::Conflict {
                operation: "put",
                thread_id: config.thread_id.clone(),
                message: format!(
                    "checkpoint {id} is already stored with parent {:?}, not {:?}",
                    existing.parent.as_ref().map(CheckpointId::as_str),
                    config.checkpoint_id.as_ref().map(CheckpointId::as_str),
                ),
            });
        }
        by_id.insert(
            id.clone(),
            StoredCheckpoint {
                checkpoint,
                metadata: metadata.sanitized(),
                parent: config.checkpoint_id.clone(),
            },
        );
        let blobs = data.blobs.entry(ns.clone()).or_default();
        for (channel, version, blob) in new_blobs {
            blobs.entry(channel).or_default().insert(version, blob);
        }
        Ok(CheckpointConfig {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: ns,
            checkpoint_id: Some(id),
        })
    }
}

impl ThreadData {
    /// Drops blobs no remaining checkpoint refers to.
    fn collect_garbage(&mut self) {
        let mut live: HashSet<(&str, &str, ChannelVersion)> = HashSet::new();
        for (ns, by_id) in &self.checkpoints {
            for stored in by_id.values() {
                for (channel, version) in &stored.checkpoint.channel_versions {
                    live.insert((ns, channel, *version));
                }
            }
        }
        let live: HashSet<(String, String, ChannelVersion)> = live
            .into_iter()
            .map(|(ns, channel, version)| (ns.to_owned(), channel.to_owned(), version))
            .collect();
        for (ns, channels) in &mut self.blobs {
            for (channel, versions) in channels.iter_mut() {
                versions
                    .retain(|version, _| live.contains(&(ns.clone(), channel.clone(), *version)));
            }
            channels.retain(|_, versions| !versions.is_empty());
        }
        self.blobs.retain(|_, channels| !channels.is_empty());
    }

    fn remove_checkpoints(
        &mut self,
        mut doomed: impl FnMut(&str, &CheckpointId, &StoredCheckpoint) -> bool,
    ) {
        for (ns, by_id) in &mut self.checkpoints {
            let removed: Vec<CheckpointId> = by_id
                .iter()
                .filter(|(id, stored)| doomed(ns, id, stored))
                .map(|(id, _)| id.clone())
                .collect();
            let writes = self.writes.get_mut(ns);
            for id in &removed {
                by_id.remove(id);
            }
            if let Some(writes) = writes {
                for id in &removed {
                    writes.remove(id);
                }
            }
        }
        self.checkpoints.retain(|_, by_id| !by_id.is_empty());
        self.writes.retain(|_, by_id| !by_id.is_empty());
        self.collect_garbage();
    }

    fn is_empty(&self) -> bool {
        self.checkpoints.is_empty() && self.writes.is_empty()
    }
}

impl CheckpointSaver for InMemorySaver {
    fn capabilities(&self) -> SaverCapabilities {
        SaverCapabilities::all()
    }

    async fn get_tuple(&self, config: &CheckpointConfig) -> Result<Option<CheckpointTuple>> {
        limits::check_config("get_tuple", config)?;
        let Some(data) = self.inner.threads.get(&config.thread_id) else {
            return Ok(None);
        };
        let ns = config.checkpoint_ns.as_str();
        let id = match &config.checkpoint_id {
            Some(id) => id.clone(),
            None => match data
                .checkpoints
                .get(ns)
                .and_then(|by_id| by_id.keys().next_back())
            {
                Some(latest) => latest.clone(),
                None => return Ok(None),
            },
        };
        self.tuple("get_tuple", &config.thread_id, &data, ns, &id)
    }

    fn list(&self, query: ListQuery) -> impl Stream<Item = Result<CheckpointTuple>> + Send + '_ {
        stream::iter(self.list_now(&query))
    }

    async fn put(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        self.put_checked(config, checkpoint, metadata, new_versions, false)
    }

    async fn put_if_head(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Result<CheckpointConfig> {
        self.put_checked(config, checkpoint, metadata, new_versions, true)
    }

    async fn put_writes(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Value)>,
        task_id: &str,
        task_path: &str,
    ) -> Result<()> {
        limits::check_writes(config, &writes, task_id, task_path)?;
        let Some(checkpoint_id) = config.checkpoint_id.clone() else {
            return Err(Error::InvalidInput {
                operation: "put_writes",
                message: format!(
                    "config for thread {:?} names no checkpoint_id",
                    config.thread_id
                ),
            });
        };
        let mut stored = Vec::with_capacity(writes.len());
        for (position, (channel, value)) in writes.into_iter().enumerate() {
            let blob = self.store(&channel, &value)?;
            stored.push((
                write_index(&channel, position),
                StoredWrite {
                    channel,
                    value: blob,
                },
            ));
        }
        let mut data = self
            .inner
            .threads
            .entry(config.thread_id.clone())
            .or_default();
        let by_key = data
            .writes
            .entry(config.checkpoint_ns.clone())
            .or_default()
            .entry(checkpoint_id)
            .or_default();
        for (idx, write) in stored {
            let key = (task_id.to_owned(), idx);
            if idx >= 0 && by_key.contains_key(&key) {
                continue;
            }
            by_key.insert(key, write);
        }
        Ok(())
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        limits::check_thread_ids("delete_thread", [thread_id])?;
        self.inner.threads.remove(thread_id);
        Ok(())
    }

    async fn delete_for_runs(&self, run_ids: &[String]) -> Result<()> {
        if run_ids.is_empty() {
            return Ok(());
        }
        let run_ids = limits::stored_run_ids(run_ids);
        for mut entry in self.inner.threads.iter_mut() {
            entry.remove_checkpoints(|_, _, stored| {
                stored
                    .metadata
                    .run_id
                    .as_ref()
                    .is_some_and(|run| run_ids.contains(run))
            });
        }
        self.inner.threads.retain(|_, data| !data.is_empty());
        Ok(())
    }

    async fn copy_thread(&self, source: &str, target: &str) -> Result<()> {
        limits::check_thread_ids("copy_thread", [source, target])?;
        let Some(copy) = self.inner.threads.get(source).map(|data| data.clone()) else {
            return Ok(());
        };
        let mut data = self.inner.threads.entry(target.to_owned()).or_default();
        for (ns, by_id) in copy.checkpoints {
            data.checkpoints.entry(ns).or_default().extend(by_id);
        }
        for (ns, by_id) in copy.writes {
            data.writes.entry(ns).or_default().extend(by_id);
        }
        for (ns, channels) in copy.blobs {
            let target_channels = data.blobs.entry(ns).or_default();
            for (channel, versions) in channels {
                target_channels.entry(channel).or_default().extend(versions);
            }
        }
        Ok(())
    }

    async fn prune(&self, thread_ids: &[String], strategy: PruneStrategy) -> Result<()> {
        limits::check_thread_ids("prune", thread_ids.iter().map(String::as_str))?;
        for thread_id in thread_ids {
            match strategy {
                PruneStrategy::Delete => {
                    self.inner.threads.remove(thread_id);
                }
                PruneStrategy::KeepLatest => {
                    if let Some(mut data) = self.inner.threads.get_mut(thread_id) {
                        let latest: HashMap<String, CheckpointId> = data
                            .checkpoints
                            .iter()
                            .filter_map(|(ns, by_id)| {
                                Some((ns.clone(), by_id.keys().next_back()?.clone()))
                            })
                            .collect();
                        data.remove_checkpoints(|ns, id, _| latest.get(ns) != Some(id));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use serde_json::json;
    use stategraph_core::ErrorKind;

    use super::*;
    use crate::serde::JsonSerializer;

    /// Stores JSON, but reads the stored text `"poison"` as bytes that no
    /// longer decode, as if storage had corrupted them.
    #[derive(Debug)]
    struct PoisonSerializer;

    impl Serializer for PoisonSerializer {
        fn dumps(&self, channel: &str, value: &Value) -> Result<Encoded> {
            JsonSerializer.dumps(channel, value)
        }

        fn loads(&self, channel: &str, tag: &str, bytes: &[u8]) -> Result<Value> {
            let bytes = if bytes == br#""poison""# {
                &b"{\"poi"[..]
            } else {
                bytes
            };
            JsonSerializer.loads(channel, tag, bytes)
        }
    }

    fn checkpoint_with(values: &[(&str, Value)]) -> (Checkpoint, ChannelVersions) {
        let mut checkpoint = Checkpoint::empty();
        let mut versions = ChannelVersions::new();
        for (channel, value) in values {
            let version = ChannelVersion::next(None);
            checkpoint = checkpoint.with_channel(*channel, value.clone(), version);
            versions.insert((*channel).to_owned(), version);
        }
        (checkpoint, versions)
    }

    #[tokio::test]
    async fn shared_mode_stores_the_same_allocation() {
        let saver = InMemorySaver::new();
        let value = Value::new(vec!["big".to_owned(); 1000]);
        let (checkpoint, versions) = checkpoint_with(&[("docs", value.clone())]);
        let config = saver
            .put(
                &CheckpointConfig::thread("t"),
                checkpoint,
                CheckpointMetadata::default(),
                versions,
            )
            .await
            .unwrap();
        let tuple = saver.get_tuple(&config).await.unwrap().unwrap();
        assert!(tuple.checkpoint.channel_values["docs"].ptr_eq(&value));
    }

    #[tokio::test]
    async fn serializing_mode_round_trips_through_bytes() {
        let saver = InMemorySaver::with_serializer(JsonSerializer);
        let value = Value::new(json!({"k": [1, 2, 3]}));
        let (checkpoint, versions) = checkpoint_with(&[("docs", value.clone())]);
        let config = saver
            .put(
                &CheckpointConfig::thread("t"),
                checkpoint,
                CheckpointMetadata::default(),
                versions,
            )
            .await
            .unwrap();
        let tuple = saver.get_tuple(&config).await.unwrap().unwrap();
        let read = &tuple.checkpoint.channel_values["docs"];
        assert!(!read.ptr_eq(&value));
        assert!(read.as_json().is_some());
        assert_eq!(*read, value);
    }

    #[tokio::test]
    async fn cp_ext_23_delete_thread_frees_everything() {
        let saver = InMemorySaver::new();
        let value = Value::new(vec![0_u8; 1024]);
        for i in 0..100 {
            let thread = format!("t{i}");
            let (checkpoint, versions) = checkpoint_with(&[("x", value.clone())]);
            let config = saver
                .put(
                    &CheckpointConfig::thread(&thread),
                    checkpoint,
                    CheckpointMetadata::default(),
                    versions,
                )
                .await
                .unwrap();
            saver
                .put_writes(&config, vec![("x".into(), value.clone())], "task", "")
                .await
                .unwrap();
            saver.delete_thread(&thread).await.unwrap();
        }
        assert_eq!(saver.thread_count(), 0);
        // Every stored handle was dropped with its thread: only ours remains.
        let arc = value.downcast_arc::<Vec<u8>>().unwrap();
        assert_eq!(Arc::strong_count(&arc), 1);
    }

    #[tokio::test]
    async fn put_writes_without_checkpoint_id_is_rejected() {
        let saver = InMemorySaver::new();
        let err = saver
            .put_writes(&CheckpointConfig::thread("t"), vec![], "task", "")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }

    #[tokio::test]
    async fn list_reports_an_undecodable_checkpoint_and_goes_on() {
        let saver = InMemorySaver::with_serializer(PoisonSerializer);
        let mut stored = Vec::new();
        for (thread, value) in [("a", "fine"), ("b", "poison"), ("c", "fine")] {
            let (checkpoint, versions) = checkpoint_with(&[("x", Value::new(value.to_owned()))]);
            let config = saver
                .put(
                    &CheckpointConfig::thread(thread),
                    checkpoint,
                    CheckpointMetadata::default(),
                    versions,
                )
                .await
                .unwrap();
            stored.push(config);
        }
        let err = saver.get_tuple(&stored[1]).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Serialization, "{err}");

        let items: Vec<Result<CheckpointTuple>> = saver.list(ListQuery::all()).collect().await;
        assert_eq!(items.len(), 3, "one item per checkpoint");
        assert_eq!(items[0].as_ref().unwrap().config, stored[2]);
        let err = items[1].as_ref().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Serialization, "{err}");
        assert!(
            err.to_string().contains("\"x\""),
            "names the channel: {err}"
        );
        assert_eq!(items[2].as_ref().unwrap().config, stored[0]);
    }
}
