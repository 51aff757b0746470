//! Random batches run on a backend and on `InMemoryStore` side by side,
//! with one clock: every result must be equal (errors by kind, and refused
//! input by message too), and so must every sweep. Search scores are
//! compared bit for bit unless the backend computes them with other
//! arithmetic ([`ScoreTolerance`]).
//!
//! Beside short texts that make ops meet the same items often, the
//! alphabet holds texts at and just over every limit of the limit table
//! (docs/LIMITS.md): keys and labels, namespaces as deep and as long as
//! allowed and one more, NUL characters, and values as deep as allowed and
//! one level more.

use serde_json::{Value as Json, json};
use stategraph_core::ErrorKind;
use stategraph_core::limits::{
    MAX_DEPTH, MAX_KEY_BYTES, MAX_LABEL_BYTES, MAX_NAMESPACE_BYTES, MAX_NAMESPACE_LABELS,
};
use stategraph_llm::HashEmbeddings;
use stategraph_store::{
    GetOp, InMemoryStore, IndexConfig, IndexFields, Item, ListNamespacesOp, Namespace, Op,
    OpResult, PutOp, SearchItem, SearchOp, Store, StoreError, Ttl, TtlConfig,
};

use super::{Backend, ManualClock, StoreOptions, obj};

/// SplitMix64: a tiny deterministic generator, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &["red", "apple", "zebra", "dog", "blue", "sky", "pie"];

/// The texts ops draw their labels, keys and namespaces from.
struct Alphabet {
    /// Short labels, and one at and one over the label limit.
    labels: Vec<String>,
    /// Short keys, and keys at and over the key limit or holding a NUL.
    keys: Vec<String>,
    /// Few namespaces, so that ops meet the same items often.
    namespaces: Vec<Namespace>,
    /// Namespaces at and over the limits of depth and length.
    limit_namespaces: Vec<Namespace>,
}

impl Alphabet {
    fn new() -> Self {
        let owned = |texts: &[&str]| texts.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        let mut labels = owned(&[
            "a", "b", "foo", "foobar", "a%b", "user_1", "star*", "nul\u{0}",
        ]);
        let long_label = "l".repeat(MAX_LABEL_BYTES);
        labels.extend([long_label.clone(), "m".repeat(MAX_LABEL_BYTES + 1)]);
        let mut keys = owned(&["k1", "k2", "k3", "k.4", ""]);
        keys.extend([
            "k".repeat(MAX_KEY_BYTES),
            "q".repeat(MAX_KEY_BYTES + 1),
            "k\u{0}5".to_owned(),
        ]);
        let namespaces = [
            &["a"][..],
            &["a", "b"],
            &["a", "b", "foo"],
            &["foo"],
            &["foobar", "a"],
            &["a%b", "user_1"],
            &["star*", "b", "a"],
            &["nul\u{0}", "foo"],
        ]
        .iter()
        .map(|labels| owned(labels))
        .collect();
        let deep = |depth: usize| -> Namespace {
            (0..depth)
                .map(|i| ["a", "b", "foo"][i % 3].to_owned())
                .collect()
        };
        // 256 + 3 × 255 bytes and 3 dots: exactly the namespace limit;
        // one byte longer with a 256-byte last label.
        let wide = |last: usize| {
            let mut labels = vec![long_label.clone()];
            labels.extend(["w", "x"].map(|c| c.repeat(MAX_LABEL_BYTES - 1)));
            labels.push("y".repeat(last));
            labels
        };
        let limit_namespaces = vec![
            deep(MAX_NAMESPACE_LABELS),
            deep(MAX_NAMESPACE_LABELS + 1),
            wide(MAX_LABEL_BYTES - 1),
            wide(MAX_LABEL_BYTES),
            vec![long_label.clone(), "foo".to_owned()],
        ];
        Self {
            labels,
            keys,
            namespaces,
            limit_namespaces,
        }
    }

