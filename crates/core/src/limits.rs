//! The one table of limits every checkpoint saver and store enforces, on
//! every backend alike, before it touches its storage (docs/LIMITS.md
//! explains each number).
//!
//! Identifiers (thread ids, checkpoint namespaces and ids, task ids,
//! channel and node names, store keys and namespace labels) are measured
//! in UTF-8 bytes, and none may hold a NUL character: PostgreSQL's `TEXT`
//! and `JSONB` cannot store one. The lengths keep every indexed column
//! combination of the SQL backends under PostgreSQL's b-tree entry limit
//! (2,704 bytes), uncompressed. Values are measured as compact JSON.

use std::io;

use serde::Serialize;
use serde_json::Value as Json;

use crate::ErrorKind;
use crate::json;

/// The longest thread id, checkpoint namespace, checkpoint id, task id,
/// channel name or node name, in UTF-8 bytes. Four of them share one index
/// entry of a pending write (thread, namespace, checkpoint, task).
pub const MAX_ID_BYTES: usize = 512;

/// The longest store key, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// The longest label of a store namespace, in UTF-8 bytes.
pub const MAX_LABEL_BYTES: usize = 256;

/// The most labels a store namespace may have.
pub const MAX_NAMESPACE_LABELS: usize = 32;

/// The longest store namespace, in UTF-8 bytes of its labels joined with
/// `.` (as SQL stores keep it). With the key, it forms one index entry.
pub const MAX_NAMESPACE_BYTES: usize = 1024;

/// The deepest nesting of arrays and objects in a store value or in
/// checkpoint metadata, the outer object included (also what the JSON
/// serializer of checkpoint values allows): [`json::MAX_DEPTH`].
pub const MAX_DEPTH: usize = json::MAX_DEPTH;

/// The largest store value, checkpoint metadata or serialized checkpoint
/// value, in bytes of compact JSON: 64 MiB.
pub const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;

/// Which limit a text or value breaks, naming it and the limit.
///
/// Texts are shown cut to their first few characters.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// An identifier is longer than its limit.
    #[error("{what} {text} is {bytes} bytes long, more than the {limit} allowed")]
    TooLong {
        /// What the text is (`"thread_id"`, `"store key"`, ...).
        what: &'static str,
        /// The text, cut short.
        text: String,
        /// Its length in UTF-8 bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// An identifier holds a NUL character.
    #[error("{what} {text} contains a NUL character, which no identifier may hold")]
    Nul {
        /// What the text is.
        what: &'static str,
        /// The text, cut short.
        text: String,
    },
    /// A store namespace has too many labels.
    #[error("namespace {text} has {labels} labels, more than the {limit} allowed")]
    TooManyLabels {
        /// The namespace, cut short.
        text: String,
        /// How many labels it has.
        labels: usize,
        /// The limit ([`MAX_NAMESPACE_LABELS`]).
        limit: usize,
    },
    /// A value nests arrays and objects too deep to be read back.
    #[error("{what} nests deeper than {limit} levels of arrays and objects")]
    TooDeep {
        /// What the value is.
        what: &'static str,
        /// The limit ([`MAX_DEPTH`]).
        limit: usize,
    },
    /// A value is larger than [`MAX_VALUE_BYTES`] as JSON.
    #[error("{what} is larger than {limit} bytes as JSON")]
    TooLarge {
        /// What the value is.
        what: &'static str,
        /// The limit ([`MAX_VALUE_BYTES`]).
        limit: usize,
    },
}

impl LimitError {
    /// Always [`ErrorKind::InvalidInput`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }

    /// The limit broken (bytes, labels or levels); `None` for a NUL.
    pub fn limit(&self) -> Option<usize> {
        match self {
            Self::TooLong { limit, .. }
            | Self::TooManyLabels { limit, .. }
            | Self::TooDeep { limit, .. }
            | Self::TooLarge { limit, .. } => Some(*limit),
            Self::Nul { .. } => None,
        }
    }
}

/// Checks an identifier: at most `limit` UTF-8 bytes, no NUL.
///
/// # Errors
/// [`LimitError::TooLong`] or [`LimitError::Nul`], naming `what`.
pub fn check_text(what: &'static str, text: &str, limit: usize) -> Result<(), LimitError> {
    if text.len() > limit {
        return Err(LimitError::TooLong {
            what,
            text: preview(text),
            bytes: text.len(),
            limit,
        });
    }
    if text.as_bytes().contains(&0) {
        return Err(LimitError::Nul {
            what,
            text: preview(text),
        });
    }
    Ok(())
}

