//! Webhooks and delayed runs over HTTP (TRANSCRIPTS.md section 21): the
//! run's result POSTed to a sink on loopback when loopback is allowed,
//! refused with the official text when it is not; `after_seconds` holds a
//! run back, and a cancel during the wait ends it `interrupted`.

use std::net::SocketAddr;

use serde_json::{Value as Json, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::support::{
    as_user, call, new_thread, on_a_free_port, poll, send, start_fixtures, start_fixtures_with_auth,
};

/// A loopback HTTP sink: each POST body it gets, as JSON; it answers 200.
async fn sink() -> (SocketAddr, mpsc::UnboundedReceiver<Json>) {
    scripted_sink(Vec::new()).await
}

/// A sink answering its requests with `statuses` in order, then 200.
async fn scripted_sink(statuses: Vec<u16>) -> (SocketAddr, mpsc::UnboundedReceiver<Json>) {
    let statuses = std::sync::Arc::new(std::sync::Mutex::new(statuses.into_iter()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            let status = statuses.lock().unwrap().next().unwrap_or(200);
            tokio::spawn(async move {
                let mut raw = Vec::new();
                let mut buffer = [0_u8; 4096];
                // Headers, then the body its Content-Length gives.
                loop {
                    let Ok(n) = socket.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    raw.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&raw).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|line| {
                                let (name, value) = line.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            let answer =
                                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n");
                            let _ = socket.write_all(answer.as_bytes()).await;
                            let _ = tx
                                .send(serde_json::from_str(&body[..length]).unwrap_or(Json::Null));
                            return;
                        }
                    }
                }
            });
        }
    });
    (address, rx)
}

#[tokio::test]
async fn a_runs_result_is_posted_to_its_webhook() {
    let mut settings = on_a_free_port();
    settings.webhooks.allow_loopback = true;
    let address = start_fixtures(settings).await;
    let (hook, mut received) = sink().await;
    let thread = new_thread(address).await;
    let url = format!("http://{hook}/hook");
    let waited = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "webhook": url}),
    )
    .await;
    assert_eq!(waited.status, 200, "{}", waited.body);
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["thread_id"], *thread);
    assert_eq!(body["status"], "success");
    assert_eq!(body["values"], json!({"messages": [], "count": 1}));
    assert_eq!(body["kwargs"]["webhook"], *url);
    for key in [
        "run_started_at",
        "run_ended_at",
        "webhook_sent_at",
        "run_id",
        "created_at",
    ] {
        assert!(body[key].is_string(), "{key}: {body}");
    }
    assert!(body.get("error").is_none());

    let failed = send(
        address,
        &format!("POST /threads/{}/runs/wait", new_thread(address).await),
        &json!({"assistant_id": "boom", "input": {}, "webhook": url}),
    )
    .await;
    assert_eq!(failed.status, 200);
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["status"], "error");
    assert!(body["error"].is_object(), "{body}");
}

#[tokio::test]
async fn loopback_webhooks_are_refused_by_default() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    for url in ["http://127.0.0.1:9/hook", "/hook"] {
        let refused = send(
            address,
            &format!("POST /threads/{thread}/runs"),
            &json!({"assistant_id": "simple", "input": {"count": 0}, "webhook": url}),
        )
        .await;
        assert_eq!(refused.status, 422, "{url}: {}", refused.body);
    }
    let cron = send(
        address,
        "POST /runs/crons",
        &json!({"assistant_id": "simple", "schedule": "0 0 1 1 *", "webhook": "http://localhost/x"}),
    )
    .await;
    assert_eq!(cron.status, 422, "crons check their webhook too");
}

