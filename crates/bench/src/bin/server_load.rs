//! `server_load URL [SCENARIOS] [CONCURRENCIES] [SECONDS]`: the load
//! `cargo xtask bench-server` runs against a LangGraph Server API server
//! (ours or the official one) serving the fixture graphs. One JSON line per
//! scenario and concurrency: operations per second, latency p50/p99, time
//! to the first SSE event, errors.
//!
//! Scenarios (defaults: all, at concurrency 1, 8 and 64, 3 s each):
//! - `stateless_wait`: `POST /runs/wait` on `simple`;
//! - `threaded_wait`: `POST /threads/{id}/runs/wait` on `simple`, each
//!   client on a thread of its own;
//! - `hitl_roundtrip`: a new thread, `runs/stream` on `hitl` to its
//!   interrupt, then `runs/stream` resuming it (one operation: three
//!   requests);
//! - `background_join`: `POST /threads/{id}/runs` then `GET .../join`.
//!
//! Each client is one keep-alive HTTP/1.1 connection, spoken directly (no
//! client library between the load and the server).

// A command-line tool: it reports to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One keep-alive connection.
struct Connection {
    stream: BufReader<TcpStream>,
    host: String,
}

/// A response: status, body, and when its first body bytes came.
struct Response {
    status: u16,
    body: Vec<u8>,
    first_data: Instant,
}

