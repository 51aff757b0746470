//! Settings: the defaults, then `stategraph.toml`, then environment
//! variables.

use std::path::Path;

use serde::Deserialize;

use crate::error::Error;

/// A server's settings (see the crate docs for the file and the variables).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Settings {
    /// Where it listens.
    pub server: ServerSettings,
    /// HTTP limits and CORS.
    pub http: HttpSettings,
    /// Where the server keeps its records.
    pub database: DatabaseSettings,
    /// How runs execute.
    pub runs: RunSettings,
    /// Streams and the long answers of `wait` and `join`.
    pub streams: StreamSettings,
    /// The cron scheduler.
    pub crons: CronSettings,
    /// Threads' time to live (`langgraph.json`'s `checkpointer.ttl`).
    pub threads: ThreadSettings,
    /// The store's expiry (`langgraph.json`'s `store.ttl`).
    pub store: StoreSettings,
    /// Which webhook URLs runs may give (`langgraph.json`'s `webhooks.url`).
    pub webhooks: WebhookSettings,
}

/// Which webhook URLs runs and crons may give; the official server's
/// defaults.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct WebhookSettings {
    /// Whether loopback hosts (`localhost`, `127.0.0.1`, `::1`, names that
    /// resolve to them) are allowed (default `false`).
    pub allow_loopback: bool,
    /// Whether URLs must be `https` (default `false`).
    pub require_https: bool,
    /// The hosts allowed (`*.example.com` for its subdomains); empty: any.
    pub allowed_domains: Vec<String>,
    /// The ports allowed; empty: any.
    pub allowed_ports: Vec<u16>,
    /// The longest URL taken (default 4096).
    pub max_url_length: usize,
    /// How long a call may take (default 10 seconds).
    pub timeout_seconds: f64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_loopback: false,
            require_https: false,
            allowed_domains: Vec::new(),
            allowed_ports: Vec::new(),
            max_url_length: 4096,
            timeout_seconds: 10.0,
        }
    }
}

/// The store's expiry: items put with a `ttl` (minutes) expire, and a
/// sweeper deletes expired ones.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct StoreSettings {
    /// The TTL of items put without one (default none: they never expire).
    pub default_ttl_minutes: Option<f64>,
    /// Whether reading an item (get, search with `refresh_ttl`) extends
    /// its TTL (default `true`).
    pub refresh_on_read: bool,
    /// How often expired items are deleted (default 5 minutes).
    pub sweep_interval_minutes: f64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            default_ttl_minutes: None,
            refresh_on_read: true,
            sweep_interval_minutes: 5.0,
        }
    }
}

impl StoreSettings {
    /// The store options these settings give.
    pub(crate) fn options(&self) -> stategraph::store::StoreOptions {
        let mut ttl = stategraph::store::TtlConfig::default();
        ttl.default_ttl = self.default_ttl_minutes;
        ttl.refresh_on_read = self.refresh_on_read;
        ttl.sweep_interval_minutes = Some(self.sweep_interval_minutes);
        stategraph::store::StoreOptions::new().with_ttl(ttl)
    }
}

/// What happens to a thread whose TTL runs out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TtlStrategy {
    /// The thread goes, with its runs, crons and checkpoints.
    #[default]
    Delete,
    /// The thread stays with its latest checkpoint only; its TTL starts
    /// again.
    KeepLatest,
}

impl TtlStrategy {
    /// Its API name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::KeepLatest => "keep_latest",
        }
    }
}

/// Threads' time to live: the TTL of threads created without one, and the
/// sweeper that acts on expired threads.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ThreadSettings {
    /// The TTL, in minutes, of a thread whose create request names none
    /// (default none: threads live until deleted).
    pub default_ttl_minutes: Option<f64>,
    /// What the default TTL does (default `delete`).
    pub default_ttl_strategy: TtlStrategy,
    /// How often expired threads are looked for (default 5 minutes).
    pub sweep_interval_minutes: f64,
    /// Expired threads handled per sweep, at most (default 1000).
    pub sweep_limit: usize,
}

impl Default for ThreadSettings {
    fn default() -> Self {
        Self {
            default_ttl_minutes: None,
            default_ttl_strategy: TtlStrategy::Delete,
            sweep_interval_minutes: 5.0,
            sweep_limit: 1000,
        }
    }
}

impl ThreadSettings {
    /// The interval between sweeps (at least 10 milliseconds).
    pub fn sweep_interval(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.sweep_interval_minutes * 60.0)
            .unwrap_or(std::time::Duration::from_secs(300))
            .max(std::time::Duration::from_millis(10))
    }
}

