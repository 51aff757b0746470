//! An in-process stand-in for an OpenAI-compatible server: it answers each
//! request with the next scripted reply and records what it was sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value as Json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
pub(crate) enum Reply {
    /// A JSON body with this status and extra headers.
    Json(u16, Json, Vec<(&'static str, String)>),
    /// A `text/event-stream` body written in these pieces, with a pause
    /// before each, then the connection closes.
    Events(Vec<String>, Duration),
    /// No answer for this long (then the connection closes).
    Hang(Duration),
    /// This status and body, sent as is (`application/json`) with its
    /// `content-length`.
    Raw(u16, String),
    /// A 200 `application/json` body without `content-length` (it ends
    /// when the connection closes), written in 4 KB pieces.
    Unsized(String),
    /// A 200 response of this content type whose body never ends: the
    /// bytes of the pattern one at a time, again and again, with this pause
    /// before each. It stops when the client goes away (or after a minute,
    /// so that nothing outlives a test).
    Trickle(&'static str, &'static [u8], Duration),
}

impl Reply {
    pub(crate) fn ok(body: Json) -> Self {
        Self::Json(200, body, Vec::new())
    }

    pub(crate) fn status(status: u16, body: Json) -> Self {
        Self::Json(status, body, Vec::new())
    }

    /// `data: <event>` lines for each event, then `data: [DONE]`.
    pub(crate) fn events(events: &[Json]) -> Self {
        let mut pieces: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        pieces.push("data: [DONE]\n\n".into());
        Self::Events(pieces, Duration::ZERO)
    }

    /// `text` as a `text/event-stream` body in pieces of `size` bytes (the
    /// text is ASCII, so any cut is a character boundary).
    pub(crate) fn events_in_pieces(text: &str, size: usize) -> Self {
        let pieces = text
            .as_bytes()
            .chunks(size)
            .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
            .collect();
        Self::Events(pieces, Duration::ZERO)
    }
}

/// A request the stand-in received.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Json,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The running stand-in; it stops when dropped.
pub(crate) struct StandIn {
    pub(crate) base_url: String,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl StandIn {
    /// Starts a stand-in on a free port of 127.0.0.1 answering with
    /// `replies` in order (a request beyond them gets a 500).
    pub(crate) async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let replies = Arc::new(Mutex::new(replies.into_iter().collect::<VecDeque<_>>()));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (r, s) = (replies.clone(), received.clone());
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (r, s) = (r.clone(), s.clone());
                tokio::spawn(async move { serve(socket, r, s).await });
            }
        });
        Self {
            base_url,
            replies,
            received,
            task,
        }
    }

    /// The requests received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// How many scripted replies were not used.
    pub(crate) fn unused(&self) -> usize {
        self.replies.lock().unwrap().len()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    received.lock().unwrap().push(request);
    let reply = replies.lock().unwrap().pop_front();
    let reply = reply.unwrap_or_else(|| {
        Reply::status(
            500,
            serde_json::json!({"error": {"message": "no scripted reply left"}}),
        )
    });
    match reply {
        Reply::Json(status, body, headers) => {
            let body = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            let _ = socket
                .write_all(format!("{head}\r\n{body}").as_bytes())
                .await;
        }
        Reply::Events(pieces, pause) => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            for piece in pieces {
                // A zero sleep still waits for the timer's next tick (a
                // millisecond), which adds up over thousands of pieces.
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                if socket.write_all(piece.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
        }
        Reply::Hang(time) => tokio::time::sleep(time).await,
        Reply::Raw(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::Unsized(body) => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            for piece in body.as_bytes().chunks(4096) {
                if socket.write_all(piece).await.is_err() {
                    return;
                }
            }
        }
        Reply::Trickle(content_type, pattern, pause) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let give_up = tokio::time::Instant::now() + Duration::from_secs(60);
            for byte in pattern.iter().cycle() {
                if tokio::time::Instant::now() > give_up {
                    break;
                }
                tokio::time::sleep(pause).await;
                if socket.write_all(&[*byte]).await.is_err() || socket.flush().await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads one request: the head up to the blank line, then a
/// `content-length` body.
async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0_u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&data[head_end..head_end + length]).unwrap_or(Json::Null);
    Some(Received {
        path,
        headers,
        body,
    })
}
