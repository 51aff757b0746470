//! [`OpenAiEmbeddings`]: the `/embeddings` endpoint as [`Embeddings`].

use serde_json::{Value as Json, json};
use stategraph_llm::{Embeddings, Result};

use crate::OpenAiConfig;
use crate::client::Client;
use crate::config::ConfigError;
use crate::wire::malformed;

/// Embeddings from an OpenAI-compatible `/embeddings` endpoint, in batches
/// (2048 texts per request by default, OpenAI's limit), with the same
/// timeouts, retries and typed errors as [`ChatOpenAi`](crate::ChatOpenAi).
///
/// ```no_run
/// use stategraph_llm::Embeddings;
/// use stategraph_openai::{OpenAiConfig, OpenAiEmbeddings};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let embedder = OpenAiEmbeddings::new(OpenAiConfig::from_env("text-embedding-3-small")?)?
///     .with_dimensions(384);
/// let vector = embedder.embed_query("graphs of agents").await?;
/// assert_eq!(vector.len(), 384);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiEmbeddings {
    client: Client,
    dimensions: Option<usize>,
    batch_size: usize,
}

impl OpenAiEmbeddings {
    /// Embeddings with this configuration (its model is the embedding
    /// model).
    ///
    /// # Errors
    /// [`ConfigError::BadBaseUrl`] when the base URL is not http(s).
    pub fn new(config: OpenAiConfig) -> std::result::Result<Self, ConfigError> {
        Ok(Self {
            client: Client::new(config)?,
            dimensions: None,
            batch_size: 2048,
        })
    }

    /// Asks for vectors of this many dimensions (models that support it).
    #[must_use]
    pub fn with_dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Sets how many texts go in one request (at least 1).
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut body = json!({"model": self.client.config().model(), "input": texts});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = dimensions.into();
        }
        let answer = self.client.post_json("/embeddings", &body).await?;
        let data = answer
            .get("data")
            .and_then(Json::as_array)
            .ok_or_else(|| malformed("no `data` list in the embeddings answer"))?;
        if data.len() != texts.len() {
            return Err(malformed(format!(
                "{} embeddings for {} texts",
                data.len(),
                texts.len()
            )));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, item) in data.iter().enumerate() {
            let index = item
                .get("index")
                .and_then(Json::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(position);
            let vector = item
                .get("embedding")
                .and_then(Json::as_array)
                .and_then(|numbers| {
                    numbers
                        .iter()
                        .map(|n| n.as_f64().map(|n| n as f32))
                        .collect::<Option<Vec<f32>>>()
                })
                .ok_or_else(|| malformed(format!("embedding {index} is not a list of numbers")))?;
            match vectors.get_mut(index) {
                Some(slot @ None) => *slot = Some(vector),
                _ => {
                    return Err(malformed(format!(
                        "embedding index {index} is out of place"
                    )));
                }
            }
        }
        let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
        if let Some(first) = vectors.first()
            && vectors.iter().any(|v| v.len() != first.len())
        {
            return Err(malformed("embeddings of different lengths"));
        }
        Ok(vectors)
    }
}

impl Embeddings for OpenAiEmbeddings {
    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            vectors.extend(self.embed_batch(batch).await?);
        }
        Ok(vectors)
    }
}
