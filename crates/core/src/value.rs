//! Type-erased, shared, immutable values.

use std::any::{Any, type_name};
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ErrorKind;
use crate::guard;
use crate::json;

/// What a value stored in a channel must be able to do: serialize for
/// checkpoints, deserialize when read back, clone when a reducer needs an owned
/// copy of a shared value, and cross threads.
///
/// Implemented for every type with those properties; never implement it by hand.
pub trait StateValue: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {}

impl<T> StateValue for T where T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {}

/// A failure to turn a [`Value`] into JSON or into a concrete Rust type.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The value could not be serialized.
    #[error("cannot serialize value of type `{}` at `{path}`: {message}", ShortTypeName(.type_name))]
    Serialize {
        /// The Rust type of the value.
        type_name: &'static str,
        /// The path of the bad part inside the value (`.` for the value itself).
        path: String,
        /// What the serializer said.
        message: String,
    },
    /// The value nests arrays and objects deeper than
    /// [`MAX_DEPTH`](crate::json::MAX_DEPTH) levels: no backend could read
    /// it back, and walking it could overflow the stack.
    #[error("value nests deeper than {limit} levels of arrays and objects")]
    TooDeep {
        /// The limit ([`MAX_DEPTH`](crate::json::MAX_DEPTH)).
        limit: usize,
    },
    /// The value is larger than
    /// [`MAX_VALUE_BYTES`](crate::limits::MAX_VALUE_BYTES) as JSON: more
    /// than any backend is asked to store in one value.
    #[error("value is larger than {limit} bytes as JSON")]
    TooLarge {
        /// The limit ([`MAX_VALUE_BYTES`](crate::limits::MAX_VALUE_BYTES)).
        limit: usize,
    },
    /// The value holds a NaN or infinite float, which JSON cannot store
    /// (serde_json would write `null`, and a typed read would then fail).
    #[error(
        "value of type `{}` holds a NaN or infinite float, which JSON cannot store",
        ShortTypeName(.type_name)
    )]
    NonFinite {
        /// The Rust type of the value.
        type_name: &'static str,
    },
    /// The value does not have the shape of the requested type.
    #[error("cannot decode value as `{}` at `{path}`: {message}", ShortTypeName(.expected))]
    Decode {
        /// The Rust type that was requested.
        expected: &'static str,
        /// The path of the bad part inside the value (`.` for the value itself).
        path: String,
        /// What the deserializer said.
        message: String,
    },
}

/// A Rust type name as a person writes it: every path reduced to its last
/// segment (`alloc::vec::Vec<alloc::string::String>` shows as
/// `Vec<String>`).
///
/// ```
/// use stategraph_core::ShortTypeName;
///
/// let name = std::any::type_name::<Vec<Option<String>>>();
/// assert_eq!(ShortTypeName(name).to_string(), "Vec<Option<String>>");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ShortTypeName<'a>(pub &'a str);

impl fmt::Display for ShortTypeName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
        let mut rest = self.0;
        while !rest.is_empty() {
            let end = rest.find(|c: char| !is_path(c)).unwrap_or(rest.len());
            let (path, tail) = rest.split_at(end);
            f.write_str(path.rsplit("::").next().unwrap_or(path))?;
            let next = tail.find(is_path).unwrap_or(tail.len());
            f.write_str(&tail[..next])?;
            rest = &tail[next..];
        }
        Ok(())
    }
}

impl ValueError {
    /// LangGraph's exception class for the failure when it meets a typed
    /// key or a typed node input: `ValidationError` (pydantic's) for a value
    /// of the wrong shape, `ValueError` for one that cannot be read at all.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Decode { .. } => "ValidationError",
            _ => "ValueError",
        }
    }

    /// Always [`ErrorKind::Serialization`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Serialization
    }
}

