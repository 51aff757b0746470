//! Golden trace 04: conditional edges. A router returning a node name (no
//! path map), a path map as a dict and as a list, a router returning `END`,
//! a list of nodes (fan-out), a router reading the state *with its node's own
//! update applied*, an unknown path-map key (`KeyError`), an unknown node name
//! without a path map (the write is dropped, not an error), and a conditional
//! entry point from `START`.
//!
//! `route_plain`'s Python return hint `Literal["small", "big"]` is the
//! [`IntoRoutes::destinations`] of its Rust result type, `Size`: the `plain`
//! branch draws and routes as the `list` one.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::{
    CompiledStateGraph, END, GraphError, IntoRoutes, NodeError, PathMap, Route, START, Schema,
    StateGraph, StreamMode,
};
use support::{assert_steps_eq, assert_trace, catch_invoke, fixture, invoke, stream_ok};

fn expected(key: &str) -> Json {
    fixture("04_conditional_edges")[key].clone()
}

fn schema() -> Schema {
    Schema::new().last_value("n").append("path")
}

/// The case's `step(name)` node.
fn add_step(g: &mut StateGraph, name: &'static str) {
    g.add_node(name, move |s: Json| async move {
        Ok::<_, NodeError>(match name {
            "start" => json!({"path": [name], "n": s["n"].as_i64().unwrap() + 1}),
            "big" => {
                // Parallel branch: completion order small, big.
                tokio::time::sleep(Duration::from_millis(100)).await;
                json!({"path": [name]})
            }
            _ => json!({"path": [name]}),
        })
    })
    .unwrap();
}

fn n(s: &Json) -> i64 {
    s["n"].as_i64().unwrap()
}

/// The result of `route_plain`, Python's `Literal["small", "big"]`.
#[derive(Clone, Copy)]
enum Size {
    Small,
    Big,
}

impl IntoRoutes for Size {
    fn into_routes(self) -> Vec<Route> {
        let name = match self {
            Self::Small => "small",
            Self::Big => "big",
        };
        vec![Route::To(name.to_owned())]
    }

    fn destinations() -> Option<&'static [&'static str]> {
        Some(&["small", "big"])
    }
}

fn route_plain(s: &Json) -> Size {
    if n(s) < 3 { Size::Small } else { Size::Big }
}

fn route_key(s: &Json) -> &'static str {
    if n(s) < 3 { "lo" } else { "hi" }
}

fn route_many(s: &Json) -> Vec<&'static str> {
    if n(s) == 10 {
        vec!["small", "big"]
    } else {
        vec![END]
    }
}

fn build(kind: &str) -> CompiledStateGraph {
    let mut g = StateGraph::new(schema());
    for name in ["start", "small", "big"] {
        add_step(&mut g, name);
    }
    g.add_edge(START, "start").unwrap();
    match kind {
        "plain" => g.add_conditional_edges("start", route_plain, None),
        "dict" => g.add_conditional_edges(
            "start",
            route_key,
            Some(PathMap::from([("lo", "small"), ("hi", "big")])),
        ),
        "list" => {
            g.add_conditional_edges("start", route_plain, Some(PathMap::from(["small", "big"])))
        }
        "many" => g.add_conditional_edges("start", route_many, None),
        other => panic!("unknown kind {other}"),
    }
    .unwrap();
    g.add_edge("small", END).unwrap();
    g.add_edge("big", END).unwrap();
    g.compile().unwrap()
}

fn check_mermaid(kind: &str) {
    let mermaid = build(kind).get_graph(false).draw_mermaid();
    assert_eq!(Json::String(mermaid), expected(kind)["mermaid"]);
}

async fn check(kind: &str, n: i64) {
    let streamed = stream_ok(
        &build(kind),
        json!({"n": n, "path": []}),
        &RunnableConfig::default(),
        StreamMode::Updates,
    )
    .await;
    assert_steps_eq(&streamed.by_step(), &expected(kind)[format!("n{n}")]);
}

