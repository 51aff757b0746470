//! The storage cell most channels share: an optional shared value of type `T`.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use stategraph_core::{StateValue, Value};

use crate::{ChannelError, Result, decode};

/// An optional value of type `T`, kept as the [`Value`] that was written
/// (so storing and reading a live `T` never allocates); cloning shares it.
pub(crate) struct Slot<T> {
    // Invariant: a live `T` (or any value when `T` is `Value`).
    value: Option<Value>,
    _type: PhantomData<fn() -> T>,
}

fn is_value_type<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<Value>()
}

impl<T: StateValue> Slot<T> {
    pub(crate) const EMPTY: Self = Self {
        value: None,
        _type: PhantomData,
    };

    pub(crate) fn value(&self) -> Option<&T> {
        if is_value_type::<T>() {
            let any: &dyn Any = &self.value;
            return any.downcast_ref::<Option<T>>().and_then(Option::as_ref);
        }
        self.value.as_ref()?.downcast_ref::<T>()
    }

    pub(crate) fn get(&self) -> Option<Value> {
        self.value.clone()
    }

    pub(crate) fn shared(&self) -> Option<Arc<T>> {
        self.value.clone()?.try_live::<T>().ok()
    }

    pub(crate) fn is_set(&self) -> bool {
        self.value.is_some()
    }

    /// Stores a write, decoded to `T` unless it already is one.
    pub(crate) fn set(&mut self, value: Value) -> Result<()> {
        let stored = if is_value_type::<T>() || value.is::<T>() {
            value
        } else {
            Value::from_arc(decode::<T>(value)?)
        };
        self.value = Some(stored);
        Ok(())
    }

    /// Empties the slot; returns whether it held a value.
    pub(crate) fn clear(&mut self) -> bool {
        self.value.take().is_some()
    }

    /// Replaces the content by a checkpointed value (`None` = empty).
    pub(crate) fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        match checkpoint {
            Some(value) => self.set(value),
            None => {
                self.value = None;
                Ok(())
            }
        }
    }
}

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.value.is_some() {
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
