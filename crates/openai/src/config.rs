//! Where and how to reach an OpenAI-compatible endpoint.

use std::time::Duration;

use stategraph_core::JsonMap;

/// OpenAI's own endpoint, the default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The endpoint, credentials, model and call policy of a client.
///
/// Built in code or from the environment variables the OpenAI SDKs read
/// ([`from_env`](Self::from_env)). Any OpenAI-compatible server works: vLLM,
/// Ollama (`http://localhost:11434/v1`), llama.cpp's server, LiteLLM, ...
///
/// The call policy bounds what a server can make the client do: a timeout
/// for each wait, a deadline for each whole response, and caps on the size
/// of a body, a server-sent event line and an event (8 MiB lines and
/// events, 64 MiB bodies and a 10-minute deadline by default).
///
/// ```
/// use std::time::Duration;
/// use stategraph_openai::OpenAiConfig;
///
/// let config = OpenAiConfig::new("llama3.2")
///     .with_base_url("http://localhost:11434/v1")
///     .with_timeout(Duration::from_secs(30))
///     .with_response_deadline(Duration::from_secs(120))
///     .with_max_body_bytes(16 << 20)
///     .with_max_retries(4)
///     .with_param("temperature", 0.into());
/// assert_eq!(config.base_url(), "http://localhost:11434/v1");
/// assert_eq!(config.model(), "llama3.2");
/// assert_eq!(config.max_line_bytes(), 8 << 20);
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    base_url: String,
    api_key: Option<String>,
    organization: Option<String>,
    project: Option<String>,
    model: String,
    timeout: Duration,
    response_deadline: Duration,
    max_line_bytes: usize,
    max_event_bytes: usize,
    max_body_bytes: usize,
    max_retries: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    params: JsonMap,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A required environment variable is not set.
    #[error("environment variable {name} is not set")]
    MissingVar {
        /// The variable.
        name: &'static str,
    },
    /// The base URL is not an `http` or `https` URL.
    #[error("base URL `{url}` is not an http(s) URL")]
    BadBaseUrl {
        /// The URL given.
        url: String,
    },
    /// An environment variable holds something unusable.
    #[error("environment variable {name} is invalid: {message}")]
    BadVar {
        /// The variable.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl OpenAiConfig {
    /// `model` on OpenAI's endpoint, without a key; a 10-minute timeout
    /// and 2 retries, as the OpenAI SDKs; a 10-minute response deadline,
    /// 8 MiB line and event limits and a 64 MiB body limit.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            organization: None,
            project: None,
            model: model.into(),
            timeout: Duration::from_secs(600),
            response_deadline: Duration::from_secs(600),
            max_line_bytes: 8 << 20,
            max_event_bytes: 8 << 20,
            max_body_bytes: 64 << 20,
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            params: JsonMap::new(),
        }
    }

    /// The configuration the environment describes: `OPENAI_BASE_URL`
    /// (default [`DEFAULT_BASE_URL`]), `OPENAI_API_KEY`, `OPENAI_ORG_ID`,
    /// `OPENAI_PROJECT_ID` (the names the OpenAI SDKs read), the model from
    /// `OPENAI_MODEL` (else `default_model`), `OPENAI_TIMEOUT` (seconds) and
    /// `OPENAI_MAX_RETRIES`.
    ///
    /// # Errors
    /// [`ConfigError::MissingVar`] when neither `OPENAI_API_KEY` nor
    /// `OPENAI_BASE_URL` is set (there is nothing to talk to), and
    /// [`ConfigError::BadVar`] / [`ConfigError::BadBaseUrl`] for unusable
    /// values.
    pub fn from_env(default_model: &str) -> Result<Self, ConfigError> {
        Self::from_vars(default_model, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any variable lookup (for tests and
    /// other configuration sources).
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(
        default_model: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let var = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let base_url = var("OPENAI_BASE_URL");
        let api_key = var("OPENAI_API_KEY");
        if base_url.is_none() && api_key.is_none() {
            return Err(ConfigError::MissingVar {
                name: "OPENAI_API_KEY",
            });
        }
        let model = var("OPENAI_MODEL").unwrap_or_else(|| default_model.to_owned());
        let mut config = Self::new(model);
        if let Some(url) = base_url {
            config = config.with_base_url(url);
        }
        config.check_base_url()?;
        config.api_key = api_key;
        config.organization = var("OPENAI_ORG_ID");
        config.project = var("OPENAI_PROJECT_ID");
        if let Some(timeout) = var("OPENAI_TIMEOUT") {
            let seconds: f64 = timeout.trim().parse().map_err(|_| ConfigError::BadVar {
                name: "OPENAI_TIMEOUT",
                message: format!("`{timeout}` is not a number of seconds"),
            })?;
            config.timeout =
                Duration::try_from_secs_f64(seconds).map_err(|err| ConfigError::BadVar {
                    name: "OPENAI_TIMEOUT",
                    message: err.to_string(),
                })?;
        }
        if let Some(retries) = var("OPENAI_MAX_RETRIES") {
            config.max_retries = retries.trim().parse().map_err(|_| ConfigError::BadVar {
                name: "OPENAI_MAX_RETRIES",
                message: format!("`{retries}` is not a count"),
            })?;
        }
        Ok(config)
    }

    /// Sets the base URL (`…/v1`); a trailing `/` is dropped.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Sets the API key (sent as a bearer token).
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the organization header (`OpenAI-Organization`).
    #[must_use]
    pub fn with_organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    /// Sets the project header (`OpenAI-Project`).
    #[must_use]
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets how long each wait of an attempt may take: for the response's
    /// status and headers, then for the whole body, or for a stream, for
    /// each next piece of it. Default: 10 minutes. The response's deadline
    /// ([`with_response_deadline`](Self::with_response_deadline)) bounds
    /// all of them together.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets how long one attempt may take as a whole, from sending the
    /// request to the last byte of the response (a stream's `[DONE]`), so
    /// that a server trickling bytes cannot hold a call forever. Default:
    /// 10 minutes; `Duration::MAX` turns it off. Running out is an
    /// [`Error::Timeout`](stategraph_llm::Error::Timeout) whose operation
    /// names the deadline; it is retried only while the response has not
    /// started.
    #[must_use]
    pub fn with_response_deadline(mut self, deadline: Duration) -> Self {
        self.response_deadline = deadline;
        self
    }

    /// Sets the longest line of a server-sent event stream, in bytes, not
    /// counting its `\n`. Default: 8 MiB. A longer line ends the stream with
    /// [`ResponseError::LineTooLong`](crate::ResponseError::LineTooLong) as
    /// soon as its bytes pass the limit.
    #[must_use]
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets the largest data of one server-sent event (its `data` lines
    /// joined by `\n`), in bytes. Default: 8 MiB. A larger event ends the
    /// stream with
    /// [`ResponseError::EventTooLarge`](crate::ResponseError::EventTooLarge).
    #[must_use]
    pub fn with_max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Sets the largest body of a response that is not streamed (answers
    /// and error bodies), in bytes. Default: 64 MiB. A larger answer is
    /// [`ResponseError::BodyTooLarge`](crate::ResponseError::BodyTooLarge),
    /// refused from its `content-length` when it has one; a larger error
    /// body leaves only the status to report.
    #[must_use]
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets how many times a failed attempt is retried (429, 408, 409, 5xx,
    /// connection failures and timeouts); 0 disables retries.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the backoff before the first retry and its cap; it doubles per
    /// retry, less up to a quarter of jitter. A `Retry-After` header wins.
    #[must_use]
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Adds a request body parameter sent with every call (`temperature`,
    /// `max_tokens`, `seed`, ...).
    #[must_use]
    pub fn with_param(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.params.insert(key.into(), value);
        self
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The timeout of each wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The deadline of each whole response.
    pub fn response_deadline(&self) -> Duration {
        self.response_deadline
    }

    /// The longest server-sent event line, in bytes.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// The largest server-sent event data, in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// The largest body of a response that is not streamed, in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The retry count.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    pub(crate) fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    pub(crate) fn organization(&self) -> Option<&str> {
        self.organization.as_deref()
    }

    pub(crate) fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    pub(crate) fn params(&self) -> &JsonMap {
        &self.params
    }

    /// The wait before retry `attempt` (1-based), without `Retry-After`.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(1_u32 << attempt.saturating_sub(1).min(16));
        let capped = doubled.min(self.max_backoff);
        // Up to a quarter less, so clients that failed together spread out.
        let jitter = (stategraph_core::random_u64() % 1000) as f64 / 4000.0;
        capped.mul_f64(1.0 - jitter)
    }

    pub(crate) fn check_base_url(&self) -> Result<(), ConfigError> {
        let url = self.base_url.to_ascii_lowercase();
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(())
        } else {
            Err(ConfigError::BadBaseUrl {
                url: self.base_url.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_environment_names_the_endpoint() {
        let config = OpenAiConfig::from_vars(
            "gpt-4o-mini",
            vars(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_MODEL", "qwen"),
                ("OPENAI_TIMEOUT", "2.5"),
                ("OPENAI_MAX_RETRIES", "5"),
            ]),
        )
        .unwrap();
        assert_eq!(config.base_url(), "http://127.0.0.1:8000/v1");
        assert_eq!(config.api_key(), Some("sk-test"));
        assert_eq!(config.model(), "qwen");
        assert_eq!(config.timeout(), Duration::from_millis(2500));
        assert_eq!(config.max_retries(), 5);

        let config =
            OpenAiConfig::from_vars("gpt-4o-mini", vars(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!(config.base_url(), DEFAULT_BASE_URL);
        assert_eq!(config.model(), "gpt-4o-mini");
    }

    #[test]
    fn unusable_environments_are_named() {
        let err = OpenAiConfig::from_vars("m", vars(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable OPENAI_API_KEY is not set"
        );
        let err = OpenAiConfig::from_vars("m", vars(&[("OPENAI_BASE_URL", "localhost:8000")]))
            .unwrap_err();
        assert!(matches!(err, ConfigError::BadBaseUrl { .. }), "{err}");
        let err = OpenAiConfig::from_vars(
            "m",
            vars(&[("OPENAI_API_KEY", "k"), ("OPENAI_TIMEOUT", "soon")]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable OPENAI_TIMEOUT is invalid: `soon` is not a number of seconds"
        );
        let err = OpenAiConfig::from_vars(
            "m",
            vars(&[("OPENAI_API_KEY", "k"), ("OPENAI_TIMEOUT", "-1")]),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::BadVar { .. }), "{err}");
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_bounded_jitter() {
        let config = OpenAiConfig::new("m")
            .with_backoff(Duration::from_millis(100), Duration::from_millis(350));
        for (attempt, full) in [(1, 100), (2, 200), (3, 350), (30, 350)] {
            let wait = config.backoff(attempt);
            let full = Duration::from_millis(full);
            assert!(
                wait <= full && wait >= full.mul_f64(0.75),
                "{attempt}: {wait:?}"
            );
        }
    }
}
