//! `ChannelValues`: a node's input map, and the map an `updates` chunk shows.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph_core::Value;

/// The values of several channels, keyed by name, in declaration order.
/// Serializes as a JSON object; cloning is a reference-count increment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelValues(Arc<Vec<(Arc<str>, Value)>>);

impl ChannelValues {
    /// A map of these `(key, value)` pairs.
    pub fn new(pairs: Vec<(Arc<str>, Value)>) -> Self {
        Self(Arc::new(pairs))
    }

    /// A map with one entry.
    pub fn single(key: &str, value: Value) -> Self {
        Self::new(vec![(Arc::from(key), value)])
    }

    /// The `(key, value)` pairs.
    pub fn pairs(&self) -> &[(Arc<str>, Value)] {
        &self.0
    }

    /// The pairs, owned (copied only if the map is shared).
    pub fn into_pairs(self) -> Vec<(Arc<str>, Value)> {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The pairs, to change in place, if nothing else shares the map.
    pub(crate) fn pairs_mut(&mut self) -> Option<&mut Vec<(Arc<str>, Value)>> {
        Arc::get_mut(&mut self.0)
    }

    /// Adds an entry (copying the pairs first if the map is shared).
    pub fn push(&mut self, key: Arc<str>, value: Value) {
        Arc::make_mut(&mut self.0).push((key, value));
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`, if available.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    /// The JSON of `key`, if available and JSON-shaped.
    pub fn json(&self, key: &str) -> Option<serde_json::Value> {
        self.get(key).and_then(|v| v.to_json().ok())
    }

    /// Iterates the `(key, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    /// The whole map as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        v.to_json().unwrap_or(serde_json::Value::Null),
                    )
                })
                .collect(),
        )
    }
}

impl<'de> Deserialize<'de> for ChannelValues {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        Ok(Self::new(
            map.into_iter()
                .map(|(k, v)| (Arc::from(k.as_str()), Value::from_json(v)))
                .collect(),
        ))
    }
}

impl Serialize for ChannelValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter() {
            map.serialize_entry(&**k, v)?;
        }
        map.end()
    }
}
