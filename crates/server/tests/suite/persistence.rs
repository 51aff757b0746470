//! The embedded default, one SQLite file: threads, runs, checkpoints and
//! state survive a restart of the server on the same file, and a file of
//! another schema is refused.

use std::net::SocketAddr;

use serde_json::json;
use stategraph_server::{Error, Server, Settings};
use tokio::sync::oneshot;

use crate::support::{call, on_a_free_port, send};

/// The fixture graphs served on `url`; the address and the way to stop it.
async fn serve_on(url: &str) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    serve_prepared(url, false).await
}

/// [`serve_on`], with PostgreSQL's prepared statements on or off.
async fn serve_prepared(
    url: &str,
    prepared: bool,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let mut settings = on_a_free_port();
    settings.database.url = url.to_owned();
    settings.database.prepared_statements = prepared;
    serve_with(settings).await
}

/// The fixture graphs served with `settings`.
async fn serve_with(
    settings: stategraph_server::Settings,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let mut builder = Server::builder().settings(settings);
    for (id, graph) in stategraph_server::fixtures::all().unwrap() {
        builder = builder.graph(id, graph);
    }
    let bound = builder.build().await.unwrap().bind().await.unwrap();
    let address = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        bound
            .serve_until(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (address, stop, task)
}

#[tokio::test]
async fn a_restart_on_the_same_file_keeps_threads_runs_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("server.db").display());
    a_restart_keeps_everything(&url, false).await;
}

#[tokio::test]
async fn a_restart_on_the_same_postgres_database_keeps_threads_runs_and_state() {
    let Some(url) = postgres_schema().await else {
        return;
    };
    a_restart_keeps_everything(&url, false).await;
}

/// The same with `database.prepared_statements` (direct connections).
#[tokio::test]
async fn prepared_statements_on_postgres_keep_everything_too() {
    let Some(url) = postgres_schema().await else {
        return;
    };
    a_restart_keeps_everything(&url, true).await;
}

/// A fresh schema on the throwaway cluster `cargo xtask ci` starts, as a
/// URL whose connections use it (`None` outside CI when the variable is
/// unset: the PostgreSQL part is then skipped, loudly).
#[allow(clippy::print_stderr)] // Says that the PostgreSQL part did not run.
async fn postgres_schema() -> Option<String> {
    let base = match std::env::var("STATEGRAPH_TEST_POSTGRES_URL") {
        Ok(url) => url,
        // CI must not pass without PostgreSQL.
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("STATEGRAPH_TEST_POSTGRES_URL is not set under CI")
        }
        Err(_) => {
            eprintln!("STATEGRAPH_TEST_POSTGRES_URL is not set: PostgreSQL part not run");
            return None;
        }
    };
    let name = format!("sg_server_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(&base).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let separator = if base.contains('?') { '&' } else { '?' };
    Some(format!(
        "{base}{separator}options=-c%20search_path%3D{name}"
    ))
}

