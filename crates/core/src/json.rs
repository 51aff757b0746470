//! Small JSON helpers shared by the backends: Python-compatible equality,
//! dotted-path lookup, and the one nesting limit every value obeys.

use serde_json::Value as Json;

/// The deepest nesting of arrays and objects a value may have: what
/// serde_json, which every backend reads values back with, accepts (it
/// refuses the 128th level). Writes share the limit: savers and stores
/// refuse a deeper value when it is written, never when it is read, and
/// values entering a run (input, `Command`, resume answers) or a store are
/// checked against it before anything recurses into them.
pub const MAX_DEPTH: usize = 127;

/// Whether `value` nests arrays and objects deeper than `limit` levels.
/// Iterative: constant stack, however deep the value.
pub fn deeper_than(value: &Json, limit: usize) -> bool {
    let mut pending: Vec<(&Json, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = pending.pop() {
        if !(value.is_array() || value.is_object()) {
            continue;
        }
        if depth + 1 > limit {
            return true;
        }
        match value {
            Json::Array(items) => pending.extend(items.iter().map(|child| (child, depth + 1))),
            Json::Object(map) => pending.extend(map.values().map(|child| (child, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Drops `value` without recursion: serde_json's own drop recurses once
/// per level, which overflows the stack for a value tens of thousands of
/// levels deep. For a value refused as too deep.
pub fn drop_deep(value: Json) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Json::Array(items) => pending.extend(items),
            Json::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Equality of JSON values as Python compares the equivalent objects: numbers by
/// numeric value (`1 == 1.0`), objects regardless of key order.
pub fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Looks up a dotted path (`"user.access-level"`) inside a JSON object. A key
/// that itself contains the full remaining path wins over nested lookup, so
/// keys with dots stay reachable.
pub fn lookup_path<'a>(root: &'a Json, path: &str) -> Option<&'a Json> {
    let object = root.as_object()?;
    if let Some(value) = object.get(path) {
        return Some(value);
    }
    let (head, rest) = path.split_once('.')?;
    lookup_path(object.get(head)?, rest)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `[[[...]]]`, `depth` levels, built without recursion.
    fn nested(depth: usize) -> Json {
        (0..depth).fold(Json::Null, |inner, _| Json::Array(vec![inner]))
    }

    #[test]
    fn depth_is_measured_without_recursion() {
        assert!(!deeper_than(&json!(1), 0));
        assert!(deeper_than(&json!([]), 0));
        assert!(!deeper_than(&nested(MAX_DEPTH), MAX_DEPTH));
        assert!(deeper_than(&nested(MAX_DEPTH + 1), MAX_DEPTH));
        assert!(!deeper_than(&json!({"a": [1, {"b": 2}]}), 3));
        assert!(deeper_than(&json!({"a": [1, {"b": []}]}), 3));
        // The limit is what serde_json reads back.
        let text = serde_json::to_string(&nested(MAX_DEPTH)).unwrap();
        drop_deep(serde_json::from_str::<Json>(&text).unwrap());
        let text = serde_json::to_string(&nested(MAX_DEPTH + 1)).unwrap();
        assert!(serde_json::from_str::<Json>(&text).is_err());
    }

    #[test]
    fn a_value_100000_levels_deep_is_measured_and_dropped_on_a_small_stack() {
        let deep = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let value = nested(100_000);
                let deep = deeper_than(&value, MAX_DEPTH);
                drop_deep(value);
                deep
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(deep);
    }

    #[test]
    fn numbers_compare_numerically() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_eq(&json!(1), &json!("1")));
        assert!(json_eq(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_eq(&json!(-1), &json!(u64::MAX)));
    }

    #[test]
    fn dotted_paths_reach_nested_keys() {
        let doc = json!({"user": {"access-level": "x"}, "a.b": 1, "123abc": 2});
        assert_eq!(lookup_path(&doc, "user.access-level"), Some(&json!("x")));
        assert_eq!(lookup_path(&doc, "a.b"), Some(&json!(1)));
        assert_eq!(lookup_path(&doc, "123abc"), Some(&json!(2)));
        assert_eq!(lookup_path(&doc, "user.missing"), None);
    }
}
