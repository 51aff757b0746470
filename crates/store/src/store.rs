//! The [`Store`] trait, its object-safe twin and shared handle.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value as Json;

use crate::{
    GetOp, IndexFields, Item, ListNamespacesOp, Namespace, Op, OpResult, PutOp, Result, SearchItem,
    SearchOp, StoreError, Ttl, validate_user_namespace,
};

/// What a store can do beyond the basics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreCapabilities {
    /// Searches with a query rank by a semantic index.
    pub vector_search: bool,
    /// Puts may give a TTL, and expired items are swept.
    pub ttl: bool,
}

/// Long-term memory shared across threads (LangGraph's `BaseStore`): JSON
/// objects under hierarchical namespaces, with filtered and semantic search
/// and optional expiry.
///
/// # Behavior
/// - [`batch`](Self::batch) is the one required method. It returns one
///   result per operation, at its position. As LangGraph's stores, every
///   read of a batch (get, search, list) sees the store as it was before
///   the batch; its puts apply after the reads, in order, so the last put
///   of a key wins. It is all-or-nothing for failures it can see before
///   writing (an invalid namespace or filter, an embedder failure).
/// - Namespaces are non-empty, without empty labels or `.`; the
///   convenience [`put`](Self::put) also refuses the reserved root label
///   `langgraph`, which only system writes through `batch` may use.
/// - A put keeps the item's `created_at` and sets `updated_at`.
/// - Search without a query orders by namespace, then key; with a query,
///   by similarity first (unscored items last).
///   Filters mean the same on every backend ([`Filter`](crate::Filter)).
pub trait Store: Send + Sync + fmt::Debug + 'static {
    /// Runs `ops` in order and returns their results.
    fn batch(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>>> + Send;

    /// What the store supports.
    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities::default()
    }

    /// The item at `key` in `namespace`, if any.
    fn get(
        &self,
        namespace: &[&str],
        key: &str,
    ) -> impl Future<Output = Result<Option<Item>>> + Send {
        let op = GetOp::new(owned(namespace), key);
        async move {
            match one(self.batch(vec![Op::Get(op)]).await?) {
                OpResult::Item(item) => Ok(item),
                other => Err(unexpected("get", &other)),
            }
        }
    }

    /// Puts `value` (a JSON object) at `key` in `namespace`, indexed with
    /// the store's default fields and living its default TTL.
    ///
    /// # Errors
    /// [`StoreError::NotAnObject`] when `value` is not an object;
    /// [`StoreError::InvalidNamespace`] for a bad or reserved namespace.
    fn put(
        &self,
        namespace: &[&str],
        key: &str,
        value: Json,
    ) -> impl Future<Output = Result<()>> + Send {
        let op = object(owned(namespace), key, value)
            .map(|value| PutOp::put(owned(namespace), key, value));
        async move { self.put_op(op?).await }
    }

    /// Runs one put (or delete) with its index and TTL choices, after the
    /// user-namespace checks.
    fn put_op(&self, op: PutOp) -> impl Future<Output = Result<()>> + Send {
        async move {
            validate_user_namespace(&op.namespace)?;
            match one(self.batch(vec![Op::Put(op)]).await?) {
                OpResult::Done => Ok(()),
                other => Err(unexpected("put", &other)),
            }
        }
    }

    /// Puts `value` with explicit index fields and TTL.
    ///
    /// # Errors
    /// As [`put`](Self::put); [`StoreError::Unsupported`] for a TTL on a
    /// store without TTL support.
    fn put_with(
        &self,
        namespace: &[&str],
        key: &str,
        value: Json,
        index: IndexFields,
        ttl: Ttl,
    ) -> impl Future<Output = Result<()>> + Send {
        let op = object(owned(namespace), key, value).map(|value| {
            PutOp::put(owned(namespace), key, value)
                .with_index(index)
                .with_ttl(ttl)
        });
        async move { self.put_op(op?).await }
    }

    /// Deletes the item at `key` in `namespace` (nothing if there is none).
    fn delete(&self, namespace: &[&str], key: &str) -> impl Future<Output = Result<()>> + Send {
        self.put_op(PutOp::delete(owned(namespace), key))
    }

    /// Runs one search.
    fn search(&self, op: SearchOp) -> impl Future<Output = Result<Vec<SearchItem>>> + Send {
        async move {
            match one(self.batch(vec![Op::Search(op)]).await?) {
                OpResult::Items(items) => Ok(items),
                other => Err(unexpected("search", &other)),
            }
        }
    }

    /// Lists namespaces.
    fn list_namespaces(
        &self,
        op: ListNamespacesOp,
    ) -> impl Future<Output = Result<Vec<Namespace>>> + Send {
        async move {
            match one(self.batch(vec![Op::ListNamespaces(op)]).await?) {
                OpResult::Namespaces(namespaces) => Ok(namespaces),
                other => Err(unexpected("list_namespaces", &other)),
            }
        }
    }

    /// This store behind an `Arc`, as graphs and tools hold stores.
    fn into_shared(self) -> SharedStore
    where
        Self: Sized,
    {
        Arc::new(self)
    }
}

fn owned(namespace: &[&str]) -> Namespace {
    namespace.iter().map(|label| (*label).to_owned()).collect()
}

fn object(namespace: Namespace, key: &str, value: Json) -> Result<stategraph_core::JsonMap> {
    match value {
        Json::Object(map) => Ok(map),
        other => {
            // Refused, it may be arbitrarily deep: drop it without recursion.
            stategraph_core::json::drop_deep(other);
            Err(StoreError::NotAnObject {
                namespace,
                key: key.to_owned(),
            })
        }
    }
}

fn one(mut results: Vec<OpResult>) -> OpResult {
    results.pop().unwrap_or(OpResult::Done)
}

fn unexpected(operation: &str, result: &OpResult) -> StoreError {
    StoreError::Backend {
        store: "store",
        message: format!("{operation} got a result of another kind: {result:?}"),
        source: None,
    }
}

/// The object-safe twin of [`Store`], implemented for every store.
pub trait DynStore: Send + Sync + fmt::Debug + 'static {
    /// See [`Store::batch`].
    fn dyn_batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>>>;
    /// See [`Store::capabilities`].
    fn dyn_capabilities(&self) -> StoreCapabilities;
}

impl<S: Store> DynStore for S {
    fn dyn_batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>>> {
        Box::pin(self.batch(ops))
    }
    fn dyn_capabilities(&self) -> StoreCapabilities {
        self.capabilities()
    }
}

/// A store behind an `Arc`; it implements [`Store`] too.
pub type SharedStore = Arc<dyn DynStore>;

impl Store for SharedStore {
    fn batch(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>>> + Send {
        self.as_ref().dyn_batch(ops)
    }
    fn capabilities(&self) -> StoreCapabilities {
        self.as_ref().dyn_capabilities()
    }
    fn into_shared(self) -> SharedStore {
        self
    }
}

impl<S: Store> Store for Arc<S> {
    fn batch(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>>> + Send {
        self.as_ref().batch(ops)
    }
    fn capabilities(&self) -> StoreCapabilities {
        self.as_ref().capabilities()
    }
}
