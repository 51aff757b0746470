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
}

impl NormedVector {
    pub(crate) fn new(values: Vec<f32>) -> Self {
        let norm = norm(&values);
        Self { values, norm }
    }
}

/// A query vector with its norm, computed once per search.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NormedQuery<'a> {
    values: &'a [f32],
    norm: f32,
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
        }
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
