//! `EphemeralValue`.

use stategraph_core::{StateValue, Value};

use crate::slot::{Slot, impl_clone_debug, single_write};
use crate::{Channel, Result};

/// Holds a value for one step only: a step with no write clears it.
///
/// With the guard on (the default) more than one write in a step is an error;
/// without it the last write wins. The runtime uses it for `__start__` and
/// node-input channels.
pub struct EphemeralValue<T> {
    slot: Slot<T>,
    guard: bool,
}

impl_clone_debug!(EphemeralValue { slot, guard });

impl<T: StateValue> EphemeralValue<T> {
    /// An empty, guarded channel.
    pub fn new() -> Self {
        Self {
            slot: Slot::EMPTY,
            guard: true,
        }
    }

    /// An empty channel where the last of several writes wins.
    pub fn unguarded() -> Self {
        Self {
            slot: Slot::EMPTY,
            guard: false,
        }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.slot.value()
    }
}

impl<T: StateValue> Default for EphemeralValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: StateValue> Channel for EphemeralValue<T> {
    fn get(&self) -> Option<Value> {
        self.slot.get()
    }

    fn is_available(&self) -> bool {
        self.slot.is_set()
    }

    fn is_initial(&self) -> bool {
        !self.slot.is_set()
    }

    fn copy_from(&mut self, other: &dyn Channel) -> bool {
        crate::copy_same_type(self, other)
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        match single_write(values, self.guard, "EphemeralValue")? {
            Some(value) => self.slot.set(value).map(|()| true),
            None => Ok(self.slot.clear()),
        }
    }

    fn update_one(&mut self, value: Value) -> Result<bool> {
        self.slot.set(value).map(|()| true)
    }

    fn update_empty(&mut self) -> Result<bool> {
        Ok(self.slot.clear())
    }

    fn checkpoint(&self) -> Option<Value> {
        self.slot.get()
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.slot.restore(checkpoint)
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
