//! Offline test doubles: a scripted chat model, a token-streaming fake model
//! and a deterministic hash embedder. They are public so applications can
//! test their graphs without a network either.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::stream::{self, Stream};

use crate::chunk::AiMessageChunk;
use crate::embeddings::Embeddings;
use crate::message::{AiMessage, Content, Message};
use crate::model::{CallOptions, ChatModel};
use crate::{Error, Result};

type Responder = dyn Fn(&[Message]) -> AiMessage + Send + Sync;

enum Script {
    Fixed(Vec<AiMessage>),
    Respond(Arc<Responder>),
}

/// One recorded call of a [`ScriptedChatModel`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RecordedCall {
    /// The messages the model was called with.
    pub messages: Vec<Message>,
    /// The options (bound tools included).
    pub options: CallOptions,
}

/// A chat model that answers from a script, for tests.
///
/// - [`ScriptedChatModel::new`] returns the scripted messages in order and
///   wraps around to the first after the last, ignoring its input (like the
///   benchmark's scripted model). An empty script answers
///   [`Error::EmptyResponse`].
/// - [`ScriptedChatModel::from_fn`] computes each answer from the messages.
///
/// Ids are deterministic: an answer without an id gets `ai-{n}` (`n` counts
/// this model's calls from 0) and a tool call without an id gets
/// `call-{n}-{i}`. A new model answering a thread an earlier process saved
/// counts from 0 again, and `add_messages` replaces a message whose id is
/// already in the state: give such answers ids of their own (in the script
/// or from [`from_fn`](Self::from_fn)). Every
/// call is recorded ([`calls`](Self::calls)) unless
/// [`record_calls(false)`](Self::record_calls) says otherwise; bound tools do
/// not change the answers.
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::{AiMessage, CallOptions, ChatModel, Message, ScriptedChatModel, ToolCall};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedChatModel::new([
///     AiMessage::new("").with_tool_calls(vec![ToolCall::new("add", json!({"a": 2, "b": 3}))]),
///     AiMessage::new("5"),
/// ]);
/// let first = model.invoke(&[Message::human("2+3?")], &CallOptions::default()).await?;
/// assert_eq!(first.id.as_deref(), Some("ai-0"));
/// assert_eq!(first.tool_calls[0].id.as_deref(), Some("call-0-0"));
/// let second = model.invoke(&[], &CallOptions::default()).await?;
/// assert_eq!(second.text(), "5");
/// assert_eq!(model.calls()[0].messages, [Message::human("2+3?")]);
/// # Ok::<(), stategraph_llm::Error>(())
/// # }).unwrap();
/// ```
pub struct ScriptedChatModel {
    script: Script,
    record: bool,
    state: Mutex<ScriptState>,
}

#[derive(Default)]
struct ScriptState {
    position: usize,
    count: usize,
    calls: Vec<RecordedCall>,
}

impl ScriptedChatModel {
    /// Answers with these messages in order, wrapping around.
    pub fn new(responses: impl IntoIterator<Item = AiMessage>) -> Self {
        Self {
            script: Script::Fixed(responses.into_iter().collect()),
            record: true,
            state: Mutex::default(),
        }
    }

    /// Answers with whatever `respond` returns for the messages.
    pub fn from_fn(respond: impl Fn(&[Message]) -> AiMessage + Send + Sync + 'static) -> Self {
        Self {
            script: Script::Respond(Arc::new(respond)),
            record: true,
            state: Mutex::default(),
        }
    }

    /// Whether to keep every call's messages for [`calls`](Self::calls)
    /// (the default). A model answering many long runs (a benchmark, a soak
    /// test) should not: the log keeps every conversation alive.
    #[must_use]
    pub fn record_calls(mut self, record: bool) -> Self {
        self.record = record;
        self
    }

    /// Every recorded call so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.lock().calls.clone()
    }

    /// How many times the model was called (recorded or not).
    pub fn call_count(&self) -> usize {
        self.lock().count
    }

    /// Forgets the calls and starts the script again.
    pub fn reset(&self) {
        *self.lock() = ScriptState::default();
    }

    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        // A panic while holding the lock cannot leave the state half
        // written (every update is a single assignment or push).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn answer(&self, messages: &[Message], options: &CallOptions) -> Result<AiMessage> {
        let (n, position) = {
            let mut state = self.lock();
            if self.record {
                state.calls.push(RecordedCall {
                    messages: messages.to_vec(),
                    options: options.clone(),
                });
            }
            let (n, position) = (state.count, state.position);
            state.count += 1;
            state.position += 1;
            (n, position)
        };
        let mut answer = match &self.script {
            Script::Fixed(responses) if responses.is_empty() => {
                return Err(Error::EmptyResponse {
                    model: self.model_name().to_owned(),
                });
            }
            Script::Fixed(responses) => responses[position % responses.len()].clone(),
            Script::Respond(respond) => respond(messages),
        };
        if answer.id.is_none() {
            answer.id = Some(format!("ai-{n}"));
        }
        for (i, call) in answer.tool_calls.iter_mut().enumerate() {
            if call.id.is_none() {
                call.id = Some(format!("call-{n}-{i}"));
            }
        }
        Ok(answer)
    }
}

