//! A server on a free port of 127.0.0.1, and raw HTTP/1.1 requests to it.

use std::net::SocketAddr;

use serde_json::{Value as Json, json};
use stategraph::graph::{NodeError, START, Schema, StateGraph};
use stategraph_server::{Server, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A response: status, lower-cased headers, body.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// One HTTP/1.1 request on its own connection, read to its end.
pub(crate) async fn request(address: SocketAddr, head: &str, body: &str) -> Response {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let text = format!(
        "{head}\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(key, value)| key == "transfer-encoding" && value == "chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        headers,
        body,
    }
}

/// A server with one graph on a free port; its address.
pub(crate) async fn start(settings: Settings) -> SocketAddr {
    let mut graph = StateGraph::new(Schema::new().append("log"));
    graph
        .add_node("a", |_: Json| async {
            Ok::<_, NodeError>(json!({"log": ["a"]}))
        })
        .unwrap();
    graph.add_edge(START, "a").unwrap();
    let server = Server::builder()
        .settings(settings)
        .graph("agent", graph.compile().unwrap())
        .build()
        .await
        .unwrap();
    let bound = server.bind().await.unwrap();
    let address = bound.local_addr();
    tokio::spawn(bound.serve_until(std::future::pending()));
    address
}

pub(crate) fn on_a_free_port() -> Settings {
    Settings::default()
        .with_env(|name| match name {
            "STATEGRAPH_PORT" => Some("0".to_owned()),
            "STATEGRAPH_DATABASE_URL" => Some("memory".to_owned()),
            _ => None,
        })
        .unwrap()
}

/// `method_path` (`"POST /threads"`) with a JSON body.
pub(crate) async fn send(address: SocketAddr, method_path: &str, body: &Json) -> Response {
    let head = format!("{method_path} HTTP/1.1\r\nContent-Type: application/json");
    request(address, &head, &body.to_string()).await
}

/// `method_path` with no body.
pub(crate) async fn call(address: SocketAddr, method_path: &str) -> Response {
    request(address, &format!("{method_path} HTTP/1.1"), "").await
}

/// The keys of a JSON object, in their order.
pub(crate) fn keys(value: &Json) -> Vec<String> {
    value.as_object().unwrap().keys().cloned().collect()
}

/// A server with the official fixture graphs (`hitl`, `simple`, `parent`,
/// `boom`) on a free port; its address.
pub(crate) async fn start_fixtures(settings: Settings) -> SocketAddr {
    serve_fixtures(Server::builder().settings(settings)).await
}

/// [`start_fixtures`] with the official fixture's toy auth
/// (`fixtures::OwnerAuth`: `Bearer alice`, `Bearer bob`).
pub(crate) async fn start_fixtures_with_auth(settings: Settings) -> SocketAddr {
    let builder = Server::builder()
        .settings(settings)
        .auth(stategraph_server::fixtures::OwnerAuth);
    serve_fixtures(builder).await
}

/// Serves the fixture graphs with `builder` on its port, until the test
/// ends; the address.
async fn serve_fixtures(mut builder: stategraph_server::ServerBuilder) -> SocketAddr {
    for (id, graph) in stategraph_server::fixtures::all().unwrap() {
        builder = builder.graph(id, graph);
    }
    let bound = builder.build().await.unwrap().bind().await.unwrap();
    let address = bound.local_addr();
    tokio::spawn(bound.serve_until(std::future::pending()));
    address
}

/// `method_path` as `user` (no `Authorization` header for `None`).
pub(crate) async fn as_user(
    address: SocketAddr,
    user: Option<&str>,
    method_path: &str,
    body: &Json,
) -> Response {
    let mut head = format!("{method_path} HTTP/1.1\r\nContent-Type: application/json");
    if let Some(user) = user {
        head.push_str(&format!("\r\nAuthorization: Bearer {user}"));
    }
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    request(address, &head, &body).await
}

/// The id of `graph`'s system assistant, as search finds it.
pub(crate) async fn system_assistant(address: SocketAddr, graph: &str) -> String {
    let found = send(
        address,
        "POST /assistants/search",
        &serde_json::json!({"graph_id": graph, "metadata": {"created_by": "system"}}),
    )
    .await
    .json();
    found[0]["assistant_id"].as_str().unwrap().to_owned()
}

/// A new thread's id.
pub(crate) async fn new_thread(address: SocketAddr) -> String {
    let thread = call(address, "POST /threads").await.json();
    thread["thread_id"].as_str().unwrap().to_owned()
}

/// Polls `GET path` until `done` holds for its JSON (at most 20 s).
pub(crate) async fn poll(address: SocketAddr, path: &str, done: impl Fn(&Json) -> bool) -> Json {
    for _ in 0..400 {
        let body = call(address, &format!("GET {path}")).await.json();
        if done(&body) {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("GET {path} never reached the expected state");
}

/// A chunked body's data (HTTP/1.1 `Transfer-Encoding: chunked`).
pub(crate) fn dechunk(mut raw: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        body.push_str(&rest[..size]);
        raw = &rest[size + 2..];
    }
    body
}

/// A background run on `thread` with `body`; its id.
pub(crate) async fn create_run(address: SocketAddr, thread: &str, body: &Json) -> String {
    let run = send(address, &format!("POST /threads/{thread}/runs"), body).await;
    assert_eq!(run.status, 200, "{}", run.body);
    run.json()["run_id"].as_str().unwrap().to_owned()
}

/// Waits until the run executes.
pub(crate) async fn until_running(address: SocketAddr, thread: &str, run_id: &str) {
    poll(
        address,
        &format!("/threads/{thread}/runs/{run_id}"),
        |run| run["status"] == "running",
    )
    .await;
}
