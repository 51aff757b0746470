//! `UntrackedValue`.

use stategraph_core::{StateValue, Value};

use crate::slot::{Slot, impl_clone_debug, single_write};
use crate::{Channel, Result};

/// Like [`LastValue`](crate::LastValue), but never checkpointed: its value
/// lives only for the current run. With the guard on (the default) more than
/// one write in a step is an error.
pub struct UntrackedValue<T> {
    slot: Slot<T>,
    guard: bool,
}

impl_clone_debug!(UntrackedValue { slot, guard });

impl<T: StateValue> UntrackedValue<T> {
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

impl<T: StateValue> Default for UntrackedValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: StateValue> Channel for UntrackedValue<T> {
    fn get(&self) -> Option<Value> {
        self.slot.get()
    }

    fn is_available(&self) -> bool {
        self.slot.is_set()
    }

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        match single_write(values, self.guard, "UntrackedValue")? {
            Some(value) => self.slot.set(value).map(|()| true),
            None => Ok(false),
        }
    }

    fn update_one(&mut self, value: Value) -> Result<bool> {
        self.slot.set(value).map(|()| true)
    }

    fn checkpoint(&self) -> Option<Value> {
        None
    }

    fn restore(&mut self, _checkpoint: Option<Value>) -> Result<()> {
        // Never persisted, so a restored channel always starts empty.
        self.slot.clear();
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
