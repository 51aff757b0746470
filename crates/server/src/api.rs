//! The HTTP API: routes, JSON error answers for what no route takes, CORS
//! and the body limit.

use axum::Json;
use axum::Router;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;

use crate::settings::Settings;

/// The version of LangGraph whose behaviour the API follows (`/info`'s
/// `langgraph_py_version`).
const LANGGRAPH_VERSION: &str = "1.2.22";

pub(crate) fn router(settings: &Settings) -> Router {
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
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
            "assistants": false,
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
