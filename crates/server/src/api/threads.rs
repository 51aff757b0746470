//! `/threads`: create, read, patch, delete, search, count and copy
//! (API.md 4; TRANSCRIPTS.md sections 3, 8 and 22).

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use stategraph::checkpoint::CheckpointSaver;

use super::caller::{Caller, passes};
use super::{ApiError, ApiState, pagination, parse_body, thread_id, with_headers};
use crate::auth::{Action, Resource};
use crate::persist::Inserted;
use crate::threads::{
    SortOrder, Thread, ThreadContent, ThreadField, ThreadFilter, ThreadPatch, ThreadSearch,
    ThreadSort, ThreadTtl,
};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/count", post(count))
        .route("/threads/prune", post(prune))
        .route(
            "/threads/{thread_id}",
            get(get_one).patch(patch).delete(delete),
        )
        .route("/threads/{thread_id}/copy", post(copy))
}

/// What `POST /threads` does when the id is taken.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum IfExists {
    /// 409.
    #[default]
    Raise,
    /// The existing thread, unchanged.
    DoNothing,
}

/// A `POST /threads` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CreateBody {
    thread_id: Option<uuid::Uuid>,
    metadata: Option<Map<String, Value>>,
    if_exists: Option<IfExists>,
    ttl: Option<Value>,
    supersteps: Option<Vec<Superstep>>,
}

/// One superstep of a new thread's history: updates applied together.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Superstep {
    updates: Vec<SuperstepUpdate>,
}

/// One update of a superstep: values written as `as_node`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SuperstepUpdate {
    values: Option<Value>,
    command: Option<Value>,
    as_node: Option<String>,
}

/// The supersteps of a `POST /threads` as the graph's updates. An update's
/// `command` (LangGraph's `Command` in its wire form) takes the place of
/// its `values`, as on the official server; its `resume` does nothing.
///
/// # Errors
/// 422 naming a command that is not LangGraph's form.
fn superstep_updates(
    supersteps: Vec<Superstep>,
) -> Result<Vec<Vec<stategraph::pregel::StateUpdate>>, ApiError> {
    use stategraph::pregel::{Command, StateUpdate};
    supersteps
        .into_iter()
        .map(|step| {
            step.updates
                .into_iter()
                .map(|update| {
                    let mut one = match update.command {
                        Some(Value::Null) | None => StateUpdate::default(),
                        Some(command) => {
                            StateUpdate::command(Command::from_json(command).map_err(|err| {
                                ApiError::invalid(format!("Invalid command: {}", err.0))
                            })?)
                        }
                    };
                    if one.command.is_none() {
                        one.values = update.values.map(stategraph::Value::from_json);
                    }
                    one.as_node = update.as_node;
                    Ok(one)
                })
                .collect()
        })
        .collect()
}

