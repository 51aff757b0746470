//! CP-PUT: storing checkpoints (base capability `put`).

use serde_json::json;
use stategraph_checkpoint::{
    ChannelVersions, CheckpointConfig, CheckpointSaver, CheckpointSource, Value,
};

use crate::fixtures::{
    chain_steps, checkpoint, checkpoint_with, config, config_ns, get_found, id_of, json_of,
    loop_metadata, metadata, put, put_values, put_with, text, thread_id, values, version,
};

/// CP-PUT-01: `put` returns the stored checkpoint's address: the thread, the
/// namespace `""` and the checkpoint's own id.
pub async fn cp_put_01_put_returns_stored_config<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let checkpoint = checkpoint_with(&[("k", text("v"))]);
    let id = checkpoint.id.clone();
    let stored = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
    assert_eq!(
        stored.thread_id, tid,
        "CP-PUT-01: returned config must name the thread"
    );
    assert_eq!(
        stored.checkpoint_ns, "",
        "CP-PUT-01: returned config must name the root namespace"
    );
    assert_eq!(
        stored.checkpoint_id,
        Some(id),
        "CP-PUT-01: returned config must carry the checkpoint's id"
    );
}

/// CP-PUT-02: a stored checkpoint is found again through the returned config,
/// with the same id and exactly the stored channel values.
pub async fn cp_put_02_get_returns_stored_values<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let checkpoint = checkpoint_with(&[("msg", text("hello"))]);
    let id = checkpoint.id.clone();
    let stored = put(
        saver,
        &config(&tid),
        checkpoint,
        metadata(CheckpointSource::Input, -1),
    )
    .await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.checkpoint.id, id,
        "CP-PUT-02: get_tuple must return the stored checkpoint"
    );
    assert_eq!(
        tuple.checkpoint.channel_values,
        values(&[("msg", text("hello"))]),
        "CP-PUT-02: channel values must read back exactly"
    );
}

/// CP-PUT-03: values of different JSON types (string, integer, list, object)
/// read back equal and with the same JSON type (an integer stays an integer).
pub async fn cp_put_03_value_types_round_trip<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let written = [
        ("str", json!("text")),
        ("int", json!(42)),
        ("list", json!([1, 2, 3])),
        ("dict", json!({"nested": true})),
    ];
    let entries: Vec<(&str, Value)> = written
        .iter()
        .map(|(channel, json)| (*channel, Value::from_json(json.clone())))
        .collect();
    let stored = put_values(saver, &config(&tid), &entries).await;
    let tuple = get_found(saver, &stored).await;
    for (channel, expected) in &written {
        let read = tuple
            .checkpoint
            .channel_values
            .get(*channel)
            .unwrap_or_else(|| panic!("CP-PUT-03: channel {channel:?} is missing"));
        // serde_json's own equality: 42 and 42.0 differ, so the type must survive.
        assert_eq!(
            &json_of(read),
            expected,
            "CP-PUT-03: channel {channel:?} must keep its value and type"
        );
    }
}

/// CP-PUT-04: channel versions read back with the same counters.
pub async fn cp_put_04_channel_versions_round_trip<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let checkpoint = checkpoint()
        .with_channel("a", text("x"), version(1))
        .with_channel("b", text("y"), version(2));
    let sent = checkpoint.channel_versions.clone();
    let stored = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
    let tuple = get_found(saver, &stored).await;
    for (channel, counter) in [("a", 1), ("b", 2)] {
        let read = tuple
            .checkpoint
            .channel_versions
            .get(channel)
            .unwrap_or_else(|| panic!("CP-PUT-04: version of {channel:?} is missing"));
        assert_eq!(
            read.counter(),
            counter,
            "CP-PUT-04: version counter of {channel:?}"
        );
    }
    assert_eq!(
        tuple.checkpoint.channel_versions, sent,
        "CP-PUT-04: versions must read back exactly"
    );
}

/// CP-PUT-05: `versions_seen` of a checkpoint without values reads back with
/// every node.
pub async fn cp_put_05_versions_seen_round_trips<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut checkpoint = checkpoint();
    checkpoint
        .versions_seen
        .insert("node1".into(), [("ch".to_owned(), version(1))].into());
    checkpoint
        .versions_seen
        .insert("node2".into(), [("ch".to_owned(), version(2))].into());
    let sent = checkpoint.versions_seen.clone();
    let stored = put_with(
        saver,
        &config(&tid),
        checkpoint,
        loop_metadata(),
        ChannelVersions::new(),
    )
    .await;
    let tuple = get_found(saver, &stored).await;
    for node in ["node1", "node2"] {
        assert!(
            tuple.checkpoint.versions_seen.contains_key(node),
            "CP-PUT-05: versions_seen must contain {node:?}"
        );
    }
    assert_eq!(
        tuple.checkpoint.versions_seen, sent,
        "CP-PUT-05: versions_seen must read back exactly"
    );
}

