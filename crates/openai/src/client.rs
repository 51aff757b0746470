//! The HTTP side: authenticated POSTs with timeouts, a deadline and
//! retries, bodies read within their size limit, and the server-sent events
//! of a streamed response.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value as Json;
use stategraph_llm::{Error, Result};
use tokio::time::Instant;

use crate::OpenAiConfig;
use crate::config::ConfigError;
use crate::error::ResponseError;
use crate::sse::SseDecoder;
use crate::wire::{PROVIDER, error_text, malformed};

/// The deepest nesting of arrays and objects serde_json parses: its
/// recursion limit of 128 refuses the 128th level. Only used to name the
/// failure; serde_json enforces it.
const JSON_DEPTH_LIMIT: usize = 127;

/// The longest excerpt of a malformed payload quoted in an error message.
const EXCERPT_BYTES: usize = 200;

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
    /// worth retrying. The body is read within the timeout, the response's
    /// deadline and the body size limit.
    pub(crate) async fn post_json(&self, path: &str, body: &Json) -> Result<Json> {
        let operation = format!("POST {path}");
        let (mut response, deadline) = self.send(path, body, &operation).await?;
        let wait = Wait::new(self.config.timeout(), deadline);
        let limit = self.config.max_body_bytes();
        let bytes = read_body(&mut response, limit, wait.until)
            .await
            .map_err(|failure| match failure {
                BodyFailure::TooLarge => {
                    limit_error(&operation, ResponseError::BodyTooLarge { limit })
                }
                BodyFailure::Late => wait.timeout(&operation, self.config.response_deadline()),
                BodyFailure::Transport(err) => transport(&err),
            })?;
        parse_json(&bytes, "not JSON", &operation)
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
        let (response, deadline) = self.send(path, body, &operation).await?;
        let state = Events {
            bytes: Box::pin(response.bytes_stream()),
            decoder: SseDecoder::new(self.config.max_line_bytes(), self.config.max_event_bytes()),
            ended: false,
            done: false,
            timeout: self.config.timeout(),
            deadline,
            response_deadline: self.config.response_deadline(),
            operation,
        };
        Ok(futures::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        }))
    }

    /// Sends one request, retrying 408, 409, 429, 5xx, connection failures
    /// and timeouts with backoff (or the server's `Retry-After`). Returns
    /// the response and the deadline of its attempt.
    async fn send(&self, path: &str, body: &Json, operation: &str) -> Result<(Response, Instant)> {
        let mut attempt = 0;
        loop {
            let deadline = after(self.config.response_deadline());
            let head = Wait::new(self.config.timeout(), deadline);
            let outcome =
                tokio::time::timeout_at(head.until, self.request(path, body).send()).await;
            let (error, wait) = match outcome {
                Err(_) => (
                    head.timeout(operation, self.config.response_deadline()),
                    None,
                ),
                Ok(Err(err)) => (transport(&err), None),
                Ok(Ok(response)) if response.status().is_success() => {
                    return Ok((response, deadline));
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let wait = retry_after(response.headers());
                    let until = Wait::new(self.config.timeout(), deadline).until;
                    let error =
                        status_error(status, response, self.config.max_body_bytes(), until).await;
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

    pub(crate) fn request(&self, path: &str, body: &Json) -> RequestBuilder {
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

/// The typed error of a failed response, with the provider's message
/// (read, like any body, within `limit` bytes and by `until`; without it,
/// the status says what failed).
async fn status_error(
    status: StatusCode,
    mut response: Response,
    limit: usize,
    until: Instant,
) -> Error {
    let text = match read_body(&mut response, limit, until).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    };
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

/// The error of a response that broke a size limit.
fn limit_error(operation: &str, error: ResponseError) -> Error {
    Error::Provider {
        provider: PROVIDER.into(),
        status: None,
        message: format!("{operation}: {error}"),
        source: Some(Box::new(error)),
    }
}

/// `bytes` as JSON; JSON nested too deeply is [`ResponseError::TooDeep`],
/// other failures are malformed responses (`what`, serde_json's error and
/// the start of the text).
pub(crate) fn parse_json(bytes: &[u8], what: &str, operation: &str) -> Result<Json> {
    serde_json::from_slice(bytes).map_err(|err| {
        // Only a failed parse pays for this second pass.
        if nests_deeper_than(bytes, JSON_DEPTH_LIMIT) {
            return limit_error(
                operation,
                ResponseError::TooDeep {
                    limit: JSON_DEPTH_LIMIT,
                },
            );
        }
        let excerpt = String::from_utf8_lossy(&bytes[..bytes.len().min(EXCERPT_BYTES)]);
        let more = if bytes.len() > EXCERPT_BYTES {
            "…"
        } else {
            ""
        };
        malformed(format!("{what} ({err}): {excerpt}{more}"))
    })
}

/// The JSON of one event's data, or `None` for the `[DONE]` that ends a
/// stream.
pub(crate) fn event_json(data: &[u8], operation: &str) -> Option<Result<Json>> {
    if data.trim_ascii() == b"[DONE]" {
        return None;
    }
    Some(parse_json(data, "event data is not JSON", operation))
}

/// Whether the arrays and objects of the JSON text `bytes` nest deeper than
/// `limit` (brackets inside strings do not count). One pass, no recursion.
fn nests_deeper_than(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in bytes {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// `duration` from now, or a time too far away to matter when that is
/// past what an `Instant` holds (`Duration::MAX` means no limit).
fn after(duration: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        // Thirty years, as tokio's own stand-in for "never".
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400))
}

/// The end of one wait: the timeout from now, or the response's deadline
/// when that comes first.
#[derive(Clone, Copy)]
struct Wait {
    until: Instant,
    // Whether `until` is the response's deadline.
    is_deadline: bool,
}

impl Wait {
    fn new(timeout: Duration, deadline: Instant) -> Self {
        let until = after(timeout);
        if deadline <= until {
            Self {
                until: deadline,
                is_deadline: true,
            }
        } else {
            Self {
                until,
                is_deadline: false,
            }
        }
    }

    /// The error of this wait running out, naming the deadline when it was
    /// the deadline.
    fn timeout(self, operation: &str, deadline: Duration) -> Error {
        let operation = if self.is_deadline {
            format!("{operation} response (deadline {deadline:?})")
        } else {
            operation.to_owned()
        };
        Error::Timeout { operation }
    }
}

/// Why a body could not be read.
enum BodyFailure {
    /// It is larger than the limit.
    TooLarge,
    /// It did not arrive in time.
    Late,
    /// The connection failed.
    Transport(reqwest::Error),
}

/// The body of `response`, refused as soon as it is known to be larger
/// than `limit` (from its `content-length` or as it arrives) or when it is
/// not all there by `until`.
async fn read_body(
    response: &mut Response,
    limit: usize,
    until: Instant,
) -> std::result::Result<Vec<u8>, BodyFailure> {
    let announced = response.content_length().unwrap_or(0);
    let announced = usize::try_from(announced).unwrap_or(usize::MAX);
    if announced > limit {
        return Err(BodyFailure::TooLarge);
    }
    // At most `limit`, checked above.
    let mut body = Vec::with_capacity(announced);
    loop {
        let chunk = tokio::time::timeout_at(until, response.chunk())
            .await
            .map_err(|_| BodyFailure::Late)?
            .map_err(BodyFailure::Transport)?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > limit {
            return Err(BodyFailure::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
}

/// A streamed response read as the JSON data of its server-sent events,
/// ending at `data: [DONE]`. A stream that ends without `[DONE]`, data that
/// is not JSON, a line or event over its limit, a wait longer than
/// `timeout` for the next bytes or a response that runs past its deadline
/// is an error, and ends the stream.
struct Events<S> {
    bytes: std::pin::Pin<Box<S>>,
    decoder: SseDecoder,
    // Whether the bytes ran out (the decoder has been finished).
    ended: bool,
    // Whether the stream has yielded its end (`[DONE]` or an error).
    done: bool,
    timeout: Duration,
    deadline: Instant,
    response_deadline: Duration,
    operation: String,
}

impl<S, B> Events<S>
where
    S: Stream<Item = reqwest::Result<B>>,
    B: AsRef<[u8]>,
{
    async fn next(&mut self) -> Option<Result<Json>> {
        let outcome = self.read().await;
        if !matches!(outcome, Some(Ok(_))) {
            self.done = true;
        }
        outcome
    }

    async fn read(&mut self) -> Option<Result<Json>> {
        if self.done {
            return None;
        }
        loop {
            if let Some(data) = self.decoder.next_event() {
                return event_json(&data, &self.operation);
            }
            if self.ended {
                return Some(Err(malformed("the event stream ended before [DONE]")));
            }
            let wait = Wait::new(self.timeout, self.deadline);
            let pushed = match tokio::time::timeout_at(wait.until, self.bytes.next()).await {
                Err(_) => return Some(Err(wait.timeout(&self.operation, self.response_deadline))),
                Ok(Some(Ok(bytes))) => self.decoder.push(bytes.as_ref()),
                Ok(Some(Err(err))) => return Some(Err(transport(&err))),
                Ok(None) => {
                    self.ended = true;
                    self.decoder.finish()
                }
            };
            if let Err(error) = pushed {
                return Some(Err(limit_error(&self.operation, error)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn serde_json_parses_127_levels_and_the_128th_is_too_deep() {
        assert!(parse_json(nested(JSON_DEPTH_LIMIT).as_bytes(), "not JSON", "op").is_ok());
        let err =
            parse_json(nested(JSON_DEPTH_LIMIT + 1).as_bytes(), "not JSON", "op").unwrap_err();
        assert_eq!(
            ResponseError::find_in(&err),
            Some(&ResponseError::TooDeep { limit: 127 })
        );
        assert_eq!(
            err.to_string(),
            "openai request failed: op: the response JSON is nested deeper than 127 levels"
        );
    }

    #[test]
    fn brackets_in_strings_do_not_nest() {
        let text = format!(
            r#"{{"a": "{}", "b": "\"{}"}}"#,
            "[".repeat(500),
            "{".repeat(500)
        );
        assert!(!nests_deeper_than(text.as_bytes(), 2));
        assert!(nests_deeper_than(br#"{"a": [{"b": 1}]}"#, 2));
        assert!(!nests_deeper_than(br#"{"a": [{"b": 1}]}"#, 3));
    }

    #[test]
    fn malformed_payloads_are_quoted_briefly() {
        let text = format!("{{{}", "x".repeat(10_000));
        let err = parse_json(text.as_bytes(), "event data is not JSON", "op").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("event data is not JSON"), "{message}");
        assert!(message.len() < 400, "{message}");
        assert!(ResponseError::find_in(&err).is_none());
    }

    #[test]
    fn waits_end_at_the_timeout_or_the_deadline_whichever_is_first() {
        let soon = after(Duration::from_secs(1));
        let wait = Wait::new(Duration::from_secs(60), soon);
        assert!(wait.is_deadline && wait.until == soon);
        let err = wait.timeout("POST /x", Duration::from_secs(1));
        assert_eq!(err.to_string(), "POST /x response (deadline 1s) timed out");
        let wait = Wait::new(Duration::from_millis(10), after(Duration::MAX));
        assert!(!wait.is_deadline);
        assert_eq!(
            wait.timeout("POST /x", Duration::MAX).to_string(),
            "POST /x timed out"
        );
    }
}