    fn namespace(&self, rng: &mut Rng) -> Namespace {
        if rng.chance(2) {
            return vec![(*rng.pick(&["bad.label", "", "langgraph"])).to_owned()];
        }
        if rng.chance(5) {
            return self.limit_namespaces[rng.below(self.limit_namespaces.len())].clone();
        }
        if rng.chance(5) {
            let depth = 1 + rng.below(3);
            return (0..depth).map(|_| self.label(rng)).collect();
        }
        self.namespaces[rng.below(self.namespaces.len())].clone()
    }

    fn label(&self, rng: &mut Rng) -> String {
        self.labels[rng.below(self.labels.len())].clone()
    }

    /// Mostly the short keys; the key at the limit often enough to be
    /// read again, the refused ones rarely.
    fn key(&self, rng: &mut Rng) -> String {
        let pick = match rng.below(100) {
            0..=84 => rng.below(5),
            85..=93 => 5,
            94..=96 => 6,
            _ => 7,
        };
        self.keys[pick].clone()
    }
}

fn words(rng: &mut Rng) -> String {
    let count = 1 + rng.below(3);
    (0..count)
        .map(|_| *rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

fn number(rng: &mut Rng) -> Json {
    match rng.below(5) {
        0 => json!(rng.below(40) as i64 - 3),
        1 => json!(rng.below(40) as f64 + 0.5),
        2 => json!(9_007_199_254_740_993_u64),
        3 => json!(rng.below(40).to_string()),
        _ => json!(rng.below(10)),
    }
}

/// `[[…[1]…]]`, `depth` levels.
fn nested(depth: usize) -> Json {
    (0..depth).fold(json!(1), |inner, _| json!([inner]))
}

fn value(rng: &mut Rng) -> Json {
    let mut value = json!({"text": words(rng), "n": number(rng), "tag": *rng.pick(&["a", "b"])});
    // As deep as a value may nest (the item's object is one level), or
    // one level more.
    match rng.below(100) {
        0 | 1 => value["deep"] = nested(MAX_DEPTH - 1),
        2 => value["deep"] = nested(MAX_DEPTH),
        _ => {}
    }
    if rng.chance(50) {
        value["tags"] = json!([words(rng), words(rng)]);
    }
    if rng.chance(30) {
        value["nested"] = json!({"x": number(rng), "flag": rng.chance(50)});
    }
    value
}

fn filter(rng: &mut Rng) -> Json {
    let n = number(rng);
    match rng.below(12) {
        0 => json!({"tag": "a"}),
        1 => json!({"n": {"$gt": n}}),
        2 => json!({"n": {"$lte": n}, "tag": "b"}),
        3 => json!({"n": n}),
        4 => json!({"nested.x": {"$gte": n}}),
        5 => json!({"nested.flag": true}),
        6 => json!({"n": {"$ne": n}}),
        7 => json!({"tags": {"$lt": "z"}}),
        8 if rng.chance(20) => json!({"a b": 1}),
        _ => json!({}),
    }
}

fn pattern(alphabet: &Alphabet, rng: &mut Rng) -> Namespace {
    let len = 1 + rng.below(2);
    (0..len)
        .map(|_| {
            if rng.chance(30) {
                "*".to_owned()
            } else {
                alphabet.label(rng)
            }
        })
        .collect()
}

fn op(alphabet: &Alphabet, rng: &mut Rng) -> Op {
    match rng.below(10) {
        0..=3 => {
            let ns = alphabet.namespace(rng);
            let key = alphabet.key(rng);
            if rng.chance(20) {
                return Op::Put(PutOp::delete(ns, key));
            }
            // Mostly whole multiples of 5 s, which the clock's steps hit
            // exactly (an item expires when the clock reaches its deadline).
            let ttl = match rng.below(10) {
                0..=4 => Ttl::Default,
                5 | 6 => Ttl::Never,
                7 | 8 => Ttl::Minutes(*rng.pick(&[0.0, 0.25, 0.5, 1.0, -1.0])),
                _ => Ttl::Minutes(rng.below(300) as f64 / 100.0),
            };
            let index = match rng.below(5) {
                0..=2 => IndexFields::Default,
                3 => IndexFields::No,
                _ => IndexFields::Fields(vec!["tags[*]".into()]),
            };
            Op::Put(
                PutOp::put(ns, key, obj(value(rng)))
                    .with_ttl(ttl)
                    .with_index(index),
            )
        }
        4 | 5 => {
            let mut get = GetOp::new(alphabet.namespace(rng), alphabet.key(rng));
            get.refresh_ttl = rng.chance(70);
            Op::Get(get)
        }
        6..=8 => {
            let depth = rng.below(3);
            let prefix = (0..depth).map(|_| alphabet.label(rng)).collect();
            let mut search = SearchOp::new(prefix)
                .with_filter(obj(filter(rng)))
                .with_page(rng.below(7), rng.below(4))
                .with_refresh_ttl(rng.chance(70));
            if rng.chance(50) {
                search = search.with_query(words(rng));
            }
            Op::Search(search)
        }
        _ => {
            let mut list = ListNamespacesOp::new().with_page(1 + rng.below(10), rng.below(3));
            if rng.chance(50) {
                list = list.with_prefix(pattern(alphabet, rng));
            }
            if rng.chance(30) {
                list = list.with_suffix(pattern(alphabet, rng));
            }
            if rng.chance(30) {
                list = list.with_max_depth(1 + rng.below(3));
            }
            Op::ListNamespaces(list)
        }
    }
}

/// The configurations compared.
pub fn configurations() -> Vec<(&'static str, Option<IndexConfig>, Option<TtlConfig>)> {
    let index = || IndexConfig::new(16, HashEmbeddings::new(16)).with_fields(["text", "nested.x"]);
    vec![
        (
            "index, ttl, omit, refresh",
            Some(index()),
            Some(
                TtlConfig::default()
                    .with_default_ttl(1.0)
                    .with_omit_expired(true),
            ),
        ),
        (
            "ttl, no omit, no refresh",
            None,
            Some(
                TtlConfig::default()
                    .with_default_ttl(0.5)
                    .with_refresh_on_read(false),
            ),
        ),
        (
            "ttl, no omit, refresh",
            None,
            Some(TtlConfig::default().with_default_ttl(0.25)),
        ),
        ("index, no ttl", Some(index()), None),
    ]
}

/// How search scores of the backend are compared with `InMemoryStore`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ScoreTolerance {
    /// Bit for bit, and results in the same order: for backends that score
    /// with `stategraph-store`'s shared Rust code.
    #[default]
    Exact,
    /// Each result's score within this absolute difference of the score
    /// at the same rank. Results whose scores are within it of each other
    /// (a chain of such neighbours) may come in another order, and where
    /// such a group reaches the first or last result of a page, it may hold
    /// other items of the same scores (rounding moved the page's edge).
    /// Every other part of a result (namespace, key, value, times, which
    /// results are scored) and every other answer stays exact. For
    /// backends that score with other arithmetic (the database's `f32`).
    Absolute(f64),
}

impl ScoreTolerance {
    /// Whether the answers to `ops` agree; `Err` says where not.
    fn check(self, ops: &[Op], got: &[OpResult], expected: &[OpResult]) -> Result<(), String> {
        let Self::Absolute(tolerance) = self else {
            return if got == expected {
                Ok(())
            } else {
                Err("the answers differ".to_owned())
            };
        };
        if got.len() != expected.len() {
            return Err(format!(
                "{} answers, expected {}",
                got.len(),
                expected.len()
            ));
        }
        for (i, (pair, op)) in got.iter().zip(expected).zip(ops).enumerate() {
            match (pair, op) {
                ((OpResult::Items(got), OpResult::Items(expected)), Op::Search(search)) => {
                    // Items before or after the page exist only where it
                    // starts at an offset, or is full.
                    let edges = (search.offset > 0, expected.len() == search.limit);
                    same_page(got, expected, tolerance, edges)
                        .map_err(|why| format!("op {i}: {why}"))?;
                }
                ((got, expected), _) if got == expected => {}
                _ => return Err(format!("op {i}: the answers differ")),
            }
        }
        Ok(())
    }
}

/// Whether a page of search results agrees with the expected one within
/// `tolerance` (see [`ScoreTolerance::Absolute`]); `edges` says whether
/// results may exist before the page and after it.
fn same_page(
    got: &[SearchItem],
    expected: &[SearchItem],
    tolerance: f64,
    edges: (bool, bool),
) -> Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!(
            "{} results, expected {}",
            got.len(),
            expected.len()
        ));
    }
    for (rank, (got, expected)) in got.iter().zip(expected).enumerate() {
        let close = match (got.score, expected.score) {
            (Some(a), Some(b)) => (a - b).abs() <= tolerance,
            (a, b) => a == b,
        };
        if !close {
            return Err(format!(
                "rank {rank}: score {:?}, expected {:?}",
                got.score, expected.score
            ));
        }
    }
    // Groups of ranks whose expected scores are within the tolerance of
    // their neighbour's; unscored results are exact, each its own group.
    let mut start = 0;
    while start < expected.len() {
        let mut end = start + 1;
        while end < expected.len()
            && matches!(
                (expected[end - 1].score, expected[end].score),
                (Some(a), Some(b)) if (a - b).abs() <= tolerance
            )
        {
            end += 1;
        }
        let at_edge = (edges.0 && start == 0) || (edges.1 && end == expected.len());
        let (got_items, expected_items) = (
            by_address(&got[start..end]),
            by_address(&expected[start..end]),
        );
        let agree = if at_edge {
            // Items in both must be equal; others may have moved across
            // the page's edge.
            got_items.iter().all(|item| {
                expected_items.iter().all(|other| {
                    (&other.namespace, &other.key) != (&item.namespace, &item.key) || other == item
                })
            })
        } else {
            got_items == expected_items
        };
        if !agree {
            return Err(format!("ranks {start}..{end} hold other items"));
        }
        start = end;
    }
    Ok(())
}