/// Checks a checkpoint identifier (thread id, namespace, checkpoint id,
/// task id, channel or node name) against [`MAX_ID_BYTES`] and NUL.
///
/// # Errors
/// As [`check_text`].
pub fn check_id(what: &'static str, text: &str) -> Result<(), LimitError> {
    check_text(what, text, MAX_ID_BYTES)
}

/// Checks a store key against [`MAX_KEY_BYTES`] and NUL.
///
/// # Errors
/// As [`check_text`].
pub fn check_key(key: &str) -> Result<(), LimitError> {
    check_text("store key", key, MAX_KEY_BYTES)
}

/// Checks a store namespace: at most [`MAX_NAMESPACE_LABELS`] labels, each
/// at most [`MAX_LABEL_BYTES`] without NUL, at most [`MAX_NAMESPACE_BYTES`]
/// joined with `.`.
///
/// # Errors
/// [`LimitError::TooManyLabels`], or [`LimitError::TooLong`] /
/// [`LimitError::Nul`] naming the first bad label or the whole namespace.
pub fn check_namespace(labels: &[String]) -> Result<(), LimitError> {
    if labels.len() > MAX_NAMESPACE_LABELS {
        return Err(LimitError::TooManyLabels {
            text: preview_labels(labels),
            labels: labels.len(),
            limit: MAX_NAMESPACE_LABELS,
        });
    }
    for label in labels {
        check_text("namespace label", label, MAX_LABEL_BYTES)?;
    }
    let joined = labels.iter().map(String::len).sum::<usize>() + labels.len().saturating_sub(1);
    if joined > MAX_NAMESPACE_BYTES {
        return Err(LimitError::TooLong {
            what: "namespace",
            text: preview_labels(labels),
            bytes: joined,
            limit: MAX_NAMESPACE_BYTES,
        });
    }
    Ok(())
}

/// Checks that the fields of a JSON object nest at most [`MAX_DEPTH`]
/// levels, the object itself counting as one (without recursion, so any
/// depth is safe to check).
///
/// # Errors
/// [`LimitError::TooDeep`], naming `what`.
pub fn check_object_depth<'a>(
    what: &'static str,
    fields: impl IntoIterator<Item = &'a Json>,
) -> Result<(), LimitError> {
    // Scalars (most fields) nest nothing: no walk, no allocation.
    if fields.into_iter().any(|field| {
        matches!(field, Json::Array(_) | Json::Object(_)) && json::deeper_than(field, MAX_DEPTH - 1)
    }) {
        return Err(LimitError::TooDeep {
            what,
            limit: MAX_DEPTH,
        });
    }
    Ok(())
}

