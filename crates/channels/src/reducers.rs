//! Ready-made reducers for [`BinaryOperatorAggregate`](crate::BinaryOperatorAggregate).
//!
//! A reducer is any `Fn(T, T) -> T`: the current value and one write in, the
//! new value out. It receives owned values, so appending to a vector reuses the
//! vector's buffer when nothing else shares it.

use std::ops::Add;

use serde_json::Value as Json;
use stategraph_core::List;

/// List concatenation, Python's `operator.add` on lists: `a + b`, for a
/// `Vec` (extended in place when nothing else shares it) or a
/// [`List`] (shares both sides' items; see [`Concat`]).
pub fn append<L: Concat>(current: L, write: L) -> L {
    current.concat(write)
}

/// A list type the [`append`] reducer can concatenate.
pub trait Concat {
    /// `self + other`.
    #[must_use]
    fn concat(self, other: Self) -> Self;
}

impl<T> Concat for Vec<T> {
    fn concat(mut self, other: Self) -> Self {
        self.extend(other);
        self
    }
}

impl<T: Clone> Concat for List<T> {
    fn concat(self, other: Self) -> Self {
        List::concat(self, other)
    }
}

/// Sum, Python's `operator.add` on numbers.
pub fn add<T: Add<Output = T>>(current: T, write: T) -> T {
    current + write
}

/// Map merge where the write's keys win, Python's `x | y` on dicts.
pub fn merge<M>(mut current: M, write: M) -> M
where
    M: Extend<<M as IntoIterator>::Item> + IntoIterator,
{
    current.extend(write);
    current
}

/// The write replaces the value (a reducer that ignores the current value).
pub fn replace<T>(_current: T, write: T) -> T {
    write
}

/// Python's `operator.add` over JSON, for dynamic JSON state: arrays
/// concatenate, strings concatenate, numbers add (integers stay integers when
/// the sum fits), objects merge with the write's keys winning, and `null` on
/// either side yields the other side. Other combinations (Python would raise
/// `TypeError`) keep the write.
pub fn json_add(current: Json, write: Json) -> Json {
    match (current, write) {
        (Json::Array(mut a), Json::Array(b)) => {
            a.extend(b);
            Json::Array(a)
        }
        (Json::String(mut a), Json::String(b)) => {
            a.push_str(&b);
            Json::String(a)
        }
        (Json::Number(a), Json::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64())
                && let Some(sum) = x.checked_add(y)
            {
                return Json::from(sum);
            }
            let sum = a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0);
            serde_json::Number::from_f64(sum).map_or(Json::Null, Json::Number)
        }
        (Json::Object(mut a), Json::Object(b)) => {
            a.extend(b);
            Json::Object(a)
        }
        (Json::Null, other) | (other, Json::Null) => other,
        (_, write) => write,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn reducers_behave_like_python_operators() {
        assert_eq!(append(vec![1], vec![2, 3]), vec![1, 2, 3]);
        assert_eq!(add(2, 3), 5);
        let merged = merge(
            BTreeMap::from([("a", 1), ("b", 1)]),
            BTreeMap::from([("b", 2)]),
        );
        assert_eq!(merged, BTreeMap::from([("a", 1), ("b", 2)]));
        assert_eq!(replace(1, 2), 2);
        assert_eq!(json_add(json!([1]), json!([2])), json!([1, 2]));
        assert_eq!(json_add(json!("a"), json!("b")), json!("ab"));
        assert_eq!(json_add(json!(1), json!(2)), json!(3));
        assert_eq!(json_add(json!(1), json!(0.5)), json!(1.5));
        assert_eq!(
            json_add(json!({"a": 1}), json!({"a": 2, "b": 3})),
            json!({"a": 2, "b": 3})
        );
        assert_eq!(json_add(json!(null), json!([1])), json!([1]));
    }
}
