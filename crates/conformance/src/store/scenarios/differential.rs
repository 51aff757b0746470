//! Random batches run on a backend and on `InMemoryStore` side by side,
//! with one clock: every result must be equal (errors by kind), and so
//! must every sweep. Identical in the store

use serde_json::{Value as Json, json};
use stategraph_llm::HashEmbeddings;
use stategraph_store::{
    GetOp, InMemoryStore, IndexConfig, IndexFields, ListNamespacesOp, Namespace, Op, OpResult,
    PutOp, SearchOp, Store, Ttl, TtlConfig,
};

use super::{Backend, ManualClock, Options, obj};

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

const LABELS: &[&str] = &[
    "a", "b", "foo", "foobar", "a%b", "user_1", "star*", "nul\u{0}",
];
const KEYS: &[&str] = &["k1", "k2", "k3", "k.4", ""];
const WORDS: &[&str] = &["red", "apple", "zebra", "dog", "blue", "sky", "pie"];

/// Few namespaces, so that ops meet the same items often.
const NAMESPACES: &[&[&str]] = &[
    &["a"],
    &["a", "b"],
    &["a", "b", "foo"],
    &["foo"],
    &["foobar", "a"],
    &["a%b", "user_1"],
    &["star*", "b", "a"],
    &["nul\u{0}", "foo"],
];

fn namespace(rng: &mut Rng) -> Namespace {
    if rng.chance(2) {
        return vec![(*rng.pick(&["bad.label", "", "langgraph"])).to_owned()];
    }
    if rng.chance(5) {
        let depth = 1 + rng.below(3);
        return (0..depth).map(|_| (*rng.pick(LABELS)).to_owned()).collect();
    }
    rng.pick(NAMESPACES)
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
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

fn value(rng: &mut Rng) -> Json {
    let mut value = json!({"text": words(rng), "n": number(rng), "tag": *rng.pick(&["a", "b"])});
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

fn pattern(rng: &mut Rng) -> Namespace {
    let len = 1 + rng.below(2);
    (0..len)
        .map(|_| {
            if rng.chance(30) {
                "*".to_owned()
            } else {
                (*rng.pick(LABELS)).to_owned()
            }
        })
        .collect()
}

fn op(rng: &mut Rng) -> Op {
    match rng.below(10) {
        0..=3 => {
            let ns = namespace(rng);
            let key = *rng.pick(KEYS);
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
            let mut get = GetOp::new(namespace(rng), *rng.pick(KEYS));
            get.refresh_ttl = rng.chance(70);
            Op::Get(get)
        }
        6..=8 => {
            let depth = rng.below(3);
            let prefix = (0..depth).map(|_| (*rng.pick(LABELS)).to_owned()).collect();
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
                list = list.with_prefix(pattern(rng));
            }
            if rng.chance(30) {
                list = list.with_suffix(pattern(rng));
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

/// Runs `batches` random batches (1 to 4 ops each) from `seed` on a store
/// of `backend` and on an `InMemoryStore`, comparing every answer.
pub async fn compare_with_memory(backend: &impl Backend, seed: u64, batches: usize) {
    for (name, index, ttl) in configurations() {
        let clock = ManualClock::new();
        let mut options = Options::default().clock(&clock);
        let mut memory = InMemoryStore::new().with_clock(clock.clock());
        if let Some(index) = index {
            memory = memory.with_index(index.clone());
            options = options.index(index);
        }
        if let Some(ttl) = ttl {
            memory = memory.with_ttl(ttl);
            options = options.ttl(ttl);
        }
        let store = backend.store(options).await;
        let mut rng = Rng(seed);
        let mut seen = Seen::default();
        for batch in 0..batches {
            let ops: Vec<Op> = (0..1 + rng.below(4)).map(|_| op(&mut rng)).collect();
            let expected = memory.batch(ops.clone()).await;
            let got = store.batch(ops.clone()).await;
            match (&expected, &got) {
                (Ok(expected), Ok(got)) => {
                    assert_eq!(
                        got, expected,
                        "{name}: batch {batch} (seed {seed}) differs: {ops:#?}"
                    );
                    seen.count(expected);
                }
                (Err(expected), Err(got)) => {
                    assert_eq!(
                        got.kind(),
                        expected.kind(),
                        "{name}: batch {batch}: {got} vs {expected}"
                    );
                    seen.errors += 1;
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
    swept: usize,
}

impl Seen {
    fn count(&mut self, results: &[OpResult]) {
        for result in results {
            match result {
                OpResult::Item(Some(_)) => self.hits += 1,
                OpResult::Item(None) => self.misses += 1,
                OpResult::Items(items) => {
                    self.long_searches += usize::from(items.len() > 1);
                    self.scored += items.iter().filter(|i| i.score.is_some()).count();
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
                && (!indexed || self.scored > enough)
                && (!expiring || self.swept > 0),
            "{name}: the random batches exercised too little: {self:?}"
        );
    }
}
