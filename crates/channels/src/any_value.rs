//! `AnyValue`.

use std::fmt;
use std::sync::Arc;

use stategraph_core::{StateValue, Value};

use crate::{Channel, Result, decode};

/// Keeps the last of any number of writes in a step; a step with no write
/// clears it. Use it when parallel writers are known to agree.
pub struct AnyValue<T> {
    value: Option<Arc<T>>,
}

impl<T: StateValue> AnyValue<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self { value: None }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.value.as_deref()
    }
}

impl<T: StateValue> Default for AnyValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for AnyValue<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
        }
    }
}

impl<T> fmt::Debug for AnyValue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyValue")
            .field("available", &self.value.is_some())
            .finish()
    }
}

impl<T: StateValue> Channel for AnyValue<T> {
    fn get(&self) -> Option<Value> {
        self.value.clone().map(Value::from_arc)
    }

    fn is_available(&self) -> bool {
        self.value.is_some()
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        match values.into_iter().next_back() {
            Some(last) => {
                self.value = Some(decode(last)?);
                Ok(true)
            }
            None => Ok(self.value.take().is_some()),
        }
    }

    fn checkpoint(&self) -> Option<Value> {
        self.get()
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.value = checkpoint.map(decode).transpose()?;
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
