//! A run's channels: copied from the graph's channel specs on first change.
//!
//! Most channels of a large graph (one trigger channel per node) are never
//! written in a given run, so copying all of them up front would make a
//! run's start-up cost grow with the graph's size.
//!
//! The trigger channels of a compiled graph are ephemeral values, and edges
//! write them an inline `null`: such a channel is always either in its
//! spec's state or holding that `null`. A run keeps the second state as a
//! flag, reading the graph's shared prototype of it
//! ([`CompiledGraph::holding_null`](crate::graph::CompiledGraph)), so a step that
//! fires an edge and clears it again copies no channel. Any other change
//! makes a real copy first.

use std::sync::Arc;

use stategraph_channels::{Channel, Result};
use stategraph_core::Value;

use crate::graph::CompiledGraph;
use crate::shape::ChannelId;

pub(crate) struct RunChannels {
    pub(super) graph: Arc<CompiledGraph>,
    pub(super) state: Vec<State>,
    // Copies dropped by `release_if_initial`, whose allocations the next
    // copies reuse (a chain writes one trigger channel per step), each with
    // the address of the spec it is a copy of.
    pub(super) spare: Vec<(usize, Box<dyn Channel>)>,
}

/// What a run's channel is.
pub(super) enum State {
    /// In its spec's state.
    Spec,
    /// An ephemeral value holding an inline `null`: in the state of its
    /// prototype in `CompiledGraph::holding_null`.
    HoldsNull,
    /// Its own copy.
    Own(Box<dyn Channel>),
}

/// How many dropped copies a run keeps for reuse.
pub(super) const SPARE_COPIES: usize = 4;

