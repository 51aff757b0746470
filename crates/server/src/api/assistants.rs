//! `/assistants` (API.md 3, TRANSCRIPTS.md section 2): create, search,
//! count, read, patch (a new version each time), versions and which one is
//! current, delete; and what Studio draws from: the graph, its schemas and
//! its subgraphs.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use stategraph::graph::CompiledStateGraph;

use super::caller::{Caller, passes};
use super::{ApiError, ApiState, pagination, parse_body, with_headers};
use crate::assistants::{
    Assistant, AssistantChange, AssistantCreate, AssistantField, AssistantFilter, AssistantPatch,
    AssistantSearch, AssistantSort, Changed, IfExists, VersionQuery, assistant_id,
};
use crate::auth::{Action, Resource};
use crate::persist::Inserted;
use crate::threads::SortOrder;

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/assistants", post(create))
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route(
            "/assistants/{assistant_id}",
            get(get_one).patch(patch).delete(delete),
        )
        .route("/assistants/{assistant_id}/versions", post(versions))
        .route("/assistants/{assistant_id}/latest", post(set_latest))
        .route("/assistants/{assistant_id}/graph", get(graph))
        .route("/assistants/{assistant_id}/schemas", get(schemas))
        .route("/assistants/{assistant_id}/subgraphs", get(subgraphs))
        .route(
            "/assistants/{assistant_id}/subgraphs/{namespace}",
            get(subgraphs_at),
        )
}

/// The assistant `raw` names (a UUID), if the caller may do `action` on
/// it; else 404, as the official server (never 403).
async fn find(
    state: &ApiState,
    caller: &Caller,
    raw: &str,
    action: Action,
) -> Result<Assistant, ApiError> {
    visible(state, caller, &assistant_id(raw)?, action)
        .await?
        .ok_or_else(|| ApiError::not_found("Not Found"))
}

/// The assistant with id `id` if there is one the caller may do `action`
/// on (a 403 when the caller may not do it at all).
async fn visible(
    state: &ApiState,
    caller: &Caller,
    id: &str,
    action: Action,
) -> Result<Option<Assistant>, ApiError> {
    let filter = caller
        .filter(
            state,
            Resource::Assistants,
            action,
            json!({"assistant_id": id}),
        )
        .await?;
    Ok(state
        .assistant(id)
        .await?
        .filter(|assistant| passes(filter.as_ref(), &assistant.metadata)))
}

/// `POST /assistants`: a new assistant (version 1), or with `if_exists:
/// do_nothing` the one already under that id.
async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    // The auth handler sees the body and may change it (its metadata).
    let mut value: Value = parse_body(&body)?;
    let filter = caller
        .authorize(&state, Resource::Assistants, Action::Create, &mut value)
        .await?;
    let body: AssistantCreate = serde_json::from_value(value)
        .map_err(|err| ApiError::invalid(format!("Invalid request body: {err}")))?;
    let (assistant, if_exists) = body.check(|id| state.graph_exists(id), chrono::Utc::now())?;
    match state.repository.insert_assistant(assistant).await? {
        Inserted::New(assistant) => Ok(Json(assistant).into_response()),
        Inserted::Existing(existing)
            if if_exists == IfExists::DoNothing && passes(filter.as_ref(), &existing.metadata) =>
        {
            Ok(Json(existing).into_response())
        }
        Inserted::Existing(existing) => Err(ApiError::conflict(format!(
            "Assistant {} already exists",
            existing.assistant_id
        ))),
    }
}

/// A `POST /assistants/search` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    #[serde(flatten)]
    filter: AssistantFilter,
    limit: Option<usize>,
    offset: Option<usize>,
    sort_by: Option<AssistantSort>,
    sort_order: Option<SortOrder>,
    select: Option<Vec<AssistantField>>,
}

/// The most assistants one page holds.
const MAX_PAGE: usize = 1000;

/// The assistants that pass `filter` and the caller's, and run a graph
/// this server serves.
async fn matching(
    state: &ApiState,
    caller: &Caller,
    filter: &AssistantFilter,
) -> Result<Vec<Assistant>, ApiError> {
    if let Some(graph_id) = filter.graph_id.as_deref().filter(|id| !id.is_empty()) {
        state.graph_exists(graph_id)?;
    }
    let fields = json!({"graph_id": filter.graph_id, "metadata": filter.metadata});
    let auth = caller
        .filter(state, Resource::Assistants, Action::Search, fields)
        .await?;
    let mut found = state.repository.find_assistants(filter).await?;
    found.retain(|assistant| {
        state.graph(&assistant.graph_id).is_some() && passes(auth.as_ref(), &assistant.metadata)
    });
    Ok(found)
}