impl fmt::Debug for ScriptedChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let script = match &self.script {
            Script::Fixed(responses) => format!("{} responses", responses.len()),
            Script::Respond(_) => "a function".to_owned(),
        };
        f.debug_struct("ScriptedChatModel")
            .field("script", &script)
            .field("calls", &self.call_count())
            .finish()
    }
}

impl ChatModel for ScriptedChatModel {
    fn model_name(&self) -> &str {
        "scripted"
    }

    fn provider_name(&self) -> &str {
        "scripted"
    }

    fn generate(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        let answer = self.answer(messages, options);
        async move { answer }
    }
}

/// A model that streams fixed messages token by token, like LangChain's
/// `GenericFakeChatModel`: the text is split at every whitespace character,
/// each whitespace character being a token of its own (`"hello big world"`
/// streams `hello`, ` `, `big`, ` `, `world`). Every chunk carries the
/// message id; the last is marked [`ChunkPosition::Last`](crate::ChunkPosition::Last)
/// and carries the tool calls and usage, if any. Content made of blocks
/// streams as one chunk.
///
/// The messages are answered in order and wrap around; an answer without an
/// id gets `fake-{n}` (`n` counts calls from 0). `invoke` returns the whole
/// message.
///
/// ```
/// use futures::StreamExt;
/// use stategraph_llm::{AiMessage, CallOptions, ChatModel, FakeStreamingModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = FakeStreamingModel::new([AiMessage::new("hello big world").with_id("ai-1")]);
/// let tokens: Vec<String> = model
///     .stream(&[], &CallOptions::default())
///     .map(|chunk| chunk.unwrap().content.text().into_owned())
///     .collect()
///     .await;
/// assert_eq!(tokens, ["hello", " ", "big", " ", "world"]);
/// # });
/// ```
#[derive(Debug)]
pub struct FakeStreamingModel {
    messages: Vec<AiMessage>,
    calls: Mutex<usize>,
}

impl FakeStreamingModel {
    /// Answers with these messages in order, wrapping around.
    pub fn new(messages: impl IntoIterator<Item = AiMessage>) -> Self {
        Self {
            messages: messages.into_iter().collect(),
            calls: Mutex::new(0),
        }
    }

    /// Answers every call with this text.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self::new([AiMessage::new(text.into())])
    }

    fn next(&self) -> Result<AiMessage> {
        let n = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            *calls += 1;
            *calls - 1
        };
        if self.messages.is_empty() {
            return Err(Error::EmptyResponse {
                model: self.model_name().to_owned(),
            });
        }
        let mut message = self.messages[n % self.messages.len()].clone();
        if message.id.is_none() {
            message.id = Some(format!("fake-{n}"));
        }
        Ok(message)
    }
}

/// Splits like Python's `re.split(r"(\s)", text)`: words and single
/// whitespace characters, empty words kept.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            out.push(std::mem::take(&mut word));
            out.push(c.to_string());
        } else {
            word.push(c);
        }
    }
    out.push(word);
    out
}