#[tokio::test]
async fn after_seconds_holds_a_run_back_and_a_cancel_ends_the_wait() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let asked = chrono::Utc::now();
    let run = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "after_seconds": 0.5}),
    )
    .await
    .json();
    let run_id = run["run_id"].as_str().unwrap();
    assert_eq!(
        run["kwargs"]["config"]["configurable"]["__after_seconds__"],
        0.5
    );
    let due = chrono::DateTime::parse_from_rfc3339(run["created_at"].as_str().unwrap()).unwrap();
    assert!(
        due > asked + chrono::Duration::milliseconds(400),
        "{due} vs {asked}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let early = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(early["status"], "pending", "still waiting");
    let done = poll(
        address,
        &format!("/threads/{thread}/runs/{run_id}"),
        |run| run["status"] == "success",
    )
    .await;
    assert_eq!(done["status"], "success");

    let waiting = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "after_seconds": 60}),
    )
    .await
    .json();
    let waiting_id = waiting["run_id"].as_str().unwrap();
    let cancelled = call(
        address,
        &format!("POST /threads/{thread}/runs/{waiting_id}/cancel?wait=true"),
    )
    .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let run = call(address, &format!("GET /threads/{thread}/runs/{waiting_id}"))
        .await
        .json();
    assert_eq!(run["status"], "interrupted");
    let bad = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "after_seconds": -1}),
    )
    .await;
    assert_eq!(bad.status, 422);
}

/// As the official server: a call that gets 5xx or 429 is tried again,
/// three attempts in all; another 4xx is not.
#[tokio::test]
async fn a_failed_webhook_call_is_tried_again_on_5xx_and_429_only() {
    let mut settings = on_a_free_port();
    settings.webhooks.allow_loopback = true;
    let address = start_fixtures(settings).await;
    let wait = std::time::Duration::from_secs(10);
    let (hook, mut received) = scripted_sink(vec![500, 429]).await;
    let run = send(
        address,
        &format!("POST /threads/{}/runs", new_thread(address).await),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "webhook": format!("http://{hook}/hook")}),
    )
    .await;
    assert_eq!(run.status, 200, "{}", run.body);
    for attempt in 1..=3 {
        let body = tokio::time::timeout(wait, received.recv())
            .await
            .unwrap_or_else(|_| panic!("attempt {attempt} never came"))
            .unwrap();
        assert_eq!(body["status"], "success");
    }

    let (hook, mut received) = scripted_sink(vec![404]).await;
    send(
        address,
        &format!("POST /threads/{}/runs", new_thread(address).await),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "webhook": format!("http://{hook}/hook")}),
    )
    .await;
    tokio::time::timeout(wait, received.recv())
        .await
        .unwrap()
        .unwrap();
    // A second attempt would come within 2 s.
    let again =
        tokio::time::timeout(std::time::Duration::from_millis(2_500), received.recv()).await;
    assert!(again.is_err(), "a 404 is not tried again: {again:?}");
}

/// A relative webhook URL is one of the server's own routes, called in
/// process and without authentication: here `POST /threads/{id}/runs`,
/// which the run's record (the webhook body) asks for a follow-up run on
/// the same thread, on a server whose every other request needs a user.
#[tokio::test]
async fn a_relative_webhook_calls_the_servers_own_route() {
    let mut settings = on_a_free_port();
    settings.webhooks.allow_loopback = true;
    let address = start_fixtures_with_auth(settings).await;
    let alice = Some("alice");
    let created = as_user(address, alice, "POST /threads", &json!({})).await;
    let thread = created.json()["thread_id"].as_str().unwrap().to_owned();
    let first = as_user(
        address,
        alice,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "simple", "input": {"count": 0}, "webhook": format!("/threads/{thread}/runs")}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let runs = as_user(
            address,
            alice,
            &format!("GET /threads/{thread}/runs"),
            &Json::Null,
        )
        .await
        .json();
        if runs.as_array().is_some_and(|runs| runs.len() == 2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no follow-up run: {runs}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let outside = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple"}),
    )
    .await;
    assert_eq!(
        outside.status, 401,
        "an outside caller still needs a user: {}",
        outside.body
    );
}
