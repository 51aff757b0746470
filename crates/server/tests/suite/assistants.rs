//! Assistants over HTTP (TRANSCRIPTS.md section 2): create, versions,
//! which version is current, search, count, the graph, its schemas and
//! subgraphs, delete; and a run taking its assistant's config.

use serde_json::{Value as Json, json};

use crate::support::{call, keys, new_thread, on_a_free_port, send, start_fixtures};

/// The keys of an assistant (sorted, as the test reads JSON).
const ASSISTANT_KEYS: [&str; 10] = [
    "assistant_id",
    "config",
    "context",
    "created_at",
    "description",
    "graph_id",
    "metadata",
    "name",
    "updated_at",
    "version",
];

#[tokio::test]
async fn an_assistant_is_created_patched_versioned_and_deleted() {
    let address = start_fixtures(on_a_free_port()).await;
    let created = send(
        address,
        "POST /assistants",
        &json!({
            "graph_id": "hitl",
            "name": "my-hitl",
            "config": {"configurable": {"model": "fake"}},
            "context": {},
            "metadata": {"team": "docs"},
            "if_exists": "raise"
        }),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let created = created.json();
    assert_eq!(keys(&created), ASSISTANT_KEYS);
    // The configurable keys are mirrored into the context.
    assert_eq!(created["context"], json!({"model": "fake"}));
    assert_eq!(
        (created["version"].clone(), created["name"].clone()),
        (json!(1), json!("my-hitl"))
    );
    let id = created["assistant_id"].as_str().unwrap().to_owned();

    let again = send(
        address,
        "POST /assistants",
        &json!({"graph_id": "hitl", "assistant_id": id}),
    )
    .await;
    assert_eq!(
        (again.status, again.json()),
        (
            409,
            json!({"detail": format!("Assistant {id} already exists")})
        )
    );
    let kept = send(
        address,
        "POST /assistants",
        &json!({"graph_id": "simple", "assistant_id": id, "if_exists": "do_nothing"}),
    )
    .await;
    assert_eq!((kept.status, kept.json()), (200, created.clone()));

    let patched = send(
        address,
        &format!("PATCH /assistants/{id}"),
        &json!({"metadata": {"team": "docs", "v": 2}}),
    )
    .await
    .json();
    assert_eq!(patched["version"], 2);
    assert_eq!(patched["metadata"], json!({"team": "docs", "v": 2}));
    assert_eq!(
        patched["config"], created["config"],
        "what a patch omits stays"
    );
    assert_eq!(patched["created_at"], created["created_at"]);

    let versions = send(
        address,
        &format!("POST /assistants/{id}/versions"),
        &json!({"limit": 10}),
    )
    .await
    .json();
    let numbers: Vec<&Json> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(numbers, [&json!(2), &json!(1)], "newest first");
    assert_eq!(
        keys(&versions[0]),
        [
            "assistant_id",
            "config",
            "context",
            "created_at",
            "description",
            "graph_id",
            "metadata",
            "name",
            "version"
        ]
    );
    let filtered = send(
        address,
        &format!("POST /assistants/{id}/versions"),
        &json!({"metadata": {"v": 2}}),
    )
    .await
    .json();
    assert_eq!(filtered.as_array().unwrap().len(), 1);

    // The version goes in the body; the query form is refused, as the
    // official server refuses it.
    let by_query = call(address, &format!("POST /assistants/{id}/latest?version=1")).await;
    assert_eq!(
        (by_query.status, by_query.json()),
        (422, json!({"detail": "Invalid JSON in request body"}))
    );
    let back = send(
        address,
        &format!("POST /assistants/{id}/latest"),
        &json!({"version": 1}),
    )
    .await
    .json();
    assert_eq!(back["version"], 1);
    assert_eq!(back["metadata"], json!({"team": "docs"}));
    let current = call(address, &format!("GET /assistants/{id}")).await.json();
    assert_eq!(current, back);
    let missing = send(
        address,
        &format!("POST /assistants/{id}/latest"),
        &json!({"version": 9}),
    )
    .await;
    assert_eq!(missing.status, 404);

    let count = send(
        address,
        "POST /assistants/count",
        &json!({"graph_id": "hitl"}),
    )
    .await;
    assert_eq!(count.json(), json!(2), "the system assistant and this one");

    let deleted = call(address, &format!("DELETE /assistants/{id}")).await;
    assert_eq!(deleted.status, 204);
    let gone = call(address, &format!("GET /assistants/{id}")).await;
    assert_eq!(
        (gone.status, gone.json()),
        (404, json!({"detail": "Not Found"}))
    );
    let twice = call(address, &format!("DELETE /assistants/{id}")).await;
    assert_eq!(twice.status, 404);
    let no_versions = send(
        address,
        &format!("POST /assistants/{id}/versions"),
        &json!({}),
    )
    .await;
    assert_eq!(no_versions.status, 404);
}

#[tokio::test]
async fn bad_assistant_requests_get_the_official_answers() {
    let address = start_fixtures(on_a_free_port()).await;
    let unknown_graph = send(address, "POST /assistants", &json!({"graph_id": "nope"})).await;
    assert_eq!(
        (unknown_graph.status, unknown_graph.json()),
        (
            404,
            json!({"detail": "Graph 'nope' not found. Expected one of: ['boom', 'hitl', 'parent', 'simple']"})
        )
    );
    let both = send(
        address,
        "POST /assistants",
        &json!({"graph_id": "hitl", "config": {"configurable": {"a": 1}}, "context": {"b": 2}}),
    )
    .await;
    assert_eq!(both.status, 400);
    let bad_id = send(
        address,
        "POST /assistants",
        &json!({"graph_id": "hitl", "assistant_id": "not-a-uuid"}),
    )
    .await;
    assert_eq!(
        (bad_id.status, bad_id.json()),
        (
            422,
            json!({"detail": "Invalid assistant ID: must be a UUID"})
        )
    );
    // Only the graph route takes a graph id for its system assistant.
    let by_name = call(address, "GET /assistants/parent/subgraphs?recurse=true").await;
    assert_eq!(
        (by_name.status, by_name.json()),
        (
            422,
            json!({"detail": "Invalid assistant ID: must be a UUID"})
        )
    );
    let patch_missing = send(
        address,
        "PATCH /assistants/3e8c5434-5ebe-4202-bf0c-3f73297b77fd",
        &json!({"name": "x"}),
    )
    .await;
    assert_eq!(patch_missing.status, 404);
    let bad_xray = call(address, "GET /assistants/parent/graph?xray=0").await;
    assert_eq!(
        (bad_xray.status, bad_xray.json()),
        (422, json!({"detail": "Invalid xray value"}))
    );
}

#[tokio::test]
async fn search_sorts_selects_and_pages() {
    let address = start_fixtures(on_a_free_port()).await;
    for name in ["Beta", "alpha", "gamma"] {
        let made = send(
            address,
            "POST /assistants",
            &json!({"graph_id": "simple", "name": name, "metadata": {"kind": "test"}}),
        )
        .await;
        assert_eq!(made.status, 200);
    }
    let page = send(
        address,
        "POST /assistants/search",
        &json!({
            "metadata": {"kind": "test"},
            "sort_by": "name",
            "sort_order": "asc",
            "limit": 2,
            "select": ["name", "graph_id"]
        }),
    )
    .await;
    assert_eq!(page.header("x-pagination-total"), Some("3"));
    assert_eq!(page.header("x-pagination-next"), Some("2"));
    assert_eq!(
        page.json(),
        json!([{"graph_id": "simple", "name": "alpha"}, {"graph_id": "simple", "name": "Beta"}]),
        "names sort without regard to case"
    );
    let by_part = send(address, "POST /assistants/search", &json!({"name": "AMM"})).await;
    assert_eq!(by_part.json()[0]["name"], "gamma");
    let newest_first = send(
        address,
        "POST /assistants/search",
        &json!({"metadata": {"kind": "test"}}),
    )
    .await
    .json();
    assert_eq!(newest_first[0]["name"], "gamma");
    let bad_select = send(
        address,
        "POST /assistants/search",
        &json!({"select": ["nope"]}),
    )
    .await;
    assert_eq!(bad_select.status, 422);
}

#[tokio::test]
async fn the_graph_schemas_and_subgraphs_are_served() {
    let address = start_fixtures(on_a_free_port()).await;
    let graph = call(address, "GET /assistants/hitl/graph").await.json();
    let ids: Vec<&Json> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["id"])
        .collect();
    assert_eq!(
        ids,
        [
            &json!("__start__"),
            &json!("agent"),
            &json!("review"),
            &json!("finish"),
            &json!("__end__")
        ]
    );
    assert_eq!(
        graph["nodes"][1],
        json!({"id": "agent", "type": "runnable", "data": {"name": "agent"}}),
        "no class id in the node data"
    );
    assert_eq!(
        graph["edges"][0],
        json!({"source": "__start__", "target": "agent"})
    );
    let xray = call(address, "GET /assistants/parent/graph?xray=true")
        .await
        .json();
    let ids: Vec<&Json> = xray["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["id"])
        .collect();
    assert!(ids.contains(&&json!("child:inner")), "{xray}");

    let parent = crate::support::system_assistant(address, "parent").await;
    let schemas = call(address, &format!("GET /assistants/{parent}/schemas"))
        .await
        .json();
    assert_eq!(
        keys(&schemas),
        [
            "config_schema",
            "context_schema",
            "graph_id",
            "input_schema",
            "output_schema",
            "state_schema"
        ]
    );
    assert_eq!(schemas["graph_id"], "parent");
    assert_eq!(schemas["state_schema"]["type"], "object");
    let subgraphs = call(
        address,
        &format!("GET /assistants/{parent}/subgraphs?recurse=true"),
    )
    .await
    .json();
    assert_eq!(keys(&subgraphs), ["child"]);
    assert_eq!(
        keys(&subgraphs["child"]),
        [
            "config_schema",
            "context_schema",
            "input_schema",
            "output_schema",
            "state_schema"
        ]
    );
    let one = call(
        address,
        &format!("GET /assistants/{parent}/subgraphs/child"),
    )
    .await
    .json();
    assert_eq!(one, subgraphs);
    let none = call(address, &format!("GET /assistants/{parent}/subgraphs/nope"))
        .await
        .json();
    assert_eq!(none, json!({}));
}

#[tokio::test]
async fn a_run_takes_its_assistants_config_context_and_metadata() {
    let address = start_fixtures(on_a_free_port()).await;
    let assistant = send(
        address,
        "POST /assistants",
        &json!({
            "graph_id": "simple",
            "context": {"model": "fake", "tone": "dry"},
            "config": {"tags": ["from-assistant"]},
            "metadata": {"team": "docs"}
        }),
    )
    .await
    .json();
    let id = assistant["assistant_id"].as_str().unwrap();
    let thread = new_thread(address).await;
    let run = send(
        address,
        &format!("POST /threads/{thread}/runs"),
        &json!({"assistant_id": id, "input": {"count": 1}, "context": {"tone": "warm"}}),
    )
    .await;
    assert_eq!(run.status, 200, "{}", run.body);
    let run = run.json();
    assert_eq!(run["assistant_id"], *id);
    assert_eq!(run["metadata"]["team"], "docs");
    let kwargs = &run["kwargs"];
    assert_eq!(kwargs["context"], json!({"model": "fake", "tone": "warm"}));
    assert_eq!(kwargs["config"]["tags"], json!(["from-assistant"]));
    assert_eq!(kwargs["config"]["configurable"]["model"], "fake");
    assert_eq!(kwargs["config"]["configurable"]["tone"], "warm");
    assert_eq!(kwargs["config"]["configurable"]["graph_id"], "simple");
    let thread_record = call(address, &format!("GET /threads/{thread}"))
        .await
        .json();
    assert_eq!(thread_record["metadata"]["assistant_id"], *id);

    // Deleting the assistant with its threads removes them.
    crate::support::poll(address, &format!("/threads/{thread}"), |t| {
        t["status"] == "idle"
    })
    .await;
    let deleted = call(
        address,
        &format!("DELETE /assistants/{id}?delete_threads=true"),
    )
    .await;
    assert_eq!(deleted.status, 204);
    let thread_gone = call(address, &format!("GET /threads/{thread}")).await;
    assert_eq!(thread_gone.status, 404);
    let run_gone = send(
        address,
        &format!("POST /threads/{}/runs", new_thread(address).await),
        &json!({"assistant_id": id}),
    )
    .await;
    assert_eq!(run_gone.status, 404);
}
