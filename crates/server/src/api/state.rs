//! A thread's state: read (latest, at a checkpoint), updated, and its
//! history (API.md 4; TRANSCRIPTS.md sections 5, 7 and 8).

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value};
use stategraph::checkpoint::ListQuery;
use stategraph::graph::CompiledStateGraph;
use stategraph::{CheckpointId, RunnableConfig};

use super::caller::Caller;
use super::threads::find;
use super::{ApiError, ApiState, parse_body, thread_id};
use crate::auth::Action;
use crate::state::{ThreadState, thread_content};
use crate::threads::{Thread, ThreadPatch};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads/{thread_id}/state", get(latest).post(update))
        .route(
            "/threads/{thread_id}/state/checkpoint",
            post(at_checkpoint_post),
        )
        .route(
            "/threads/{thread_id}/state/{checkpoint_id}",
            get(at_checkpoint),
        )
        .route(
            "/threads/{thread_id}/history",
            get(history_get).post(history_post),
        )
}

/// The text of the 400 for a state operation on a thread no run has named
/// a graph for (the official text).
pub(super) fn no_graph(thread_id: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Thread '{thread_id}' has no assigned graph ID. This usually occurs when no runs have been made on this particular thread. This operation requires a graph ID. Please ensure a run has been made for the thread or manually update the thread metadata (by setting the 'graph_id' field) before running this operation."
    ))
}

/// Brings the thread's record up to date with its latest state (values,
/// interrupts, status); the state, and the record after it (`None` when
/// the thread is gone).
///
/// # Errors
/// The graph's or the repository's.
pub(super) async fn record_latest(
    state: &ApiState,
    graph: &CompiledStateGraph,
    thread_id: &str,
) -> Result<(stategraph::pregel::StateSnapshot, Option<Thread>), ApiError> {
    let latest = graph.get_state(&RunnableConfig::thread(thread_id)).await?;
    let (status, content) = thread_content(&latest, None)?;
    let patch = ThreadPatch {
        status: Some(status),
        content: Some(content),
        ..ThreadPatch::default()
    };
    let thread = state.repository.patch_thread(thread_id, patch).await?;
    Ok((latest, thread))
}

/// The graph a thread's runs use: the one its metadata's `graph_id` names
/// (set by its first run); `None` before any.
///
/// # Errors
/// 404 when it names no graph this server serves.
pub(super) fn graph_of<'a>(
    state: &'a ApiState,
    thread: &Thread,
) -> Result<Option<&'a CompiledStateGraph>, ApiError> {
    let Some(graph_id) = thread.metadata.get("graph_id") else {
        return Ok(None);
    };
    let found = graph_id
        .as_str()
        .and_then(|id| state.graphs.iter().find(|(g, _)| g == id));
    match found {
        Some((_, graph)) => Ok(Some(graph)),
        None => {
            let mut ids: Vec<String> = state.graph_ids().map(|id| format!("'{id}'")).collect();
            ids.sort();
            Err(ApiError::not_found(format!(
                "Graph '{}' not found. Expected one of: [{}]",
                graph_id.as_str().unwrap_or_default(),
                ids.join(", ")
            )))
        }
    }
}

/// `?subgraphs=true`.
#[derive(Debug, Default, Deserialize)]
struct SubgraphsQuery {
    subgraphs: Option<String>,
}

impl SubgraphsQuery {
    fn on(&self) -> bool {
        // The official server takes exactly these two spellings.
        matches!(self.subgraphs.as_deref(), Some("true" | "True"))
    }
}

/// The state at `config` as the API shows it; empty for a thread no graph
/// has run on.
async fn read_state(
    state: &ApiState,
    thread: &Thread,
    config: &RunnableConfig,
    subgraphs: bool,
    echo_without_ns: bool,
) -> Result<Response, ApiError> {
    let Some(graph) = graph_of(state, thread)? else {
        return Ok(Json(ThreadState::empty()).into_response());
    };
    let snapshot = if subgraphs {
        graph.get_state_with_subgraphs(config).await?
    } else {
        graph.get_state(config).await?
    };
    Ok(Json(ThreadState::of(&snapshot, echo_without_ns)?).into_response())
}

