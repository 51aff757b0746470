//! Executing one run: its graph streamed under the run's cancel token, then
//! the run's and its thread's records brought up to date, the next queued
//! run started, and the answer for `wait` and `join` set.

use std::sync::Arc;

use axum::body::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::RunnableConfig;
use stategraph::graph::{CompiledStateGraph, StreamChunk, StreamMode, StreamModes};
use stategraph::pregel::PregelError;
use tokio_util::sync::CancellationToken;

use super::manager::{LiveRun, start_next};
use super::request::Plan;
use super::{Run, RunStatus};
use crate::server::Core;
use crate::state::thread_content;
use crate::threads::{Thread, ThreadContent, ThreadPatch, ThreadStatus};

/// The version of LangGraph whose behaviour runs follow, as LangGraph
/// Server writes it into a run's metadata.
const LANGGRAPH_VERSION: &str = "1.2.22";

/// What a run produced that `wait` and `join` answer with (the official
/// server's `_RunResult`): the last `values`, the chunks that carried
/// interrupts, or the error.
#[derive(Debug, Default)]
struct Outcome {
    latest: Option<Value>,
    interrupts: Vec<Value>,
    error: Option<Value>,
    cancelled: bool,
    /// When it started executing.
    started_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Outcome {
    /// Whether a chunk counts for the answer: the root graph's `values`,
    /// and its `updates` when the client asked for them (where an interrupt
    /// may show).
    fn takes(chunk: &StreamChunk, requested: StreamModes) -> bool {
        chunk.namespace.is_empty()
            && (chunk.mode == StreamMode::Values
                || (chunk.mode == StreamMode::Updates && requested.contains(StreamMode::Updates)))
    }

    /// Takes in a chunk it [`takes`](Self::takes), as the API shows it.
    fn absorb(&mut self, mode: StreamMode, json: Value) {
        if json.get("__interrupt__").is_some() {
            self.interrupts.push(json.clone());
            self.latest = Some(json);
        } else if mode == StreamMode::Values {
            self.latest = Some(json);
        }
    }

    /// The body: the error, else the interrupts, else the last values, else
    /// what the thread holds (`fallback`).
    fn body(self, fallback: impl FnOnce() -> Value) -> Bytes {
        let value = if let Some(error) = self.error {
            json!({ "__error__": error })
        } else if self.interrupts.len() > 1 {
            let all: Vec<Value> = self
                .interrupts
                .into_iter()
                .filter_map(|mut chunk| chunk.get_mut("__interrupt__").map(Value::take))
                .flat_map(|list| match list {
                    Value::Array(items) => items,
                    other => vec![other],
                })
                .collect();
            json!({ "__interrupt__": all })
        } else if let Some(chunk) = self.interrupts.into_iter().next() {
            chunk
        } else if let Some(latest) = self.latest {
            latest
        } else {
            fallback()
        };
        Bytes::from(serde_json::to_vec(&value).unwrap_or_else(|_| b"{}".to_vec()))
    }
}

/// Interrupts as the official server writes them in events: each with
/// `response_schema` (null unless the node gave one).
pub(crate) fn with_response_schema(mut json: Value) -> Value {
    if let Some(Value::Array(items)) = json.get_mut("__interrupt__") {
        for item in items {
            if let Value::Object(item) = item {
                item.entry("response_schema").or_insert(Value::Null);
            }
        }
    }
    json
}

/// An error event's data: `{"error", "message"}` in that order.
fn error_bytes(error: &Value) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct ErrorEvent<'a> {
        error: &'a Value,
        message: &'a Value,
    }
    let event = ErrorEvent {
        error: &error["error"],
        message: &error["message"],
    };
    serde_json::to_vec(&event).unwrap_or_default()
}

/// A run's error as the API shows it: LangGraph's class and the message.
fn error_json(err: &PregelError) -> Value {
    let (class, message) = match err {
        PregelError::Node { error, .. } => (error.class().to_owned(), error.message().to_owned()),
        other => (other.class().to_owned(), other.to_string()),
    };
    json!({ "error": class, "message": message })
}

