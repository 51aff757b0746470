//! The HTTP side: authenticated POSTs with timeouts and retries, and the
//! server-sent events of a streamed response.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value as Json;
use stategraph_llm::{Error, Result};

use crate::OpenAiConfig;
use crate::config::ConfigError;
use crate::wire::{PROVIDER, error_text, malformed};

/// A configured HTTP client for one endpoint; cloning shares the connection
/// pool.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    config: Arc<OpenAiConfig>,
}

impl Client {
    pub(crate) fn new(config: OpenAiConfig) -> std::result::Result<Self, ConfigError> {
        config.check_base_url()?;
        Ok(Self {
            http: reqwest::Client::new(),
            config: Arc::new(config),
        })
    }

    pub(crate) fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// POSTs `body` to `path` and returns the JSON answer, retrying what is
    /// worth retrying.
    pub(crate) async fn post_json(&self, path: &str, body: &Json) -> Result<Json> {
        let operation = format!("POST {path}");
        let response = self.send(path, body, &operation).await?;
        let bytes = tokio::time::timeout(self.config.timeout(), response.bytes())
            .await
            .map_err(|_| Error::Timeout {
                operation: operation.clone(),
            })?
            .map_err(|err| transport(&err))?;
        serde_json::from_slice(&bytes).map_err(|err| malformed(format!("not JSON ({err})")))
    }

    /// POSTs `body` to `path` and returns the data of its server-sent
    /// events, each parsed as JSON, until `[DONE]`. Only the request is
    /// retried; a stream that breaks after it started fails.
    pub(crate) async fn post_events(
        &self,
        path: &str,
        body: &Json,
    ) -> Result<impl Stream<Item = Result<Json>> + Send + use<>> {
        let operation = format!("POST {path} (stream)");
        let response = self.send(path, body, &operation).await?;
        Ok(events(response, self.config.timeout(), operation))
    }

    /// Sends one request, retrying 408, 409, 429, 5xx, connection failures
    /// and timeouts with backoff (or the server's `Retry-After`).
    async fn send(&self, path: &str, body: &Json, operation: &str) -> Result<Response> {
        let mut attempt = 0;
        loop {
            let outcome =
                tokio::time::timeout(self.config.timeout(), self.request(path, body).send()).await;
            let (error, wait) = match outcome {
                Err(_) => (
                    Error::Timeout {
                        operation: operation.to_owned(),
                    },
                    None,
                ),
                Ok(Err(err)) => (transport(&err), None),
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) => {
                    let status = response.status();
                    let wait = retry_after(response.headers());
                    let error = status_error(status, response).await;
                    if !retryable(status) {
                        return Err(error);
                    }
                    (error, wait)
                }
            };
            attempt += 1;
            if attempt > self.config.max_retries() {
                return Err(error);
            }
            let wait = wait.unwrap_or_else(|| self.config.backoff(attempt));
            tracing::warn!(%error, attempt, ?wait, "retrying {operation}");
            tokio::time::sleep(wait).await;
        }
    }

    fn request(&self, path: &str, body: &Json) -> RequestBuilder {
        let config = &self.config;
        let mut request = self
            .http
            .post(format!("{}{path}", config.base_url()))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = config.api_key() {
            request = request.bearer_auth(key);
        }
        if let Some(organization) = config.organization() {
            request = request.header("OpenAI-Organization", organization);
        }
        if let Some(project) = config.project() {
            request = request.header("OpenAI-Project", project);
        }
        request
    }
}

fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// The server's requested wait (`retry-after-ms`, or `Retry-After` in
/// seconds), if it gave a sane one (at most a minute).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let wait = match number("retry-after-ms") {
        Some(ms) => Duration::try_from_secs_f64(ms / 1000.0).ok()?,
        None => Duration::try_from_secs_f64(number(RETRY_AFTER.as_str())?).ok()?,
    };
    (wait <= Duration::from_secs(60)).then_some(wait)
}

/// The typed error of a failed response, with the provider's message.
async fn status_error(status: StatusCode, response: Response) -> Error {
    let text = response.text().await.unwrap_or_default();
    let message = match serde_json::from_str::<Json>(&text) {
        Ok(body) => match body.get("error") {
            Some(error) => error_text(error),
            None => body.to_string(),
        },
        Err(_) if text.trim().is_empty() => {
            status.canonical_reason().unwrap_or("no message").to_owned()
        }
        Err(_) => text.chars().take(500).collect(),
    };
    Error::Provider {
        provider: PROVIDER.into(),
        status: Some(status.as_u16()),
        message,
        source: None,
    }
}

fn transport(err: &reqwest::Error) -> Error {
    let kind = if err.is_connect() {
        "cannot connect"
    } else if err.is_timeout() {
        "timed out"
    } else {
        "transport error"
    };
    Error::Provider {
        provider: PROVIDER.into(),
        status: None,
        message: format!("{kind}: {err}"),
        source: None,
    }
}

/// The `data:` payloads of a server-sent event stream, parsed as JSON,
/// ending at `data: [DONE]`. A stream that ends without `[DONE]`, a payload
/// that is not JSON, or a wait longer than `timeout` for the next bytes is
/// an error (and ends the stream).
fn events(
    response: Response,
    timeout: Duration,
    operation: String,
) -> impl Stream<Item = Result<Json>> + Send {
    let state = Events {
        bytes: Box::pin(response.bytes_stream()),
        buffer: Vec::new(),
        ready: VecDeque::new(),
        done: false,
        timeout,
        operation,
    };
    futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    })
}

struct Events<S> {
    bytes: std::pin::Pin<Box<S>>,
    buffer: Vec<u8>,
    ready: VecDeque<String>,
    done: bool,
    timeout: Duration,
    operation: String,
}

impl<S, B> Events<S>
where
    S: Stream<Item = reqwest::Result<B>>,
    B: AsRef<[u8]>,
{
    async fn next(&mut self) -> Option<Result<Json>> {
        loop {
            if let Some(data) = self.ready.pop_front() {
                if data == "[DONE]" {
                    self.done = true;
                    return None;
                }
                return Some(serde_json::from_str(&data).map_err(|err| {
                    self.done = true;
                    malformed(format!("event data is not JSON ({err}): {data}"))
                }));
            }
            if self.done {
                return None;
            }
            let next = tokio::time::timeout(self.timeout, self.bytes.next()).await;
            match next {
                Err(_) => {
                    self.done = true;
                    return Some(Err(Error::Timeout {
                        operation: self.operation.clone(),
                    }));
                }
                Ok(Some(Ok(bytes))) => {
                    self.buffer.extend_from_slice(bytes.as_ref());
                    self.split_lines();
                }
                Ok(Some(Err(err))) => {
                    self.done = true;
                    return Some(Err(transport(&err)));
                }
                Ok(None) => {
                    self.done = true;
                    return Some(Err(malformed("the event stream ended before [DONE]")));
                }
            }
        }
    }

    /// Moves the `data:` payloads of the complete lines in the buffer to
    /// `ready` (comments, `event:`/`id:` lines and blank lines carry
    /// nothing here).
    fn split_lines(&mut self) {
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(data) = line.strip_prefix("data:") {
                self.ready.push_back(data.trim_start().to_owned());
            }
        }
    }
}
