//! SSE run streams over raw HTTP: the official framing byte for byte, the
//! event sequences of TRANSCRIPTS.md sections 4, 6, 11, 12 and 16,
//! heartbeats, joins with `Last-Event-ID`, and a client gone cancelling.

use serde_json::{Value as Json, json};

use crate::support::{Response, call, new_thread, on_a_free_port, poll, request, start_fixtures};

/// One parsed event: its name, data and id (`None`: no `id:` line).
#[derive(Debug)]
struct Event {
    name: String,
    data: Json,
    id: Option<String>,
}

/// The events of an SSE body, each checked against the official framing:
/// `event:`, one `data:` line of compact JSON, then `id:` when present,
/// CRLF line ends. Heartbeat comments are counted apart.
fn parse(body: &str) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut heartbeats = 0;
    for block in body.split("\r\n\r\n").filter(|block| !block.is_empty()) {
        if block == ": heartbeat" {
            heartbeats += 1;
            continue;
        }
        let lines: Vec<&str> = block.split("\r\n").collect();
        assert!(
            (2..=3).contains(&lines.len()),
            "an event is event, data and maybe id lines: {block:?}"
        );
        let name = lines[0].strip_prefix("event: ").unwrap().to_owned();
        let data_text = lines[1].strip_prefix("data: ").unwrap();
        let data: Json = serde_json::from_str(data_text).unwrap();
        assert_eq!(
            serde_json::to_string(&data).unwrap().len(),
            data_text.len(),
            "compact JSON: {data_text}"
        );
        let id = lines
            .get(2)
            .map(|line| line.strip_prefix("id: ").unwrap().to_owned());
        events.push(Event { name, data, id });
    }
    (events, heartbeats)
}

async fn stream(address: std::net::SocketAddr, path: &str, body: &Json) -> Response {
    request(
        address,
        &format!(
            "POST {path} HTTP/1.1\r\nAccept: text/event-stream\r\nContent-Type: application/json"
        ),
        &body.to_string(),
    )
    .await
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|event| event.name.as_str()).collect()
}

