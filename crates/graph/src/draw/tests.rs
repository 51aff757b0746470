//! Drawings of small graphs compared with what LangGraph 1.2.22 draws for
//! the same graphs (`get_graph().nodes`, `.edges` and `draw_mermaid()`).

use serde_json::{Value as Json, json};
use stategraph_pregel::{NodeError, Send};

use super::{CurveStyle, DrawableGraph, MermaidOptions};
use crate::{CompiledStateGraph, END, NodeSpec, PathMap, START, Schema, StateGraph};

/// One line per graph: a name, a tab, then LangGraph's
/// `{"nodes": [[id, name, metadata]], "edges": [[source, target,
/// conditional, data]], "mermaid": ...}` (or only the Mermaid text).
const LANGGRAPH: &str = r#"no_path_map	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\ta(a)\n\tb(b)\n\t__end__(<p>__end__</p>)\n\t__start__ --> a;\n\ta --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
no_path_map_plus_edge	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "c", false, null], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__(<p>__end__</p>)\n\t__start__ --> a;\n\ta --> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
waiting	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["d", "d", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "c", false, null], ["a", "d", false, null], ["b", "c", false, null], ["b", "d", false, null], ["c", "__end__", false, null], ["d", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\td(d)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> c;\n\ta --> d;\n\tb --> c;\n\tb --> d;\n\tc --> __end__;\n\td --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
defer	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["fin", "fin", {"defer": true}], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["a", "fin", false, null], ["b", "c", false, null], ["c", "fin", true, null], ["fin", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\tfin(fin<hr/><small><em>defer = True</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\ta --> fin;\n\tb --> c;\n\tc -.-> fin;\n\tfin --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
destinations	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "__end__", true, null], ["a", "b", true, null], ["b", "__end__", true, "stop"], ["b", "c", true, "go c"], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta -.-> __end__;\n\ta -.-> b;\n\tb -. &nbsp;stop&nbsp; .-> __end__;\n\tb -. &nbsp;go c&nbsp; .-> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
send_only	{"nodes": [["__start__", "__start__", null], ["gen", "gen", null], ["rev", "rev", null], ["__end__", "__end__", null]], "edges": [["__start__", "__end__", true, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\tgen(gen)\n\trev(rev)\n\t__end__(<p>__end__</p>)\n\t__start__ -.-> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
cycle	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["b", "a", false, null], ["b", "__end__", true, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\tb --> a;\n\tb -.-> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
labels	{"nodes": [["__start__", "__start__", null], ["my node", "my node", null], ["*x*", "*x*", null], ["a-b", "a-b", {"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null}], ["__end__", "__end__", null]], "edges": [["__start__", "my node", false, null], ["my node", "*x*", true, "one two three four five six seven eight nine ten eleven"], ["my node", "__end__", true, "short label"], ["my node", "a-b", true, "k"], ["*x*", "__end__", false, null], ["a-b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tmy\\20node(my node)\n\t\\2ax\\2a(<p>*x*</p>)\n\ta-b(a-b<hr/><small><em>f = True\nk = v#60;1#62;\nl = 1, a\nn = 3</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three four five six seven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
labels_nostyle_mermaid	{"nodes": [["__start__", "__start__", null], ["my node", "my node", null], ["*x*", "*x*", null], ["a-b", "a-b", {"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null}], ["__end__", "__end__", null]], "edges": [["__start__", "my node", false, null], ["my node", "*x*", true, "one two three four five six seven eight nine ten eleven"], ["my node", "__end__", true, "short label"], ["my node", "a-b", true, "k"], ["*x*", "__end__", false, null], ["a-b", "__end__", false, null]], "mermaid": "graph TD;\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three four five six seven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n"}
labels_wrap3	"---\nconfig:\n  flowchart:\n    curve: basis\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tmy\\20node(my node)\n\t\\2ax\\2a(<p>*x*</p>)\n\ta-b(a-b<hr/><small><em>f = True\nk = v#60;1#62;\nl = 1, a\nn = 3</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three&nbsp<br>&nbspfour five six&nbsp<br>&nbspseven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"
cond_entry_selfloop	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", true, null], ["__start__", "b", true, null], ["a", "__end__", true, "done"], ["a", "a", true, "again"], ["b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ -.-> a;\n\t__start__ -.-> b;\n\ta -. &nbsp;done&nbsp; .-> __end__;\n\tb --> __end__;\n\ta -. &nbsp;again&nbsp; .-> a;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_x0	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["outer", "outer", null], ["__end__", "__end__", null]], "edges": [["__start__", "top", false, null], ["top", "outer", false, null], ["outer", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\touter(outer)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer;\n\touter --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_x1	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["__end__", "__end__", null], ["outer:mid1", "mid1", null], ["outer:inner", "inner", null]], "edges": [["__start__", "top", false, null], ["top", "outer:mid1", false, null], ["outer:inner", "__end__", false, null], ["outer:mid1", "outer:inner", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer\\3amid1;\n\touter\\3ainner --> __end__;\n\tsubgraph outer\n\touter\\3amid1(mid1)\n\touter\\3ainner(inner)\n\touter\\3amid1 --> outer\\3ainner;\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_xtrue	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["__end__", "__end__", null], ["outer:mid1", "mid1", null], ["outer:inner:deep1", "deep1", null], ["outer:inner:deep2", "deep2", null]], "edges": [["__start__", "top", false, null], ["top", "outer:mid1", false, null], ["outer:inner:deep2", "__end__", false, null], ["outer:mid1", "outer:inner:deep1", false, null], ["outer:inner:deep1", "outer:inner:deep2", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer\\3amid1;\n\touter\\3ainner\\3adeep2 --> __end__;\n\tsubgraph outer\n\touter\\3amid1(mid1)\n\touter\\3amid1 --> outer\\3ainner\\3adeep1;\n\tsubgraph inner\n\touter\\3ainner\\3adeep1(deep1)\n\touter\\3ainner\\3adeep2(deep2)\n\touter\\3ainner\\3adeep1 --> outer\\3ainner\\3adeep2;\n\tend\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
sub_multi_first	{"nodes": [["__start__", "__start__", null], ["__end__", "__end__", null], ["s:__start__", "__start__", null], ["s:p", "p", null], ["s:q", "q", null], ["s:__end__", "__end__", null]], "edges": [["__start__", "s:__start__", false, null], ["s:__end__", "__end__", false, null], ["s:__start__", "s:p", true, null], ["s:__start__", "s:q", true, null], ["s:p", "s:__end__", false, null], ["s:q", "s:__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> s\\3a__start__;\n\ts\\3a__end__ --> __end__;\n\tsubgraph s\n\ts\\3a__start__(<p>__start__</p>)\n\ts\\3ap(p)\n\ts\\3aq(q)\n\ts\\3a__end__(<p>__end__</p>)\n\ts\\3a__start__ -.-> s\\3ap;\n\ts\\3a__start__ -.-> s\\3aq;\n\ts\\3ap --> s\\3a__end__;\n\ts\\3aq --> s\\3a__end__;\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
two_termini	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "__end__", false, null], ["b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> __end__;\n\tb --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
case09	{"nodes": [["__start__", "__start__", null], ["sub", "sub", null], ["x", "x", null], ["y", "y", null], ["__end__", "__end__", null]], "edges": [["__start__", "sub", false, null], ["sub", "x", true, null], ["sub", "y", true, null], ["x", "__end__", false, null], ["y", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tsub(sub)\n\tx(x)\n\ty(y)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> sub;\n\tsub -.-> x;\n\tsub -.-> y;\n\tx --> __end__;\n\ty --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
end_edge_dropped	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["b", "c", false, null], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\tb --> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
defer_waiting	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["j", "j", {"defer": true}], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "j", false, null], ["b", "c", false, null], ["c", "j", false, null], ["j", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\tj(j<hr/><small><em>defer = True</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> j;\n\tb --> c;\n\tc --> j;\n\tj --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}"#;

fn langgraph(name: &str) -> Json {
    let line = LANGGRAPH
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}\t")))
        .unwrap();
    serde_json::from_str(line).unwrap()
}

fn check(name: &str, graph: &DrawableGraph) {
    let nodes: Vec<Json> = graph
        .nodes()
        .iter()
        .map(|n| {
            let metadata = if n.metadata.is_empty() {
                Json::Null
            } else {
                Json::Object(n.metadata.clone())
            };
            json!([n.id, n.name, metadata])
        })
        .collect();
    let edges: Vec<Json> = graph
        .edges()
        .iter()
        .map(|e| json!([e.source, e.target, e.conditional, e.data]))
        .collect();
    let expected = langgraph(name);
    assert_eq!(json!(nodes), expected["nodes"], "{name}: nodes");
    assert_eq!(json!(edges), expected["edges"], "{name}: edges");
    assert_eq!(
        graph.draw_mermaid(),
        expected["mermaid"].as_str().unwrap(),
        "{name}: mermaid"
    );
}

async fn nothing(_s: Json) -> Result<Json, NodeError> {
    Ok(json!({}))
}

fn graph(nodes: &[&str]) -> StateGraph {
    let mut g = StateGraph::new(Schema::new().append("log"));
    for name in nodes {
        g.add_node(name, nothing).unwrap();
    }
    g
}

fn compile(g: &StateGraph) -> CompiledStateGraph {
    g.compile().unwrap()
}

#[test]
fn branch_without_path_map_draws_no_edges() {
    let mut g = graph(&["a", "b"]);
    g.add_edge(START, "a").unwrap();
    g.add_conditional_edges("a", |_s: &Json| "b", None).unwrap();
    check("no_path_map", &compile(&g).get_graph(false));

    let mut g = graph(&["a", "b", "c"]);
    g.add_edge(START, "a").unwrap();
    g.add_conditional_edges("a", |_s: &Json| "b", None).unwrap();
    g.add_edge("a", "c").unwrap();
    g.add_edge("b", END).unwrap();
    check("no_path_map_plus_edge", &compile(&g).get_graph(false));
}

#[test]
fn a_compiled_graph_keeps_its_edges_when_the_builder_changes() {
    let mut g = graph(&["a", "b", "c"]);
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_waiting_edge(["a", "b"], "c").unwrap();
    let first = compile(&g);
    let before = first.get_graph(false).draw_mermaid();
    // Edges are shared with the compiled graph until the builder
    // changes them; the compiled graph must not see the change.
    g.add_edge("b", "c").unwrap();
    g.add_waiting_edge(["b", "c"], END).unwrap();
    g.add_node("d", nothing).unwrap();
    g.add_edge("c", "d").unwrap();
    assert_eq!(first.get_graph(false).draw_mermaid(), before);
    let second = compile(&g).get_graph(false).draw_mermaid();
    assert_ne!(second, before);
    assert!(second.contains("c --> d"), "{second}");
    assert!(!before.contains("d(d)"), "{before}");
}

#[test]
fn waiting_edges_and_plain_edges() {
    let mut g = graph(&["a", "b", "c", "d"]);
    g.add_edge(START, "a").unwrap();
    g.add_edge(START, "b").unwrap();
    g.add_waiting_edge(["a", "b"], "c").unwrap();
    g.add_edge("a", "d").unwrap();
    g.add_edge("b", "d").unwrap();
    check("waiting", &compile(&g).get_graph(false));
}

#[test]
fn deferred_nodes() {
    let mut g = graph(&["a", "b", "c"]);
    g.add_node_spec("fin", NodeSpec::new(nothing).defer())
        .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "c").unwrap();
    g.add_edge("a", "fin").unwrap();
    g.add_edge("fin", END).unwrap();
    check("defer", &compile(&g).get_graph(false));

    let mut g = graph(&["a", "b", "c"]);
    g.add_node_spec("j", NodeSpec::new(nothing).defer())
        .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge(START, "b").unwrap();
    g.add_edge("b", "c").unwrap();
    g.add_waiting_edge(["a", "c"], "j").unwrap();
    check("defer_waiting", &compile(&g).get_graph(false));
}

#[test]
fn command_destinations() {
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec("a", NodeSpec::new(nothing).destinations(["b", END]))
        .unwrap();
    g.add_node_spec(
        "b",
        NodeSpec::new(nothing).labeled_destinations([("c", "go c"), (END, "stop")]),
    )
    .unwrap();
    g.add_node("c", nothing).unwrap();
    g.add_edge(START, "a").unwrap();
    check("destinations", &compile(&g).get_graph(false));
}

#[test]
fn case_09_subgraph_with_destinations() {
    let mut child = graph(&["child_a"]);
    child.add_edge(START, "child_a").unwrap();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node_spec(
        "sub",
        NodeSpec::new(compile(&child)).destinations(["x", "y"]),
    )
    .unwrap();
    g.add_node("x", nothing).unwrap();
    g.add_node("y", nothing).unwrap();
    g.add_edge(START, "sub").unwrap();
    g.add_edge("x", END).unwrap();
    g.add_edge("y", END).unwrap();
    check("case09", &compile(&g).get_graph(false));
}

#[test]
fn send_only_router() {
    let mut g = graph(&["gen", "rev"]);
    g.add_conditional_edges(START, |_s: &Json| vec![Send::new("gen", json!({}))], None)
        .unwrap();
    g.add_edge("gen", "rev").unwrap();
    g.add_edge("rev", END).unwrap();
    check("send_only", &compile(&g).get_graph(false));
}

#[test]
fn cycles_and_self_loops() {
    let mut g = graph(&["a", "b"]);
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "a").unwrap();
    check("cycle", &compile(&g).get_graph(false));

    let mut g = graph(&["a", "b"]);
    g.add_conditional_edges(START, |_s: &Json| "a", Some(PathMap::from(["a", "b"])))
        .unwrap();
    g.add_conditional_edges(
        "a",
        |_s: &Json| "again",
        Some(PathMap::from([("again", "a"), ("done", END)])),
    )
    .unwrap();
    g.add_edge("b", END).unwrap();
    check("cond_entry_selfloop", &compile(&g).get_graph(false));
}

#[test]
fn end_edges_and_termini() {
    let mut g = graph(&["a", "b"]);
    g.add_edge(START, "a").unwrap();
    g.add_edge(START, "b").unwrap();
    check("two_termini", &compile(&g).get_graph(false));

    // LangGraph draws `a -> __end__` only when `a` leads nowhere else.
    let mut g = graph(&["a", "b", "c"]);
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("a", END).unwrap();
    g.add_edge("b", "c").unwrap();
    check("end_edge_dropped", &compile(&g).get_graph(false));
}

fn labels_graph() -> CompiledStateGraph {
    let mut g = graph(&["my node", "*x*"]);
    let metadata = json!({"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null});
    let Json::Object(metadata) = metadata else {
        unreachable!()
    };
    g.add_node_spec("a-b", NodeSpec::new(nothing).metadata(metadata))
        .unwrap();
    g.add_edge(START, "my node").unwrap();
    g.add_conditional_edges(
        "my node",
        |_s: &Json| "k",
        Some(PathMap::from([
            (
                "one two three four five six seven eight nine ten eleven",
                "*x*",
            ),
            ("k", "a-b"),
            ("short label", END),
        ])),
    )
    .unwrap();
    g.add_edge("*x*", END).unwrap();
    g.add_edge("a-b", END).unwrap();
    compile(&g)
}

#[test]
fn labels_ids_metadata_and_options() {
    let drawn = labels_graph().get_graph(false);
    check("labels", &drawn);
    let plain = MermaidOptions {
        with_styles: false,
        ..MermaidOptions::default()
    };
    assert_eq!(
        drawn.draw_mermaid_with(&plain),
        langgraph("labels_nostyle_mermaid")["mermaid"]
    );
    let wrapped = MermaidOptions {
        wrap_label_n_words: 3,
        curve_style: CurveStyle::Basis,
        ..MermaidOptions::default()
    };
    assert_eq!(drawn.draw_mermaid_with(&wrapped), langgraph("labels_wrap3"));
}

#[test]
fn nested_subgraphs_and_xray_depth() {
    let mut deep = graph(&["deep1", "deep2"]);
    deep.add_edge(START, "deep1").unwrap();
    deep.add_edge("deep1", "deep2").unwrap();
    let mut mid = graph(&["mid1"]);
    mid.add_node("inner", compile(&deep)).unwrap();
    mid.add_edge(START, "mid1").unwrap();
    mid.add_edge("mid1", "inner").unwrap();
    mid.add_edge("inner", END).unwrap();
    let mut top = graph(&["top"]);
    top.add_node("outer", compile(&mid)).unwrap();
    top.add_edge(START, "top").unwrap();
    top.add_edge("top", "outer").unwrap();
    let app = compile(&top);
    check("nested_x0", &app.get_graph(false));
    check("nested_x1", &app.get_graph_xray_depth(1));
    check("nested_xtrue", &app.get_graph(true));
}

#[test]
fn subgraph_whose_start_cannot_be_trimmed() {
    let mut child = graph(&["p", "q"]);
    child
        .add_conditional_edges(START, |_s: &Json| "p", Some(PathMap::from(["p", "q"])))
        .unwrap();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("s", compile(&child)).unwrap();
    g.add_edge(START, "s").unwrap();
    check("sub_multi_first", &compile(&g).get_graph(true));
}

#[test]
fn ascii_of_a_single_chain() {
    let mut g = graph(&["a"]);
    g.add_edge(START, "a").unwrap();
    let drawing = compile(&g).get_graph(false).draw_ascii();
    let expected = [
        "+-----------+",
        "| __start__ |",
        "+-----------+",
        "      *      ",
        "      *      ",
        "      *      ",
        "    +---+    ",
        "    | a |    ",
        "    +---+    ",
        "      *      ",
        "      *      ",
        "      *      ",
        " +---------+ ",
        " | __end__ | ",
        " +---------+ ",
    ];
    assert_eq!(drawing, expected.join("\n"));
}