/// The object-safe face of a value: downcasting plus erased serialization.
trait Object: Any + Send + Sync {
    fn as_any(&self) -> &(dyn Any + Send + Sync);
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    fn as_serialize(&self) -> &dyn erased_serde::Serialize;
    fn type_name(&self) -> &'static str;
    // JSON written by serde_json's own serializer, monomorphized for the
    // type: the erased serializer would make a dynamic call per entry.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
    // The same through the guard of `Value::write_json_checked`.
    fn write_json_guarded(
        &self,
        out: &mut Vec<u8>,
        refused: &std::cell::Cell<Option<guard::Refusal>>,
    ) -> serde_json::Result<()>;
    fn to_json_value(&self) -> serde_json::Result<serde_json::Value>;
}

impl<T: Serialize + Send + Sync + 'static> Object for T {
    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn as_serialize(&self) -> &dyn erased_serde::Serialize {
        self
    }
    fn type_name(&self) -> &'static str {
        type_name::<T>()
    }
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
    fn write_json_guarded(
        &self,
        out: &mut Vec<u8>,
        refused: &std::cell::Cell<Option<guard::Refusal>>,
    ) -> serde_json::Result<()> {
        guard::serialize(self, &mut serde_json::Serializer::new(out), refused)
    }
    fn to_json_value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
}

/// An immutable value shared by `Arc`: the currency of channels, checkpoints and
/// pending writes.
///
/// A value is either a *live* Rust value (what nodes write and channels hold; it
/// is shared between the runtime, checkpoints and the in-memory saver without
/// ever being copied or serialized) or plain JSON (what a persistent backend
/// reads back, or what a dynamic JSON state holds). [`Value::decode`] returns the
/// concrete type either way.
///
/// Cloning a `Value` is a reference-count increment (nothing at all for
/// `null`, which every edge of a graph writes and is held inline).
#[derive(Clone)]
pub struct Value(Repr);

#[derive(Clone)]
enum Repr {
    /// JSON `null`, without an allocation or a reference count.
    Null,
    Shared(Arc<dyn Object>),
}

/// What an inline `null` reads as.
static NULL_JSON: serde_json::Value = serde_json::Value::Null;