/// `POST /threads`: a new thread (`status: idle`, `values: null`); with
/// `supersteps`, its history is written first (LangGraph's
/// `bulk_update_state`, one checkpoint per superstep) by the graph its
/// `metadata.graph_id` names.
async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut body: CreateBody = parse_body(&body)?;
    let now = chrono::Utc::now();
    let ttl = match &body.ttl {
        Some(given) => ThreadTtl::from_request(given, now).map_err(ApiError::invalid)?,
        None => ThreadTtl::default_of(&state.settings.threads, now),
    };
    let supersteps = superstep_updates(body.supersteps.take().unwrap_or_default())?;
    let thread_id = body
        .thread_id
        .map_or_else(crate::wire::time_ordered_id, |id| id.to_string());
    // The auth handler sees the request and may change its metadata.
    let mut value = json!({
        "thread_id": thread_id,
        "metadata": body.metadata.take().unwrap_or_default(),
    });
    let filter = caller
        .authorize(&state, Resource::Threads, Action::Create, &mut value)
        .await?;
    let metadata = match value.get_mut("metadata").map(Value::take) {
        Some(Value::Object(metadata)) => metadata,
        _ => Map::new(),
    };
    let mut thread = Thread::new(thread_id, metadata, now);
    thread.ttl = ttl;
    let graph = if supersteps.is_empty() {
        None
    } else {
        let graph = super::state::graph_of(&state, &thread)?
            .ok_or_else(|| super::state::no_graph(&thread.thread_id))?;
        Some(graph)
    };
    match state.repository.insert_thread(thread).await? {
        Inserted::New(thread) => {
            let Some(graph) = graph else {
                return Ok(Json(thread.view(None)).into_response());
            };
            let config = stategraph::RunnableConfig::thread(&thread.thread_id);
            if let Err(err) = graph.bulk_update_state(&config, supersteps).await {
                // Not half made: the thread goes with its failed history.
                if let Err(cleanup) =
                    crate::runs::exec::delete_thread(&state, &thread.thread_id).await
                {
                    tracing::error!(error = %cleanup, "cannot delete a thread whose supersteps failed");
                }
                return Err(err.into());
            }
            let (_, recorded) =
                super::state::record_latest(&state, graph, &thread.thread_id).await?;
            let thread = recorded.ok_or_else(|| ApiError::thread_not_found(&thread.thread_id))?;
            Ok(Json(thread.view(None)).into_response())
        }
        Inserted::Existing(thread) => match body.if_exists.unwrap_or_default() {
            IfExists::DoNothing if passes(filter.as_ref(), &thread.metadata) => {
                Ok(Json(thread.view(None)).into_response())
            }
            IfExists::DoNothing | IfExists::Raise => Err(ApiError::conflict(format!(
                "Thread with ID {} already exists",
                thread.thread_id
            ))),
        },
    }
}

/// The thread with this id, if the caller may do `action` on it: 404 when
/// there is none or the caller's filter leaves it out (never 403, so a
/// thread's existence does not leak).
pub(super) async fn find(
    state: &ApiState,
    caller: &Caller,
    thread_id: &str,
    action: Action,
) -> Result<Thread, ApiError> {
    let filter = caller
        .filter(
            state,
            Resource::Threads,
            action,
            json!({"thread_id": thread_id}),
        )
        .await?;
    state
        .repository
        .get_thread(thread_id)
        .await?
        .filter(|thread| passes(filter.as_ref(), &thread.metadata))
        .ok_or_else(|| ApiError::thread_not_found(thread_id))
}

/// 404 unless the caller may do `action` on the thread (nothing to check,
/// and nothing read, without auth).
pub(super) async fn guard(
    state: &ApiState,
    caller: &Caller,
    thread_id: &str,
    action: Action,
) -> Result<(), ApiError> {
    if caller.user().is_some() {
        find(state, caller, thread_id, action).await?;
    }
    Ok(())
}

/// `GET /threads/{id}` query: `include=ttl` adds the thread's TTL.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GetQuery {
    include: Option<String>,
}

/// `GET /threads/{id}`; with `?include=ttl`, its `ttl` (`{"strategy",
/// "ttl_minutes", "expires_at"}`, or `null` when it has none) after the
/// other fields, as the official PostgreSQL server shows it.
async fn get_one(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<GetQuery>,
) -> Result<Response, ApiError> {
    let thread = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let with_ttl = query
        .include
        .as_deref()
        .is_some_and(|include| include.split(',').any(|part| part.trim() == "ttl"));
    if !with_ttl {
        return Ok(Json(thread.view(None)).into_response());
    }
    let mut shown =
        serde_json::to_value(thread.view(None)).map_err(|err| ApiError::internal(&err))?;
    if let Value::Object(fields) = &mut shown {
        fields.insert(
            "ttl".into(),
            thread.ttl.as_ref().map_or(Value::Null, ThreadTtl::view),
        );
    }
    Ok(Json(shown).into_response())
}

/// A `PATCH /threads/{id}` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PatchBody {
    metadata: Option<Map<String, Value>>,
    ttl: Option<Value>,
}

