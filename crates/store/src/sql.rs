//! What SQL-backed stores share: the plan of one batch (every op checked,
//! every text embedded and the time read, all before the database is
//! touched, exactly as [`InMemoryStore`](crate::InMemoryStore) does, so a
//! batch that fails here changes nothing) and the stored forms of
//! namespaces, times and vectors. `SqliteStore` and `PostgresStore` build
//! on it; so can another SQL backend.

use stategraph_core::JsonMap;

use crate::{
    Clock, Filter, Item, ListNamespacesOp, MatchCondition, Namespace, Op, Result, StoreError,
    StoreOptions, TtlConfig, refuse_deep_values, validate_key, validate_namespace,
};
use chrono::{DateTime, Utc};

/// A batch ready to run on one connection.
pub struct Plan {
    /// The checked ops, in batch order.
    pub steps: Vec<Step>,
    /// The batch's time, as read from the store's clock.
    pub now: DateTime<Utc>,
    /// [`Plan::now`] in nanoseconds since the Unix epoch.
    pub now_nanos: i64,
    /// Whether expired, unswept items are hidden.
    pub omit_expired: bool,
    /// Whether a step may write: a put, or a read that refreshes TTLs.
    pub writes: bool,
}

/// One operation of a batch, checked.
pub enum Step {
    /// Read one item.
    Get {
        /// Its namespace.
        namespace: Namespace,
        /// The namespace as stored ([`join`]).
        joined: String,
        /// Its key.
        key: String,
        /// Whether to extend its TTL.
        refresh: bool,
    },
    /// Write or delete one item.
    Put {
        /// The namespace as stored ([`join`]).
        joined: String,
        /// Its key.
        key: String,
        /// `None` deletes the item.
        write: Option<Write>,
    },
    /// Search under a prefix.
    Search {
        /// The namespace prefix (checked again with
        /// [`query::has_prefix`](crate::query::has_prefix)).
        prefix: Namespace,
        /// The stored namespaces SQL narrows to; `None`: all.
        range: Option<PrefixRange>,
        /// The checked filter, applied in Rust.
        filter: Filter,
        /// The embedded query, if the search ranks.
        query: Option<Vec<f32>>,
        /// How many results at most.
        limit: usize,
        /// How many to skip.
        offset: usize,
        /// Whether to extend the TTL of what is returned.
        refresh: bool,
    },
    /// List namespaces.
    List {
        /// The listing, answered with
        /// [`query::list_namespaces`](crate::query::list_namespaces).
        op: ListNamespacesOp,
        /// The stored namespaces SQL narrows to; `None`: all.
        range: Option<PrefixRange>,
    },
}

/// The row a put writes (its `created_at` is kept when the item exists).
pub struct Write {
    /// The value as JSON text.
    pub value: String,
    /// The item's TTL in minutes, if it expires.
    pub ttl_minutes: Option<f64>,
    /// Nanoseconds since the epoch.
    pub expires_at: Option<i64>,
    /// The vectors as little-endian f32 bytes, in embedding order.
    pub vectors: Vec<Vec<u8>>,
}

/// The stored namespaces (labels joined with `.`) that start with the whole
/// labels of a prefix: `exact`, or in `[low, high)`, that is `exact + "."`
/// up to `exact + "/"` (`/` follows `.` in byte order, and no label holds a
/// `.`). Bound as parameters, never spliced into SQL, so labels holding
/// `%`, `_` or `*` mean themselves. Every candidate is checked again with
/// [`query`](crate::query) in Rust.
pub struct PrefixRange {
    /// The prefix itself, joined.
    pub exact: String,
    /// `exact + "."`, the lowest longer match.
    pub low: String,
    /// `exact + "/"`, just past the longest longer match.
    pub high: String,
}

impl PrefixRange {
    /// The range of `labels`; `None` (everything) when there are none.
    pub fn new(labels: &[String]) -> Option<Self> {
        if labels.is_empty() {
            return None;
        }
        let exact = join(labels);
        Some(Self {
            low: format!("{exact}."),
            high: format!("{exact}/"),
            exact,
        })
    }
}

/// A namespace as stored: its labels joined with `.`.
pub fn join(labels: &[String]) -> String {
    labels.join(".")
}

/// A stored namespace back as labels.
pub fn split(joined: &str) -> Namespace {
    joined.split('.').map(str::to_owned).collect()
}

/// A time as stored, nanoseconds since the epoch; `None` outside
/// 1677-09-21..2262-04-11.
pub fn nanos(at: DateTime<Utc>) -> Option<i64> {
    at.timestamp_nanos_opt()
}

/// The time `clock` reads, and it as stored.
///
/// # Errors
/// [`StoreError::Unsupported`] of `store` for a time outside the years
/// 1677..2262, which stored times cannot hold.
pub fn read_clock(clock: &Clock, store: &'static str) -> Result<(DateTime<Utc>, i64)> {
    let now = clock();
    let stored = nanos(now).ok_or_else(|| StoreError::Unsupported {
        operation: format!("the time {now} (stored times span the years 1677 to 2262)"),
        store,
    })?;
    Ok((now, stored))
}

