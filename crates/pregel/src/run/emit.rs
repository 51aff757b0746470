//! What a run shows while it runs: task events (`tasks`, `debug`), the
//! `updates` and `values` chunks, and their payload types.

use std::sync::Arc;

use serde::Serialize;
use stategraph_core::Value;

use super::pregel_loop::PregelLoop;
use super::task::{Task, TaskPath, TaskResult, TaskStart};
use crate::channel_values::ChannelValues;
use crate::chunk::{NodeUpdate, StreamMode, UpdatePayload};
use crate::error::Result;
use crate::names;
use crate::node::{NodeOutput, WriteContext};
use crate::run_info::Sink;
use crate::shape::{ChannelId, IoChannels};

impl PregelLoop {
    pub(super) fn wants_task_events(&self) -> bool {
        self.run.wants(StreamMode::Tasks) || self.run.wants(StreamMode::Debug)
    }

    pub(super) fn task_id(&self, task: &Task) -> String {
        if let Some(pad) = &task.pad {
            return pad.task_id().to_string();
        }
        crate::task_id::TaskIdSeed {
            run: self.run.seed,
            step: self.step,
            push: match task.path {
                TaskPath::Pull(_) | TaskPath::Update(_) => None,
                TaskPath::Push(idx) => Some(idx),
            },
        }
        .task_id(self.graph.shape.node_name(task.node))
    }