/// `POST /assistants/search`: a page of matching assistants, newest first
/// unless told otherwise, with the pagination headers.
async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: SearchBody = parse_body(&body)?;
    let limit = body.limit.unwrap_or(10);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit must be between 1 and {MAX_PAGE}, got {limit}"
        )));
    }
    let search = AssistantSearch {
        sort_by: body.sort_by.unwrap_or_default(),
        sort_order: body.sort_order.unwrap_or_default(),
        limit,
        offset: body.offset.unwrap_or(0),
        filter: body.filter,
    };
    let found = matching(&state, &caller, &search.filter).await?;
    let (page, total) = search.page(found);
    let headers = pagination(total, search.offset, page.len());
    let select = body.select.as_deref().filter(|select| !select.is_empty());
    let views: Vec<_> = page.iter().map(|a| a.view(select)).collect();
    Ok(with_headers(Json(views), headers))
}

/// `POST /assistants/count`: how many match, as a bare number.
async fn count(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let filter: AssistantFilter = parse_body(&body)?;
    Ok(Json(matching(&state, &caller, &filter).await?.len()).into_response())
}

/// `GET /assistants/{id}`.
async fn get_one(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(find(&state, &caller, &raw_id, Action::Read).await?).into_response())
}

/// Applies `change` to the assistant `raw_id` names.
async fn change(
    state: &ApiState,
    caller: &Caller,
    raw_id: &str,
    change: AssistantChange,
) -> Result<Response, ApiError> {
    let id = assistant_id(raw_id)?;
    if caller.user().is_some() {
        find(state, caller, &id, Action::Update).await?;
    }
    match state.repository.change_assistant(&id, change).await? {
        Changed::Done(assistant, _) => Ok(Json(assistant).into_response()),
        Changed::NoAssistant => Err(ApiError::not_found(format!("Assistant {id} not found"))),
        Changed::NoVersion => Err(ApiError::not_found(format!(
            "Version not found for assistant {id}"
        ))),
    }
}

/// `PATCH /assistants/{id}`: the given fields replaced (metadata merged),
/// as a new version that becomes current.
async fn patch(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: AssistantPatch = parse_body(&body)?;
    let body = body.check(|id| state.graph_exists(id))?;
    change(&state, &caller, &raw_id, AssistantChange::Patch(body)).await
}

/// A `POST /assistants/{id}/latest` body (the SDKs send it as JSON).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LatestBody {
    version: Option<u32>,
}

/// `POST /assistants/{id}/latest`: an earlier version made current.
async fn set_latest(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    // The official server reads the body even when empty, and refuses it.
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("Invalid JSON in request body"));
    }
    let body: LatestBody = parse_body(&body)?;
    let Some(version) = body.version else {
        return Err(ApiError::invalid("\"version\" is a required property"));
    };
    change(
        &state,
        &caller,
        &raw_id,
        AssistantChange::SetLatest(version),
    )
    .await
}

/// `POST /assistants/{id}/versions`: its versions, newest first.
async fn versions(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = assistant_id(&raw_id)?;
    if caller.user().is_some() {
        find(&state, &caller, &id, Action::Read).await?;
    }
    let query: VersionQuery = parse_body(&body)?;
    let page = query.page(state.repository.assistant_versions(&id).await?);
    if page.is_empty() {
        return Err(ApiError::not_found(format!("Assistant {id} not found")));
    }
    Ok(Json(page).into_response())
}

/// `DELETE /assistants/{id}[?delete_threads=true]`: the assistant, its
/// versions and its crons; its runs in flight are cancelled, and with
/// `delete_threads` the threads it made are deleted too.
async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<DeleteQuery>,
) -> Result<Response, ApiError> {
    let id = assistant_id(&raw_id)?;
    if visible(&state, &caller, &id, Action::Delete)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "Assistant with ID {id} not found"
        )));
    }
    if query
        .delete_threads
        .as_deref()
        .map(str::to_lowercase)
        .as_deref()
        == Some("true")
    {
        super::threads::delete_where_assistant(&state, &id).await?;
    }
    crate::runs::manager::cancel_assistant_runs(&state, &id).await?;
    let crons = crate::crons::CronFilter {
        assistant_id: Some(id.clone()),
        ..crate::crons::CronFilter::default()
    };
    for cron in state.repository.find_crons(&crons).await? {
        state.repository.delete_cron(&cron.cron_id).await?;
    }
    state.repository.delete_assistant(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteQuery {
    delete_threads: Option<String>,
}

/// `?xray=`: `true`/`false`, or a depth.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GraphQuery {
    xray: Option<String>,
}

