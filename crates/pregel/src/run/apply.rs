//! Applying a step's writes to the channels (LangGraph's `apply_writes`):
//! grouped by channel in task order, versions bumped, triggers consumed.

use stategraph_checkpoint::ChannelVersion;
use stategraph_core::Value;

use super::fresh::wrote_after_fresh_read;
use super::pregel_loop::PregelLoop;
use super::task::{FreshCopy, Task};
use crate::error::Result;
use crate::shape::ChannelId;

impl PregelLoop {
    /// Tells a channel no write came this step (ephemeral values and
    /// `Send` topics clear themselves); whether it changed.
    pub(super) fn update_empty(&mut self, channel: ChannelId) -> Result<bool> {
        Ok(self
            .channels
            .update_empty(channel)
            .map_err(|err| err.at_key(self.graph.shape.channel_name(channel)))?)
    }

    pub(super) fn apply_writes(&mut self, tasks: &mut [Task]) -> Result<Vec<ChannelId>> {
        self.apply(tasks, true)
    }

    /// LangGraph's `apply_writes`: returns the channels updated (and available).
    pub(super) fn apply(&mut self, tasks: &mut [Task], from_tasks: bool) -> Result<Vec<ChannelId>> {
        if tasks.len() > 1 {
            tasks.sort_by(|a, b| a.path.cmp(&b.path));
        }
        if !self.input_seen {
            self.input_seen = tasks.iter().any(Task::is_input);
        }
        // Only the input pseudo-task has no triggers.
        let bump_step = from_tasks;
        self.epoch += 1;
        let mut step = StepChanges {
            next: self.next_version(),
            epoch: self.epoch,
            bumped: false,
            updated: self.updated_buf.take(),
        };
        step.updated.clear();
        if from_tasks {
            self.consume_triggers(tasks, &mut step);
        }
        let mut writes = self.gather_writes(tasks)?;
        // The `Send`s this step ran are cleared before any reducer runs
        // when the step sends nothing new (the empty updates below would
        // clear them too): a `Send`'s argument may share a state value (the
        // v2 agent's tool calls carry the messages), and a reducer extends
        // a value in place only when nothing else holds it.
        let sends = self.graph.tasks_channel;
        if bump_step
            && !writes.iter().any(|(c, _)| *c == sends)
            && self.channels.is_available(sends)
        {
            self.update_unwritten(sends, &mut step)?;
        }
        let mut fresh = std::mem::take(&mut self.fresh_buf);
        let applied = self.apply_grouped(&mut writes, &mut fresh, &mut step);
        // Both are empty unless a write failed (clearing an empty list
        // still costs a call).
        if !writes.is_empty() {
            writes.clear();
        }
        self.write_buf.put(writes);
        if !fresh.is_empty() {
            fresh.clear();
        }
        self.fresh_buf = fresh;
        applied?;

        // Channels not written this step hear about the new step (ephemeral
        // values clear themselves).
        if bump_step {
            for i in 0..self.live.len() {
                let channel = self.live[i];
                if self.mark[channel] != step.epoch
                    && self.graph.takes_empty_updates[channel]
                    && self.channels.is_available(channel)
                {
                    self.update_unwritten(channel, &mut step)?;
                }
            }
        }

        // Tentatively the last step: let channels finish (deferred nodes).
        if bump_step && !step.updated.iter().any(|c| self.graph.is_trigger[*c]) {
            for channel in 0..self.channels.len() {
                if !self.channels.touched(channel) && !self.graph.finishes_initially[channel] {
                    continue;
                }
                if self.channels.finish(channel) {
                    self.record_change(channel, &mut step);
                }
            }
        }

        if step.bumped {
            self.max_version = Some(step.next);
        }
        // The channels available now: the previously live ones that still
        // are and did not change (those that did are in `updated`), then
        // the updated ones.
        let (epoch, mark, channels) = (step.epoch, &self.mark, &self.channels);
        self.live
            .retain(|c| mark[*c] != epoch && channels.is_available(*c));
        self.live.extend_from_slice(&step.updated);
        Ok(step.updated)
    }

    /// Records the trigger versions each task's node ran on, then consumes
    /// those triggers (LangGraph's `versions_seen` update and `consume`).
    pub(super) fn consume_triggers(&mut self, tasks: &[Task], step: &mut StepChanges) {
        let graph = &*self.graph;
        for task in tasks {
            if let Some(node) = task.consumer() {
                self.ran[node] = true;
                let offset = graph.seen_offset[node];
                for (i, channel) in graph.nodes[node].triggers.iter().enumerate() {
                    if let Some(version) = self.versions[*channel] {
                        self.seen[offset + i] = Some(version);
                    }
                }
            }
        }
        for task in tasks {
            if let Some(node) = task.consumer() {
                for channel in &graph.nodes[node].triggers {
                    if self.channels.consume(*channel) {
                        step.bump(&mut self.versions, &mut self.modified, *channel);
                    }
                }
            }
        }
    }

