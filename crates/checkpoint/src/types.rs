//! The checkpoint data model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stategraph_core::{CheckpointId, JsonMap, RunnableConfig, Value};

use crate::ChannelVersion;

/// Channel name → version.
pub type ChannelVersions = BTreeMap<String, ChannelVersion>;

/// Names of the special write channels and of reserved channels.
pub mod special {
    /// A task failed; the value is the error text.
    pub const ERROR: &str = "__error__";
    /// A task was scheduled (reserved by LangGraph).
    pub const SCHEDULED: &str = "__scheduled__";
    /// A task was interrupted; the value lists its interrupts.
    pub const INTERRUPT: &str = "__interrupt__";
    /// Resume values answered to a task's interrupts.
    pub const RESUME: &str = "__resume__";
    /// A task finished without writing anything.
    pub const NO_WRITES: &str = "__no_writes__";
    /// `Send` packets (PUSH tasks) for the next step.
    pub const TASKS: &str = "__pregel_tasks";
    /// The task id that owns writes not made by any task (input `Command`s).
    pub const NULL_TASK_ID: &str = "00000000-0000-0000-0000-000000000000";
}

/// The storage index of the `position`-th write of a task.
///
/// Special channels have fixed negative indexes (`__error__` -1,
/// `__scheduled__` -2, `__interrupt__` -3, `__resume__` -4), so a later special
/// write of the same task replaces the earlier one; ordinary writes are indexed
/// by position and the first write of a `(task, index)` wins.
pub fn write_index(channel: &str, position: usize) -> i64 {
    match channel {
        special::ERROR => -1,
        special::SCHEDULED => -2,
        special::INTERRUPT => -3,
        special::RESUME => -4,
        _ => i64::try_from(position).unwrap_or(i64::MAX),
    }
}

/// A snapshot of every channel at a superstep boundary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// Format version of this structure.
    pub v: u32,
    /// Unique id; ids sort by creation time.
    pub id: CheckpointId,
    /// Creation time, RFC 3339.
    pub ts: String,
    /// The value of every channel that has one.
    #[serde(default)]
    pub channel_values: BTreeMap<String, Value>,
    /// The version of every channel that was ever written.
    #[serde(default)]
    pub channel_versions: ChannelVersions,
    /// Node → channel → the channel version the node last ran on.
    #[serde(default)]
    pub versions_seen: BTreeMap<String, ChannelVersions>,
    /// The channels updated in the step that produced this checkpoint.
    #[serde(default)]
    pub updated_channels: Option<Vec<String>>,
}

impl Checkpoint {
    /// The current format version: LangGraph's (4), whose fields these are
    /// (`updated_channels` included).
    pub const FORMAT_VERSION: u32 = 4;

    /// An empty checkpoint with a fresh id and the current time.
    pub fn empty() -> Self {
        Self {
            v: Self::FORMAT_VERSION,
            id: CheckpointId::new(),
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            channel_values: BTreeMap::new(),
            channel_versions: BTreeMap::new(),
            versions_seen: BTreeMap::new(),
            updated_channels: None,
        }
    }

    /// Sets one channel's value and version.
    #[must_use]
    pub fn with_channel(
        mut self,
        channel: impl Into<String>,
        value: Value,
        version: ChannelVersion,
    ) -> Self {
        let channel = channel.into();
        self.channel_values.insert(channel.clone(), value);
        self.channel_versions.insert(channel, version);
        self
    }
}

/// What produced a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointSource {
    /// The input of an `invoke` / `stream` call.
    Input,
    /// A superstep of the run loop.
    Loop,
    /// A manual `update_state`.
    Update,
    /// A copy of an older checkpoint, made when running from it (time travel).
    Fork,
}

