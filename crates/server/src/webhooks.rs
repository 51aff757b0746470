//! Webhooks (API.md 12, TRANSCRIPTS.md section 21): a run (or cron) with a
//! `webhook` URL makes the server POST the run's result there once it
//! ends: the run record with `status`, `run_started_at`, `run_ended_at`,
//! `webhook_sent_at`, the thread's final `values`, and `error` when it
//! failed. As the official server, a call that times out, cannot connect
//! or gets 5xx or 429 is tried again (three attempts in all, about 1 s
//! then 2 s apart, with jitter), but a relative URL is not after a
//! timeout (its handler may have done part of its work); a final failure
//! is logged and leaves the run as it is. URLs are checked when the run is asked for, and again
//! before the call, against `[webhooks]`: loopback hosts (and names that
//! resolve to them) are refused unless allowed, and a domain allow-list,
//! `https` and ports can be required. A relative URL (`/path?query`),
//! allowed with the loopback hosts, is one of this server's own routes,
//! called in process and without authentication, as the official server's
//! loopback client does.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::api::{ApiError, Loopback};
use crate::runs::Run;
use crate::server::Core;
use crate::settings::WebhookSettings;

/// The official server's text for a refused loopback webhook, naming this
/// server's setting.
const LOOPBACK: &str = "Loopback webhooks (relative URLs and localhost) are disabled by default. They bypass authentication by calling this server's own routes in process, and can be abused to invoke internal routes as an unauthenticated caller. Set webhooks.allow_loopback = true (in stategraph.toml, or STATEGRAPH_WEBHOOKS_ALLOW_LOOPBACK=true) to opt back in; only do so when you control the mounted routes.";

/// Checks a webhook URL against the settings, resolving its host.
///
/// # Errors
/// 422 with the official texts: too long, a relative URL, not `https` when
/// required, a port or domain not allowed, a loopback host.
pub(crate) async fn check(url: &str, settings: &WebhookSettings) -> Result<(), ApiError> {
    if url.len() > settings.max_url_length {
        return Err(ApiError::invalid("Webhook URL too long"));
    }
    if url.starts_with('/') {
        return if settings.allow_loopback {
            Ok(())
        } else {
            Err(ApiError::invalid(LOOPBACK))
        };
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|err| ApiError::invalid(format!("Invalid webhook URL: {err}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ApiError::invalid(format!(
            "Invalid webhook URL: the scheme {:?} is not http or https",
            parsed.scheme()
        )));
    }
    if settings.require_https && parsed.scheme() != "https" {
        return Err(ApiError::invalid("Webhook must use https"));
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    if !settings.allowed_ports.is_empty() && !settings.allowed_ports.contains(&port) {
        return Err(ApiError::invalid(format!(
            "Webhook port {port} not allowed"
        )));
    }
    let host = parsed
        .host_str()
        .map(|host| {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_lowercase()
        })
        .unwrap_or_default();
    if host.is_empty() {
        return Err(ApiError::invalid(format!(
            "Invalid webhook hostname '{host}'"
        )));
    }
    if !settings.allowed_domains.is_empty() && !domain_allowed(&host, &settings.allowed_domains) {
        return Err(ApiError::invalid("Webhook domain not allowed"));
    }
    if !settings.allow_loopback && resolves_to_loopback(&host, port).await {
        return Err(ApiError::invalid(
            "Webhook host blocked: the host is a loopback address",
        ));
    }
    Ok(())
}

/// Whether `host` is one of `allowed` (`*.example.com` takes subdomains).
fn domain_allowed(host: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|pattern| {
        let pattern = pattern.trim().to_lowercase();
        match pattern.strip_prefix("*.") {
            Some(base) => host.ends_with(&format!(".{base}")),
            None => host == pattern,
        }
    })
}

/// Whether `host` is, or resolves to, a loopback address (an unresolvable
/// name is not: the call fails later, and is logged).
async fn resolves_to_loopback(host: &str, port: u16) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return ip.is_loopback() || ip.is_unspecified();
    }
    // A resolver that does not answer in time leaves the call to fail.
    let lookup = tokio::net::lookup_host((host, port));
    match tokio::time::timeout(Duration::from_secs(2), lookup).await {
        Ok(Ok(addresses)) => addresses
            .into_iter()
            .any(|address| address.ip().is_loopback() || address.ip().is_unspecified()),
        Ok(Err(_)) | Err(_) => false,
    }
}

/// What happened around a run, for its webhook.
pub(crate) struct Ended {
    pub(crate) started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub(crate) values: Option<Value>,
    pub(crate) error: Option<Value>,
}

/// The body the official server POSTs (TRANSCRIPTS.md section 21).
pub(crate) fn payload(run: &Run, ended: &Ended) -> Value {
    let now = chrono::Utc::now();
    let mut body = serde_json::to_value(run).unwrap_or_else(|_| json!({}));
    if let Value::Object(fields) = &mut body {
        let time = |t: chrono::DateTime<chrono::Utc>| Value::String(crate::wire::timestamp(t));
        fields.insert(
            "run_started_at".into(),
            ended.started_at.map_or(Value::Null, time),
        );
        fields.insert("run_ended_at".into(), time(run.updated_at));
        fields.insert("webhook_sent_at".into(), time(now));
        fields.insert("values".into(), ended.values.clone().unwrap_or(Value::Null));
        if let Some(error) = &ended.error {
            fields.insert("error".into(), error.clone());
        }
    }
    body
}

