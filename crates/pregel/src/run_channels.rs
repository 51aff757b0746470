//! A run's channels: copied from the graph's channel specs on first change.
//!
//! Most channels of a large graph (one trigger channel per node) are never
//! written in a given run, so copying all of them up front would make a
//! run's start-up cost grow with the graph's size.

use std::sync::Arc;

use stategraph_channels::Channel;

use crate::ChannelId;
use crate::graph::PregelInner;

pub(crate) struct RunChannels {
    graph: Arc<PregelInner>,
    // Invariant: `None` means the channel is in its spec's state.
    own: Vec<Option<Box<dyn Channel>>>,
    // Copies dropped by `release_if_initial`, whose allocations the next
    // copies reuse (a chain writes one trigger channel per step), each with
    // the address of the spec it is a copy of.
    spare: Vec<(usize, Box<dyn Channel>)>,
}

/// How many dropped copies a run keeps for reuse.
const SPARE_COPIES: usize = 4;

impl RunChannels {
    pub(crate) fn new(graph: Arc<PregelInner>) -> Self {
        let mut own = Vec::new();
        own.resize_with(graph.channels.len(), || None);
        Self {
            graph,
            own,
            spare: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.own.len()
    }

    /// Reads a channel.
    pub(crate) fn get(&self, channel: ChannelId) -> &dyn Channel {
        match &self.own[channel] {
            Some(own) => own.as_ref(),
            None => self.graph.channels[channel].as_ref(),
        }
    }

    /// Changes a channel, copying it from its spec first if needed.
    pub(crate) fn get_mut(&mut self, channel: ChannelId) -> &mut dyn Channel {
        let (graph, spare) = (&self.graph, &mut self.spare);
        self.own[channel]
            .get_or_insert_with(|| copy_of(&graph.channels[channel], spare))
            .as_mut()
    }

    /// Replaces a channel (restored from a checkpoint, or a fresh read the
    /// step commits).
    pub(crate) fn set(&mut self, channel: ChannelId, restored: Box<dyn Channel>) {
        self.own[channel] = Some(restored);
    }

    /// Takes a channel out (a copy of its spec if it never changed), to be
    /// put back with [`set`](Self::set) before anything reads it.
    pub(crate) fn take(&mut self, channel: ChannelId) -> Box<dyn Channel> {
        self.own[channel]
            .take()
            .unwrap_or_else(|| self.graph.channels[channel].boxed_clone())
    }

    /// Drops the run's copy of a channel that is back in its initial state
    /// when its spec is too: the two are then the same, and reading the
    /// spec again frees the copy now instead of at the end of the run (a
    /// long chain's trigger channels would otherwise pile up, one per node).
    pub(crate) fn release_if_initial(&mut self, channel: ChannelId) {
        if self.own[channel]
            .as_ref()
            .is_some_and(|own| own.is_initial() && self.graph.channels[channel].is_initial())
            && let Some(copy) = self.own[channel].take()
            && self.spare.len() < SPARE_COPIES
        {
            self.spare
                .push((address(&self.graph.channels[channel]), copy));
        }
    }

    /// Whether the channel changed in this run and is not back in the state
    /// of its spec.
    pub(crate) fn touched(&self, channel: ChannelId) -> bool {
        self.own[channel].is_some()
    }
}

/// A copy of `spec`: a spare copy of the same spec as it is (both are in
/// their initial state, so they are equal: the trigger channels of a
/// compiled graph share one spec), else one made in a spare allocation of
/// the same kind of channel, else a new one.
fn copy_of(
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
fn address(spec: &Arc<dyn Channel>) -> usize {
    Arc::as_ptr(spec).cast::<()>() as usize
}
