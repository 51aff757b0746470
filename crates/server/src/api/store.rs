//! `/store` (API.md 10, TRANSCRIPTS.md section 19): the long-term memory
//! store the served graphs write through their context, read and written
//! over HTTP: put, get, delete, search and namespace listing.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use stategraph::store::{
    GetOp, IndexFields, Item, ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store, StoreError,
    Ttl,
};

use super::caller::Caller;
use super::{ApiError, ApiState, parse_body};
use crate::auth::{Action, AuthFilter, Resource};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route(
            "/store/items",
            put(put_item).get(get_item).delete(delete_item),
        )
        .route("/store/items/search", post(search))
        .route("/store/namespaces", post(list_namespaces))
}

/// A namespace the official server refuses: 422 with its text as a plain
/// body (not JSON), as it answers.
fn rejected(detail: String) -> ApiError {
    ApiError::plain(StatusCode::UNPROCESSABLE_ENTITY, detail)
}

/// Checks a namespace as the official server does: labels non-empty and
/// without `.` (the GET query joins them with dots).
fn namespace(labels: Vec<String>) -> Result<Vec<String>, ApiError> {
    if let Some(label) = labels.iter().find(|l| l.is_empty() || l.contains('.')) {
        return Err(rejected(format!(
            "Namespace label '{label}' must be a non-empty string without periods"
        )));
    }
    Ok(labels)
}

/// Runs the caller's store authorization on `value` and reads back the
/// namespace its handler may have rewritten (under `key`); the filter it
/// returned, if any.
async fn authorized(
    state: &ApiState,
    caller: &Caller,
    action: Action,
    mut value: Value,
    key: &str,
) -> Result<(Option<Vec<String>>, Option<AuthFilter>, Value), ApiError> {
    let filter = caller
        .authorize(state, Resource::Store, action, &mut value)
        .await?;
    let labels = match value.get(key) {
        None | Some(Value::Null) => None,
        Some(labels) => Some(
            serde_json::from_value::<Vec<String>>(labels.clone())
                .map_err(|_| rejected("Namespace must be a list of labels".into()))?,
        ),
    };
    Ok((labels, filter, value))
}

/// A store failure as an answer: what the request got wrong is 422 naming
/// it; the store's own failures are 500.
fn store_error(err: StoreError) -> ApiError {
    match err {
        StoreError::Backend { .. } | StoreError::Timeout { .. } | StoreError::Embedding(_) => {
            ApiError::internal(&err)
        }
        // LangGraph's `InvalidNamespaceError` is a `ValueError`: 400 with
        // LangGraph's wording.
        StoreError::InvalidNamespace { reason, .. } => ApiError::bad_request(reason),
        other => ApiError::invalid(other.to_string()),
    }
}

/// An item as the API shows it (the store's timestamps in the official
/// format).
fn item_json(item: &Item) -> Value {
    json!({
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": crate::wire::timestamp(item.created_at),
        "updated_at": crate::wire::timestamp(item.updated_at),
    })
}

/// `index` of a put: `false`, a list of field paths, or absent/null (the
/// store's default fields).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum IndexBody {
    Off(bool),
    Fields(Vec<String>),
}

/// A `PUT /store/items` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PutBody {
    namespace: Option<Vec<String>>,
    key: Option<String>,
    value: Option<Map<String, Value>>,
    index: Option<IndexBody>,
    /// Minutes; `null` (given) means forever.
    #[serde(deserialize_with = "present")]
    ttl: Option<Option<f64>>,
}

/// Tells a field given as `null` (`Some(None)`) from one absent (`None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