#[tokio::test]
async fn a_run_streams_its_modes_to_an_interrupt_then_resumes() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let response = stream(
        address,
        &format!("/threads/{thread}/runs/stream"),
        &json!({
            "assistant_id": "hitl",
            "input": {"messages": [{"role": "user", "content": "hi there"}]},
            "stream_mode": ["values", "updates", "messages-tuple", "custom"],
        }),
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("x-accel-buffering"), Some("no"));
    let location = response.header("location").unwrap();
    let run_id = location.split('/').nth(4).unwrap().to_owned();
    assert_eq!(location, format!("/threads/{thread}/runs/{run_id}/stream"));
    assert_eq!(
        response.header("content-location"),
        Some(format!("/threads/{thread}/runs/{run_id}").as_str())
    );
    // TRANSCRIPTS.md section 4, the first event's raw bytes.
    let first =
        format!("event: metadata\r\ndata: {{\"run_id\":\"{run_id}\",\"attempt\":1}}\r\n\r\n");
    assert!(
        response.body.starts_with(&first),
        "{:?}",
        &response.body[..200.min(response.body.len())]
    );
    let (events, _) = parse(&response.body);
    let mut sequence = names(&events);
    sequence.dedup();
    assert_eq!(
        sequence,
        [
            "metadata", "values", "custom", "messages", "updates", "values", "updates", "values"
        ]
    );
    assert!(
        events.iter().all(|event| event.id.is_none()),
        "a run not resumable has no ids"
    );
    assert_eq!(events[2].data, json!({"progress": "agent-start"}));
    let tokens: Vec<&Event> = events.iter().filter(|e| e.name == "messages").collect();
    assert!(tokens.len() > 1, "the answer streams token by token");
    let text: String = tokens
        .iter()
        .map(|event| event.data[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from the fake model");
    let (chunk, metadata) = (&tokens[0].data[0], &tokens[0].data[1]);
    assert_eq!(chunk["type"], "AIMessageChunk");
    // TRANSCRIPTS.md section 23: a chunk's LangChain keys.
    let mut chunk_keys: Vec<&String> = chunk.as_object().unwrap().keys().collect();
    chunk_keys.sort();
    assert_eq!(
        chunk_keys,
        [
            "additional_kwargs",
            "chunk_position",
            "content",
            "id",
            "invalid_tool_calls",
            "name",
            "response_metadata",
            "tool_call_chunks",
            "tool_calls",
            "type",
            "usage_metadata"
        ]
    );
    assert_eq!(tokens.last().unwrap().data[0]["chunk_position"], "last");
    assert_eq!(metadata["langgraph_node"], "agent");
    assert_eq!(metadata["graph_id"], "hitl");
    assert_eq!(metadata["run_attempt"], 1);
    let interrupt = &events[events.len() - 2].data["__interrupt__"][0];
    assert_eq!(
        (&interrupt["value"], &interrupt["response_schema"]),
        (&json!({"question": "approve?", "count": 1}), &Json::Null)
    );
    let last = &events.last().unwrap().data;
    assert_eq!(last["count"], 1);
    assert_eq!(
        last["__interrupt__"],
        events[events.len() - 2].data["__interrupt__"]
    );
    let run = call(address, &format!("GET /threads/{thread}/runs/{run_id}"))
        .await
        .json();
    assert_eq!(
        run["status"], "success",
        "the run has ended when its stream closes"
    );

    // TRANSCRIPTS.md section 6: the resumed stream starts with the
    // interrupted state.
    let resumed = stream(
        address,
        &format!("/threads/{thread}/runs/stream"),
        &json!({"assistant_id": "hitl", "command": {"resume": "yes"}, "stream_mode": ["values", "updates"]}),
    )
    .await;
    let (events, _) = parse(&resumed.body);
    assert_eq!(
        names(&events),
        [
            "metadata", "values", "updates", "values", "updates", "values"
        ]
    );
    assert_eq!(events[1].data["count"], 1);
    assert_eq!(events[2].data, json!({"review": {"approved": "yes"}}));
    assert_eq!(events[5].data["count"], 101);
}

#[tokio::test]
async fn subgraph_events_carry_their_namespace_and_errors_end_a_stream() {
    let address = start_fixtures(on_a_free_port()).await;
    let response = stream(
        address,
        "/runs/stream",
        &json!({"assistant_id": "parent", "input": {"count": 1}, "stream_mode": ["values", "updates"], "stream_subgraphs": true}),
    )
    .await;
    let location = response.header("location").unwrap();
    assert!(
        location.starts_with("/runs/") && location.ends_with("/stream"),
        "{location}"
    );
    let (events, _) = parse(&response.body);
    let shapes: Vec<String> = events
        .iter()
        .map(|event| match event.name.split_once(":") {
            // `values|child:<task id>`: the task id is a uuid.
            Some((head, task)) => {
                assert_eq!(uuid::Uuid::parse_str(task).unwrap().to_string(), task);
                format!("{head}:<task>")
            }
            None => event.name.clone(),
        })
        .collect();
    // TRANSCRIPTS.md section 11.
    assert_eq!(
        shapes,
        [
            "metadata",
            "values",
            "values|child:<task>",
            "updates|child:<task>",
            "values|child:<task>",
            "updates",
            "values"
        ]
    );
    assert_eq!(events[3].data, json!({"inner": {"count": 11}}));
    assert_eq!(events[6].data, json!({"messages": [], "count": 11}));

    // TRANSCRIPTS.md section 12.
    let failed = stream(
        address,
        "/runs/stream",
        &json!({"assistant_id": "boom", "input": {"count": 0}, "stream_mode": ["values"]}),
    )
    .await;
    let (events, _) = parse(&failed.body);
    assert_eq!(names(&events), ["metadata", "values", "error"]);
    assert!(
        failed.body.ends_with("event: error\r\ndata: {\"error\":\"ValueError\",\"message\":\"boom: intentional failure for the error-event transcript\"}\r\n\r\n"),
        "{}",
        failed.body
    );
}

#[tokio::test]
async fn a_resumable_run_replays_from_any_event() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let run = crate::support::send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": "hitl", "input": {"messages": [{"role": "user", "content": "hi there"}]}, "stream_mode": ["values", "custom"], "stream_resumable": true}),
    )
    .await
    .json();
    let run_id = run["run_id"].as_str().unwrap();
    let join = |last: Option<String>| {
        let path = format!("/threads/{thread}/runs/{run_id}/stream");
        async move {
            let header = last.map_or_else(String::new, |id| format!("\r\nLast-Event-ID: {id}"));
            request(
                address,
                &format!("GET {path} HTTP/1.1\r\nAccept: text/event-stream{header}"),
                "",
            )
            .await
        }
    };
    let all = join(Some("-1".into())).await;
    assert_eq!(all.status, 200);
    let (events, _) = parse(&all.body);
    // TRANSCRIPTS.md section 16.
    assert_eq!(
        names(&events),
        ["metadata", "values", "custom", "values", "values"]
    );
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_deref().unwrap()).collect();
    let parsed: Vec<(u64, u64)> = ids
        .iter()
        .map(|id| {
            let (ms, seq) = id.split_once('-').unwrap();
            (ms.parse().unwrap(), seq.parse().unwrap())
        })
        .collect();
    assert!(
        parsed.windows(2).all(|pair| pair[0] < pair[1]),
        "ids strictly increase: {ids:?}"
    );
    let later = join(Some(ids[1].to_owned())).await;
    let (rest, _) = parse(&later.body);
    assert_eq!(names(&rest), ["custom", "values", "values"]);
    assert_eq!(rest[0].id.as_deref(), Some(ids[2]));
    let tail = join(None).await;
    assert_eq!(
        (tail.status, tail.body.as_str()),
        (200, ""),
        "a finished run's live tail is empty"
    );
    let unknown = request(
        address,
        &format!("GET /threads/{thread}/runs/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/stream HTTP/1.1"),
        "",
    )
    .await;
    assert_eq!(unknown.status, 200);
    let (events, _) = parse(&unknown.body);
    assert_eq!(names(&events), ["error"]);
    assert_eq!(events[0].data["message"], "404: Run not found");
}