fn into_chunks(message: AiMessage) -> Vec<AiMessageChunk> {
    let AiMessageChunk {
        content,
        id,
        name,
        tool_call_chunks,
        usage_metadata,
        additional_kwargs,
        response_metadata,
        ..
    } = AiMessageChunk::from(message);
    let pieces: Vec<Content> = match content {
        Content::Text(text) => tokens(&text).into_iter().map(Content::Text).collect(),
        blocks => vec![blocks],
    };
    let count = pieces.len();
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            let mut chunk = AiMessageChunk::new(content);
            chunk.id = id.clone();
            chunk.name = name.clone();
            if i + 1 == count {
                chunk.tool_call_chunks = tool_call_chunks.clone();
                chunk.usage_metadata = usage_metadata.clone();
                chunk.additional_kwargs = additional_kwargs.clone();
                chunk.response_metadata = response_metadata.clone();
                chunk = chunk.last();
            }
            chunk
        })
        .collect()
}

impl ChatModel for FakeStreamingModel {
    fn model_name(&self) -> &str {
        "fake-streaming"
    }

    /// LangChain's name for its `GenericFakeChatModel`, which this model
    /// mirrors, so `messages` stream metadata compares with LangGraph's.
    fn provider_name(&self) -> &str {
        "genericfakechatmodel"
    }

    fn generate(
        &self,
        _messages: &[Message],
        _options: &CallOptions,
    ) -> impl Future<Output = Result<AiMessage>> + Send {
        let message = self.next();
        async move { message }
    }

    fn generate_stream<'a>(
        &'a self,
        _messages: &[Message],
        _options: &CallOptions,
    ) -> Option<impl Stream<Item = Result<AiMessageChunk>> + Send + use<'a>> {
        let chunks = match self.next() {
            Ok(message) => into_chunks(message).into_iter().map(Ok).collect(),
            Err(err) => vec![Err(err)],
        };
        Some(stream::iter(chunks))
    }
}

/// A deterministic embedder for tests: each lower-cased word (a run of
/// letters and digits) is hashed (FNV-1a) into one of `dimensions` buckets
/// with a hashed sign, and the vector is L2-normalised. The same text always
/// gives the same vector, on every platform; texts sharing words are closer
/// than texts that share none. A text without words embeds as all zeros.
///
/// ```
/// use stategraph_llm::{Embeddings, HashEmbeddings, cosine_similarity};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let embedder = HashEmbeddings::new(64);
/// let cats = embedder.embed_query("cats like fish").await?;
/// let docs = embedder
///     .embed_documents(&["Cats like fish!".to_owned(), "tax law of 1999".to_owned()])
///     .await?;
/// assert_eq!(cats, docs[0]);
/// assert!(cosine_similarity(&cats, &docs[0]) > cosine_similarity(&cats, &docs[1]));
/// # Ok::<(), stategraph_llm::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashEmbeddings {
    dimensions: usize,
}

