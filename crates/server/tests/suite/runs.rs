//! Runs over HTTP on the official fixture graphs: background runs, wait,
//! join, get, list, delete, stateless runs and the multitask strategies,
//! against what the official server answered (TRANSCRIPTS.md sections 12,
//! 13, 14 and 18; tests/fixtures/official-extra.md).

use serde_json::{Value as Json, json};

use crate::support::{
    call, create_run, keys, new_thread, on_a_free_port, poll, send, start_fixtures, until_running,
};

const SIMPLE: &str = "5e0f6b46-d00f-5af4-87dc-ea2105ff526d";
const HITL: &str = "d2a02ed8-fb92-5e43-81ea-cb78d82caa2f";

#[tokio::test]
async fn a_background_run_has_the_official_shape_and_joins() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let created = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 1}, "metadata": {"k": "v"}}),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let run = created.json();
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        created.header("content-location"),
        Some(format!("/threads/{thread}/runs/{run_id}").as_str())
    );
    // TRANSCRIPTS.md section 13.
    assert_eq!(
        keys(&run),
        [
            "assistant_id",
            "created_at",
            "kwargs",
            "langsmith_session_name",
            "metadata",
            "multitask_strategy",
            "run_id",
            "status",
            "thread_id",
            "updated_at"
        ]
    );
    assert_eq!(run["status"], "pending");
    assert_eq!(run["assistant_id"], SIMPLE);
    assert_eq!(run["multitask_strategy"], "enqueue");
    assert_eq!(
        run["metadata"],
        json!({"created_by": "system", "graph_id": "simple", "assistant_id": SIMPLE, "k": "v"})
    );
    assert_eq!(
        keys(&run["kwargs"]),
        [
            "checkpoint_during",
            "command",
            "config",
            "context",
            "durability",
            "feedback_keys",
            "input",
            "interrupt_after",
            "interrupt_before",
            "resumable",
            "stream_mode",
            "subgraphs",
            "temporary",
            "webhook"
        ]
    );
    let kwargs = &run["kwargs"];
    assert_eq!(kwargs["input"], json!({"count": 1}));
    assert_eq!(kwargs["stream_mode"], json!(["values"]));
    assert_eq!(
        (&kwargs["durability"], &kwargs["temporary"]),
        (&json!("async"), &json!(false))
    );
    let configurable = &kwargs["config"]["configurable"];
    for key in [
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
        "langgraph_request_id",
        "__request_start_time_ms__",
        "__after_seconds__",
        "run_id",
        "thread_id",
        "graph_id",
        "assistant_id",
        "user_id",
    ] {
        assert!(
            configurable.get(key).is_some(),
            "configurable lacks {key}: {configurable}"
        );
    }
    assert_eq!(configurable["run_id"], json!(run_id));
    assert_eq!(configurable["graph_id"], "simple");

    let joined = call(
        address,
        &format!("GET /threads/{thread}/runs/{run_id}/join"),
    )
    .await;
    assert_eq!(joined.status, 200);
    assert_eq!(joined.json(), json!({"messages": [], "count": 2}));
    assert_eq!(
        joined.header("location"),
        Some(format!("/threads/{thread}/runs/{run_id}/join").as_str())
    );
    let done = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(done["status"], "success");
    assert_eq!(done["kwargs"]["config"]["metadata"]["run_attempt"], 1);
    assert_eq!(
        done["kwargs"]["config"]["metadata"]["langgraph_version"],
        "1.2.22"
    );

    let listed = call(address, &format!("GET /threads/{thread}/runs?limit=5")).await;
    assert_eq!(
        listed.header("x-pagination-total"),
        None,
        "the official list has no pagination headers"
    );
    assert_eq!(listed.json()[0]["run_id"], json!(run_id));
    let selected = call(
        address,
        &format!("GET /threads/{thread}/runs?select=run_id&select=status"),
    )
    .await
    .json();
    assert_eq!(selected, json!([{"run_id": run_id, "status": "success"}]));
    let bad = call(address, &format!("GET /threads/{thread}/runs?select=bogus")).await;
    assert_eq!(bad.status, 422);
    let bad = call(address, &format!("GET /threads/{thread}/runs?limit=x")).await;
    assert_eq!(
        (bad.status, bad.json()),
        (
            400,
            json!({"detail": "invalid literal for int() with base 10: 'x'"})
        )
    );
    let none = call(address, &format!("GET /threads/{thread}/runs?status=bogus")).await;
    assert_eq!((none.status, none.json()), (200, json!([])));

    let thread_now = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(thread_now["status"], "idle");
    assert_eq!(thread_now["values"], json!({"messages": [], "count": 2}));
    assert_eq!(
        thread_now["metadata"],
        json!({"graph_id": "simple", "assistant_id": SIMPLE})
    );
    assert_eq!(thread_now["config"], json!({"configurable": {}}));
    // The checkpoints carry the server's metadata (TRANSCRIPTS.md section 5;
    // `thread_id` is not among them: LangGraph's library leaves it out, the
    // official in-memory saver adds it, allow-listed).
    let state = call(address, &format!("GET /threads/{thread}/state"))
        .await
        .json();
    let metadata = &state["metadata"];
    for (key, value) in [
        ("graph_id", json!("simple")),
        ("assistant_id", json!(SIMPLE)),
        ("run_id", json!(run_id)),
        ("user_id", json!("")),
        ("run_attempt", json!(1)),
        ("source", json!("loop")),
    ] {
        assert_eq!(
            metadata[key], value,
            "checkpoint metadata {key}: {metadata}"
        );
    }

    let deleted = call(address, &format!("DELETE /threads/{thread}/runs/{run_id}")).await;
    assert_eq!(deleted.status, 204);
    let gone = call(address, &format!("GET /threads/{thread}/runs/{run_id}")).await;
    assert_eq!(
        (gone.status, gone.json()),
        (404, json!({"detail": "Not Found"}))
    );
    let again = call(address, &format!("DELETE /threads/{thread}/runs/{run_id}")).await;
    assert_eq!(
        (again.status, again.json()),
        (404, json!({"detail": "Run not found"}))
    );
}

