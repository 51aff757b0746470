//! Static breakpoints (`interrupt_before` / `interrupt_after`): the nodes a
//! run stops before or after. The loop checks them in `pregel_loop.rs`.

use crate::error::{PregelError, Result};
use crate::graph::CompiledGraph;
use crate::shape::NodeId;
/// The nodes a static breakpoint stops at.
#[derive(Default)]
pub(super) struct Breakpoints {
    // `"*"`: every node that is not hidden.
    pub(super) all: bool,
    pub(super) nodes: Vec<NodeId>,
}

impl Breakpoints {
    pub(super) fn resolve(graph: &CompiledGraph, names: &[String]) -> Result<Self> {
        let mut points = Self::default();
        for name in names {
            if name == "*" {
                points.all = true;
                continue;
            }
            match graph.shape.node_id(name) {
                Some(node) => points.nodes.push(node),
                None => {
                    return Err(PregelError::InvalidGraph(format!(
                        "interrupt node {name:?} is not a node of the graph"
                    )));
                }
            }
        }
        Ok(points)
    }

    pub(super) fn is_empty(&self) -> bool {
        !self.all && self.nodes.is_empty()
    }

    pub(super) fn matches(&self, graph: &CompiledGraph, node: NodeId) -> bool {
        (self.all && !graph.nodes[node].hidden) || self.nodes.contains(&node)
    }
}