impl Value {
    /// Wraps a live value (a `Value` is returned as is, never nested).
    pub fn new<T: Serialize + Send + Sync + 'static>(value: T) -> Self {
        let mut slot = Some(value);
        let any: &mut dyn Any = &mut slot;
        if let Some(inner) = any.downcast_mut::<Option<Value>>().and_then(Option::take) {
            return inner;
        }
        match slot {
            Some(value) => Self(Repr::Shared(Arc::new(value))),
            None => unreachable!("taken only when T is Value, which returned above"),
        }
    }

    /// Wraps a live value that is already shared, without copying it (a
    /// shared `Value` is returned as is, never nested).
    pub fn from_arc<T: Serialize + Send + Sync + 'static>(value: Arc<T>) -> Self {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<Value>() {
            let any: Arc<dyn Any + Send + Sync> = value.clone();
            if let Ok(inner) = any.downcast::<Value>() {
                return (*inner).clone();
            }
        }
        Self(Repr::Shared(value))
    }

    /// Wraps plain JSON.
    pub fn from_json(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Self::null(),
            value => Self(Repr::Shared(Arc::new(value))),
        }
    }

    /// The JSON `null` value (held inline: no allocation, no reference count).
    pub const fn null() -> Self {
        Self(Repr::Null)
    }

    /// Whether this is the inline `null` of [`Value::null`] (a `null`
    /// shared some other way reads the same but answers `false`).
    pub const fn is_inline_null(&self) -> bool {
        matches!(self.0, Repr::Null)
    }

    /// What the value holds.
    fn object(&self) -> &dyn Object {
        match &self.0 {
            Repr::Null => &NULL_JSON,
            Repr::Shared(object) => &**object,
        }
    }

    /// Whether this value holds a live `T` (not JSON that would decode to one).
    pub fn is<T: Any>(&self) -> bool {
        self.object().as_any().is::<T>()
    }

    /// The live `T` inside, if this value holds one.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.object().as_any().downcast_ref::<T>()
    }

    /// The shared live `T` inside, if this value holds one; otherwise the value back.
    pub fn downcast_arc<T: Any + Send + Sync>(self) -> Result<Arc<T>, Self> {
        if !self.is::<T>() {
            return Err(self);
        }
        let any = match self.0 {
            // Asked for as shared JSON: the only copy an inline `null` makes.
            Repr::Null => Arc::new(serde_json::Value::Null) as Arc<dyn Any + Send + Sync>,
            Repr::Shared(object) => object.into_any(),
        };
        // Checked above, so the downcast cannot fail.
        Ok(any
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("type checked before downcast")))
    }

    /// The value as a shared live `T` without any conversion: the live value
    /// when it is a `T`, the value itself when `T` is `Value`; otherwise the
    /// value back. Never serializes.
    pub fn try_live<T: Any + Send + Sync>(self) -> Result<Arc<T>, Self> {
        if let Some(value) = self.as_value_type::<T>() {
            return Ok(Arc::new(value));
        }
        self.downcast_arc::<T>()
    }

    /// The JSON inside, if this value holds plain JSON.
    pub fn as_json(&self) -> Option<&serde_json::Value> {
        self.downcast_ref::<serde_json::Value>()
    }

    /// The Rust type name of what this value holds (`serde_json::value::Value` for JSON).
    pub fn type_name(&self) -> &'static str {
        self.object().type_name()
    }

    /// Whether two values share the same allocation (every `null` made by
    /// [`Value::null`] or [`Value::from_json`] is the same).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Null, Repr::Null) => true,
            (Repr::Shared(a), Repr::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Converts the value to JSON (cloned when it already is JSON).
    ///
    /// # Errors
    /// [`ValueError::Serialize`] naming the path of the part that could not be
    /// serialized (for example a map with non-string keys).
    pub fn to_json(&self) -> Result<serde_json::Value, ValueError> {
        if let Some(json) = self.as_json() {
            return Ok(json.clone());
        }
        if let Ok(json) = self.object().to_json_value() {
            return Ok(json);
        }
        // Serialize again with path tracking, only to say where it failed.
        serde_path_to_error::serialize(self.object().as_serialize(), serde_json::value::Serializer)
            .map_err(|err| ValueError::Serialize {
                type_name: self.type_name(),
                path: err.path().to_string(),
                message: err.inner().to_string(),
            })
    }

    /// Appends the value's JSON text to `out` (what `serde_json::to_writer`
    /// writes for it, written by the value's own type: faster than
    /// serializing the `Value`, whose erased serializer makes a dynamic call
    /// per entry).
    ///
    /// # Errors
    /// The value's `Serialize` failed (a map with non-string keys, say).
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        self.object().write_json(out)
    }

    /// [`Value::write_json`] for storage: refuses what JSON could not read
    /// back. Nesting deeper than [`MAX_DEPTH`](crate::json::MAX_DEPTH) is
    /// refused before the serializer recurses further (no stack overflow,
    /// however deep the value), and so is a NaN or infinite float.
    ///
    /// # Errors
    /// [`ValueError::TooDeep`], [`ValueError::NonFinite`], or
    /// [`ValueError::Serialize`] when the value's `Serialize` failed.
    pub fn write_json_checked(&self, out: &mut Vec<u8>) -> Result<(), ValueError> {
        let refused = std::cell::Cell::new(None);
        match self.object().write_json_guarded(out, &refused) {
            Ok(()) => Ok(()),
            Err(err) => Err(match refused.get() {
                Some(guard::Refusal::TooDeep) => ValueError::TooDeep {
                    limit: json::MAX_DEPTH,
                },
                Some(guard::Refusal::NonFinite) => ValueError::NonFinite {
                    type_name: self.type_name(),
                },
                None => ValueError::Serialize {
                    type_name: self.type_name(),
                    path: ".".to_owned(),
                    message: err.to_string(),
                },
            }),
        }
    }

    /// Returns the value as a shared `T`: the live value itself when it is a `T`,
    /// otherwise `T` deserialized from its JSON form.
    ///
    /// # Errors
    /// [`ValueError::Decode`] naming the path of the first part that does not fit `T`.
    pub fn decode<T: DeserializeOwned + Send + Sync + 'static>(self) -> Result<Arc<T>, ValueError> {
        // A channel of `Value`s keeps whatever it is given, live or JSON.
        if let Some(value) = self.as_value_type::<T>() {
            return Ok(Arc::new(value));
        }
        match self.downcast_arc::<T>() {
            Ok(arc) => Ok(arc),
            Err(value) => value.decode_from_json::<T>().map(Arc::new),
        }
    }

    /// Like [`Value::decode`], but returns an owned `T`, cloning only when the
    /// live value is shared with someone else.
    ///
    /// # Errors
    /// As [`Value::decode`].
    pub fn decode_owned<T: DeserializeOwned + Clone + Send + Sync + 'static>(
        self,
    ) -> Result<T, ValueError> {
        if let Some(value) = self.as_value_type::<T>() {
            return Ok(value);
        }
        // A shared value (the usual case: channels hold it) is cloned in
        // place: no reference counting, no second type check.
        if let Repr::Shared(object) = &self.0
            && Arc::strong_count(object) > 1
            && let Some(value) = object.as_any().downcast_ref::<T>()
        {
            return Ok(value.clone());
        }
        match self.downcast_arc::<T>() {
            // Held only here: taken out, not copied.
            Ok(arc) => Ok(Arc::try_unwrap(arc).unwrap_or_else(|shared| (*shared).clone())),
            Err(value) => value.decode_from_json::<T>(),
        }
    }

    /// `Some(self)` as a `T` when `T` is `Value` itself.
    fn as_value_type<T: 'static>(&self) -> Option<T> {
        // Checked first: the clone below costs two atomic operations.
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<Value>() {
            return None;
        }
        let mut slot = Some(self.clone());
        let any: &mut dyn Any = &mut slot;
        any.downcast_mut::<Option<T>>().and_then(Option::take)
    }

    fn decode_from_json<T: DeserializeOwned>(&self) -> Result<T, ValueError> {
        let decode_error =
            |err: serde_path_to_error::Error<serde_json::Error>| ValueError::Decode {
                expected: type_name::<T>(),
                path: err.path().to_string(),
                message: err.inner().to_string(),
            };
        match self.as_json() {
            Some(json) => serde_path_to_error::deserialize(json).map_err(decode_error),
            None => {
                let json = self.to_json()?;
                serde_path_to_error::deserialize(&json).map_err(decode_error)
            }
        }
    }
}

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // JSON, the common case, is serialized directly: through the erased
        // serializer every nested entry would cost a dynamic call.
        match self.as_json() {
            Some(json) => json.serialize(serializer),
            None => erased_serde::serialize(self.object().as_serialize(), serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(Self::from_json)
    }
}

