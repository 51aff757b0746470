//! Runs: background runs, `wait`, get, list, delete and join on a thread,
//! and stateless runs on a temporary thread (API.md 5; TRANSCRIPTS.md
//! sections 12, 13, 14 and 18).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::caller::Caller;
use super::threads::{find, guard};
use super::{ApiError, ApiState, parse_body, thread_id, with_headers};
use crate::auth::{Action, Resource};
use crate::runs::exec::thread_body;
use crate::runs::manager::{CancelAction, LiveRun, Submitted, cancel, check, submit};
use crate::runs::request::{OnDisconnect, RunCreate};
use crate::runs::{RunQuery, RunStatus};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads/{thread_id}/runs", post(create).get(list))
        .route("/threads/{thread_id}/runs/wait", post(wait))
        .route(
            "/threads/{thread_id}/runs/{run_id}",
            get(get_one).delete(delete),
        )
        .route("/threads/{thread_id}/runs/{run_id}/join", get(join))
        .route(
            "/threads/{thread_id}/runs/{run_id}/cancel",
            post(cancel_one),
        )
        .route("/runs/cancel", post(cancel_many))
        .route("/runs", post(create_stateless))
        .route("/runs/wait", post(wait_stateless))
        .route("/runs/batch", post(batch))
}

/// A run id from a path, in its canonical form.
pub(super) fn run_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|id| id.to_string())
        .map_err(|_| ApiError::invalid("Invalid run ID: must be a UUID"))
}

/// A path as a header value (ids are UUIDs, so always valid).
pub(super) fn path_header(path: String) -> HeaderValue {
    HeaderValue::try_from(path).unwrap_or_else(|_| HeaderValue::from_static("/"))
}

/// A run request after the caller's `create_run` authorization, which sees
/// (and may change) the body with its `thread_id`: 404 `Thread or assistant
/// not found.` when the caller's filter leaves out the thread.
async fn authorized(
    state: &ApiState,
    caller: &Caller,
    body: Value,
    thread: Option<&str>,
) -> Result<RunCreate, ApiError> {
    if caller.user().is_none() {
        return RunCreate::from_json(body);
    }
    let mut value = body;
    if let Value::Object(fields) = &mut value {
        fields.insert(
            "thread_id".into(),
            thread.map_or(Value::Null, |id| Value::String(id.to_owned())),
        );
    }
    let filter = caller
        .authorize(state, Resource::Threads, Action::CreateRun, &mut value)
        .await?;
    if let (Some(filter), Some(thread)) = (&filter, thread)
        && let Some(existing) = state.repository.get_thread(thread).await?
        && !filter.matches(&existing.metadata)
    {
        return Err(ApiError::not_found("Thread or assistant not found."));
    }
    if let Value::Object(fields) = &mut value {
        fields.remove("thread_id");
    }
    RunCreate::from_json(value)
}

/// A run request accepted: its run, the thread it runs on, and whether a
/// client gone before its end cancels it.
pub(super) struct Accepted {
    pub(super) submitted: Submitted,
    pub(super) thread_id: String,
    pub(super) cancel_on_disconnect: bool,
}

/// Checks and submits a run request: on `thread` (a thread route's), or
/// for a stateless route (`None`) on a new temporary thread. `subscribe`:
/// the answer streams the run's events.
pub(super) async fn accept(
    state: &ApiState,
    caller: &Caller,
    body: &Bytes,
    thread: Option<String>,
    subscribe: bool,
) -> Result<Accepted, ApiError> {
    let stateless = thread.is_none();
    let request = authorized(state, caller, parse_body(body)?, thread.as_deref()).await?;
    let mut request = check(state, request, stateless).await?;
    request.user = caller.user().cloned();
    let cancel_on_disconnect = request.on_disconnect == OnDisconnect::Cancel;
    let thread_id = thread.unwrap_or_else(crate::wire::time_ordered_id);
    let submitted = submit(state, request, &thread_id, stateless, subscribe).await?;
    Ok(Accepted {
        submitted,
        thread_id,
        cancel_on_disconnect,
    })
}

/// `POST /threads/{id}/runs`: a background run (`pending`), with
/// `Content-Location`.
async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let accepted = accept(&state, &caller, &body, Some(thread_id(&raw_id)?), false).await?;
    let run = &accepted.submitted.run;
    let location = format!("/threads/{}/runs/{}", accepted.thread_id, run.run_id);
    Ok(with_headers(
        Json(run),
        [("content-location", path_header(location))],
    ))
}