/// What `wait` and `join` answer for a run that left no outcome in this
/// process: what its thread holds (the official `_thread_values_fallback`).
pub(crate) fn thread_body(thread: Option<&Thread>) -> Value {
    let Some(thread) = thread else {
        return json!({});
    };
    match (&thread.status, &thread.content) {
        (
            ThreadStatus::Error,
            ThreadContent::Stateful {
                error: Some(error), ..
            },
        ) => json!({ "__error__": error }),
        (ThreadStatus::Interrupted, ThreadContent::Stateful { interrupts, .. })
            if interrupts
                .values()
                .any(|list| list.as_array().is_some_and(|l| !l.is_empty())) =>
        {
            let all: Vec<Value> = interrupts
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .cloned()
                .collect();
            json!({ "__interrupt__": all })
        }
        (_, ThreadContent::Stateful { values, .. })
            if values.as_object().is_none_or(|map| !map.is_empty()) =>
        {
            values.clone()
        }
        _ => json!({}),
    }
}

/// Executes the run (spawned by the manager when the run heads its
/// thread's queue), then finishes it.
pub(super) async fn execute(core: Arc<Core>, thread_id: String, run_id: String) {
    let _executing = core.runs.executing();
    let live = core.runs.live(&run_id);
    let mut outcome = Outcome::default();
    let started = drive(&core, &thread_id, &run_id, live.as_deref(), &mut outcome).await;
    if let Some(live) = &live
        && live.abandoned.load(std::sync::atomic::Ordering::SeqCst)
    {
        // The server is stopping: the records stay as they are, for the
        // next server to take the run over.
        live.events.close();
        return;
    }
    let rollback = live
        .as_ref()
        .is_some_and(|live| live.rollback.load(std::sync::atomic::Ordering::SeqCst));
    let body = finish(&core, &thread_id, started, outcome, rollback).await;
    let done = json!({"status": "run_done", "run_id": run_id});
    core.runs
        .publish_to_thread(&thread_id, "metadata", done.to_string().as_bytes());
    if let Some(live) = live {
        // Streams end once the records say how the run ended, so a client
        // that reads the run after its stream sees its final status.
        live.events.close();
        live.finish(body);
        core.runs.retire(run_id, live.events.resumable());
    }
}

/// The SSE name of a chunk's event: its mode (`messages` for
/// `messages-tuple`), then `|` and the namespace's segments for a
/// subgraph's chunk (API.md 7.4).
fn event_name(chunk: &StreamChunk) -> String {
    let mode = chunk.mode.as_str();
    if chunk.namespace.is_empty() {
        return mode.to_owned();
    }
    let mut name = mode.to_owned();
    for segment in chunk.namespace.iter() {
        name.push('|');
        name.push_str(segment);
    }
    name
}

/// A chunk's data as the API shows it: messages in LangChain's dict form,
/// interrupts with their `response_schema` slot, debug checkpoints with
/// their checkpoint addresses.
fn api_json(chunk: &StreamChunk) -> Value {
    let mut json = chunk.to_json();
    crate::wire::langchain_messages(&mut json);
    if matches!(chunk.mode, StreamMode::Values | StreamMode::Updates) {
        json = with_response_schema(json);
    }
    if chunk.mode == StreamMode::Debug
        && json.get("type").and_then(Value::as_str) == Some("checkpoint")
        && let Some(payload) = json.get_mut("payload")
    {
        addressed(payload);
    }
    json
}

