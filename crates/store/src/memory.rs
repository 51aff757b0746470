//! [`InMemoryStore`]: a store in a map, with semantic search and TTL.

use std::collections::{BTreeMap, btree_map};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::index::{NormedQuery, NormedVector};
use crate::query::{by_score, has_prefix, list_namespaces};
use crate::{
    Filter, Item, Namespace, Op, OpResult, PutOp, Result, SearchItem, SearchOp, Store,
    StoreCapabilities, StoreOptions, TtlConfig, refuse_deep_values, validate_key,
    validate_namespace,
};

/// A store in a map, for tests, notebooks and single-process apps: every
/// operation of [`Store`], semantic search with an [`IndexConfig`](crate::IndexConfig)
/// (cosine similarity, each item scored by its best vector), and expiry
/// with a [`TtlConfig`], both set with [`StoreOptions`]
/// ([`with_options`](Self::with_options)). Cloning shares the map.
///
/// ```
/// use serde_json::json;
/// use stategraph_store::{InMemoryStore, SearchOp, Store, ns};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// store.put(&["users", "alice"], "food", json!({"likes": "pizza", "rating": 9})).await?;
/// store.put(&["users", "bob"], "food", json!({"likes": "sushi", "rating": 7})).await?;
///
/// let item = store.get(&["users", "alice"], "food").await?.unwrap();
/// assert_eq!(item.value["likes"], "pizza");
///
/// let filter = json!({"rating": {"$gt": 8}}).as_object().unwrap().clone();
/// let found = store.search(SearchOp::new(ns(["users"])).with_filter(filter)).await?;
/// assert_eq!(found.len(), 1);
/// assert_eq!(found[0].item.namespace, ns(["users", "alice"]));
/// # Ok::<(), stategraph_store::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct InMemoryStore {
    entries: Arc<Mutex<BTreeMap<(Namespace, String), Entry>>>,
    options: StoreOptions,
}

#[derive(Clone, Debug)]
struct Entry {
    item: Item,
    vectors: Vec<NormedVector>,
    ttl_minutes: Option<f64>,
    expires_at: Option<DateTime<Utc>>,
}

