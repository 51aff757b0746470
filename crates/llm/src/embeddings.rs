//! The [`Embeddings`] trait, its object-safe twin, and cosine similarity.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::{Error, Result};

/// Turns texts into vectors for semantic search.
///
/// # Behavior
/// - [`embed_documents`](Self::embed_documents) returns one vector per text,
///   in order, all of the same length.
/// - [`embed_query`](Self::embed_query) embeds one search query; by default
///   it is `embed_documents` of that one text.
pub trait Embeddings: Send + Sync + fmt::Debug + 'static {
    /// Embeds a batch of documents.
    fn embed_documents(
        &self,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>>> + Send;

    /// Embeds a search query.
    fn embed_query(&self, text: &str) -> impl Future<Output = Result<Vec<f32>>> + Send {
        let texts = [text.to_owned()];
        async move {
            let mut vectors = self.embed_documents(&texts).await?;
            vectors.pop().ok_or_else(|| Error::EmptyResponse {
                model: "embeddings".into(),
            })
        }
    }
}

/// The object-safe twin of [`Embeddings`], implemented for every embedder.
pub trait DynEmbeddings: Send + Sync + fmt::Debug + 'static {
    /// See [`Embeddings::embed_documents`].
    fn dyn_embed_documents<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>>>;
    /// See [`Embeddings::embed_query`].
    fn dyn_embed_query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Vec<f32>>>;
}

/// An embedder behind an `Arc`; it implements [`Embeddings`] too.
pub type SharedEmbeddings = Arc<dyn DynEmbeddings>;

impl<E: Embeddings> DynEmbeddings for E {
    fn dyn_embed_documents<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(self.embed_documents(texts))
    }
    fn dyn_embed_query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Vec<f32>>> {
        Box::pin(self.embed_query(text))
    }
}

impl Embeddings for SharedEmbeddings {
    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.as_ref().dyn_embed_documents(texts).await
    }
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.as_ref().dyn_embed_query(text).await
    }
}

/// The cosine similarity of two vectors: 1 for the same direction, 0 for
/// orthogonal ones, and 0 when either is all zeros. Extra components of the
/// longer vector are ignored.
///
/// The same as `cosine_from_parts(dot(a, b), norm(a'), norm(b'))` where `a'`
/// and `b'` are the vectors cut to the shorter length, to the bit: a search
/// can compute each stored vector's norm once.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    cosine_from_parts(dot(a, b), norm(a), norm(b))
}

/// The cosine similarity from a dot product and the two norms ([`dot`],
/// [`norm`]): 0 when either norm is 0.
pub fn cosine_from_parts(dot: f32, norm_a: f32, norm_b: f32) -> f32 {
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a * norm_b)
    }
}

/// Thirty-two independent lanes: the loop vectorizes and its additions
/// overlap; the result does not depend on the machine.
const LANES: usize = 32;

/// The dot product of two vectors (extra components of the longer one are
/// ignored), summed in 32 lanes.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut lanes = [0.0_f32; LANES];
    let mut chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    for (x, y) in chunks.by_ref() {
        for lane in 0..LANES {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let tail = len - len % LANES;
    for (x, y) in a[tail..].iter().zip(&b[tail..]) {
        lanes[0] += x * y;
    }
    lanes.iter().sum()
}

/// The Euclidean norm of a vector, summed in lanes as [`dot`] sums.
pub fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine_similarity(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine_similarity(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        // Longer than the lanes, with a tail, and extra components ignored.
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let mut b = a.clone();
        b.push(100.0);
        assert!((cosine_similarity(&a, &b) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn cosine_from_precomputed_norms_is_the_same_to_the_bit() {
        let a: Vec<f32> = (0..37)
            .map(|i| ((i * 7919) % 101) as f32 / 13.0 - 3.0)
            .collect();
        let b: Vec<f32> = (0..37)
            .map(|i| ((i * 104_729) % 89) as f32 / 7.0 - 5.0)
            .collect();
        let parts = cosine_from_parts(dot(&a, &b), norm(&a), norm(&b));
        assert_eq!(parts.to_bits(), cosine_similarity(&a, &b).to_bits());
        assert_eq!(cosine_from_parts(1.0, 0.0, 2.0), 0.0);
    }
}
