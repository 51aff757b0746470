//! Channel values decoded once per read of several checkpoints.

use std::collections::HashMap;

use crate::{ChannelVersion, Result, Value};

/// The channel values a saver decoded while reading several checkpoints
/// (a `list` page), by thread, namespace, channel and version: checkpoints
/// that name the same version share one decoded value instead of each
/// decoding a copy of it. A read of one checkpoint needs none.
#[derive(Debug, Default)]
pub struct DecodedValues(HashMap<(String, String, String, ChannelVersion), Option<Value>>);

impl DecodedValues {
    /// The value of `channel` at `version` (`None`: stored without a
    /// value), from `cache` when an earlier checkpoint of the read decoded
    /// it, else from `decode`, which `cache` then keeps. Without a cache,
    /// just `decode`.
    ///
    /// # Errors
    /// What `decode` returns.
    pub fn get_or_decode(
        cache: Option<&mut Self>,
        thread_id: &str,
        checkpoint_ns: &str,
        channel: &str,
        version: ChannelVersion,
        decode: impl FnOnce() -> Result<Option<Value>>,
    ) -> Result<Option<Value>> {
        let Some(cache) = cache else {
            return decode();
        };
        let key = (
            thread_id.to_owned(),
            checkpoint_ns.to_owned(),
            channel.to_owned(),
            version,
        );
        if let Some(value) = cache.0.get(&key) {
            return Ok(value.clone());
        }
        let value = decode()?;
        cache.0.insert(key, value.clone());
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_decoded_once_per_cache() {
        let version = ChannelVersion::new(1, 0);
        let mut cache = DecodedValues::default();
        let mut calls = 0;
        for _ in 0..3 {
            let value =
                DecodedValues::get_or_decode(Some(&mut cache), "t", "", "c", version, || {
                    calls += 1;
                    Ok(Some(Value::new(7)))
                })
                .unwrap();
            assert_eq!(value.unwrap().to_json().unwrap(), serde_json::json!(7));
        }
        assert_eq!(calls, 1);
        let other = ChannelVersion::new(2, 0);
        DecodedValues::get_or_decode(Some(&mut cache), "t", "", "c", other, || {
            calls += 1;
            Ok(None)
        })
        .unwrap();
        DecodedValues::get_or_decode(None, "t", "", "c", version, || {
            calls += 1;
            Ok(None)
        })
        .unwrap();
        assert_eq!(calls, 3, "another version and no cache both decode");
    }
}