/// `GET /threads/{id}/state`: the latest state.
async fn latest(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<SubgraphsQuery>,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let config = RunnableConfig::thread(&thread.thread_id);
    read_state(&state, &thread, &config, query.on(), false).await
}

/// `GET /threads/{id}/state/{checkpoint_id}`.
async fn at_checkpoint(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_id, checkpoint_id)): Path<(String, String)>,
    Query(query): Query<SubgraphsQuery>,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let config = RunnableConfig::thread(&thread.thread_id)
        .with_checkpoint_id(CheckpointId::from(checkpoint_id.as_str()));
    read_state(&state, &thread, &config, query.on(), true).await
}

/// A checkpoint's address in a request (`CheckpointConfig`); the thread
/// always comes from the path.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Checkpoint {
    checkpoint_id: Option<String>,
    checkpoint_ns: Option<String>,
}

impl Checkpoint {
    /// `config` addressing this checkpoint.
    fn apply(&self, mut config: RunnableConfig) -> RunnableConfig {
        if let Some(id) = &self.checkpoint_id {
            config = config.with_checkpoint_id(CheckpointId::from(id.as_str()));
        }
        if let Some(ns) = &self.checkpoint_ns {
            config = config.with_checkpoint_ns(ns.clone());
        }
        config
    }
}

/// A `POST /threads/{id}/state/checkpoint` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CheckpointBody {
    checkpoint: Checkpoint,
    subgraphs: Option<bool>,
}

/// `POST /threads/{id}/state/checkpoint`: the state at the given address
/// (RemoteGraph sends only the thread for the latest).
async fn at_checkpoint_post(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let body: CheckpointBody = parse_body(&body)?;
    let config = body
        .checkpoint
        .apply(RunnableConfig::thread(&thread.thread_id));
    let echo = body.checkpoint.checkpoint_id.is_some() && body.checkpoint.checkpoint_ns.is_none();
    read_state(
        &state,
        &thread,
        &config,
        body.subgraphs.unwrap_or(false),
        echo,
    )
    .await
}

/// A `POST /threads/{id}/state` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UpdateBody {
    values: Option<Value>,
    as_node: Option<String>,
    checkpoint: Option<Checkpoint>,
    checkpoint_id: Option<String>,
}

/// `POST /threads/{id}/state`: writes `values` as `as_node` would have
/// (through the reducers), from the latest checkpoint or the one given;
/// the thread's values, interrupts and status follow.
async fn update(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Update).await?;
    let body: UpdateBody = parse_body(&body)?;
    let Some(graph) = graph_of(&state, &thread)? else {
        return Err(no_graph(&thread.thread_id));
    };
    // Held until the thread's record is up to date: no run starts between.
    let gate = state.runs.gate(&thread.thread_id).await;
    if gate.busy() {
        let runs: Vec<&String> = gate.running.iter().chain(&gate.pending).collect();
        return Err(ApiError::conflict(format!(
            "Thread {} has in-flight runs: {runs:?}",
            thread.thread_id
        )));
    }
    let mut config = RunnableConfig::thread(&thread.thread_id);
    if let Some(id) = &body.checkpoint_id {
        config = config.with_checkpoint_id(CheckpointId::from(id.as_str()));
    }
    if let Some(checkpoint) = &body.checkpoint {
        config = checkpoint.apply(config);
    }
    let written = graph
        .update_state(
            &config,
            body.values.map(stategraph::Value::from_json),
            body.as_node.as_deref(),
        )
        .await?;
    let (latest, _) = record_latest(&state, graph, &thread.thread_id).await?;
    drop(gate);
    if state.runs.thread_followed(&thread.thread_id) {
        let event = serde_json::json!({
            "state": ThreadState::of(&latest, false)?,
            "thread_id": thread.thread_id,
        });
        state.runs.publish_to_thread(
            &thread.thread_id,
            "state_update",
            event.to_string().as_bytes(),
        );
    }
    let address = serde_json::json!({
        "thread_id": written.thread_id,
        "checkpoint_ns": written.checkpoint_ns,
        "checkpoint_id": written.checkpoint_id.as_ref().map(ToString::to_string),
    });
    Ok(Json(UpdateResponse {
        checkpoint: address.clone(),
        configurable: address,
        checkpoint_id: written.checkpoint_id.as_ref().map(ToString::to_string),
    })
    .into_response())
}

