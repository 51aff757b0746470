//! Serializers: how savers turn values into bytes and back.
//!
//! The in-memory saver shares live values and needs no serializer; persistent
//! backends store [`Encoded`] bytes tagged with the format that wrote them, so
//! a reader dispatches on the tag and rejects tags it does not know.

use std::fmt;

use stategraph_core::limits::MAX_VALUE_BYTES;
use stategraph_core::{Value, ValueError};

use crate::{Error, Result};

/// A serialized value: a format tag plus bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The format (`"json"`, `"null"`, ...).
    pub tag: String,
    /// The serialized value.
    pub bytes: Vec<u8>,
}

/// Turns values into tagged bytes and back.
///
/// # Behavior
/// - `loads(dumps(v))` equals `v` (by [`Value`] equality).
/// - `loads` of an unknown tag fails with [`Error::UnknownTag`], never a silent default.
/// - Errors name the channel and the path of the bad part of the value.
pub trait Serializer: Send + Sync + fmt::Debug + 'static {
    /// Serializes a value written to `channel` (the name is only used in errors).
    ///
    /// # Errors
    /// [`Error::Value`] when the value cannot be serialized.
    fn dumps(&self, channel: &str, value: &Value) -> Result<Encoded>;

    /// Deserializes bytes read back for `channel`.
    ///
    /// # Errors
    /// [`Error::UnknownTag`] or [`Error::Value`].
    fn loads(&self, channel: &str, tag: &str, bytes: &[u8]) -> Result<Value>;
}

/// The default serializer: JSON text, tag `"json"`.
///
/// Writes only what it can read back: a value holding a NaN or infinite
/// float (JSON has none; serde_json would write `null`), nesting deeper
/// than [`MAX_DEPTH`](stategraph_core::json::MAX_DEPTH) levels or larger
/// than [`MAX_VALUE_BYTES`] as JSON is refused with an [`Error::Value`]
/// naming the channel. Keep such floats out of persisted state, or wrap
/// them in a type that serializes them as text.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonSerializer;

impl JsonSerializer {
    /// The tag this serializer writes.
    pub const TAG: &'static str = "json";
    /// The tag for a stored `null` (also accepted on read, with empty bytes).
    pub const NULL_TAG: &'static str = "null";
}

impl Serializer for JsonSerializer {
    fn dumps(&self, channel: &str, value: &Value) -> Result<Encoded> {
        let mut bytes = Vec::with_capacity(256);
        match value.write_json_checked(&mut bytes) {
            Ok(()) => {}
            // Nesting too deep to read back, or a float JSON cannot hold:
            // refused now, not when a read fails.
            Err(source @ (ValueError::TooDeep { .. } | ValueError::NonFinite { .. })) => {
                return Err(Error::Value {
                    operation: "serialize",
                    channel: channel.to_owned(),
                    source,
                });
            }
            Err(_) => {
                // Serialize again with path tracking, only to say where it failed.
                let mut serializer = serde_json::Serializer::new(std::io::sink());
                let err = serde_path_to_error::serialize(value, &mut serializer).err();
                let (path, message) = located(err);
                return Err(Error::Value {
                    operation: "serialize",
                    channel: channel.to_owned(),
                    source: ValueError::Serialize {
                        type_name: value.type_name(),
                        path,
                        message,
                    },
                });
            }
        }
        // More than a backend is asked to hold in one value (PostgreSQL and
        // SQLite refuse about a gigabyte with their own raw errors).
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(Error::Value {
                operation: "serialize",
                channel: channel.to_owned(),
                source: ValueError::TooLarge {
                    limit: MAX_VALUE_BYTES,
                },
            });
        }
        Ok(Encoded {
            tag: Self::TAG.to_owned(),
            bytes,
        })
    }

    fn loads(&self, channel: &str, tag: &str, bytes: &[u8]) -> Result<Value> {
        match tag {
            Self::NULL_TAG => Ok(Value::null()),
            Self::TAG => match serde_json::from_slice::<serde_json::Value>(bytes) {
                Ok(json) => Ok(Value::from_json(json)),
                Err(_) => {
                    // Parse again with path tracking, only to say where it failed.
                    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
                    let err =
                        serde_path_to_error::deserialize::<_, serde_json::Value>(&mut deserializer)
                            .err();
                    let (path, message) = located(err);
                    Err(Error::Value {
                        operation: "deserialize",
                        channel: channel.to_owned(),
                        source: ValueError::Decode {
                            expected: "JSON",
                            path,
                            message,
                        },
                    })
                }
            },
            other => Err(Error::UnknownTag {
                tag: other.to_owned(),
            }),
        }
    }
}

/// The path and message of a path-tracked serde_json failure.
fn located(err: Option<serde_path_to_error::Error<serde_json::Error>>) -> (String, String) {
    match err {
        Some(err) => (err.path().to_string(), err.inner().to_string()),
        None => (
            ".".to_owned(),
            "serde_json failed only without path tracking".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn cp_ser_01_round_trip_and_unknown_tags() {
        let serde = JsonSerializer;
        let value = Value::new(vec![json!({"a": [1, 2.5, "x", null, true]})]);
        let encoded = serde.dumps("ch", &value).unwrap();
        assert_eq!(encoded.tag, "json");
        assert_eq!(
            serde.loads("ch", &encoded.tag, &encoded.bytes).unwrap(),
            value
        );
        let err = serde.loads("ch", "pickle", b"...").unwrap_err();
        assert!(matches!(err, Error::UnknownTag { ref tag } if tag == "pickle"));
        assert_eq!(serde.loads("ch", "null", b"").unwrap(), Value::null());
    }

    #[test]
    fn cp_ser_09_encode_errors_name_channel_and_path() {
        let mut bad = HashMap::new();
        bad.insert(vec![1], "sequence keys are not JSON");
        let value = Value::new(json_wrapper(bad));
        let err = JsonSerializer.dumps("docs", &value).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"docs\""), "{text}");
        assert!(text.contains("inner"), "{text}");
    }

    #[test]
    fn cp_ser_decode_errors_name_the_position() {
        let err = JsonSerializer
            .loads("ch", "json", b"{\"a\": [1, }")
            .unwrap_err();
        assert!(err.to_string().contains("\"ch\""), "{err}");
    }

    #[test]
    fn values_larger_than_the_limit_are_refused() {
        // One byte over (the quotes take two); CP-LIM-07 stores one of the
        // limit on every serializing saver.
        let over = Value::new("x".repeat(MAX_VALUE_BYTES - 1));
        let err = JsonSerializer.dumps("big", &over).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Value { channel, source: ValueError::TooLarge { limit }, .. }
                    if channel == "big" && *limit == MAX_VALUE_BYTES
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "serialize failed for channel \"big\": value is larger than 67108864 bytes as JSON"
        );
    }

    #[derive(serde::Serialize)]
    struct Wrapper {
        inner: HashMap<Vec<i32>, &'static str>,
    }

    fn json_wrapper(inner: HashMap<Vec<i32>, &'static str>) -> Wrapper {
        Wrapper { inner }
    }
}
