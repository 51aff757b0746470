//! `GET /openapi.json`: an OpenAPI 3.1 document listing exactly the
//! operations this server serves, with the official server's paths, so
//! clients and tools (schemathesis, Studio) see what is there and nothing
//! more. The suite checks that every listed operation is routed.

use axum::Json;
use serde_json::{Map, Value, json};

/// Every operation served: method, path (official parameter names), and a
/// one-line summary.
pub(crate) const OPERATIONS: &[(&str, &str, &str)] = &[
    ("get", "/ok", "Health check"),
    ("get", "/info", "Server information and feature flags"),
    ("get", "/openapi.json", "This document"),
    ("post", "/assistants", "Create an assistant"),
    ("post", "/assistants/search", "Search assistants"),
    ("post", "/assistants/count", "Count assistants"),
    ("get", "/assistants/{assistant_id}", "Get an assistant"),
    (
        "patch",
        "/assistants/{assistant_id}",
        "Patch an assistant (a new version)",
    ),
    (
        "delete",
        "/assistants/{assistant_id}",
        "Delete an assistant",
    ),
    (
        "post",
        "/assistants/{assistant_id}/versions",
        "List an assistant's versions",
    ),
    (
        "post",
        "/assistants/{assistant_id}/latest",
        "Make a version current",
    ),
    (
        "get",
        "/assistants/{assistant_id}/graph",
        "Get the assistant's graph",
    ),
    (
        "get",
        "/assistants/{assistant_id}/schemas",
        "Get the graph's schemas",
    ),
    (
        "get",
        "/assistants/{assistant_id}/subgraphs",
        "Get the subgraphs' schemas",
    ),
    (
        "get",
        "/assistants/{assistant_id}/subgraphs/{namespace}",
        "Get one subgraph's schemas",
    ),
    ("post", "/threads", "Create a thread"),
    ("post", "/threads/search", "Search threads"),
    ("post", "/threads/count", "Count threads"),
    (
        "post",
        "/threads/prune",
        "Delete threads, or keep only their latest checkpoints",
    ),
    ("get", "/threads/{thread_id}", "Get a thread"),
    ("patch", "/threads/{thread_id}", "Patch a thread's metadata"),
    ("delete", "/threads/{thread_id}", "Delete a thread"),
    ("post", "/threads/{thread_id}/copy", "Copy a thread"),
    (
        "get",
        "/threads/{thread_id}/stream",
        "Follow a thread's runs and updates",
    ),
    ("get", "/threads/{thread_id}/state", "Get a thread's state"),
    (
        "post",
        "/threads/{thread_id}/state",
        "Update a thread's state",
    ),
    (
        "get",
        "/threads/{thread_id}/state/{checkpoint_id}",
        "Get a thread's state at a checkpoint",
    ),
    (
        "post",
        "/threads/{thread_id}/state/checkpoint",
        "Get a thread's state at a checkpoint",
    ),
    (
        "get",
        "/threads/{thread_id}/history",
        "Get a thread's history",
    ),
    (
        "post",
        "/threads/{thread_id}/history",
        "Get a thread's history",
    ),
    (
        "post",
        "/threads/{thread_id}/runs",
        "Create a background run",
    ),
    ("get", "/threads/{thread_id}/runs", "List a thread's runs"),
    (
        "post",
        "/threads/{thread_id}/runs/stream",
        "Create a run and stream it",
    ),
    (
        "post",
        "/threads/{thread_id}/runs/wait",
        "Create a run and wait for it",
    ),
    ("get", "/threads/{thread_id}/runs/{run_id}", "Get a run"),
    (
        "delete",
        "/threads/{thread_id}/runs/{run_id}",
        "Delete a run",
    ),
    (
        "get",
        "/threads/{thread_id}/runs/{run_id}/join",
        "Wait for a run",
    ),
    (
        "get",
        "/threads/{thread_id}/runs/{run_id}/stream",
        "Join a run's stream",
    ),
    (
        "post",
        "/threads/{thread_id}/runs/{run_id}/cancel",
        "Cancel a run",
    ),
    (
        "post",
        "/threads/{thread_id}/runs/crons",
        "Create a cron on a thread",
    ),
    ("post", "/runs", "Create a stateless background run"),
    (
        "post",
        "/runs/stream",
        "Create a stateless run and stream it",
    ),
    (
        "post",
        "/runs/wait",
        "Create a stateless run and wait for it",
    ),
    ("post", "/runs/batch", "Create several stateless runs"),
    ("post", "/runs/cancel", "Cancel runs"),
    ("post", "/runs/crons", "Create a cron"),
    ("post", "/runs/crons/search", "Search crons"),
    ("post", "/runs/crons/count", "Count crons"),
    ("get", "/runs/crons/{cron_id}", "Get a cron"),
    ("patch", "/runs/crons/{cron_id}", "Patch a cron"),
    ("delete", "/runs/crons/{cron_id}", "Delete a cron"),
    ("put", "/store/items", "Put a store item"),
    ("get", "/store/items", "Get a store item"),
    ("delete", "/store/items", "Delete a store item"),
    ("post", "/store/items/search", "Search store items"),
    ("post", "/store/namespaces", "List store namespaces"),
];

/// The document.
pub(crate) fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for (method, path, summary) in OPERATIONS {
        let parameters: Vec<Value> = path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
            })
            .collect();
        let mut operation = json!({
            "summary": summary,
            "operationId": format!("{method} {path}"),
            "responses": {"200": {"description": "Success"}},
        });
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        if let Value::Object(methods) = paths
            .entry((*path).to_owned())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            methods.insert((*method).to_owned(), operation);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "stategraph-server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The LangGraph Server API as stategraph serves it: every operation listed here is served, and nothing else.",
        },
        "paths": paths,
    })
}

/// `GET /openapi.json`.
pub(super) async fn openapi() -> Json<Value> {
    Json(document())
}