/// CP-PUT-06: metadata `source`, `step` and a custom key round-trip.
pub async fn cp_put_06_metadata_round_trips<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let sent = metadata(CheckpointSource::Loop, 3).with("custom_key", json!("custom_value"));
    let stored = put(saver, &config(&tid), checkpoint(), sent.clone()).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.metadata.source,
        Some(CheckpointSource::Loop),
        "CP-PUT-06: source"
    );
    assert_eq!(tuple.metadata.step, Some(3), "CP-PUT-06: step");
    assert_eq!(
        tuple.metadata.extra.get("custom_key"),
        Some(&json!("custom_value")),
        "CP-PUT-06: custom metadata key"
    );
    assert_eq!(
        tuple.metadata, sent,
        "CP-PUT-06: metadata must read back exactly"
    );
}

/// CP-PUT-07: a checkpoint stored in the root namespace `""` is found there
/// and its config names namespace `""`.
pub async fn cp_put_07_root_namespace<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    put_values(saver, &config_ns(&tid, ""), &[("k", text("v"))]).await;
    let tuple = get_found(saver, &config_ns(&tid, "")).await;
    assert_eq!(
        tuple.config.checkpoint_ns, "",
        "CP-PUT-07: namespace must read back as \"\""
    );
}

/// CP-PUT-08: a checkpoint stored in namespace `"child:abc"` is found there
/// and its config names that namespace.
pub async fn cp_put_08_child_namespace<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put_values(saver, &config_ns(&tid, "child:abc"), &[("k", text("v"))]).await;
    assert_eq!(
        stored.checkpoint_ns, "child:abc",
        "CP-PUT-08: returned config namespace"
    );
    let tuple = get_found(saver, &config_ns(&tid, "child:abc")).await;
    assert_eq!(
        tuple.config.checkpoint_ns, "child:abc",
        "CP-PUT-08: namespace must read back"
    );
}

/// CP-PUT-09: the default namespace. A config that names no namespace — built
/// with [`CheckpointConfig::thread`] or deserialized from JSON without
/// `checkpoint_ns` — addresses the root namespace `""`, on `put` and on
/// `get_tuple`. (A typed config cannot lack the key itself; see the README.)
pub async fn cp_put_09_default_namespace<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let from_json: CheckpointConfig = serde_json::from_value(json!({"thread_id": tid}))
        .unwrap_or_else(|err| {
            panic!("CP-PUT-09: a config without checkpoint_ns must deserialize: {err}")
        });
    let stored = put_values(saver, &from_json, &[("k", text("v"))]).await;
    assert_eq!(
        stored.checkpoint_ns, "",
        "CP-PUT-09: a missing namespace means \"\""
    );
    let tuple = get_found(saver, &config_ns(&tid, "")).await;
    assert_eq!(
        tuple.config, stored,
        "CP-PUT-09: found under the explicit root namespace"
    );
    let tuple = get_found(saver, &CheckpointConfig::thread(tid.clone())).await;
    assert_eq!(
        tuple.config, stored,
        "CP-PUT-09: found through the default config"
    );
}

/// CP-PUT-10: every checkpoint of a chain of 3 is retrievable by its exact id.
pub async fn cp_put_10_chain_all_retrievable<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 3).await;
    for (step, cfg) in stored.iter().enumerate() {
        let tuple = get_found(saver, cfg).await;
        assert_eq!(
            tuple.config, *cfg,
            "CP-PUT-10: checkpoint {step} must be found by id"
        );
        assert_eq!(
            tuple.metadata.step,
            i64::try_from(step).ok(),
            "CP-PUT-10: step of checkpoint {step}"
        );
    }
}

/// CP-PUT-11: the same channel at the same version in two threads does not
/// collide: each thread reads its own value.
pub async fn cp_put_11_threads_do_not_collide<S: CheckpointSaver>(saver: &S) {
    let (a, b) = (thread_id(), thread_id());
    put_values(saver, &config(&a), &[("x", text("thread1"))]).await;
    put_values(saver, &config(&b), &[("x", text("thread2"))]).await;
    let read_a = get_found(saver, &config(&a)).await;
    let read_b = get_found(saver, &config(&b)).await;
    assert_eq!(
        read_a.checkpoint.channel_values,
        values(&[("x", text("thread1"))]),
        "CP-PUT-11: thread A"
    );
    assert_eq!(
        read_b.checkpoint.channel_values,
        values(&[("x", text("thread2"))]),
        "CP-PUT-11: thread B"
    );
}

