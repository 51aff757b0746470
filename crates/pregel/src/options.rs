//! `CompileOptions`: what a graph is compiled with besides its nodes and
//! channels.

use std::sync::Arc;

use stategraph_checkpoint::{CheckpointSaver, SharedSaver};
use stategraph_store::{SharedStore, Store};

use crate::cache::NodeCache;
use crate::run_info::SubgraphCheckpoints;

/// How a graph is compiled: its name, node cache, checkpointer, store,
/// static breakpoints and `debug` (LangGraph's `compile(...)` arguments).
/// `StateGraph::compile_with` and [`PregelBuilder::options`](crate::PregelBuilder::options)
/// both take it.
///
/// ```
/// use stategraph_checkpoint::InMemorySaver;
/// use stategraph_pregel::CompileOptions;
///
/// let options = CompileOptions::new()
///     .name("agent")
///     .checkpointer(InMemorySaver::new())
///     .interrupt_before(["tools"]);
/// assert_eq!(options.interrupt_before_nodes(), ["tools"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    pub(crate) name: Option<String>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    pub(crate) checkpointer: Option<SharedSaver>,
    pub(crate) store: Option<SharedStore>,
    pub(crate) debug: bool,
    pub(crate) interrupt_before: Vec<String>,
    pub(crate) interrupt_after: Vec<String>,
    pub(crate) subgraph_checkpoints: SubgraphCheckpoints,
}

impl CompileOptions {
    /// The defaults: graph name `LangGraph`, no cache, no checkpointer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The graph's name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The cache for nodes with a cache policy (LangGraph's `cache=`).
    #[must_use]
    pub fn cache(mut self, cache: impl NodeCache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Saves a checkpoint of every run through this saver (LangGraph's
    /// `checkpointer=`): any [`CheckpointSaver`]. Runs then need a
    /// `thread_id` in their config, and the state API
    /// ([`Pregel::get_state`](crate::Pregel::get_state)) reads the saved
    /// checkpoints.
    #[must_use]
    pub fn checkpointer(self, saver: impl CheckpointSaver) -> Self {
        self.shared_checkpointer(Arc::new(saver))
    }

    /// [`CompileOptions::checkpointer`] with a saver shared with other code.
    #[must_use]
    pub fn shared_checkpointer(mut self, saver: SharedSaver) -> Self {
        self.checkpointer = Some(saver);
        self
    }

    /// Gives every node the long-term memory `store` (LangGraph's
    /// `compile(store=...)`): any [`Store`], read in a node with
    /// [`TaskContext::store`](crate::TaskContext::store).
    /// Subgraphs without a store of their own use it too.
    #[must_use]
    pub fn store(self, store: impl Store) -> Self {
        self.shared_store(Arc::new(store))
    }

    /// [`CompileOptions::store`] with a store shared with other code.
    #[must_use]
    pub fn shared_store(mut self, store: SharedStore) -> Self {
        self.store = Some(store);
        self
    }

    /// LangGraph's `debug=True`: every run prints its `updates` and `values`
    /// chunks as `tracing` events (target `stategraph::print`, INFO), whatever
    /// modes it streams; see
    /// [`RunOptions::print_modes`](crate::RunOptions::print_modes).
    #[must_use]
    pub fn debug(mut self, debug: bool) -> Self {
        self.debug = debug;
        self
    }

    /// Static breakpoints (LangGraph's `interrupt_before=`): runs stop
    /// before a step that would run one of these nodes (`"*"`: any node) and
    /// continue from there when resumed with no input
    /// ([`Input::Resume`](crate::Input::Resume)). Needs a
    /// checkpointer to resume. Unknown names fail `compile`.
    #[must_use]
    pub fn interrupt_before<I, S>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.interrupt_before = nodes.into_iter().map(Into::into).collect();
        self
    }

    /// How this graph checkpoints when a graph with a checkpointer runs it
    /// as a subgraph (LangGraph's subgraph `checkpointer=None | True |
    /// False`): per invocation (the default), per thread, or never.
    #[must_use]
    pub fn subgraph_checkpoints(mut self, mode: SubgraphCheckpoints) -> Self {
        self.subgraph_checkpoints = mode;
        self
    }

    /// Static breakpoints after nodes (LangGraph's `interrupt_after=`): runs
    /// stop after a step that ran one of these nodes, once its checkpoint is
    /// saved.
    #[must_use]
    pub fn interrupt_after<I, S>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.interrupt_after = nodes.into_iter().map(Into::into).collect();
        self
    }

    /// The graph's name (`LangGraph` unless set).
    pub fn graph_name(&self) -> &str {
        self.name.as_deref().unwrap_or("LangGraph")
    }

    /// The nodes a run stops before (LangGraph's `interrupt_before_nodes`).
    pub fn interrupt_before_nodes(&self) -> &[String] {
        &self.interrupt_before
    }

    /// The nodes a run stops after (LangGraph's `interrupt_after_nodes`).
    pub fn interrupt_after_nodes(&self) -> &[String] {
        &self.interrupt_after
    }
}
