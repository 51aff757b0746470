//! The server over real HTTP on 127.0.0.1: health and info as the
//! official server 0.16.7 answers them (TRANSCRIPTS.md section 1), JSON
//! errors for unknown routes, wrong methods and large bodies, CORS, and
//! settings from a file and the environment.

use serde_json::{Value as Json, json};
use stategraph::graph::{NodeError, START, Schema, StateGraph};
use stategraph_server::{Error, Server, Settings};

use crate::support::{on_a_free_port, request, start};

#[tokio::test]
async fn health_and_info_answer_as_the_official_server() {
    let address = start(on_a_free_port()).await;
    let ok = request(address, "GET /ok HTTP/1.1", "").await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.header("content-type"), Some("application/json"));
    assert_eq!(ok.json(), json!({"ok": true, "services": {}}));

    let info = request(address, "GET /info HTTP/1.1", "").await;
    assert_eq!(info.status, 200);
    let info = info.json();
    let keys =
        |value: &Json| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    // The official server's keys (TRANSCRIPTS.md section 1).
    assert_eq!(
        keys(&info),
        ["flags", "host", "langgraph_py_version", "version"]
    );
    assert_eq!(
        keys(&info["flags"]),
        [
            "assistants",
            "crons",
            "langsmith",
            "langsmith_tracing_replicas",
            "langsmith_tracing_session_on_runs"
        ]
    );
    assert_eq!(info["langgraph_py_version"], "1.2.22");
    assert_eq!(info["host"]["kind"], "self-hosted");
    // Only what is served is claimed.
    assert_eq!(info["flags"]["assistants"], true);
    assert_eq!(info["flags"]["crons"], true);
}

#[tokio::test]
async fn what_no_route_takes_gets_a_json_error() {
    let mut settings = on_a_free_port();
    settings.http.max_body_bytes = 64;
    let address = start(settings).await;
    let missing = request(address, "GET /nothing/here HTTP/1.1", "").await;
    assert_eq!(
        (missing.status, missing.json()),
        (404, json!({"detail": "Not Found"}))
    );
    let wrong = request(address, "DELETE /ok HTTP/1.1", "").await;
    assert_eq!(
        (wrong.status, wrong.json()),
        (405, json!({"detail": "Method Not Allowed"}))
    );
    let large = request(address, "POST /ok HTTP/1.1", &"x".repeat(65)).await;
    assert_eq!(
        (large.status, large.json()),
        (413, json!({"detail": "Request body too large"}))
    );
}

#[tokio::test]
async fn browsers_may_call_from_the_allowed_origins() {
    let address = start(on_a_free_port()).await;
    let preflight = request(
        address,
        "OPTIONS /ok HTTP/1.1\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type",
        "",
    )
    .await;
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    let get = request(
        address,
        "GET /ok HTTP/1.1\r\nOrigin: http://localhost:3000",
        "",
    )
    .await;
    let exposed = get.header("access-control-expose-headers").unwrap();
    assert!(exposed.contains("content-location"), "{exposed}");

    let mut settings = on_a_free_port();
    settings.http.cors_allow_origins = vec!["http://app.example".into()];
    let only = start(settings).await;
    let other = request(
        only,
        "GET /ok HTTP/1.1\r\nOrigin: http://localhost:3000",
        "",
    )
    .await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    let allowed = request(only, "GET /ok HTTP/1.1\r\nOrigin: http://app.example", "").await;
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://app.example")
    );
}

#[test]
fn settings_come_from_a_file_then_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stategraph.toml");
    std::fs::write(
        &path,
        "[server]\nport = 9000\n[http]\nmax_body_bytes = 100\n[threads]\ndefault_ttl_strategy = \"keep_latest\"\nsweep_limit = 10\n",
    )
    .unwrap();
    let from_file = Settings::from_file(&path).unwrap();
    assert_eq!(from_file.server.port, 9000);
    assert_eq!(
        from_file.server.host, "127.0.0.1",
        "unset keys keep their defaults"
    );
    let env = |name: &str| match name {
        "STATEGRAPH_PORT" => Some("9100".to_owned()),
        "STATEGRAPH_CORS_ALLOW_ORIGINS" => Some("http://a, http://b".to_owned()),
        "STATEGRAPH_WEBHOOKS_ALLOW_LOOPBACK" => Some("true".to_owned()),
        "STATEGRAPH_THREAD_TTL_MINUTES" => Some("90".to_owned()),
        _ => None,
    };
    let settings = from_file.with_env(env).unwrap();
    assert_eq!(
        settings.server.port, 9100,
        "the environment wins over the file"
    );
    assert_eq!(settings.http.cors_allow_origins, ["http://a", "http://b"]);
    assert_eq!(settings.http.max_body_bytes, 100);
    assert!(settings.webhooks.allow_loopback);
    assert_eq!(settings.threads.default_ttl_minutes, Some(90.0));
    assert_eq!(
        (
            settings.threads.default_ttl_strategy,
            settings.threads.sweep_limit
        ),
        (stategraph_server::TtlStrategy::KeepLatest, 10)
    );

    std::fs::write(&path, "[server]\nprot = 1\n").unwrap();
    let typo = Settings::from_file(&path).unwrap_err();
    assert!(matches!(typo, Error::SettingsFile { .. }), "{typo}");
    assert!(typo.to_string().contains("prot"), "{typo}");
    let bad = Settings::default()
        .with_env(|name| (name == "STATEGRAPH_PORT").then(|| "eighty".to_owned()))
        .unwrap_err();
    assert!(bad.to_string().contains("STATEGRAPH_PORT"), "{bad}");
    assert_eq!(bad.kind(), stategraph::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn a_graph_id_is_registered_once() {
    let graph = || {
        let mut graph = StateGraph::new(Schema::new().append("log"));
        graph
            .add_node("a", |_: Json| async { Ok::<_, NodeError>(json!({})) })
            .unwrap();
        graph.add_edge(START, "a").unwrap();
        graph.compile().unwrap()
    };
    let twice = Server::builder()
        .graph("a", graph())
        .graph("a", graph())
        .build()
        .await;
    assert!(matches!(twice, Err(Error::DuplicateGraph(id)) if id == "a"));
    let server = Server::builder()
        .settings(on_a_free_port())
        .graph("a", graph())
        .graph("b", graph())
        .build()
        .await
        .unwrap();
    assert_eq!(server.graph_ids().collect::<Vec<_>>(), ["a", "b"]);
    let mut settings = Settings::default();
    settings.http.cors_allow_origins = vec!["bad\norigin".into()];
    let bad = Server::builder()
        .settings(settings)
        .build()
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("cors_allow_origins"), "{bad}");
}

