//! Helpers shared by the store cases: namespaces and values from literals,
//! store calls that panic with a clear message instead of returning errors,
//! and deterministic embedders (one that counts characters, one that fails
//! on demand).

use std::future::Future;

use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_llm::{Embeddings, Error as LlmError};
use stategraph_store::{
    GetOp, IndexConfig, IndexFields, Item, ListNamespacesOp, Namespace, Op, OpResult, PutOp,
    SearchItem, SearchOp, Store, StoreError, Ttl, ns,
};

use super::{ManualClock, StoreHarness, StoreOptions};

/// The vector length of the kit's index (upstream's `CharacterEmbeddings`
/// also uses 500).
pub const DIMS: usize = 500;

/// A namespace from labels.
pub fn n(labels: &[&str]) -> Namespace {
    ns(labels.iter().copied())
}

/// Namespaces from label lists.
pub fn namespaces(list: &[&[&str]]) -> Vec<Namespace> {
    list.iter().map(|labels| n(labels)).collect()
}

/// A JSON object from a `json!` literal; panics on anything else.
pub fn obj(value: Json) -> JsonMap {
    match value {
        Json::Object(map) => map,
        other => panic!("fixture value {other} is not a JSON object"),
    }
}

/// A fresh store without index or TTL, on the system clock.
pub async fn fresh<H: StoreHarness>(h: &H) -> H::Store {
    h.store(StoreOptions::new()).await
}

/// A fresh store without index or TTL, on `clock`.
pub async fn fresh_at<H: StoreHarness>(h: &H, clock: &ManualClock) -> H::Store {
    h.store(StoreOptions::new().with_clock(clock)).await
}

/// `store.put`, panicking on failure.
pub async fn put<S: Store>(store: &S, namespace: &[&str], key: &str, value: Json) {
    if let Err(err) = store.put(namespace, key, value).await {
        panic!("put {namespace:?}/{key} failed: {err}");
    }
}

/// `store.put_with`, panicking on failure.
pub async fn put_with<S: Store>(
    store: &S,
    namespace: &[&str],
    key: &str,
    value: Json,
    index: IndexFields,
    ttl: Ttl,
) {
    if let Err(err) = store.put_with(namespace, key, value, index, ttl).await {
        panic!("put {namespace:?}/{key} ({ttl:?}) failed: {err}");
    }
}

/// `store.delete`, panicking on failure.
pub async fn delete<S: Store>(store: &S, namespace: &[&str], key: &str) {
    if let Err(err) = store.delete(namespace, key).await {
        panic!("delete {namespace:?}/{key} failed: {err}");
    }
}

/// `store.get` (which refreshes TTLs), panicking on failure.
pub async fn get<S: Store>(store: &S, namespace: &[&str], key: &str) -> Option<Item> {
    store
        .get(namespace, key)
        .await
        .unwrap_or_else(|err| panic!("get {namespace:?}/{key} failed: {err}"))
}

/// A get that leaves TTLs alone (`refresh_ttl = false`), panicking on
/// failure.
pub async fn peek<S: Store>(store: &S, namespace: &[&str], key: &str) -> Option<Item> {
    let mut op = GetOp::new(n(namespace), key);
    op.refresh_ttl = false;
    match batch(store, vec![Op::Get(op)]).await.pop() {
        Some(OpResult::Item(item)) => item,
        other => panic!("get {namespace:?}/{key} returned {other:?}"),
    }
}

/// `store.search`, panicking on failure.
pub async fn search<S: Store>(store: &S, op: SearchOp) -> Vec<SearchItem> {
    let shown = format!("{op:?}");
    store
        .search(op)
        .await
        .unwrap_or_else(|err| panic!("search {shown} failed: {err}"))
}

/// A search under `prefix` with `filter` and the default page.
pub async fn search_filtered<S: Store>(store: &S, prefix: &[&str], filter: Json) -> Vec<String> {
    keys(&search(store, SearchOp::new(n(prefix)).with_filter(obj(filter))).await)
}

/// `store.list_namespaces`, panicking on failure.
pub async fn list<S: Store>(store: &S, op: ListNamespacesOp) -> Vec<Namespace> {
    let shown = format!("{op:?}");
    store
        .list_namespaces(op)
        .await
        .unwrap_or_else(|err| panic!("list_namespaces {shown} failed: {err}"))
}

/// `store.batch`, panicking on failure.
pub async fn batch<S: Store>(store: &S, ops: Vec<Op>) -> Vec<OpResult> {
    let count = ops.len();
    let results = store
        .batch(ops)
        .await
        .unwrap_or_else(|err| panic!("batch of {count} ops failed: {err}"));
    assert_eq!(
        results.len(),
        count,
        "a batch returns one result per op, got {results:?}"
    );
    results
}