/// CP-PUT-12: a checkpoint put with a config carrying a checkpoint id records
/// that checkpoint as its parent.
pub async fn cp_put_12_parent_config<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put_values(saver, &config(&tid), &[("k", text("v1"))]).await;
    let c2 = put(saver, &c1, checkpoint(), loop_metadata()).await;
    let tuple = get_found(saver, &c2).await;
    let parent = tuple
        .parent_config
        .unwrap_or_else(|| panic!("CP-PUT-12: the child must have a parent_config"));
    assert_eq!(
        parent.checkpoint_id,
        Some(id_of(&c1)),
        "CP-PUT-12: parent id"
    );
}

/// CP-PUT-13: only the channels in `new_versions` need new storage; the others
/// are read from the value stored under their unchanged version, and history is
/// immutable (the parent still reads its own values).
pub async fn cp_put_13_incremental_versions_reconstruct<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put_values(
        saver,
        &config(&tid),
        &[("a", text("v1")), ("b", text("v2"))],
    )
    .await;
    let child = checkpoint()
        .with_channel("a", text("v1_updated"), version(2))
        .with_channel("b", text("v2"), version(1));
    let new_versions: ChannelVersions = [("a".to_owned(), version(2))].into();
    let c2 = put_with(saver, &c1, child, loop_metadata(), new_versions).await;
    let read2 = get_found(saver, &c2).await;
    assert_eq!(
        read2.checkpoint.channel_values,
        values(&[("a", text("v1_updated")), ("b", text("v2"))]),
        "CP-PUT-13: the child reads the updated a and the inherited b"
    );
    let read1 = get_found(saver, &c1).await;
    assert_eq!(
        read1.checkpoint.channel_values,
        values(&[("a", text("v1")), ("b", text("v2"))]),
        "CP-PUT-13: the parent must still read its own values"
    );
}

/// CP-PUT-14: a channel that first appears in a child is stored and read back
/// next to the inherited ones.
pub async fn cp_put_14_new_channel_added<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put_values(saver, &config(&tid), &[("a", text("v1"))]).await;
    let child = checkpoint()
        .with_channel("a", text("v1"), version(1))
        .with_channel("b", text("new_channel"), version(1));
    let new_versions: ChannelVersions = [("b".to_owned(), version(1))].into();
    let c2 = put_with(saver, &c1, child, loop_metadata(), new_versions).await;
    let read = get_found(saver, &c2).await;
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("a", text("v1")), ("b", text("new_channel"))]),
        "CP-PUT-14: both the inherited and the new channel must be present"
    );
}

/// CP-PUT-15: a channel missing from `channel_versions` is absent from
/// `channel_values`, even if an ancestor stored it.
pub async fn cp_put_15_dropped_channel_absent<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put_values(
        saver,
        &config(&tid),
        &[("a", text("v1")), ("b", text("v2"))],
    )
    .await;
    let child = checkpoint().with_channel("a", text("v1_updated"), version(2));
    let c2 = put(saver, &c1, child, loop_metadata()).await;
    let read = get_found(saver, &c2).await;
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("a", text("v1_updated"))]),
        "CP-PUT-15: a is updated and b, not versioned in the child, is absent"
    );
}

/// CP-PUT-16: the metadata `run_id` round-trips.
pub async fn cp_put_16_run_id_round_trips<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let run = crate::fixtures::run_id();
    let mut sent = loop_metadata();
    sent.run_id = Some(run.clone());
    let stored = put(saver, &config(&tid), checkpoint(), sent).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(tuple.metadata.run_id, Some(run), "CP-PUT-16: run_id");
}

/// CP-PUT-17: nested `versions_seen` (several channels per node) read back
/// with every version and counter.
pub async fn cp_put_17_nested_versions_seen<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut checkpoint = checkpoint();
    checkpoint.versions_seen.insert(
        "node1".into(),
        [
            ("ch_a".to_owned(), version(1)),
            ("ch_b".to_owned(), version(2)),
        ]
        .into(),
    );
    checkpoint
        .versions_seen
        .insert("node2".into(), [("ch_a".to_owned(), version(3))].into());
    let stored = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
    let tuple = get_found(saver, &stored).await;
    for (node, channel, counter) in [
        ("node1", "ch_a", 1),
        ("node1", "ch_b", 2),
        ("node2", "ch_a", 3),
    ] {
        let read = tuple
            .checkpoint
            .versions_seen
            .get(node)
            .and_then(|seen| seen.get(channel))
            .unwrap_or_else(|| {
                panic!("CP-PUT-17: versions_seen[{node:?}][{channel:?}] is missing")
            });
        assert_eq!(
            read.counter(),
            counter,
            "CP-PUT-17: versions_seen[{node:?}][{channel:?}]"
        );
    }
}