/// `PATCH /threads/{id}`: metadata merged into the thread's; only
/// `updated_at` moves (TRANSCRIPTS.md section 8).
async fn patch(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let thread_id = thread_id(&raw_id)?;
    let body: PatchBody = parse_body(&body)?;
    let ttl = body
        .ttl
        .as_ref()
        .map(|given| ThreadTtl::from_request(given, chrono::Utc::now()))
        .transpose()
        .map_err(ApiError::invalid)?
        .flatten();
    let mut value = json!({"thread_id": thread_id, "metadata": body.metadata});
    let filter = caller
        .authorize(&state, Resource::Threads, Action::Update, &mut value)
        .await?;
    if let Some(filter) = &filter {
        let visible = state
            .repository
            .get_thread(&thread_id)
            .await?
            .is_some_and(|thread| filter.matches(&thread.metadata));
        if !visible {
            return Err(ApiError::thread_not_found(&thread_id));
        }
    }
    let metadata = match value.get_mut("metadata").map(Value::take) {
        Some(Value::Object(metadata)) => Some(metadata),
        _ => None,
    };
    let patch = ThreadPatch {
        metadata,
        ttl,
        ..ThreadPatch::default()
    };
    let thread = state
        .repository
        .patch_thread(&thread_id, patch)
        .await?
        .ok_or_else(|| ApiError::thread_not_found(&thread_id))?;
    Ok(Json(thread.view(None)).into_response())
}

/// `DELETE /threads/{id}`: the thread and its checkpoints; 204.
async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let thread_id = thread_id(&raw_id)?;
    find(&state, &caller, &thread_id, Action::Delete).await?;
    delete_one(&state, &thread_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Deletes a thread: its runs cancelled, its crons deleted, then its
/// checkpoints and records.
async fn delete_one(state: &ApiState, thread_id: &str) -> Result<(), ApiError> {
    state.runs.cancel_thread(thread_id).await;
    let crons = crate::crons::CronFilter {
        thread_id: Some(thread_id.to_owned()),
        ..crate::crons::CronFilter::default()
    };
    for cron in state.repository.find_crons(&crons).await? {
        state.repository.delete_cron(&cron.cron_id).await?;
    }
    crate::runs::exec::delete_thread(state, thread_id)
        .await
        .map_err(|err| ApiError::internal(&*err))
}

/// Deletes every thread whose metadata names the assistant (what deleting
/// an assistant with `delete_threads=true` does).
pub(super) async fn delete_where_assistant(
    state: &ApiState,
    assistant_id: &str,
) -> Result<(), ApiError> {
    let mut owner = Map::new();
    owner.insert(
        "assistant_id".into(),
        Value::String(assistant_id.to_owned()),
    );
    let filter = ThreadFilter {
        metadata: Some(owner),
        ..ThreadFilter::default()
    };
    let search = ThreadSearch {
        filter,
        sort_by: ThreadSort::default(),
        sort_order: SortOrder::default(),
        limit: usize::MAX,
        offset: 0,
    };
    let (threads, _) = state.repository.search_threads(&search).await?;
    for thread in threads {
        delete_one(state, &thread.thread_id).await?;
    }
    Ok(())
}

/// A `POST /threads/search` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    #[serde(flatten)]
    filter: ThreadFilter,
    limit: Option<usize>,
    offset: Option<usize>,
    sort_by: Option<ThreadSort>,
    sort_order: Option<SortOrder>,
    select: Option<Vec<ThreadField>>,
    extract: Option<Value>,
}

/// The most threads one page holds.
const MAX_PAGE: usize = 1000;

