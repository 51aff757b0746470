//! A loopback TCP proxy in front of the test server that can go silent:
//! it stops forwarding in both directions while every socket stays open,
//! as a network path that died without a reset does. Listens on
//! 127.0.0.1 only; its tasks end with the test's runtime.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use stategraph_checkpoint_postgres::sqlx::postgres::PgConnectOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The proxy's switch, shared by its connections.
struct State {
    /// `true` while bytes flow.
    open: watch::Sender<bool>,
    /// Bytes that, once seen going to the server, silence the proxy after
    /// they are delivered (one shot).
    trigger: Mutex<Option<Vec<u8>>>,
}

impl State {
    /// Whether `chunk` (after the `tail` of the previous chunk of the same
    /// direction) completes the trigger; disarms it if so. Keeps in `tail`
    /// what a trigger split across reads needs.
    fn trips(&self, tail: &mut Vec<u8>, chunk: &[u8]) -> bool {
        let mut trigger = self.trigger.lock().unwrap();
        let Some(pattern) = trigger.as_deref() else {
            tail.clear();
            return false;
        };
        tail.extend_from_slice(chunk);
        let found = tail.windows(pattern.len()).any(|window| window == pattern);
        let keep = pattern.len().saturating_sub(1).min(tail.len());
        tail.drain(..tail.len() - keep);
        if found {
            *trigger = None;
        }
        found
    }
}

/// A proxy forwarding 127.0.0.1:`port()` to the test server.
pub(crate) struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding to the host and port of `server` (the test
    /// server, itself on 127.0.0.1).
    pub(crate) async fn start(server: &PgConnectOptions) -> Self {
        let target = (server.get_host().to_owned(), server.get_port());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            open: watch::Sender::new(true),
            trigger: Mutex::new(None),
        });
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect((target.0.as_str(), target.1)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, Arc::clone(&shared), true));
                tokio::spawn(pump(server_read, client_write, Arc::clone(&shared), false));
            }
        });
        Self {
            addr,
            state,
            accept,
        }
    }

    /// `options` pointed at the proxy instead of the server.
    pub(crate) fn options(&self, options: PgConnectOptions) -> PgConnectOptions {
        options.host("127.0.0.1").port(self.addr.port())
    }

    /// Stops forwarding now, in both directions, on every connection (new
    /// ones are accepted but hear nothing).
    pub(crate) fn silence(&self) {
        self.state.open.send_replace(false);
    }

    /// Stops forwarding right after delivering the first chunk sent to the
    /// server that contains `pattern`: the server gets that message, its
    /// answer never arrives.
    pub(crate) fn silence_after(&self, pattern: &[u8]) {
        *self.state.trigger.lock().unwrap() = Some(pattern.to_vec());
    }

    /// Forwards again, including what waited while silent.
    pub(crate) fn resume(&self) {
        *self.state.trigger.lock().unwrap() = None;
        self.state.open.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copies `from` to `to` while the proxy is open; while it is silent,
/// reads nothing and holds what it read, so bytes wait and sockets stay
/// open. Ends (closing `to`'s direction) at end of file or on an error.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, state: Arc<State>, to_server: bool) {
    let mut open = state.open.subscribe();
    let mut buf = vec![0_u8; 16 * 1024];
    let mut tail = Vec::new();
    loop {
        if open.wait_for(|open| *open).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if to_server && state.trips(&mut tail, chunk) {
            // Silence first, so not even a quick answer gets through.
            state.open.send_replace(false);
        } else if open.wait_for(|open| *open).await.is_err() {
            return;
        }
        if to.write_all(chunk).await.is_err() {
            return;
        }
    }
}