impl HashEmbeddings {
    /// An embedder producing vectors of `dimensions` components (at least 1).
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions: dimensions.max(1),
        }
    }

    /// The length of the vectors.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Embeds one text (synchronously).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dimensions];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let hash = fnv1a(word.as_bytes());
            // The bucket count fits in u64, and the remainder is below it.
            let bucket = (hash % self.dimensions as u64) as usize;
            let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
            vector[bucket] += sign;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Default for HashEmbeddings {
    /// 256 dimensions.
    fn default() -> Self {
        Self::new(256)
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

impl Embeddings for HashEmbeddings {
    fn embed_documents(
        &self,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>>> + Send {
        let vectors = texts.iter().map(|t| self.embed(t)).collect();
        async move { Ok(vectors) }
    }

    fn embed_query(&self, text: &str) -> impl Future<Output = Result<Vec<f32>>> + Send {
        let vector = self.embed(text);
        async move { Ok(vector) }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use serde_json::json;

    use super::*;
    use crate::chunk::{ChunkPosition, collect_chunks};
    use crate::embeddings::cosine_similarity;
    use crate::message::ToolCall;

    #[test]
    fn tokens_split_like_python_re_split() {
        assert_eq!(
            tokens("hello big world"),
            ["hello", " ", "big", " ", "world"]
        );
        assert_eq!(tokens("a  b"), ["a", " ", "", " ", "b"]);
        assert_eq!(tokens("x "), ["x", " ", ""]);
        assert_eq!(tokens(""), [""]);
    }

    #[tokio::test]
    async fn scripted_model_wraps_around_and_records() {
        let model =
            ScriptedChatModel::new([AiMessage::new("a"), AiMessage::new("b").with_id("fixed")]);
        let options = CallOptions::default().with_tags(["t"]);
        let mut answers = Vec::new();
        for i in 0..3 {
            let answer = model
                .invoke(&[Message::human(format!("q{i}"))], &options)
                .await
                .unwrap();
            answers.push((answer.text().into_owned(), answer.id.unwrap()));
        }
        assert_eq!(
            answers,
            [
                ("a".into(), "ai-0".into()),
                ("b".into(), "fixed".into()),
                ("a".into(), "ai-2".into())
            ]
        );
        let calls = model.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].messages, [Message::human("q2")]);
        assert_eq!(calls[2].options.tags, ["t"]);
        model.reset();
        assert_eq!(model.call_count(), 0);
    }

    #[tokio::test]
    async fn an_empty_script_is_an_error() {
        let model = ScriptedChatModel::new([]);
        let err = model
            .invoke(&[], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::EmptyResponse { .. }));
        let model = FakeStreamingModel::new([]);
        let items: Vec<_> = model.stream(&[], &CallOptions::default()).collect().await;
        assert!(matches!(items[..], [Err(Error::EmptyResponse { .. })]));
    }

    #[tokio::test]
    async fn scripted_model_from_fn_sees_the_messages() {
        let model = ScriptedChatModel::from_fn(|messages| {
            AiMessage::new(format!("saw {}", messages.len()))
        });
        let answer = model
            .invoke(
                &[Message::human("a"), Message::human("b")],
                &CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(answer.text(), "saw 2");
    }

    #[tokio::test]
    async fn the_default_stream_is_one_last_chunk() {
        let model = ScriptedChatModel::new([
            AiMessage::new("hi").with_tool_calls(vec![ToolCall::new("t", json!({"x": 1}))])
        ]);
        let chunks: Vec<_> = model.stream(&[], &CallOptions::default()).collect().await;
        assert_eq!(chunks.len(), 1);
        let chunk = chunks[0].as_ref().unwrap();
        assert_eq!(chunk.chunk_position, Some(ChunkPosition::Last));
        let message = chunk.clone().into_message();
        assert_eq!(message.tool_calls[0].id.as_deref(), Some("call-0-0"));
    }

    #[tokio::test]
    async fn streamed_chunks_merge_into_the_invoked_message() {
        let message = AiMessage::new("hello big world")
            .with_id("ai-1")
            .with_tool_calls(vec![ToolCall::new("t", json!({"q": "x"})).with_id("c")]);
        let model = FakeStreamingModel::new([message.clone()]);
        let chunks: Vec<_> = model.stream(&[], &CallOptions::default()).collect().await;
        assert_eq!(chunks.len(), 5);
        for chunk in &chunks {
            assert_eq!(chunk.as_ref().unwrap().id.as_deref(), Some("ai-1"));
        }
        let merged = collect_chunks(stream::iter(chunks), "fake").await.unwrap();
        assert_eq!(merged, message);
        assert_eq!(
            model.invoke(&[], &CallOptions::default()).await.unwrap(),
            message
        );
        let unnamed = FakeStreamingModel::from_text("x");
        let answer = unnamed.invoke(&[], &CallOptions::default()).await.unwrap();
        assert_eq!(answer.id.as_deref(), Some("fake-0"));
    }

    #[tokio::test]
    async fn hash_embeddings_are_deterministic_normalised_and_similarity_preserving() {
        let embedder = HashEmbeddings::default();
        let a = embedder.embed_query("the quick brown fox").await.unwrap();
        assert_eq!(a.len(), 256);
        assert_eq!(a, embedder.embed("The quick, brown fox."));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let close = embedder.embed("a quick brown dog");
        let far = embedder.embed("quarterly tax report");
        assert!(cosine_similarity(&a, &close) > cosine_similarity(&a, &far));
        assert!(embedder.embed("  ...  ").iter().all(|x| *x == 0.0));
        // Stable across runs and platforms: FNV-1a("fox") is
        // 15902916278065163150, bucket 6 of 8, top bit set (negative).
        assert_eq!(
            HashEmbeddings::new(8).embed("fox"),
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0]
        );
    }
}