/// A debug checkpoint payload as LangGraph Server shows it: `checkpoint`
/// and `parent_checkpoint` (`{checkpoint_id, thread_id, checkpoint_ns}`, or
/// null) beside the configs, and each task's subgraph `state` config as its
/// `checkpoint`.
fn addressed(payload: &mut Value) {
    let address = |config: Option<&Value>| {
        let configurable = config?.get("configurable")?;
        let thread_id = configurable.get("thread_id").filter(truthy_str)?;
        let checkpoint_id = configurable.get("checkpoint_id").filter(truthy_str)?;
        let mut address = serde_json::Map::new();
        address.insert("checkpoint_id".into(), checkpoint_id.clone());
        address.insert("thread_id".into(), thread_id.clone());
        if let Some(ns) = configurable.get("checkpoint_ns") {
            let ns = if ns.is_null() {
                Value::String(String::new())
            } else {
                ns.clone()
            };
            address.insert("checkpoint_ns".into(), ns);
        }
        Some(Value::Object(address))
    };
    let Value::Object(fields) = payload else {
        return;
    };
    let checkpoint = address(fields.get("config")).unwrap_or(Value::Null);
    let parent = address(fields.get("parent_config")).unwrap_or(Value::Null);
    fields.insert("checkpoint".into(), checkpoint);
    fields.insert("parent_checkpoint".into(), parent);
    if let Some(Value::Array(tasks)) = fields.get_mut("tasks") {
        for task in tasks.iter_mut().filter_map(Value::as_object_mut) {
            let configurable = task
                .get("state")
                .and_then(|state| state.get("configurable"))
                .filter(|c| c.as_object().is_some_and(|c| !c.is_empty()))
                .cloned();
            if let Some(configurable) = configurable {
                task.remove("state");
                task.insert("checkpoint".into(), configurable);
            }
        }
    }
}

/// A non-empty string.
fn truthy_str(value: &&Value) -> bool {
    value.as_str().is_some_and(|s| !s.is_empty())
}