/// A raw put op (no user-namespace checks).
pub fn put_op(namespace: &[&str], key: &str, value: Json) -> Op {
    Op::Put(PutOp::put(n(namespace), key, obj(value)))
}

/// The keys of search results, in order.
pub fn keys(found: &[SearchItem]) -> Vec<String> {
    found.iter().map(|found| found.item.key.clone()).collect()
}

/// The keys of search results, sorted.
pub fn sorted_keys(found: &[SearchItem]) -> Vec<String> {
    let mut keys = keys(found);
    keys.sort();
    keys
}

/// The score of the result with `key`; panics when it is absent.
pub fn score_of(found: &[SearchItem], key: &str) -> Option<f64> {
    found
        .iter()
        .find(|found| found.item.key == key)
        .unwrap_or_else(|| panic!("{key} is not among the results {:?}", keys(found)))
        .score
}

/// The error of a call that must fail.
pub fn expect_err<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) -> StoreError {
    match result {
        Ok(value) => panic!("{what}: expected an error, got Ok({value:?})"),
        Err(err) => err,
    }
}

/// An index of [`DIMS`]-long [`CharacterEmbeddings`] over `fields`.
pub fn index<I, S>(fields: I) -> IndexConfig
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    IndexConfig::new(DIMS, CharacterEmbeddings::new(DIMS)).with_fields(fields)
}

/// A fresh store with [`index`]`(fields)`.
pub async fn indexed<H, I, S>(h: &H, fields: I) -> H::Store
where
    H: StoreHarness,
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    h.store(StoreOptions::new().with_index(index(fields))).await
}

/// A deterministic embedder in the spirit of upstream's test
/// `CharacterEmbeddings`: each character of the lower-cased text adds ±1 to
/// one of `dims` buckets (both chosen by an FNV-1a hash of the character),
/// and the vector is L2-normalised. Equal texts embed equally (similarity
/// 1); texts sharing characters are closer than texts that share none; an
/// empty text embeds as zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharacterEmbeddings {
    dims: usize,
}

impl CharacterEmbeddings {
    /// An embedder of `dims`-long vectors (at least 1).
    pub fn new(dims: usize) -> Self {
        Self { dims: dims.max(1) }
    }

    /// Embeds one text.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dims];
        for c in text.to_lowercase().chars() {
            let mut bytes = [0_u8; 4];
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in c.encode_utf8(&mut bytes).bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            let bucket = (hash % self.dims as u64) as usize;
            vector[bucket] += if hash >> 63 == 1 { -1.0 } else { 1.0 };
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Embeddings for CharacterEmbeddings {
    fn embed_documents(
        &self,
        texts: &[String],
    ) -> impl Future<Output = stategraph_llm::Result<Vec<Vec<f32>>>> + Send {
        let vectors = texts.iter().map(|text| self.embed(text)).collect();
        async move { Ok(vectors) }
    }

    fn embed_query(
        &self,
        text: &str,
    ) -> impl Future<Output = stategraph_llm::Result<Vec<f32>>> + Send {
        let vector = self.embed(text);
        async move { Ok(vector) }
    }
}

/// [`CharacterEmbeddings`] that fail whenever a text contains `marker`.
#[derive(Clone, Debug)]
pub struct FailingEmbeddings {
    inner: CharacterEmbeddings,
    marker: String,
}

impl FailingEmbeddings {
    /// Fails on texts containing `marker`, embeds [`DIMS`]-long vectors
    /// otherwise.
    pub fn new(marker: impl Into<String>) -> Self {
        Self {
            inner: CharacterEmbeddings::new(DIMS),
            marker: marker.into(),
        }
    }

    fn embed_all(&self, texts: &[String]) -> stategraph_llm::Result<Vec<Vec<f32>>> {
        if texts.iter().any(|text| text.contains(&self.marker)) {
            return Err(LlmError::provider(
                "failing-embeddings",
                format!("refusing to embed a text containing {:?}", self.marker),
            ));
        }
        Ok(texts.iter().map(|text| self.inner.embed(text)).collect())
    }
}

impl Embeddings for FailingEmbeddings {
    fn embed_documents(
        &self,
        texts: &[String],
    ) -> impl Future<Output = stategraph_llm::Result<Vec<Vec<f32>>>> + Send {
        let result = self.embed_all(texts);
        async move { result }
    }

    fn embed_query(
        &self,
        text: &str,
    ) -> impl Future<Output = stategraph_llm::Result<Vec<f32>>> + Send {
        let result = self
            .embed_all(&[text.to_owned()])
            .map(|mut vectors| vectors.pop().unwrap_or_default());
        async move { result }
    }
}