/// Checks that `value` is at most [`MAX_VALUE_BYTES`] as compact JSON. It
/// is serialized into a counter that stops at the limit, so nothing is
/// allocated and an oversized value costs no more than the limit.
///
/// A value that fails to serialize for another reason passes: the write
/// that serializes it reports that failure.
///
/// # Errors
/// [`LimitError::TooLarge`], naming `what`.
pub fn check_json_size(what: &'static str, value: &impl Serialize) -> Result<(), LimitError> {
    if !json_fits(value, MAX_VALUE_BYTES) {
        return Err(LimitError::TooLarge {
            what,
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// [`check_json_size`] for a JSON object given as its map, which settles
/// almost every value without serializing it: first against an upper bound
/// of its length (every string byte counted as a six-byte escape, every
/// number as 24 characters), counted exactly only when the bound is over.
///
/// # Errors
/// [`LimitError::TooLarge`], naming `what`.
pub fn check_map_size(
    what: &'static str,
    map: &serde_json::Map<String, Json>,
) -> Result<(), LimitError> {
    // store_memory_put_1000: 11% fewer instructions than counting by serializing.
    if json_len_bound(map, MAX_VALUE_BYTES) <= MAX_VALUE_BYTES {
        return Ok(());
    }
    check_json_size(what, map)
}

/// An upper bound of the compact JSON length of the object `map`, or a
/// number above `stop` as soon as the bound passes it. Iterative.
fn json_len_bound(map: &serde_json::Map<String, Json>, stop: usize) -> usize {
    // A string's worst case: quotes, and a `\u00XX` escape per byte.
    let text = |s: &str| s.len().saturating_mul(6).saturating_add(2);
    // `{}`, and per entry a key, a colon and a comma.
    let object = |map: &serde_json::Map<String, Json>| {
        map.keys().fold(2_usize, |sum, key| {
            sum.saturating_add(text(key)).saturating_add(2)
        })
    };
    let mut total = object(map);
    let mut pending: Vec<&Json> = map.values().collect();
    while let Some(value) = pending.pop() {
        let own = match value {
            Json::Null | Json::Bool(_) => 5,
            // The longest an i64, u64 or f64 prints (`-2.2250738585072014e-308`).
            Json::Number(_) => 24,
            Json::String(s) => text(s),
            Json::Array(items) => {
                pending.extend(items);
                items.len().saturating_add(2)
            }
            Json::Object(map) => {
                pending.extend(map.values());
                object(map)
            }
        };
        total = total.saturating_add(own);
        if total > stop {
            break;
        }
    }
    total
}

/// Whether `value` is at most `limit` bytes as compact JSON (or fails to
/// serialize for another reason).
fn json_fits(value: &impl Serialize, limit: usize) -> bool {
    let mut budget = Budget {
        left: limit,
        exceeded: false,
    };
    let _ = serde_json::to_writer(&mut budget, value);
    !budget.exceeded
}

/// Checks the length of an already serialized value against
/// [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`LimitError::TooLarge`], naming `what`.
pub fn check_size(what: &'static str, bytes: usize) -> Result<(), LimitError> {
    if bytes > MAX_VALUE_BYTES {
        return Err(LimitError::TooLarge {
            what,
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// A writer that counts bytes and fails once more than `left` arrive.
struct Budget {
    left: usize,
    exceeded: bool,
}

impl io::Write for Budget {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.left.checked_sub(buf.len()) {
            Some(left) => {
                self.left = left;
                Ok(buf.len())
            }
            None => {
                self.exceeded = true;
                Err(io::Error::other("over the size limit"))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How many characters of a text an error shows.
const PREVIEW_CHARS: usize = 32;

/// `text` quoted and escaped as Rust debug-prints it, cut after 32
/// characters (marked with `…`), so an error about a megabyte-long key
/// stays short.
pub fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}…", &text[..end]),
    }
}

/// The first labels of a namespace, each cut short.
fn preview_labels(labels: &[String]) -> String {
    let mut shown: Vec<String> = labels.iter().take(4).map(|l| preview(l)).collect();
    if labels.len() > 4 {
        shown.push("…".to_owned());
    }
    format!("[{}]", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(count: usize, len: usize) -> Vec<String> {
        (0..count).map(|_| "l".repeat(len)).collect()
    }

    #[test]
    fn texts_are_measured_in_bytes_and_refuse_nul() {
        let at_limit = "é".repeat(MAX_ID_BYTES / 2);
        assert_eq!(check_id("thread_id", &at_limit), Ok(()));
        let over = format!("{at_limit}x");
        let err = check_id("thread_id", &over).unwrap_err();
        assert!(matches!(
            err,
            LimitError::TooLong {
                what: "thread_id",
                bytes: 513,
                limit: MAX_ID_BYTES,
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "thread_id {:?}… is 513 bytes long, more than the 512 allowed",
                "é".repeat(PREVIEW_CHARS)
            )
        );
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert_eq!(err.limit(), Some(MAX_ID_BYTES));
        let err = check_key("a\0b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "store key \"a\\0b\" contains a NUL character, which no identifier may hold"
        );
        assert_eq!(err.limit(), None);
        assert_eq!(check_key(""), Ok(()));
        assert_eq!(check_key(&"k".repeat(MAX_KEY_BYTES)), Ok(()));
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES + 1)).is_err());
    }

    #[test]
    fn namespaces_are_limited_in_labels_label_bytes_and_joined_bytes() {
        // 4 labels of 255 bytes joined by 3 dots: exactly 1,023 bytes.
        assert_eq!(check_namespace(&labels(4, 255)), Ok(()));
        assert_eq!(check_namespace(&labels(1, MAX_LABEL_BYTES)), Ok(()));
        let err = check_namespace(&labels(1, MAX_LABEL_BYTES + 1)).unwrap_err();
        assert!(matches!(
            err,
            LimitError::TooLong {
                what: "namespace label",
                ..
            }
        ));
        // 4 labels of 256 bytes and 3 dots: 1,027 bytes.
        let err = check_namespace(&labels(4, 256)).unwrap_err();
        assert!(matches!(
            err,
            LimitError::TooLong {
                what: "namespace",
                bytes: 1027,
                ..
            }
        ));
        assert_eq!(check_namespace(&labels(MAX_NAMESPACE_LABELS, 1)), Ok(()));
        let err = check_namespace(&labels(MAX_NAMESPACE_LABELS + 1, 1)).unwrap_err();
        assert!(matches!(err, LimitError::TooManyLabels { labels: 33, .. }));
        assert!(err.to_string().starts_with(
            "namespace [\"l\", \"l\", \"l\", \"l\", …] has 33 labels, more than the 32 allowed"
        ));
        let err = check_namespace(&["ok".into(), "n\0l".into()]).unwrap_err();
        assert!(matches!(
            err,
            LimitError::Nul {
                what: "namespace label",
                ..
            }
        ));
    }

    #[test]
    fn json_size_is_counted_exactly_as_compact_json() {
        // The stores' conformance cases (ST-LIM-05, CP-LIM-06, CP-LIM-07)
        // move values of the real limit; here a small one shows the count.
        let value = json!({"v": "a\"b\u{1}", "n": [1.5, -2, null], "é": {}});
        let bytes = serde_json::to_vec(&value).unwrap().len();
        assert!(json_fits(&value, bytes));
        assert!(!json_fits(&value, bytes - 1));
        assert!(!json_fits(&json!("x".repeat(100)), 10));
        assert_eq!(check_json_size("value", &value), Ok(()));
        assert_eq!(check_size("value", MAX_VALUE_BYTES), Ok(()));
        assert_eq!(
            check_size("value", MAX_VALUE_BYTES + 1),
            Err(LimitError::TooLarge {
                what: "value",
                limit: MAX_VALUE_BYTES
            })
        );
    }

    /// Any JSON: objects, arrays, strings with escapes, extreme numbers.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Json> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::from),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Json::from),
            "[\\u{0}-\\u{1f}\"\\\\a-zé😀]{0,12}".prop_map(Json::from),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                proptest::collection::btree_map("[\"a-z\u{1}]{0,6}", inner, 0..6)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The bound that lets a map skip serializing is never below its
        /// real length, so no value over the limit gets through.
        #[test]
        fn the_length_bound_is_never_below_the_length(
            entries in proptest::collection::btree_map("[a-z\"]{0,4}", any_json(), 0..6),
        ) {
            let map: serde_json::Map<String, Json> = entries.into_iter().collect();
            let length = serde_json::to_vec(&map).unwrap().len();
            let bound = json_len_bound(&map, usize::MAX);
            proptest::prop_assert!(bound >= length);
            // Stopping early still reports a bound over the stop.
            let stop = length / 2;
            proptest::prop_assert!(json_len_bound(&map, stop) > stop);
        }
    }

    #[test]
    fn object_depth_counts_the_object_itself() {
        let nested = |depth: usize| (0..depth).fold(json!(1), |inner, _| json!([inner]));
        let fields = [json!(1), nested(MAX_DEPTH - 1)];
        assert_eq!(check_object_depth("metadata", &fields), Ok(()));
        let fields = [nested(MAX_DEPTH)];
        assert_eq!(
            check_object_depth("metadata", &fields),
            Err(LimitError::TooDeep {
                what: "metadata",
                limit: MAX_DEPTH
            })
        );
    }

    #[test]
    fn the_limits_fit_postgresql_index_entries() {
        // A b-tree entry: an 8-byte header, then each text with a 4-byte
        // length header, padded to 4 bytes (8 for a following BIGINT).
        let text = |bytes: usize| (4 + bytes).next_multiple_of(4);
        let store_vector = 8 + text(MAX_NAMESPACE_BYTES) + text(MAX_KEY_BYTES) + 4;
        let pending_write = (8 + 4 * text(MAX_ID_BYTES)).next_multiple_of(8) + 8;
        let blob = 8 + 3 * text(MAX_ID_BYTES) + text(49);
        for entry in [store_vector, pending_write, blob] {
            assert!(entry + 512 <= 2704, "{entry} bytes leave too little room");
        }
    }
}
