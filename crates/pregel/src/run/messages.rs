//! The `messages` stream mode (LangGraph's `StreamMessagesHandler`): the
//! chunks of chat models called inside a task, and the messages of a
//! task's output that the stream has not carried yet, each with the task's
//! metadata.
//!
//! Dedupe works as LangGraph's: the ids of messages a task reads and of
//! messages already sent are remembered per stream; a token chunk is always
//! sent, a whole message only when its id is new.

use std::sync::Arc;

use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_llm::observe::{ModelObserver, SharedObserver};

use super::message_sink::{TaskMessages, input_message_ids, lock, messages_in};
use super::pregel_loop::PregelLoop;
use super::task::Task;
use crate::channel_values::ChannelValues;
use crate::chunk::{StreamMode, StreamedMessage};
use crate::run_info::Sink;

impl PregelLoop {
    /// The observer scope for a task's node future: its own observer when a
    /// sink wants `messages`; `Some(None)` to hide an outer task's observer
    /// from this run's tasks (a subgraph whose chunks are not streamed);
    /// `None` when nothing observes.
    pub(super) fn task_observer(&self, task: &mut Task) -> Option<SharedObserver> {
        if self.run.wants(StreamMode::Messages)
            && let Some(messages) = self.task_messages(task)
        {
            let messages = Arc::new(messages);
            task.messages = Some(messages.clone());
            let observer: Arc<dyn ModelObserver> = messages;
            return Some(Some(observer));
        }
        stategraph_llm::observe::is_observed().then_some(None)
    }

    /// Remembers the ids of the messages a task about to run reads, so its
    /// output does not send them again.
    pub(super) fn see_input_messages(&self, task: &Task) {
        let sinks = self.message_sinks();
        if sinks.is_empty() || self.graph.nodes[task.node].hidden {
            return;
        }
        let Some(input) = &task.input else {
            return;
        };
        let mut ids = Vec::new();
        match input.downcast_ref::<ChannelValues>() {
            Some(values) => {
                for (_, value) in values.pairs() {
                    input_message_ids(value, &mut ids);
                }
            }
            None => input_message_ids(input, &mut ids),
        }
        if ids.is_empty() {
            return;
        }
        for sink in sinks {
            lock(&sink.seen).extend(ids.iter().cloned());
        }
    }

    /// Sends the messages of a finished task's writes that the stream has
    /// not carried yet, whole.
    pub(super) fn send_output_messages(&self, task: &Task) {
        if !self.run.wants(StreamMode::Messages) {
            return;
        }
        let mut found = Vec::new();
        for (_, value) in &task.writes {
            messages_in(value, &mut |message| found.push(message.clone()));
        }
        if found.is_empty() {
            return;
        }
        let Some(messages) = task
            .messages
            .clone()
            .or_else(|| self.task_messages(task).map(Arc::new))
        else {
            return;
        };
        let metadata = messages.node_metadata();
        for mut message in found {
            if message.id().is_none() {
                message.set_id(stategraph_core::random_uuid());
            }
            messages.send(&StreamedMessage::Message(message), &metadata, true);
        }
    }

    pub(super) fn message_sinks(&self) -> Vec<Sink> {
        self.run
            .sinks()
            .filter(|sink| sink.wants(StreamMode::Messages))
            .cloned()
            .collect()
    }

    /// The task's message sinks and metadata; `None` for hidden nodes.
    pub(super) fn task_messages(&self, task: &Task) -> Option<TaskMessages> {
        if self.graph.nodes[task.node].hidden {
            return None;
        }
        let sinks = self.message_sinks();
        let name = self.graph.shape.node_name(task.node);
        let namespace = match &task.pad {
            Some(pad) => pad.namespace().to_owned(),
            None => {
                let own = format!("{name}:{}", self.task_id(task));
                let outer = sinks.first().map(|sink| sink.namespace.join("|"));
                match outer {
                    Some(outer) if !outer.is_empty() => format!("{outer}|{own}"),
                    _ => own,
                }
            }
        };
        let config = &self.run.config;
        let mut metadata = JsonMap::new();
        if let Some(thread) = config.thread_id() {
            metadata.insert("thread_id".into(), thread.into());
        }
        // LangGraph 1.2 propagates only these configurable keys into
        // metadata (`_PROPAGATE_TO_METADATA`); other configurable values
        // reach tracers, not stream handlers.
        for key in [
            "checkpoint_id",
            "task_id",
            "run_id",
            "assistant_id",
            "graph_id",
        ] {
            if let Some(value) = config.configurable.extra.get(key)
                && matches!(value, Json::String(s) if !s.is_empty())
            {
                metadata.insert(key.to_owned(), value.clone());
            }
        }
        for (key, value) in &config.metadata {
            metadata.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let triggers: Vec<Json> = self
            .task_triggers(task)
            .iter()
            .map(|t| Json::from(&**t))
            .collect();
        crate::context::task_metadata(
            &mut metadata,
            crate::context::TaskMetadata {
                step: self.step,
                node: name,
                triggers,
                path: super::state::task_path_json(&task.path, name),
                namespace: namespace.clone(),
                own: &self.graph.nodes[task.node].settings().metadata,
            },
        );
        let root_namespace = namespace.split('|').next().unwrap_or_default().to_owned();
        Some(TaskMessages {
            sinks,
            metadata,
            root_namespace,
        })
    }
}
