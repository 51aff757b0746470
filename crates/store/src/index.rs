//! The semantic index: which texts of an item are embedded, and scoring.

use std::fmt;

use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_llm::{
    Embeddings, SharedEmbeddings, cosine_from_parts, cosine_similarity, dot, norm,
};

use crate::path::texts_at_path;
use crate::{IndexFields, Result, StoreError};

/// A store's semantic index (LangGraph's `IndexConfig`): the embedder, the
/// vector length it gives, and the field paths embedded by default (`$`,
/// the whole value, unless set).
#[derive(Clone)]
pub struct IndexConfig {
    /// The vector length.
    pub dims: usize,
    /// The embedder.
    pub embedder: SharedEmbeddings,
    /// The field paths embedded when a put does not say.
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// An index of `dims`-long vectors from `embedder`, embedding whole
    /// values by default.
    pub fn new(dims: usize, embedder: impl Embeddings) -> Self {
        Self {
            dims,
            embedder: std::sync::Arc::new(embedder),
            fields: vec!["$".to_owned()],
        }
    }

    /// Sets the default field paths.
    #[must_use]
    pub fn with_fields(mut self, fields: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }

    /// The texts a put embeds: one per text found at each field path.
    pub fn texts(&self, value: &JsonMap, index: &IndexFields) -> Vec<String> {
        let fields = match index {
            IndexFields::No => return Vec::new(),
            IndexFields::Default => &self.fields,
            IndexFields::Fields(fields) => fields,
        };
        let value = Json::Object(value.clone());
        fields
            .iter()
            .flat_map(|path| texts_at_path(&value, path))
            .collect()
    }

    /// Embeds `texts` in one call, checking every vector's length.
    ///
    /// # Errors
    /// [`StoreError::Embedding`] when the embedder fails;
    /// [`StoreError::Dimensions`] when it returns vectors of another length
    /// or another count.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self
            .embedder
            .embed_documents(texts)
            .await
            .map_err(StoreError::Embedding)?;
        if vectors.len() != texts.len() {
            return Err(StoreError::Embedding(stategraph_llm::Error::provider(
                "embeddings",
                format!("{} vectors for {} texts", vectors.len(), texts.len()),
            )));
        }
        self.check(&vectors)?;
        Ok(vectors)
    }

    /// Embeds a search query.
    ///
    /// # Errors
    /// As [`embed`](Self::embed).
    pub async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let vector = self
            .embedder
            .embed_query(query)
            .await
            .map_err(StoreError::Embedding)?;
        self.check(std::slice::from_ref(&vector))?;
        Ok(vector)
    }

    fn check(&self, vectors: &[Vec<f32>]) -> Result<()> {
        match vectors.iter().find(|v| v.len() != self.dims) {
            Some(bad) => Err(StoreError::Dimensions {
                expected: self.dims,
                got: bad.len(),
            }),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

/// An item's score for a query: its best vector's cosine similarity
/// (`None` for an item without vectors).
pub fn best_score(query: &[f32], vectors: &[Vec<f32>]) -> Option<f64> {
    vectors
        .iter()
        .map(|v| f64::from(cosine_similarity(query, v)))
        .reduce(f64::max)
}

/// A stored vector with its norm, computed once when it is stored, so a
/// search computes one dot product per vector.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NormedVector {
    values: Vec<f32>,
    norm: f32,
    // `None` for a vector with a non-finite or no nonzero component.
    quantized: Option<Quantized>,
}

impl NormedVector {
    pub(crate) fn new(values: Vec<f32>) -> Self {
        let norm = norm(&values);
        let quantized = Quantized::new(&values);
        Self {
            values,
            norm,
            quantized,
        }
    }
}

/// A vector in 11-bit codes (`value ≈ code × scale`, stored as `i16`) with
/// what bounds the error of a dot product taken on codes: a large search
/// scores every item on codes (half the memory to read, integer products),
/// then exactly only the items whose bounds say they could make the page.
#[derive(Clone, Debug, PartialEq)]
struct Quantized {
    codes: Vec<i16>,
    scale: f32,
    // The sum of the components' magnitudes.
    l1: f32,
}

impl Quantized {
    fn new(values: &[f32]) -> Option<Self> {
        if values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let max = values.iter().fold(0.0_f32, |max, v| max.max(v.abs()));
        if max == 0.0 {
            return None;
        }
        let scale = max / CODE_MAX;
        // Within ±CODE_MAX by the choice of scale, so the cast is exact.
        let codes = values
            .iter()
            .map(|v| (v / scale).round().clamp(-CODE_MAX, CODE_MAX) as i16)
            .collect();
        let l1 = values.iter().map(|v| v.abs()).sum();
        Some(Self { codes, scale, l1 })
    }
}

/// The largest code: 11 bits, so a product fits 22 bits and 16 lanes of
/// sums stay far below `i32::MAX` for vectors of up to 8,192 components.
const CODE_MAX: f32 = 2047.0;

/// The dot product of two code vectors of equal length (exact).
fn dot_codes(a: &[i16], b: &[i16]) -> i64 {
    const LANES: usize = 16;
    let mut lanes = [0_i32; LANES];
    let mut chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    for (x, y) in chunks.by_ref() {
        for lane in 0..LANES {
            lanes[lane] += i32::from(x[lane]) * i32::from(y[lane]);
        }
    }
    let tail = a.len() - a.len() % LANES;
    let rest: i64 = a[tail..]
        .iter()
        .zip(&b[tail..])
        .map(|(x, y)| i64::from(*x) * i64::from(*y))
        .sum();
    lanes.iter().map(|lane| i64::from(*lane)).sum::<i64>() + rest
}

/// Slack added to both bounds of a cosine taken on codes: more than the
/// rounding of the exact computation (32-lane `f32` sums) can move it.
const SCORE_SLACK: f32 = 1e-4;

/// A query vector with its norm, computed once per search.
#[derive(Clone, Debug)]
pub(crate) struct NormedQuery<'a> {
    values: &'a [f32],
    norm: f32,
    quantized: Option<Quantized>,
}

