//! The storage cell most channels share: an optional shared value of type `T`.

use std::fmt;
use std::sync::Arc;

use stategraph_core::{StateValue, Value};

use crate::{ChannelError, Result, decode};

/// An optional `Arc<T>`; cloning shares the value.
pub(crate) struct Slot<T>(Option<Arc<T>>);

impl<T: StateValue> Slot<T> {
    pub(crate) const EMPTY: Self = Self(None);

    pub(crate) fn value(&self) -> Option<&T> {
        self.0.as_deref()
    }

    pub(crate) fn get(&self) -> Option<Value> {
        self.0.clone().map(Value::from_arc)
    }

    pub(crate) fn shared(&self) -> Option<Arc<T>> {
        self.0.clone()
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Stores a write, decoded to `T`.
    pub(crate) fn set(&mut self, value: Value) -> Result<()> {
        self.0 = Some(decode(value)?);
        Ok(())
    }

    /// Empties the slot; returns whether it held a value.
    pub(crate) fn clear(&mut self) -> bool {
        self.0.take().is_some()
    }

    /// Replaces the content by a checkpointed value (`None` = empty).
    pub(crate) fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.0 = checkpoint.map(decode).transpose()?;
        Ok(())
    }
}

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Slot(set)"
        } else {
            "Slot(empty)"
        })
    }
}

/// `Clone` and `Debug` for a channel struct generic over `T`, without
/// requiring `T: Clone + Debug` (what `derive` would demand).
macro_rules! impl_clone_debug {
    ($name:ident { $($field:ident),* }) => {
        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                Self { $($field: self.$field.clone()),* }
            }
        }

        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))$(.field(stringify!($field), &self.$field))*.finish()
            }
        }
    };
}
pub(crate) use impl_clone_debug;

/// The write a last-value-like channel keeps from one step: the only one, or
/// with the guard off the last one. `kind` names the channel in the error.
pub(crate) fn single_write(values: Vec<Value>, guard: bool, kind: &str) -> Result<Option<Value>> {
    if guard && values.len() > 1 {
        return Err(ChannelError::invalid(format!(
            "{kind}(guard=True) can receive only one value per step. Use guard=False if you want to store any one of multiple values."
        )));
    }
    Ok(values.into_iter().next_back())
}