/// Metadata stored with a checkpoint: an open JSON object with a few known keys.
///
/// Serializes as one flat object. A known key whose value does not fit its
/// field (a custom `"source": "import"`, say) reads back as a custom key in
/// `extra`, so any object round-trips through every saver.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct CheckpointMetadata {
    /// What produced the checkpoint.
    pub source: Option<CheckpointSource>,
    /// The step: -1 for the first input checkpoint, then 0, 1, ...
    pub step: Option<i64>,
    /// Checkpoint namespace → checkpoint id of each ancestor graph's checkpoint.
    pub parents: BTreeMap<String, CheckpointId>,
    /// The run that wrote the checkpoint.
    pub run_id: Option<String>,
    /// Any other key (a known key only when its typed field is unset).
    pub extra: JsonMap,
}

impl Serialize for CheckpointMetadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(source) = &self.source {
            map.serialize_entry("source", source)?;
        }
        if let Some(step) = &self.step {
            map.serialize_entry("step", step)?;
        }
        // LangGraph always writes `parents`; a foreign `parents` value in
        // `extra` stands in for an empty map.
        let typed_parents = !self.parents.is_empty() || !self.extra.contains_key("parents");
        if typed_parents {
            map.serialize_entry("parents", &self.parents)?;
        }
        if let Some(run_id) = &self.run_id {
            map.serialize_entry("run_id", run_id)?;
        }
        for (key, value) in &self.extra {
            let shadowed = match key.as_str() {
                "source" => self.source.is_some(),
                "step" => self.step.is_some(),
                "parents" => typed_parents,
                "run_id" => self.run_id.is_some(),
                _ => false,
            };
            if !shadowed {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for CheckpointMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonMap::deserialize(deserializer)?;
        let mut metadata = Self::default();
        for (key, value) in map {
            metadata = metadata.with(key, value);
        }
        Ok(metadata)
    }
}

/// Keys that never become checkpoint metadata (LangGraph's
/// `EXCLUDED_METADATA_KEYS`): they identify the checkpoint or are per-task
/// runtime bookkeeping.
pub const EXCLUDED_METADATA_KEYS: &[&str] = &[
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "checkpoint_map",
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "langgraph_checkpoint_ns",
];

impl CheckpointMetadata {
    /// Metadata with the given source and step.
    pub fn new(source: CheckpointSource, step: i64) -> Self {
        Self {
            source: Some(source),
            step: Some(step),
            ..Self::default()
        }
    }

