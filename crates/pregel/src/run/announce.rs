//! Announcing a saved checkpoint: the `checkpoints` chunk and the `debug`
//! checkpoint event, sent once the tasks that follow it are known.

use stategraph_checkpoint::CheckpointConfig;
use stategraph_core::Value;

use super::pregel_loop::PregelLoop;
use super::task::{Task, TaskPath};
use crate::chunk::StreamMode;
use crate::graph::CompiledGraph;

/// A checkpoint config as LangGraph shows it: `{"configurable": {..}}`
/// with the checkpoint's namespace, thread and id and the run's other
/// configurable values (`extra`).
fn config_shown(
    config: &CheckpointConfig,
    extra: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    use serde_json::Value as Json;
    let mut configurable = serde_json::Map::new();
    configurable.insert(
        "checkpoint_ns".into(),
        Json::String(config.checkpoint_ns.clone()),
    );
    configurable.insert("thread_id".into(), Json::String(config.thread_id.clone()));
    for (key, value) in extra {
        configurable
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    configurable.insert(
        "checkpoint_id".into(),
        config
            .checkpoint_id
            .as_ref()
            .map_or(Json::Null, |id| Json::String(id.to_string())),
    );
    serde_json::json!({ "configurable": configurable })
}

/// The payload of a `checkpoints` chunk (and of a `debug` checkpoint event).
#[derive(serde::Serialize)]
pub(super) struct CheckpointEvent {
    pub(super) config: serde_json::Value,
    pub(super) parent_config: Option<serde_json::Value>,
    pub(super) values: Value,
    pub(super) metadata: serde_json::Value,
    pub(super) next: Vec<String>,
    pub(super) tasks: Vec<serde_json::Value>,
}

impl PregelLoop {
    /// Shows the checkpoint saved last in `checkpoints` and `debug`
    /// chunks, with the tasks that follow it (LangGraph emits it once the
    /// next step is planned).
    pub(super) fn announce_checkpoint(&mut self, tasks: &[Task]) {
        let Some(announced) = self.announced.take() else {
            return;
        };
        let graph = &self.graph;
        let mut ordered: Vec<&Task> = tasks.iter().collect();
        ordered.sort_by_key(|task| planned_order(graph, task));
        let shown_tasks = ordered
            .iter()
            .map(|task| {
                let name = graph.shape.node_name(task.node);
                let id = task.pad.as_ref().map(|pad| pad.task_id().to_string());
                let state = task
                    .pad
                    .as_ref()
                    .filter(|_| graph.nodes[task.node].subgraph)
                    .map(|pad| {
                        serde_json::json!({"configurable": {
                            "thread_id": announced.config.thread_id,
                            "checkpoint_ns": pad.namespace(),
                        }})
                    });
                serde_json::json!({"id": id, "name": &**name, "interrupts": [], "state": state})
            })
            .collect();
        let extra = &self.run.config.configurable.extra;
        let to_json = |config: &CheckpointConfig| config_shown(config, extra);
        let event = Value::new(CheckpointEvent {
            config: to_json(&announced.config),
            parent_config: announced.parent.as_ref().map(to_json),
            values: self.values_of(&graph.stream),
            metadata: announced.metadata.to_json(),
            next: ordered
                .iter()
                .map(|task| graph.shape.node_name(task.node).to_string())
                .collect(),
            tasks: shown_tasks,
        });
        let step = announced.metadata.step.unwrap_or(self.step);
        for sink in self.run.sinks() {
            sink.push(StreamMode::Checkpoints, event.clone());
            if sink.wants(StreamMode::Debug) {
                sink.push(
                    StreamMode::Debug,
                    super::emit::debug_event(step, "checkpoint", event.clone()),
                );
            }
        }
    }
}

/// The order LangGraph lists the tasks planned from a stored checkpoint
/// in: `Send` tasks first, then the triggered nodes in the order they were
/// added to the graph.
pub(super) fn planned_order(graph: &CompiledGraph, task: &Task) -> (u8, usize) {
    match task.path {
        TaskPath::Push(index) | TaskPath::Update(index) => (0, index),
        TaskPath::Pull(node) => (1, graph.shape.node_declared(node)),
    }
}