#[tokio::test]
async fn wait_stops_at_an_interrupt_and_a_command_resumes() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let waited = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "hitl", "input": {"messages": [{"type": "human", "content": "hi there"}]}}),
    )
    .await;
    assert_eq!(waited.status, 200, "{}", waited.body);
    let values = waited.json();
    assert_eq!(values["count"], 1);
    assert_eq!(
        values["messages"][1]["content"],
        "Hello from the fake model"
    );
    // TRANSCRIPTS.md section 18: the interrupt with its schema slot.
    let interrupt = &values["__interrupt__"][0];
    assert_eq!(
        interrupt["value"],
        json!({"question": "approve?", "count": 1})
    );
    assert_eq!(interrupt["response_schema"], Json::Null);
    assert_eq!(interrupt["id"].as_str().unwrap().len(), 32);
    let run_id = waited
        .header("content-location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let run = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(
        run["status"], "success",
        "an interrupt ends the run in success"
    );

    let paused = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(paused["status"], "interrupted");
    let by_task = paused["interrupts"].as_object().unwrap();
    assert_eq!(by_task.len(), 1);
    let (task_id, list) = by_task.iter().next().unwrap();
    assert_eq!(
        list,
        &json!([{"id": interrupt["id"], "value": interrupt["value"]}])
    );
    let state = call(address, &format!("GET /threads/{thread}/state"))
        .await
        .json();
    assert_eq!(state["next"], json!(["review"]));
    assert_eq!(state["tasks"][0]["id"], json!(task_id));
    assert_eq!(state["tasks"][0]["interrupts"], *list);
    // `join` of an interrupted run answers the interrupt.
    let joined = call(
        address,
        &format!("GET /threads/{thread}/runs/{run_id}/join"),
    )
    .await
    .json();
    assert_eq!(joined["__interrupt__"][0]["id"], interrupt["id"]);

    let resumed = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": HITL, "command": {"resume": "yes"}, "input": {}}),
    )
    .await
    .json();
    assert_eq!(
        (&resumed["count"], &resumed["approved"]),
        (&json!(101), &json!("yes"))
    );
    let done = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(
        (&done["status"], &done["interrupts"]),
        (&json!("idle"), &json!({}))
    );
}

