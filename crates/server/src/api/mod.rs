//! The HTTP API: routes, JSON error answers for what no route takes, CORS
//! and the body limit.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;

use crate::assistants::{Assistant, Search, system_id};
use crate::settings::Settings;

/// What the handlers read.
#[derive(Clone)]
pub(crate) struct ApiState {
    /// The registered graphs' ids, in registration order.
    pub(crate) graph_ids: Arc<[String]>,
    pub(crate) assistants: Arc<[Assistant]>,
}

/// The version of LangGraph whose behaviour the API follows (`/info`'s
/// `langgraph_py_version`).
const LANGGRAPH_VERSION: &str = "1.2.22";

pub(crate) fn router(settings: &Settings, state: ApiState) -> Router {
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .route("/assistants/search", post(search_assistants))
        .route("/assistants/{assistant_id}", get(get_assistant))
        .with_state(state)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(settings.http.max_body_bytes))
        // Errors the layer inside answers itself get the API's JSON body.
        .layer(axum::middleware::map_response(json_errors))
        .layer(cors(settings))
}

/// `{"detail": ...}` with `status`, the official server's error body.
fn detail(status: StatusCode, text: &str) -> Response {
    (status, Json(json!({ "detail": text }))).into_response()
}

/// The health check (T§1).
async fn ok() -> Json<Value> {
    Json(json!({"ok": true, "services": {}}))
}

/// What the server is and can do (T§1); a flag is `true` only for what is
/// served.
async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "langgraph_py_version": LANGGRAPH_VERSION,
        "flags": {
            "assistants": true,
            "crons": false,
            "langsmith": false,
            "langsmith_tracing_replicas": false,
            "langsmith_tracing_session_on_runs": false,
        },
        "host": {
            "kind": "self-hosted",
            "project_id": null,
            "host_revision_id": null,
            "revision_id": null,
            "tenant_id": null,
        },
    }))
}

/// A JSON body (an empty one is the default); `None` when it is not JSON.
fn json_body<T: serde::de::DeserializeOwned + Default>(body: &Bytes) -> Option<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Some(T::default());
    }
    serde_json::from_slice(body).ok()
}

/// The official server's answer to a body that is not JSON.
fn invalid_json() -> Response {
    detail(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid JSON in request body",
    )
}

/// `POST /assistants/search` (T§2): the matching assistants, paged, with
/// `x-pagination-total`.
async fn search_assistants(State(state): State<ApiState>, body: Bytes) -> Response {
    let Some(search) = json_body::<Search>(&body) else {
        return invalid_json();
    };
    let found: Vec<&Assistant> = state
        .assistants
        .iter()
        .filter(|a| search.matches(a))
        .collect();
    let total = found.len();
    let page: Vec<&Assistant> = found
        .into_iter()
        .skip(search.offset.unwrap_or(0))
        .take(search.limit.unwrap_or(10))
        .collect();
    let mut response = Json(page).into_response();
    response
        .headers_mut()
        .insert("x-pagination-total", HeaderValue::from(total));
    response
}

/// `GET /assistants/{id}`: by id, or by a registered graph's id (its
/// system assistant, API.md 1.3).
async fn get_assistant(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let id = match uuid::Uuid::parse_str(&id) {
        Ok(uuid) => uuid.to_string(),
        Err(_) if state.graph_ids.contains(&id) => system_id(&id),
        Err(_) => {
            let text = format!(
                "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
                state.graph_ids.join(", ")
            );
            return detail(StatusCode::UNPROCESSABLE_ENTITY, &text);
        }
    };
    match state.assistants.iter().find(|a| a.assistant_id == id) {
        Some(assistant) => Json(assistant).into_response(),
        None => detail(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn not_found() -> Response {
    detail(StatusCode::NOT_FOUND, "Not Found")
}

async fn method_not_allowed() -> Response {
    detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
}

/// The body limit's 413 with the API's JSON body.
async fn json_errors(response: Response) -> Response {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return detail(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large");
    }
    response
}

/// Browsers may call from the configured origins, with any header; the
/// headers a client reads (a run's `Content-Location`, pagination) are
/// exposed.
fn cors(settings: &Settings) -> CorsLayer {
    let origins = &settings.http.cors_allow_origins;
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        // `ServerBuilder::build` checked that each is a header value.
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|origin| HeaderValue::from_str(origin).ok()),
        )
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods(Any)
        .allow_headers(Any)
        .expose_headers([
            HeaderName::from_static("content-location"),
            HeaderName::from_static("location"),
            HeaderName::from_static("x-pagination-total"),
            HeaderName::from_static("x-pagination-next"),
        ])
}
