//! A thread's state over HTTP: read, updated as a node, at a checkpoint,
//! and its history (TRANSCRIPTS.md sections 5, 7 and 8; the official
//! server's answers for a thread no graph has run on).

use serde_json::{Value as Json, json};

use crate::support::{call, keys, on_a_free_port, send, start};

/// The keys of a `ThreadState`.
const STATE_KEYS: [&str; 10] = [
    "checkpoint",
    "checkpoint_id",
    "created_at",
    "interrupts",
    "metadata",
    "next",
    "parent_checkpoint",
    "parent_checkpoint_id",
    "tasks",
    "values",
];

#[tokio::test]
async fn a_thread_no_graph_ran_on_has_an_empty_state() {
    let address = start(on_a_free_port()).await;
    let id = call(address, "POST /threads").await.json()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let state = call(address, &format!("GET /threads/{id}/state")).await;
    assert_eq!(state.status, 200);
    assert_eq!(
        state.json(),
        json!({
            "values": {}, "next": [], "tasks": [], "metadata": null, "created_at": null,
            "checkpoint": null, "parent_checkpoint": null, "interrupts": [],
            "checkpoint_id": null, "parent_checkpoint_id": null
        })
    );
    let history = call(address, &format!("GET /threads/{id}/history")).await;
    assert_eq!((history.status, history.json()), (200, json!([])));
    let update = send(
        address,
        &format!("POST /threads/{id}/state"),
        &json!({"values": {"log": ["x"]}}),
    )
    .await;
    assert_eq!(update.status, 400);
    assert!(
        update.json()["detail"]
            .as_str()
            .unwrap()
            .contains("has no assigned graph ID"),
        "{}",
        update.body
    );
    let bad = call(address, "GET /threads/not-a-uuid/state").await;
    assert_eq!(
        (bad.status, bad.json()),
        (422, json!({"detail": "Invalid thread ID: must be a UUID"}))
    );
    let missing = call(
        address,
        "GET /threads/3e8c5434-5ebe-4202-bf0c-3f73297b77fd/history",
    )
    .await;
    assert_eq!(missing.status, 404);
}

/// A thread on the test graph (`START -> a`, `a` appends to `log`) with
/// two updates: its id and the two checkpoint ids.
async fn updated_thread(address: std::net::SocketAddr) -> (String, String, String) {
    let thread = send(
        address,
        "POST /threads",
        &json!({"metadata": {"graph_id": "agent"}}),
    )
    .await
    .json();
    let id = thread["thread_id"].as_str().unwrap().to_owned();
    let mut checkpoints = Vec::new();
    for entry in ["x", "y"] {
        let update = send(
            address,
            &format!("POST /threads/{id}/state"),
            &json!({"values": {"log": [entry]}, "as_node": "a"}),
        )
        .await;
        assert_eq!(update.status, 200, "{}", update.body);
        let update = update.json();
        // TRANSCRIPTS.md section 8: the new address, and its legacy forms.
        assert_eq!(
            keys(&update),
            ["checkpoint", "checkpoint_id", "configurable"]
        );
        assert_eq!(update["checkpoint"], update["configurable"]);
        assert_eq!(
            keys(&update["checkpoint"]),
            ["checkpoint_id", "checkpoint_ns", "thread_id"]
        );
        assert_eq!(update["checkpoint"]["checkpoint_ns"], "");
        assert_eq!(update["checkpoint"]["thread_id"], json!(id));
        assert_eq!(
            update["checkpoint_id"],
            update["checkpoint"]["checkpoint_id"]
        );
        checkpoints.push(update["checkpoint_id"].as_str().unwrap().to_owned());
    }
    let [first, second] = <[String; 2]>::try_from(checkpoints).unwrap();
    (id, first, second)
}