/// `GET /assistants/{id}/graph[?xray=]`: the graph's nodes and edges as
/// LangGraph's `Graph.to_json()` without the class ids. Here a graph id
/// may name its system assistant.
async fn graph(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<GraphQuery>,
) -> Result<Response, ApiError> {
    let depth = match query.xray.as_deref() {
        None | Some("" | "false" | "False") => 0,
        Some("true" | "True") => usize::MAX,
        Some(depth) => depth
            .parse::<usize>()
            .ok()
            .filter(|depth| *depth > 0)
            .ok_or_else(|| ApiError::invalid("Invalid xray value"))?,
    };
    let raw = state.resolve_assistant(&raw_id)?;
    let assistant = find(&state, &caller, &raw, Action::Read).await?;
    let mut json = served(&state, &assistant)?
        .get_graph_xray_depth(depth)
        .to_json();
    if let Some(Value::Array(nodes)) = json.get_mut("nodes") {
        for node in nodes {
            if let Some(Value::Object(data)) = node.get_mut("data") {
                data.remove("id");
            }
        }
    }
    Ok(Json(json).into_response())
}

/// The graph an assistant runs.
fn served<'a>(
    state: &'a ApiState,
    assistant: &Assistant,
) -> Result<&'a CompiledStateGraph, ApiError> {
    state
        .graph(&assistant.graph_id)
        .ok_or_else(|| ApiError::not_found("Not Found"))
}

/// A graph's five schemas, as the official server names them.
fn graph_schemas(graph: &CompiledStateGraph) -> serde_json::Map<String, Value> {
    let mut schemas = serde_json::Map::new();
    schemas.insert("input_schema".into(), graph.input_jsonschema());
    schemas.insert("output_schema".into(), graph.output_jsonschema());
    schemas.insert("state_schema".into(), graph.state_jsonschema());
    schemas.insert("config_schema".into(), graph.config_jsonschema());
    schemas.insert(
        "context_schema".into(),
        graph.context_jsonschema().unwrap_or(Value::Null),
    );
    schemas
}

/// `GET /assistants/{id}/schemas`: what Studio draws its forms from.
async fn schemas(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let assistant = find(&state, &caller, &raw_id, Action::Read).await?;
    let mut body = serde_json::Map::new();
    body.insert("graph_id".into(), json!(assistant.graph_id));
    body.extend(graph_schemas(served(&state, &assistant)?));
    Ok(Json(body).into_response())
}

/// `?recurse=`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SubgraphQuery {
    recurse: Option<String>,
}

/// `GET /assistants/{id}/subgraphs[?recurse=true]`: each subgraph's
/// schemas by namespace (`node` or, recursing, `node|inner`).
async fn subgraphs(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    Query(query): Query<SubgraphQuery>,
) -> Result<Response, ApiError> {
    subgraph_schemas(&state, &caller, &raw_id, None, &query).await
}

/// `GET /assistants/{id}/subgraphs/{namespace}`: the one at `namespace`.
async fn subgraphs_at(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_id, namespace)): Path<(String, String)>,
    Query(query): Query<SubgraphQuery>,
) -> Result<Response, ApiError> {
    subgraph_schemas(&state, &caller, &raw_id, Some(&namespace), &query).await
}

async fn subgraph_schemas(
    state: &ApiState,
    caller: &Caller,
    raw_id: &str,
    namespace: Option<&str>,
    query: &SubgraphQuery,
) -> Result<Response, ApiError> {
    let assistant = find(state, caller, raw_id, Action::Read).await?;
    let recurse = matches!(query.recurse.as_deref(), Some("true" | "True"));
    let body: serde_json::Map<String, Value> = served(state, &assistant)?
        .get_subgraphs(recurse)
        .into_iter()
        .filter(|(name, _)| namespace.is_none_or(|wanted| wanted == name))
        .map(|(name, graph)| (name, Value::Object(graph_schemas(&graph))))
        .collect();
    Ok(Json(body).into_response())
}