/// Threads, runs and checkpoints on `url` survive a restart.
async fn a_restart_keeps_everything(url: &str, prepared: bool) {
    let (address, stop, task) = serve_prepared(url, prepared).await;
    let thread = send(
        address,
        "POST /threads",
        &json!({"metadata": {"user": "demo"}}),
    )
    .await
    .json();
    let id = thread["thread_id"].as_str().unwrap().to_owned();
    let waited = send(
        address,
        &format!("POST /threads/{id}/runs/wait"),
        &json!({"assistant_id": "hitl", "input": {"messages": [{"type": "human", "content": "hi"}]}}),
    )
    .await
    .json();
    assert_eq!(waited["count"], 1);
    let before = call(address, &format!("GET /threads/{id}")).await.json();
    assert_eq!(before["status"], "interrupted");
    let runs_before = call(address, &format!("GET /threads/{id}/runs"))
        .await
        .json();
    let assistant = send(
        address,
        "POST /assistants",
        &json!({"graph_id": "hitl", "name": "kept", "context": {"model": "m"}}),
    )
    .await
    .json();
    let assistant_id = assistant["assistant_id"].as_str().unwrap().to_owned();
    let patched = send(
        address,
        &format!("PATCH /assistants/{assistant_id}"),
        &json!({"name": "kept-2"}),
    )
    .await
    .json();
    let versions_before = send(
        address,
        &format!("POST /assistants/{assistant_id}/versions"),
        &json!({}),
    )
    .await
    .json();
    let cron = send(
        address,
        &format!("POST /threads/{id}/runs/crons"),
        &json!({"assistant_id": "hitl", "schedule": "0 0 1 1 *"}),
    )
    .await;
    assert_eq!(cron.status, 200, "{}", cron.body);
    let cron = cron.json();
    let system_before = send(
        address,
        "POST /assistants/search",
        &json!({"metadata": {"created_by": "system"}, "sort_by": "graph_id"}),
    )
    .await
    .json();
    stop.send(()).unwrap();
    task.await.unwrap();

    let (address, stop, task) = serve_prepared(url, prepared).await;
    assert_eq!(
        call(address, &format!("GET /assistants/{assistant_id}"))
            .await
            .json(),
        patched
    );
    assert_eq!(
        send(
            address,
            &format!("POST /assistants/{assistant_id}/versions"),
            &json!({}),
        )
        .await
        .json(),
        versions_before
    );
    assert_eq!(
        send(
            address,
            "POST /assistants/search",
            &json!({"metadata": {"created_by": "system"}, "sort_by": "graph_id"})
        )
        .await
        .json(),
        system_before,
        "the system assistants are made once"
    );
    assert_eq!(
        call(
            address,
            &format!("GET /runs/crons/{}", cron["cron_id"].as_str().unwrap())
        )
        .await
        .json(),
        cron
    );
    let after = call(address, &format!("GET /threads/{id}")).await.json();
    assert_eq!(after, before, "the thread record as it was");
    assert_eq!(
        call(address, &format!("GET /threads/{id}/runs"))
            .await
            .json(),
        runs_before
    );
    let state = call(address, &format!("GET /threads/{id}/state"))
        .await
        .json();
    assert_eq!(
        state["next"],
        json!(["review"]),
        "the checkpoints are in the file too"
    );
    let found = send(
        address,
        "POST /threads/search",
        &json!({"metadata": {"user": "demo"}, "status": "interrupted"}),
    )
    .await;
    assert_eq!(found.header("x-pagination-total"), Some("1"));
    // The run resumes where the first server left it.
    let resumed = send(
        address,
        &format!("POST /threads/{id}/runs/wait"),
        &json!({"assistant_id": "hitl", "command": {"resume": "yes"}}),
    )
    .await
    .json();
    assert_eq!(resumed["count"], 101);
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn a_file_whose_server_schema_differs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.db");
    let url = format!("sqlite://{}", path.display());
    let mut settings = Settings::default();
    settings.database.url = url.clone();
    Server::builder()
        .settings(settings.clone())
        .build()
        .await
        .unwrap();
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute(
                "UPDATE sg_schema_migrations SET text = 'edited' WHERE version = 1",
                [],
            )
            .unwrap();
    }
    let refused = Server::builder()
        .settings(settings.clone())
        .build()
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Database { .. }), "{refused}");
    assert!(refused.to_string().contains("migration 1"), "{refused}");
    settings.database.url = "mysql://localhost/db".into();
    let unsupported = Server::builder()
        .settings(settings)
        .build()
        .await
        .unwrap_err();
    assert_eq!(unsupported.kind(), stategraph::ErrorKind::Unsupported);
}

/// A server whose process dies mid-run (its runtime dropped: no task
/// finishes) leaves the run `running` in the file; the next server on the
/// file takes it over as attempt 2, from the checkpoint it saved, without
/// feeding its input twice.
#[test]
fn a_run_left_running_by_a_dead_server_goes_on_as_its_next_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("server.db").display());
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let dying = runtime();
    let (thread, run_id) = dying.block_on(async {
        let (address, _stop, _task) = serve_on(&url).await;
        let thread = crate::support::new_thread(address).await;
        let run = send(
            address,
            &format!("POST /threads/{thread}/runs"),
            &json!({"assistant_id": "simple", "input": {"count": 30}}),
        )
        .await
        .json();
        let run_id = run["run_id"].as_str().unwrap().to_owned();
        // Its input checkpoint is saved, its node sleeping.
        crate::support::poll(address, &format!("/threads/{thread}/state"), |state| {
            state["metadata"]["run_id"] == json!(run_id)
        })
        .await;
        (thread, run_id)
    });
    dying.shutdown_background();

    runtime().block_on(async {
        let (address, stop, task) = serve_on(&url).await;
        let joined = call(
            address,
            &format!("GET /threads/{thread}/runs/{run_id}/join"),
        )
        .await;
        assert_eq!(joined.json(), json!({"messages": [], "count": 31}));
        let run = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
            .await
            .json();
        assert_eq!(run["status"], "success");
        assert_eq!(run["kwargs"]["config"]["metadata"]["run_attempt"], 2);
        let history = send(
            address,
            &format!("POST /threads/{thread}/history"),
            &json!({"limit": 20}),
        )
        .await
        .json();
        let inputs = history
            .as_array()
            .unwrap()
            .iter()
            .filter(|state| state["metadata"]["source"] == "input")
            .count();
        assert_eq!(inputs, 1, "the input was not fed again: {history}");
        let thread_now = call(address, &format!("GET /threads/{thread}"))
            .await
            .json();
        assert_eq!(thread_now["status"], "idle");
        stop.send(()).unwrap();
        task.await.unwrap();
    });
}

