//! CP-CT: copying threads (extended capability `copy_thread`).
//!
//! Sources are F-CHAIN histories: checkpoint `i` holds channel `step = i`
//! (rewritten each time) and channel `first` (stored by checkpoint 0 only).

use std::collections::BTreeMap;

use stategraph_checkpoint::{CheckpointId, CheckpointSaver, CheckpointTuple, ListQuery, Value};

use crate::fixtures::{
    CHILD_NS, chain_steps, chain_values, config, config_ns, delete_thread, get_found, id_of, ids,
    json_of, large_text, list, list_ids, pending, put_values, put_writes, task_id, text, thread_id,
};

async fn copy_thread<S: CheckpointSaver>(saver: &S, source: &str, target: &str) {
    saver
        .copy_thread(source, target)
        .await
        .unwrap_or_else(|err| panic!("copy_thread({source:?}, {target:?}) failed: {err}"));
}

fn by_id(tuples: Vec<CheckpointTuple>) -> BTreeMap<CheckpointId, CheckpointTuple> {
    tuples.into_iter().map(|t| (id_of(&t.config), t)).collect()
}

/// CP-CT-01: the copy lists as many checkpoints as the source.
pub async fn cp_ct_01_copy_lists_all<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    chain_steps(saver, &config(&src), 3).await;
    copy_thread(saver, &src, &dst).await;
    assert_eq!(
        list(saver, ListQuery::thread(&dst)).await.len(),
        3,
        "CP-CT-01: 3 checkpoints copied"
    );
}

/// CP-CT-02: paired by checkpoint id, the copies hold the same channel values
/// (including values inherited from earlier checkpoints) and the same parents,
/// and they are addressed under the target thread.
pub async fn cp_ct_02_copy_keeps_values<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    chain_steps(saver, &config(&src), 3).await;
    copy_thread(saver, &src, &dst).await;
    let source = by_id(list(saver, ListQuery::thread(&src)).await);
    let target = by_id(list(saver, ListQuery::thread(&dst)).await);
    assert_eq!(
        target.len(),
        source.len(),
        "CP-CT-02: same number of checkpoints"
    );
    for (id, original) in &source {
        let copy = target
            .get(id)
            .unwrap_or_else(|| panic!("CP-CT-02: checkpoint {id} missing from the copy"));
        let step = original
            .metadata
            .step
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(usize::MAX);
        assert_eq!(
            original.checkpoint.channel_values,
            chain_values(step),
            "CP-CT-02: source values of {id}"
        );
        assert_eq!(
            copy.checkpoint.channel_values, original.checkpoint.channel_values,
            "CP-CT-02: values of {id}"
        );
        assert_eq!(
            copy.config.thread_id, dst,
            "CP-CT-02: the copy of {id} lives in the target thread"
        );
        assert_eq!(
            copy.parent_config
                .as_ref()
                .and_then(|p| p.checkpoint_id.clone()),
            original
                .parent_config
                .as_ref()
                .and_then(|p| p.checkpoint_id.clone()),
            "CP-CT-02: parent of {id}"
        );
    }
}

/// CP-CT-03: every metadata key of a source checkpoint has the same value in
/// its copy (paired by step).
pub async fn cp_ct_03_copy_keeps_metadata<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    chain_steps(saver, &config(&src), 2).await;
    copy_thread(saver, &src, &dst).await;
    let target = list(saver, ListQuery::thread(&dst)).await;
    for original in list(saver, ListQuery::thread(&src)).await {
        let copy = target
            .iter()
            .find(|t| t.metadata.step == original.metadata.step)
            .unwrap_or_else(|| panic!("CP-CT-03: no copy with step {:?}", original.metadata.step));
        let (original_json, copy_json) = (original.metadata.to_json(), copy.metadata.to_json());
        for (key, value) in original_json.as_object().into_iter().flatten() {
            assert_eq!(
                copy_json.get(key),
                Some(value),
                "CP-CT-03: metadata key {key:?}"
            );
        }
    }
}

