//! LangGraph's channel kinds: the storage cells of a graph's state.
#![doc = include_str!("../README.md")]

mod any_value;
mod barrier;
mod binop;
mod ephemeral;
mod last_value;
pub mod reducers;
mod slot;
mod topic;
mod untracked;

use std::any::Any;
use std::fmt;

use stategraph_core::{ErrorKind, Value, ValueError};

pub use any_value::AnyValue;
pub use barrier::{NamedBarrierValue, NamedBarrierValueAfterFinish};
pub use binop::{BinaryOperatorAggregate, OVERWRITE_KEY, Overwrite};
pub use ephemeral::EphemeralValue;
pub use last_value::{LastValue, LastValueAfterFinish};
pub use topic::Topic;
pub use untracked::UntrackedValue;

/// Result of channel operations.
pub type Result<T, E = ChannelError> = std::result::Result<T, E>;

/// A channel refused an update or could not read a value.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The writes of one step are not valid for this channel (LangGraph's
    /// `InvalidUpdateError`), for example two writes to a [`LastValue`].
    #[error("at key '{key}': {message}")]
    InvalidUpdate {
        /// The channel's state key (empty until the runtime names it).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A written or checkpointed value does not have the channel's type.
    #[error("at key '{key}': {source}")]
    Value {
        /// The channel's state key (empty until the runtime names it).
        key: String,
        /// The decode error, naming the path of the bad part.
        #[source]
        source: ValueError,
    },
}

impl ChannelError {
    /// The kind of failure: [`ErrorKind::InvalidInput`] for invalid updates,
    /// [`ErrorKind::Serialization`] for values of the wrong shape.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidUpdate { .. } => ErrorKind::InvalidInput,
            Self::Value { .. } => ErrorKind::Serialization,
        }
    }

    /// Names the state key the error happened at, unless it names one
    /// already (a channel that checks writes for other keys names them).
    #[must_use]
    pub fn at_key(mut self, name: &str) -> Self {
        match &mut self {
            Self::InvalidUpdate { key, .. } | Self::Value { key, .. } if key.is_empty() => {
                *key = name.to_owned();
            }
            _ => {}
        }
        self
    }

    /// Whether this is an invalid update (LangGraph's `InvalidUpdateError`).
    pub fn is_invalid_update(&self) -> bool {
        matches!(self, Self::InvalidUpdate { .. })
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidUpdate {
            key: String::new(),
            message: message.into(),
        }
    }
}

impl From<ValueError> for ChannelError {
    fn from(source: ValueError) -> Self {
        Self::Value {
            key: String::new(),
            source,
        }
    }
}

/// A storage cell of graph state, with LangGraph's channel contract.
///
/// The runtime calls `update` once per channel at the end of every superstep
/// with the writes of that step (possibly none), in task order. Values go in
/// and out as [`Value`]s, so the runtime can hold channels of any type behind
/// `Box<dyn Channel>`; each channel decodes writes to its own type and reports
/// a [`ChannelError::Value`] naming the bad path when a write does not fit.
///
/// # Behavior
/// - `get` returns `None` while the channel is empty (LangGraph's `EmptyChannelError`).
/// - `update` returns whether the channel changed; an invalid set of writes is
///   a [`ChannelError::InvalidUpdate`] and leaves the value as it was.
/// - `consume` is called after a node subscribed to the channel ran; `finish`
///   when the run would otherwise end. Both return whether the channel changed.
/// - `checkpoint` returns the value to persist (`None` = nothing to persist);
///   `restore` replaces the channel's content by a checkpointed one (`None` =
///   back to the initial state), so `c.restore(c.checkpoint())` is a no-op.
pub trait Channel: Any + Send + Sync + fmt::Debug + 'static {
    /// The current value (a cheap shared handle), or `None` when empty.
    fn get(&self) -> Option<Value>;

    /// Whether `get` would return a value.
    fn is_available(&self) -> bool;

    /// Applies the writes of one step.
    ///
    /// # Errors
    /// [`ChannelError::InvalidUpdate`] when the writes are not valid together;
    /// [`ChannelError::Value`] when a write does not decode to the channel's type.
    fn update(&mut self, values: Vec<Value>) -> Result<bool>;

    /// Applies a step with exactly one write; the same as
    /// `update(vec![value])`, without allocating where the channel allows.
    ///
    /// # Errors
    /// As [`Channel::update`].
    fn update_one(&mut self, value: Value) -> Result<bool> {
        self.update(vec![value])
    }

    /// Applies a step with no write to this channel; the same as
    /// `update(vec![])` (what every live channel not written in a step
    /// hears), without the list where the channel allows.
    ///
    /// # Errors
    /// As [`Channel::update`].
    fn update_empty(&mut self) -> Result<bool> {
        self.update(Vec::new())
    }

    /// Whether an empty update (`update(vec![])`, which every channel not
    /// written in a step gets) never changes this channel: the runtime then
    /// skips that call. The default, `false`, is always correct.
    fn ignores_empty_updates(&self) -> bool {
        false
    }

    /// Whether the channel is in its initial state, the one `restore(None)`
    /// gives (an empty value, an empty topic). Two copies of one channel
    /// that are both in it are interchangeable, so the runtime drops its
    /// copy of a channel that returns to the state of its spec. The
    /// default, `false`, is always correct.
    fn is_initial(&self) -> bool {
        false
    }

    /// Makes this channel a copy of `other` when both are the same kind of
    /// channel (the same Rust type) and says whether it did; the runtime
    /// reuses the allocation of a copy it dropped this way. The default,
    /// `false` (nothing copied), is always correct.
    fn copy_from(&mut self, other: &dyn Channel) -> bool {
        let _ = other;
        false
    }

    /// Marks the value as read by a subscribed node.
    fn consume(&mut self) -> bool {
        false
    }

    /// Signals that the run is about to finish.
    fn finish(&mut self) -> bool {
        false
    }

    /// Whether [`Channel::finish`] would change the channel now, without
    /// changing it. A channel that overrides `finish` overrides this too.
    fn would_finish(&self) -> bool {
        false
    }

    /// What to persist for this channel, or `None` for nothing.
    fn checkpoint(&self) -> Option<Value>;

    /// Replaces the content with a checkpointed one (`None` = initial state).
    ///
    /// # Errors
    /// [`ChannelError::Value`] when the checkpoint does not decode.
    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()>;

    /// A copy of this channel, content included (values are shared, not cloned).
    fn boxed_clone(&self) -> Box<dyn Channel>;

    /// A new channel of the same kind holding a checkpointed content.
    ///
    /// # Errors
    /// As [`Channel::restore`].
    // LangGraph's name, kept so its users find it.
    #[allow(clippy::wrong_self_convention)]
    fn from_checkpoint(&self, checkpoint: Option<Value>) -> Result<Box<dyn Channel>> {
        let mut channel = self.boxed_clone();
        channel.restore(checkpoint)?;
        Ok(channel)
    }
}

impl Clone for Box<dyn Channel> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// [`Channel::copy_from`] for a channel type that can be cloned.
pub(crate) fn copy_same_type<C: Channel + Clone>(this: &mut C, other: &dyn Channel) -> bool {
    match (other as &dyn Any).downcast_ref::<C>() {
        Some(other) => {
            this.clone_from(other);
            true
        }
        None => false,
    }
}

/// Decodes a write for a channel holding `T`.
pub(crate) fn decode<T: stategraph_core::StateValue>(value: Value) -> Result<std::sync::Arc<T>> {
    value.decode::<T>().map_err(ChannelError::from)
}
