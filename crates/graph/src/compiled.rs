//! A compiled `StateGraph`.

use std::fmt;

use stategraph_core::{RunnableConfig, Value};
use stategraph_pregel::{Input, Pregel, Result, RunStream, StreamModes};

use crate::builder::StateGraph;

/// A runnable graph (LangGraph's `CompiledStateGraph`).
///
/// Cloning is cheap.
#[derive(Clone)]
pub struct CompiledStateGraph {
    pregel: Pregel,
}

impl fmt::Debug for CompiledStateGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledStateGraph")
            .field("pregel", &self.pregel)
            .finish()
    }
}

impl CompiledStateGraph {
    pub(crate) fn new(pregel: Pregel, _graph: &StateGraph) -> Self {
        Self { pregel }
    }

    /// The underlying Pregel graph.
    pub fn pregel(&self) -> &Pregel {
        &self.pregel
    }

    /// Runs the graph to the end and returns the output keys' final values.
    ///
    /// # Errors
    /// What stopped the run.
    pub async fn invoke(&self, input: impl Into<Input>, config: &RunnableConfig) -> Result<Value> {
        self.pregel.invoke(input, config).await
    }

    /// Runs the graph, streaming chunks of the requested modes.
    pub fn stream(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        modes: impl Into<StreamModes>,
    ) -> RunStream {
        self.pregel.stream(input, config, modes)
    }
}