/// The cron scheduler.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct CronSettings {
    /// Whether this server fires due crons (default `true`).
    pub enabled: bool,
    /// How often it looks for due crons (default 5 seconds, as the
    /// official server's `CRON_SCHEDULER_SLEEP_TIME`).
    pub interval_seconds: f64,
}

impl Default for CronSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            interval_seconds: 5.0,
        }
    }
}

impl CronSettings {
    /// The interval between looks (at least 10 milliseconds).
    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.interval_seconds)
            .unwrap_or(std::time::Duration::from_secs(5))
            .max(std::time::Duration::from_millis(10))
    }
}

/// Where the server keeps its records (threads, runs), checkpoints and
/// store items.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DatabaseSettings {
    /// `sqlite://PATH` (the default, `sqlite://stategraph.db`): threads,
    /// runs, checkpoints and store items in one SQLite file, created if
    /// needed; `postgres://...`: all of it in that database (migrated at
    /// start); `memory`: everything in this process, gone when it stops.
    pub url: String,
    /// PostgreSQL only: named, cached prepared statements, and single
    /// statements without a transaction around them (default `false`).
    /// Turn it on for direct connections and poolers that track prepared
    /// statements (pgbouncer 1.21 or later with `max_prepared_statements`):
    /// each statement is then parsed and planned once per connection, not
    /// every time. A transaction-mode pooler without that support fails
    /// with "prepared statement ... does not exist".
    pub prepared_statements: bool,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: "sqlite://stategraph.db".into(),
            prepared_statements: false,
        }
    }
}

/// How runs execute.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RunSettings {
    /// At most this many runs execute at once (default 16); the others
    /// wait, in their threads' order.
    pub max_concurrent: usize,
}

impl Default for RunSettings {
    fn default() -> Self {
        Self { max_concurrent: 16 }
    }
}

/// Streams and the long answers of `wait` and `join`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct StreamSettings {
    /// A keep-alive is sent this often (default 5 seconds, as the official
    /// server): a `: heartbeat` comment on SSE responses, a `\n` before a
    /// `wait` or `join` body that is not ready.
    pub heartbeat_seconds: f64,
    /// How long an ended run stays joinable in this process (default 120
    /// seconds).
    pub resumable_ttl_seconds: u64,
    /// How many events an SSE client may fall behind before the server
    /// cuts its response (default 65536; it reconnects with its last event
    /// id, so a resumable run's client loses nothing). The run never waits
    /// for a reader.
    pub subscriber_buffer_events: usize,
    /// How many bytes of events an SSE client may fall behind (default 4
    /// MiB): with `subscriber_buffer_events`, what bounds a slow reader's
    /// memory.
    pub subscriber_buffer_bytes: usize,
    /// The most bytes of events a resumable run keeps for replay (default
    /// 16 MiB); past it the oldest are dropped, with a warning.
    pub run_log_max_bytes: usize,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            heartbeat_seconds: 5.0,
            resumable_ttl_seconds: 120,
            subscriber_buffer_events: 65_536,
            subscriber_buffer_bytes: 4 * 1024 * 1024,
            run_log_max_bytes: 16 * 1024 * 1024,
        }
    }
}

impl StreamSettings {
    /// How far behind a subscriber may fall: events, bytes.
    pub(crate) fn subscriber_bounds(&self) -> (usize, usize) {
        (self.subscriber_buffer_events, self.subscriber_buffer_bytes)
    }

    /// The keep-alive interval (at least a millisecond).
    pub fn heartbeat(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.heartbeat_seconds)
            .unwrap_or(std::time::Duration::from_secs(5))
            .max(std::time::Duration::from_millis(1))
    }
}

/// Where a server listens.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerSettings {
    /// The host or address (default `127.0.0.1`).
    pub host: String,
    /// The port (default 8123; 0 lets the system pick a free one).
    pub port: u16,
    /// On shutdown, how long runs in flight may take to finish (default
    /// 10 seconds); the ones still running then are taken over by the next
    /// server on the database, from their last checkpoint.
    pub shutdown_grace_seconds: f64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 8123,
            shutdown_grace_seconds: 10.0,
        }
    }
}

/// HTTP limits and CORS.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The origins browsers may call from (`*`: any, the default).
    pub cors_allow_origins: Vec<String>,
    /// The largest request body accepted, in bytes (default 10 MiB);
    /// a larger one gets 413.
    pub max_body_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            cors_allow_origins: vec!["*".into()],
            max_body_bytes: 10 * 1024 * 1024,
        }
    }
}