impl From<serde_json::Value> for Value {
    fn from(value: serde_json::Value) -> Self {
        Self::from_json(value)
    }
}

/// Values are equal when their JSON forms are equal, with numbers compared by
/// numeric value (`1 == 1.0`, as in Python). Values that cannot be serialized
/// are equal only to themselves.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        match (self.to_json(), other.to_json()) {
            (Ok(a), Ok(b)) => json::json_eq(&a, &b),
            _ => false,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_json() {
            Ok(json) if self.as_json().is_some() => write!(f, "{json}"),
            Ok(json) => write!(f, "{}({json})", self.type_name()),
            Err(err) => write!(f, "{}(<{err}>)", self.type_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    fn nested(depth: usize) -> serde_json::Value {
        (0..depth).fold(serde_json::Value::Null, |inner, _| json!([inner]))
    }

    /// A recursive Rust type of wrappers only: it serializes as `null`,
    /// but recursing through it could overflow the stack.
    #[derive(Serialize)]
    struct Chain(Option<Box<Chain>>);

    #[test]
    fn storage_json_refuses_what_json_cannot_read_back() {
        let mut out = Vec::new();
        Value::new(nested(json::MAX_DEPTH))
            .write_json_checked(&mut out)
            .unwrap();
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
        for value in [
            Value::new(nested(json::MAX_DEPTH + 1)),
            Value::new(json!({"a": nested(json::MAX_DEPTH)})),
        ] {
            let err = value.write_json_checked(&mut Vec::new()).unwrap_err();
            assert!(matches!(err, ValueError::TooDeep { limit: 127 }), "{err}");
        }
        for value in [
            Value::new(f64::NAN),
            Value::new(vec![1.0_f32, f32::INFINITY]),
            Value::new(HashMap::from([("x", f64::NEG_INFINITY)])),
        ] {
            let err = value.write_json_checked(&mut Vec::new()).unwrap_err();
            assert!(matches!(err, ValueError::NonFinite { .. }), "{err}");
        }
        let mut out = Vec::new();
        Value::new(vec![1.5, -0.0])
            .write_json_checked(&mut out)
            .unwrap();
        assert_eq!(out, b"[1.5,-0.0]");
    }

    #[test]
    fn a_live_value_100000_levels_deep_is_refused_on_a_small_stack() {
        let refused = std::thread::Builder::new()
            // Room for 127 levels of a debug build's frames, far from 100,000.
            .stack_size(1024 * 1024)
            .spawn(|| {
                let mut chain = Chain(None);
                for _ in 0..100_000 {
                    chain = Chain(Some(Box::new(chain)));
                }
                let value = Value::new(chain);
                let err = value.write_json_checked(&mut Vec::new()).unwrap_err();
                // Unlink the chain without recursion before it drops.
                let Ok(chain) = value.downcast_arc::<Chain>() else {
                    unreachable!("a Chain was wrapped")
                };
                let mut next = Arc::into_inner(chain).and_then(|c| c.0);
                while let Some(link) = next {
                    next = link.0;
                }
                err
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(matches!(refused, ValueError::TooDeep { .. }), "{refused}");
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Joke {
        subject: String,
        rating: u8,
    }

    #[test]
    fn live_values_are_shared_not_copied() {
        let joke = Arc::new(Joke {
            subject: "cats".into(),
            rating: 3,
        });
        let value = Value::from_arc(joke.clone());
        let copy = value.clone();
        assert!(copy.ptr_eq(&value));
        let back = copy.decode::<Joke>().unwrap();
        assert!(Arc::ptr_eq(&back, &joke));
    }

    #[test]
    fn json_decodes_into_typed_values() {
        let value = Value::from_json(json!({"subject": "dogs", "rating": 5}));
        let joke = value.decode_owned::<Joke>().unwrap();
        assert_eq!(
            joke,
            Joke {
                subject: "dogs".into(),
                rating: 5
            }
        );
    }

    #[test]
    fn live_values_of_another_type_convert_through_json() {
        let value = Value::new(json!({"subject": "owls", "rating": 1}));
        assert_eq!(value.decode_owned::<Joke>().unwrap().subject, "owls");
        let typed = Value::new(Joke {
            subject: "emus".into(),
            rating: 2,
        });
        let as_json = typed.decode_owned::<serde_json::Value>().unwrap();
        assert_eq!(as_json, json!({"subject": "emus", "rating": 2}));
    }

    #[test]
    fn decode_errors_name_the_path_and_type() {
        let value = Value::from_json(
            json!([{"subject": "a", "rating": 1}, {"subject": "b", "rating": "high"}]),
        );
        let err = value.decode::<Vec<Joke>>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("[1].rating"), "{text}");
        assert!(text.contains("Joke"), "{text}");
        assert_eq!(err.kind(), ErrorKind::Serialization);
    }

    #[test]
    fn serialize_errors_name_the_path() {
        let mut bad = HashMap::new();
        bad.insert((1, 2), "tuple keys are not JSON");
        let value = Value::new(vec![bad]);
        let err = value.to_json().unwrap_err();
        assert!(
            matches!(err, ValueError::Serialize { ref path, .. } if path.starts_with("[0]")),
            "{err}"
        );
    }

    #[test]
    fn json_text_is_what_serde_json_writes() {
        let joke = Joke {
            subject: "a \"quoted\" \u{e9}".into(),
            rating: 9,
        };
        let values = [
            Value::from_json(json!({"b": [1, 2.5, null], "a": "x\ny"})),
            Value::new(joke),
            Value::new(vec![Value::new(1_u8), Value::from_json(json!({"k": true}))]),
            Value::null(),
        ];
        for value in values {
            let mut text = b"prefix:".to_vec();
            value.write_json(&mut text).unwrap();
            let expected = [b"prefix:".to_vec(), serde_json::to_vec(&value).unwrap()].concat();
            assert_eq!(text, expected);
        }
        let mut bad = HashMap::new();
        bad.insert((1, 2), "tuple keys are not JSON");
        assert!(Value::new(bad).write_json(&mut Vec::new()).is_err());
    }

    #[test]
    fn equality_is_by_json_form_with_numeric_numbers() {
        assert_eq!(Value::new(1_i64), Value::from_json(json!(1.0)));
        assert_eq!(Value::new(vec!["a"]), Value::from_json(json!(["a"])));
        assert_ne!(Value::new("a"), Value::new("b"));
    }

    #[test]
    fn serde_round_trip_goes_through_json() {
        let value = Value::new(Joke {
            subject: "x".into(),
            rating: 9,
        });
        let text = serde_json::to_string(&value).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert!(back.as_json().is_some());
        assert_eq!(back, value);
    }

    #[test]
    fn values_never_nest() {
        let inner = Value::new(1_u8);
        assert!(Value::new(inner.clone()).ptr_eq(&inner));
        assert!(Value::from_arc(Arc::new(inner.clone())).ptr_eq(&inner));
    }

    #[test]
    fn decoding_as_value_keeps_the_value() {
        let value = Value::new(vec![1, 2]);
        let same = value.clone().decode::<Value>().unwrap();
        assert!(same.ptr_eq(&value));
        assert!(
            value
                .clone()
                .decode_owned::<Value>()
                .unwrap()
                .ptr_eq(&value)
        );
    }

    #[test]
    fn null_is_shared() {
        assert!(Value::null().ptr_eq(&Value::null()));
    }

    #[test]
    fn null_is_json_null_everywhere() {
        let null = Value::null();
        assert!(null.ptr_eq(&Value::from_json(serde_json::Value::Null)));
        assert_eq!(null.as_json(), Some(&serde_json::Value::Null));
        assert_eq!(null.type_name(), Value::from_json(json!(1)).type_name());
        assert_eq!(null.to_json().unwrap(), serde_json::Value::Null);
        assert_eq!(serde_json::to_string(&null).unwrap(), "null");
        let mut text = Vec::new();
        null.write_json(&mut text).unwrap();
        assert_eq!(text, b"null");
        assert_eq!(null, Value::new(serde_json::Value::Null));
        assert_eq!(
            null.clone().decode::<Option<i64>>().unwrap().as_ref(),
            &None
        );
        let shared = null.clone().downcast_arc::<serde_json::Value>().unwrap();
        assert_eq!(*shared, serde_json::Value::Null);
        assert!(null.downcast_arc::<String>().is_err());
        assert_eq!(Value::null().to_json().unwrap(), serde_json::Value::Null);
    }
}