/// `PUT /store/items`: stores (or replaces) an item; 204.
async fn put_item(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut body: PutBody = parse_body(&body)?;
    let labels = namespace(body.namespace.take().unwrap_or_default())?;
    let fields = json!({"namespace": labels, "key": body.key, "value": body.value});
    let (labels, _, fields) = authorized(&state, &caller, Action::Put, fields, "namespace").await?;
    let labels = namespace(labels.unwrap_or_default())?;
    if let Some(Value::Object(value)) = fields.get("value") {
        body.value = Some(value.clone());
    }
    let Some(key) = body.key else {
        return Err(ApiError::invalid("\"key\" is a required property"));
    };
    let Some(value) = body.value else {
        return Err(ApiError::invalid("\"value\" is a required property"));
    };
    let index = match body.index {
        None | Some(IndexBody::Off(true)) => IndexFields::Default,
        Some(IndexBody::Off(false)) => IndexFields::No,
        Some(IndexBody::Fields(fields)) => IndexFields::Fields(fields),
    };
    let ttl = match body.ttl {
        None => Ttl::Default,
        Some(None) => Ttl::Never,
        Some(Some(minutes)) => Ttl::Minutes(minutes),
    };
    let op = PutOp::put(labels, key, value)
        .with_index(index)
        .with_ttl(ttl);
    state.store.put_op(op).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /store/items?namespace=a.b&key=k[&refresh_ttl=]`: the item, or a
/// 200 with `null` when there is none (as the official server answers).
async fn get_item(
    State(state): State<ApiState>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let pairs = super::runs::query_pairs(query.as_deref())?;
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let labels = namespace(
        value("namespace")
            .unwrap_or_default()
            .split('.')
            .map(str::to_owned)
            .collect(),
    )?;
    let Some(key) = value("key").filter(|key| !key.is_empty()) else {
        return Ok((
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "Key is required"})),
        )
            .into_response());
    };
    let refresh = value("refresh_ttl").is_none_or(|v| v.eq_ignore_ascii_case("true"));
    let fields = json!({"namespace": labels, "key": key});
    let (labels, _, _) = authorized(&state, &caller, Action::Get, fields, "namespace").await?;
    let labels = namespace(labels.unwrap_or_default())?;
    let mut op = GetOp::new(labels, key);
    op.refresh_ttl = refresh;
    let found = match state
        .store
        .batch(vec![Op::Get(op)])
        .await
        .map_err(store_error)?
        .pop()
    {
        Some(OpResult::Item(item)) => item,
        other => {
            return Err(ApiError::internal(&StoreError::Backend {
                store: "server",
                message: format!("a get answered {other:?}"),
                source: None,
            }));
        }
    };
    Ok(Json(found.as_ref().map(item_json)).into_response())
}

/// A `DELETE /store/items` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    namespace: Option<Vec<String>>,
    key: Option<String>,
}

/// `DELETE /store/items` (JSON body `{namespace, key}`): 204, whether or
/// not there was one.
async fn delete_item(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: DeleteBody = parse_body(&body)?;
    let labels = namespace(body.namespace.unwrap_or_default())?;
    let Some(key) = body.key else {
        return Err(ApiError::invalid("\"key\" is a required property"));
    };
    let fields = json!({"namespace": labels, "key": key});
    let (labels, _, _) = authorized(&state, &caller, Action::Delete, fields, "namespace").await?;
    let labels = namespace(labels.unwrap_or_default())?;
    // No item lives under no namespace: nothing to delete (the official
    // server answers 204 too).
    if labels.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    state
        .store
        .put_op(PutOp::delete(labels, key))
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A `POST /store/items/search` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    namespace_prefix: Option<Vec<String>>,
    filter: Option<Map<String, Value>>,
    limit: Option<usize>,
    offset: Option<usize>,
    query: Option<String>,
    refresh_ttl: Option<bool>,
}

/// `POST /store/items/search`: `{"items": [...]}`, each with its `score`
/// (null unless ranked by a query).
async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: SearchBody = parse_body(&body)?;
    let prefix = namespace(body.namespace_prefix.unwrap_or_default())?;
    let fields = json!({
        "namespace": prefix,
        "filter": body.filter,
        "limit": body.limit.unwrap_or(10),
        "offset": body.offset.unwrap_or(0),
        "query": body.query,
    });
    let (prefix, auth, _) =
        authorized(&state, &caller, Action::Search, fields, "namespace").await?;
    let mut op = SearchOp::new(namespace(prefix.unwrap_or_default())?)
        .with_page(body.limit.unwrap_or(10), body.offset.unwrap_or(0))
        .with_refresh_ttl(body.refresh_ttl.unwrap_or(false));
    if let Some(filter) = body.filter {
        op = op.with_filter(filter);
    }
    if let Some(query) = body.query {
        op = op.with_query(query);
    }
    // The caller's filter holds on item values too: its keys join the
    // search's conditions (a key both give must meet both, which a second
    // pass over the page checks).
    let mut recheck = None;
    if let Some(auth) = auth {
        for (key, condition) in auth.plain_conditions() {
            if op.filter.contains_key(&key) {
                recheck = Some(auth.clone());
            } else {
                op.filter.insert(key, condition);
            }
        }
        if auth.has_operators() {
            recheck = Some(auth);
        }
    }
    let mut found = state.store.search(op).await.map_err(store_error)?;
    if let Some(auth) = recheck {
        found.retain(|hit| auth.matches(&hit.item.value));
    }
    let items: Vec<Value> = found
        .iter()
        .map(|hit| {
            let mut item = item_json(&hit.item);
            if let Value::Object(map) = &mut item {
                map.insert("score".into(), json!(hit.score));
            }
            item
        })
        .collect();
    Ok(Json(json!({ "items": items })).into_response())
}

/// A `POST /store/namespaces` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NamespacesBody {
    prefix: Option<Vec<String>>,
    suffix: Option<Vec<String>>,
    max_depth: Option<usize>,
    limit: Option<usize>,
    offset: Option<usize>,
}

/// `POST /store/namespaces`: `{"namespaces": [[...], ...]}`.
async fn list_namespaces(State(state): State<ApiState>, body: Bytes) -> Result<Response, ApiError> {
    let body: NamespacesBody = parse_body(&body)?;
    let mut op =
        ListNamespacesOp::new().with_page(body.limit.unwrap_or(100), body.offset.unwrap_or(0));
    if let Some(prefix) = body.prefix.filter(|p| !p.is_empty()) {
        op = op.with_prefix(namespace(prefix)?);
    }
    if let Some(suffix) = body.suffix.filter(|s| !s.is_empty()) {
        op = op.with_suffix(namespace(suffix)?);
    }
    if let Some(depth) = body.max_depth {
        op = op.with_max_depth(depth);
    }
    let namespaces = state.store.list_namespaces(op).await.map_err(store_error)?;
    Ok(Json(json!({ "namespaces": namespaces })).into_response())
}