#[tokio::test]
async fn a_failed_run_answers_its_error_and_leaves_the_thread_in_error() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let waited = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "boom", "input": {"count": 0}}),
    )
    .await;
    let error = json!({
        "error": "ValueError",
        "message": "boom: intentional failure for the error-event transcript"
    });
    // TRANSCRIPTS.md section 12: 200 with the error in the body.
    assert_eq!(
        (waited.status, waited.json()),
        (200, json!({"__error__": error}))
    );
    let run_id = waited
        .header("content-location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let run = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(run["status"], "error");
    let failed = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(
        (&failed["status"], &failed["error"]),
        (&json!("error"), &error)
    );
    assert_eq!(
        failed["values"],
        json!({"messages": [], "count": 0}),
        "the input's values"
    );
    let state = call(address, &format!("GET /threads/{thread}/state"))
        .await
        .json();
    assert_eq!(state["next"], json!(["explode"]));
    assert_eq!(
        state["tasks"][0]["error"],
        "ValueError('boom: intentional failure for the error-event transcript')"
    );
    let joined = call(
        address,
        &format!("GET /threads/{thread}/runs/{run_id}/join"),
    )
    .await;
    assert_eq!(joined.json(), json!({"__error__": error}));
    // A later run that succeeds clears the error.
    send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "simple", "input": {"count": 0}}),
    )
    .await;
    let fixed = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(
        (&fixed["status"], &fixed["error"]),
        (&json!("idle"), &Json::Null)
    );
}

#[tokio::test]
async fn reject_lets_exactly_one_of_ten_concurrent_runs_in() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let attempts = (0..10).map(|_| {
        let thread = thread.clone();
        tokio::spawn(async move {
            send(
                address,
                &format!("POST /threads/{thread}/runs"),
                &json!({"assistant_id": "simple", "input": {"count": 3}, "multitask_strategy": "reject"}),
            )
            .await
        })
    });
    let mut statuses = Vec::new();
    for attempt in attempts {
        let response = attempt.await.unwrap();
        if response.status == 409 {
            assert_eq!(
                response.json()["detail"],
                "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
            );
        }
        statuses.push(response.status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    let busy = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(busy["status"], "busy");
    let update = send(
        address,
        &format!("POST /threads/{thread}/state"),
        &json!({"values": {"count": 7}}),
    )
    .await;
    assert_eq!(
        update.status, 409,
        "no update while a run is in flight: {}",
        update.body
    );
    poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] == "idle"
    })
    .await;
}

#[tokio::test]
async fn enqueued_runs_run_one_at_a_time_in_order() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let mut run_ids = Vec::new();
    for count in [3, 10, 20] {
        let run = send(
            address,
            &format!("POST /threads/{thread}/runs"),
            &json!({"assistant_id": "simple", "input": {"count": count}}),
        )
        .await
        .json();
        run_ids.push(run["run_id"].as_str().unwrap().to_owned());
    }
    let second = call(
        address,
        &format!("GET /threads/{thread}/runs/{}", run_ids[1]),
    )
    .await
    .json();
    assert_eq!(second["status"], "pending", "queued behind the first");
    let last = call(
        address,
        &format!("GET /threads/{thread}/runs/{}/join", run_ids[2]),
    )
    .await
    .json();
    assert_eq!(last["count"], 21);
    let runs = call(address, &format!("GET /threads/{thread}/runs"))
        .await
        .json();
    let listed: Vec<&Json> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["run_id"])
        .collect();
    assert_eq!(
        listed,
        [&json!(run_ids[2]), &json!(run_ids[1]), &json!(run_ids[0])]
    );
    // Each ran on the state the previous left: one input checkpoint per run,
    // in the runs' order.
    let history = send(
        address,
        &format!("POST /threads/{thread}/history"),
        &json!({"limit": 100}),
    )
    .await
    .json();
    let ran: Vec<&Json> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|state| state["metadata"]["source"] == "input")
        .map(|state| &state["metadata"]["run_id"])
        .rev()
        .collect();
    assert_eq!(
        ran,
        [&json!(run_ids[0]), &json!(run_ids[1]), &json!(run_ids[2])]
    );
}

