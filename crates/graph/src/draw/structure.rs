//! The structure a compiled graph keeps for drawing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use stategraph_core::JsonMap;

use super::drawable::{DrawableGraph, GraphNode, NodeData};
use super::dry_run::DryRun;
use crate::builder::{NodeNames, NodeSpec, StateGraph};
use crate::{END, START};

/// What a compiled graph remembers of its builder, for drawing.
pub(crate) struct GraphStructure {
    pub(super) nodes: Vec<NodeInfo>,
    pub(super) edges: Arc<BTreeSet<(String, String)>>,
    pub(super) waiting_edges: Arc<BTreeSet<(Vec<String>, String)>>,
    /// Per source node, its branches in the order they were added; each is
    /// its path map (key, destination) when it has one.
    pub(super) branches: BTreeMap<String, Vec<Option<PathMapPairs>>>,
    /// The compiled graph's static breakpoints (`*`: every node).
    interrupt_before: Vec<String>,
    interrupt_after: Vec<String>,
}

/// A path map as (key, destination) pairs.
type PathMapPairs = Vec<(String, String)>;

pub(super) struct NodeInfo {
    pub(super) name: Arc<str>,
    metadata: JsonMap,
    /// What drawing adds last (`__tools`).
    drawn: JsonMap,
    pub(super) defer: bool,
    /// `Command` destinations, with their labels.
    pub(super) destinations: Vec<(String, Option<String>)>,
    subgraph: Option<Arc<GraphStructure>>,
}

impl GraphStructure {
    /// Copies the drawing-relevant parts of `graph`, whose nodes in
    /// declaration order are `declared`.
    pub(crate) fn from_nodes(graph: &StateGraph, declared: &[(NodeNames, &NodeSpec)]) -> Self {
        let nodes = declared
            .iter()
            .map(|(names, spec)| NodeInfo {
                name: names.node.clone(),
                metadata: spec.metadata.clone(),
                drawn: spec.drawn.clone(),
                defer: spec.defer,
                destinations: spec
                    .destinations
                    .iter()
                    .map(|d| (d.clone(), spec.destination_labels.get(d).cloned()))
                    .collect(),
                subgraph: spec.subgraph.as_ref().map(|g| g.structure().clone()),
            })
            .collect();
        let branches = graph
            .branches
            .iter()
            .map(|(source, branches)| {
                let maps = branches
                    .iter()
                    .map(|(_, branch)| {
                        branch
                            .path_map
                            .as_ref()
                            .map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    })
                    .collect();
                (source.clone(), maps)
            })
            .collect();
        Self {
            nodes,
            edges: graph.edges.clone(),
            waiting_edges: graph.waiting_edges.clone(),
            branches,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
        }
    }

    /// Draws these static breakpoints as `__interrupt` metadata.
    pub(crate) fn with_interrupts(mut self, before: &[String], after: &[String]) -> Self {
        self.interrupt_before = before.to_vec();
        self.interrupt_after = after.to_vec();
        self
    }

    /// LangGraph's `__interrupt` value for `node`, if it is a breakpoint.
    fn interrupt_of(&self, node: &str) -> Option<&'static str> {
        let hit = |names: &[String]| names.iter().any(|n| n == node || n == "*");
        match (hit(&self.interrupt_before), hit(&self.interrupt_after)) {
            (true, true) => Some("before,after"),
            (true, false) => Some("before"),
            (false, true) => Some("after"),
            (false, false) => None,
        }
    }

    /// The drawable graph, expanding subgraphs `xray` levels deep.
    pub(crate) fn drawable(&self, xray: usize) -> DrawableGraph {
        let discovered = DryRun::new(self).run();
        let mut graph = DrawableGraph::default();
        graph.nodes.push(GraphNode {
            id: START.to_owned(),
            name: START.to_owned(),
            data: Some(NodeData::Runnable),
            metadata: JsonMap::new(),
        });
        for node in &self.nodes {
            let mut metadata = node.metadata.clone();
            if node.defer {
                metadata.insert("defer".to_owned(), serde_json::Value::Bool(true));
            }
            if let Some(when) = self.interrupt_of(&node.name) {
                metadata.insert("__interrupt".to_owned(), when.into());
            }
            metadata.extend(node.drawn.iter().map(|(k, v)| (k.clone(), v.clone())));
            graph.nodes.push(GraphNode {
                id: node.name.to_string(),
                name: node.name.to_string(),
                data: Some(if node.subgraph.is_some() {
                    NodeData::Graph
                } else {
                    NodeData::Runnable
                }),
                metadata,
            });
        }
        for edge in &discovered.edges {
            let data = edge.label.clone().filter(|label| *label != edge.target);
            graph.add_edge_once(&edge.source, &edge.target, data, edge.conditional);
        }
        // Nodes that lead nowhere end the graph.
        let sources: BTreeSet<&str> = discovered.edges.iter().map(|e| e.source.as_str()).collect();
        let termini: BTreeSet<&str> = discovered
            .edges
            .iter()
            .map(|e| e.target.as_str())
            .filter(|target| *target != END && !sources.contains(target))
            .collect();
        let end_edge_exists = discovered.edges.iter().any(|e| e.target == END);
        if !termini.is_empty() {
            for source in termini {
                graph.add_edge_once(source, END, None, false);
            }
        } else if discovered.last_step.len() == 1 && !end_edge_exists {
            for source in &discovered.last_step {
                graph.add_edge_once(source, END, None, true);
            }
        }
        if xray > 0 {
            for node in &self.nodes {
                if let Some(subgraph) = &node.subgraph {
                    graph.inline_subgraph(&node.name, subgraph.drawable(xray - 1));
                }
            }
        }
        graph
    }
}
