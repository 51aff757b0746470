//! Runs: the record the API shows (API.md 2, TRANSCRIPTS.md section 13),
//! what a request asks for ([`request`]), the manager that keeps one run
//! per thread ([`manager`]) and the task that executes one ([`exec`]).

pub(crate) mod events;
pub(crate) mod exec;
pub(crate) mod legacy;
pub(crate) mod manager;
pub(crate) mod request;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use manager::RunManager;

/// A run's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RunStatus {
    /// Waiting for its turn on its thread.
    Pending,
    /// Executing.
    Running,
    /// Finished (an interrupt is a success: only the thread is
    /// `interrupted`).
    Success,
    /// The graph failed.
    Error,
    /// Cancelled (a client gone with `on_disconnect: cancel`, the thread
    /// deleted, the server shutting down).
    Interrupted,
}

/// What a new run on a busy thread does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MultitaskStrategy {
    /// Refused with 409.
    Reject,
    /// Queued behind the thread's runs (the default).
    #[default]
    Enqueue,
    /// Cancels the running run, keeping its progress.
    Interrupt,
    /// Cancels the running run and deletes it.
    Rollback,
}

/// A run, its fields in the official server's order (also the record a
/// repository stores).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Run {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) assistant_id: String,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) status: RunStatus,
    pub(crate) kwargs: RunKwargs,
    pub(crate) multitask_strategy: MultitaskStrategy,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) updated_at: DateTime<Utc>,
    /// Always null: this server does not trace to LangSmith.
    pub(crate) langsmith_session_name: Option<String>,
}

/// What a run was asked to do, as the API shows it under `kwargs`: enough
/// to execute it again from the record alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RunKwargs {
    pub(crate) input: Value,
    pub(crate) command: Value,
    pub(crate) config: RunConfig,
    pub(crate) context: Map<String, Value>,
    pub(crate) stream_mode: Vec<String>,
    pub(crate) interrupt_before: Value,
    pub(crate) interrupt_after: Value,
    pub(crate) webhook: Value,
    pub(crate) feedback_keys: Value,
    /// A stateless run's thread, deleted when the run ends.
    pub(crate) temporary: bool,
    pub(crate) subgraphs: bool,
    pub(crate) resumable: bool,
    pub(crate) checkpoint_during: bool,
    pub(crate) durability: String,
}

/// A run's `config`: `configurable` and `metadata`, with the request's
/// other config keys (`tags`, `recursion_limit`) kept as given.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RunConfig {
    #[serde(default)]
    pub(crate) configurable: Map<String, Value>,
    #[serde(default)]
    pub(crate) metadata: Map<String, Value>,
    #[serde(flatten)]
    pub(crate) other: Map<String, Value>,
}

/// Which runs of a thread a list shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunQuery {
    pub(crate) status: Option<RunStatus>,
    pub(crate) limit: usize,
    pub(crate) offset: usize,
}
