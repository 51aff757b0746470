//! `LastValue` and `LastValueAfterFinish`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph_core::{StateValue, Value};

use crate::slot::{Slot, impl_clone_debug};
use crate::{Channel, ChannelError, Result, decode};

// LangGraph's first sentence; the hint is Rust's (LangGraph's names
// Python's `Annotated`).
const ONE_VALUE_PER_STEP: &str = "Can receive only one value per step. Give the key a reducer to \
     take several: `#[state(reducer = append)]` on the field, or `Schema::append` / \
     `Schema::reducer`.";

/// Holds the last value written; more than one write in a step is an error.
///
/// The default channel of a state field without a reducer.
///
/// ```
/// use stategraph_channels::{Channel, LastValue};
/// use stategraph_core::Value;
///
/// let mut topic = LastValue::<String>::new();
/// assert!(topic.update(vec![Value::new("cats".to_string())]).unwrap());
/// assert_eq!(topic.value().map(String::as_str), Some("cats"));
/// let err = topic.update(vec![Value::new("a".to_string()), Value::new("b".to_string())]).unwrap_err();
/// assert!(err.is_invalid_update());
/// ```
pub struct LastValue<T> {
    slot: Slot<T>,
}

impl_clone_debug!(LastValue { slot });

impl<T: StateValue> LastValue<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self { slot: Slot::EMPTY }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.slot.value()
    }
}

impl<T: StateValue> Default for LastValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: StateValue> Channel for LastValue<T> {
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

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        if values.len() > 1 {
            return Err(ChannelError::invalid(format!(
                "{ONE_VALUE_PER_STEP}\nFor troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE"
            )));
        }
        match values.into_iter().next() {
            Some(value) => self.slot.set(value).map(|()| true),
            None => Ok(false),
        }
    }

    fn update_one(&mut self, value: Value) -> Result<bool> {
        self.slot.set(value).map(|()| true)
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

/// Like [`LastValue`], but the value becomes readable only after `finish`
/// (the run would otherwise end) and is cleared by `consume`. Several writes
/// in one step keep the last. Used for the branch channels of deferred nodes.
pub struct LastValueAfterFinish<T> {
    slot: Slot<T>,
    finished: bool,
}

impl_clone_debug!(LastValueAfterFinish { slot, finished });

/// The persisted form: the value and whether it was finished.
#[derive(Serialize, Deserialize)]
struct AfterFinish<T>(Arc<T>, bool);

impl<T> Clone for AfterFinish<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone(), self.1)
    }
}

impl<T: StateValue> LastValueAfterFinish<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self {
            slot: Slot::EMPTY,
            finished: false,
        }
    }
}

impl<T: StateValue> Default for LastValueAfterFinish<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: StateValue> Channel for LastValueAfterFinish<T> {
    fn get(&self) -> Option<Value> {
        if self.finished { self.slot.get() } else { None }
    }

    fn is_available(&self) -> bool {
        self.finished && self.slot.is_set()
    }

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        let Some(last) = values.into_iter().next_back() else {
            return Ok(false);
        };
        self.slot.set(last)?;
        self.finished = false;
        Ok(true)
    }

    fn consume(&mut self) -> bool {
        if self.finished {
            self.finished = false;
            self.slot.clear();
            true
        } else {
            false
        }
    }

    fn would_finish(&self) -> bool {
        !self.finished && self.slot.is_set()
    }

    fn finish(&mut self) -> bool {
        if !self.finished && self.slot.is_set() {
            self.finished = true;
            true
        } else {
            false
        }
    }

    fn checkpoint(&self) -> Option<Value> {
        let value = self.slot.shared()?;
        Some(Value::new(AfterFinish(value, self.finished)))
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        let Some(checkpoint) = checkpoint else {
            self.slot.clear();
            self.finished = false;
            return Ok(());
        };
        let state = decode::<AfterFinish<T>>(checkpoint)?;
        self.slot.restore(Some(Value::from_arc(state.0.clone())))?;
        self.finished = state.1;
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