/// Streams the run's graph into `outcome`. The run's record as it started,
/// and its graph; `None` when it did not start (deleted, or cancelled while
/// queued).
async fn drive(
    core: &Core,
    thread_id: &str,
    run_id: &str,
    live: Option<&LiveRun>,
    outcome: &mut Outcome,
) -> Option<(Run, Option<CompiledStateGraph>)> {
    let cancel = live.map_or_else(CancellationToken::new, |live| live.cancel.clone());
    let publish = |name: &str, data: &[u8]| {
        if let Some(live) = live {
            live.events.publish(name, data);
        }
        core.runs.publish_to_thread(thread_id, name, data);
    };
    // A delayed run (`after_seconds`) waits for its time, holding its
    // thread but no execution permit; a cancel ends the wait.
    if let Some(live) = live
        && let Ok(wait) = (live.starts_at - chrono::Utc::now()).to_std()
        && !wait.is_zero()
    {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cancel.cancelled() => {}
        }
    }
    let _permit = core.runs.permit().await;
    let mut run = match core.repository.get_run(thread_id, run_id).await {
        Ok(Some(run)) if run.status == RunStatus::Pending => run,
        Ok(_) => return None,
        Err(err) => {
            tracing::error!(error = %err, run_id, "cannot read the run to start");
            return None;
        }
    };
    let graph_id = run
        .kwargs
        .config
        .configurable
        .get("graph_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(graph) = core.graph(graph_id).cloned() else {
        outcome.error = Some(json!({
            "error": "ValueError",
            "message": format!("Graph '{graph_id}' not found"),
        }));
        return Some((run, None));
    };
    if cancel.is_cancelled() {
        outcome.cancelled = true;
        return Some((run, Some(graph)));
    }
    run.status = RunStatus::Running;
    run.updated_at = chrono::Utc::now();
    outcome.started_at = Some(run.updated_at);
    let metadata = &mut run.kwargs.config.metadata;
    // A run that started before (in a process that died) starts its next
    // attempt.
    let attempt = metadata
        .get("run_attempt")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    metadata.insert("run_attempt".into(), Value::from(attempt));
    metadata.insert("langgraph_version".into(), Value::from(LANGGRAPH_VERSION));
    metadata.insert(
        "stategraph_version".into(),
        Value::from(env!("CARGO_PKG_VERSION")),
    );
    metadata.insert("langgraph_host".into(), Value::from("self-hosted"));
    match core.repository.replace_run(run.clone()).await {
        Ok(true) => {}
        // Deleted while it waited for a permit.
        Ok(false) => return None,
        Err(err) => {
            tracing::error!(error = %err, run_id, "cannot mark the run running");
            outcome.error = Some(json!({"error": "InternalError", "message": err.to_string()}));
            return Some((run, Some(graph)));
        }
    }
    // Its key order is the official one, byte for byte (TRANSCRIPTS.md
    // section 4).
    let metadata = format!(r#"{{"run_id":"{run_id}","attempt":{attempt}}}"#);
    publish("metadata", metadata.as_bytes());
    let plan = match Plan::of(&run) {
        Ok(mut plan) => {
            // A later attempt goes on from the last checkpoint its run
            // saved, with the writes of the tasks that finished, rather
            // than start over (or feed its input a second time).
            if attempt > 1 && saved_by(&graph, thread_id, run_id).await {
                plan.input = stategraph::pregel::Input::Resume;
            }
            plan
        }
        Err(message) => {
            let error = json!({"error": "InvalidUpdateError", "message": message});
            publish("error", error_bytes(&error).as_slice());
            outcome.error = Some(error);
            return Some((run, Some(graph)));
        }
    };
    // `values` always, for the answer of `wait` and `join`.
    let modes = plan.modes.with(StreamMode::Values);
    let mut legacy = plan
        .legacy_messages
        .then(crate::runs::legacy::LegacyMessages::default);
    let mut stream = graph.stream_with(plan.input, &plan.config, modes, plan.options);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                outcome.cancelled = true;
                break;
            }
            chunk = stream.next() => match chunk {
                None => break,
                Some(Ok(chunk)) => {
                    let shown = plan.modes.contains(chunk.mode);
                    let taken = Outcome::takes(&chunk, plan.modes);
                    if shown || taken {
                        let json = api_json(&chunk);
                        if shown && chunk.mode == StreamMode::Messages && let Some(legacy) = &mut legacy {
                            // Legacy events carry no subgraph namespace.
                            for (name, event) in legacy.events(json.clone()) {
                                let data = serde_json::to_vec(&event).unwrap_or_else(|_| b"null".to_vec());
                                publish(name, &data);
                            }
                        } else if shown {
                            let data = serde_json::to_vec(&json).unwrap_or_else(|_| b"null".to_vec());
                            publish(&event_name(&chunk), &data);
                        }
                        if taken {
                            outcome.absorb(chunk.mode, json);
                        }
                    }
                }
                Some(Err(err)) => {
                    let error = error_json(&err);
                    publish("error", error_bytes(&error).as_slice());
                    outcome.error = Some(error);
                    break;
                }
            },
        }
    }
    // Dropping the stream cancels the run cleanly: the thread keeps its
    // last saved checkpoint.
    drop(stream);
    Some((run, Some(graph)))
}

/// Whether the thread's latest checkpoint was saved by this run.
async fn saved_by(graph: &CompiledStateGraph, thread_id: &str, run_id: &str) -> bool {
    match graph.get_state(&RunnableConfig::thread(thread_id)).await {
        Ok(snapshot) => snapshot
            .metadata
            .is_some_and(|metadata| metadata.run_id.as_deref() == Some(run_id)),
        Err(err) => {
            tracing::warn!(error = %err, run_id, "cannot read where the run stopped; it starts over");
            false
        }
    }
}