    /// Emits a `tasks` chunk and its `debug` twin to every sink wanting them,
    /// with the payload built for that sink.
    pub(super) fn emit_task_event<P: Serialize + Clone + std::marker::Send + Sync + 'static>(
        &self,
        kind: &'static str,
        payload: impl Fn(&Sink) -> P,
    ) {
        for sink in self.run.sinks() {
            if !sink.wants(StreamMode::Tasks) && !sink.wants(StreamMode::Debug) {
                continue;
            }
            let payload = payload(sink);
            if sink.wants(StreamMode::Debug) {
                sink.push(
                    StreamMode::Debug,
                    debug_event(self.step, kind, payload.clone()),
                );
            }
            sink.push(StreamMode::Tasks, Value::new(payload));
        }
    }

    /// The triggers LangGraph reports for a task: `__pregel_push` for a
    /// `Send`, and for a pulled node every trigger of the node, sorted (the
    /// same list its task id hashes), not only the ones that fired.
    pub(super) fn task_triggers(&self, task: &Task) -> Vec<Arc<str>> {
        match task.path {
            TaskPath::Push(_) => vec![Arc::from(names::PUSH)],
            TaskPath::Update(_) => vec![Arc::from(names::INTERRUPT)],
            TaskPath::Pull(_) => self.graph.sorted_triggers(task.node).to_vec(),
        }
    }

    /// The metadata a task event carries (LangGraph's `map_debug_tasks`):
    /// the run's, without the keys that name the checkpoint or the task,
    /// and its tags other than `seq:step:*`; `None` when that is nothing.
    fn task_event_metadata(&self) -> Option<stategraph_core::JsonMap> {
        let config = &self.run.config;
        let mut metadata = crate::context::propagated_metadata(config);
        metadata.retain(|key, _| {
            !stategraph_checkpoint::EXCLUDED_METADATA_KEYS.contains(&key.as_str())
        });
        let tags: Vec<&String> = config
            .tags
            .iter()
            .filter(|tag| !tag.starts_with("seq:step"))
            .collect();
        if !tags.is_empty() {
            metadata.insert("tags".into(), serde_json::json!(tags));
        }
        (!metadata.is_empty()).then_some(metadata)
    }

    /// `{id, name, input, triggers, metadata?}` for a task about to run.
    pub(super) fn emit_task_start(&self, task: &Task) {
        let node = &self.graph.nodes[task.node];
        if node.hidden {
            return;
        }
        let triggers = self.task_triggers(task);
        let id = self.task_id(task);
        let name = self.graph.shape.node_name(task.node).clone();
        let metadata = self.task_event_metadata();
        self.emit_task_event("task", |_| TaskStart {
            id: id.clone(),
            name: name.clone(),
            input: task.input.clone().unwrap_or_else(Value::null),
            triggers: triggers.clone(),
            metadata: metadata.clone(),
        });
    }

    /// Runs the node's writers on its output and emits its `updates` chunk.
    pub(super) fn finish_task(&self, task: &mut Task, output: &NodeOutput) -> Result<()> {
        let node = &self.graph.nodes[task.node];
        let name = self.graph.shape.node_name(task.node);
        let ctx = WriteContext {
            output,
            graph: &self.graph.shape,
            reader: self,
            node: name,
            remaining_steps: self.stop - self.step,
            task: &self.ctx,
            deferred: &self.routes,
        };
        let mut writes = self.write_pool.borrow_mut().pop().unwrap_or_default();
        // What the task pushed while running comes before its output.
        if self.run.has_pushed() {
            let key = crate::run_info::TaskKey {
                node: task.node,
                push: match task.path {
                    TaskPath::Push(index) => Some(index),
                    TaskPath::Pull(_) | TaskPath::Update(_) => None,
                },
                step: self.step,
            };
            self.run.take_pushed(key, &mut writes);
        }
        {
            // Left by a writer that failed; usually empty.
            let mut reads = self.fresh_reads.borrow_mut();
            if !reads.is_empty() {
                reads.clear();
            }
        }
        for writer in &node.writers {
            writer.write(&ctx, &mut writes)?;
        }
        let mut reads = self.fresh_reads.borrow_mut();
        if !reads.is_empty() {
            let spare = self.fresh_pool.borrow_mut().pop().unwrap_or_default();
            task.fresh = std::mem::replace(&mut *reads, spare);
        }
        drop(reads);
        task.writes = writes;
        // With writes still to come, the cache waits for them (`route`).
        if self.graph.caches_writes_of(task.node) && !self.routes_pending() {
            self.store_cached_writes(task);
        }
        if node.hidden {
            return Ok(());
        }
        self.send_output_messages(task);
        self.emit_updates(task, false);
        if self.wants_task_events() {
            let id = self.task_id(task);
            self.emit_task_event("task_result", |sink| {
                // The task's writes to the channels the sink shows, the last per key.
                let mut result: Vec<(Arc<str>, Value)> = Vec::new();
                for (channel, value) in task.writes.iter().filter(|(c, _)| sink.shows(*c)) {
                    let key = self.graph.shape.channel_name_arc(*channel);
                    result.retain(|(k, _)| *k != key);
                    result.push((key, value.clone()));
                }
                TaskResult {
                    id: id.clone(),
                    name: name.clone(),
                    error: None,
                    result: ChannelValues::new(result),
                    interrupts: Vec::new(),
                }
            });
        }
        Ok(())
    }

    /// Emits the task's `updates` chunk to every sink that wants one.
    pub(super) fn emit_updates(&self, task: &Task, cached: bool) {
        if !self.run.wants(StreamMode::Updates) || self.graph.nodes[task.node].hidden {
            return;
        }
        self.emit_update_to(&self.run.sink, task, cached);
        if let Some(forward) = &self.run.forward {
            self.emit_update_to(forward, task, cached);
        }
    }

    pub(super) fn emit_update_to(&self, sink: &Sink, task: &Task, cached: bool) {
        if !sink.wants(StreamMode::Updates) {
            return;
        }
        let chunk = if cached || task.writes.iter().any(|(c, _)| sink.shows(*c)) {
            self.update_chunk(
                self.graph.shape.node_name(task.node),
                &task.writes,
                sink,
                cached,
            )
        } else {
            // `{node: None}`, built once per node.
            self.graph.none_update(task.node).clone()
        };
        sink.push(StreamMode::Updates, chunk);
    }

    /// `{node: update}` from the task's writes to the stream channels.
    pub(super) fn update_chunk(
        &self,
        node: &Arc<str>,
        writes: &[(ChannelId, Value)],
        sink: &Sink,
        cached: bool,
    ) -> Value {
        let shown: Vec<(Arc<str>, Value)> = writes
            .iter()
            .filter(|(c, _)| sink.shows(*c))
            .map(|(c, v)| (self.graph.shape.channel_name_arc(*c), v.clone()))
            .collect();
        let update = match &sink.shown {
            IoChannels::One(_) => match shown.len() {
                0 => UpdatePayload::None,
                1 => UpdatePayload::Value(shown[0].1.clone()),
                _ => UpdatePayload::Values(shown.into_iter().map(|(_, v)| v).collect()),
            },
            IoChannels::Many(_) => {
                if shown.is_empty() {
                    UpdatePayload::None
                } else {
                    let repeated = shown
                        .iter()
                        .enumerate()
                        .any(|(i, (k, _))| shown[..i].iter().any(|(j, _)| j == k));
                    if repeated {
                        UpdatePayload::Maps(
                            shown
                                .into_iter()
                                .map(|pair| ChannelValues::new(vec![pair]))
                                .collect(),
                        )
                    } else {
                        UpdatePayload::Map(ChannelValues::new(shown))
                    }
                }
            }
        };
        Value::new(NodeUpdate {
            node: node.clone(),
            update,
            cached,
        })
    }

    /// Emits the `values` chunk of a step that updated `updated` to every
    /// sink that wants one.
    #[inline]
    pub(super) fn emit_values(&self, updated: &[ChannelId]) {
        if self.run.wants(StreamMode::Values) {
            self.emit_values_to_sinks(updated);
        }
    }

    pub(super) fn emit_values_to_sinks(&self, updated: &[ChannelId]) {
        for sink in self.run.sinks() {
            if !sink.wants(StreamMode::Values) || !updated.iter().any(|c| sink.shows(*c)) {
                continue;
            }
            if sink.latest_only {
                // Holding the values (shared, not copied) costs no allocation
                // once the buffer exists; the chunk is built only if needed.
                let mut held = self.held_values.borrow_mut();
                let held = held.get_or_insert_default();
                held.clear();
                held.extend(sink.shown.ids().iter().map(|c| self.channels.get(*c).get()));
                continue;
            }
            sink.push(StreamMode::Values, self.values_of(&sink.shown));
        }
    }

    /// Sends the values a `latest_only` sink holds as its chunk.
    pub(super) fn send_held_values(&self) {
        let Some(held) = self.held_values.take() else {
            return;
        };
        let sink = &self.run.sink;
        sink.push(StreamMode::Values, self.values_from(&sink.shown, held));
    }

    /// The values of these channels: the value itself for one channel, a
    /// map of the available ones for several.
    pub(super) fn values_of(&self, shown: &IoChannels) -> Value {
        let values = shown.ids().iter().map(|c| self.channels.get(*c).get());
        self.values_from(shown, values)
    }

    /// [`PregelLoop::values_of`] from `values`, one per shown channel in order
    /// (`None` where a channel is empty).
    pub(super) fn values_from(
        &self,
        shown: &IoChannels,
        values: impl IntoIterator<Item = Option<Value>>,
    ) -> Value {
        let mut values = values.into_iter();
        match shown {
            IoChannels::One(_) => values.next().flatten().unwrap_or_else(Value::null),
            IoChannels::Many(channels) => Value::new(ChannelValues::new(
                channels
                    .iter()
                    .zip(values)
                    .filter_map(|(c, value)| Some((self.graph.shape.channel_name_arc(*c), value?)))
                    .collect(),
            )),
        }
    }
}

/// A `debug` chunk of an event of this kind at this step, timestamped now.
pub(super) fn debug_event<P: Serialize + std::marker::Send + Sync + 'static>(
    step: i64,
    kind: &'static str,
    payload: P,
) -> Value {
    Value::new(DebugEvent {
        step,
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false),
        kind,
        payload,
    })
}

/// A `debug` chunk: a task event with its step and time.
#[derive(Clone, Debug, Serialize)]
pub(super) struct DebugEvent<P> {
    pub(super) step: i64,
    pub(super) timestamp: String,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) payload: P,
}
