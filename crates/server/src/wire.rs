//! How values look on the wire: times, new ids, and the JSON containment
//! every backend filters by.

use serde_json::Value;

/// A time as the API writes it (API.md 1.2): ISO 8601 with microseconds
/// and `+00:00`, the microseconds left out when zero (Python's
/// `isoformat`: a cron's `next_run_date` is `…T08:00:00+00:00`).
pub(crate) fn timestamp(time: chrono::DateTime<chrono::Utc>) -> String {
    if time.timestamp_subsec_micros() == 0 {
        return time.format("%Y-%m-%dT%H:%M:%S+00:00").to_string();
    }
    time.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

/// A time as the SQL repositories store it to order by: always with six
/// digits of microseconds, so text order is time order.
pub(crate) fn sortable(time: chrono::DateTime<chrono::Utc>) -> String {
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

/// Whether `metadata` contains `wanted` as `jsonb @>` decides (no filter:
/// yes): the filter every search takes on metadata.
pub(crate) fn metadata_contains(
    metadata: &serde_json::Map<String, Value>,
    wanted: Option<&serde_json::Map<String, Value>>,
) -> bool {
    wanted.is_none_or(|wanted| {
        wanted
            .iter()
            .all(|(key, wanted)| metadata.get(key).is_some_and(|have| contains(have, wanted)))
    })
}

/// One page of a search's matches: `found` sorted by `order` (ties by the
/// caller's own rule, so pages are stable), then `offset` and `limit`; and
/// how many matched in all.
pub(crate) fn sorted_page<T>(
    mut found: Vec<T>,
    order: impl FnMut(&T, &T) -> std::cmp::Ordering,
    offset: usize,
    limit: usize,
) -> (Vec<T>, usize) {
    found.sort_by(order);
    let total = found.len();
    let page = found.into_iter().skip(offset).take(limit).collect();
    (page, total)
}

/// The keys a LangChain message may have.
const MESSAGE_KEYS: [&str; 15] = [
    "content",
    "additional_kwargs",
    "response_metadata",
    "type",
    "name",
    "id",
    "tool_calls",
    "invalid_tool_calls",
    "usage_metadata",
    "tool_call_id",
    "artifact",
    "status",
    "tool_call_chunks",
    "chunk_position",
    "example",
];

/// How deep [`langchain_messages`] looks for messages.
const MESSAGE_DEPTH: usize = 16;

/// Every message in `value` written as LangChain's dict form, the form the
/// official server sends: stategraph writes a message's empty fields only
/// when set (`{"type": "ai", "content": "hi", "id": ...}`), LangChain
/// writes them all (`additional_kwargs: {}`, `name: null`, `tool_calls:
/// []`, ...). A message is an object with a message `type`, a `content`,
/// and no key a message does not have.
pub(crate) fn langchain_messages(value: &mut Value) {
    fill_messages(value, MESSAGE_DEPTH);
}

fn fill_messages(value: &mut Value, depth: usize) {
    let Some(depth) = depth.checked_sub(1) else {
        return;
    };
    match value {
        Value::Array(items) => items.iter_mut().for_each(|item| fill_messages(item, depth)),
        Value::Object(map) => {
            let kind = map.get("type").and_then(Value::as_str).map(str::to_owned);
            let message = map.contains_key("content")
                && map.keys().all(|key| MESSAGE_KEYS.contains(&key.as_str()));
            match kind.as_deref() {
                Some(kind) if message => fill_message(map, kind),
                _ => map.values_mut().for_each(|item| fill_messages(item, depth)),
            }
        }
        _ => {}
    }
}

/// One message's missing fields, by its type.
fn fill_message(map: &mut serde_json::Map<String, Value>, kind: &str) {
    let empty = || Value::Object(serde_json::Map::new());
    let list = || Value::Array(Vec::new());
    let mut defaults: Vec<(&str, Value)> = vec![
        ("additional_kwargs", empty()),
        ("response_metadata", empty()),
        ("name", Value::Null),
        ("id", Value::Null),
    ];
    match kind {
        "ai" => defaults.extend([
            ("tool_calls", list()),
            ("invalid_tool_calls", list()),
            ("usage_metadata", Value::Null),
        ]),
        "AIMessageChunk" => defaults.extend([
            ("tool_calls", list()),
            ("invalid_tool_calls", list()),
            ("usage_metadata", Value::Null),
            ("tool_call_chunks", list()),
            ("chunk_position", Value::Null),
        ]),
        "tool" => defaults.extend([
            ("artifact", Value::Null),
            ("status", Value::from("success")),
        ]),
        "human" | "system" => {}
        // Not a message type LangChain writes in this form.
        _ => return,
    }
    for (key, value) in defaults {
        map.entry(key).or_insert(value);
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
    fn messages_get_langchains_dict_form() {
        let mut state = json!({
            "messages": [
                {"type": "human", "content": "hi", "id": "h"},
                {"type": "ai", "content": "", "id": "a", "tool_calls": [{"name": "t", "args": {}, "id": "c"}]},
                {"type": "tool", "content": "ok", "tool_call_id": "c", "id": "t"},
            ],
            "note": {"type": "ai", "content": "x", "extra": 1},
            "count": 1,
        });
        langchain_messages(&mut state);
        assert_eq!(
            state["messages"][0],
            json!({"type": "human", "content": "hi", "id": "h", "additional_kwargs": {}, "response_metadata": {}, "name": null})
        );
        let ai = &state["messages"][1];
        assert_eq!(
            (&ai["invalid_tool_calls"], &ai["usage_metadata"]),
            (&json!([]), &Value::Null)
        );
        assert_eq!(ai["tool_calls"][0]["name"], "t", "what was there stays");
        assert_eq!(state["messages"][2]["status"], "success");
        assert_eq!(
            state["note"],
            json!({"type": "ai", "content": "x", "extra": 1}),
            "an object with other keys is not a message"
        );
        let mut chunk =
            json!([{"type": "AIMessageChunk", "content": "He"}, {"langgraph_node": "agent"}]);
        langchain_messages(&mut chunk);
        assert_eq!(chunk[0]["chunk_position"], Value::Null);
        assert_eq!(chunk[1], json!({"langgraph_node": "agent"}));
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
