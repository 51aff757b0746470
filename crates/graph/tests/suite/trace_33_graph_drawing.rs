//! Golden trace 33: `get_graph()` nodes and edges (conditional flag, labels
//! from path maps), the same with `xray` expanding a subgraph node, both as
//! Mermaid text, and the ASCII drawing, compared with LangGraph 1.2.22.
//!
//! The router `route` of the case is typed `Literal["left", "right",
//! "__end__"]`, from which LangGraph infers the path map
//! `{"left": "left", ...}`. Rust has no such return-type introspection, so
//! the port passes that path map explicitly.
//!
//! `nodes`, `edges`, `nodes_xray`, `edges_xray`, `mermaid` and
//! `mermaid_xray` are compared exactly. `ascii` is informative (LangGraph
//! lays it out with grandalf): the port draws the same boxes on the same
//! layers, with plain and dotted edges, but places them its own way.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};
use stategraph_graph::{
    CompiledStateGraph, DrawableGraph, END, NodeError, PathMap, START, Schema, StateGraph,
};

fn expected() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/traces/33_graph_drawing.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

async fn nothing(_s: Json) -> Result<Json, NodeError> {
    Ok(json!({}))
}

fn app() -> CompiledStateGraph {
    let mut child = StateGraph::new(Schema::new().append("log"));
    child.add_node("inner1", nothing).unwrap();
    child.add_node("inner2", nothing).unwrap();
    child.add_edge(START, "inner1").unwrap();
    child.add_edge("inner1", "inner2").unwrap();
    let child = child.compile().unwrap();

    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in ["entry", "left", "right", "join"] {
        g.add_node(name, nothing).unwrap();
    }
    g.add_node("sub", child).unwrap();
    g.add_edge(START, "entry").unwrap();
    // Python: `def route(s) -> Literal["left", "right", "__end__"]`.
    g.add_conditional_edges(
        "entry",
        |_s: &Json| "left",
        Some(PathMap::from(["left", "right", END])),
    )
    .unwrap();
    g.add_conditional_edges(
        "sub",
        |_s: &Json| "x",
        Some(PathMap::from([("x", "left"), ("y", END)])),
    )
    .unwrap();
    g.add_waiting_edge(["left", "right"], "join").unwrap();
    g.add_edge("join", "sub").unwrap();
    g.compile().unwrap()
}

/// The case's `sorted(graph.nodes)`.
fn nodes(graph: &DrawableGraph) -> Json {
    let mut ids: Vec<&str> = graph.nodes().iter().map(|n| n.id.as_str()).collect();
    ids.sort_unstable();
    json!(ids)
}

/// The case's `sorted([source, target, conditional, str(data) or None])`.
fn edges(graph: &DrawableGraph) -> Json {
    let mut rows: Vec<(&str, &str, bool, Option<&str>)> = graph
        .edges()
        .iter()
        .map(|e| {
            (
                e.source.as_str(),
                e.target.as_str(),
                e.conditional,
                e.data.as_deref(),
            )
        })
        .collect();
    rows.sort_unstable();
    json!(rows)
}

#[test]
fn trace_33_nodes_and_edges() {
    let graph = app().get_graph(false);
    assert_eq!(nodes(&graph), expected()["nodes"]);
    assert_eq!(edges(&graph), expected()["edges"]);
}

#[test]
fn trace_33_nodes_and_edges_xray() {
    let graph = app().get_graph(true);
    assert_eq!(nodes(&graph), expected()["nodes_xray"]);
    assert_eq!(edges(&graph), expected()["edges_xray"]);
    // One level is all there is here.
    assert_eq!(app().get_graph_xray_depth(1), graph);
}

#[test]
fn trace_33_mermaid() {
    let mermaid = app().get_graph(false).draw_mermaid();
    assert_eq!(mermaid, expected()["mermaid"].as_str().unwrap());
}

#[test]
fn trace_33_mermaid_xray() {
    let mermaid = app().get_graph(true).draw_mermaid();
    assert_eq!(mermaid, expected()["mermaid_xray"].as_str().unwrap());
}