impl Settings {
    /// The settings in effect: the defaults, then the TOML file named by
    /// `STATEGRAPH_CONFIG` (or `./stategraph.toml` when it exists), then
    /// the environment variables.
    ///
    /// # Errors
    /// A file that cannot be read or has unknown or mistyped keys
    /// ([`Error::SettingsFile`]); a variable that does not parse
    /// ([`Error::SettingsEnv`]).
    pub fn load() -> Result<Self, Error> {
        let named = std::env::var("STATEGRAPH_CONFIG").ok();
        let settings = match &named {
            Some(path) => Self::from_file(Path::new(path))?,
            None if Path::new("stategraph.toml").exists() => {
                Self::from_file(Path::new("stategraph.toml"))?
            }
            None => Self::default(),
        };
        settings.with_env(|name| std::env::var(name).ok())
    }

    /// The settings of a TOML file over the defaults.
    ///
    /// # Errors
    /// As [`Settings::load`].
    pub fn from_file(path: &Path) -> Result<Self, Error> {
        let file_error = |message: String| Error::SettingsFile {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|err| file_error(err.to_string()))?;
        Self::from_toml(&text).map_err(|err| match err {
            Error::SettingsFile { message, .. } => file_error(message),
            other => other,
        })
    }

    /// The settings of TOML text over the defaults.
    ///
    /// # Errors
    /// Unknown or mistyped keys ([`Error::SettingsFile`], path `<text>`).
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        toml::from_str(text).map_err(|err| Error::SettingsFile {
            path: "<text>".into(),
            message: err.message().to_owned(),
        })
    }

    /// These settings with the environment's over them, read through
    /// `var` (`std::env::var` in [`Settings::load`]).
    ///
    /// # Errors
    /// A variable that does not parse ([`Error::SettingsEnv`]).
    pub fn with_env(mut self, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        fn parse<T: std::str::FromStr>(
            name: &'static str,
            value: String,
            expected: &str,
        ) -> Result<T, Error> {
            value.parse().map_err(|_| Error::SettingsEnv {
                name,
                value,
                message: format!("expected {expected}"),
            })
        }
        if let Some(host) = var("STATEGRAPH_HOST") {
            self.server.host = host;
        }
        if let Some(port) = var("STATEGRAPH_PORT") {
            self.server.port = parse("STATEGRAPH_PORT", port, "a port number (0 to 65535)")?;
        }
        if let Some(bytes) = var("STATEGRAPH_MAX_BODY_BYTES") {
            self.http.max_body_bytes =
                parse("STATEGRAPH_MAX_BODY_BYTES", bytes, "a number of bytes")?;
        }
        // `DATABASE_URI` is the official server's name for it.
        if let Some(url) = var("STATEGRAPH_DATABASE_URL").or_else(|| var("DATABASE_URI")) {
            self.database.url = url;
        }
        if let Some(prepared) = var("STATEGRAPH_DATABASE_PREPARED_STATEMENTS") {
            self.database.prepared_statements = parse(
                "STATEGRAPH_DATABASE_PREPARED_STATEMENTS",
                prepared,
                "true or false",
            )?;
        }
        if let Some(runs) = var("STATEGRAPH_MAX_CONCURRENT_RUNS") {
            self.runs.max_concurrent =
                parse("STATEGRAPH_MAX_CONCURRENT_RUNS", runs, "a number of runs")?;
        }
        if let Some(seconds) = var("STATEGRAPH_HEARTBEAT_SECONDS") {
            self.streams.heartbeat_seconds = parse(
                "STATEGRAPH_HEARTBEAT_SECONDS",
                seconds,
                "a number of seconds",
            )?;
        }
        if let Some(enabled) = var("STATEGRAPH_CRONS_ENABLED") {
            self.crons.enabled = parse("STATEGRAPH_CRONS_ENABLED", enabled, "true or false")?;
        }
        if let Some(seconds) = var("STATEGRAPH_CRON_INTERVAL_SECONDS") {
            self.crons.interval_seconds = parse(
                "STATEGRAPH_CRON_INTERVAL_SECONDS",
                seconds,
                "a number of seconds",
            )?;
        }
        if let Some(allow) = var("STATEGRAPH_WEBHOOKS_ALLOW_LOOPBACK") {
            self.webhooks.allow_loopback =
                parse("STATEGRAPH_WEBHOOKS_ALLOW_LOOPBACK", allow, "true or false")?;
        }
        if let Some(minutes) = var("STATEGRAPH_THREAD_TTL_MINUTES") {
            self.threads.default_ttl_minutes = Some(parse(
                "STATEGRAPH_THREAD_TTL_MINUTES",
                minutes,
                "a number of minutes",
            )?);
        }
        if let Some(origins) = var("STATEGRAPH_CORS_ALLOW_ORIGINS") {
            self.http.cors_allow_origins = origins
                .split(',')
                .map(str::trim)
                .filter(|origin| !origin.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Ok(self)
    }

    /// `host:port`, to listen on.
    pub fn address(&self) -> String {
        format!("{}:{}", self.server.host, self.server.port)
    }
}
