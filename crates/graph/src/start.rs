//! The `__start__` channel: holds a run's input for the START node, and
//! checks it when it is written.

use std::any::Any;
use std::sync::Arc;

use stategraph_channels::{Channel, ChannelError, EphemeralValue};
use stategraph_core::Value;
use stategraph_pregel::ChannelValues;

/// The state keys an input may write, with their channels' prototypes.
pub(crate) type InputKeys = Arc<[(Arc<str>, Arc<dyn Channel>)]>;

/// An ephemeral value holding the input that, when written, checks each
/// input key's value against a fresh copy of that key's channel. An input
/// a key cannot take (a typed field that does not decode, say) then fails
/// the run before it saves its input checkpoint, and the thread stays as
/// it was. LangGraph saves that checkpoint and fails a step later, which
/// leaves a thread that cannot be read back.
#[derive(Clone, Debug)]
pub(crate) struct StartChannel {
    value: EphemeralValue<Value>,
    keys: InputKeys,
}

impl StartChannel {
    /// Checks inputs against these keys' channels (in their initial state).
    pub(crate) fn new(keys: InputKeys) -> Self {
        Self {
            value: EphemeralValue::new(),
            keys,
        }
    }

    /// Whether each entry of `input` for an input key is a write its
    /// channel takes. Input that is not a map is left to the START node,
    /// which reports it as LangGraph does.
    fn check(&self, input: &Value) -> Result<(), ChannelError> {
        let mut result = Ok(());
        for_each_entry(input, |key, value| {
            if result.is_err() {
                return;
            }
            if let Some((_, channel)) = self.keys.iter().find(|(name, _)| &**name == key) {
                let mut probe = channel.boxed_clone();
                if let Err(err) = probe.update_one(value.clone()) {
                    result = Err(err.at_key(key));
                }
            }
        });
        result
    }
}

/// Calls `each` with every `(key, value)` entry of a map-like value: a
/// [`ChannelValues`], a JSON object, or a live value that serializes to one
/// (a typed state given as input). `false` when it is none of these.
pub(crate) fn for_each_entry(value: &Value, mut each: impl FnMut(&str, &Value)) -> bool {
    if let Some(values) = value.downcast_ref::<ChannelValues>() {
        for (key, value) in values.iter() {
            each(key, value);
        }
    } else if let Some(serde_json::Value::Object(map)) = value.as_json() {
        for (key, value) in map {
            each(key, &Value::from_json(value.clone()));
        }
    } else if let Ok(serde_json::Value::Object(map)) = value.to_json() {
        for (key, value) in map {
            each(&key, &Value::from_json(value));
        }
    } else {
        return false;
    }
    true
}

impl Channel for StartChannel {
    fn get(&self) -> Option<Value> {
        self.value.get()
    }

    fn is_available(&self) -> bool {
        self.value.is_available()
    }

    fn is_initial(&self) -> bool {
        self.value.is_initial()
    }

    fn copy_from(&mut self, other: &dyn Channel) -> bool {
        match (other as &dyn Any).downcast_ref::<Self>() {
            Some(other) => {
                self.clone_from(other);
                true
            }
            None => false,
        }
    }

    fn update(&mut self, values: Vec<Value>) -> stategraph_channels::Result<bool> {
        for value in &values {
            self.check(value)?;
        }
        self.value.update(values)
    }

    fn update_one(&mut self, value: Value) -> stategraph_channels::Result<bool> {
        self.check(&value)?;
        self.value.update_one(value)
    }

    fn update_empty(&mut self) -> stategraph_channels::Result<bool> {
        self.value.update_empty()
    }

    fn checkpoint(&self) -> Option<Value> {
        self.value.checkpoint()
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> stategraph_channels::Result<()> {
        // A stored input was checked when it was written.
        self.value.restore(checkpoint)
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