/// The items of `results`, by namespace and key.
fn by_address(results: &[SearchItem]) -> Vec<&Item> {
    let mut items: Vec<&Item> = results.iter().map(|found| &found.item).collect();
    items.sort_by(|a, b| (&a.namespace, &a.key).cmp(&(&b.namespace, &b.key)));
    items
}

/// Runs `batches` random batches (1 to 4 ops each) from `seed` on a store
/// of `backend` and on an `InMemoryStore`, comparing every answer exactly.
pub async fn compare_with_memory(backend: &impl Backend, seed: u64, batches: usize) {
    compare_with_memory_within(backend, seed, batches, ScoreTolerance::Exact).await;
}

/// [`compare_with_memory`], comparing search scores within `scores`.
pub async fn compare_with_memory_within(
    backend: &impl Backend,
    seed: u64,
    batches: usize,
    scores: ScoreTolerance,
) {
    for (name, index, ttl) in configurations() {
        let clock = ManualClock::new();
        let mut options = StoreOptions::new().with_clock(&clock);
        if let Some(index) = index {
            options = options.with_index(index);
        }
        if let Some(ttl) = ttl {
            options = options.with_ttl(ttl);
        }
        let memory = InMemoryStore::new().with_options(options.clone());
        let store = backend.store(options).await;
        let mut rng = Rng(seed);
        let mut seen = Seen::default();
        let alphabet = Alphabet::new();
        for batch in 0..batches {
            let ops: Vec<Op> = (0..1 + rng.below(4))
                .map(|_| op(&alphabet, &mut rng))
                .collect();
            let expected = memory.batch(ops.clone()).await;
            let got = store.batch(ops.clone()).await;
            match (&expected, &got) {
                (Ok(expected), Ok(got)) => {
                    if scores == ScoreTolerance::Exact {
                        assert_eq!(
                            got, expected,
                            "{name}: batch {batch} (seed {seed}) differs: {ops:#?}"
                        );
                    } else if let Err(why) = scores.check(&ops, got, expected) {
                        panic!(
                            "{name}: batch {batch} (seed {seed}) differs beyond {scores:?}: \
                             {why}\ngot {got:#?}\nexpected {expected:#?}\nops {ops:#?}"
                        );
                    }
                    seen.count(expected);
                }
                (Err(expected), Err(got)) => {
                    assert_eq!(
                        got.kind(),
                        expected.kind(),
                        "{name}: batch {batch}: {got} vs {expected}"
                    );
                    // Refused input is refused by the same shared rule.
                    if expected.kind() == ErrorKind::InvalidInput {
                        assert_eq!(
                            got.to_string(),
                            expected.to_string(),
                            "{name}: batch {batch} (seed {seed}): {ops:#?}"
                        );
                    }
                    seen.errors += 1;
                    seen.limit_errors += usize::from(matches!(
                        expected,
                        StoreError::Limit(_) | StoreError::ValueTooDeep { .. }
                    ));
                }
                _ => {
                    panic!("{name}: batch {batch} (seed {seed}): {got:?} vs {expected:?}: {ops:#?}")
                }
            }
            match rng.below(20) {
                0..=7 => {}
                8..=15 => clock.advance(chrono::Duration::seconds(5 * rng.below(7) as i64)),
                16 | 17 => clock.advance(chrono::Duration::milliseconds(rng.below(20_000) as i64)),
                18 => clock.advance(chrono::Duration::nanoseconds(rng.below(1_000_000) as i64)),
                _ => clock.advance(chrono::Duration::seconds(rng.below(120) as i64)),
            }
            if rng.chance(3) {
                let swept = memory.sweep_expired();
                assert_eq!(
                    backend.sweep(&store).await,
                    swept,
                    "{name}: sweep after batch {batch}"
                );
                seen.swept += swept;
            }
        }
        assert_eq!(
            backend.sweep(&store).await,
            memory.sweep_expired(),
            "{name}: last sweep"
        );
        seen.check(name, batches);
    }
}

