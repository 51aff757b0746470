//! The checkpoint-saver conformance suite (`stategraph-conformance`) run
//! against the in-memory saver, once sharing live values and once storing
//! every value encoded by the JSON serializer.

mod shared {
    use stategraph_checkpoint::InMemorySaver;

    async fn factory() -> InMemorySaver {
        InMemorySaver::new()
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);

    /// CP-LIM-06 (metadata is limited on every saver). Live values are
    /// never serialized, so CP-LIM-07 does not apply.
    #[tokio::test]
    async fn metadata_size_limit() {
        stategraph_conformance::limits::metadata_size_limit(&factory().await).await;
    }
}

mod serialized {
    use stategraph_checkpoint::InMemorySaver;
    use stategraph_checkpoint::serde::JsonSerializer;

    async fn factory() -> InMemorySaver {
        InMemorySaver::with_serializer(JsonSerializer)
    }

    stategraph_conformance::checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune, put_if_head]);

    /// CP-LIM-07: values pass through `JsonSerializer`, which limits them.
    #[tokio::test]
    async fn serialized_value_size_limit() {
        stategraph_conformance::limits::serialized_value_size_limit(&factory().await).await;
    }
}