#[tokio::test]
async fn each_graph_has_a_system_assistant() {
    let address = start(on_a_free_port()).await;
    let search = request(
        address,
        "POST /assistants/search HTTP/1.1\r\nContent-Type: application/json",
        r#"{"graph_id": "agent", "limit": 10, "offset": 0}"#,
    )
    .await;
    assert_eq!(search.status, 200);
    assert_eq!(search.header("x-pagination-total"), Some("1"));
    let found = search.json();
    let assistant = &found[0];
    // TRANSCRIPTS.md section 2: a system assistant's keys and values.
    let keys: Vec<&String> = assistant.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "assistant_id",
            "config",
            "context",
            "created_at",
            "description",
            "graph_id",
            "metadata",
            "name",
            "updated_at",
            "version"
        ]
    );
    assert_eq!(assistant["graph_id"], "agent");
    assert_eq!(assistant["name"], "agent");
    assert_eq!(assistant["metadata"], json!({"created_by": "system"}));
    assert_eq!(
        (
            assistant["version"].clone(),
            assistant["description"].clone()
        ),
        (json!(1), Json::Null)
    );
    assert_eq!(assistant["created_at"], assistant["updated_at"]);
    let id = assistant["assistant_id"].as_str().unwrap().to_owned();

    let none = request(
        address,
        "POST /assistants/search HTTP/1.1",
        r#"{"metadata": {"created_by": "someone"}}"#,
    )
    .await;
    assert_eq!(
        (none.json(), none.header("x-pagination-total")),
        (json!([]), Some("0"))
    );
    let by_id = request(address, &format!("GET /assistants/{id} HTTP/1.1"), "").await;
    assert_eq!((by_id.status, by_id.json()), (200, assistant.clone()));
    // As the official server: a graph id names its system assistant only
    // where a run or the graph drawing is asked for.
    for path in ["agent", "nope"] {
        let by_name = request(address, &format!("GET /assistants/{path} HTTP/1.1"), "").await;
        assert_eq!(
            (by_name.status, by_name.json()),
            (
                422,
                json!({"detail": "Invalid assistant ID: must be a UUID"})
            )
        );
    }
    let gone = request(
        address,
        "GET /assistants/3e8c5434-5ebe-4202-bf0c-3f73297b77fd HTTP/1.1",
        "",
    )
    .await;
    assert_eq!(
        (gone.status, gone.json()),
        (404, json!({"detail": "Not Found"}))
    );
    let unknown = request(address, "GET /assistants/nope/graph HTTP/1.1", "").await;
    assert_eq!(unknown.status, 422);
    assert_eq!(
        unknown.json()["detail"],
        "Invalid assistant: 'nope'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: agent"
    );
    let bad = request(address, "POST /assistants/search HTTP/1.1", "{not json").await;
    assert_eq!(
        (bad.status, bad.json()),
        (422, json!({"detail": "Invalid JSON in request body"}))
    );
}

#[tokio::test]
async fn openapi_lists_exactly_what_is_routed() {
    let address = start(on_a_free_port()).await;
    let document = request(address, "GET /openapi.json HTTP/1.1", "").await;
    assert_eq!(document.status, 200);
    let document = document.json();
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().unwrap();
    let mut operations = 0;
    for (path, methods) in paths {
        for method in methods.as_object().unwrap().keys() {
            operations += 1;
            // Ids that are not UUIDs: a routed operation answers 422 (or
            // serves), never the 404 or 405 of a missing route.
            let concrete = path
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        "x"
                    } else {
                        segment
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            let head = format!(
                "{} {concrete} HTTP/1.1\r\nContent-Type: application/json",
                method.to_uppercase()
            );
            let answer = request(address, &head, "{}").await;
            assert!(
                answer.status != 404 && answer.status != 405,
                "{method} {path} is listed but not routed: {} {}",
                answer.status,
                answer.body
            );
        }
    }
    assert!(operations > 50, "{operations}");
    assert!(paths.contains_key("/threads/{thread_id}/runs/{run_id}/stream"));
}
