//! Search filters: one meaning for every backend.
//!
//! A filter is a JSON object of conditions that must all hold. A condition
//! is `"key": value` (the item's value at `key` equals `value`, lists and
//! objects compared whole) or `"key": {"$op": operand, ...}` with `$eq`,
//! `$ne`, `$gt`, `$gte`, `$lt`, `$lte`. Keys are dotted paths of
//! `[A-Za-z0-9_-]` segments (`user.access-level`), a top-level key spelled
//! like the whole path found first; anything else is
//! [`StoreError::InvalidFilterKey`], so no key is ever read as code.
//!
//! Numbers compare as numbers, exactly: integers as integers (so
//! `9007199254740993 > 9007199254740992`), otherwise as floats (NaN matches
//! nothing). Strings compare by code point, booleans only with booleans;
//! operands of different types never match (and never fail).

use std::cmp::Ordering;

use serde_json::{Number, Value as Json};
use stategraph_core::JsonMap;

use crate::{Result, StoreError};

/// A checked filter, ready to match values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<Condition>,
}

/// A key, its path, and what must hold of the value there.
type Condition = (String, Vec<String>, Vec<(Operator, Json)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Filter {
    /// Checks `filter`'s keys and operators.
    ///
    /// # Errors
    /// [`StoreError::InvalidFilterKey`] for a key that is not a dotted path
    /// of `[A-Za-z0-9_-]` segments; [`StoreError::InvalidFilter`] for an
    /// unknown `$` operator.
    pub fn new(filter: &JsonMap) -> Result<Self> {
        let mut conditions = Vec::with_capacity(filter.len());
        for (key, condition) in filter {
            let path = parse_key(key)?;
            let operators = match condition {
                Json::Object(map) if map.keys().any(|k| k.starts_with('$')) => map
                    .iter()
                    .map(|(op, operand)| Ok((operator(key, op)?, operand.clone())))
                    .collect::<Result<Vec<_>>>()?,
                value => vec![(Operator::Eq, value.clone())],
            };
            conditions.push((key.clone(), path, operators));
        }
        Ok(Self { conditions })
    }

    /// Whether the filter has no condition.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Whether `value` meets every condition.
    pub fn matches(&self, value: &JsonMap) -> bool {
        self.conditions.iter().all(|(key, path, operators)| {
            let found = lookup(value, key, path);
            operators
                .iter()
                .all(|(op, operand)| holds(*op, found, operand))
        })
    }
}

fn parse_key(key: &str) -> Result<Vec<String>> {
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let segments: Vec<&str> = key.split('.').collect();
    if segments.iter().all(|s| segment_ok(s)) {
        Ok(segments.into_iter().map(str::to_owned).collect())
    } else {
        Err(StoreError::InvalidFilterKey {
            key: key.to_owned(),
        })
    }
}

fn operator(key: &str, op: &str) -> Result<Operator> {
    Ok(match op {
        "$eq" => Operator::Eq,
        "$ne" => Operator::Ne,
        "$gt" => Operator::Gt,
        "$gte" => Operator::Gte,
        "$lt" => Operator::Lt,
        "$lte" => Operator::Lte,
        other => {
            return Err(StoreError::InvalidFilter {
                key: key.to_owned(),
                message: format!("unknown operator `{other}` (use $eq, $ne, $gt, $gte, $lt, $lte)"),
            });
        }
    })
}

/// The value at a dotted path: a top-level key spelled like the whole path
/// (`"user.role"`) is found first, else the path is followed segment by
/// segment (`{"user": {"role": ...}}`).
fn lookup<'a>(value: &'a JsonMap, key: &str, path: &[String]) -> Option<&'a Json> {
    if path.len() > 1
        && let Some(found) = value.get(key)
    {
        return Some(found);
    }
    let (first, rest) = path.split_first()?;
    let mut current = value.get(first)?;
    for segment in rest {
        current = current.as_object()?.get(segment)?;
    }
    Some(current)
}