#[tokio::test]
async fn stateless_runs_use_a_thread_that_is_gone_at_the_end() {
    let address = start_fixtures(on_a_free_port()).await;
    let waited = send(
        address,
        "POST /runs/wait",
        &json!({"assistant_id": "simple", "input": {"count": 0}}),
    )
    .await;
    assert_eq!(
        (waited.status, waited.json()),
        (200, json!({"messages": [], "count": 1}))
    );
    let location = waited.header("location").unwrap().to_owned();
    let thread = location.split('/').nth(2).unwrap();
    assert!(
        location.ends_with("/join") && location.starts_with("/threads/"),
        "{location}"
    );
    assert_eq!(
        call(address, &format!("GET /threads/{thread}"))
            .await
            .status,
        404
    );

    let kept = send(
        address,
        "POST /runs/wait",
        &json!({"assistant_id": "simple", "input": {"count": 0}, "on_completion": "keep"}),
    )
    .await;
    let thread = kept
        .header("location")
        .unwrap()
        .split('/')
        .nth(2)
        .unwrap()
        .to_owned();
    assert_eq!(
        call(address, &format!("GET /threads/{thread}"))
            .await
            .status,
        200
    );

    let created = send(
        address,
        "POST /runs",
        &json!({"assistant_id": "simple", "input": {"count": 0}}),
    )
    .await;
    assert_eq!(created.status, 200);
    let run = created.json();
    assert_eq!(
        created.header("content-location"),
        Some(format!("/runs/{}", run["run_id"].as_str().unwrap()).as_str())
    );
    assert_eq!(run["kwargs"]["temporary"], true);
    assert_eq!(
        run["metadata"],
        json!({"created_by": "system", "assistant_id": SIMPLE}),
        "a stateless run's metadata has no graph_id"
    );
    let batch = send(
        address,
        "POST /runs/batch",
        &json!([{"assistant_id": "simple"}, {"assistant_id": "hitl", "input": {"messages": []}}]),
    )
    .await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    let runs = batch.json();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_ne!(runs[0]["thread_id"], runs[1]["thread_id"]);
    let refused = send(
        address,
        "POST /runs",
        &json!({"assistant_id": "hitl", "command": {"resume": "yes"}}),
    )
    .await;
    assert_eq!(
        (refused.status, refused.json()),
        (
            400,
            json!({"detail": "You must provide a thread_id when resuming."})
        )
    );
}

#[tokio::test]
async fn bad_run_requests_get_the_official_answers() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let runs = format!("POST /threads/{thread}/runs");
    let missing = send(
        address,
        "POST /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/runs",
        &json!({"assistant_id": "simple"}),
    )
    .await;
    assert_eq!(
        (missing.status, missing.json()),
        (404, json!({"detail": "Thread or assistant not found."}))
    );
    let created = send(
        address,
        "POST /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/runs/wait",
        &json!({"assistant_id": "simple", "if_not_exists": "create"}),
    )
    .await;
    assert_eq!(
        created.status, 200,
        "if_not_exists creates the thread: {}",
        created.body
    );
    let thread_made = call(address, "GET /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd")
        .await
        .json();
    assert_eq!(thread_made["metadata"]["graph_id"], "simple");
    let unknown = send(
        address,
        &runs,
        &json!({"assistant_id": "0b226d00-e4ec-5b58-8e33-000000000000"}),
    )
    .await;
    assert_eq!(unknown.status, 404);
    let name = send(address, &runs, &json!({"assistant_id": "nope"})).await;
    assert_eq!(name.status, 422);
    assert!(
        name.json()["detail"]
            .as_str()
            .unwrap()
            .contains("hitl, simple, parent, boom")
    );
    let none = send(address, &runs, &json!({"input": {}})).await;
    assert_eq!(none.status, 422);
    assert!(
        none.json()["detail"]
            .as_str()
            .unwrap()
            .contains("\"assistant_id\" is a required property")
    );
    let mode = send(
        address,
        &runs,
        &json!({"assistant_id": "simple", "stream_mode": "bogus"}),
    )
    .await;
    assert_eq!(mode.status, 422);
    let strategy = send(
        address,
        &runs,
        &json!({"assistant_id": "simple", "multitask_strategy": "bogus"}),
    )
    .await;
    assert_eq!(strategy.status, 422);
    let both = send(
        address,
        &runs,
        &json!({"assistant_id": "simple", "config": {"configurable": {"a": 1}}, "context": {"b": 2}}),
    )
    .await;
    assert_eq!(both.status, 400);
    let bad_id = call(address, &format!("GET /threads/{thread}/runs/not-a-uuid")).await;
    assert_eq!(
        (bad_id.status, bad_id.json()),
        (422, json!({"detail": "Invalid run ID: must be a UUID"}))
    );
    let join = call(
        address,
        &format!("GET /threads/{thread}/runs/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/join"),
    )
    .await;
    assert_eq!(
        (join.status, join.json()),
        (
            200,
            json!({"__error__": {"error": "HTTPException", "message": "404: Run not found"}})
        )
    );
}