/// A stored time back.
pub fn from_nanos(nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(nanos)
}

/// When an item with `minutes` of TTL expires, counted from `now`, as
/// stored: a deadline past 2262 is stored as `i64::MAX`, which no clock
/// the store accepts reaches, so it expires exactly as often (never).
pub fn deadline(now: DateTime<Utc>, minutes: f64) -> i64 {
    nanos(TtlConfig::deadline(now, minutes)).unwrap_or(i64::MAX)
}

/// Whether an item expiring at `expires_at` has expired at `now`.
pub fn expired(expires_at: Option<i64>, now: i64) -> bool {
    expires_at.is_some_and(|at| at <= now)
}

/// A vector as stored: little-endian f32s.
pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector back; `None` when the length is not a multiple of 4.
pub fn decode_vector(bytes: &[u8]) -> Option<Vec<f32>> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(
        chunks
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// One stored item row as a SQL backend reads it (namespace joined with
/// `.`, the value as JSON text, times in nanoseconds since the epoch).
#[derive(Clone, Debug)]
pub struct StoredRow {
    /// The namespace, joined ([`join`]).
    pub namespace: String,
    /// The key.
    pub key: String,
    /// The value as JSON text.
    pub value: String,
    /// When it was first put.
    pub created_at: i64,
    /// When it was last put.
    pub updated_at: i64,
    /// Its TTL in minutes, if it expires.
    pub ttl_minutes: Option<f64>,
    /// When it expires.
    pub expires_at: Option<i64>,
}

impl StoredRow {
    /// The stored value, parsed.
    ///
    /// # Errors
    /// [`StoreError::Backend`] of `store` when the text is not a JSON
    /// object.
    pub fn value(&self, store: &'static str) -> Result<JsonMap> {
        serde_json::from_str(&self.value)
            .map_err(|err| corrupt(store, &self.namespace, &self.key, "value", err))
    }

    /// The item this row holds, with its namespace and parsed value.
    pub fn item(&self, namespace: Namespace, value: JsonMap) -> Item {
        Item::new(
            namespace,
            self.key.clone(),
            value,
            from_nanos(self.created_at),
            from_nanos(self.updated_at),
        )
    }

    /// The deadline a read of `plan` extends this item's TTL to, if it
    /// extends it (it has a TTL and has not expired).
    pub fn refreshed(&self, plan: &Plan) -> Option<i64> {
        let minutes = self.ttl_minutes?;
        (!expired(self.expires_at, plan.now_nanos)).then(|| deadline(plan.now, minutes))
    }

    /// One of this row's stored vectors, decoded.
    ///
    /// # Errors
    /// [`StoreError::Backend`] of `store` when the bytes are not a whole
    /// number of `f32`s.
    pub fn vector(&self, store: &'static str, bytes: &[u8]) -> Result<Vec<f32>> {
        decode_vector(bytes).ok_or_else(|| {
            corrupt(
                store,
                &self.namespace,
                &self.key,
                "vector",
                BadVector(bytes.len()),
            )
        })
    }
}

/// The error of a stored row of `store` that does not read back.
pub fn corrupt(
    store: &'static str,
    namespace: &str,
    key: &str,
    what: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::Backend {
        store,
        message: format!("the stored {what} of {namespace:?}/{key:?} is unreadable: {source}"),
        source: Some(Box::new(source)),
    }
}

/// A stored vector that is not a whole number of `f32`s.
#[derive(Debug, thiserror::Error)]
#[error("a vector of {0} bytes is not a list of 4-byte floats")]
pub struct BadVector(pub usize);

/// The store's settings a plan depends on.
pub struct Settings<'a> {
    /// The store's name, for errors.
    pub store: &'static str,
    /// Its index, expiry and clock.
    pub options: &'a StoreOptions,
}