fn holds(op: Operator, found: Option<&Json>, operand: &Json) -> bool {
    match op {
        Operator::Eq => found.is_some_and(|v| equal(v, operand)),
        Operator::Ne => !found.is_some_and(|v| equal(v, operand)),
        Operator::Gt => compare(found, operand) == Some(Ordering::Greater),
        Operator::Gte => matches!(
            compare(found, operand),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        Operator::Lt => compare(found, operand) == Some(Ordering::Less),
        Operator::Lte => matches!(
            compare(found, operand),
            Some(Ordering::Less | Ordering::Equal)
        ),
    }
}

/// JSON equality with numbers compared by value (`1 == 1.0`).
fn equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

fn compare(found: Option<&Json>, operand: &Json) -> Option<Ordering> {
    match (found?, operand) {
        (Json::Number(a), Json::Number(b)) => compare_numbers(a, b),
        (Json::String(a), Json::String(b)) => Some(a.cmp(b)),
        (Json::Bool(a), Json::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// Exact for integers of any sign and size serde_json holds; floats
/// otherwise (NaN is unordered). An integer beyond 2^53 compared with a
/// float is compared through `i128`/`f64` carefully so neither side rounds
/// into the other.
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => compare_int_float(x, b.as_f64()?),
        (None, Some(y)) => compare_int_float(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn compare_int_float(int: i128, float: f64) -> Option<Ordering> {
    if float.is_nan() {
        return None;
    }
    if float >= 1.8e38 {
        return Some(Ordering::Less);
    }
    if float <= -1.8e38 {
        return Some(Ordering::Greater);
    }
    let whole = float.trunc();
    // `whole` is integral and within i128, so the cast is exact.
    let whole_int = whole as i128;
    match int.cmp(&whole_int) {
        Ordering::Equal => 0.0_f64.partial_cmp(&(float - whole)),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(value: Json) -> Result<Filter> {
        Filter::new(value.as_object().unwrap())
    }

    fn matches(f: Json, value: Json) -> bool {
        filter(f).unwrap().matches(value.as_object().unwrap())
    }

    #[test]
    fn equality_operators_and_paths() {
        assert!(matches(
            json!({"author": "Alice"}),
            json!({"author": "Alice"})
        ));
        assert!(!matches(
            json!({"author": "Alice"}),
            json!({"author": "Bob"})
        ));
        assert!(matches(
            json!({"tags": ["draft"]}),
            json!({"tags": ["draft"]})
        ));
        assert!(!matches(
            json!({"tags": ["draft"]}),
            json!({"tags": ["draft", "x"]})
        ));
        let combined = json!({"score": {"$gte": 4.0}, "color": "green"});
        assert!(matches(
            combined.clone(),
            json!({"score": 4, "color": "green"})
        ));
        assert!(!matches(combined, json!({"score": 3.9, "color": "green"})));
        assert!(matches(
            json!({"user.access-level": "x"}),
            json!({"user": {"access-level": "x"}})
        ));
        assert!(matches(json!({"123abc": 1}), json!({"123abc": 1.0})));
        assert!(matches(
            json!({"user.role": "admin"}),
            json!({"user.role": "admin", "user": {"role": "guest"}})
        ));
        assert!(matches(
            json!({"user.role": "guest"}),
            json!({"user": {"role": "guest"}})
        ));
        assert!(matches(json!({"missing": {"$ne": 1}}), json!({})));
    }

    #[test]
    fn numbers_compare_as_numbers_exactly() {
        for (price, gt15) in [(10, false), (20, true), (30, true), (9, false)] {
            assert_eq!(
                matches(json!({"price": {"$gt": 15}}), json!({"price": price})),
                gt15
            );
        }
        let big = json!({"n": 9_007_199_254_740_993_u64});
        assert!(matches(
            json!({"n": {"$gt": 9_007_199_254_740_992_u64}}),
            big.clone()
        ));
        assert!(matches(
            json!({"n": {"$eq": 9_007_199_254_740_993_u64}}),
            big.clone()
        ));
        assert!(!matches(
            json!({"n": {"$eq": 9_007_199_254_740_992_u64}}),
            big.clone()
        ));
        assert!(matches(json!({"n": {"$gt": 9.0e15}}), big));
        assert!(matches(json!({"n": {"$lt": 1e100}}), json!({"n": -5})));
        assert!(matches(json!({"n": {"$gt": -1e100}}), json!({"n": -5})));
        assert!(matches(json!({"n": {"$lt": 2.5}}), json!({"n": 2})));
        assert!(!matches(json!({"n": {"$gt": 2.5}}), json!({"n": 2})));
    }

    #[test]
    fn mixed_types_never_match_and_never_fail() {
        assert!(!matches(json!({"x": {"$gt": 1}}), json!({"x": "2"})));
        assert!(!matches(json!({"active": true}), json!({"active": 1})));
        assert!(matches(json!({"active": false}), json!({"active": false})));
        assert!(!matches(json!({"x": {"$gt": "a"}}), json!({"x": 5})));
    }

    #[test]
    fn keys_that_are_not_paths_are_rejected() {
        for key in [
            "access') = 'public' OR '1'='1",
            "a b",
            "",
            "a..b",
            ".a",
            "a$",
        ] {
            let err = filter(json!({ key: 1 })).unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidFilterKey { .. }),
                "{key}: {err}"
            );
        }
        let err = filter(json!({"a": {"$like": "x"}})).unwrap_err();
        assert!(
            err.to_string().contains("unknown operator `$like`"),
            "{err}"
        );
    }

    #[test]
    fn literal_strings_stay_literal() {
        let doc = json!({"title": "O'Brien's Document"});
        assert!(matches(json!({"title": "O'Brien's Document"}), doc.clone()));
        for injected in ["' OR '1'='1", "--", "x UNION SELECT 1", "\u{0}", "O’Brien"] {
            assert!(!matches(json!({ "title": injected }), doc.clone()));
        }
    }
}