/// `POST /threads/search`: a page of matching threads, newest update first
/// unless told otherwise, with the pagination headers.
async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut body: SearchBody = parse_body(&body)?;
    body.filter.auth = search_filter(&state, &caller, &body.filter).await?;
    let extract = match body.extract.take() {
        None | Some(Value::Null) => None,
        Some(Value::Object(given)) => Some(crate::threads::Extract::parse(given)?),
        Some(_) => return Err(ApiError::invalid("extract must be an object")),
    };
    let limit = body.limit.unwrap_or(10);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit must be between 1 and {MAX_PAGE}, got {limit}"
        )));
    }
    let search = ThreadSearch {
        filter: body.filter,
        sort_by: body.sort_by.unwrap_or_default(),
        sort_order: body.sort_order.unwrap_or_default(),
        limit,
        offset: body.offset.unwrap_or(0),
    };
    let (page, total) = state.repository.search_threads(&search).await?;
    let headers = pagination(total, search.offset, page.len());
    let select = body.select.as_deref();
    let Some(extract) = extract else {
        let views: Vec<_> = page.iter().map(|thread| thread.view(select)).collect();
        return Ok(with_headers(Json(views), headers));
    };
    let views = page
        .iter()
        .map(|thread| {
            let mut view = serde_json::to_value(thread.view(select))?;
            let extracted = extract.of(&serde_json::to_value(thread.view(None))?);
            if let Value::Object(fields) = &mut view {
                fields.insert("extracted".into(), extracted);
            }
            Ok(view)
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    Ok(with_headers(Json(views), headers))
}

/// `POST /threads/count`: how many threads match, as a bare number.
async fn count(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut filter: ThreadFilter = parse_body(&body)?;
    filter.auth = search_filter(&state, &caller, &filter).await?;
    let count = state.repository.count_threads(&filter).await?;
    Ok(Json(count).into_response())
}

/// How `POST /threads/prune` thins a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PruneHow {
    /// The thread goes, as `DELETE /threads/{id}`.
    #[default]
    Delete,
    /// Only each namespace's latest checkpoint stays.
    KeepLatest,
}

/// A `POST /threads/prune` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PruneBody {
    thread_ids: Vec<String>,
    strategy: Option<Value>,
}

/// `POST /threads/prune`: deletes the threads, or keeps only their latest
/// checkpoints (`keep_latest`, which the official in-memory server
/// refuses and its PostgreSQL one does); `{"pruned_count": n}`, missing
/// threads skipped. A thread with a run in flight is not thinned.
async fn prune(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: PruneBody = parse_body(&body)?;
    let ids = body
        .thread_ids
        .iter()
        .map(|id| thread_id(id))
        .collect::<Result<Vec<_>, _>>()?;
    let how = match body.strategy {
        None | Some(Value::Null) => PruneHow::Delete,
        Some(given) => serde_json::from_value(given.clone()).map_err(|_| {
            ApiError::invalid(format!(
                "Invalid strategy: {}. Expected 'delete' or 'keep_latest'.",
                given
                    .as_str()
                    .map_or_else(|| given.to_string(), str::to_owned)
            ))
        })?,
    };
    if ids.is_empty() {
        return Ok(Json(json!({"pruned_count": 0})).into_response());
    }
    let filter = caller
        .filter(
            &state,
            Resource::Threads,
            Action::Delete,
            json!({"thread_ids": ids}),
        )
        .await?;
    let mut found = Vec::with_capacity(ids.len());
    for id in &ids {
        match state.repository.get_thread(id).await? {
            Some(thread) if passes(filter.as_ref(), &thread.metadata) => found.push(thread),
            Some(_) => {
                return Err(ApiError::not_found(
                    "At least one thread not found or not authorized",
                ));
            }
            None if filter.is_some() => {
                return Err(ApiError::not_found(
                    "At least one thread not found or not authorized",
                ));
            }
            None => {}
        }
    }
    let mut pruned = 0_usize;
    for thread in found {
        match how {
            PruneHow::Delete => {
                delete_one(&state, &thread.thread_id).await?;
                pruned += 1;
            }
            PruneHow::KeepLatest => {
                if keep_latest_only(&state, &thread.thread_id).await? {
                    pruned += 1;
                }
            }
        }
    }
    Ok(Json(json!({"pruned_count": pruned})).into_response())
}

