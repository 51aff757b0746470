//! Small JSON helpers shared by the backends: Python-compatible equality and
//! dotted-path lookup.

use serde_json::Value as Json;

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
