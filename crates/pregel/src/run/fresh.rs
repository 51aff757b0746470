//! Fresh reads: a conditional edge reads a channel with its own task's
//! writes applied (`FreshReader`), before the step commits them.

use super::kept_input::forget_inputs;
use super::pregel_loop::PregelLoop;
use super::task::FreshCopy;
use crate::error::{PregelError, Result};
use crate::node::FreshReader;
use crate::shape::ChannelId;
use stategraph_core::Value;
impl FreshReader for PregelLoop {
    fn read_fresh(
        &self,
        channel: ChannelId,
        writes: &[(ChannelId, Value)],
    ) -> Result<Option<Value>> {
        if let Some(lent) = self
            .lent
            .borrow_mut()
            .iter_mut()
            .find(|l| l.channel == channel)
        {
            return self.read_lent(lent, writes);
        }
        let mut own = own_writes(writes, channel).peekable();
        if own.peek().is_none() {
            return Ok(self.channels.get(channel).get());
        }
        let mut copy = self.channels.get(channel).boxed_clone();
        let (count, changed) = update_with(copy.as_mut(), own);
        let changed = changed.map_err(|err| err.at_key(self.name(channel)))?;
        let value = copy.get();
        let mut fresh = self.fresh_reads.borrow_mut();
        fresh.retain(|f| f.channel != channel);
        fresh.push(FreshCopy {
            channel,
            writes: count,
            changed,
            copy: Some(copy),
        });
        Ok(value)
    }
}

/// The error of a node that wrote a channel after reading it fresh, which
/// its `declare_fresh_reads` promised not to do.
pub(super) fn wrote_after_fresh_read(node: &str, channel: &str) -> PregelError {
    PregelError::InvalidGraph(format!(
        "node {node:?} wrote channel {channel:?} after reading it fresh, \
         which its declared fresh reads promise it does not"
    ))
}

/// The values of a task's writes to `channel`, in order.
pub(super) fn own_writes(
    writes: &[(ChannelId, Value)],
    channel: ChannelId,
) -> impl Iterator<Item = Value> + '_ {
    writes
        .iter()
        .filter(move |(c, _)| *c == channel)
        .map(|(_, v)| v.clone())
}

/// Applies `values` to `channel` as one step's writes (the usual single
/// write needs no list); returns how many there were and whether the
/// channel changed. No values: nothing is applied.
pub(super) fn update_with(
    channel: &mut dyn stategraph_channels::Channel,
    mut values: impl Iterator<Item = Value>,
) -> (
    usize,
    std::result::Result<bool, stategraph_channels::ChannelError>,
) {
    let Some(first) = values.next() else {
        return (0, Ok(false));
    };
    match values.next() {
        None => (1, channel.update_one(first)),
        Some(second) => {
            let all: Vec<Value> = [first, second].into_iter().chain(values).collect();
            (all.len(), channel.update(all))
        }
    }
}

impl PregelLoop {
    /// A fresh read of a lent channel: the first read after the task wrote
    /// to it applies those writes in place; later reads see the same value.
    pub(super) fn read_lent(
        &self,
        lent: &mut FreshCopy,
        writes: &[(ChannelId, Value)],
    ) -> Result<Option<Value>> {
        let count = writes.iter().filter(|(c, _)| *c == lent.channel).count();
        if count != lent.writes {
            if lent.writes > 0 {
                let node = self.graph.shape.node_name(self.lent_owner);
                return Err(wrote_after_fresh_read(node, self.name(lent.channel)));
            }
            // Cached inputs holding the value would make the write copy it.
            forget_inputs(
                &mut self.input_cache.borrow_mut(),
                &self.graph.read_sets,
                |channel| channel == lent.channel,
            );
            let Some(channel) = lent.copy.as_mut() else {
                return Ok(None);
            };
            let (_, changed) = update_with(channel.as_mut(), own_writes(writes, lent.channel));
            lent.writes = count;
            lent.changed = changed.map_err(|err| err.at_key(self.name(lent.channel)))?;
        }
        Ok(lent.copy.as_ref().and_then(|channel| channel.get()))
    }
}