impl Entry {
    fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

impl std::fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryStore")
            .field("items", &self.lock().len())
            .field("index", &self.options.index)
            .field("ttl", &self.options.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

/// A put ready to apply: its embeddings computed beforehand.
struct Prepared {
    op: PutOp,
    vectors: Vec<NormedVector>,
    ttl: Option<f64>,
}

const NAME: &str = "InMemoryStore";

impl InMemoryStore {
    /// An empty store without index or expiry, on the system clock.
    pub fn new() -> Self {
        Self {
            entries: Arc::default(),
            options: StoreOptions::new(),
        }
    }

    /// The store with `options` (index, expiry, clock) in place of its
    /// own.
    #[must_use]
    pub fn with_options(mut self, options: StoreOptions) -> Self {
        self.options = options;
        self
    }

    /// The store's index, expiry and clock.
    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Deletes every expired item; returns how many.
    pub fn sweep_expired(&self) -> usize {
        let now = self.options.now();
        let mut entries = self.lock();
        let before = entries.len();
        entries.retain(|_, entry| !entry.expired(now));
        before - entries.len()
    }

    /// Starts a task sweeping expired items every `sweep_interval_minutes`
    /// of the TTL config (a minute if unset); it stops when the handle is
    /// dropped or stopped. Needs a tokio runtime.
    pub fn start_sweeper(&self) -> Sweeper {
        let store = self.clone();
        Sweeper::spawn(self.options.ttl.as_ref(), move || {
            let swept = store.sweep_expired();
            async move { Ok(swept) }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Namespace, String), Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks every op, embeds what the puts and queries need, all before
    /// anything changes.
    /// Takes the puts out of `ops` (their slots keep an empty delete,
    /// which the read pass skips).
    async fn prepare(
        &self,
        ops: &mut [Op],
    ) -> Result<(Vec<Option<Prepared>>, Vec<Option<Vec<f32>>>)> {
        let mut puts = Vec::with_capacity(ops.len());
        let mut queries = Vec::with_capacity(ops.len());
        let mut texts: Vec<String> = Vec::new();
        let mut spans = Vec::new();
        for op in ops.iter_mut() {
            let (mut put, mut query) = (None, None);
            match op {
                Op::Get(get) => {
                    validate_namespace(&get.namespace)?;
                    validate_key(&get.key)?;
                }
                Op::Put(op) => {
                    validate_namespace(&op.namespace)?;
                    validate_key(&op.key)?;
                    let ttl = self.options.ttl_minutes(op.ttl, NAME)?;
                    let start = texts.len();
                    if let (Some(index), Some(value)) = (&self.options.index, &op.value) {
                        texts.extend(index.texts(value, &op.index));
                    }
                    spans.push(start..texts.len());
                    put = Some(Prepared {
                        op: std::mem::replace(op, PutOp::delete(Vec::new(), String::new())),
                        vectors: Vec::new(),
                        ttl,
                    });
                }
                Op::Search(search) => {
                    Filter::new(&search.filter)?;
                    if let (Some(index), Some(text)) = (&self.options.index, &search.query) {
                        query = Some(index.embed_query(text).await?);
                    }
                }
                Op::ListNamespaces(_) => {}
            }
            puts.push(put);
            queries.push(query);
        }
        if let Some(index) = &self.options.index {
            let mut vectors = index.embed(&texts).await?.into_iter();
            let mut spans = spans.into_iter();
            for put in puts.iter_mut().flatten() {
                let span = spans.next().unwrap_or(0..0);
                put.vectors = vectors
                    .by_ref()
                    .take(span.len())
                    .map(NormedVector::new)
                    .collect();
            }
        }
        Ok((puts, queries))
    }

    fn apply_put(
        &self,
        entries: &mut BTreeMap<(Namespace, String), Entry>,
        prepared: Prepared,
        now: DateTime<Utc>,
    ) {
        let Prepared { op, vectors, ttl } = prepared;
        let address = (op.namespace, op.key);
        let Some(value) = op.value else {
            entries.remove(&address);
            return;
        };
        let expires_at = ttl.map(|minutes| TtlConfig::deadline(now, minutes));
        match entries.entry(address) {
            btree_map::Entry::Occupied(mut slot) => {
                let entry = slot.get_mut();
                entry.item.value = value;
                entry.item.updated_at = now;
                entry.vectors = vectors;
                entry.ttl_minutes = ttl;
                entry.expires_at = expires_at;
            }
            btree_map::Entry::Vacant(slot) => {
                let (namespace, key) = slot.key().clone();
                slot.insert(Entry {
                    item: Item::new(namespace, key, value, now, now),
                    vectors,
                    ttl_minutes: ttl,
                    expires_at,
                });
            }
        }
    }

    fn search(
        &self,
        entries: &mut BTreeMap<(Namespace, String), Entry>,
        op: &SearchOp,
        query: Option<&[f32]>,
        now: DateTime<Utc>,
    ) -> Result<Vec<SearchItem>> {
        let filter = Filter::new(&op.filter)?;
        let query = query.map(NormedQuery::new);
        let omit = self.options.omit_expired();
        // In address order (the map's): among equal scores the earlier
        // candidate is the one `result_order` puts first, so positions
        // break ties without comparing namespaces and keys.
        let candidates: Vec<&Entry> = entries
            .values()
            .filter(|e| has_prefix(&e.item.namespace, &op.namespace_prefix))
            .filter(|e| !(omit && e.expired(now)))
            .filter(|e| filter.matches(&e.item.value))
            .collect();
        let wanted = op.offset.saturating_add(op.limit).min(candidates.len());
        let mut ranked: Vec<(Option<f64>, usize)> = match &query {
            Some(query) => score_page_candidates(query, &candidates, wanted),
            None => (0..candidates.len()).map(|at| (None, at)).collect(),
        };
        // Only the first `offset + limit` need sorting; copy only the page.
        let order = |a: &(Option<f64>, usize), b: &(Option<f64>, usize)| {
            by_score(a.0, b.0).then(a.1.cmp(&b.1))
        };
        let wanted = wanted.min(ranked.len());
        if wanted == 0 {
            return Ok(Vec::new());
        }
        if wanted < ranked.len() {
            ranked.select_nth_unstable_by(wanted - 1, order);
            ranked.truncate(wanted);
        }
        ranked.sort_by(order);
        let page: Vec<SearchItem> = ranked
            .into_iter()
            .skip(op.offset)
            .map(|(score, at)| SearchItem::new(candidates[at].item.clone(), score))
            .collect();
        if self.options.refreshes(op.refresh_ttl) {
            for found in &page {
                let address = (found.item.namespace.clone(), found.item.key.clone());
                if let Some(entry) = entries.get_mut(&address) {
                    refresh(entry, now);
                }
            }
        }
        Ok(page)
    }
}

/// How many vector components a search scores exactly, or bounds on
/// 11-bit codes (about four times cheaper), before it splits the work
/// across threads (below, starting threads costs more than it saves).
const PARALLEL_COMPONENTS: usize = 1 << 20;
const PARALLEL_CODES: usize = 1 << 22;

/// How many candidates a search must have, and how many times the page,
/// before it ranks them on 11-bit codes first.
const PREFILTER_CANDIDATES: usize = 1024;
const PREFILTER_RATIO: usize = 8;

/// The candidates (by position) that could make the first `wanted`
/// results, with their exact scores; the others can be left out.
///
/// A large search bounds every candidate's score from 11-bit codes, finds
/// the `wanted`-th best lower bound, and scores exactly only candidates
/// whose upper bound reaches it: at least `wanted` candidates score at
/// least that much, so any other ranks after them. The scores are the
/// exact ones, so the page is the one scoring everything gives.
fn score_page_candidates(
    query: &NormedQuery<'_>,
    candidates: &[&Entry],
    wanted: usize,
) -> Vec<(Option<f64>, usize)> {
    let everything = || -> Vec<(Option<f64>, usize)> {
        let all: Vec<usize> = (0..candidates.len()).collect();
        score_all(query, candidates, &all)
    };
    if candidates.len() < PREFILTER_CANDIDATES
        || wanted.saturating_mul(PREFILTER_RATIO) > candidates.len()
    {
        return everything();
    }
    let bounds = in_parallel(query, candidates, PARALLEL_CODES, |slice| {
        slice
            .iter()
            .map(|e| {
                if e.vectors.is_empty() {
                    return Bound::Unscored;
                }
                match query.score_bounds(&e.vectors) {
                    Some((lower, upper)) => Bound::Within(lower, upper),
                    None => Bound::Exact,
                }
            })
            .collect()
    });
    let mut lowers: Vec<f32> = bounds
        .iter()
        .filter_map(|bound| match bound {
            Bound::Within(lower, _) => Some(*lower),
            _ => None,
        })
        .collect();
    if lowers.len() < wanted || wanted == 0 {
        return everything();
    }
    let (_, threshold, _) = lowers.select_nth_unstable_by(wanted - 1, |a, b| b.total_cmp(a));
    let threshold = *threshold;
    let keep: Vec<usize> = bounds
        .iter()
        .enumerate()
        .filter(|(_, bound)| match bound {
            Bound::Exact => true,
            Bound::Within(_, upper) => *upper >= threshold,
            Bound::Unscored => false,
        })
        .map(|(at, _)| at)
        .collect();
    score_all(query, candidates, &keep)
}

/// What codes say of a candidate's score.
enum Bound {
    /// Between these two.
    Within(f32, f32),
    /// Nothing: it must be scored exactly (a vector without codes).
    Exact,
    /// It has no vectors, so no score: it ranks after every scored one.
    Unscored,
}

/// The exact scores of the candidates at positions `keep`, with their
/// positions; a large batch is scored on the machine's threads.
fn score_all(
    query: &NormedQuery<'_>,
    candidates: &[&Entry],
    keep: &[usize],
) -> Vec<(Option<f64>, usize)> {
    let chosen: Vec<&Entry> = keep.iter().map(|at| candidates[*at]).collect();
    let scores = in_parallel(query, &chosen, PARALLEL_COMPONENTS, |slice| {
        slice.iter().map(|e| query.best_score(&e.vectors)).collect()
    });
    scores.into_iter().zip(keep.iter().copied()).collect()
}

/// `work` over the entries in order, split across the machine's threads
/// when they hold at least `threshold` vector components.
fn in_parallel<T: Send>(
    query: &NormedQuery<'_>,
    entries: &[&Entry],
    threshold: usize,
    work: impl Fn(&[&Entry]) -> Vec<T> + Sync,
) -> Vec<T> {
    let components: usize = entries.iter().map(|e| e.vectors.len() * query.dims()).sum();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || components < threshold {
        return work(entries);
    }
    let chunk = entries.len().div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let parts: Vec<_> = entries
            .chunks(chunk)
            .map(|slice| scope.spawn(move || work(slice)))
            .collect();
        parts
            .into_iter()
            // The work is plain arithmetic and cannot panic; if a thread
            // did, doing its slice again here gives the same answer.
            .zip(entries.chunks(chunk))
            .flat_map(|(part, slice)| part.join().unwrap_or_else(|_| work(slice)))
            .collect()
    })
}

/// Extends an unexpired entry's deadline by its TTL.
fn refresh(entry: &mut Entry, now: DateTime<Utc>) {
    if let Some(minutes) = entry.ttl_minutes
        && !entry.expired(now)
    {
        entry.expires_at = Some(TtlConfig::deadline(now, minutes));
    }
}

impl Store for InMemoryStore {
    async fn batch(&self, mut ops: Vec<Op>) -> Result<Vec<OpResult>> {
        refuse_deep_values(&mut ops)?;
        let (puts, queries) = self.prepare(&mut ops).await?;
        let now = self.options.now();
        let omit = self.options.omit_expired();
        let mut entries = self.lock();
        // Reads see the store as it was before the batch.
        let mut results = Vec::with_capacity(ops.len());
        for (op, query) in ops.iter().zip(queries) {
            let result = match op {
                Op::Get(get) => {
                    let address = (get.namespace.clone(), get.key.clone());
                    let refresh_it = self.options.refreshes(get.refresh_ttl);
                    let found = entries
                        .get_mut(&address)
                        .filter(|e| !(omit && e.expired(now)));
                    OpResult::Item(found.map(|entry| {
                        if refresh_it {
                            refresh(entry, now);
                        }
                        entry.item.clone()
                    }))
                }
                Op::Put(_) => OpResult::Done,
                Op::Search(search) => {
                    OpResult::Items(self.search(&mut entries, search, query.as_deref(), now)?)
                }
                Op::ListNamespaces(list) => {
                    let live: Vec<&Namespace> = entries
                        .values()
                        .filter(|e| !(omit && e.expired(now)))
                        .map(|e| &e.item.namespace)
                        .collect();
                    OpResult::Namespaces(list_namespaces(live, list))
                }
            };
            results.push(result);
        }
        // Then the writes, in order: the last put of a key wins.
        for put in puts.into_iter().flatten() {
            self.apply_put(&mut entries, put, now);
        }
        Ok(results)
    }

    fn capabilities(&self) -> StoreCapabilities {
        self.options.capabilities()
    }
}

/// A running TTL sweeper; dropping it stops the sweeper.
#[derive(Debug)]
pub struct Sweeper(tokio::task::JoinHandle<()>);

impl Sweeper {
    /// Runs `sweep` every `sweep_interval_minutes` of `ttl` (a minute when
    /// unset) on a tokio task, logging what it swept and any failure (a
    /// failed sweep is tried again next time). For store backends: each
    /// offers a `start_sweeper` built on it.
    pub fn spawn<F, Fut>(ttl: Option<&TtlConfig>, mut sweep: F) -> Self
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<usize>> + Send,
    {
        let minutes = ttl
            .and_then(|ttl| ttl.sweep_interval_minutes)
            .unwrap_or(1.0);
        let interval = Duration::from_secs_f64((minutes * 60.0).clamp(0.001, 1.0e9));
        Self(tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                match sweep().await {
                    Ok(0) => {}
                    Ok(swept) => tracing::debug!(swept, "swept expired store items"),
                    Err(error) => tracing::warn!(%error, "sweeping expired store items failed"),
                }
            }
        }))
    }

    /// Stops the sweeper; returns whether it was running.
    pub fn stop(self) -> bool {
        let running = !self.0.is_finished();
        self.0.abort();
        running
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}