/// CP-CT-04: the copy keeps namespaces: one checkpoint in `""` and one in
/// the child namespace.
pub async fn cp_ct_04_copy_keeps_namespaces<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    chain_steps(saver, &config(&src), 1).await;
    chain_steps(saver, &config_ns(&src, CHILD_NS), 1).await;
    copy_thread(saver, &src, &dst).await;
    for ns in ["", CHILD_NS] {
        assert_eq!(
            list(saver, ListQuery::thread(&dst).ns(ns)).await.len(),
            1,
            "CP-CT-04: one checkpoint in namespace {ns:?}"
        );
    }
}

/// CP-CT-05: pending writes are copied with their checkpoint.
pub async fn cp_ct_05_copy_keeps_writes<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    let stored = chain_steps(saver, &config(&src), 1).await;
    let task = task_id();
    put_writes(saver, &stored[0], &task, &[("ch", text("write_val"))]).await;
    copy_thread(saver, &src, &dst).await;
    let latest = crate::fixtures::get_found(saver, &config(&dst)).await;
    assert_eq!(
        latest.pending_writes,
        vec![pending(&task, "ch", text("write_val"))],
        "CP-CT-05: the copy carries the write"
    );
}

/// CP-CT-06: checkpoint ids are preserved, so the copy lists the same ids in
/// the same (newest first) order.
pub async fn cp_ct_06_copy_keeps_ids_and_order<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    let stored = chain_steps(saver, &config(&src), 4).await;
    copy_thread(saver, &src, &dst).await;
    let expected: Vec<_> = stored.iter().rev().map(id_of).collect();
    assert_eq!(
        list_ids(saver, ListQuery::thread(&src)).await,
        expected,
        "CP-CT-06: source order"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&dst)).await,
        expected,
        "CP-CT-06: copy order"
    );
}

/// CP-CT-07: copying leaves the source unchanged.
pub async fn cp_ct_07_copy_leaves_source_unchanged<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    chain_steps(saver, &config(&src), 2).await;
    let before = list(saver, ListQuery::thread(&src)).await;
    copy_thread(saver, &src, &dst).await;
    let after = list(saver, ListQuery::thread(&src)).await;
    assert_eq!(ids(&after), ids(&before), "CP-CT-07: source ids unchanged");
    assert_eq!(after, before, "CP-CT-07: source tuples unchanged");
}

/// CP-CT-08: copying a thread that does not exist may fail or succeed, but the
/// target has no checkpoints either way.
pub async fn cp_ct_08_copy_missing_source<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    // Either outcome is allowed; only the target's emptiness is checked.
    let _outcome = saver.copy_thread(&src, &dst).await;
    assert!(
        list(saver, ListQuery::thread(&dst)).await.is_empty(),
        "CP-CT-08: target has no checkpoints"
    );
}

/// CP-CT-09: a copy holds its own large strings (which a saver may store
/// once per thread): it reads them back after the source is deleted.
pub async fn cp_ct_09_copy_keeps_large_values<S: CheckpointSaver>(saver: &S) {
    let (src, dst) = (thread_id(), thread_id());
    let big = large_text("copied", 40_000);
    let stored = put_values(saver, &config(&src), &[("big", Value::new(big.clone()))]).await;
    put_writes(
        saver,
        &stored,
        &task_id(),
        &[("w", Value::new(big.clone()))],
    )
    .await;
    copy_thread(saver, &src, &dst).await;
    delete_thread(saver, &src).await;
    let copy = get_found(saver, &config(&dst)).await;
    assert_eq!(
        copy.checkpoint.channel_values.get("big").map(json_of),
        Some(serde_json::json!(big)),
        "CP-CT-09: value"
    );
    assert_eq!(
        copy.pending_writes
            .iter()
            .map(|w| json_of(&w.value))
            .collect::<Vec<_>>(),
        vec![serde_json::json!(big)],
        "CP-CT-09: write"
    );
}