/// `POST /runs`: a background run on a temporary thread.
async fn create_stateless(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = accept(&state, &caller, &body, None, false)
        .await?
        .submitted
        .run;
    let location = format!("/runs/{}", run.run_id);
    Ok(with_headers(
        Json(&run),
        [("content-location", path_header(location))],
    ))
}

/// `POST /runs/batch`: several stateless runs, each on its own thread;
/// every request is checked before any starts.
async fn batch(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let requests: Vec<Value> = parse_body(&body)?;
    if requests.is_empty() {
        return Err(ApiError::invalid("[] should be non-empty"));
    }
    let mut checked_requests = Vec::with_capacity(requests.len());
    for request in requests {
        let request = authorized(&state, &caller, request, None).await?;
        let mut request = check(&state, request, true).await?;
        request.user = caller.user().cloned();
        checked_requests.push(request);
    }
    let mut runs = Vec::with_capacity(checked_requests.len());
    for request in checked_requests {
        let thread_id = crate::wire::time_ordered_id();
        runs.push(submit(&state, request, &thread_id, true, false).await?.run);
    }
    Ok(Json(runs).into_response())
}

/// The answer of `wait` and `join`: the run's outcome once it has ended,
/// after a `\n` each heartbeat while it runs (leading whitespace, so the
/// connection stays open and the JSON still parses). With
/// `cancel_on_disconnect`, a client gone before the end cancels the run.
fn outcome_body(live: Arc<LiveRun>, heartbeat: Duration, cancel_on_disconnect: bool) -> Response {
    /// Cancels the run when dropped before it ended, if asked.
    struct Waiter {
        live: Arc<LiveRun>,
        cancel_on_drop: bool,
        done: bool,
    }
    impl Drop for Waiter {
        fn drop(&mut self) {
            if self.cancel_on_drop && !self.live.ended() {
                self.live.cancel.cancel();
            }
        }
    }
    let waiter = Waiter {
        live,
        cancel_on_drop: cancel_on_disconnect,
        done: false,
    };
    let stream = futures::stream::unfold(waiter, move |mut waiter| async move {
        if waiter.done {
            return None;
        }
        let live = Arc::clone(&waiter.live);
        tokio::select! {
            body = live.outcome() => {
                waiter.done = true;
                Some((Ok::<_, Infallible>(body), waiter))
            }
            () = tokio::time::sleep(heartbeat) => Some((Ok(Bytes::from_static(b"\n")), waiter)),
        }
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The `Location` and `Content-Location` of a run's answer: `base` is the
/// run's path (`/threads/{t}/runs/{r}`, or `/runs/{r}` for a stateless
/// stream), `tail` what its `Location` adds (`/join`, `/stream`).
pub(super) fn locations(base: &str, tail: &str) -> [(&'static str, HeaderValue); 2] {
    [
        ("location", path_header(format!("{base}{tail}"))),
        ("content-location", path_header(base.to_owned())),
    ]
}

/// The headers of a thread run's `wait` or `join` answer.
fn run_locations(thread_id: &str, run_id: &str) -> [(&'static str, HeaderValue); 2] {
    locations(&format!("/threads/{thread_id}/runs/{run_id}"), "/join")
}

/// Whether the query sets the flag `name` (`true`, `yes` or `1`, as the
/// official server reads it).
fn flag(pairs: &[(String, String)], name: &str) -> bool {
    pairs.iter().any(|(key, value)| {
        key == name && matches!(value.to_ascii_lowercase().as_str(), "true" | "yes" | "1")
    })
}

/// The query's cancel `action`; an unknown one is the default, as the
/// official server reads it.
fn cancel_action(pairs: &[(String, String)]) -> CancelAction {
    pairs
        .iter()
        .find(|(key, _)| key == "action")
        .and_then(|(_, value)| serde_json::from_value(Value::String(value.clone())).ok())
        .unwrap_or_default()
}

/// `cancel_on_disconnect=true|yes|1` in a join's query.
pub(super) fn cancel_on_disconnect(query: Option<&str>) -> Result<bool, ApiError> {
    Ok(flag(&query_pairs(query)?, "cancel_on_disconnect"))
}

/// `POST /threads/{id}/runs/wait`: a run, answered with its final values
/// (or `{"__error__": ...}` with 200, as the official server).
async fn wait(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let accepted = accept(&state, &caller, &body, Some(thread_id(&raw_id)?), false).await?;
    Ok(waited(&state, accepted))
}

/// `POST /runs/wait`: a run on a temporary thread, answered as `wait`.
async fn wait_stateless(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let accepted = accept(&state, &caller, &body, None, false).await?;
    Ok(waited(&state, accepted))
}

/// The answer of `wait`, on a thread or stateless: the run's outcome, its
/// `Location` its join (the temporary thread's for a stateless run, as the
/// official server answers).
fn waited(state: &ApiState, accepted: Accepted) -> Response {
    let headers = run_locations(&accepted.thread_id, &accepted.submitted.run.run_id);
    let heartbeat = state.settings.streams.heartbeat();
    let body = outcome_body(
        accepted.submitted.live,
        heartbeat,
        accepted.cancel_on_disconnect,
    );
    with_headers(body, headers)
}

/// The pairs of a query string (`select` may repeat).
pub(super) fn query_pairs(query: Option<&str>) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_str(query.unwrap_or_default())
        .map_err(|err| ApiError::invalid(format!("Invalid query string: {err}")))
}

/// A run's fields, as `select` names them.
const RUN_FIELDS: [&str; 10] = [
    "run_id",
    "thread_id",
    "assistant_id",
    "metadata",
    "status",
    "kwargs",
    "multitask_strategy",
    "created_at",
    "updated_at",
    "langsmith_session_name",
];

/// `GET /threads/{id}/runs?limit=&offset=&status=&select=`: newest first.
async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let mut runs = RunQuery {
        limit: 10,
        ..RunQuery::default()
    };
    let mut select = Vec::new();
    let mut unknown_status = false;
    for (key, value) in query_pairs(query.as_deref())? {
        let number = || {
            value.parse::<usize>().map_err(|_| {
                ApiError::bad_request(format!("invalid literal for int() with base 10: '{value}'"))
            })
        };
        match key.as_str() {
            "limit" => runs.limit = number()?,
            "offset" => runs.offset = number()?,
            "status" => match serde_json::from_value::<RunStatus>(Value::String(value.clone())) {
                Ok(status) => runs.status = Some(status),
                // The official server lists nothing for a status no run has.
                Err(_) => unknown_status = true,
            },
            "select" => select.push(value.clone()),
            _ => {}
        }
    }
    let bad: Vec<&String> = select
        .iter()
        .filter(|field| !RUN_FIELDS.contains(&field.as_str()))
        .collect();
    if !bad.is_empty() {
        return Err(ApiError::invalid(format!(
            "Invalid select columns: {bad:?}. Expected: {RUN_FIELDS:?}"
        )));
    }
    if unknown_status {
        return Ok(Json(json!([])).into_response());
    }
    let found = state.repository.list_runs(&thread.thread_id, &runs).await?;
    if select.is_empty() {
        return Ok(Json(found).into_response());
    }
    let shown = found
        .iter()
        .map(|run| {
            let Value::Object(mut fields) = serde_json::to_value(run)? else {
                return Ok(Value::Null);
            };
            fields.retain(|key, _| select.contains(key));
            Ok(Value::Object(fields))
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    Ok(Json(shown).into_response())
}

/// `GET /threads/{id}/runs/{run_id}`.
async fn get_one(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_thread, raw_run)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (thread_id, run_id) = (thread_id(&raw_thread)?, run_id(&raw_run)?);
    guard(&state, &caller, &thread_id, Action::Read).await?;
    match state.repository.get_run(&thread_id, &run_id).await? {
        Some(run) => Ok(Json(run).into_response()),
        None => Err(ApiError::not_found("Not Found")),
    }
}

/// `DELETE /threads/{id}/runs/{run_id}`: a run still in flight is
/// cancelled first; 204.
async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_thread, raw_run)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (thread_id, run_id) = (thread_id(&raw_thread)?, run_id(&raw_run)?);
    guard(&state, &caller, &thread_id, Action::Delete).await?;
    if state
        .repository
        .get_run(&thread_id, &run_id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("Run not found"));
    }
    cancel(&state, &thread_id, &run_id, CancelAction::Interrupt).await?;
    state.repository.delete_run(&thread_id, &run_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /threads/{id}/runs/{run_id}/join?cancel_on_disconnect=`: the run's
/// final values once it ends, as `wait` answers. An unknown run is a 200
/// with an error body, as the official server answers it.
async fn join(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_thread, raw_run)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (thread_id, run_id) = (thread_id(&raw_thread)?, run_id(&raw_run)?);
    guard(&state, &caller, &thread_id, Action::Read).await?;
    let cancel = query_pairs(query.as_deref())?.iter().any(|(key, value)| {
        key == "cancel_on_disconnect"
            && matches!(value.to_ascii_lowercase().as_str(), "true" | "yes" | "1")
    });
    let headers = run_locations(&thread_id, &run_id);
    if let Some(live) = state.runs.live(&run_id)
        && live.thread_id == thread_id
    {
        let heartbeat = state.settings.streams.heartbeat();
        return Ok(with_headers(outcome_body(live, heartbeat, cancel), headers));
    }
    let body = if state
        .repository
        .get_run(&thread_id, &run_id)
        .await?
        .is_some()
    {
        thread_body(state.repository.get_thread(&thread_id).await?.as_ref())
    } else {
        json!({"__error__": {"error": "HTTPException", "message": "404: Run not found"}})
    };
    Ok(with_headers(Json(body), headers))
}

/// `POST /threads/{id}/runs/{run_id}/cancel?wait=&action=`: 202 at once,
/// or with `wait` `{}` once the run has stopped (TRANSCRIPTS.md section 15).
async fn cancel_one(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_thread, raw_run)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (thread_id, run_id) = (thread_id(&raw_thread)?, run_id(&raw_run)?);
    guard(&state, &caller, &thread_id, Action::Update).await?;
    let pairs = query_pairs(query.as_deref())?;
    let action = cancel_action(&pairs);
    if state
        .repository
        .get_run(&thread_id, &run_id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("No runs found to cancel."));
    }
    let live = state.runs.live(&run_id);
    cancel(&state, &thread_id, &run_id, action).await?;
    if !flag(&pairs, "wait") {
        return Ok(StatusCode::ACCEPTED.into_response());
    }
    if let Some(live) = live {
        live.outcome().await;
    }
    Ok(with_headers(
        Json(json!({})),
        run_locations(&thread_id, &run_id),
    ))
}

/// A `POST /runs/cancel` body: runs by thread and ids, by status, or by
/// assistant.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct CancelMany {
    thread_id: Option<String>,
    run_ids: Option<Vec<String>>,
    status: Option<CancelStatus>,
    assistant_id: Option<String>,
}

/// Which in-flight runs `status` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum CancelStatus {
    Pending,
    Running,
    All,
}

/// `POST /runs/cancel?action=`: cancels every run the body names; 204, or
/// 404 when none is in flight.
async fn cancel_many(
    State(state): State<ApiState>,
    caller: Caller,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: CancelMany = parse_body(&body)?;
    let action = cancel_action(&query_pairs(query.as_deref())?);
    let by_ids = body.thread_id.is_some() || body.run_ids.is_some();
    let in_flight = state.repository.in_flight_runs().await?;
    let chosen: Vec<(String, String)> = match (&body.assistant_id, body.status, by_ids) {
        (Some(_), Some(_), _) | (Some(_), _, true) => {
            return Err(ApiError::invalid(
                "Cannot specify 'thread_id', 'run_ids', or 'status' when using 'assistant_id'",
            ));
        }
        (Some(assistant), None, false) => {
            let assistant = state.resolve_assistant(assistant)?;
            in_flight
                .iter()
                .filter(|run| run.assistant_id == assistant)
                .map(|run| (run.thread_id.clone(), run.run_id.clone()))
                .collect()
        }
        (None, Some(_), true) => {
            return Err(ApiError::invalid(
                "Cannot specify 'thread_id' or 'run_ids' when using 'status'",
            ));
        }
        (None, Some(status), false) => in_flight
            .iter()
            .filter(|run| match status {
                CancelStatus::All => true,
                CancelStatus::Pending => run.status == RunStatus::Pending,
                CancelStatus::Running => run.status == RunStatus::Running,
            })
            .map(|run| (run.thread_id.clone(), run.run_id.clone()))
            .collect(),
        (None, None, true) => {
            let (Some(thread), Some(ids)) = (&body.thread_id, &body.run_ids) else {
                return Err(ApiError::invalid(
                    "Must provide either a status, an assistant_id, or both 'thread_id' and 'run_ids'",
                ));
            };
            let thread = thread_id(thread)?;
            ids.iter()
                .map(|id| Ok((thread.clone(), run_id(id)?)))
                .collect::<Result<_, ApiError>>()?
        }
        (None, None, false) => {
            return Err(ApiError::invalid(
                "Must provide either a status, an assistant_id, or both 'thread_id' and 'run_ids'",
            ));
        }
    };
    let mut cancelled = 0;
    for (thread, run) in &chosen {
        // Runs of threads the caller may not change are not found.
        if caller.user().is_some()
            && guard(&state, &caller, thread, Action::Update)
                .await
                .is_err()
        {
            continue;
        }
        if cancel(&state, thread, run, action).await? {
            cancelled += 1;
        }
    }
    if cancelled == 0 {
        return Err(ApiError::not_found("No runs found to cancel."));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