#[tokio::test]
async fn streams_send_heartbeats_and_a_client_gone_can_cancel() {
    let mut settings = on_a_free_port();
    settings.streams.heartbeat_seconds = 0.05;
    let address = start_fixtures(settings).await;
    let thread = new_thread(address).await;
    let slow = stream(
        address,
        &format!("/threads/{thread}/runs/stream"),
        &json!({"assistant_id": "simple", "input": {"count": 3}}),
    )
    .await;
    let (events, heartbeats) = parse(&slow.body);
    assert_eq!(names(&events), ["metadata", "values", "values"]);
    assert!(
        heartbeats >= 2,
        "a 0.3 s run at a 50 ms heartbeat: {heartbeats}"
    );
    assert!(slow.body.contains(": heartbeat\r\n\r\n"));

    let body =
        json!({"assistant_id": "simple", "input": {"count": 100}, "on_disconnect": "cancel"})
            .to_string();
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /threads/{thread}/runs/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut client, head.as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(client);
    poll(address, &format!("/threads/{thread}/runs"), |runs| {
        runs[0]["status"] == "interrupted"
    })
    .await;
}

/// Reads a chunked response's complete chunks from `raw` (after its head).
fn complete_chunks(raw: &str) -> String {
    let Some((_, mut rest)) = raw.split_once("\r\n\r\n") else {
        return String::new();
    };
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size + 2 {
            break;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    body
}

/// Follows `GET path` until the body has `until`; the body so far.
async fn follow(
    address: std::net::SocketAddr,
    path: &str,
    start: impl std::future::Future<Output = ()>,
    until: &str,
) -> String {
    follow_from(address, path, None, start, |body| body.contains(until)).await
}

/// [`follow`] with a `Last-Event-ID`, until `done` says the body is.
async fn follow_from(
    address: std::net::SocketAddr,
    path: &str,
    last_event_id: Option<&str>,
    start: impl std::future::Future<Output = ()>,
    done: impl Fn(&str) -> bool,
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    let resume = last_event_id.map_or_else(String::new, |id| format!("Last-Event-ID: {id}\r\n"));
    client
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n{resume}\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    // The head first: the stream is followed before the run starts.
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 8192];
    while !String::from_utf8_lossy(&raw).contains("\r\n\r\n") {
        let n = client.read(&mut buffer).await.unwrap();
        assert!(n > 0, "closed before its head");
        raw.extend_from_slice(&buffer[..n]);
    }
    start.await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let body = complete_chunks(&String::from_utf8_lossy(&raw));
        if done(&body) {
            return body;
        }
        let n = tokio::time::timeout_at(deadline, client.read(&mut buffer))
            .await
            .expect("the thread stream never showed it")
            .unwrap();
        assert!(
            n > 0,
            "the thread stream ended early: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buffer[..n]);
    }
}

