//! `BinaryOperatorAggregate` (reducer channels) and `Overwrite`.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use stategraph_core::{StateValue, Value};

use crate::{Channel, ChannelError, Result};

/// The marker key of an overwrite written as JSON: `{"__overwrite__": value}`.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// Writes through a reducer channel without calling the reducer: the value
/// replaces the channel's content. Two overwrites of one channel in one step
/// are an error.
///
/// Serializes as `{"__overwrite__": value}`, and that JSON shape (or
/// `{"type": "__overwrite__", "value": value}`) is recognised on write too.
#[derive(Clone, Debug, PartialEq)]
pub struct Overwrite<T>(pub T);

impl<T: Serialize> Serialize for Overwrite<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(OVERWRITE_KEY, &self.0)?;
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Overwrite<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped<T> {
            #[serde(rename = "__overwrite__")]
            value: T,
        }
        Wrapped::deserialize(deserializer).map(|wrapped| Self(wrapped.value))
    }
}

type Reducer<T> = Arc<dyn Fn(T, T) -> T + Send + Sync>;

/// Folds every write into the value with a reducer: `value = reducer(value, write)`,
/// writes applied in the order given (task order).
///
/// Created with [`BinaryOperatorAggregate::new`] the channel starts at
/// `T::default()` (LangGraph starts at `typ()`: `[]`, `0`, `{}`), so it is
/// readable before the first write. An [`Overwrite`] write replaces the value.
///
/// ```
/// use stategraph_channels::{BinaryOperatorAggregate, Channel, Overwrite, reducers};
/// use stategraph_core::Value;
///
/// let mut jokes = BinaryOperatorAggregate::new(reducers::append::<Vec<String>>);
/// jokes.update(vec![Value::new(vec!["a".to_string()]), Value::new(vec!["b".to_string()])]).unwrap();
/// assert_eq!(jokes.value().unwrap(), &["a", "b"]);
/// jokes.update(vec![Value::new(Overwrite(vec!["c".to_string()]))]).unwrap();
/// assert_eq!(jokes.value().unwrap(), &["c"]);
/// ```
pub struct BinaryOperatorAggregate<T> {
    value: Option<Arc<T>>,
    // Makes what `restore(None)` goes back to (a constructor, not a shared
    // value, so the first reduction never has to copy a shared default).
    initial: Option<fn() -> T>,
    reducer: Reducer<T>,
}

enum Write<T> {
    Plain(Arc<T>),
    Overwrite(Arc<T>),
}

impl<T: StateValue> BinaryOperatorAggregate<T> {
    /// A channel that starts at `T::default()`.
    pub fn new(reducer: impl Fn(T, T) -> T + Send + Sync + 'static) -> Self
    where
        T: Default,
    {
        Self {
            value: Some(Arc::new(T::default())),
            initial: Some(T::default),
            reducer: Arc::new(reducer),
        }
    }

    /// A channel that starts at `initial()` (for types whose `Default` is not
    /// the right starting value, such as a JSON list).
    pub fn with_initial(
        reducer: impl Fn(T, T) -> T + Send + Sync + 'static,
        initial: fn() -> T,
    ) -> Self {
        Self {
            value: Some(Arc::new(initial())),
            initial: Some(initial),
            reducer: Arc::new(reducer),
        }
    }

    /// A channel that starts empty; its first write becomes the value as is.
    pub fn empty(reducer: impl Fn(T, T) -> T + Send + Sync + 'static) -> Self {
        Self {
            value: None,
            initial: None,
            reducer: Arc::new(reducer),
        }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.value.as_deref()
    }

    /// Folds a plain write into the value with the reducer.
    fn reduce(&mut self, value: Arc<T>) {
        self.value = Some(match self.value.take() {
            None => value,
            Some(current) => Arc::new((self.reducer)(
                unwrap_or_clone(current),
                unwrap_or_clone(value),
            )),
        });
    }

    fn classify(value: Value) -> Result<Write<T>> {
        let value = match value.downcast_arc::<Overwrite<T>>() {
            Ok(overwrite) => return Ok(Write::Overwrite(Arc::new(unwrap_or_clone(overwrite).0))),
            Err(value) => value,
        };
        // JSON first: for a `serde_json::Value` channel the overwrite shape is
        // also a plain `T`.
        if let Some(inner) = value.as_json().and_then(overwrite_inner) {
            return decode_json::<T>(inner).map(Write::Overwrite);
        }
        let value = match value.try_live::<T>() {
            Ok(plain) => return Ok(Write::Plain(plain)),
            Err(value) => value,
        };
        let json = value.to_json()?;
        match overwrite_inner(&json) {
            Some(inner) => decode_json::<T>(inner).map(Write::Overwrite),
            None => decode_json::<T>(&json).map(Write::Plain),
        }
    }
}

fn overwrite_inner(json: &serde_json::Value) -> Option<&serde_json::Value> {
    let object = json.as_object()?;
    if object.len() == 1
        && let Some(inner) = object.get(OVERWRITE_KEY)
    {
        return Some(inner);
    }
    if object.get("type").and_then(serde_json::Value::as_str) == Some(OVERWRITE_KEY) {
        return object.get("value");
    }
    None
}

fn decode_json<T: DeserializeOwned + Send + Sync + 'static>(
    json: &serde_json::Value,
) -> Result<Arc<T>> {
    Value::from_json(json.clone())
        .decode::<T>()
        .map_err(ChannelError::from)
}

fn unwrap_or_clone<T: Clone>(arc: Arc<T>) -> T {
    Arc::try_unwrap(arc).unwrap_or_else(|shared| (*shared).clone())
}

impl<T> Clone for BinaryOperatorAggregate<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            initial: self.initial,
            reducer: self.reducer.clone(),
        }
    }
}

impl<T> fmt::Debug for BinaryOperatorAggregate<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinaryOperatorAggregate")
            .field("available", &self.value.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: StateValue> Channel for BinaryOperatorAggregate<T> {
    fn get(&self) -> Option<Value> {
        self.value.clone().map(Value::from_arc)
    }

    fn is_available(&self) -> bool {
        self.value.is_some()
    }

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        if values.is_empty() {
            return Ok(false);
        }
        // Decode and validate everything first, so a bad step changes nothing.
        let writes = values
            .into_iter()
            .map(Self::classify)
            .collect::<Result<Vec<_>>>()?;
        let overwrites = writes
            .iter()
            .filter(|w| matches!(w, Write::Overwrite(_)))
            .count();
        if overwrites > 1 {
            return Err(ChannelError::invalid(
                "Can receive only one Overwrite value per super-step.\nFor troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE",
            ));
        }
        let mut seen_overwrite = false;
        for write in writes {
            match write {
                Write::Overwrite(value) => {
                    self.value = Some(value);
                    seen_overwrite = true;
                }
                // After an overwrite, the step's other writes are ignored.
                Write::Plain(_) if seen_overwrite => {}
                Write::Plain(value) => self.reduce(value),
            }
        }
        Ok(true)
    }

    fn update_one(&mut self, value: Value) -> Result<bool> {
        match Self::classify(value)? {
            Write::Overwrite(value) => self.value = Some(value),
            Write::Plain(value) => self.reduce(value),
        }
        Ok(true)
    }

    fn checkpoint(&self) -> Option<Value> {
        self.get()
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.value = match checkpoint {
            None => self.initial.map(|make| Arc::new(make())),
            Some(value) => Some(value.decode::<T>()?),
        };
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
