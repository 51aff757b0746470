//! A thread's state as the API shows it (`ThreadState`, API.md 2;
//! TRANSCRIPTS.md sections 5, 7 and 8), rendered from the runtime's
//! [`StateSnapshot`], and what a thread record keeps of it.

use serde::Serialize;
use serde_json::{Map, Value as Json};
use stategraph::checkpoint::CheckpointConfig;
use stategraph::graph::StateSnapshot;
use stategraph::pregel::Interrupt;

use crate::api::ApiError;
use crate::threads::{ThreadContent, ThreadStatus};

/// A `ThreadState`, its fields in the official server's order.
#[derive(Debug, Serialize)]
pub(crate) struct ThreadState {
    values: Json,
    next: Vec<String>,
    tasks: Vec<TaskState>,
    metadata: Option<Json>,
    created_at: Option<String>,
    checkpoint: Option<Address>,
    parent_checkpoint: Option<Address>,
    interrupts: Vec<InterruptView>,
    // The two below are legacy duplicates the official server still sends.
    checkpoint_id: Option<String>,
    parent_checkpoint_id: Option<String>,
}

/// A checkpoint's address. `checkpoint_ns` is left out where the official
/// server echoes an address asked for without one.
#[derive(Debug, Serialize)]
struct Address {
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint_id: Option<String>,
    thread_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint_ns: Option<String>,
}

impl Address {
    fn of(config: &CheckpointConfig, with_ns: bool) -> Self {
        Self {
            checkpoint_id: config.checkpoint_id.as_ref().map(ToString::to_string),
            thread_id: config.thread_id.clone(),
            checkpoint_ns: with_ns.then(|| config.checkpoint_ns.clone()),
        }
    }
}

/// A task of a state.
#[derive(Debug, Serialize)]
struct TaskState {
    id: String,
    name: String,
    path: Json,
    error: Option<String>,
    interrupts: Vec<InterruptView>,
    /// Where a subgraph task's checkpoints are (when its state is not
    /// shown).
    checkpoint: Option<Address>,
    /// The subgraph's state, when asked for with `subgraphs=true`.
    state: Option<Box<ThreadState>>,
    result: Option<Json>,
}

/// An interrupt: `{id, value}`.
#[derive(Debug, Serialize)]
pub(crate) struct InterruptView {
    id: String,
    value: Json,
}

impl InterruptView {
    fn of(interrupt: &Interrupt) -> Result<Self, ApiError> {
        Ok(Self {
            id: interrupt.id.clone(),
            value: interrupt.value.to_json()?,
        })
    }
}

fn interrupts(list: &[Interrupt]) -> Result<Vec<InterruptView>, ApiError> {
    list.iter().map(InterruptView::of).collect()
}

impl ThreadState {
    /// The state of `snapshot`. `echo_without_ns`: the request named a
    /// checkpoint id but no namespace, and the official server then echoes
    /// that address, with no `checkpoint_ns` (TRANSCRIPTS.md section 8).
    ///
    /// # Errors
    /// 500 for a value that is not JSON.
    pub(crate) fn of(snapshot: &StateSnapshot, echo_without_ns: bool) -> Result<Self, ApiError> {
        let tasks = snapshot
            .tasks
            .iter()
            .map(|task| {
                let state = task
                    .subgraph
                    .as_deref()
                    .map(|sub| Self::of(sub, false).map(Box::new))
                    .transpose()?;
                Ok(TaskState {
                    id: task.id.clone(),
                    name: task.name.clone(),
                    path: task.path.clone(),
                    error: task.error.clone(),
                    interrupts: interrupts(&task.interrupts)?,
                    checkpoint: match (&state, &task.state) {
                        (None, Some(config)) => Some(Address::of(config, true)),
                        _ => None,
                    },
                    state,
                    result: task
                        .result
                        .as_ref()
                        .map(|result| {
                            let mut json = result.to_json()?;
                            crate::wire::langchain_messages(&mut json);
                            Ok::<_, ApiError>(json)
                        })
                        .transpose()?,
                })
            })
            .collect::<Result<_, ApiError>>()?;
        // An empty thread has no checkpoint, so no address.
        let own = snapshot
            .metadata
            .is_some()
            .then(|| Address::of(&snapshot.config, !echo_without_ns));
        let mut values = snapshot.values.to_json()?;
        crate::wire::langchain_messages(&mut values);
        Ok(Self {
            values,
            next: snapshot.next.clone(),
            tasks,
            metadata: snapshot
                .metadata
                .as_ref()
                .map(serde_json::to_value)
                .transpose()?,
            created_at: snapshot.created_at.as_deref().map(api_time),
            checkpoint_id: own.as_ref().and_then(|a| a.checkpoint_id.clone()),
            checkpoint: own,
            parent_checkpoint: snapshot
                .parent_config
                .as_ref()
                .map(|config| Address::of(config, true)),
            parent_checkpoint_id: snapshot
                .parent_config
                .as_ref()
                .and_then(|config| config.checkpoint_id.as_ref().map(ToString::to_string)),
            interrupts: interrupts(&snapshot.interrupts)?,
        })
    }

    /// The state of a thread no graph has run on: nothing at all (the
    /// official server's answer when the thread has no `graph_id`).
    pub(crate) fn empty() -> Self {
        Self {
            values: Json::Object(Map::new()),
            next: Vec::new(),
            tasks: Vec::new(),
            metadata: None,
            created_at: None,
            checkpoint: None,
            parent_checkpoint: None,
            interrupts: Vec::new(),
            checkpoint_id: None,
            parent_checkpoint_id: None,
        }
    }
}

/// A checkpoint's RFC 3339 time in the API's form (`+00:00`,
/// microseconds); kept as it is when it does not parse.
fn api_time(ts: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(ts).map_or_else(
        |_| ts.to_owned(),
        |time| crate::wire::timestamp(time.with_timezone(&chrono::Utc)),
    )
}

/// What a thread record keeps of its latest state, and the status that
/// follows from it, as the official server derives them after a run or an
/// update: `error` when the run failed, `interrupted` when tasks are left,
/// else `idle`.
///
/// # Errors
/// 500 for a value that is not JSON.
pub(crate) fn thread_content(
    snapshot: &StateSnapshot,
    error: Option<Json>,
) -> Result<(ThreadStatus, ThreadContent), ApiError> {
    let status = if error.is_some() {
        ThreadStatus::Error
    } else if snapshot.next.is_empty() {
        ThreadStatus::Idle
    } else {
        ThreadStatus::Interrupted
    };
    let mut by_task = Map::new();
    for task in &snapshot.tasks {
        if !task.interrupts.is_empty() {
            let list = serde_json::to_value(interrupts(&task.interrupts)?)?;
            by_task.insert(task.id.clone(), list);
        }
    }
    let mut values = snapshot.values.to_json()?;
    crate::wire::langchain_messages(&mut values);
    let content = ThreadContent::Stateful {
        values,
        error,
        interrupts: by_task,
    };
    Ok((status, content))
}
