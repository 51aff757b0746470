//! The store over HTTP (TRANSCRIPTS.md section 19): put, get, search,
//! namespaces, delete; items a graph wrote are visible; bad namespaces get
//! the official answers.

use serde_json::json;

use crate::support::{call, new_thread, on_a_free_port, request, send, start_fixtures};

#[tokio::test]
async fn items_are_put_read_searched_listed_and_deleted() {
    let address = start_fixtures(on_a_free_port()).await;
    let item = json!({"namespace": ["users", "u1"], "key": "prefs", "value": {"theme": "dark", "lang": "en"}});
    let put = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &item.to_string(),
    )
    .await;
    assert_eq!(put.status, 204, "{}", put.body);
    let got = call(address, "GET /store/items?namespace=users.u1&key=prefs")
        .await
        .json();
    assert_eq!(got["namespace"], json!(["users", "u1"]));
    assert_eq!(got["value"], json!({"theme": "dark", "lang": "en"}));
    assert!(
        got["created_at"].as_str().unwrap().ends_with("+00:00"),
        "{got}"
    );

    let found = send(
        address,
        "POST /store/items/search",
        &json!({"namespace_prefix": ["users"], "filter": {"theme": "dark"}, "limit": 10, "offset": 0}),
    )
    .await
    .json();
    assert_eq!(found["items"].as_array().unwrap().len(), 1);
    assert_eq!(found["items"][0]["key"], "prefs");
    assert_eq!(found["items"][0]["score"], json!(null));
    let none = send(
        address,
        "POST /store/items/search",
        &json!({"namespace_prefix": ["users"], "filter": {"theme": "light"}}),
    )
    .await
    .json();
    assert_eq!(none, json!({"items": []}));

    let listed = send(
        address,
        "POST /store/namespaces",
        &json!({"prefix": ["users"], "max_depth": 2, "limit": 100, "offset": 0}),
    )
    .await
    .json();
    assert_eq!(listed, json!({"namespaces": [["users", "u1"]]}));

    let deleted = request(
        address,
        "DELETE /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["users", "u1"], "key": "prefs"}).to_string(),
    )
    .await;
    assert_eq!(deleted.status, 204);
    let gone = call(address, "GET /store/items?namespace=users.u1&key=prefs").await;
    assert_eq!(
        (gone.status, gone.json()),
        (200, json!(null)),
        "a missing item is a 200 with null"
    );
}

#[tokio::test]
async fn an_item_put_with_a_ttl_expires() {
    let mut settings = on_a_free_port();
    // Sweep every 60 ms.
    settings.store.sweep_interval_minutes = 0.001;
    let address = start_fixtures(settings).await;
    // A TTL of 60 ms.
    let put = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["short"], "key": "k", "value": {"v": 1}, "ttl": 0.001}).to_string(),
    )
    .await;
    assert_eq!(put.status, 204, "{}", put.body);
    let kept = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["short"], "key": "forever", "value": {"v": 2}}).to_string(),
    )
    .await;
    assert_eq!(kept.status, 204);
    for _ in 0..100 {
        let gone = call(
            address,
            "GET /store/items?namespace=short&key=k&refresh_ttl=false",
        )
        .await;
        if gone.json().is_null() {
            let forever = call(address, "GET /store/items?namespace=short&key=forever").await;
            assert_eq!(forever.json()["value"], json!({"v": 2}));
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the item never expired");
}

#[tokio::test]
async fn what_a_graph_writes_is_in_the_store() {
    let address = start_fixtures(on_a_free_port()).await;
    let thread = new_thread(address).await;
    let first = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "hitl", "input": {"messages": [{"type": "human", "content": "hi"}]}}),
    )
    .await;
    assert_eq!(first.status, 200);
    let resumed = send(
        address,
        &format!("POST /threads/{thread}/runs/wait"),
        &json!({"assistant_id": "hitl", "command": {"resume": "ok"}}),
    )
    .await;
    assert_eq!(resumed.status, 200);
    let found = send(
        address,
        "POST /store/items/search",
        &json!({"namespace_prefix": ["memories"]}),
    )
    .await
    .json();
    assert_eq!(found["items"][0]["namespace"], json!(["memories", "demo"]));
    assert_eq!(found["items"][0]["value"], json!({"approved": "ok"}));
}

#[tokio::test]
async fn bad_store_requests_get_the_official_answers() {
    let address = start_fixtures(on_a_free_port()).await;
    let dotted = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["a.b"], "key": "k", "value": {}}).to_string(),
    )
    .await;
    assert_eq!(
        (dotted.status, dotted.body.as_str()),
        (
            422,
            "Namespace label 'a.b' must be a non-empty string without periods"
        ),
        "a plain-text body, as the official server"
    );
    let no_key = call(address, "GET /store/items?namespace=users").await;
    assert_eq!(
        (no_key.status, no_key.json()),
        (400, json!({"error": "Key is required"}))
    );
    let empty_label = call(address, "GET /store/items?key=k").await;
    assert_eq!(empty_label.status, 422);
    let not_object = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["a"], "key": "k", "value": [1]}).to_string(),
    )
    .await;
    assert_eq!(not_object.status, 422);
    let reserved = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": ["langgraph", "x"], "key": "k", "value": {}}).to_string(),
    )
    .await;
    assert_eq!(
        (reserved.status, reserved.json()),
        (
            400,
            json!({"detail": "Root label for namespace cannot be \"langgraph\"."})
        ),
        "LangGraph's InvalidNamespaceError, a ValueError: 400"
    );
    let empty = request(
        address,
        "PUT /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": [], "key": "k", "value": {}}).to_string(),
    )
    .await;
    assert_eq!(
        (empty.status, empty.json()),
        (400, json!({"detail": "Namespace cannot be empty."}))
    );
    let delete_empty = request(
        address,
        "DELETE /store/items HTTP/1.1\r\nContent-Type: application/json",
        &json!({"namespace": [], "key": "k"}).to_string(),
    )
    .await;
    assert_eq!(delete_empty.status, 204);
}
