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
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent lanes, so the loop vectorizes; the result does not
    // depend on the machine.
    const LANES: usize = 8;
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let (mut dot, mut norm_a, mut norm_b) = ([0.0_f32; LANES], [0.0_f32; LANES], [0.0_f32; LANES]);
    let mut chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    for (x, y) in chunks.by_ref() {
        for lane in 0..LANES {
            dot[lane] += x[lane] * y[lane];
            norm_a[lane] += x[lane] * x[lane];
            norm_b[lane] += y[lane] * y[lane];
        }
    }
    let tail = len - len % LANES;
    for (x, y) in a[tail..].iter().zip(&b[tail..]) {
        dot[0] += x * y;
        norm_a[0] += x * x;
        norm_b[0] += y * y;
    }
    let (dot, norm_a, norm_b): (f32, f32, f32) =
        (dot.iter().sum(), norm_a.iter().sum(), norm_b.iter().sum());
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a.sqrt() * norm_b.sqrt())
    }
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
}
