//! The checkpoint-saver conformance suite (`stategraph-conformance`) run
//! against the in-memory saver, once sharing live values and once storing
//! every value encoded by the JSON serializer.

mod shared {
    use stategraph_checkpoint::InMemorySaver;

    async fn factory() -> InMemorySaver {
        InMemorySaver::new()
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);
}

mod serialized {
    use stategraph_checkpoint::InMemorySaver;
    use stategraph_checkpoint::serde::JsonSerializer;

    async fn factory() -> InMemorySaver {
        InMemorySaver::with_serializer(JsonSerializer)
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);
}