#[tokio::test]
async fn wait_keeps_the_connection_alive_and_a_client_gone_can_cancel() {
    let mut settings = on_a_free_port();
    settings.streams.heartbeat_seconds = 0.05;
    let address = start_fixtures(settings).await;
    let thread = new_thread(address).await;
    let waited = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "simple", "input": {"count": 3}}),
    )
    .await;
    assert!(
        waited.body.starts_with('\n'),
        "a newline each heartbeat first: {:?}",
        waited.body
    );
    assert_eq!(waited.json(), json!({"messages": [], "count": 4}));

    // A client that leaves a `wait` with `on_disconnect: cancel` cancels
    // its run: the run ends `interrupted`, the thread keeps its last
    // checkpoint.
    let body =
        json!({"assistant_id": "simple", "input": {"count": 100}, "on_disconnect": "cancel"})
            .to_string();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /threads/{thread}/runs/wait HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(stream);
    let runs = poll(address, &format!("/threads/{thread}/runs"), |runs| {
        runs[0]["status"] == "interrupted"
    })
    .await;
    assert_eq!(runs.as_array().unwrap().len(), 2);
    poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] != "busy"
    })
    .await;
}

#[tokio::test]
async fn deleting_a_thread_cancels_its_runs() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let run = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 100}}),
    )
    .await
    .json();
    let queued = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 1}}),
    )
    .await
    .json();
    let deleted = call(address, &format!("DELETE /threads/{thread}")).await;
    assert_eq!(deleted.status, 204);
    for run in [&run, &queued] {
        let run_id = run["run_id"].as_str().unwrap();
        // Both runs are gone with their thread; a join does not hang.
        let joined = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            call(
                address,
                &format!("GET /threads/{thread}/runs/{run_id}/join"),
            ),
        )
        .await
        .unwrap();
        assert_eq!(joined.status, 200);
    }
    assert_eq!(
        call(address, &format!("GET /threads/{thread}"))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_cancelled_run_is_interrupted_or_rolled_back() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let slow = json!({"assistant_id": "simple", "input": {"count": 100}});
    let run = send(address, &format!("POST /threads/{thread}/runs"), &slow)
        .await
        .json();
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    poll(address, &format!("/threads/{thread}/runs/{run_id}"), |r| {
        r["status"] == "running"
    })
    .await;
    // TRANSCRIPTS.md section 15.
    let cancelled = call(
        address,
        &format!("POST /threads/{thread}/runs/{run_id}/cancel?wait=true&action=interrupt"),
    )
    .await;
    assert_eq!((cancelled.status, cancelled.json()), (200, json!({})));
    let run = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(run["status"], "interrupted");
    let state = call(address, &format!("GET /threads/{thread}/state"))
        .await
        .json();
    assert_eq!(
        state["metadata"]["run_id"],
        json!(run_id),
        "its progress is kept"
    );

    let second = send(address, &format!("POST /threads/{thread}/runs"), &slow)
        .await
        .json();
    let second_id = second["run_id"].as_str().unwrap().to_owned();
    until_running(address, &thread, &second_id).await;
    let rolled = call(
        address,
        &format!("POST /threads/{thread}/runs/{second_id}/cancel?action=rollback"),
    )
    .await;
    assert_eq!((rolled.status, rolled.body.as_str()), (202, ""));
    poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] != "busy"
    })
    .await;
    let gone = call(address, &format!("GET /threads/{thread}/runs/{second_id}")).await;
    assert_eq!(gone.status, 404, "a rolled-back run is deleted");
    let history = send(
        address,
        &format!("POST /threads/{thread}/history"),
        &json!({"limit": 50}),
    )
    .await
    .json();
    assert!(
        history
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["metadata"]["run_id"] != json!(second_id)),
        "and its checkpoints with it"
    );
    let unknown = call(
        address,
        &format!("POST /threads/{thread}/runs/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/cancel"),
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.json()),
        (404, json!({"detail": "No runs found to cancel."}))
    );
    let none = send(address, "POST /runs/cancel", &json!({"status": "all"})).await;
    assert_eq!(none.status, 404, "nothing in flight");
    let bad = send(address, "POST /runs/cancel", &json!({})).await;
    assert_eq!(bad.status, 422);
    send(address, &format!("POST /threads/{thread}/runs"), &slow).await;
    let all = send(address, "POST /runs/cancel", &json!({"status": "all"})).await;
    assert_eq!(all.status, 204);
    poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] != "busy"
    })
    .await;
}

