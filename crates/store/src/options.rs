//! [`StoreOptions`]: what every store is configured with (a semantic
//! index, expiry, a clock), and its parts [`TtlConfig`] and [`Clock`].

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::{IndexConfig, Result, StoreCapabilities, StoreError, Ttl};

/// Where a store reads the time (tests pass a clock they move by hand).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Expiry of items (LangGraph's `TTLConfig`); times in minutes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct TtlConfig {
    /// The TTL of puts that do not give one; `None`: they never expire.
    pub default_ttl: Option<f64>,
    /// Whether reads (get, search) with `refresh_ttl` extend the TTL of
    /// what they return. Default `true`.
    pub refresh_on_read: bool,
    /// How often a started sweeper deletes expired items.
    pub sweep_interval_minutes: Option<f64>,
    /// Whether expired items not yet swept are hidden from reads. Default
    /// `false` (LangGraph's default: they are returned until swept).
    pub omit_expired: bool,
}

impl Default for TtlConfig {
    fn default() -> Self {
        Self {
            default_ttl: None,
            refresh_on_read: true,
            sweep_interval_minutes: None,
            omit_expired: false,
        }
    }
}

impl TtlConfig {
    /// Puts live `minutes` unless they say otherwise.
    #[must_use]
    pub fn with_default_ttl(mut self, minutes: f64) -> Self {
        self.default_ttl = Some(minutes);
        self
    }

    /// Sets whether reads extend TTLs.
    #[must_use]
    pub fn with_refresh_on_read(mut self, refresh: bool) -> Self {
        self.refresh_on_read = refresh;
        self
    }

    /// Sets whether expired, unswept items are hidden.
    #[must_use]
    pub fn with_omit_expired(mut self, omit: bool) -> Self {
        self.omit_expired = omit;
        self
    }

    /// Sets the sweeper's interval.
    #[must_use]
    pub fn with_sweep_interval(mut self, minutes: f64) -> Self {
        self.sweep_interval_minutes = Some(minutes);
        self
    }

    /// When an item with `minutes` of TTL expires, counted from `now`.
    pub fn deadline(now: DateTime<Utc>, minutes: f64) -> DateTime<Utc> {
        let millis = (minutes * 60_000.0).clamp(0.0, 1.0e15) as i64;
        now + chrono::Duration::milliseconds(millis)
    }
}

/// What a store is configured with, the same for every backend
/// ([`InMemoryStore`](crate::InMemoryStore), and the SQLite and PostgreSQL
/// stores): a semantic index, expiry, and where the time is read.
/// [`StoreOptions::new`] is no index, no TTL, the system clock; a store
/// takes them whole with its `with_options`.
///
/// ```
/// use stategraph_llm::HashEmbeddings;
/// use stategraph_store::{IndexConfig, InMemoryStore, StoreOptions, TtlConfig};
///
/// let options = StoreOptions::new()
///     .with_index(IndexConfig::new(64, HashEmbeddings::new(64)).with_fields(["text"]))
///     .with_ttl(TtlConfig::default().with_default_ttl(60.0));
/// let store = InMemoryStore::new().with_options(options);
/// assert!(store.options().index.is_some());
/// assert_eq!(store.options().ttl.and_then(|ttl| ttl.default_ttl), Some(60.0));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// The semantic index, if any: puts embed the configured fields,
    /// searches with a query rank by cosine similarity.
    pub index: Option<IndexConfig>,
    /// Expiry, if any; a store without it refuses puts with a TTL.
    pub ttl: Option<TtlConfig>,
    /// Where the store reads the time.
    pub clock: Clock,
}

impl StoreOptions {
    /// No index, no TTL, the system clock.
    pub fn new() -> Self {
        Self {
            index: None,
            ttl: None,
            clock: Arc::new(Utc::now),
        }
    }

    /// Adds a semantic index.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Adds expiry.
    #[must_use]
    pub fn with_ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Reads the time from `clock` instead of the system clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// The time, as the clock reads it.
    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// What a store with these options can do: vector search with an
    /// index, TTLs with expiry.
    pub fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities {
            vector_search: self.index.is_some(),
            ttl: self.ttl.is_some(),
        }
    }

    /// The TTL in minutes a put asking for `ttl` gets, or an error for a
    /// TTL on a store without expiry.
    ///
    /// # Errors
    /// [`StoreError::Unsupported`] of `store` when there is no TTL
    /// configuration and `ttl` asks for minutes.
    pub fn ttl_minutes(&self, ttl: Ttl, store: &'static str) -> Result<Option<f64>> {
        match (ttl, &self.ttl) {
            (Ttl::Never, _) | (Ttl::Default, None) => Ok(None),
            (Ttl::Default, Some(config)) => Ok(config.default_ttl),
            (Ttl::Minutes(minutes), Some(_)) => Ok(Some(minutes)),
            (Ttl::Minutes(_), None) => Err(StoreError::Unsupported {
                operation: "a TTL (configure the store with a TtlConfig)".into(),
                store,
            }),
        }
    }

    /// Whether a read asking for `refresh_ttl` (`asked`) extends the TTLs
    /// of what it returns: only with expiry that refreshes on read.
    pub fn refreshes(&self, asked: bool) -> bool {
        asked && self.ttl.is_some_and(|ttl| ttl.refresh_on_read)
    }

    /// Whether expired items not yet swept are hidden from reads.
    pub fn omit_expired(&self) -> bool {
        self.ttl.is_some_and(|ttl| ttl.omit_expired)
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreOptions")
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}