/// Checks every op and embeds what the puts and queries need (the puts'
/// texts in one call, each query in its own, in op order), then reads the
/// clock.
///
/// # Errors
/// What `InMemoryStore` returns for the same ops: an invalid namespace or
/// filter, a TTL on a store without expiry, an embedder failure; and
/// [`StoreError::Unsupported`] for a clock outside the years 1677..2262.
pub async fn prepare(mut ops: Vec<Op>, settings: &Settings<'_>) -> Result<Plan> {
    refuse_deep_values(&mut ops)?;
    let mut steps = Vec::with_capacity(ops.len());
    let mut texts: Vec<String> = Vec::new();
    // Per step: the range of `texts` a put embeds.
    let mut spans = Vec::with_capacity(ops.len());
    let mut writes = false;
    for op in ops {
        let mut span = 0..0;
        let step = match op {
            Op::Get(get) => {
                validate_namespace(&get.namespace)?;
                validate_key(&get.key)?;
                let refresh = settings.options.refreshes(get.refresh_ttl);
                writes |= refresh;
                Step::Get {
                    joined: join(&get.namespace),
                    namespace: get.namespace,
                    key: get.key,
                    refresh,
                }
            }
            Op::Put(put) => {
                validate_namespace(&put.namespace)?;
                validate_key(&put.key)?;
                let ttl = settings.options.ttl_minutes(put.ttl, settings.store)?;
                writes = true;
                let write = match &put.value {
                    Some(value) => {
                        if let Some(index) = &settings.options.index {
                            let start = texts.len();
                            texts.extend(index.texts(value, &put.index));
                            span = start..texts.len();
                        }
                        let text = serde_json::to_string(value)
                            .map_err(|err| StoreError::backend(settings.store, err))?;
                        Some(Write {
                            value: text,
                            // NaN minutes expire at once, as 0 minutes do
                            // (`TtlConfig::deadline`), and SQLite stores
                            // NaN as NULL, so store 0.
                            ttl_minutes: ttl.map(|m| if m.is_nan() { 0.0 } else { m }),
                            expires_at: None,
                            vectors: Vec::new(),
                        })
                    }
                    None => None,
                };
                Step::Put {
                    joined: join(&put.namespace),
                    key: put.key,
                    write,
                }
            }
            Op::Search(search) => {
                let filter = Filter::new(&search.filter)?;
                let query = match (&settings.options.index, &search.query) {
                    (Some(index), Some(text)) => Some(index.embed_query(text).await?),
                    _ => None,
                };
                let refresh = settings.options.refreshes(search.refresh_ttl);
                writes |= refresh;
                Step::Search {
                    range: PrefixRange::new(&search.namespace_prefix),
                    prefix: search.namespace_prefix,
                    filter,
                    query,
                    limit: search.limit,
                    offset: search.offset,
                    refresh,
                }
            }
            Op::ListNamespaces(list) => Step::List {
                range: PrefixRange::new(&literal_head(&list)),
                op: list,
            },
        };
        steps.push(step);
        spans.push(span);
    }
    if let Some(index) = &settings.options.index {
        let mut vectors = index.embed(&texts).await?.into_iter();
        for (step, span) in steps.iter_mut().zip(spans) {
            if let Step::Put {
                write: Some(write), ..
            } = step
            {
                write.vectors = vectors
                    .by_ref()
                    .take(span.len())
                    .map(|v| encode_vector(&v))
                    .collect();
            }
        }
    }
    let (now, now_nanos) = read_clock(&settings.options.clock, settings.store)?;
    for step in &mut steps {
        if let Step::Put {
            write: Some(write), ..
        } = step
        {
            write.expires_at = write.ttl_minutes.map(|minutes| deadline(now, minutes));
        }
    }
    Ok(Plan {
        steps,
        now,
        now_nanos,
        omit_expired: settings.options.omit_expired(),
        writes,
    })
}

/// The labels before the first `*` of a listing's first prefix condition:
/// the namespaces SQL may narrow the listing to.
fn literal_head(op: &ListNamespacesOp) -> Vec<String> {
    op.match_conditions
        .iter()
        .find_map(|condition| match condition {
            MatchCondition::Prefix(prefix) => Some(
                prefix
                    .iter()
                    .take_while(|label| *label != "*")
                    .cloned()
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::ns;

    use super::*;

    #[test]
    fn namespaces_join_and_split_on_dots() {
        let labels = ns(["users", "a%b", "star*", "user_1"]);
        assert_eq!(join(&labels), "users.a%b.star*.user_1");
        assert_eq!(split(&join(&labels)), labels);
    }

    #[test]
    fn prefix_ranges_hold_exactly_the_whole_label_matches() {
        let range = PrefixRange::new(&ns(["foo"])).unwrap();
        let inside = |stored: &str| {
            stored == range.exact || (stored >= range.low.as_str() && stored < range.high.as_str())
        };
        for stored in ["foo", "foo.bar", "foo.bar.baz", "foo.", "foo.\u{10FFFF}"] {
            assert!(inside(stored), "{stored}");
        }
        for stored in ["foobar", "foo-bar", "foo/x", "fo", "foo0", "fop", "fo.o"] {
            assert!(!inside(stored), "{stored}");
        }
        assert!(PrefixRange::new(&[]).is_none());
    }

    #[test]
    fn vectors_round_trip_bit_for_bit() {
        let vector = [0.0, -0.0, 1.5, f32::MIN_POSITIVE, f32::MAX, f32::NAN];
        let back = decode_vector(&encode_vector(&vector)).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&vector));
        assert_eq!(decode_vector(&[1, 2, 3]), None);
    }

    #[test]
    fn times_round_trip_to_the_nanosecond() {
        let at = DateTime::parse_from_rfc3339("2026-11-05T10:11:12.123456789Z")
            .unwrap()
            .to_utc();
        assert_eq!(from_nanos(nanos(at).unwrap()), at);
        assert_eq!(deadline(at, 1.0e12), i64::MAX);
        assert_eq!(deadline(at, f64::NAN), nanos(at).unwrap());
        assert!(expired(Some(5), 5) && !expired(Some(6), 5) && !expired(None, 5));
    }
}
