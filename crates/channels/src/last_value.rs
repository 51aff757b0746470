//! `LastValue` and `LastValueAfterFinish`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph_core::{StateValue, Value};

use crate::{Channel, ChannelError, Result, decode};

const ONE_VALUE_PER_STEP: &str =
    "Can receive only one value per step. Use an Annotated key to handle multiple values.";

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
    value: Option<Arc<T>>,
}

impl<T: StateValue> LastValue<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self { value: None }
    }

    /// The current value.
    pub fn value(&self) -> Option<&T> {
        self.value.as_deref()
    }
}

impl<T: StateValue> Default for LastValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for LastValue<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
        }
    }
}

impl<T> fmt::Debug for LastValue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LastValue")
            .field("available", &self.value.is_some())
            .finish()
    }
}

impl<T: StateValue> Channel for LastValue<T> {
    fn get(&self) -> Option<Value> {
        self.value.clone().map(Value::from_arc)
    }

    fn is_available(&self) -> bool {
        self.value.is_some()
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        match <[Value; 1]>::try_from(values) {
            Ok([value]) => {
                self.value = Some(decode(value)?);
                Ok(true)
            }
            Err(values) if values.is_empty() => Ok(false),
            Err(_) => Err(ChannelError::invalid(format!(
                "{ONE_VALUE_PER_STEP}\nFor troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE"
            ))),
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

/// Like [`LastValue`], but the value becomes readable only after `finish`
/// (the run would otherwise end) and is cleared by `consume`. Several writes
/// in one step keep the last. Used for the branch channels of deferred nodes.
pub struct LastValueAfterFinish<T> {
    value: Option<Arc<T>>,
    finished: bool,
}

/// The persisted form: the value and whether it was finished.
#[derive(Serialize, Deserialize)]
struct AfterFinish<T>(Arc<T>, bool);

impl<T: StateValue> LastValueAfterFinish<T> {
    /// An empty channel.
    pub fn new() -> Self {
        Self {
            value: None,
            finished: false,
        }
    }
}

impl<T: StateValue> Default for LastValueAfterFinish<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for LastValueAfterFinish<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            finished: self.finished,
        }
    }
}

impl<T> fmt::Debug for LastValueAfterFinish<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LastValueAfterFinish")
            .field("has_value", &self.value.is_some())
            .field("finished", &self.finished)
            .finish()
    }
}

impl<T: StateValue> Channel for LastValueAfterFinish<T> {
    fn get(&self) -> Option<Value> {
        if self.finished {
            self.value.clone().map(Value::from_arc)
        } else {
            None
        }
    }

    fn is_available(&self) -> bool {
        self.finished && self.value.is_some()
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        let Some(last) = values.into_iter().next_back() else {
            return Ok(false);
        };
        self.value = Some(decode(last)?);
        self.finished = false;
        Ok(true)
    }

    fn consume(&mut self) -> bool {
        if self.finished {
            self.finished = false;
            self.value = None;
            true
        } else {
            false
        }
    }

    fn finish(&mut self) -> bool {
        if !self.finished && self.value.is_some() {
            self.finished = true;
            true
        } else {
            false
        }
    }

    fn checkpoint(&self) -> Option<Value> {
        let value = self.value.clone()?;
        Some(Value::new(AfterFinish(value, self.finished)))
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        let (value, finished) = match checkpoint {
            None => (None, false),
            Some(checkpoint) => {
                let state = decode::<AfterFinish<T>>(checkpoint)?;
                (Some(state.0.clone()), state.1)
            }
        };
        self.value = value;
        self.finished = finished;
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}

impl<T> Clone for AfterFinish<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone(), self.1)
    }
}
