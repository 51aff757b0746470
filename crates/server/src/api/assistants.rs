//! `/assistants`: the system assistants, searched and read (TRANSCRIPTS.md
//! section 2).

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::{ApiError, ApiState, pagination, parse_body, with_headers};
use crate::assistants::{Assistant, Search};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/assistants/search", post(search))
        .route("/assistants/{assistant_id}", get(get_one))
}

/// `POST /assistants/search`: the matching assistants, paged, with
/// the pagination headers.
async fn search(State(state): State<ApiState>, body: Bytes) -> Result<Response, ApiError> {
    let search: Search = parse_body(&body)?;
    let found: Vec<&Assistant> = state
        .assistants
        .iter()
        .filter(|a| search.matches(a))
        .collect();
    let total = found.len();
    let offset = search.offset.unwrap_or(0);
    let page: Vec<&Assistant> = found
        .into_iter()
        .skip(offset)
        .take(search.limit.unwrap_or(10))
        .collect();
    let headers = pagination(total, offset, page.len());
    Ok(with_headers(Json(page), headers))
}

/// `GET /assistants/{id}`: by id, or by a registered graph's id (its
/// system assistant, API.md 1.3).
async fn get_one(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = state.resolve_assistant(&id)?;
    match state.assistants.iter().find(|a| a.assistant_id == id) {
        Some(assistant) => Ok(Json(assistant).into_response()),
        None => Err(ApiError::not_found("Not Found")),
    }
}
