//! Metadata filters for `list`.

use stategraph_core::JsonMap;
use stategraph_core::json::{json_eq, lookup_path};

use crate::{CheckpointMetadata, Error, Result};

/// A validated metadata filter: every key must match.
///
/// Semantics, identical on every backend:
/// - a key is a dotted path into the metadata object (`"user.access-level"`);
///   a top-level key containing dots is found first;
/// - a value matches by exact JSON equality, numbers compared numerically
///   (`1` matches `1.0`), objects compared whole (no partial containment);
/// - `null` matches a present `null` only, never a missing key;
/// - keys may use only `[A-Za-z0-9_.-]`, so a key can be spliced into SQL
///   paths safely; anything else is rejected with [`Error::InvalidFilterKey`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetadataFilter {
    // Invariant: every key passed `valid_key`.
    entries: JsonMap,
}

impl MetadataFilter {
    /// Validates a filter.
    ///
    /// # Errors
    /// [`Error::InvalidFilterKey`] for a key outside `[A-Za-z0-9_.-]+`.
    pub fn new(entries: JsonMap) -> Result<Self> {
        if let Some(key) = entries.keys().find(|key| !valid_key(key)) {
            return Err(Error::InvalidFilterKey { key: key.clone() });
        }
        Ok(Self { entries })
    }

    /// The `(key, value)` pairs of the filter.
    pub fn entries(&self) -> &JsonMap {
        &self.entries
    }

    /// Whether the filter has no entries (matches everything).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `metadata` matches every entry.
    pub fn matches(&self, metadata: &CheckpointMetadata) -> bool {
        if self.entries.is_empty() {
            return true;
        }
        self.matches_json(&metadata.to_json())
    }

    /// Whether a metadata JSON object matches every entry.
    pub fn matches_json(&self, metadata: &serde_json::Value) -> bool {
        self.entries.iter().all(|(key, expected)| {
            lookup_path(metadata, key).is_some_and(|found| json_eq(found, expected))
        })
    }
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(value: serde_json::Value) -> Result<MetadataFilter> {
        MetadataFilter::new(value.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn cp_bk_10_injection_shaped_keys_are_rejected() {
        for key in [
            "x') OR '1'='1",
            "'; DROP TABLE checkpoints; --",
            "a b",
            "",
            "ключ",
        ] {
            let mut map = JsonMap::new();
            map.insert(key.to_owned(), json!(1));
            let err = MetadataFilter::new(map).unwrap_err();
            assert!(
                matches!(err, Error::InvalidFilterKey { .. }),
                "{key}: {err}"
            );
            assert_eq!(err.kind(), stategraph_core::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn cp_ext_09_filter_semantics() {
        let metadata = CheckpointMetadata::default()
            .with("nested", json!({"a": 1, "b": 2}))
            .with("nothing", json!(null))
            .with("flag", json!(true))
            .with("one", json!(1))
            .with("text", json!("héllo ✓"));
        let m = |f| filter(f).unwrap().matches(&metadata);
        assert!(m(json!({"nested": {"a": 1, "b": 2}})));
        assert!(
            !m(json!({"nested": {"a": 1}})),
            "partial objects do not match"
        );
        assert!(m(json!({"nested.a": 1})));
        assert!(m(json!({"nothing": null})));
        assert!(
            !m(json!({"missing": null})),
            "null does not match a missing key"
        );
        assert!(m(json!({"flag": true})));
        assert!(!m(json!({"flag": 1})));
        assert!(m(json!({"one": 1.0})));
        assert!(m(json!({"text": "héllo ✓"})));
        assert!(m(json!({})));
    }
}
