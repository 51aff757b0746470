//! The store of a tool call (LangGraph's `InjectedStore`).

use std::sync::Arc;

use stategraph_llm::ToolContext;

use crate::SharedStore;

/// Hands a store to tools through their [`ToolContext`]: a tool node puts
/// the graph's store in the context with [`with_store`](Self::with_store),
/// and a tool reads it with [`store`](Self::store) (LangGraph's
/// `InjectedStore`, hidden from the model like every injected argument).
///
/// ```
/// use stategraph_llm::ToolContext;
/// use stategraph_store::{InMemoryStore, Store, ToolContextStore};
///
/// let ctx = ToolContext::default().with_store(InMemoryStore::new().into_shared());
/// assert!(ctx.store().is_some());
/// assert!(ToolContext::default().store().is_none());
/// ```
pub trait ToolContextStore {
    /// The context with `store` attached.
    #[must_use]
    fn with_store(self, store: SharedStore) -> Self;

    /// The attached store, if any.
    fn store(&self) -> Option<SharedStore>;
}

impl ToolContextStore for ToolContext {
    fn with_store(self, store: SharedStore) -> Self {
        self.with_extension(Arc::new(store))
    }

    fn store(&self) -> Option<SharedStore> {
        self.get::<SharedStore>().map(|store| (*store).clone())
    }
}