impl<'a> NormedQuery<'a> {
    /// The query's number of dimensions.
    pub(crate) fn dims(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn new(values: &'a [f32]) -> Self {
        Self {
            values,
            norm: norm(values),
            quantized: Quantized::new(values),
        }
    }

    /// Bounds of [`NormedQuery::best_score`] from the vectors' codes:
    /// `(lower, upper)` with `lower <= score <= upper`, or `None` when a
    /// vector has no codes, a length other than the query's, or a zero
    /// norm (its score must be computed exactly). Items without vectors
    /// have no score: `Some((-inf, -inf))` never ranks them.
    pub(crate) fn score_bounds(&self, vectors: &[NormedVector]) -> Option<(f32, f32)> {
        let query = self.quantized.as_ref()?;
        let mut bounds = (f32::NEG_INFINITY, f32::NEG_INFINITY);
        for vector in vectors {
            let codes = vector.quantized.as_ref()?;
            if codes.codes.len() != query.codes.len() || vector.norm == 0.0 || self.norm == 0.0 {
                return None;
            }
            let scales = query.scale * codes.scale;
            let approx = dot_codes(&query.codes, &codes.codes) as f32 * scales;
            // |q·v - q̃·ṽ| <= |q|₁·e_v + |v|₁·e_q + d·e_q·e_v, with each
            // component off by at most half a step (e = scale / 2).
            let dims = query.codes.len() as f32;
            let error =
                query.l1 * codes.scale / 2.0 + codes.l1 * query.scale / 2.0 + dims * scales / 4.0;
            let norms = self.norm * vector.norm;
            if !norms.is_finite() || !approx.is_finite() || !error.is_finite() {
                // Components so large their squares overflow: exact only.
                return None;
            }
            // A little more than the bound, for the rounding of this `f32`
            // arithmetic itself.
            let spread = error * 1.01 / norms + SCORE_SLACK;
            let center = approx / norms;
            bounds.0 = bounds.0.max(center - spread);
            bounds.1 = bounds.1.max(center + spread);
        }
        Some(bounds)
    }

    /// [`best_score`] over vectors with their norms: the same scores to the
    /// bit (norms are taken over as many components as both vectors have,
    /// as `cosine_similarity` takes them).
    pub(crate) fn best_score(&self, vectors: &[NormedVector]) -> Option<f64> {
        vectors
            .iter()
            .map(|v| {
                let (query_norm, v_norm) = if v.values.len() == self.values.len() {
                    (self.norm, v.norm)
                } else {
                    let len = v.values.len().min(self.values.len());
                    (norm(&self.values[..len]), norm(&v.values[..len]))
                };
                f64::from(cosine_from_parts(
                    dot(self.values, &v.values),
                    query_norm,
                    v_norm,
                ))
            })
            .reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64), so a failure replays.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// A value in [-1, 1).
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }

        /// A vector of one of several shapes: dense, sparse, skewed, tiny.
        fn vector(&mut self, dims: usize) -> Vec<f32> {
            let shape = self.next() % 4;
            (0..dims)
                .map(|_| {
                    let x = self.unit();
                    match shape {
                        0 => x,
                        1 if self.next().is_multiple_of(16) => x,
                        1 => 0.0,
                        2 => x * x * x * 1000.0,
                        _ => x * 1e-6,
                    }
                })
                .collect()
        }
    }

    #[test]
    fn code_bounds_hold_the_exact_score() {
        let mut rng = Rng(7);
        for round in 0..2_000 {
            let dims = [3, 16, 100, 384, 1024][round % 5];
            let query = rng.vector(dims);
            let vectors: Vec<NormedVector> = (0..1 + rng.next() % 3)
                .map(|_| NormedVector::new(rng.vector(dims)))
                .collect();
            let normed = NormedQuery::new(&query);
            let exact = normed.best_score(&vectors);
            match (normed.score_bounds(&vectors), exact) {
                (Some((lower, upper)), Some(exact)) => {
                    assert!(
                        f64::from(lower) <= exact && exact <= f64::from(upper),
                        "round {round}: {lower} <= {exact} <= {upper}"
                    );
                    assert!(
                        upper - lower < 0.05,
                        "round {round}: loose {lower}..{upper}"
                    );
                }
                // No bounds: the vector or query has no nonzero component.
                (None, _) => assert!(
                    query.iter().all(|x| *x == 0.0)
                        || vectors
                            .iter()
                            .any(|v| v.quantized.is_none() || v.norm == 0.0),
                    "round {round}: bounds missing"
                ),
                (Some(_), None) => panic!("round {round}: bounds for no vectors"),
            }
        }
    }

    #[test]
    fn vectors_that_cannot_be_coded_are_scored_exactly() {
        let query = NormedQuery::new(&[1.0, 0.0]);
        for odd in [
            vec![f32::NAN, 1.0],
            vec![0.0, 0.0],
            vec![1.0, 0.0, 0.0],
            vec![3e38, 3e38],
        ] {
            let vectors = [NormedVector::new(odd)];
            assert_eq!(query.score_bounds(&vectors), None);
        }
        assert_eq!(NormedQuery::new(&[0.0, 0.0]).score_bounds(&[]), None);
    }
}