#[tokio::test]
async fn interrupt_and_rollback_make_way_for_the_new_run() {
    let address = start_fixtures(on_a_free_port()).await;
    for (strategy, first_after) in [("interrupt", Some("interrupted")), ("rollback", None)] {
        let thread = new_thread(address).await;
        let first_id = create_run(
            address,
            &thread,
            &json!({"assistant_id": "simple", "input": {"count": 100}}),
        )
        .await;
        until_running(address, &thread, &first_id).await;
        let second = send(
            address,
            &format!("POST /threads/{thread}/runs/wait"),
            &json!({"assistant_id": "simple", "input": {"count": 1}, "multitask_strategy": strategy}),
        )
        .await;
        assert_eq!(second.status, 200, "{strategy}: {}", second.body);
        assert_eq!(second.json()["count"], 2, "{strategy}");
        let first_now = call(address, &format!("GET /threads/{thread}/runs/{first_id}")).await;
        match first_after {
            Some(status) => assert_eq!(first_now.json()["status"], status, "{strategy}"),
            None => assert_eq!(first_now.status, 404, "{strategy}: the first run is gone"),
        }
        let done = call(address, &format!("GET /threads/{thread}"))
            .await
            .json();
        assert_eq!(done["status"], "idle", "{strategy}");
    }
}

/// `feedback_keys`: a list of strings, kept in the run's kwargs; keys need
/// LangSmith (the official server asks it for a URL per key), so only an
/// empty list is taken.
#[tokio::test]
async fn feedback_keys_are_checked_and_only_an_empty_list_is_taken() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let path = format!("POST /threads/{thread}/runs");
    let empty = send(
        address,
        &path,
        &json!({"assistant_id": "simple", "input": {"count": 0}, "feedback_keys": []}),
    )
    .await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert_eq!(empty.json()["kwargs"]["feedback_keys"], json!([]));
    for (keys, says) in [
        (json!("thumbs"), "list of strings"),
        (json!([1]), "list of strings"),
        (json!(["thumbs"]), "LangSmith"),
    ] {
        let refused = send(
            address,
            &path,
            &json!({"assistant_id": "simple", "feedback_keys": keys}),
        )
        .await;
        assert_eq!(refused.status, 422, "{keys}: {}", refused.body);
        assert!(refused.body.contains(says), "{keys}: {}", refused.body);
    }
}