impl RunChannels {
    pub(crate) fn new(graph: Arc<CompiledGraph>) -> Self {
        let mut state = Vec::new();
        state.resize_with(graph.channels.len(), || State::Spec);
        Self {
            graph,
            state,
            spare: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.state.len()
    }

    /// Reads a channel.
    #[inline]
    pub(crate) fn get(&self, channel: ChannelId) -> &dyn Channel {
        match &self.state[channel] {
            State::Own(own) => own.as_ref(),
            shared => shared_state(&self.graph, shared, channel).as_ref(),
        }
    }

    /// Whether a channel has a value.
    #[inline]
    pub(crate) fn is_available(&self, channel: ChannelId) -> bool {
        match &self.state[channel] {
            State::HoldsNull => true,
            State::Own(own) => own.is_available(),
            State::Spec => self.graph.available_initially[channel],
        }
    }

    /// Changes a channel, copying it first if needed.
    pub(crate) fn get_mut(&mut self, channel: ChannelId) -> &mut dyn Channel {
        let state = &mut self.state[channel];
        if !matches!(state, State::Own(_)) {
            *state = State::Own(copy_of(
                shared_state(&self.graph, state, channel),
                &mut self.spare,
            ));
        }
        match state {
            State::Own(own) => own.as_mut(),
            _ => unreachable!("the channel was just copied"),
        }
    }

    /// Whether the channel is an ephemeral value without a copy, whose
    /// changes by `null` writes and empty updates are kept in its state.
    pub(super) fn flagged(&self, channel: ChannelId) -> bool {
        !matches!(self.state[channel], State::Own(_)) && self.graph.holding_null[channel].is_some()
    }

    /// [`Channel::update_one`].
    pub(crate) fn update_one(&mut self, channel: ChannelId, value: Value) -> Result<bool> {
        if value.is_inline_null() && self.flagged(channel) {
            // An ephemeral value now holds the write (and says it changed).
            self.state[channel] = State::HoldsNull;
            return Ok(true);
        }
        self.get_mut(channel).update_one(value)
    }

    /// [`Channel::update`].
    pub(crate) fn update(&mut self, channel: ChannelId, values: Vec<Value>) -> Result<bool> {
        self.get_mut(channel).update(values)
    }

    /// [`Channel::update_empty`].
    pub(crate) fn update_empty(&mut self, channel: ChannelId) -> Result<bool> {
        if self.flagged(channel) {
            // An ephemeral value clears, and changes if it held something.
            let held = matches!(self.state[channel], State::HoldsNull);
            self.state[channel] = State::Spec;
            return Ok(held);
        }
        self.get_mut(channel).update_empty()
    }

    /// [`Channel::consume`].
    pub(crate) fn consume(&mut self, channel: ChannelId) -> bool {
        // An ephemeral value has nothing to consume.
        !self.flagged(channel) && self.get_mut(channel).consume()
    }

    /// [`Channel::finish`].
    pub(crate) fn finish(&mut self, channel: ChannelId) -> bool {
        // Nor anything to finish.
        !self.flagged(channel) && self.get_mut(channel).finish()
    }

    /// Replaces a channel (restored from a checkpoint, or a fresh read the
    /// step commits).
    pub(crate) fn set(&mut self, channel: ChannelId, restored: Box<dyn Channel>) {
        self.state[channel] = State::Own(restored);
    }

    /// Takes a channel out (a copy of its shared state if it has no copy),
    /// to be put back with [`set`](Self::set) before anything reads it.
    pub(crate) fn take(&mut self, channel: ChannelId) -> Box<dyn Channel> {
        match std::mem::replace(&mut self.state[channel], State::Spec) {
            State::Own(own) => own,
            shared => shared_state(&self.graph, &shared, channel).boxed_clone(),
        }
    }

    /// Drops the run's copy of a channel that is back in its initial state
    /// when its spec is too: the two are then the same, and reading the
    /// spec again frees the copy now instead of at the end of the run (a
    /// long chain's trigger channels would otherwise pile up, one per node).
    pub(crate) fn release_if_initial(&mut self, channel: ChannelId) {
        let spec = &self.graph.channels[channel];
        let State::Own(own) = &self.state[channel] else {
            return;
        };
        if !(own.is_initial() && spec.is_initial()) {
            return;
        }
        if let State::Own(copy) = std::mem::replace(&mut self.state[channel], State::Spec)
            && self.spare.len() < SPARE_COPIES
        {
            self.spare.push((address(spec), copy));
        }
    }

    /// Whether the channel changed in this run and is not back in the state
    /// of its spec.
    pub(crate) fn touched(&self, channel: ChannelId) -> bool {
        !matches!(self.state[channel], State::Spec)
    }
}

/// The shared channel a channel without a copy reads: its spec, or the
/// graph's prototype of it holding `null`.
pub(super) fn shared_state<'a>(
    graph: &'a CompiledGraph,
    state: &State,
    channel: ChannelId,
) -> &'a Arc<dyn Channel> {
    match (state, &graph.holding_null[channel]) {
        (State::HoldsNull, Some(proto)) => proto,
        _ => &graph.channels[channel],
    }
}

/// A copy of `spec`: a spare copy of the same spec as it is (both are in
/// their initial state, so they are equal: the trigger channels of a
/// compiled graph share one spec), else one made in a spare allocation of
/// the same kind of channel, else a new one.
pub(super) fn copy_of(
    spec: &Arc<dyn Channel>,
    spare: &mut Vec<(usize, Box<dyn Channel>)>,
) -> Box<dyn Channel> {
    let of = address(spec);
    if let Some(i) = spare.iter().position(|(from, _)| *from == of) {
        return spare.swap_remove(i).1;
    }
    for i in 0..spare.len() {
        if spare[i].1.copy_from(spec.as_ref()) {
            return spare.swap_remove(i).1;
        }
    }
    spec.boxed_clone()
}