/// A thread's stream is kept after its follower left: a reconnect with
/// `Last-Event-ID` gets the events it missed (a whole run here), `-1` all
/// kept ones.
#[tokio::test]
async fn a_thread_stream_reconnect_replays_what_it_missed() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let run = json!({"assistant_id": "simple", "input": {"count": 1}});
    let body = follow(
        address,
        &format!("/threads/{thread}/stream"),
        async {
            crate::support::create_run(address, &thread, &run).await;
        },
        "run_done",
    )
    .await;
    let (first, _) = parse(&body);
    let last_seen = first.last().unwrap().id.clone().unwrap();
    // While no one follows, a second run.
    let missed = crate::support::create_run(address, &thread, &run).await;
    poll(
        address,
        &format!("/threads/{thread}/runs/{missed}"),
        |run| run["status"] == "success",
    )
    .await;
    let body = follow_from(
        address,
        &format!("/threads/{thread}/stream"),
        Some(&last_seen),
        async {},
        |body| body.contains("run_done"),
    )
    .await;
    let (replayed, _) = parse(&body);
    assert_eq!(
        names(&replayed),
        ["metadata", "values", "values", "metadata"]
    );
    assert_eq!(replayed[0].data["run_id"], *missed);
    assert_eq!(replayed[3].data["status"], "run_done");
    let body = follow_from(
        address,
        &format!("/threads/{thread}/stream"),
        Some("-1"),
        async {},
        |body| body.matches("run_done").count() == 2,
    )
    .await;
    let (all, _) = parse(&body);
    assert_eq!(all.len(), 8, "{body}");
    // A replay shows only the modes asked for, as the live stream does.
    let body = follow_from(
        address,
        &format!("/threads/{thread}/stream?stream_modes=lifecycle"),
        Some("-1"),
        async {},
        |body| body.matches("run_done").count() == 2,
    )
    .await;
    let (lifecycle, _) = parse(&body);
    assert_eq!(
        names(&lifecycle),
        ["metadata", "metadata", "metadata", "metadata"]
    );
}

#[tokio::test]
async fn a_thread_stream_follows_its_runs_and_updates() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let body = follow(
        address,
        &format!("/threads/{thread}/stream"),
        async {
            crate::support::create_run(
                address,
                &thread,
                &json!({"assistant_id": "simple", "input": {"count": 1}}),
            )
            .await;
        },
        "run_done",
    )
    .await;
    let (events, _) = parse(&body);
    assert_eq!(names(&events), ["metadata", "values", "values", "metadata"]);
    assert!(
        events.iter().all(|event| event.id.is_some()),
        "every event has an id"
    );
    assert_eq!(events[3].data["status"], "run_done");
    assert_eq!(events[0].data["run_id"], events[3].data["run_id"]);

    // `lifecycle` shows only a run's start and end; `state_update`, updates.
    let body = follow(
        address,
        &format!("/threads/{thread}/stream?stream_modes=lifecycle,state_update"),
        async {
            let run = crate::support::create_run(
                address,
                &thread,
                &json!({"assistant_id": "simple", "input": {"count": 1}}),
            )
            .await;
            poll(address, &format!("/threads/{thread}/runs/{run}"), |run| {
                run["status"] == "success"
            })
            .await;
            let updated = crate::support::send(
                address,
                &format!("POST /threads/{thread}/state"),
                &json!({"values": {"count": 7}}),
            )
            .await;
            assert_eq!(updated.status, 200, "{}", updated.body);
        },
        "state_update",
    )
    .await;
    let (events, _) = parse(&body);
    assert_eq!(names(&events), ["metadata", "metadata", "state_update"]);
    assert_eq!(events[2].data["state"]["values"]["count"], 7);
    assert_eq!(events[2].data["thread_id"], *thread);

    let bad = call(
        address,
        &format!("GET /threads/{thread}/stream?stream_modes=bogus"),
    )
    .await;
    assert_eq!(
        (bad.status, bad.json()),
        (422, json!({"detail": "Invalid stream mode: bogus"}))
    );
    let missing = call(
        address,
        "GET /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/stream",
    )
    .await;
    assert_eq!(missing.status, 404);
}