/// Acts on threads whose TTL ran out, every
/// `threads.sweep_interval_minutes`, until the task is dropped or aborted:
/// `delete` deletes the thread (its runs cancelled, its crons, checkpoints
/// and records deleted); `keep_latest` keeps only its latest checkpoint and
/// starts its TTL again. A thread with a run in flight waits for the next
/// sweep.
pub(crate) async fn sweep_expired_threads(state: ApiState) {
    let mut interval = tokio::time::interval(state.settings.threads.sweep_interval());
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        match sweep_once(&state).await {
            Ok(0) => {}
            Ok(swept) => tracing::info!(swept, "expired threads swept"),
            Err(err) => tracing::warn!(error = ?err, "the thread TTL sweep failed; next time"),
        }
    }
}

/// One sweep; how many threads it acted on. A thread that fails is
/// logged and left for the next sweep; the others go on.
async fn sweep_once(state: &ApiState) -> Result<usize, ApiError> {
    let now = chrono::Utc::now();
    let limit = state.settings.threads.sweep_limit;
    let mut swept = 0;
    for thread in state.repository.expired_threads(now, limit).await? {
        match sweep_thread(state, &thread.thread_id, now).await {
            Ok(true) => swept += 1,
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(thread_id = %thread.thread_id, error = ?err, "an expired thread was not swept; next time");
            }
        }
    }
    Ok(swept)
}

/// Acts on one thread whose TTL ran out by `now`, read again first (a
/// patch may have set a new TTL since the list); whether it did.
async fn sweep_thread(
    state: &ApiState,
    thread_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, ApiError> {
    let Some(thread) = state.repository.get_thread(thread_id).await? else {
        return Ok(false);
    };
    let Some(ttl) = thread.ttl.filter(|ttl| ttl.expires_at < now) else {
        return Ok(false);
    };
    match ttl.strategy {
        crate::settings::TtlStrategy::Delete => {
            if state.runs.gate(thread_id).await.busy() {
                return Ok(false);
            }
            delete_one(state, thread_id).await?;
        }
        crate::settings::TtlStrategy::KeepLatest => {
            if !keep_latest_only(state, thread_id).await? {
                return Ok(false);
            }
            let again = ThreadPatch {
                ttl: Some(ttl.restarted(now)),
                ..ThreadPatch::default()
            };
            state.repository.patch_thread(thread_id, again).await?;
        }
    }
    Ok(true)
}

/// Keeps only the thread's latest checkpoint (per namespace), unless a run
/// is in flight on it; whether it did.
async fn keep_latest_only(state: &ApiState, thread_id: &str) -> Result<bool, ApiError> {
    let gate = state.runs.gate(thread_id).await;
    if gate.busy() {
        return Ok(false);
    }
    state
        .saver
        .prune(
            &[thread_id.to_owned()],
            stategraph::checkpoint::PruneStrategy::KeepLatest,
        )
        .await?;
    drop(gate);
    Ok(true)
}

/// The caller's filter on a thread search or count.
async fn search_filter(
    state: &ApiState,
    caller: &Caller,
    filter: &ThreadFilter,
) -> Result<Option<crate::auth::AuthFilter>, ApiError> {
    let fields = json!({
        "metadata": filter.metadata,
        "values": filter.values,
        "status": filter.status.map(|status| status.as_str()),
    });
    caller
        .filter(state, Resource::Threads, Action::Search, fields)
        .await
}

/// `POST /threads/{id}/copy`: a new thread (a random id) with the same
/// metadata and a copy of every checkpoint.
async fn copy(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let source = find(&state, &caller, &thread_id(&raw_id)?, Action::Read).await?;
    let now = chrono::Utc::now();
    let mut copy = Thread::new(crate::wire::random_id(), source.metadata, now);
    copy.content = ThreadContent::Copied;
    copy.ttl = ThreadTtl::default_of(&state.settings.threads, now);
    state
        .saver
        .copy_thread(&source.thread_id, &copy.thread_id)
        .await?;
    match state.repository.insert_thread(copy).await? {
        Inserted::New(copy) => Ok(Json(copy.view(None)).into_response()),
        // A random id already taken: vanishingly rare, and not this
        // request's fault to hide.
        Inserted::Existing(_) => Err(ApiError::conflict("the copy's new id is taken; retry")),
    }
}
