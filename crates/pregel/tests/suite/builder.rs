//! Building a graph: every mistake is a typed error naming what is wrong.

use std::sync::Arc;

use stategraph_channels::{Channel, LastValue};
use stategraph_pregel::{IoSpec, NodeBuilder, Pregel, PregelError, PregelNode, Reads};

fn invalid(result: Result<Pregel, PregelError>) -> String {
    match result {
        Err(PregelError::InvalidGraph(message)) => message,
        Err(other) => panic!("expected InvalidGraph, got {other:?}"),
        Ok(_) => panic!("expected InvalidGraph, the graph built"),
    }
}

#[test]
fn a_channel_or_node_declared_twice_is_refused() {
    let mut builder = Pregel::builder();
    builder.add_channel("x", LastValue::<i64>::new()).unwrap();
    let shared: Arc<dyn Channel> = Arc::new(LastValue::<i64>::new());
    let err = builder
        .add_shared_channel(Arc::from("x"), shared)
        .unwrap_err();
    assert!(
        err.to_string().contains("channel \"x\" is declared twice"),
        "{err}"
    );

    let node = || PregelNode::new(vec![0], Reads::Channel(0), None, Vec::new());
    builder.add_node("n", node()).unwrap();
    let err = builder.add_named_node(Arc::from("n"), node()).unwrap_err();
    assert!(
        err.to_string().contains("node \"n\" is declared twice"),
        "{err}"
    );
}

#[test]
fn outputs_by_id_must_name_declared_channels() {
    let build = |ids: Vec<usize>| {
        Pregel::builder()
            .channel("x", LastValue::<i64>::new())
            .unwrap()
            .node(
                "copy",
                NodeBuilder::new().subscribe_only("x").write_to(["x"]),
            )
            .unwrap()
            .input("x")
            .output(IoSpec::Ids(ids))
            .build()
    };
    let message = invalid(build(vec![0, 7]));
    assert!(message.contains("unknown channel id 7"), "{message}");
    let graph = build(vec![0]).unwrap();
    assert_eq!(graph.shape().channel_name(0), "x");
}

#[test]
fn a_node_reading_an_undeclared_channel_is_refused() {
    let mut builder = Pregel::builder()
        .channel("x", LastValue::<i64>::new())
        .unwrap()
        .input("x")
        .output("x");
    let reads = Reads::Map(Arc::new([(Arc::from("ghost"), 9)]));
    builder
        .add_node("n", PregelNode::new(vec![0], reads, None, Vec::new()))
        .unwrap();
    let message = invalid(builder.build());
    assert!(
        message.contains("node \"n\" refers to unknown channel id 9"),
        "{message}"
    );
}
