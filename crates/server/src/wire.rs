//! How values look on the wire: times, new ids, and the JSON containment
//! every backend filters by.

use serde_json::Value;

/// A time as the API writes it (API.md 1.2): ISO 8601 with microseconds
/// and `+00:00`.
pub(crate) fn timestamp(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

/// A time field in the API's form ([`timestamp`]), both ways
/// (`#[serde(with = "crate::wire::api_time")]`).
pub(crate) mod api_time {
    use chrono::{DateTime, Utc};
    use serde::Deserialize;

    pub(crate) fn serialize<S: serde::Serializer>(
        time: &DateTime<Utc>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::timestamp(*time))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(deserializer)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|time| time.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

/// A new id of a thread or run: a UUID whose leading bits are the time
/// (version 7), as the official server makes them.
pub(crate) fn time_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A new random id (version 4), as the official server gives a copied
/// thread.
pub(crate) fn random_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Whether `have` contains `wanted`, as PostgreSQL's `jsonb @>` decides:
/// an object contains every key of `wanted` with a value that contains
/// `wanted`'s; an array contains each element of `wanted` in one of its
/// own; other values must be equal (filters are objects, so `@>`'s one
/// exception, a top-level array holding a scalar, never arises). Every repository filters with this one
/// rule, so memory, SQLite and PostgreSQL agree.
pub(crate) fn contains(have: &Value, wanted: &Value) -> bool {
    match (have, wanted) {
        (Value::Object(have), Value::Object(wanted)) => wanted
            .iter()
            .all(|(key, wanted)| have.get(key).is_some_and(|have| contains(have, wanted))),
        (Value::Array(have), Value::Array(wanted)) => wanted
            .iter()
            .all(|wanted| have.iter().any(|have| contains(have, wanted))),
        (have, wanted) => have == wanted,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn timestamps_have_microseconds_and_an_offset() {
        let time = chrono::DateTime::parse_from_rfc3339("2026-11-22T02:08:15.586601Z")
            .map(|t| t.with_timezone(&chrono::Utc));
        assert_eq!(
            time.map(timestamp).ok().as_deref(),
            Some("2026-11-22T02:08:15.586601+00:00")
        );
    }

    #[test]
    fn new_ids_are_time_ordered_uuids() {
        let first = time_ordered_id();
        let parsed = uuid::Uuid::parse_str(&first).ok();
        assert_eq!(parsed.map(|id| id.get_version_num()), Some(7));
        assert_eq!(
            uuid::Uuid::parse_str(&random_id())
                .ok()
                .map(|id| id.get_version_num()),
            Some(4)
        );
    }

    #[test]
    fn containment_follows_jsonb() {
        let have = json!({"a": 1, "b": {"c": [1, 2, {"d": 3}]}, "s": "x"});
        assert!(contains(&have, &json!({})));
        assert!(contains(&have, &json!({"a": 1})));
        assert!(contains(&have, &json!({"b": {"c": [2]}})));
        assert!(contains(&have, &json!({"b": {"c": [{"d": 3}, 1]}})));
        assert!(!contains(&have, &json!({"a": 2})));
        assert!(!contains(&have, &json!({"z": null})));
        assert!(!contains(&have, &json!({"b": {"c": [4]}})));
        assert!(!contains(&json!({"a": [1, 2]}), &json!({"a": 1})));
        assert!(!contains(&json!({"a": 1}), &json!([{"a": 1}])));
        assert!(contains(&json!({"a": null}), &json!({"a": null})));
    }
}
