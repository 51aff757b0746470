//! The HTTP API: routes, the JSON error answers, CORS and the body limit.

mod assistants;
mod caller;
pub(crate) use caller::Loopback;
pub(crate) use threads::sweep_expired_threads;
mod crons;
pub(crate) mod openapi;
mod runs;
mod state;
mod store;
mod stream;
mod threads;

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;

use crate::server::Core;
use crate::settings::Settings;

/// What the handlers read: the server's graphs, records and savers.
pub(crate) type ApiState = Arc<Core>;

/// The version of LangGraph whose behaviour the API follows (`/info`'s
/// `langgraph_py_version`).
const LANGGRAPH_VERSION: &str = "1.2.22";

pub(crate) fn router(state: ApiState) -> Router {
    let settings = state.settings.clone();
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .route("/openapi.json", get(openapi::openapi))
        .merge(assistants::routes())
        .merge(store::routes())
        .merge(crons::routes())
        .merge(threads::routes())
        .merge(state::routes())
        .merge(runs::routes())
        .merge(stream::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            caller::authenticate,
        ))
        .with_state(state)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(settings.http.max_body_bytes))
        // Errors the layer inside answers itself get the API's JSON body.
        .layer(axum::middleware::map_response(json_errors))
        .layer(cors(&settings))
}

/// An answer other than success: a status and the official server's
/// `{"detail": ...}` body.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    detail: String,
    /// The detail as a plain-text body rather than `{"detail": ...}`.
    plain: bool,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            plain: false,
        }
    }

    /// An answer whose body is `detail` as plain text (where the official
    /// server answers so).
    pub(crate) fn plain(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            plain: true,
            ..Self::new(status, detail)
        }
    }

    /// Its status.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// 404.
    pub(crate) fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// 422: a request the API cannot take.
    pub(crate) fn invalid(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// 400: what LangGraph raises `ValueError` for (the official server
    /// answers those 400 with the message).
    pub(crate) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 409.
    pub(crate) fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 422 for a field value this server does not serve yet: it refuses
    /// rather than pretend (issue 24).
    pub(crate) fn unsupported(what: &str) -> Self {
        Self::invalid(format!("{what} is not supported by this server yet"))
    }

    /// 500, with the cause logged and not shown.
    pub(crate) fn internal(cause: &dyn std::error::Error) -> Self {
        tracing::error!(error = %cause, "request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
    }

    /// `Thread with ID {id} not found` (TRANSCRIPTS.md section 12).
    pub(crate) fn thread_not_found(thread_id: &str) -> Self {
        Self::not_found(format!("Thread with ID {thread_id} not found"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.plain {
            return (self.status, self.detail).into_response();
        }
        detail(self.status, &self.detail)
    }
}

impl From<crate::persist::PersistError> for ApiError {
    fn from(err: crate::persist::PersistError) -> Self {
        Self::internal(&err)
    }
}

impl From<stategraph::checkpoint::Error> for ApiError {
    fn from(err: stategraph::checkpoint::Error) -> Self {
        Self::internal(&err)
    }
}

impl From<stategraph::pregel::PregelError> for ApiError {
    fn from(err: stategraph::pregel::PregelError) -> Self {
        use stategraph::ErrorKind;
        match err.kind() {
            ErrorKind::Conflict => Self::conflict(err.to_string()),
            // LangGraph's `ValueError`, `InvalidUpdateError` and
            // `EmptyInputError`: the official server answers 400.
            ErrorKind::InvalidInput => Self::bad_request(err.to_string()),
            ErrorKind::Unsupported => Self::invalid(err.to_string()),
            _ => Self::internal(&err),
        }
    }
}

impl From<stategraph::core::ValueError> for ApiError {
    fn from(err: stategraph::core::ValueError) -> Self {
        Self::internal(&err)
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(err: serde_json::Error) -> Self {
        Self::internal(&err)
    }
}

/// `{"detail": ...}` with `status`, the official server's error body.
fn detail(status: StatusCode, text: &str) -> Response {
    (status, Json(json!({ "detail": text }))).into_response()
}

/// A thread id from a path, in its canonical form.
///
/// # Errors
/// 422 `Invalid thread ID: must be a UUID` (the official text).
pub(crate) fn thread_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|id| id.to_string())
        .map_err(|_| ApiError::invalid("Invalid thread ID: must be a UUID"))
}

/// A JSON request body: an empty one is the type's default, null fields
/// are absent, unknown fields are ignored (the SDKs add some).
///
/// # Errors
/// 422 `Invalid JSON in request body` when it is not JSON (the official
/// text), 422 naming the field when it has the wrong shape.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned + Default>(
    body: &Bytes,
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::invalid("Invalid JSON in request body"))?;
    // A wrong shape names the field and what it should be.
    serde_path_to_error::deserialize(value).map_err(|err| {
        ApiError::invalid(format!(
            "Invalid request body: {}: {}",
            err.path(),
            err.inner()
        ))
    })
}

/// A JSON answer with `headers` added.
pub(crate) fn with_headers(
    body: impl IntoResponse,
    headers: impl IntoIterator<Item = (&'static str, HeaderValue)>,
) -> Response {
    let mut response = body.into_response();
    for (name, value) in headers {
        response.headers_mut().insert(name, value);
    }
    response
}

/// `x-pagination-total`, and `x-pagination-next` when a page follows
/// (TRANSCRIPTS.md section 8).
pub(crate) fn pagination(
    total: usize,
    offset: usize,
    shown: usize,
) -> Vec<(&'static str, HeaderValue)> {
    let mut headers = vec![("x-pagination-total", HeaderValue::from(total))];
    let next = offset.saturating_add(shown);
    if next < total {
        headers.push(("x-pagination-next", HeaderValue::from(next)));
    }
    headers
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
            "crons": true,
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
