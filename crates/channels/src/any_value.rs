//! `AnyValue`.

use stategraph_core::{StateValue, Value};

use crate::slot::{Slot, impl_clone_debug};
use crate::{Channel, Result};

/// Keeps the last of any number of writes in a step; a step with no write
/// clears it. Use it when parallel writers are known to agree.
pub struct AnyValue<T> {
    slot: Slot<T>,
}

impl_clone_debug!(AnyValue { slot });

impl<T: StateValue> AnyValue<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self { slot: Slot::EMPTY }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.slot.value()
    }
}

impl<T: StateValue> Default for AnyValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: StateValue> Channel for AnyValue<T> {
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
        match values.into_iter().next_back() {
            Some(last) => self.slot.set(last).map(|()| true),
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