#[tokio::test]
async fn shutdown_ends_streams_lets_runs_finish_and_leaves_the_rest_to_the_next_server() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("server.db").display());
    let serve = |grace: f64| {
        let mut settings = on_a_free_port();
        settings.database.url.clone_from(&url);
        settings.server.shutdown_grace_seconds = grace;
        serve_with(settings)
    };
    let (address, stop, task) = serve(5.0).await;
    let thread = send(address, "POST /threads", &json!({})).await.json();
    let id = thread["thread_id"].as_str().unwrap().to_owned();
    // A stream that never ends by itself: the thread's.
    let follower =
        tokio::spawn(async move { call(address, &format!("GET /threads/{id}/stream")).await });
    let id = thread["thread_id"].as_str().unwrap();
    // 0.3 s of work, then stop the server while it runs.
    let short = crate::support::create_run(
        address,
        id,
        &json!({"assistant_id": "simple", "input": {"count": 3}}),
    )
    .await;
    crate::support::until_running(address, id, &short).await;
    stop.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), task)
        .await
        .expect("the server stops though a stream is open")
        .unwrap();
    let followed = follower.await.unwrap();
    assert_eq!(followed.status, 200, "the open stream ended cleanly");

    // The run finished within the grace period; a longer one is left
    // running for the next server, which finishes it.
    let (address, stop, task) = serve(0.1).await;
    let run = call(address, &format!("GET /threads/{id}/runs/{short}"))
        .await
        .json();
    assert_eq!(run["status"], "success", "{run}");
    let long = crate::support::create_run(
        address,
        id,
        &json!({"assistant_id": "simple", "input": {"count": 10}}),
    )
    .await;
    crate::support::until_running(address, id, &long).await;
    stop.send(()).unwrap();
    task.await.unwrap();

    let (address, stop, task) = serve(5.0).await;
    let done = crate::support::poll(address, &format!("/threads/{id}/runs/{long}"), |run| {
        run["status"] == "success"
    })
    .await;
    assert_eq!(done["kwargs"]["config"]["metadata"]["run_attempt"], 2);
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Thread TTLs on every backend: `?include=ttl` shows them, the sweeper
/// deletes an expired `delete` thread with its runs and checkpoints, and
/// trims an expired `keep_latest` one to its latest checkpoint and starts
/// its TTL again; threads without a TTL stay.
#[tokio::test]
async fn expired_threads_are_swept_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![
        "memory".to_owned(),
        format!("sqlite://{}", dir.path().join("ttl.db").display()),
    ];
    urls.extend(postgres_schema().await);
    for url in urls {
        let mut settings = on_a_free_port();
        settings.database.url.clone_from(&url);
        // 60 ms between sweeps.
        settings.threads.sweep_interval_minutes = 0.001;
        let (address, stop, task) = serve_with(settings).await;
        let short = json!({"ttl": 0.002, "strategy": "delete"});
        let trimmed = json!({"ttl": 0.002, "strategy": "keep_latest"});
        let mut ids = Vec::new();
        for ttl in [Some(&short), Some(&trimmed), None] {
            let mut body = json!({});
            if let Some(ttl) = ttl {
                body["ttl"] = ttl.clone();
            }
            let created = send(address, "POST /threads", &body).await.json();
            let id = created["thread_id"].as_str().unwrap().to_owned();
            assert!(created.get("ttl").is_none(), "{url}: only with include");
            let waited = send(
                address,
                &format!("POST /threads/{id}/runs/wait"),
                &json!({"assistant_id": "simple", "input": {"count": 0}}),
            )
            .await;
            assert_eq!(waited.status, 200, "{url}: {}", waited.body);
            ids.push(id);
        }
        let [gone, kept, forever] = &ids[..] else {
            unreachable!()
        };
        let before = call(address, &format!("GET /threads/{kept}?include=ttl"))
            .await
            .json();
        assert_eq!(before["ttl"]["strategy"], "keep_latest", "{url}");
        assert_eq!(before["ttl"]["ttl_minutes"], 0.002, "{url}");
        let first_expiry = before["ttl"]["expires_at"].as_str().unwrap().to_owned();
        let plain = call(address, &format!("GET /threads/{forever}?include=ttl"))
            .await
            .json();
        assert_eq!(plain["ttl"], serde_json::Value::Null, "{url}");

        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let deleted = call(address, &format!("GET /threads/{gone}")).await.status == 404;
            let now = call(address, &format!("GET /threads/{kept}?include=ttl"))
                .await
                .json();
            let restarted = now["ttl"]["expires_at"].as_str() != Some(first_expiry.as_str());
            if deleted && restarted {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{url}: not swept: deleted {deleted}, restarted {restarted}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let history = send(
            address,
            &format!("POST /threads/{kept}/history"),
            &json!({"limit": 10}),
        )
        .await
        .json();
        assert_eq!(history.as_array().unwrap().len(), 1, "{url}: {history}");
        assert_eq!(history[0]["values"]["count"], 1, "{url}");
        let runs = call(address, &format!("GET /threads/{gone}/runs")).await;
        assert_eq!(runs.status, 404, "{url}: its runs went with it");
        assert_eq!(
            call(address, &format!("GET /threads/{forever}"))
                .await
                .status,
            200,
            "{url}"
        );
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}
