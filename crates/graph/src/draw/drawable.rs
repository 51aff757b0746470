//! The drawable graph (LangGraph's `get_graph()`): nodes, edges, styles.

use std::collections::BTreeSet;

use stategraph_core::JsonMap;

use super::ascii;
use super::mermaid::MermaidWriter;

/// What a node of a [`DrawableGraph`] stands for (LangGraph's node `data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeData {
    /// A node function (also the `__start__` node).
    Runnable,
    /// A compiled graph used as a node (a subgraph), not expanded.
    Graph,
}

/// A node of a [`DrawableGraph`] (LangGraph's `langchain_core` `Node`).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphNode {
    /// The unique id: the node name, or `parent:child` for a node of an
    /// expanded subgraph.
    pub id: String,
    /// The name shown in drawings (the last part of the id).
    pub name: String,
    /// What the node runs; `None` for `__end__`.
    pub data: Option<NodeData>,
    /// The node's metadata, plus `"defer": true` for deferred nodes (empty
    /// when there is none).
    pub metadata: JsonMap,
}

/// An edge of a [`DrawableGraph`] (LangGraph's `langchain_core` `Edge`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphEdge {
    /// The source node id.
    pub source: String,
    /// The target node id.
    pub target: String,
    /// The edge's label (LangGraph's `data`): the path-map key that leads to
    /// the target, when it differs from the target's name.
    pub data: Option<String>,
    /// Whether the edge is taken only sometimes (conditional edges,
    /// `Command` destinations); drawn dotted.
    pub conditional: bool,
}

/// The nodes and edges of a compiled graph, ready to draw (LangGraph's
/// `get_graph()` result). Get one from
/// [`CompiledStateGraph::get_graph`](crate::CompiledStateGraph::get_graph).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawableGraph {
    pub(super) nodes: Vec<GraphNode>,
    pub(super) edges: Vec<GraphEdge>,
}

/// The curve Mermaid draws edges with (LangGraph's `CurveStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CurveStyle {
    /// `basis`
    Basis,
    /// `bumpX`
    BumpX,
    /// `bumpY`
    BumpY,
    /// `cardinal`
    Cardinal,
    /// `catmullRom`
    CatmullRom,
    /// `linear` (the default)
    #[default]
    Linear,
    /// `monotoneX`
    MonotoneX,
    /// `monotoneY`
    MonotoneY,
    /// `natural`
    Natural,
    /// `step`
    Step,
    /// `stepAfter`
    StepAfter,
    /// `stepBefore`
    StepBefore,
}

impl CurveStyle {
    /// The name Mermaid knows the curve by.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Basis => "basis",
            Self::BumpX => "bumpX",
            Self::BumpY => "bumpY",
            Self::Cardinal => "cardinal",
            Self::CatmullRom => "catmullRom",
            Self::Linear => "linear",
            Self::MonotoneX => "monotoneX",
            Self::MonotoneY => "monotoneY",
            Self::Natural => "natural",
            Self::Step => "step",
            Self::StepAfter => "stepAfter",
            Self::StepBefore => "stepBefore",
        }
    }
}

/// The CSS of Mermaid's node classes (LangGraph's `NodeStyles`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStyles {
    /// Every node.
    pub default: String,
    /// The first node (`__start__`).
    pub first: String,
    /// The last node (`__end__`).
    pub last: String,
}

impl Default for NodeStyles {
    fn default() -> Self {
        Self {
            default: "fill:#f2f0ff,line-height:1.2".to_owned(),
            first: "fill-opacity:0".to_owned(),
            last: "fill:#bfb6fc".to_owned(),
        }
    }
}

/// Options of [`DrawableGraph::draw_mermaid_with`] (LangGraph's
/// `draw_mermaid` keyword arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MermaidOptions {
    /// Emit the front matter, node declarations and class definitions
    /// (default `true`); without them only the edges are listed.
    pub with_styles: bool,
    /// The edge curve (default [`CurveStyle::Linear`]).
    pub curve_style: CurveStyle,
    /// The node classes' CSS.
    pub node_styles: NodeStyles,
    /// Edge labels longer than this many words are wrapped (default 9).
    pub wrap_label_n_words: usize,
}

impl Default for MermaidOptions {
    fn default() -> Self {
        Self {
            with_styles: true,
            curve_style: CurveStyle::default(),
            node_styles: NodeStyles::default(),
            wrap_label_n_words: 9,
        }
    }
}

impl DrawableGraph {
    /// The nodes, in order: `__start__`, the graph's nodes in the order they
    /// were added, `__end__`, then the nodes of expanded subgraphs.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The edges, sorted by source, target, conditional flag and label, then
    /// the edges of expanded subgraphs.
    pub fn edges(&self) -> &[GraphEdge] {
        &self.edges
    }

