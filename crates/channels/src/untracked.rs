//! `UntrackedValue`.

use std::fmt;
use std::sync::Arc;

use stategraph_core::{StateValue, Value};

use crate::{Channel, ChannelError, Result, decode};

/// Like [`LastValue`](crate::LastValue), but never checkpointed: its value
/// lives only for the current run. With the guard on (the default) more than
/// one write in a step is an error.
pub struct UntrackedValue<T> {
    value: Option<Arc<T>>,
    guard: bool,
}

impl<T: StateValue> UntrackedValue<T> {
    /// An empty, guarded channel.
    pub fn new() -> Self {
        Self {
            value: None,
            guard: true,
        }
    }

    /// An empty channel where the last of several writes wins.
    pub fn unguarded() -> Self {
        Self {
            value: None,
            guard: false,
        }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.value.as_deref()
    }
}

impl<T: StateValue> Default for UntrackedValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for UntrackedValue<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            guard: self.guard,
        }
    }
}

impl<T> fmt::Debug for UntrackedValue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UntrackedValue")
            .field("available", &self.value.is_some())
            .field("guard", &self.guard)
            .finish()
    }
}

impl<T: StateValue> Channel for UntrackedValue<T> {
    fn get(&self) -> Option<Value> {
        self.value.clone().map(Value::from_arc)
    }

    fn is_available(&self) -> bool {
        self.value.is_some()
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        if values.is_empty() {
            return Ok(false);
        }
        if values.len() != 1 && self.guard {
            return Err(ChannelError::invalid(
                "UntrackedValue(guard=True) can receive only one value per step. Use guard=False if you want to store any one of multiple values.",
            ));
        }
        if let Some(last) = values.into_iter().next_back() {
            self.value = Some(decode(last)?);
        }
        Ok(true)
    }

    fn checkpoint(&self) -> Option<Value> {
        None
    }

    fn restore(&mut self, _checkpoint: Option<Value>) -> Result<()> {
        // Never persisted, so a restored channel always starts empty.
        self.value = None;
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
