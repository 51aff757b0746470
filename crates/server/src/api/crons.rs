//! `/runs/crons` and `/threads/{id}/runs/crons` (API.md 11, TRANSCRIPTS.md
//! section 20): create, read, patch, delete, search and count; the
//! scheduler ([`crate::crons::scheduler`]) fires them.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::caller::{Caller, passes};
use super::{ApiError, ApiState, pagination, parse_body, thread_id, with_headers};
use crate::auth::{Action, Resource};
use crate::crons::{Cron, CronCreate, CronField, CronFilter, CronPatch, CronSearch, CronSort};
use crate::threads::SortOrder;

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/runs/crons", post(create))
        .route("/threads/{thread_id}/runs/crons", post(create_for_thread))
        .route("/runs/crons/search", post(search))
        .route("/runs/crons/count", post(count))
        .route(
            "/runs/crons/{cron_id}",
            get(get_one).patch(patch).delete(delete),
        )
}

/// A cron id from a path, in its canonical form.
fn cron_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|id| id.to_string())
        .map_err(|_| ApiError::invalid("Invalid cron ID: must be a UUID"))
}

/// `POST /runs/crons`: a cron whose every fire runs on a new thread.
async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    insert(&state, &caller, &body, None).await
}

/// `POST /threads/{id}/runs/crons`: a cron that runs on that thread.
async fn create_for_thread(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let thread = thread_id(&raw_id)?;
    insert(&state, &caller, &body, Some(thread)).await
}

async fn insert(
    state: &ApiState,
    caller: &Caller,
    body: &Bytes,
    thread: Option<String>,
) -> Result<Response, ApiError> {
    let payload: Map<String, Value> = parse_body(body)?;
    // The auth handler sees the body and may change it (its metadata).
    let mut value = Value::Object(payload);
    caller
        .authorize(state, Resource::Crons, Action::Create, &mut value)
        .await?;
    let Value::Object(payload) = value else {
        return Err(ApiError::invalid("the request body is not an object"));
    };
    let create: CronCreate = serde_path_to_error::deserialize(Value::Object(payload.clone()))
        .map_err(|err| {
            ApiError::invalid(format!(
                "Invalid request body: {}: {}",
                err.path(),
                err.inner()
            ))
        })?;
    match &create.webhook {
        None | Some(Value::Null) => {}
        Some(Value::String(url)) => crate::webhooks::check(url, &state.settings.webhooks).await?,
        Some(_) => return Err(ApiError::invalid("webhook must be a URL")),
    }
    let Some(named) = create.assistant_id.as_deref() else {
        return Err(ApiError::invalid("\"assistant_id\" is a required property"));
    };
    let assistant_id = state.resolve_assistant(named)?;
    if state.assistant(&assistant_id).await?.is_none() {
        return Err(ApiError::not_found(format!(
            "Assistant '{assistant_id}' not found"
        )));
    }
    if let Some(thread) = &thread
        && super::threads::find(state, caller, thread, Action::Read)
            .await
            .is_err()
    {
        return Err(ApiError::not_found(format!(
            "Thread with ID '{thread}' not found. Please verify the ID is correct and the thread hasn't been deleted or expired."
        )));
    }
    let mut cron = create.into_cron(payload, assistant_id, thread, chrono::Utc::now())?;
    if let Some(user) = caller.user() {
        cron.user_id.clone_from(&user.identity);
    }
    state.repository.insert_cron(cron.clone()).await?;
    Ok(Json(cron).into_response())
}

/// The cron with that id if the caller may do `action` on it.
async fn find(
    state: &ApiState,
    caller: &Caller,
    id: &str,
    action: Action,
) -> Result<Option<Cron>, ApiError> {
    let filter = caller
        .filter(state, Resource::Crons, action, json!({"cron_id": id}))
        .await?;
    Ok(state
        .repository
        .get_cron(id)
        .await?
        .filter(|cron| passes(filter.as_ref(), &cron.metadata)))
}

/// `GET /runs/crons/{id}`.
async fn get_one(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = cron_id(&raw_id)?;
    match find(&state, &caller, &id, Action::Read).await? {
        Some(cron) => Ok(Json(cron).into_response()),
        None => Err(ApiError::not_found("Not Found")),
    }
}

/// `PATCH /runs/crons/{id}`: the record's fields changed, the body merged
/// into the payload.
async fn patch(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = cron_id(&raw_id)?;
    if caller.user().is_some() && find(&state, &caller, &id, Action::Update).await?.is_none() {
        return Err(ApiError::not_found(format!("Cron '{id}' not found")));
    }
    let body: Map<String, Value> = parse_body(&body)?;
    match body.get("webhook") {
        None | Some(Value::Null) => {}
        Some(Value::String(url)) => crate::webhooks::check(url, &state.settings.webhooks).await?,
        Some(_) => return Err(ApiError::invalid("webhook must be a URL")),
    }
    let patch = CronPatch::parse(body)?;
    match state
        .repository
        .patch_cron(&id, patch, chrono::Utc::now())
        .await?
    {
        Some(cron) => Ok(Json(cron).into_response()),
        None => Err(ApiError::not_found(format!("Cron '{id}' not found"))),
    }
}

/// `DELETE /runs/crons/{id}`: 204, or 404.
async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = cron_id(&raw_id)?;
    if caller.user().is_some() && find(&state, &caller, &id, Action::Delete).await?.is_none() {
        return Err(ApiError::not_found("Not Found"));
    }
    if state.repository.delete_cron(&id).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::not_found("Not Found"))
    }
}

/// A `POST /runs/crons/search` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    #[serde(flatten)]
    filter: CronFilter,
    limit: Option<usize>,
    offset: Option<usize>,
    sort_by: Option<CronSort>,
    sort_order: Option<SortOrder>,
    select: Option<Vec<CronField>>,
}

/// The crons that pass `filter` (its ids checked) and the caller's.
async fn matching(
    state: &ApiState,
    caller: &Caller,
    mut filter: CronFilter,
) -> Result<Vec<Cron>, ApiError> {
    if let Some(id) = filter.assistant_id.take() {
        filter.assistant_id = Some(crate::assistants::assistant_id(&id)?);
    }
    if let Some(id) = filter.thread_id.take() {
        filter.thread_id = Some(thread_id(&id)?);
    }
    let fields = json!({
        "assistant_id": filter.assistant_id,
        "thread_id": filter.thread_id,
        "metadata": filter.metadata,
    });
    let auth = caller
        .filter(state, Resource::Crons, Action::Search, fields)
        .await?;
    let mut found = state.repository.find_crons(&filter).await?;
    found.retain(|cron| passes(auth.as_ref(), &cron.metadata));
    Ok(found)
}

/// `POST /runs/crons/search`: a page of matching crons, newest first
/// unless told otherwise, with the pagination headers.
async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: SearchBody = parse_body(&body)?;
    let search = CronSearch {
        sort_by: body.sort_by.unwrap_or_default(),
        sort_order: body.sort_order.unwrap_or_default(),
        limit: body.limit.unwrap_or(10),
        offset: body.offset.unwrap_or(0),
    };
    let (page, total) = search.page(matching(&state, &caller, body.filter).await?);
    let headers = pagination(total, search.offset, page.len());
    let select = body.select.as_deref().filter(|select| !select.is_empty());
    let views: Vec<Value> = page.iter().map(|cron| cron.view(select)).collect();
    Ok(with_headers(Json(views), headers))
}

/// `POST /runs/crons/count`: how many match, as a bare number.
async fn count(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let found = matching(&state, &caller, parse_body(&body)?).await?;
    Ok(Json(found.len()).into_response())
}