/// Where a spec lives: the same address is the same spec while the graph
/// holding it lives.
pub(super) fn address(spec: &Arc<dyn Channel>) -> usize {
    Arc::as_ptr(spec).cast::<()>() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Pregel;
    use stategraph_channels::{EphemeralValue, LastValue};

    fn graph() -> Arc<CompiledGraph> {
        let pregel = Pregel::builder()
            .channel("unguarded", EphemeralValue::<Value>::unguarded())
            .and_then(|b| b.channel("guarded", EphemeralValue::<Value>::new()))
            .and_then(|b| b.channel("typed", EphemeralValue::<i64>::new()))
            .and_then(|b| b.channel("last", LastValue::<Value>::new()))
            .and_then(|b| b.input("unguarded").output("last").build())
            .unwrap();
        pregel.inner.clone()
    }

    /// What a channel reads as: availability, value and checkpoint.
    fn observed(
        channels: &RunChannels,
        channel: ChannelId,
    ) -> (bool, Option<String>, Option<String>) {
        let json = |v: Option<Value>| v.map(|v| v.to_json().unwrap().to_string());
        let read = channels.get(channel);
        assert_eq!(channels.is_available(channel), read.is_available());
        (
            read.is_available(),
            json(read.get()),
            json(read.checkpoint()),
        )
    }

    #[test]
    fn only_untyped_ephemeral_values_get_a_null_prototype() {
        let graph = graph();
        let kind = |name: &str| {
            let channel = graph.shape.channel_id(name).unwrap();
            graph.holding_null[channel].is_some()
        };
        assert!(kind("unguarded") && kind("guarded"));
        // A typed value decodes its writes; the others are not ephemeral.
        assert!(!kind("typed") && !kind("last") && !kind("__pregel_tasks"));
    }

    #[test]
    fn a_flagged_channel_reads_and_changes_as_its_own_copy_would() {
        let graph = graph();
        let mut flagged = RunChannels::new(graph.clone());
        let mut copied = RunChannels::new(graph.clone());
        for channel in 0..graph.channels.len() {
            // `get_mut` always works on a real copy.
            let steps: [(&str, Option<Value>); 7] = [
                ("write", Some(Value::null())),
                ("write", Some(Value::null())),
                ("empty", None),
                ("empty", None),
                ("write", Some(Value::null())),
                ("consume", None),
                ("empty", None),
            ];
            for (op, value) in steps {
                let (a, b) = match (op, value) {
                    ("write", Some(value)) => (
                        flagged.update_one(channel, value.clone()).ok(),
                        copied.get_mut(channel).update_one(value).ok(),
                    ),
                    ("empty", _) => (
                        flagged.update_empty(channel).ok(),
                        copied.get_mut(channel).update_empty().ok(),
                    ),
                    _ => (
                        Some(flagged.consume(channel)),
                        Some(copied.get_mut(channel).consume()),
                    ),
                };
                assert_eq!(a, b, "{op} on channel {channel}");
                assert_eq!(observed(&flagged, channel), observed(&copied, channel));
                assert_eq!(flagged.finish(channel), copied.get_mut(channel).finish());
            }
        }
    }

    #[test]
    fn a_flagged_channel_becomes_a_copy_for_any_other_change() {
        let graph = graph();
        let mut channels = RunChannels::new(graph);
        assert!(channels.update_one(0, Value::null()).unwrap());
        assert!(channels.touched(0));
        // A value other than the inline null: a real copy, holding it.
        assert!(
            channels
                .update_one(0, Value::from_json(serde_json::json!(7)))
                .unwrap()
        );
        assert_eq!(observed(&channels, 0).1.as_deref(), Some("7"));
        // A copy taken out holds the null state too.
        let mut other = RunChannels::new(channels.graph.clone());
        other.update_one(1, Value::null()).unwrap();
        let taken = other.take(1);
        assert!(taken.is_available());
        other.set(1, taken);
        assert_eq!(observed(&other, 1).1.as_deref(), Some("null"));
        // Two writes to a guarded channel in one update still fail.
        assert!(other.update(1, vec![Value::null(), Value::null()]).is_err());
    }
}