impl Connection {
    async fn open(host: &str) -> Result<Self, Error> {
        let stream = TcpStream::connect(host).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream: BufReader::new(stream),
            host: host.to_owned(),
        })
    }

    async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Json>,
    ) -> Result<Response, Error> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: */*\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status: u16 = line.split(' ').nth(1).ok_or("no status line")?.parse()?;
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').ok_or("a header without a colon")?;
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.trim().parse::<usize>()?),
                "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
        let mut body = Vec::new();
        let mut first_data = None;
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim(), 16)?;
                first_data.get_or_insert_with(Instant::now);
                if size == 0 {
                    line.clear();
                    self.stream.read_line(&mut line).await?;
                    break;
                }
                let start = body.len();
                body.resize(start + size + 2, 0);
                self.stream.read_exact(&mut body[start..]).await?;
                body.truncate(start + size);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.stream.read_exact(&mut body).await?;
        }
        Ok(Response {
            status,
            body,
            first_data: first_data.unwrap_or_else(Instant::now),
        })
    }

    async fn json(&mut self, method: &str, path: &str, body: Option<&Json>) -> Result<Json, Error> {
        let response = self.send(method, path, body).await?;
        if response.status != 200 {
            return Err(format!("{method} {path}: {}", response.status).into());
        }
        Ok(serde_json::from_slice(&response.body)?)
    }
}

/// What one operation measured: its latency and, for a stream, the time to
/// its first event.
struct Sample {
    latency: Duration,
    first_event: Option<Duration>,
}

/// One operation of `scenario` on `connection`; `thread` is the client's own.
async fn operation(
    scenario: &str,
    connection: &mut Connection,
    thread: &str,
) -> Result<Sample, Error> {
    let start = Instant::now();
    let mut first_event = None;
    match scenario {
        "stateless_wait" => {
            connection
                .json(
                    "POST",
                    "/runs/wait",
                    Some(&json!({"assistant_id": "simple", "input": {"count": 0}})),
                )
                .await?;
        }
        "threaded_wait" => {
            connection
                .json(
                    "POST",
                    &format!("/threads/{thread}/runs/wait"),
                    Some(&json!({"assistant_id": "simple", "input": {"count": 0}})),
                )
                .await?;
        }
        "hitl_roundtrip" => {
            let created = connection
                .json("POST", "/threads", Some(&json!({})))
                .await?;
            let id = created["thread_id"]
                .as_str()
                .ok_or("no thread id")?
                .to_owned();
            let input = json!({
                "assistant_id": "hitl",
                "input": {"messages": [{"role": "user", "content": "hi"}]},
                "stream_mode": ["values", "messages-tuple"],
            });
            let sent = Instant::now();
            let paused = connection
                .send("POST", &format!("/threads/{id}/runs/stream"), Some(&input))
                .await?;
            first_event = Some(paused.first_data - sent);
            if paused.status != 200 || !contains(&paused.body, b"__interrupt__") {
                return Err("the stream did not reach the interrupt".into());
            }
            let resume = json!({"assistant_id": "hitl", "command": {"resume": "yes"}, "stream_mode": ["values"]});
            let done = connection
                .send("POST", &format!("/threads/{id}/runs/stream"), Some(&resume))
                .await?;
            if done.status != 200 || !contains(&done.body, b"\"count\":101") {
                return Err("the resumed stream did not finish".into());
            }
        }
        "background_join" => {
            let run = connection
                .json(
                    "POST",
                    &format!("/threads/{thread}/runs"),
                    Some(&json!({"assistant_id": "simple", "input": {"count": 0}})),
                )
                .await?;
            let run_id = run["run_id"].as_str().ok_or("no run id")?;
            connection
                .json(
                    "GET",
                    &format!("/threads/{thread}/runs/{run_id}/join"),
                    None,
                )
                .await?;
        }
        other => return Err(format!("unknown scenario {other}").into()),
    }
    Ok(Sample {
        latency: start.elapsed(),
        first_event,
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The `q` quantile of sorted durations, in milliseconds.
fn quantile(sorted: &[Duration], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    Some(sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1000.0)
}

/// `concurrency` clients doing `scenario` for `seconds`; its JSON line.
async fn measure(
    host: &str,
    scenario: &str,
    concurrency: usize,
    seconds: f64,
) -> Result<Json, Error> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        let host = host.to_owned();
        let scenario = scenario.to_owned();
        clients.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = Vec::new();
            let mut connection = match Connection::open(&host).await {
                Ok(connection) => connection,
                Err(err) => return (samples, vec![err.to_string()]),
            };
            let thread = match connection.json("POST", "/threads", Some(&json!({}))).await {
                Ok(thread) => thread["thread_id"].as_str().unwrap_or_default().to_owned(),
                Err(err) => return (samples, vec![err.to_string()]),
            };
            while Instant::now() < deadline {
                match operation(&scenario, &mut connection, &thread).await {
                    Ok(sample) => samples.push(sample),
                    Err(err) => {
                        errors.push(err.to_string());
                        // A broken connection is opened again.
                        match Connection::open(&host).await {
                            Ok(fresh) => connection = fresh,
                            Err(_) => break,
                        }
                    }
                }
            }
            (samples, errors)
        }));
    }
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    for client in clients {
        let (s, e) = client.await?;
        samples.extend(s);
        errors.extend(e);
    }
    let elapsed = started.elapsed().as_secs_f64().max(seconds);
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort_unstable();
    let mut firsts: Vec<Duration> = samples.iter().filter_map(|s| s.first_event).collect();
    firsts.sort_unstable();
    Ok(json!({
        "scenario": scenario,
        "concurrency": concurrency,
        "ops": samples.len(),
        "ops_per_s": samples.len() as f64 / elapsed,
        "p50_ms": quantile(&latencies, 0.5),
        "p99_ms": quantile(&latencies, 0.99),
        "first_event_p50_ms": quantile(&firsts, 0.5),
        "errors": errors.len(),
        "first_error": errors.first(),
    }))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .ok_or("usage: server_load URL [SCENARIOS] [CONCURRENCIES] [SECONDS]")?;
    let host = url
        .strip_prefix("http://")
        .ok_or("the URL must be http://HOST:PORT")?
        .trim_end_matches('/')
        .to_owned();
    let scenarios: Vec<String> = args.get(1).map_or_else(
        || {
            [
                "stateless_wait",
                "threaded_wait",
                "hitl_roundtrip",
                "background_join",
            ]
            .map(str::to_owned)
            .to_vec()
        },
        |list| list.split(',').map(str::to_owned).collect(),
    );
    let concurrencies: Vec<usize> = match args.get(2) {
        Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![1, 8, 64],
    };
    let seconds: f64 = args.get(3).map_or(Ok(3.0), |s| s.parse())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        for scenario in &scenarios {
            for &concurrency in &concurrencies {
                let line = measure(&host, scenario, concurrency, seconds).await?;
                println!("{line}");
            }
        }
        Ok::<_, Error>(())
    })
}