    /// The single node no edge leads to (`__start__`), if there is exactly one.
    pub fn first_node(&self) -> Option<&GraphNode> {
        self.first_node_excluding(&[])
    }

    /// The single node no edge leaves (`__end__`), if there is exactly one.
    pub fn last_node(&self) -> Option<&GraphNode> {
        self.last_node_excluding(&[])
    }

    fn first_node_excluding(&self, exclude: &[&str]) -> Option<&GraphNode> {
        let targets: BTreeSet<&str> = self
            .edges
            .iter()
            .filter(|e| !exclude.contains(&e.source.as_str()))
            .map(|e| e.target.as_str())
            .collect();
        single(
            self.nodes
                .iter()
                .filter(|n| !exclude.contains(&n.id.as_str()) && !targets.contains(n.id.as_str())),
        )
    }

    fn last_node_excluding(&self, exclude: &[&str]) -> Option<&GraphNode> {
        let sources: BTreeSet<&str> = self
            .edges
            .iter()
            .filter(|e| !exclude.contains(&e.target.as_str()))
            .map(|e| e.source.as_str())
            .collect();
        single(
            self.nodes
                .iter()
                .filter(|n| !exclude.contains(&n.id.as_str()) && !sources.contains(n.id.as_str())),
        )
    }

    /// Adds an edge unless one already joins `source` to `target`, adding
    /// `__end__` when it is first needed.
    pub(super) fn add_edge_once(
        &mut self,
        source: &str,
        target: &str,
        data: Option<String>,
        conditional: bool,
    ) {
        if self
            .edges
            .iter()
            .any(|e| e.source == source && e.target == target)
        {
            return;
        }
        for id in [source, target] {
            if self.node(id).is_none() {
                self.nodes.push(GraphNode {
                    id: id.to_owned(),
                    name: id.to_owned(),
                    data: None,
                    metadata: JsonMap::new(),
                });
            }
        }
        self.edges.push(GraphEdge {
            source: source.to_owned(),
            target: target.to_owned(),
            data,
            conditional,
        });
    }

    fn remove_node(&mut self, id: &str) {
        self.nodes.retain(|n| n.id != id);
        self.edges.retain(|e| e.source != id && e.target != id);
    }

    fn distinct_edges(&self, keep: impl Fn(&GraphEdge) -> bool) -> usize {
        let mut seen: Vec<&GraphEdge> = Vec::new();
        for edge in self.edges.iter().filter(|e| keep(e)) {
            if !seen.contains(&edge) {
                seen.push(edge);
            }
        }
        seen.len()
    }

    /// Drops the first node when one remains after it and it has a single
    /// outgoing edge.
    fn trim_first_node(&mut self) {
        let Some(first) = self.first_node().map(|n| n.id.clone()) else {
            return;
        };
        if self.first_node_excluding(&[&first]).is_some()
            && self.distinct_edges(|e| e.source == first) == 1
        {
            self.remove_node(&first);
        }
    }

    /// Drops the last node when one remains before it and it has a single
    /// incoming edge.
    fn trim_last_node(&mut self) {
        let Some(last) = self.last_node().map(|n| n.id.clone()) else {
            return;
        };
        if self.last_node_excluding(&[&last]).is_some()
            && self.distinct_edges(|e| e.target == last) == 1
        {
            self.remove_node(&last);
        }
    }

    /// Replaces node `name` by the nodes of `subgraph` (LangGraph's xray):
    /// ids get the prefix `name:`, and edges to and from the node now go to
    /// the subgraph's first node and leave from its last node.
    pub(super) fn inline_subgraph(&mut self, name: &str, mut subgraph: DrawableGraph) {
        if subgraph.nodes.len() <= 1
            || self.node(name).is_none()
            || subgraph.first_node().is_none()
            || subgraph.last_node().is_none()
        {
            return;
        }
        subgraph.trim_first_node();
        subgraph.trim_last_node();
        let prefixed = |id: &str| format!("{name}:{id}");
        let first = subgraph.first_node().map(|n| prefixed(&n.id));
        let last = subgraph.last_node().map(|n| prefixed(&n.id));
        self.nodes.retain(|n| n.id != name);
        self.nodes
            .extend(subgraph.nodes.into_iter().map(|n| GraphNode {
                id: prefixed(&n.id),
                ..n
            }));
        self.edges
            .extend(subgraph.edges.into_iter().map(|e| GraphEdge {
                source: prefixed(&e.source),
                target: prefixed(&e.target),
                ..e
            }));
        for edge in &mut self.edges {
            if edge.source == name
                && let Some(last) = &last
            {
                edge.source.clone_from(last);
            }
            if edge.target == name
                && let Some(first) = &first
            {
                edge.target.clone_from(first);
            }
        }
    }