    /// Sets a key: a known key (`source`, `step`, `parents`, `run_id`) sets
    /// its typed field when the value fits it, any other key (or value) is
    /// kept as a custom key.
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        let key = key.into();
        let fitted = match key.as_str() {
            "source" => serde_json::from_value(value.clone())
                .map(|v| self.source = Some(v))
                .is_ok(),
            "step" => value.as_i64().map(|v| self.step = Some(v)).is_some(),
            "parents" => serde_json::from_value(value.clone())
                .map(|v| self.parents = v)
                .is_ok(),
            "run_id" => value
                .as_str()
                .map(|v| self.run_id = Some(v.to_owned()))
                .is_some(),
            _ => false,
        };
        if !fitted {
            self.extra.insert(key, value);
        }
        self
    }

    /// Merges a run's configuration into this metadata, as LangGraph does when
    /// saving: primitive (string, number, bool) entries of `config.metadata`
    /// and of `config.configurable` are copied unless the key is already
    /// present, starts with `__`, or identifies the checkpoint or task.
    #[must_use]
    pub fn merged_with_config(mut self, config: &RunnableConfig) -> Self {
        if self.run_id.is_none() {
            self.run_id = config.run_id.clone();
        }
        let configurable = config.configurable.extra.iter();
        for (key, value) in config.metadata.iter().chain(configurable) {
            let primitive = matches!(
                value,
                serde_json::Value::String(_)
                    | serde_json::Value::Number(_)
                    | serde_json::Value::Bool(_)
            );
            if !primitive || key.starts_with("__") || EXCLUDED_METADATA_KEYS.contains(&key.as_str())
            {
                continue;
            }
            if key == "run_id" {
                if self.run_id.is_none() {
                    self.run_id = value.as_str().map(str::to_owned);
                }
                continue;
            }
            if !self.has_key(key) {
                self.extra.insert(key.clone(), value.clone());
            }
        }
        self
    }

    /// Removes NUL characters from every string and object key, as
    /// PostgreSQL cannot store them in JSONB (LangGraph strips them too).
    /// Every saver applies this on `put`, so metadata reads back the same
    /// from every backend. When stripping makes two keys of one object
    /// equal, one of their entries is kept.
    #[must_use]
    pub fn sanitized(mut self) -> Self {
        fn strip_keys(map: &mut JsonMap) {
            if map.keys().any(|key| key.contains('\0')) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(key, value)| (key.replace('\0', ""), value))
                    .collect();
            }
        }
        if let Some(run_id) = &mut self.run_id {
            run_id.retain(|c| c != '\0');
        }
        let nul = |text: &str| text.contains('\0');
        if self
            .parents
            .iter()
            .any(|(ns, id)| nul(ns) || nul(id.as_str()))
        {
            self.parents = std::mem::take(&mut self.parents)
                .into_iter()
                .map(|(ns, id)| (ns.replace('\0', ""), id.as_str().replace('\0', "").into()))
                .collect();
        }
        strip_keys(&mut self.extra);
        // Iterative: metadata may nest as deep as the limit allows.
        let mut pending: Vec<&mut serde_json::Value> = self.extra.values_mut().collect();
        while let Some(value) = pending.pop() {
            match value {
                serde_json::Value::String(s) if s.contains('\0') => s.retain(|c| c != '\0'),
                serde_json::Value::Array(items) => pending.extend(items.iter_mut()),
                serde_json::Value::Object(map) => {
                    strip_keys(map);
                    pending.extend(map.values_mut());
                }
                _ => {}
            }
        }
        self
    }

    /// The metadata as one JSON object (what filters match against).
    pub fn to_json(&self) -> serde_json::Value {
        // Every field is plain JSON data, so serialization cannot fail.
        serde_json::to_value(self).unwrap_or_else(|_| serde_json::Value::Object(JsonMap::new()))
    }

    fn has_key(&self, key: &str) -> bool {
        match key {
            "source" => self.source.is_some(),
            "step" => self.step.is_some(),
            "parents" => true,
            _ => self.extra.contains_key(key),
        }
    }
}

/// Addresses a checkpoint: a thread, a namespace and optionally one checkpoint
/// (`None` = the latest of the thread and namespace).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// The thread.
    pub thread_id: String,
    /// The namespace (`""` for the root graph).
    #[serde(default)]
    pub checkpoint_ns: String,
    /// The checkpoint, or `None` for the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<CheckpointId>,
}

impl CheckpointConfig {
    /// The latest checkpoint of a thread's root namespace.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            checkpoint_ns: String::new(),
            checkpoint_id: None,
        }
    }

    /// Sets the namespace.
    #[must_use]
    pub fn with_ns(mut self, ns: impl Into<String>) -> Self {
        self.checkpoint_ns = ns.into();
        self
    }

    /// Sets the checkpoint id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<CheckpointId>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// Reads thread, namespace and checkpoint id from a run configuration;
    /// `None` when it names no thread.
    pub fn from_runnable(config: &RunnableConfig) -> Option<Self> {
        Some(Self {
            thread_id: config.thread_id()?.to_owned(),
            checkpoint_ns: config.checkpoint_ns().to_owned(),
            checkpoint_id: config.checkpoint_id().cloned(),
        })
    }
}

/// One pending write: a value a task wrote to a channel, saved against the
/// checkpoint the task's step started from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// The task that wrote it.
    pub task_id: String,
    /// The channel written.
    pub channel: String,
    /// The value written.
    pub value: Value,
}

