//! CP-GT: fetching one checkpoint (base capability `get_tuple`).

use stategraph_checkpoint::{CheckpointId, CheckpointSaver, CheckpointSource};

use crate::fixtures::{
    CHILD_NS, chain_steps, checkpoint, checkpoint_with, config, config_ns, get, get_found, id_of,
    loop_metadata, metadata, pending, put, put_values, put_writes, task_id, text, thread_id,
    values, version,
};

/// CP-GT-01: the latest checkpoint of a thread that has none is `None`, not an
/// error.
pub async fn cp_gt_01_missing_thread_is_none<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    assert!(
        get(saver, &config(&tid)).await.is_none(),
        "CP-GT-01: latest of an empty thread"
    );
    let by_id = config(&tid).with_id(CheckpointId::new());
    assert!(
        get(saver, &by_id).await.is_none(),
        "CP-GT-01: exact id on an empty thread"
    );
}

/// CP-GT-02: without a checkpoint id, the newest checkpoint (highest id) is
/// returned.
pub async fn cp_gt_02_latest_is_newest<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 3).await;
    let tuple = get_found(saver, &config(&tid)).await;
    assert_eq!(
        tuple.config, stored[2],
        "CP-GT-02: latest must be the newest checkpoint"
    );
    assert_eq!(tuple.metadata.step, Some(2), "CP-GT-02: latest step");
}

/// CP-GT-03: a config with a checkpoint id returns exactly that checkpoint,
/// not the latest.
pub async fn cp_gt_03_exact_id_lookup<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put_values(saver, &config(&tid), &[("k", text("v1"))]).await;
    put(saver, &c1, checkpoint(), loop_metadata()).await;
    let tuple = get_found(saver, &c1).await;
    assert_eq!(tuple.config, c1, "CP-GT-03: exact lookup must return c1");
    assert_eq!(
        tuple.checkpoint.channel_values,
        values(&[("k", text("v1"))]),
        "CP-GT-03: c1's values"
    );
}

/// CP-GT-04: the returned config carries thread, namespace `""` and the
/// checkpoint id, both for an exact and for a latest lookup.
pub async fn cp_gt_04_config_carries_resolved_id<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let checkpoint = checkpoint_with(&[("k", text("v"))]);
    let id = checkpoint.id.clone();
    let stored = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
    for (what, lookup) in [("exact", stored.clone()), ("latest", config(&tid))] {
        let tuple = get_found(saver, &lookup).await;
        assert_eq!(tuple.config.thread_id, tid, "CP-GT-04 ({what}): thread id");
        assert_eq!(
            tuple.config.checkpoint_ns, "",
            "CP-GT-04 ({what}): namespace"
        );
        assert_eq!(
            tuple.config.checkpoint_id.as_ref(),
            Some(&id),
            "CP-GT-04 ({what}): checkpoint id"
        );
    }
}

/// CP-GT-05: the checkpoint reads back whole: id, format version 1, the
/// timestamp, channel values, channel versions and `versions_seen`.
pub async fn cp_gt_05_checkpoint_fields_round_trip<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut sent = checkpoint_with(&[("k", text("v"))]);
    // The checklist's checkpoint has format version 1 (the runtime writes 4).
    sent.v = 1;
    sent.versions_seen
        .insert("node".into(), [("k".to_owned(), version(1))].into());
    let expected = sent.clone();
    let stored = put(saver, &config(&tid), sent, loop_metadata()).await;
    let read = get_found(saver, &stored).await.checkpoint;
    assert_eq!(read.id, expected.id, "CP-GT-05: id");
    assert_eq!(
        read.v, 1,
        "CP-GT-05: the format version round-trips (1 as sent)"
    );
    assert!(!read.ts.is_empty(), "CP-GT-05: ts must not be empty");
    assert_eq!(read.ts, expected.ts, "CP-GT-05: ts");
    assert_eq!(
        read.channel_values,
        values(&[("k", text("v"))]),
        "CP-GT-05: channel values"
    );
    assert_eq!(
        read.channel_versions, expected.channel_versions,
        "CP-GT-05: channel versions"
    );
    assert_eq!(
        read.versions_seen, expected.versions_seen,
        "CP-GT-05: versions_seen"
    );
}

/// CP-GT-06: metadata source `input` and a negative step (-1) round-trip.
pub async fn cp_gt_06_input_metadata_round_trips<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(
        saver,
        &config(&tid),
        checkpoint(),
        metadata(CheckpointSource::Input, -1),
    )
    .await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.metadata.source,
        Some(CheckpointSource::Input),
        "CP-GT-06: source"
    );
    assert_eq!(tuple.metadata.step, Some(-1), "CP-GT-06: step");
}

/// CP-GT-07: a root checkpoint has no parent; its child's parent is it.
pub async fn cp_gt_07_parent_config<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let c1 = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let c2 = put(saver, &c1, checkpoint(), loop_metadata()).await;
    assert_eq!(
        get_found(saver, &c1).await.parent_config,
        None,
        "CP-GT-07: c1 has no parent"
    );
    let parent = get_found(saver, &c2)
        .await
        .parent_config
        .unwrap_or_else(|| panic!("CP-GT-07: c2 must have a parent"));
    assert_eq!(
        parent.checkpoint_id,
        Some(id_of(&c1)),
        "CP-GT-07: c2's parent is c1"
    );
    assert_eq!(parent.thread_id, tid, "CP-GT-07: parent thread");
    assert_eq!(parent.checkpoint_ns, "", "CP-GT-07: parent namespace");
}

/// CP-GT-08: the tuple carries the checkpoint's pending writes.
pub async fn cp_gt_08_pending_writes_included<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let task = task_id();
    put_writes(saver, &stored, &task, &[("ch", text("val"))]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes,
        vec![pending(&task, "ch", text("val"))],
        "CP-GT-08: pending writes"
    );
}

/// CP-GT-09: checkpoints of one thread in two namespaces are each found in
/// their own namespace.
pub async fn cp_gt_09_namespaces_are_separate<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let root = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let child = put(
        saver,
        &config_ns(&tid, CHILD_NS),
        checkpoint(),
        loop_metadata(),
    )
    .await;
    assert_eq!(
        get_found(saver, &root).await.config,
        root,
        "CP-GT-09: root by id"
    );
    assert_eq!(
        get_found(saver, &child).await.config,
        child,
        "CP-GT-09: child by id"
    );
    assert_eq!(
        get_found(saver, &config(&tid)).await.config,
        root,
        "CP-GT-09: root latest"
    );
    assert_eq!(
        get_found(saver, &config_ns(&tid, CHILD_NS)).await.config,
        child,
        "CP-GT-09: child latest"
    );
}

/// CP-GT-10: an unknown checkpoint id on an existing thread is `None`.
pub async fn cp_gt_10_unknown_id_is_none<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let unknown = config(&tid).with_id(CheckpointId::new());
    assert!(
        get(saver, &unknown).await.is_none(),
        "CP-GT-10: unknown id must be None"
    );
}