    /// Takes the tasks' writes, grouped by channel in task order, and puts
    /// the fresh copies their routers made (and kept valid) in `fresh_buf`.
    /// A single task's writes to distinct channels are used as they are.
    pub(super) fn gather_writes(&mut self, tasks: &mut [Task]) -> Result<Vec<(ChannelId, Value)>> {
        let mut writes = self.write_buf.take();
        for task in tasks.iter_mut() {
            if task.fresh.capacity() > 0 {
                for copy in task.fresh.drain(..) {
                    let count = task
                        .writes
                        .iter()
                        .filter(|(c, _)| *c == copy.channel)
                        .count();
                    if count == copy.writes {
                        self.fresh_buf.push(copy);
                    } else if copy.copy.is_none() {
                        return Err(wrote_after_fresh_read(
                            self.graph.shape.node_name(task.node),
                            self.name(copy.channel),
                        ));
                    }
                }
                self.fresh_pool
                    .get_mut()
                    .push(std::mem::take(&mut task.fresh));
            }
            writes.append(&mut task.writes);
            if task.writes.capacity() > 0 {
                self.write_pool
                    .get_mut()
                    .push(std::mem::take(&mut task.writes));
            }
        }
        // A stable sort: writes to one channel stay in task order.
        if !writes.is_sorted_by_key(|(c, _)| *c) {
            writes.sort_by_key(|(c, _)| *c);
        }
        Ok(writes)
    }

    /// Applies writes grouped by channel: each channel's writes as one
    /// update, or, when a router of their only writer read the channel
    /// fresh, that copy in its place.
    pub(super) fn apply_grouped(
        &mut self,
        writes: &mut Vec<(ChannelId, Value)>,
        fresh: &mut Vec<FreshCopy>,
        step: &mut StepChanges,
    ) -> Result<()> {
        let mut pending = writes.drain(..);
        let mut lookahead = pending.next();
        while let Some((channel, first)) = lookahead.take() {
            lookahead = pending.next();
            let group = if lookahead.as_ref().is_some_and(|(c, _)| *c == channel) {
                let mut values = vec![first];
                while let Some((_, value)) = lookahead.take_if(|(c, _)| *c == channel) {
                    values.push(value);
                    lookahead = pending.next();
                }
                ChannelWrites::Many(values)
            } else {
                ChannelWrites::One(first)
            };
            let count = match &group {
                ChannelWrites::One(_) => 1,
                ChannelWrites::Many(values) => values.len(),
            };
            // A trigger consumed above has changed since the copy was made.
            // (A lent channel is never a trigger of its task.)
            let reuse = fresh
                .iter()
                .position(|f| f.channel == channel && f.writes == count)
                .filter(|&i| self.modified[channel] != step.epoch || fresh[i].copy.is_none());
            let changed = if let Some(i) = reuse {
                let fresh = fresh.swap_remove(i);
                if let Some(copy) = fresh.copy {
                    self.channels.set(channel, copy);
                }
                Ok(fresh.changed)
            } else {
                match group {
                    ChannelWrites::One(value) => self.channels.update_one(channel, value),
                    ChannelWrites::Many(values) => self.channels.update(channel, values),
                }
            };
            if changed.map_err(|err| err.at_key(self.name(channel)))? {
                self.record_change(channel, step);
            }
        }
        Ok(())
    }

    /// Tells a channel that nothing was written to it this step, records
    /// the change if it cleared, and drops the run's copy once it is back
    /// in its initial state.
    pub(super) fn update_unwritten(
        &mut self,
        channel: ChannelId,
        step: &mut StepChanges,
    ) -> Result<()> {
        if self.update_empty(channel)? {
            self.record_change(channel, step);
            self.channels.release_if_initial(channel);
        }
        Ok(())
    }

    /// A channel changed in this step: it gets the step's version and, when
    /// available, goes in the step's updated channels (once). (A consumed
    /// trigger only gets the version: `StepChanges::bump`.)
    pub(super) fn record_change(&mut self, channel: ChannelId, step: &mut StepChanges) {
        step.bump(&mut self.versions, &mut self.modified, channel);
        if self.mark[channel] != step.epoch && self.channels.is_available(channel) {
            self.mark[channel] = step.epoch;
            step.updated.push(channel);
        }
    }
}

/// A step's writes to one channel: usually one, so no list is made.
pub(super) enum ChannelWrites {
    One(Value),
    Many(Vec<Value>),
}

/// What one application of writes changed so far.
pub(super) struct StepChanges {
    // The version channels changed in this step get.
    pub(super) next: ChannelVersion,
    // The step's epoch (`PregelLoop::mark`, `PregelLoop::modified`).
    pub(super) epoch: u64,
    // Whether any channel got `next`.
    pub(super) bumped: bool,
    // The channels changed and available, each once.
    pub(super) updated: Vec<ChannelId>,
}

impl StepChanges {
    /// Gives `channel` the step's version (in a run's per-channel tables).
    pub(super) fn bump(
        &mut self,
        versions: &mut [Option<ChannelVersion>],
        modified: &mut [u64],
        channel: ChannelId,
    ) {
        versions[channel] = Some(self.next);
        modified[channel] = self.epoch;
        self.bumped = true;
    }
}