/// Each box label of an ASCII drawing with the index of its layer (boxes on
/// the same rows share a layer).
fn ascii_layers(drawing: &str) -> BTreeMap<String, usize> {
    let mut rows: Vec<(usize, String)> = Vec::new();
    for (row, line) in drawing.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("| ") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(" |") else { break };
            rows.push((row, after[..end].to_owned()));
            rest = &after[end + 2..];
        }
    }
    let mut distinct: Vec<usize> = rows.iter().map(|(row, _)| *row).collect();
    distinct.dedup();
    rows.into_iter()
        .map(|(row, label)| (label, distinct.iter().position(|r| *r == row).unwrap()))
        .collect()
}

#[test]
fn trace_33_ascii_has_the_same_boxes_and_layers() {
    let fixture = expected()["ascii"].as_str().unwrap().to_owned();
    let drawing = app().get_graph(false).draw_ascii();
    assert_eq!(ascii_layers(&drawing), ascii_layers(&fixture));
    assert_eq!(
        ascii_layers(&drawing).keys().collect::<Vec<_>>(),
        [
            "__end__",
            "__start__",
            "entry",
            "join",
            "left",
            "right",
            "sub"
        ]
    );
    // Plain edges are drawn with `*`, conditional ones with `.`.
    assert!(drawing.contains('*') && drawing.contains('.'));
    // Deterministic.
    assert_eq!(drawing, app().get_graph(false).draw_ascii());
}

#[test]
fn trace_33_to_json_matches_langgraph() {
    // The case script does not record `to_json()` (its docstring mentions
    // it); this is what LangGraph 1.2.22 (langchain-core 1.7.2) returns for
    // `app.get_graph().to_json()` on the same graph.
    let function = json!(["langgraph", "_internal", "_runnable", "RunnableCallable"]);
    let node =
        |id: &str| json!({"id": id, "type": "runnable", "data": {"id": function, "name": id}});
    let expected = json!({
        "nodes": [
            node("__start__"), node("entry"), node("left"), node("right"), node("join"),
            {"id": "sub", "type": "runnable", "data": {
                "id": ["langgraph", "graph", "state", "CompiledStateGraph"], "name": "sub"}},
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "entry"},
            {"source": "entry", "target": "__end__", "conditional": true},
            {"source": "entry", "target": "left", "conditional": true},
            {"source": "entry", "target": "right", "conditional": true},
            {"source": "join", "target": "sub"},
            {"source": "left", "target": "join"},
            {"source": "right", "target": "join"},
            {"source": "sub", "target": "__end__", "data": "y", "conditional": true},
            {"source": "sub", "target": "left", "data": "x", "conditional": true},
        ],
    });
    assert_eq!(app().get_graph(false).to_json(), expected);
}

/// Static breakpoints are drawn as `__interrupt` after `defer`, as
/// LangGraph 1.2.22 draws them (recorded with the same graph in Python).
#[test]
fn breakpoints_are_drawn_as_langgraph_draws_them() {
    use stategraph_graph::{CompileOptions, NodeSpec};
    let mut g = StateGraph::new(Schema::new().append("x"));
    let noop = |_s: Json| std::future::ready(Ok::<_, NodeError>(json!({})));
    g.add_node("a", noop).unwrap();
    g.add_node_spec("b", NodeSpec::new(noop).defer()).unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", END).unwrap();
    let app = g
        .compile_with(
            CompileOptions::new()
                .interrupt_before(["a"])
                .interrupt_after(["a", "b"]),
        )
        .unwrap();
    let expected = "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\
        \t__start__([<p>__start__</p>]):::first\n\
        \ta(a<hr/><small><em>__interrupt = before,after</em></small>)\n\
        \tb(b<hr/><small><em>defer = True\n__interrupt = after</em></small>)\n\
        \t__end__([<p>__end__</p>]):::last\n\
        \t__start__ --> a;\n\ta --> b;\n\tb --> __end__;\n\
        \tclassDef default fill:#f2f0ff,line-height:1.2\n\
        \tclassDef first fill-opacity:0\n\
        \tclassDef last fill:#bfb6fc\n";
    assert_eq!(app.get_graph(false).draw_mermaid(), expected);
}
