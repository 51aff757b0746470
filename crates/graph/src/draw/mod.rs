//! Drawing a compiled graph: LangGraph's `get_graph()`, `draw_mermaid()` and
//! `draw_ascii()`.
//!
//! The edges are found the way LangGraph finds them: a dry run of the graph's
//! channels in which no node function runs. Plain edges, waiting edges and
//! `Command` destinations write their trigger channels; conditional edges
//! contribute the destinations of their path map (a branch without a path map
//! draws no edges, as in LangGraph when the router has no `Literal` return
//! type). Nodes triggered by a write become edges; a node triggered with no
//! write of the previous step (a deferred node, for example) gets dotted edges
//! from every node of that step. Nodes that lead nowhere get an edge to
//! `__end__`.

mod ascii;
mod drawable;
mod dry_run;
mod mermaid;
mod structure;
#[cfg(test)]
mod tests;

pub use drawable::{
    CurveStyle, DrawableGraph, GraphEdge, GraphNode, MermaidOptions, NodeData, NodeStyles,
};
pub(crate) use structure::GraphStructure;
