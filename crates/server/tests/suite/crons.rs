//! Crons over HTTP (TRANSCRIPTS.md section 20): create on a thread and
//! stateless, search, count, patch, delete; and the scheduler firing a due
//! cron as a run.

use serde_json::{Value as Json, json};

use crate::support::{call, keys, new_thread, on_a_free_port, poll, send, start_fixtures};

#[tokio::test]
async fn crons_are_created_searched_patched_and_deleted() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let on_thread = send(
        address,
        &format!("POST /threads/{thread}/runs/crons"),
        &json!({"assistant_id": "simple", "schedule": "*/10 * * * *", "input": {"count": 0}}),
    )
    .await;
    assert_eq!(on_thread.status, 200, "{}", on_thread.body);
    let on_thread = on_thread.json();
    assert_eq!(
        keys(&on_thread),
        [
            "assistant_id",
            "created_at",
            "cron_id",
            "enabled",
            "end_time",
            "metadata",
            "next_run_date",
            "on_run_completed",
            "payload",
            "schedule",
            "thread_id",
            "timezone",
            "updated_at",
            "user_id"
        ]
    );
    let simple = "5e0f6b46-d00f-5af4-87dc-ea2105ff526d";
    assert_eq!(on_thread["assistant_id"], simple);
    assert_eq!(on_thread["thread_id"], *thread);
    assert_eq!(on_thread["on_run_completed"], Json::Null);
    let cron_id = on_thread["cron_id"].as_str().unwrap().to_owned();
    assert_eq!(
        on_thread["payload"],
        json!({
            "assistant_id": simple,
            "schedule": "*/10 * * * *",
            "input": {"count": 0},
            "config": {"configurable": {"cron_id": cron_id}}
        })
    );
    let next = on_thread["next_run_date"].as_str().unwrap();
    assert!(
        next.ends_with(":00+00:00"),
        "a whole minute, no fraction: {next}"
    );

    let stateless = send(
        address,
        "POST /runs/crons",
        &json!({"assistant_id": "simple", "schedule": "0 9 * * 1", "input": {"count": 0}, "timezone": "Europe/Paris"}),
    )
    .await
    .json();
    assert_eq!(stateless["thread_id"], Json::Null);
    assert_eq!(stateless["on_run_completed"], "delete");
    assert_eq!(stateless["timezone"], "Europe/Paris");
    let next = stateless["next_run_date"].as_str().unwrap();
    // 09:00 in Paris is 08:00 UTC in winter and 07:00 in summer.
    assert!(
        next.ends_with("T08:00:00+00:00") || next.ends_with("T07:00:00+00:00"),
        "{next}"
    );

    let found = send(
        address,
        "POST /runs/crons/search",
        &json!({"assistant_id": simple, "limit": 5}),
    )
    .await;
    assert_eq!(found.header("x-pagination-total"), Some("2"));
    assert_eq!(
        found.json()[0]["cron_id"],
        stateless["cron_id"],
        "newest first"
    );
    let by_thread = send(
        address,
        "POST /runs/crons/count",
        &json!({"thread_id": thread}),
    )
    .await;
    assert_eq!(by_thread.json(), json!(1));
    let selected = send(
        address,
        "POST /runs/crons/search",
        &json!({"thread_id": thread, "select": ["cron_id", "schedule"]}),
    )
    .await
    .json();
    assert_eq!(
        selected,
        json!([{"cron_id": cron_id, "schedule": "*/10 * * * *"}])
    );

    let patched = send(
        address,
        &format!("PATCH /runs/crons/{cron_id}"),
        &json!({"enabled": false, "metadata": {"k": "v"}, "input": {"count": 2}}),
    )
    .await
    .json();
    assert_eq!(patched["enabled"], false);
    assert_eq!(patched["metadata"], json!({"k": "v"}));
    assert_eq!(patched["payload"]["input"], json!({"count": 2}));
    assert_eq!(
        call(address, &format!("GET /runs/crons/{cron_id}"))
            .await
            .json(),
        patched
    );
    let empty = send(address, &format!("PATCH /runs/crons/{cron_id}"), &json!({})).await;
    assert_eq!(
        (empty.status, empty.json()),
        (400, json!({"detail": "Request body cannot be empty"}))
    );

    let deleted = call(address, &format!("DELETE /runs/crons/{cron_id}")).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        call(address, &format!("GET /runs/crons/{cron_id}"))
            .await
            .status,
        404
    );
    assert_eq!(
        call(address, &format!("DELETE /runs/crons/{cron_id}"))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn bad_cron_requests_get_the_official_answers() {
    let address = start_fixtures(on_a_free_port()).await;
    let bad_schedule = send(
        address,
        "POST /runs/crons",
        &json!({"assistant_id": "simple", "schedule": "61 * * * *"}),
    )
    .await;
    assert_eq!(bad_schedule.status, 422);
    assert!(
        bad_schedule.json()["detail"]
            .as_str()
            .unwrap()
            .starts_with("Invalid cron schedule: '61 * * * *'"),
        "{}",
        bad_schedule.body
    );
    let bad_zone = send(
        address,
        "POST /runs/crons",
        &json!({"assistant_id": "simple", "schedule": "* * * * *", "timezone": "Mars/Olympus"}),
    )
    .await;
    assert_eq!(
        (bad_zone.status, bad_zone.json()),
        (
            422,
            json!({"detail": "Invalid timezone: 'Mars/Olympus'. Use IANA timezone format (e.g. 'America/New_York')."})
        )
    );
    let no_thread = send(
        address,
        "POST /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/runs/crons",
        &json!({"assistant_id": "simple", "schedule": "* * * * *"}),
    )
    .await;
    assert_eq!(no_thread.status, 404);
    let no_assistant = send(
        address,
        "POST /runs/crons",
        &json!({"assistant_id": "3e8c5434-5ebe-4202-bf0c-3f73297b77fd", "schedule": "* * * * *"}),
    )
    .await;
    assert_eq!(no_assistant.status, 404);
    let bad_id = call(address, "GET /runs/crons/nope").await;
    assert_eq!(
        (bad_id.status, bad_id.json()),
        (422, json!({"detail": "Invalid cron ID: must be a UUID"}))
    );
}

#[tokio::test]
async fn a_due_cron_fires_a_run_on_its_thread() {
    let mut settings = on_a_free_port();
    settings.crons.interval_seconds = 0.05;
    let address = start_fixtures(settings).await;
    let thread = new_thread(address).await;
    // Every minute: it fires at the next whole minute, within 60 s.
    let cron = send(
        address,
        &format!("POST /threads/{thread}/runs/crons"),
        &json!({"assistant_id": "simple", "schedule": "* * * * *", "input": {"count": 0}, "metadata": {"from": "cron"}}),
    )
    .await
    .json();
    let cron_id = cron["cron_id"].as_str().unwrap();
    // At most a minute: a cron that every minute fires must fire once.
    let runs = poll_long(address, &format!("/threads/{thread}/runs"), |runs| {
        runs.as_array().is_some_and(|runs| !runs.is_empty())
    })
    .await;
    let run = &runs[0];
    assert_eq!(run["metadata"]["from"], "cron");
    assert_eq!(run["kwargs"]["config"]["configurable"]["cron_id"], *cron_id);
    poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] == "idle"
    })
    .await;
    let after = call(address, &format!("GET /runs/crons/{cron_id}"))
        .await
        .json();
    assert_ne!(
        after["next_run_date"], cron["next_run_date"],
        "moved past the fire"
    );
}

/// [`poll`] for up to 70 s (a cron fires on a whole minute).
async fn poll_long(
    address: std::net::SocketAddr,
    path: &str,
    done: impl Fn(&Json) -> bool,
) -> Json {
    for _ in 0..700 {
        let body = call(address, &format!("GET {path}")).await.json();
        if done(&body) {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("GET {path} never reached the expected state");
}
