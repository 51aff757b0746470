//! Node result caching (LangGraph's `CachePolicy` and `InMemoryCache`).
//!
//! A node with a cache policy, in a graph compiled with a cache, looks up its
//! input's key before running; on a hit its cached writes are applied as if
//! it had run (its `updates` chunk says `"__metadata__": {"cached": true}`),
//! and after a run its writes are stored under the key.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stategraph_core::Value;

use crate::shape::ChannelId;

/// How a node's results are cached.
#[derive(Clone)]
pub struct CachePolicy {
    pub(crate) key: Arc<dyn Fn(&Value) -> String + Send + Sync>,
    pub(crate) ttl: Option<Duration>,
}

impl fmt::Debug for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for CachePolicy {
    /// Keys by the input's JSON form; entries never expire.
    fn default() -> Self {
        Self {
            key: Arc::new(|input| {
                input
                    .to_json()
                    .map(|json| json.to_string())
                    .unwrap_or_default()
            }),
            ttl: None,
        }
    }
}

impl CachePolicy {
    /// The default policy: key = the input's JSON form, no expiry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys entries with `key` (LangGraph's `key_func`).
    #[must_use]
    pub fn key(mut self, key: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        self.key = Arc::new(key);
        self
    }

    /// Entries expire after `ttl` (LangGraph's `ttl`, in seconds there).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The cache key of an input: xxh3-128 of the policy's key, in hex.
    pub(crate) fn key_of(&self, input: &Value) -> String {
        format!(
            "{:032x}",
            xxhash_rust::xxh3::xxh3_128((self.key)(input).as_bytes())
        )
    }
}

/// The writes of one cached task run, by channel name (ids differ between
/// graphs sharing a cache).
pub type CachedWrites = Vec<(Arc<str>, Value)>;

/// Stores cached task writes. Implement it to share a cache between processes.
pub trait NodeCache: Send + Sync + fmt::Debug + 'static {
    /// The writes stored under `(namespace, key)`, unless missing or expired.
    fn get(&self, namespace: &str, key: &str) -> Option<CachedWrites>;
    /// Stores writes under `(namespace, key)` for `ttl` (`None` = forever).
    fn set(&self, namespace: &str, key: &str, writes: CachedWrites, ttl: Option<Duration>);
    /// Drops every entry of these namespaces (all entries when empty).
    fn clear(&self, namespaces: &[&str]);
}

/// `(namespace, key)` → writes and their expiry.
type Entries = HashMap<(String, String), (CachedWrites, Option<Instant>)>;

/// A process-local cache (LangGraph's `InMemoryCache`). Clones share entries.
#[derive(Clone, Debug, Default)]
pub struct InMemoryCache {
    entries: Arc<Mutex<Entries>>,
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of live entries.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.lock()
            .values()
            .filter(|(_, expiry)| expiry.is_none_or(|e| e > now))
            .count()
    }

    /// Whether the cache holds no live entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl NodeCache for InMemoryCache {
    fn get(&self, namespace: &str, key: &str) -> Option<CachedWrites> {
        let mut entries = self.lock();
        let entry_key = (namespace.to_owned(), key.to_owned());
        match entries.get(&entry_key) {
            Some((_, Some(expiry))) if *expiry <= Instant::now() => {
                entries.remove(&entry_key);
                None
            }
            Some((writes, _)) => Some(writes.clone()),
            None => None,
        }
    }

    fn set(&self, namespace: &str, key: &str, writes: CachedWrites, ttl: Option<Duration>) {
        let expiry = ttl.map(|ttl| Instant::now() + ttl);
        self.lock()
            .insert((namespace.to_owned(), key.to_owned()), (writes, expiry));
    }

    fn clear(&self, namespaces: &[&str]) {
        let mut entries = self.lock();
        if namespaces.is_empty() {
            entries.clear();
        } else {
            entries.retain(|(ns, _), _| !namespaces.contains(&ns.as_str()));
        }
    }
}

/// The cache namespace of a node's writes (LangGraph's `__pregel_ns_writes`).
pub(crate) fn writes_namespace(node: &str) -> String {
    format!("__pregel_ns_writes:{node}")
}

/// The cache namespace of a functional task's results (apart from the
/// nodes': a node's `clear_cache` leaves them, as LangGraph's does).
pub(crate) fn task_namespace(task: &str) -> String {
    format!("__pregel_ns_writes:task:{task}")
}

/// Resolves cached writes to channel ids of the graph at hand.
pub(crate) fn resolve(
    writes: &CachedWrites,
    id_of: impl Fn(&str) -> Option<ChannelId>,
) -> Vec<(ChannelId, Value)> {
    writes
        .iter()
        .filter_map(|(name, value)| Some((id_of(name)?, value.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_clear() {
        let cache = InMemoryCache::new();
        cache.set("ns", "k", vec![(Arc::from("x"), Value::new(1))], None);
        cache.set("ns", "short", vec![], Some(Duration::ZERO));
        cache.set("other", "k", vec![], None);
        assert!(cache.get("ns", "k").is_some());
        assert!(
            cache.get("ns", "short").is_none(),
            "an expired entry is gone"
        );
        assert_eq!(cache.len(), 2);
        cache.clear(&["ns"]);
        assert!(cache.get("ns", "k").is_none());
        assert!(cache.get("other", "k").is_some());
        cache.clear(&[]);
        assert!(cache.is_empty());
    }

    #[test]
    fn default_keys_follow_the_input() {
        let policy = CachePolicy::new();
        let a = policy.key_of(&Value::from_json(serde_json::json!({"x": 1})));
        let b = policy.key_of(&Value::from_json(serde_json::json!({"x": 2})));
        assert_ne!(a, b);
        assert_eq!(
            a,
            policy.key_of(&Value::from_json(serde_json::json!({"x": 1})))
        );
        let custom = CachePolicy::new().key(|_| "same".into());
        assert_eq!(custom.key_of(&Value::new(1)), custom.key_of(&Value::new(2)));
    }
}
