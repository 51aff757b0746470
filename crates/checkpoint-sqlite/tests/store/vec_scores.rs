//! With the `sqlite-vec` feature: SQLite itself computes search scores, and
//! they agree with the shared Rust scoring within the tolerance the
//! differential uses ([`crate::SCORES`]).

use serde_json::json;
use stategraph_checkpoint_sqlite::SqliteStore;
use stategraph_llm::Embeddings;
use stategraph_store::{IndexConfig, SearchOp, Store, StoreOptions, best_score, ns};

use crate::ScoreTolerance;

/// An embedder of fixed vectors: `vector(text)`.
#[derive(Debug)]
struct Fixed(fn(&str) -> Vec<f32>);

impl Embeddings for Fixed {
    async fn embed_documents(&self, texts: &[String]) -> stategraph_llm::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| (self.0)(text)).collect())
    }
}

const DIMS: usize = 64;

/// The 64-component vectors of the first test, by name.
fn named(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0_f32; DIMS];
    match text {
        "ones" => vector.fill(1.0),
        // Summed in order (sqlite-vec) the dot product with "ones" is
        // 1e8 + 1 (= 1e8 in f32) + ... - 1e8 = 0; summed in 32 lanes (Rust)
        // the two large components share a lane and cancel, leaving 16.
        "cancel" => {
            vector[0] = 1e8;
            vector[1..=16].fill(1.0);
            vector[32] = -1e8;
        }
        "half" => vector[..DIMS / 2].fill(1.0),
        _ => {}
    }
    vector
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_connections_have_sqlite_vec() {
    let store = SqliteStore::in_memory().await.unwrap();
    let version = store.sqlite_vec_version().await.unwrap();
    assert!(version.starts_with("v0."), "{version}");
    let files = crate::Files::new();
    let store = SqliteStore::open(files.next_path()).await.unwrap();
    // A file store reads on its reader pool, whose connections get it too.
    assert_eq!(store.sqlite_vec_version().await.unwrap(), version);
}

/// The score of "cancel" is the one sqlite-vec's sequential `f32` sums
/// give (exactly 0), not Rust's (about 1.4e-8): SQLite computed it. An
/// all-zero vector (NaN, so `NULL`, in sqlite-vec) still scores 0 as in
/// Rust, and an item without vectors stays unscored and last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_computes_the_scores() {
    let index = IndexConfig::new(DIMS, Fixed(named)).with_fields(["text"]);
    let store = SqliteStore::in_memory()
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_index(index));
    for name in ["cancel", "half", "zero"] {
        store
            .put(&["v"], name, json!({"text": name}))
            .await
            .unwrap();
    }
    store
        .put(&["v"], "none", json!({"other": 1}))
        .await
        .unwrap();
    let found = store
        .search(SearchOp::new(ns(["v"])).with_query("ones"))
        .await
        .unwrap();
    let scores: Vec<(&str, Option<f64>)> = found
        .iter()
        .map(|found| (found.item.key.as_str(), found.score))
        .collect();

    let rust = |name| best_score(&named("ones"), &[named(name)]);
    let in_rust = rust("cancel").unwrap();
    assert!(
        in_rust > 1e-9,
        "Rust's lanes keep the small components: {in_rust}"
    );
    assert_eq!(scores[0].0, "half");
    let half = scores[0].1.unwrap();
    assert!((half - rust("half").unwrap()).abs() < 1e-6, "{half}");
    assert_eq!(
        &scores[1..],
        [("cancel", Some(0.0)), ("zero", Some(0.0)), ("none", None)],
        "sqlite-vec's sum of \"cancel\" is 0 where Rust's is {in_rust}"
    );
    assert_eq!(rust("zero"), Some(0.0));
}

/// A deterministic vector of 384 components in [-1, 1) from a seed
/// (SplitMix64), for texts `"<seed>"`.
fn random(text: &str) -> Vec<f32> {
    let mut state: u64 = text.parse().unwrap_or(0);
    (0..384)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// At the dimensions of real embedders (384), SQLite's scores stay within
/// the differential's tolerance of Rust's, each item by its best vector,
/// while not being Rust's to the bit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scores_agree_with_rust_within_the_tolerance_at_384_dimensions() {
    let ScoreTolerance::Absolute(tolerance) = crate::SCORES else {
        panic!("the sqlite-vec feature compares scores within a tolerance");
    };
    let index = IndexConfig::new(384, Fixed(random)).with_fields(["texts[*]"]);
    let store = SqliteStore::in_memory()
        .await
        .unwrap()
        .with_options(StoreOptions::new().with_index(index));
    let items = 300_u64;
    for i in 0..items {
        // One to three vectors per item.
        let texts: Vec<String> = (0..1 + i % 3)
            .map(|j| (1 + i * 3 + j).to_string())
            .collect();
        store
            .put(&["r"], &i.to_string(), json!({ "texts": texts }))
            .await
            .unwrap();
    }
    let found = store
        .search(SearchOp::new(ns(["r"])).with_query("0").with_page(1_000, 0))
        .await
        .unwrap();
    assert_eq!(found.len(), 300);
    let query = random("0");
    let mut largest = 0.0_f64;
    for found in &found {
        let i: u64 = found.item.key.parse().unwrap();
        let vectors: Vec<Vec<f32>> = (0..1 + i % 3)
            .map(|j| random(&(1 + i * 3 + j).to_string()))
            .collect();
        let expected = best_score(&query, &vectors).unwrap();
        let got = found.score.unwrap();
        assert!(
            (got - expected).abs() <= tolerance,
            "item {i}: {got} vs {expected}"
        );
        largest = largest.max((got - expected).abs());
    }
    assert!(largest > 0.0, "every score is Rust's to the bit");
}