/// Attempts at one webhook, in all.
const ATTEMPTS: u32 = 3;

/// POSTs `body` to `url` on a task of its own, after checking the URL
/// again (the settings may have changed since the run was asked for).
pub(crate) fn send(core: Arc<Core>, url: String, body: Value) {
    tokio::spawn(async move {
        let settings = &core.settings.webhooks;
        if let Err(err) = check(&url, settings).await {
            tracing::warn!(webhook = %url, error = ?err, "a webhook was not called: its URL is refused");
            return;
        }
        let timeout = Duration::from_secs_f64(settings.timeout_seconds.max(0.001));
        for attempt in 1..=ATTEMPTS {
            let outcome = if url.starts_with('/') {
                call_own_route(&core, &url, &body, timeout).await
            } else {
                call(&core.http, &url, &body, timeout).await
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(webhook = %url, attempt, "called a run's webhook");
                    return;
                }
                Err(failure) if failure.retry && attempt < ATTEMPTS => {
                    tracing::debug!(webhook = %url, attempt, error = %failure.message, "a webhook call failed; trying again");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(failure) => {
                    tracing::warn!(webhook = %url, attempt, error = %failure.message, "a webhook call failed");
                    return;
                }
            }
        }
    });
}

/// Why one call failed, and whether another attempt may succeed.
struct Failure {
    message: String,
    retry: bool,
}

impl Failure {
    /// A failure by the answer's status: 5xx and 429 are worth another try.
    fn status(status: StatusCode) -> Self {
        Self {
            message: format!("answered {status}"),
            retry: status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS,
        }
    }
}

/// One POST to an absolute URL.
async fn call(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    timeout: Duration,
) -> Result<(), Failure> {
    let answer = client
        .post(url)
        .timeout(timeout)
        .json(body)
        .send()
        .await
        .map_err(|err| Failure {
            message: err.to_string(),
            retry: err.is_timeout() || err.is_connect() || err.is_request(),
        })?;
    let status =
        StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status.is_success() {
        Ok(())
    } else {
        Err(Failure::status(status))
    }
}

/// One POST to this server's own route `path` (with its query), in
/// process: no socket, and no authentication (the [`Loopback`] mark).
async fn call_own_route(
    core: &Arc<Core>,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> Result<(), Failure> {
    let internal = |message: String| Failure {
        message,
        retry: false,
    };
    let mut request = axum::http::Request::post(path)
        .header(axum::http::header::HOST, "api")
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .map_err(|err| internal(format!("not a request path: {err}")))?;
    request.extensions_mut().insert(Loopback);
    let call = crate::api::router(Arc::clone(core)).oneshot(request);
    // A timeout dropped the handler partway: calling it again could do
    // its work twice, so a relative URL is not tried again after one.
    let answer = tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| Failure {
            message: format!("no answer within {timeout:?}"),
            retry: false,
        })?
        .map_err(|never| match never {})?;
    if answer.status().is_success() {
        Ok(())
    } else {
        Err(Failure::status(answer.status()))
    }
}

/// The wait before attempt `attempt + 1`: 1 s, then 2 s, each plus up to
/// 1 s of jitter (the official server's exponential backoff with jitter).
fn backoff(attempt: u32) -> Duration {
    let base = f64::from(1_u32 << (attempt - 1).min(4));
    Duration::from_secs_f64(base + stategraph::core::random_unit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> WebhookSettings {
        WebhookSettings::default()
    }

    #[tokio::test]
    async fn loopback_and_relative_urls_are_refused_by_default() {
        for url in [
            "http://127.0.0.1:9/hook",
            "http://localhost/hook",
            "http://[::1]/x",
            "/hook",
        ] {
            assert!(check(url, &settings()).await.is_err(), "{url}");
        }
        let mut open = settings();
        open.allow_loopback = true;
        assert!(check("http://127.0.0.1:9/hook", &open).await.is_ok());
    }

    #[tokio::test]
    async fn https_ports_and_domains_are_enforced_when_asked() {
        let mut strict = settings();
        strict.require_https = true;
        strict.allowed_domains = vec!["*.example.com".into(), "hooks.test".into()];
        strict.allowed_ports = vec![443];
        assert!(check("http://a.example.com/h", &strict).await.is_err());
        assert!(
            check("https://a.example.com:8443/h", &strict)
                .await
                .is_err()
        );
        assert!(check("https://evil.com/h", &strict).await.is_err());
        assert!(check("https://a.example.com/h", &strict).await.is_ok());
        assert!(check("https://hooks.test/h", &strict).await.is_ok());
        assert!(check("ftp://a.example.com/h", &settings()).await.is_err());
        let long = format!("https://a.example.com/{}", "x".repeat(5000));
        assert!(check(&long, &settings()).await.is_err());
    }
}