#[tokio::test]
async fn trace_04_plain_n0() {
    check("plain", 0).await;
}

#[tokio::test]
async fn trace_04_plain_n9() {
    check("plain", 9).await;
}

#[tokio::test]
async fn trace_04_dict_n0() {
    check("dict", 0).await;
}

#[tokio::test]
async fn trace_04_dict_n9() {
    check("dict", 9).await;
}

#[tokio::test]
async fn trace_04_list_n0() {
    check("list", 0).await;
}

#[tokio::test]
async fn trace_04_list_n9() {
    check("list", 9).await;
}

#[tokio::test]
async fn trace_04_many_n0() {
    check("many", 0).await;
}

#[tokio::test]
async fn trace_04_many_n9() {
    // Fan-out: small and big run in the same superstep.
    check("many", 9).await;
}

#[tokio::test]
async fn trace_04_unknown_path_map_key() {
    let mut g = StateGraph::new(schema());
    add_step(&mut g, "start");
    add_step(&mut g, "small");
    g.add_edge(START, "start").unwrap();
    g.add_conditional_edges(
        "start",
        |_: &Json| "missing",
        Some(PathMap::from([("lo", "small")])),
    )
    .unwrap();
    let app = g.compile().unwrap();
    let out = catch_invoke(
        &app,
        json!({"n": 0, "path": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("unknown_path_map_key"));
}

#[tokio::test]
async fn trace_04_unknown_node_name() {
    let mut g = StateGraph::new(schema());
    add_step(&mut g, "start");
    g.add_edge(START, "start").unwrap();
    g.add_conditional_edges("start", |_: &Json| "missing", None)
        .unwrap();
    let app = g.compile().unwrap();
    let out = catch_invoke(
        &app,
        json!({"n": 0, "path": []}),
        &RunnableConfig::default(),
    )
    .await;
    assert_trace(&out, &expected("unknown_node_name"));
}

#[tokio::test]
async fn trace_04_from_start() {
    let mut g = StateGraph::new(schema());
    add_step(&mut g, "small");
    add_step(&mut g, "big");
    g.set_conditional_entry_point(route_plain, None).unwrap();
    let app = g.compile().unwrap();
    let config = RunnableConfig::default();
    let out = json!({
        "n0": invoke(&app, json!({"n": 0, "path": []}), &config).await,
        "n5": invoke(&app, json!({"n": 5, "path": []}), &config).await,
    });
    assert_trace(&out, &expected("from_start"));
}

#[test]
fn trace_04_plain_mermaid() {
    check_mermaid("plain");
}

/// A destination the result type names must be a node, as LangGraph checks
/// a `Literal` hint's values when it compiles.
#[test]
fn declared_destinations_must_be_nodes() {
    #[derive(Clone, Copy)]
    struct Huge;
    impl IntoRoutes for Huge {
        fn into_routes(self) -> Vec<Route> {
            vec![Route::To("huge".to_owned())]
        }
        fn destinations() -> Option<&'static [&'static str]> {
            Some(&["small", "huge"])
        }
    }
    let mut g = StateGraph::new(schema());
    add_step(&mut g, "start");
    add_step(&mut g, "small");
    g.add_edge(START, "start").unwrap();
    g.add_conditional_edges("start", |_: &Json| Huge, None)
        .unwrap();
    match g.compile() {
        Err(err @ GraphError::UnknownBranchTarget { .. }) => assert_eq!(
            err.to_string(),
            "At 'start' node, 'condition_0' branch found unknown target 'huge'"
        ),
        Err(other) => panic!("expected an unknown branch target, got {other}"),
        Ok(_) => panic!("a destination that is not a node compiled"),
    }
}

#[test]
fn trace_04_dict_mermaid() {
    check_mermaid("dict");
}

#[test]
fn trace_04_list_mermaid() {
    check_mermaid("list");
}

#[test]
fn trace_04_many_mermaid() {
    check_mermaid("many");
}
