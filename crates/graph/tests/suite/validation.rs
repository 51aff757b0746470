//! Graph definition errors: every mistake gets a typed error naming the node
//! or edge at fault, never a panic.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use serde_json::{Value as Json, json};
use stategraph_core::ErrorKind;
use stategraph_graph::{END, GraphError, NodeError, PathMap, START, Schema, StateGraph};

fn noop() -> impl Fn(Json) -> std::future::Ready<Result<Json, NodeError>> + Send + Sync + 'static {
    |_| std::future::ready(Ok(json!(null)))
}

fn graph() -> StateGraph {
    StateGraph::new(Schema::new().last_value("x"))
}

#[test]
fn reserved_and_duplicate_node_names_are_rejected() {
    let mut g = graph();
    assert!(matches!(g.add_node(START, noop()), Err(GraphError::ReservedName(n)) if n == START));
    assert!(matches!(g.add_node(END, noop()), Err(GraphError::ReservedName(n)) if n == END));
    assert!(matches!(
        g.add_node("a|b", noop()),
        Err(GraphError::ReservedCharacter { character: '|', .. })
    ));
    assert!(matches!(
        g.add_node("a:b", noop()),
        Err(GraphError::ReservedCharacter { character: ':', .. })
    ));
    g.add_node("a", noop()).unwrap();
    let err = g.add_node("a", noop()).err().unwrap();
    assert_eq!(err.to_string(), "Node `a` already present.");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[test]
fn edges_must_not_start_at_end_or_end_at_start() {
    let mut g = graph();
    assert!(matches!(g.add_edge(END, "a"), Err(GraphError::EndAsSource)));
    assert!(matches!(
        g.add_edge("a", START),
        Err(GraphError::StartAsTarget)
    ));
    assert!(matches!(
        g.add_waiting_edge(["a", END], "b"),
        Err(GraphError::EndAsSource)
    ));
}

#[test]
fn a_graph_needs_an_entry_point() {
    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    let err = g.compile().unwrap_err();
    assert!(matches!(err, GraphError::NoEntrypoint));
    assert!(err.to_string().starts_with("Graph must have an entrypoint"));
}

#[test]
fn edges_to_and_from_unknown_nodes_are_named() {
    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "missing").unwrap();
    let err = g.compile().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Found edge ending at unknown node `missing`"
    );

    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("ghost", "a").unwrap();
    let err = g.compile().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Found edge starting at unknown node 'ghost'"
    );
}

#[test]
fn branch_targets_are_checked_against_the_path_map() {
    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_conditional_edges("a", |_: &Json| "x", Some(PathMap::from([("x", "nowhere")])))
        .unwrap();
    let err = g.compile().unwrap_err();
    assert!(matches!(
        &err,
        GraphError::UnknownBranchTarget { source_node, target, .. } if source_node == "a" && target == "nowhere"
    ));
}

#[test]
fn unknown_schema_keys_are_rejected() {
    let err = graph().with_input_keys(["nope"]).err().unwrap();
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let err = graph().with_output_keys(["nope"]).err().unwrap();
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let mut g = graph();
    let err = g
        .add_node_spec(
            "a",
            stategraph_graph::NodeSpec::new(noop()).input_keys(["nope"]),
        )
        .err()
        .unwrap();
    assert!(err.to_string().contains("\"nope\""), "{err}");
}

#[test]
fn interrupt_nodes_must_exist() {
    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    g.add_edge(START, "a").unwrap();
    assert!(matches!(g.validate(&["b"]), Err(GraphError::UnknownInterruptNode(n)) if n == "b"));
    g.validate(&["a", "*"]).unwrap();
}

#[tokio::test]
async fn a_node_returning_a_non_object_is_an_invalid_update() {
    let mut g = graph();
    g.add_node("a", |_: Json| async { Ok::<_, NodeError>(json!([1, 2])) })
        .unwrap();
    g.add_edge(START, "a").unwrap();
    let err = g
        .compile()
        .unwrap()
        .invoke(json!({"x": 1}), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "InvalidUpdateError");
    assert!(
        err.to_string().starts_with("Expected dict, got [1,2]"),
        "{err}"
    );
}

#[tokio::test]
async fn a_panicking_node_is_an_error_not_a_crash() {
    let mut g = graph();
    g.add_node("a", |_: Json| async {
        if true {
            panic!("boom");
        }
        Ok::<_, NodeError>(json!(null))
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    let err = g
        .compile()
        .unwrap()
        .invoke(json!({"x": 1}), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "Panic");
    assert!(err.to_string().contains("boom"), "{err}");
}

#[tokio::test]
async fn empty_input_is_an_error() {
    let mut g = graph();
    g.add_node("a", noop()).unwrap();
    g.add_edge(START, "a").unwrap();
    let err = g
        .compile()
        .unwrap()
        .invoke(Json::Null, &Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "EmptyInputError");
}