/// What an update answers: the new checkpoint's address, twice more in
/// legacy forms (TRANSCRIPTS.md section 8).
#[derive(Debug, serde::Serialize)]
struct UpdateResponse {
    checkpoint: Value,
    configurable: Value,
    checkpoint_id: Option<String>,
}

/// The most checkpoints one history page holds.
const MAX_HISTORY: usize = 1000;

/// A thread's checkpoints, newest first, as states; none before a run.
async fn history(
    state: &ApiState,
    thread: &Thread,
    config: &RunnableConfig,
    query: ListQuery,
) -> Result<Response, ApiError> {
    let Some(graph) = graph_of(state, thread)? else {
        return Ok(Json(Vec::<ThreadState>::new()).into_response());
    };
    let states = graph
        .get_state_history(config, query)
        .await?
        .iter()
        .map(|snapshot| ThreadState::of(snapshot, false))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(states).into_response())
}

/// `limit` checked: 1 when absent (the server's default; the SDKs send
/// 10), at most [`MAX_HISTORY`]. `zero_ok`: the official `GET` takes 0
/// (an empty page) where `POST` refuses it.
fn history_limit(limit: Option<i64>, zero_ok: bool) -> Result<usize, ApiError> {
    let Some(limit) = limit else { return Ok(1) };
    let least = if zero_ok { 0 } else { 1 };
    usize::try_from(limit)
        .ok()
        .filter(|n| (least..=MAX_HISTORY).contains(n))
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "limit must be between {least} and {MAX_HISTORY}, got {limit}"
            ))
        })
}

/// `GET /threads/{id}/history` query.
#[derive(Debug, Default, Deserialize)]
struct HistoryQuery {
    limit: Option<String>,
    before: Option<String>,
}

/// `GET /threads/{id}/history?limit=&before=`.
async fn history_get(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let limit = match query.limit.as_deref() {
        None => None,
        Some(text) => Some(
            text.parse::<i64>()
                .map_err(|_| ApiError::invalid(format!("Invalid limit {text}")))?,
        ),
    };
    let mut list = ListQuery::default().limit(history_limit(limit, true)?);
    if let Some(before) = query.before {
        list = list.before(CheckpointId::from(before.as_str()));
    }
    let config = RunnableConfig::thread(&thread.thread_id);
    history(&state, &thread, &config, list).await
}

/// A `POST /threads/{id}/history` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HistoryBody {
    limit: Option<i64>,
    before: Option<Before>,
    metadata: Option<Map<String, Value>>,
    checkpoint: Option<Checkpoint>,
}

/// `before`: a checkpoint id, or a checkpoint's address.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Before {
    Id(String),
    Address(Checkpoint),
}

/// `POST /threads/{id}/history`: filtered by metadata, from a namespace.
async fn history_post(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let body: HistoryBody = parse_body(&body)?;
    let mut list = ListQuery::default().limit(history_limit(body.limit, false)?);
    let before = match body.before {
        Some(Before::Id(id)) => Some(id),
        Some(Before::Address(address)) => address.checkpoint_id,
        None => None,
    };
    if let Some(before) = before {
        list = list.before(CheckpointId::from(before.as_str()));
    }
    if let Some(metadata) = body.metadata {
        list = list.filter(Value::Object(metadata));
    }
    let mut config = RunnableConfig::thread(&thread.thread_id);
    if let Some(checkpoint) = &body.checkpoint {
        config = checkpoint.apply(config);
    }
    history(&state, &thread, &config, list).await
}