#[tokio::test]
async fn an_update_goes_through_the_reducers_and_refreshes_the_thread() {
    let address = start(on_a_free_port()).await;
    let before = call(address, "POST /threads").await.json();
    let (id, first, second) = updated_thread(address).await;

    let thread = call(address, &format!("GET /threads/{id}")).await.json();
    assert_eq!(
        thread["values"],
        json!({"log": ["x", "y"]}),
        "appended, not replaced"
    );
    assert_eq!(
        (&thread["status"], &thread["error"], &thread["interrupts"]),
        (&json!("idle"), &Json::Null, &json!({}))
    );
    assert_eq!(thread["config"], json!({}));
    assert_ne!(thread["state_updated_at"], before["state_updated_at"]);

    let state = call(address, &format!("GET /threads/{id}/state"))
        .await
        .json();
    assert_eq!(keys(&state), STATE_KEYS);
    assert_eq!(state["values"], json!({"log": ["x", "y"]}));
    assert_eq!((&state["next"], &state["tasks"]), (&json!([]), &json!([])));
    assert_eq!(state["metadata"]["source"], "update");
    assert_eq!(
        state["checkpoint"],
        json!({"checkpoint_id": second, "thread_id": id, "checkpoint_ns": ""})
    );
    assert_eq!(
        state["parent_checkpoint"],
        json!({"checkpoint_id": first, "thread_id": id, "checkpoint_ns": ""})
    );
    assert_eq!(
        (&state["checkpoint_id"], &state["parent_checkpoint_id"]),
        (&json!(second), &json!(first))
    );
    let created = state["created_at"].as_str().unwrap();
    assert!(created.ends_with("+00:00"), "{created}");

    // A checkpoint named without a namespace is echoed without one
    // (TRANSCRIPTS.md section 8, both forms).
    let at = call(address, &format!("GET /threads/{id}/state/{first}"))
        .await
        .json();
    assert_eq!(at["values"], json!({"log": ["x"]}));
    assert_eq!(
        at["checkpoint"],
        json!({"checkpoint_id": first, "thread_id": id})
    );
    let posted = send(
        address,
        &format!("POST /threads/{id}/state/checkpoint"),
        &json!({"checkpoint": {"checkpoint_id": first}}),
    )
    .await
    .json();
    assert_eq!(posted, at);
    let latest = send(
        address,
        &format!("POST /threads/{id}/state/checkpoint"),
        &json!({"checkpoint": {"thread_id": id}, "subgraphs": false}),
    )
    .await
    .json();
    assert_eq!(latest, state, "RemoteGraph's form reads the latest state");

    // An update from a past checkpoint forks from it.
    let fork = send(
        address,
        &format!("POST /threads/{id}/state"),
        &json!({"values": {"log": ["z"]}, "as_node": "a", "checkpoint_id": first}),
    )
    .await;
    assert_eq!(fork.status, 200, "{}", fork.body);
    let state = call(address, &format!("GET /threads/{id}/state"))
        .await
        .json();
    assert_eq!(state["values"], json!({"log": ["x", "z"]}));
    assert_eq!(state["parent_checkpoint_id"], json!(first));

    let unknown = send(
        address,
        &format!("POST /threads/{id}/state"),
        &json!({"values": {"log": ["w"]}, "as_node": "nope"}),
    )
    .await;
    assert_eq!(
        unknown.status, 400,
        "LangGraph's ValueError: {}",
        unknown.body
    );
}

#[tokio::test]
async fn history_is_newest_first_and_paged() {
    let address = start(on_a_free_port()).await;
    let (id, first, second) = updated_thread(address).await;
    let one = call(address, &format!("GET /threads/{id}/history"))
        .await
        .json();
    assert_eq!(
        one.as_array().unwrap().len(),
        1,
        "the server's default limit is 1"
    );
    assert_eq!(one[0]["checkpoint_id"], json!(second));
    let all = call(address, &format!("GET /threads/{id}/history?limit=10"))
        .await
        .json();
    let ids: Vec<&Json> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["checkpoint_id"])
        .collect();
    assert_eq!(ids, [&json!(second), &json!(first)]);
    assert_eq!(keys(&all[0]), STATE_KEYS);
    let before = call(
        address,
        &format!("GET /threads/{id}/history?limit=10&before={second}"),
    )
    .await
    .json();
    assert_eq!(before[0]["checkpoint_id"], json!(first));
    let posted = send(
        address,
        &format!("POST /threads/{id}/history"),
        &json!({"limit": 10, "before": {"checkpoint_id": second}}),
    )
    .await
    .json();
    assert_eq!(posted, before);
    let filtered = send(
        address,
        &format!("POST /threads/{id}/history"),
        &json!({"limit": 10, "metadata": {"source": "input"}}),
    )
    .await
    .json();
    assert_eq!(filtered, json!([]), "both checkpoints are updates");
    let bad = call(address, &format!("GET /threads/{id}/history?limit=many")).await;
    assert_eq!(
        (bad.status, bad.json()),
        (422, json!({"detail": "Invalid limit many"}))
    );
}

#[tokio::test]
async fn a_history_limit_of_zero_is_empty_by_get_and_refused_by_post() {
    let address = start(on_a_free_port()).await;
    let (id, _, _) = updated_thread(address).await;
    let get = call(address, &format!("GET /threads/{id}/history?limit=0")).await;
    assert_eq!((get.status, get.json()), (200, json!([])));
    let post = send(
        address,
        &format!("POST /threads/{id}/history"),
        &json!({"limit": 0}),
    )
    .await;
    assert_eq!(post.status, 422, "{}", post.body);
}
