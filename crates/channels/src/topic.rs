//! `Topic`.

use std::fmt;
use std::sync::Arc;

use stategraph_core::{StateValue, Value};

use crate::{Channel, Result, decode};

/// A publish/subscribe list: every write is appended (a list write adds each
/// element). Without `accumulate` the list is emptied at every step, so it
/// holds exactly the writes of the last step; with it, everything ever written.
pub struct Topic<T> {
    // Invariant: empty means "not available".
    values: Arc<Vec<T>>,
    accumulate: bool,
}

impl<T: StateValue> Topic<T> {
    /// A topic holding the writes of the last step only.
    pub fn new() -> Self {
        Self {
            values: Arc::new(Vec::new()),
            accumulate: false,
        }
    }

    /// A topic that keeps every write across steps.
    pub fn accumulating() -> Self {
        Self {
            values: Arc::new(Vec::new()),
            accumulate: true,
        }
    }

    /// The current items.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    fn flatten(value: Value, out: &mut Vec<T>) -> Result<()> {
        let value = match value.try_live::<T>() {
            Ok(item) => {
                out.push(Arc::try_unwrap(item).unwrap_or_else(|shared| (*shared).clone()));
                return Ok(());
            }
            Err(value) => value,
        };
        let value = match value.downcast_arc::<Vec<T>>() {
            Ok(items) => {
                match Arc::try_unwrap(items) {
                    Ok(items) => out.extend(items),
                    Err(shared) => out.extend(shared.iter().cloned()),
                }
                return Ok(());
            }
            Err(value) => value,
        };
        let is_list = value.as_json().is_some_and(serde_json::Value::is_array);
        if is_list && let Ok(items) = value.clone().decode_owned::<Vec<T>>() {
            out.extend(items);
            return Ok(());
        }
        out.push(Arc::try_unwrap(decode::<T>(value)?).unwrap_or_else(|shared| (*shared).clone()));
        Ok(())
    }
}

impl<T: StateValue> Default for Topic<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Topic<T> {
    fn clone(&self) -> Self {
        Self {
            values: self.values.clone(),
            accumulate: self.accumulate,
        }
    }
}

impl<T> fmt::Debug for Topic<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topic")
            .field("len", &self.values.len())
            .field("accumulate", &self.accumulate)
            .finish()
    }
}

impl<T: StateValue> Channel for Topic<T> {
    fn get(&self) -> Option<Value> {
        if self.values.is_empty() {
            None
        } else {
            Some(Value::from_arc(self.values.clone()))
        }
    }

    fn is_available(&self) -> bool {
        !self.values.is_empty()
    }

    fn is_initial(&self) -> bool {
        self.values.is_empty()
    }

    fn copy_from(&mut self, other: &dyn Channel) -> bool {
        crate::copy_same_type(self, other)
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        let mut new_items = Vec::new();
        for value in values {
            Self::flatten(value, &mut new_items)?;
        }
        let mut updated = false;
        if !self.accumulate && !self.values.is_empty() {
            self.values = Arc::new(Vec::new());
            updated = true;
        }
        if !new_items.is_empty() {
            Arc::make_mut(&mut self.values).extend(new_items);
            updated = true;
        }
        Ok(updated)
    }

    fn checkpoint(&self) -> Option<Value> {
        Some(Value::from_arc(self.values.clone()))
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.values = match checkpoint {
            None => Arc::new(Vec::new()),
            Some(value) => decode::<Vec<T>>(value)?,
        };
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