    /// The JSON form of the graph (LangGraph's `Graph.to_json()`):
    /// `{"nodes": [{"id", "type", "data": {"id", "name"}, "metadata"?}],
    /// "edges": [{"source", "target", "data"?, "conditional"?}]}`.
    ///
    /// A node's `data.id` names the class LangGraph would report for it
    /// (`RunnableCallable` for a function, `CompiledStateGraph` for a
    /// subgraph), so tools that read LangGraph's graph JSON read this one.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value as Json, json};
        let nodes: Vec<Json> = self
            .nodes
            .iter()
            .map(|node| {
                let mut object = JsonMap::new();
                object.insert("id".to_owned(), Json::String(node.id.clone()));
                if let Some(data) = node.data {
                    let class = match data {
                        NodeData::Runnable => {
                            json!(["langgraph", "_internal", "_runnable", "RunnableCallable"])
                        }
                        NodeData::Graph => {
                            json!(["langgraph", "graph", "state", "CompiledStateGraph"])
                        }
                    };
                    object.insert("type".to_owned(), json!("runnable"));
                    object.insert("data".to_owned(), json!({"id": class, "name": node.id}));
                }
                if !node.metadata.is_empty() {
                    object.insert("metadata".to_owned(), Json::Object(node.metadata.clone()));
                }
                Json::Object(object)
            })
            .collect();
        let edges: Vec<Json> = self
            .edges
            .iter()
            .map(|edge| {
                let mut object = JsonMap::new();
                object.insert("source".to_owned(), Json::String(edge.source.clone()));
                object.insert("target".to_owned(), Json::String(edge.target.clone()));
                if let Some(data) = &edge.data {
                    object.insert("data".to_owned(), Json::String(data.clone()));
                }
                if edge.conditional {
                    object.insert("conditional".to_owned(), Json::Bool(true));
                }
                Json::Object(object)
            })
            .collect();
        json!({"nodes": nodes, "edges": edges})
    }

    /// The graph in Mermaid flowchart syntax, with LangGraph's default
    /// options (front matter, node classes, linear curves).
    ///
    /// ```
    /// use serde_json::{json, Value as Json};
    /// use stategraph_graph::{PathMap, Schema, StateGraph, END, START};
    /// use stategraph_pregel::NodeError;
    ///
    /// let mut graph = StateGraph::new(Schema::new().append("log"));
    /// graph.add_node("work", |_s: Json| async { Ok::<_, NodeError>(json!({"log": ["w"]})) })?;
    /// graph.add_edge(START, "work")?;
    /// graph.add_conditional_edges(
    ///     "work",
    ///     |_s: &Json| "done",
    ///     Some(PathMap::from([("again", "work"), ("done", END)])),
    /// )?;
    /// let mermaid = graph.compile()?.get_graph(false).draw_mermaid();
    /// assert_eq!(
    ///     mermaid,
    ///     "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\
    ///      \t__start__([<p>__start__</p>]):::first\n\
    ///      \twork(work)\n\
    ///      \t__end__([<p>__end__</p>]):::last\n\
    ///      \t__start__ --> work;\n\
    ///      \twork -. &nbsp;done&nbsp; .-> __end__;\n\
    ///      \twork -. &nbsp;again&nbsp; .-> work;\n\
    ///      \tclassDef default fill:#f2f0ff,line-height:1.2\n\
    ///      \tclassDef first fill-opacity:0\n\
    ///      \tclassDef last fill:#bfb6fc\n"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn draw_mermaid(&self) -> String {
        self.draw_mermaid_with(&MermaidOptions::default())
    }

    /// The graph in Mermaid flowchart syntax, with options.
    ///
    /// Nodes of expanded subgraphs are drawn inside `subgraph` blocks. Where
    /// two expanded subgraphs share a name (the same graph reused under two
    /// nodes), LangGraph raises an error; this draws both blocks, which
    /// Mermaid merges.
    pub fn draw_mermaid_with(&self, options: &MermaidOptions) -> String {
        MermaidWriter::new(self, options).write()
    }

    /// The graph as ASCII art: a box per node, in layers from `__start__`
    /// down to `__end__`, with `*` lines for edges and `.` lines for
    /// conditional edges.
    ///
    /// Like LangGraph's, the drawing shows only the part of the graph
    /// connected to `__start__`. LangGraph lays the graph out with grandalf;
    /// this uses its own layered layout, so the boxes and edges are the same
    /// but the exact placement differs. The output is deterministic.
    pub fn draw_ascii(&self) -> String {
        ascii::draw(self)
    }
}

/// The only item, if there is exactly one.
fn single<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}
