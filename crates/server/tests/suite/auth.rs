//! Auth hooks over HTTP (TRANSCRIPTS.md section A1, with the official
//! fixture's toy auth ported as `fixtures::OwnerAuth`): 401 and 403 from
//! `authenticate`, owners stamped on create, other users' threads not
//! found (404, never 403), store namespaces moved under the user, the
//! user in the run's config; health and info open to anyone.

use std::net::SocketAddr;

use serde_json::{Value as Json, json};

use stategraph_server::Server;

use crate::support::{as_user, on_a_free_port, start_fixtures_with_auth};

async fn start_with_auth() -> SocketAddr {
    start_fixtures_with_auth(on_a_free_port()).await
}

#[tokio::test]
async fn users_see_only_their_threads() {
    let address = start_with_auth().await;
    let anonymous = as_user(address, None, "POST /threads", &json!({})).await;
    assert_eq!(
        (anonymous.status, anonymous.json()),
        (401, json!({"detail": "missing bearer token"}))
    );
    let mallory = as_user(address, Some("mallory"), "POST /threads", &json!({})).await;
    assert_eq!(
        (mallory.status, mallory.json()),
        (403, json!({"detail": "unknown user"}))
    );
    let created = as_user(
        address,
        Some("alice"),
        "POST /threads",
        &json!({"metadata": {"x": 1}}),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let thread = created.json();
    assert_eq!(thread["metadata"], json!({"x": 1, "owner": "alice"}));
    let id = thread["thread_id"].as_str().unwrap();

    let mine = as_user(
        address,
        Some("alice"),
        &format!("GET /threads/{id}"),
        &Json::Null,
    )
    .await;
    assert_eq!((mine.status, mine.json()), (200, thread.clone()));
    let theirs = as_user(
        address,
        Some("bob"),
        &format!("GET /threads/{id}"),
        &Json::Null,
    )
    .await;
    assert_eq!(
        (theirs.status, theirs.json()),
        (
            404,
            json!({"detail": format!("Thread with ID {id} not found")})
        )
    );
    let search = as_user(address, Some("bob"), "POST /threads/search", &json!({})).await;
    assert_eq!(
        (search.json(), search.header("x-pagination-total")),
        (json!([]), Some("0"))
    );
    let count = as_user(address, Some("alice"), "POST /threads/count", &json!({})).await;
    assert_eq!(count.json(), json!(1));
    let run = as_user(
        address,
        Some("bob"),
        &format!("POST /threads/{id}/runs/wait"),
        &json!({"assistant_id": "simple", "input": {"count": 0}}),
    )
    .await;
    assert_eq!(
        (run.status, run.json()),
        (404, json!({"detail": "Thread or assistant not found."}))
    );
    for path in [
        format!("GET /threads/{id}/state"),
        format!("GET /threads/{id}/history"),
        format!("GET /threads/{id}/runs"),
    ] {
        let denied = as_user(address, Some("bob"), &path, &Json::Null).await;
        assert_eq!(denied.status, 404, "{path}");
    }
    let deleted = as_user(
        address,
        Some("bob"),
        &format!("DELETE /threads/{id}"),
        &Json::Null,
    )
    .await;
    assert_eq!(deleted.status, 404, "bob cannot delete it");
    let patched = as_user(
        address,
        Some("bob"),
        &format!("PATCH /threads/{id}"),
        &json!({"metadata": {"y": 2}}),
    )
    .await;
    assert_eq!(patched.status, 404, "nor change it");
}

#[tokio::test]
async fn a_run_sees_its_user_and_the_store_is_per_user() {
    let address = start_with_auth().await;
    let thread = as_user(address, Some("alice"), "POST /threads", &json!({}))
        .await
        .json();
    let id = thread["thread_id"].as_str().unwrap();
    let run = as_user(
        address,
        Some("alice"),
        &format!("POST /threads/{id}/runs"),
        &json!({"assistant_id": "simple", "input": {"count": 0}}),
    )
    .await;
    assert_eq!(run.status, 200, "{}", run.body);
    let configurable = &run.json()["kwargs"]["config"]["configurable"];
    assert_eq!(configurable["langgraph_auth_user_id"], "alice");
    assert_eq!(
        configurable["langgraph_auth_permissions"],
        json!(["threads:write"])
    );
    assert_eq!(configurable["langgraph_auth_user"]["identity"], "alice");
    assert_eq!(
        configurable["langgraph_auth_user"]["is_authenticated"],
        true
    );

    let put = as_user(
        address,
        Some("alice"),
        "PUT /store/items",
        &json!({"namespace": ["notes"], "key": "k", "value": {"v": 1}}),
    )
    .await;
    assert_eq!(put.status, 204, "{}", put.body);
    let found = as_user(
        address,
        Some("alice"),
        "POST /store/items/search",
        &json!({"namespace_prefix": []}),
    )
    .await
    .json();
    assert_eq!(found["items"].as_array().unwrap().len(), 1);
    assert_eq!(found["items"][0]["namespace"], json!(["alice", "notes"]));
    let bobs = as_user(
        address,
        Some("bob"),
        "POST /store/items/search",
        &json!({"namespace_prefix": []}),
    )
    .await
    .json();
    assert_eq!(bobs, json!({"items": []}), "bob's searches stay under bob");
    let got = as_user(
        address,
        Some("alice"),
        "GET /store/items?namespace=notes&key=k",
        &Json::Null,
    )
    .await
    .json();
    assert_eq!(got["value"], json!({"v": 1}), "a get is moved the same way");
}

#[tokio::test]
async fn health_and_info_need_no_credentials() {
    let address = start_with_auth().await;
    for path in ["GET /ok", "GET /info"] {
        let open = as_user(address, None, path, &Json::Null).await;
        assert_eq!(open.status, 200, "{path}");
    }
    let closed = as_user(address, None, "POST /assistants/search", &json!({})).await;
    assert_eq!(closed.status, 401);
}

/// Everyone is `carol`; deleting is denied; assistants and crons are
/// filtered to `metadata.team == "blue"`.
struct TeamAuth;

impl stategraph_server::auth::Auth for TeamAuth {
    async fn authenticate(
        &self,
        _: &stategraph_server::auth::AuthRequest,
    ) -> Result<stategraph_server::auth::AuthUser, stategraph_server::auth::AuthError> {
        Ok(stategraph_server::auth::AuthUser::new("carol"))
    }

    async fn authorize(
        &self,
        ctx: &stategraph_server::auth::AuthContext<'_>,
        _: &mut Json,
    ) -> Result<stategraph_server::auth::Authorization, stategraph_server::auth::AuthError> {
        use stategraph_server::auth::{Action, Authorization, Resource};
        let team = json!({"team": {"$eq": "blue"}})
            .as_object()
            .cloned()
            .unwrap();
        Ok(match (ctx.resource, ctx.action) {
            (_, Action::Delete) => Authorization::Deny,
            (Resource::Assistants | Resource::Crons, Action::Create) => Authorization::Allow,
            (Resource::Assistants | Resource::Crons, _) => Authorization::Filter(team),
            _ => Authorization::Allow,
        })
    }
}

#[tokio::test]
async fn filters_hide_assistants_and_crons_and_a_denial_is_403() {
    let bound = Server::builder()
        .settings(on_a_free_port())
        .auth(TeamAuth)
        .graph("simple", stategraph_server::fixtures::simple().unwrap())
        .build()
        .await
        .unwrap()
        .bind()
        .await
        .unwrap();
    let address = bound.local_addr();
    tokio::spawn(bound.serve_until(std::future::pending()));
    let anyone = Some("x");
    let blue = as_user(
        address,
        anyone,
        "POST /assistants",
        &json!({"graph_id": "simple", "metadata": {"team": "blue"}}),
    )
    .await
    .json();
    let red = as_user(
        address,
        anyone,
        "POST /assistants",
        &json!({"graph_id": "simple", "metadata": {"team": "red"}}),
    )
    .await
    .json();
    let found = as_user(address, anyone, "POST /assistants/search", &json!({}))
        .await
        .json();
    let ids: Vec<&Json> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["assistant_id"])
        .collect();
    assert_eq!(
        ids,
        [&blue["assistant_id"]],
        "the system assistant and red are filtered out"
    );
    let red_id = red["assistant_id"].as_str().unwrap();
    let hidden = as_user(
        address,
        anyone,
        &format!("GET /assistants/{red_id}"),
        &Json::Null,
    )
    .await;
    assert_eq!(hidden.status, 404);
    let blue_id = blue["assistant_id"].as_str().unwrap();
    let denied = as_user(
        address,
        anyone,
        &format!("DELETE /assistants/{blue_id}"),
        &Json::Null,
    )
    .await;
    assert_eq!(
        (denied.status, denied.json()),
        (403, json!({"detail": "Forbidden"}))
    );
    let cron = as_user(
        address,
        anyone,
        "POST /runs/crons",
        &json!({"assistant_id": blue_id, "schedule": "0 0 1 1 *", "metadata": {"team": "red"}}),
    )
    .await;
    assert_eq!(cron.status, 200, "{}", cron.body);
    assert_eq!(cron.json()["user_id"], "carol");
    let crons = as_user(address, anyone, "POST /runs/crons/count", &json!({})).await;
    assert_eq!(crons.json(), json!(0), "a red cron is not carol's to see");
}