/// A checkpoint with its address, metadata, parent and pending writes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CheckpointTuple {
    /// The checkpoint's own address (always with `checkpoint_id`).
    pub config: CheckpointConfig,
    /// The checkpoint, channel values included.
    pub checkpoint: Checkpoint,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// The checkpoint it was computed from, if any.
    pub parent_config: Option<CheckpointConfig>,
    /// Writes saved against this checkpoint, ordered by task id then index.
    pub pending_writes: Vec<PendingWrite>,
}

impl CheckpointTuple {
    /// Assembles a tuple.
    pub fn new(
        config: CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        parent_config: Option<CheckpointConfig>,
        pending_writes: Vec<PendingWrite>,
    ) -> Self {
        Self {
            config,
            checkpoint,
            metadata,
            parent_config,
            pending_writes,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // CP-BK-01: primitive config entries merge into metadata, reserved ones do not.
    #[test]
    fn cp_bk_01_config_metadata_merges_into_checkpoint_metadata() {
        let mut config = RunnableConfig::thread("t")
            .with_configurable("__super_private_key", json!("secret"))
            .with_configurable("user", json!("u1"))
            .with_configurable("nested", json!({"no": "objects"}))
            .with_configurable("langgraph_step", json!(3))
            .with_metadata("run_id", json!("my_run_id"))
            .with_metadata("source", json!("ignored: already set"));
        config.configurable.checkpoint_ns = "ns".into();
        let metadata =
            CheckpointMetadata::new(CheckpointSource::Loop, 1).merged_with_config(&config);
        assert_eq!(
            metadata.to_json(),
            json!({"source": "loop", "step": 1, "parents": {}, "run_id": "my_run_id", "user": "u1"})
        );
    }

    #[test]
    fn cp_bk_12_nul_characters_are_stripped_from_metadata() {
        let metadata = CheckpointMetadata::default()
            .with("my_key", json!("\u{0}abc"))
            .with("deep", json!({"k": ["x\u{0}y"]}))
            .sanitized();
        assert_eq!(metadata.extra["my_key"], json!("abc"));
        assert_eq!(metadata.extra["deep"], json!({"k": ["xy"]}));
        let keys = CheckpointMetadata::default()
            .with("k\u{0}ey", json!(1))
            .with("nested", json!({"a\u{0}": {"\u{0}b": "c\u{0}"}}))
            .sanitized();
        assert_eq!(
            keys.to_json(),
            json!({"parents": {}, "key": 1, "nested": {"a": {"b": "c"}}})
        );
    }

    #[test]
    fn special_channels_have_fixed_negative_indexes() {
        assert_eq!(write_index(special::ERROR, 0), -1);
        assert_eq!(write_index(special::SCHEDULED, 3), -2);
        assert_eq!(write_index(special::INTERRUPT, 1), -3);
        assert_eq!(write_index(special::RESUME, 0), -4);
        assert_eq!(write_index("messages", 2), 2);
    }

    #[test]
    fn known_keys_with_foreign_values_round_trip_as_custom_keys() {
        let metadata = CheckpointMetadata::default()
            .with("source", json!("import"))
            .with("step", json!("three"))
            .with("run_id", json!(7))
            .with("parents", json!("none"));
        let text = serde_json::to_string(&metadata).unwrap();
        let back: CheckpointMetadata = serde_json::from_str(&text).unwrap();
        assert_eq!(back, metadata);
        assert_eq!(back.source, None);
        assert_eq!(back.to_json()["source"], json!("import"));
        let typed = CheckpointMetadata::default()
            .with("source", json!("loop"))
            .with("step", json!(2));
        assert_eq!(typed.source, Some(CheckpointSource::Loop));
        assert_eq!(typed.step, Some(2));
        assert!(typed.extra.is_empty());
    }

    #[test]
    fn metadata_round_trips_with_custom_keys() {
        let metadata =
            CheckpointMetadata::new(CheckpointSource::Input, -1).with("score", json!(42));
        let text = serde_json::to_string(&metadata).unwrap();
        let back: CheckpointMetadata = serde_json::from_str(&text).unwrap();
        assert_eq!(back, metadata);
        assert_eq!(back.to_json()["score"], json!(42));
    }
}