/// What the compared answers held, to make sure the comparison was not
/// vacuous (gets that found something, searches with several results...).
#[derive(Debug, Default)]
struct Seen {
    hits: usize,
    misses: usize,
    long_searches: usize,
    scored: usize,
    listings: usize,
    errors: usize,
    /// Batches refused by the limit table.
    limit_errors: usize,
    /// Items read back whose key or namespace is at a limit.
    at_limits: usize,
    swept: usize,
}

impl Seen {
    fn count(&mut self, results: &[OpResult]) {
        let at_limits = |item: &Item| {
            let joined = item.namespace.iter().map(String::len).sum::<usize>()
                + item.namespace.len().saturating_sub(1);
            item.key.len() == MAX_KEY_BYTES
                || item.namespace.len() == MAX_NAMESPACE_LABELS
                || joined == MAX_NAMESPACE_BYTES
        };
        for result in results {
            match result {
                OpResult::Item(Some(item)) => {
                    self.hits += 1;
                    self.at_limits += usize::from(at_limits(item));
                }
                OpResult::Item(None) => self.misses += 1,
                OpResult::Items(items) => {
                    self.long_searches += usize::from(items.len() > 1);
                    self.scored += items.iter().filter(|i| i.score.is_some()).count();
                    self.at_limits += items.iter().filter(|i| at_limits(&i.item)).count();
                }
                OpResult::Namespaces(found) => self.listings += usize::from(found.len() > 1),
                _ => {}
            }
        }
    }

    fn check(&self, name: &str, batches: usize) {
        let enough = batches / 50;
        let indexed = name.starts_with("index");
        let expiring = name.contains("ttl,");
        assert!(
            self.hits > enough
                && self.misses > enough
                && self.long_searches > enough
                && self.listings > enough
                && self.errors > 0
                && self.limit_errors > 0
                && self.at_limits > 0
                && (!indexed || self.scored > enough)
                && (!expiring || self.swept > 0),
            "{name}: the random batches exercised too little: {self:?}"
        );
    }
}
