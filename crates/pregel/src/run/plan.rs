//! Planning a superstep (LangGraph's `prepare_next_tasks`): the nodes its
//! updated channels trigger, each with the input map it reads.

use std::sync::Arc;

use stategraph_core::Value;

use super::kept_input::{KeptInput, forget_inputs};
use super::pregel_loop::PregelLoop;
use super::task::{Task, TaskPath};
use crate::channel_values::ChannelValues;
use crate::command::Send;
use crate::error::Result;
use crate::node::Reads;
use crate::shape::{ChannelId, NodeId};

impl PregelLoop {
    pub(super) fn prepare_tasks(&mut self, updated: &[ChannelId]) -> Result<Vec<Task>> {
        let mut tasks = self.task_buf.take();
        tasks.clear();
        let mut candidates = self.candidate_buf.take();
        candidates.clear();
        let graph = &*self.graph;
        // PUSH tasks: one per Send of the previous step.
        if let Some(sends) = self.channels.get(graph.tasks_channel).get() {
            let sends = sends.decode::<Vec<Send>>()?;
            for (idx, send) in sends.iter().enumerate() {
                match graph.shape.node_id(&send.node) {
                    Some(node) => {
                        tasks.push(Task::new(node, TaskPath::Push(idx), Some(send.arg.clone())))
                    }
                    None => tracing::warn!("ignoring Send to unknown node {:?}", send.node),
                }
            }
        }
        // PULL tasks: nodes whose triggers changed since they last ran.
        if let [channel] = updated {
            // One updated channel (a chain's step): its nodes come in order.
            let mut last = None;
            for &node in graph.triggered_by(*channel) {
                if last != Some(node) {
                    last = Some(node);
                    self.pull_task(&mut tasks, node);
                }
            }
        } else {
            // With nothing updated (the run's first step after a resume, or
            // after a step that changed nothing) LangGraph checks every
            // node; only one with an available trigger can run, and `live`
            // holds every available channel.
            let sources = if updated.is_empty() && self.max_version.is_some() {
                self.live.as_slice()
            } else {
                updated
            };
            candidates.extend(
                sources
                    .iter()
                    .flat_map(|c| graph.triggered_by(*c).iter().copied()),
            );
            candidates.sort_unstable();
            candidates.dedup();
            for &node in &candidates {
                self.pull_task(&mut tasks, node);
            }
        }
        self.candidate_buf.put(candidates);
        Ok(tasks)
    }

    /// Adds `node`'s PULL task when its triggers moved and its input exists.
    pub(super) fn pull_task(&self, tasks: &mut Vec<Task>, node: NodeId) {
        if !self.triggered(node) {
            return;
        }
        let input = match &self.graph.nodes[node].reads {
            Reads::Channel(channel) => match self.channels.get(*channel).get() {
                Some(value) => value,
                None => return,
            },
            Reads::Map(keys) => self.read_map(self.graph.node_read_set[node], keys),
        };
        tasks.push(Task::new(node, TaskPath::Pull(node), Some(input)));
    }

    /// Releases the kept inputs' hold on the channels the tasks write (see
    /// `forget_inputs`), so reducers extend those values in place.
    pub(super) fn forget_inputs_of_written(&mut self, tasks: &[Task]) {
        // Most steps write only channels no node reads as a map (edges).
        let read = &self.graph.in_read_set;
        if !tasks
            .iter()
            .any(|task| task.writes.iter().any(|(c, _)| read[*c]))
        {
            return;
        }
        forget_inputs(
            self.input_cache.get_mut(),
            &self.graph.read_sets,
            |channel| {
                tasks
                    .iter()
                    .any(|task| task.writes.iter().any(|(c, _)| *c == channel))
            },
        );
    }

    /// The state map a node reads, shared with every node of the same read
    /// set until one of its channels changes.
    ///
    /// Once its nodes have let go of it, a stale map is brought up to date
    /// in place: only the entries of changed channels are read again, and
    /// the keys are never copied.
    pub(super) fn read_map(&self, set: usize, keys: &[(Arc<str>, ChannelId)]) -> Value {
        let mut cache = self.input_cache.borrow_mut();
        if let Some(kept) = &mut cache[set] {
            // The read set's channel list is shared by its nodes (warm in
            // the cache), unlike each node's own key list.
            if !kept.holes
                && self.graph.read_sets[set]
                    .iter()
                    .all(|c| self.modified[*c] <= kept.built)
            {
                return Value::from_arc(kept.map.clone());
            }
            if let Some(pairs) = Arc::get_mut(&mut kept.map).and_then(ChannelValues::pairs_mut) {
                self.refresh(pairs, &mut kept.channels, keys, kept.built);
                kept.built = self.epoch;
                kept.holes = false;
                return Value::from_arc(kept.map.clone());
            }
        }
        let mut pairs = Vec::with_capacity(keys.len());
        let mut channels = Vec::with_capacity(keys.len());
        for (key, channel) in keys {
            if let Some(value) = self.channels.get(*channel).get() {
                pairs.push((key.clone(), value));
                channels.push(*channel);
            }
        }
        let map = Arc::new(ChannelValues::new(pairs));
        let value = Value::from_arc(map.clone());
        cache[set] = Some(KeptInput {
            built: self.epoch,
            map,
            channels,
            holes: false,
        });
        value
    }

    /// Reads again the entries of a kept map (built from `keys` at epoch
    /// `built`) whose channels changed since, or whose values
    /// `forget_inputs` took; `channels` is the channel of each entry.
    pub(super) fn refresh(
        &self,
        pairs: &mut Vec<(Arc<str>, Value)>,
        channels: &mut Vec<ChannelId>,
        keys: &[(Arc<str>, ChannelId)],
        built: u64,
    ) {
        let mut at = 0;
        for (key, channel) in keys {
            let present = channels.get(at) == Some(channel);
            // A taken value is left as an inline `null`; a real one reads
            // again at no cost.
            if self.modified[*channel] <= built && !(present && pairs[at].1.is_inline_null()) {
                at += usize::from(present);
                continue;
            }
            match (present, self.channels.get(*channel).get()) {
                (true, Some(value)) => {
                    pairs[at].1 = value;
                    at += 1;
                }
                (true, None) => {
                    pairs.remove(at);
                    channels.remove(at);
                }
                (false, Some(value)) => {
                    pairs.insert(at, (key.clone(), value));
                    channels.insert(at, *channel);
                    at += 1;
                }
                (false, None) => {}
            }
        }
    }

    pub(super) fn triggered(&self, node: NodeId) -> bool {
        let triggers = &self.graph.nodes[node].triggers;
        if !self.ran[node] {
            return triggers.iter().any(|c| self.channels.is_available(*c));
        }
        let offset = self.graph.seen_offset[node];
        triggers.iter().enumerate().any(|(i, c)| {
            self.channels.is_available(*c) && self.versions[*c] > self.seen[offset + i]
        })
    }
}
