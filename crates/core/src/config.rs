//! Per-run configuration, shaped like LangGraph's `config` dict.

use serde::{Deserialize, Serialize};

use crate::{CheckpointId, JsonMap};

/// The configuration of one run (`invoke` / `stream`) of a graph.
///
/// Serializes to the same JSON shape as LangGraph's `RunnableConfig`:
/// `{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id", ...},
/// "metadata", "tags", "recursion_limit", "run_id"}`.
///
/// ```
/// use stategraph_core::RunnableConfig;
///
/// let config = RunnableConfig::thread("t-1").with_recursion_limit(50);
/// assert_eq!(config.thread_id(), Some("t-1"));
/// assert_eq!(config.checkpoint_ns(), "");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunnableConfig {
    /// Thread, namespace, checkpoint and user-defined configurable keys.
    #[serde(default)]
    pub configurable: Configurable,
    /// Free-form metadata; primitive entries are copied into checkpoint metadata.
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub metadata: JsonMap,
    /// Tags for tracing and filtering (for example `nostream`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Maximum number of supersteps; `None` means the runtime's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursion_limit: Option<usize>,
    /// Id of this run, recorded in checkpoint metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Maximum number of tasks run at once; `None` means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<usize>,
}

/// The `configurable` section of a [`RunnableConfig`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Configurable {
    /// The thread whose checkpoints the run reads and writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The checkpoint namespace: `""` for the root graph, `node:task` segments
    /// joined by `|` for subgraphs.
    #[serde(default)]
    pub checkpoint_ns: String,
    /// A specific checkpoint to read or to run from (time travel); `None` means latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<CheckpointId>,
    /// Any other configurable key, for user code and the runtime's internals.
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl RunnableConfig {
    /// A configuration for the given thread.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        let mut config = Self::default();
        config.configurable.thread_id = Some(thread_id.into());
        config
    }

    /// The thread id, if set.
    pub fn thread_id(&self) -> Option<&str> {
        self.configurable.thread_id.as_deref()
    }

    /// The checkpoint namespace (`""` for the root graph).
    pub fn checkpoint_ns(&self) -> &str {
        &self.configurable.checkpoint_ns
    }

    /// The checkpoint id, if set.
    pub fn checkpoint_id(&self) -> Option<&CheckpointId> {
        self.configurable.checkpoint_id.as_ref()
    }

    /// Sets the checkpoint namespace.
    #[must_use]
    pub fn with_checkpoint_ns(mut self, ns: impl Into<String>) -> Self {
        self.configurable.checkpoint_ns = ns.into();
        self
    }

    /// Sets the checkpoint id (run from or read this checkpoint).
    #[must_use]
    pub fn with_checkpoint_id(mut self, id: impl Into<CheckpointId>) -> Self {
        self.configurable.checkpoint_id = Some(id.into());
        self
    }

    /// Runs at most `tasks` tasks of a step at once (LangGraph's
    /// `max_concurrency`); the others start as those finish. Zero is taken
    /// as one.
    #[must_use]
    pub fn with_max_concurrency(mut self, tasks: usize) -> Self {
        self.max_concurrency = Some(tasks);
        self
    }

    /// Sets the recursion limit (supersteps per run).
    #[must_use]
    pub fn with_recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = Some(limit);
        self
    }

    /// Sets a user-defined configurable key.
    #[must_use]
    pub fn with_configurable(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.configurable.extra.insert(key.into(), value);
        self
    }

    /// Sets a metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn serializes_like_langgraph_config() {
        let config = RunnableConfig::thread("t")
            .with_checkpoint_id("c1")
            .with_configurable("user", json!("u1"))
            .with_metadata("run", json!(1));
        let value = serde_json::to_value(&config).unwrap();
        assert_eq!(
            value,
            json!({
                "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1", "user": "u1"},
                "metadata": {"run": 1}
            })
        );
        let back: RunnableConfig = serde_json::from_value(value).unwrap();
        assert_eq!(back, config);
    }

    #[test]
    fn missing_namespace_reads_as_root() {
        let config: RunnableConfig =
            serde_json::from_value(json!({"configurable": {"thread_id": "t"}})).unwrap();
        assert_eq!(config.checkpoint_ns(), "");
    }
}