/// Brings the run's and the thread's records up to date, deletes a
/// temporary thread, starts the thread's next run; the body `wait` and
/// `join` answer.
async fn finish(
    core: &Arc<Core>,
    thread_id: &str,
    started: Option<(Run, Option<CompiledStateGraph>)>,
    outcome: Outcome,
    rollback: bool,
) -> Bytes {
    let mut gate = core.runs.gate(thread_id).await;
    let mut thread = None;
    let mut temporary = false;
    if let Some((mut run, graph)) = started {
        run.status = if outcome.error.is_some() {
            RunStatus::Error
        } else if outcome.cancelled {
            RunStatus::Interrupted
        } else {
            RunStatus::Success
        };
        run.updated_at = chrono::Utc::now();
        temporary = run.kwargs.temporary;
        let webhook = run.kwargs.webhook.as_str().map(str::to_owned);
        let recorded = if rollback && outcome.cancelled {
            roll_back(core, &run).await
        } else {
            core.repository
                .replace_run(run.clone())
                .await
                .map(drop)
                .map_err(|err| err.to_string())
        };
        if let Err(err) = recorded {
            tracing::error!(error = %err, "cannot record the run's end");
        }
        if let Some(graph) = graph {
            let queued = !gate.pending.is_empty();
            thread = refresh_thread(core, &graph, thread_id, outcome.error.clone(), queued).await;
        }
        if let Some(url) = webhook {
            let ended = crate::webhooks::Ended {
                started_at: outcome.started_at,
                values: thread.as_ref().and_then(|thread| thread.values().cloned()),
                error: outcome.error.clone(),
            };
            crate::webhooks::send(
                Arc::clone(core),
                url,
                crate::webhooks::payload(&run, &ended),
            );
        }
    }
    let fallback = thread.clone();
    let body = outcome.body(|| thread_body(fallback.as_ref()));
    if temporary && let Err(err) = delete_thread(core, thread_id).await {
        tracing::error!(error = %err, thread_id, "cannot delete a stateless run's thread");
    }
    gate.running = None;
    start_next(core, thread_id, &mut gate);
    body
}

/// Deletes a cancelled run and the checkpoints it saved (`action:
/// rollback`); the thread is back where the run found it.
async fn roll_back(core: &Core, run: &Run) -> Result<(), String> {
    use stategraph::checkpoint::CheckpointSaver;
    core.saver
        .delete_for_runs(std::slice::from_ref(&run.run_id))
        .await
        .map_err(|err| err.to_string())?;
    core.repository
        .delete_run(&run.thread_id, &run.run_id)
        .await
        .map_err(|err| err.to_string())?;
    Ok(())
}

/// The thread after a run: its latest values and interrupts, and the status
/// they imply (`busy` while runs are queued). `None` when it is gone.
async fn refresh_thread(
    core: &Core,
    graph: &CompiledStateGraph,
    thread_id: &str,
    error: Option<Value>,
    queued: bool,
) -> Option<Thread> {
    let snapshot = graph.get_state(&RunnableConfig::thread(thread_id)).await;
    let (status, content) = match snapshot
        .map_err(|err| err.to_string())
        .and_then(|snapshot| thread_content(&snapshot, error).map_err(|err| format!("{err:?}")))
    {
        Ok(found) => found,
        Err(err) => {
            tracing::error!(error = %err, thread_id, "cannot read the thread's state after a run");
            return None;
        }
    };
    let patch = ThreadPatch {
        status: Some(if queued { ThreadStatus::Busy } else { status }),
        content: Some(content),
        ..ThreadPatch::default()
    };
    match core.repository.patch_thread(thread_id, patch).await {
        Ok(thread) => thread,
        Err(err) => {
            tracing::error!(error = %err, thread_id, "cannot record the thread's state");
            None
        }
    }
}

/// Deletes a thread's checkpoints, then its record and runs (checkpoints
/// first: when that fails, the thread is still there to delete again).
///
/// # Errors
/// The saver's or the repository's.
pub(crate) async fn delete_thread(
    core: &Core,
    thread_id: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use stategraph::checkpoint::CheckpointSaver;
    core.saver.delete_thread(thread_id).await?;
    core.repository.delete_thread(thread_id).await?;
    Ok(())
}
