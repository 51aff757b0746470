//! CP-LS: listing checkpoints (base capability `list`).
//!
//! Most cases use L4: a chain of 4 checkpoints on a fresh thread, step `i`,
//! source `input` for even `i` and `loop` for odd `i`.

use serde_json::json;
use stategraph_checkpoint::{CheckpointId, CheckpointSaver, CheckpointSource, ListQuery};

use crate::fixtures::{
    CHILD_NS, chain, checkpoint, config, config_ns, id_of, list, list_ids, loop_metadata, metadata,
    pending, put, put_writes, task_id, text, thread_id,
};

/// L4: returns the thread and the ids `id0..id3` in creation order.
async fn l4<S: CheckpointSaver>(saver: &S) -> (String, Vec<CheckpointId>) {
    let tid = thread_id();
    let stored = chain(saver, &config(&tid), 4, |i| {
        let source = if i % 2 == 0 {
            CheckpointSource::Input
        } else {
            CheckpointSource::Loop
        };
        metadata(source, i64::try_from(i).unwrap_or(i64::MAX))
    })
    .await;
    (tid, stored.iter().map(id_of).collect())
}

/// CP-LS-01: listing a thread returns all its checkpoints.
pub async fn cp_ls_01_list_thread<S: CheckpointSaver>(saver: &S) {
    let (tid, _) = l4(saver).await;
    assert_eq!(
        list(saver, ListQuery::thread(&tid)).await.len(),
        4,
        "CP-LS-01: 4 checkpoints"
    );
}

/// CP-LS-02: listing another thread returns nothing from this one.
pub async fn cp_ls_02_threads_are_separate<S: CheckpointSaver>(saver: &S) {
    let (tid, _) = l4(saver).await;
    assert!(
        list(saver, ListQuery::thread(thread_id())).await.is_empty(),
        "CP-LS-02: another thread lists nothing"
    );
    assert_eq!(
        list(saver, ListQuery::thread(&tid)).await.len(),
        4,
        "CP-LS-02: this thread lists 4"
    );
}

/// CP-LS-03: a namespace in the query is an exact namespace filter.
pub async fn cp_ls_03_namespace_filter<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let root = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let child = put(
        saver,
        &config_ns(&tid, CHILD_NS),
        checkpoint(),
        loop_metadata(),
    )
    .await;
    let root_list = list_ids(saver, ListQuery::thread(&tid).ns("")).await;
    let child_list = list_ids(saver, ListQuery::thread(&tid).ns(CHILD_NS)).await;
    assert_eq!(
        root_list,
        vec![id_of(&root)],
        "CP-LS-03: namespace \"\" lists the root checkpoint only"
    );
    assert_eq!(
        child_list,
        vec![id_of(&child)],
        "CP-LS-03: the child namespace lists its checkpoint only"
    );
}

/// CP-LS-04: checkpoints are listed newest first (descending id).
pub async fn cp_ls_04_newest_first<S: CheckpointSaver>(saver: &S) {
    let (tid, ids) = l4(saver).await;
    let listed = list_ids(saver, ListQuery::thread(&tid)).await;
    let expected: Vec<_> = ids.into_iter().rev().collect();
    assert_eq!(listed, expected, "CP-LS-04: [id3, id2, id1, id0]");
}

/// CP-LS-05: a metadata filter on `source` keeps the matching checkpoints.
pub async fn cp_ls_05_filter_by_source<S: CheckpointSaver>(saver: &S) {
    let (tid, _) = l4(saver).await;
    let listed = list(
        saver,
        ListQuery::thread(&tid).filter(json!({"source": "input"})),
    )
    .await;
    assert_eq!(listed.len(), 2, "CP-LS-05: two input checkpoints");
    assert!(
        listed
            .iter()
            .all(|t| t.metadata.source == Some(CheckpointSource::Input)),
        "CP-LS-05: all results have source input"
    );
}

/// CP-LS-06: a metadata filter on `step` compares numbers.
pub async fn cp_ls_06_filter_by_step<S: CheckpointSaver>(saver: &S) {
    let (tid, _) = l4(saver).await;
    let listed = list(saver, ListQuery::thread(&tid).filter(json!({"step": 1}))).await;
    assert_eq!(listed.len(), 1, "CP-LS-06: one checkpoint with step 1");
    assert_eq!(listed[0].metadata.step, Some(1), "CP-LS-06: its step is 1");
}

/// CP-LS-07: every filter key must match (AND).
pub async fn cp_ls_07_filter_keys_combine<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    for (source, step) in [
        (CheckpointSource::Input, 1),
        (CheckpointSource::Loop, 1),
        (CheckpointSource::Input, 2),
    ] {
        put(saver, &config(&tid), checkpoint(), metadata(source, step)).await;
    }
    let listed = list(
        saver,
        ListQuery::thread(&tid).filter(json!({"source": "input", "step": 2})),
    )
    .await;
    assert_eq!(
        listed.len(),
        1,
        "CP-LS-07: exactly one checkpoint matches both keys"
    );
    assert_eq!(
        listed[0].metadata.source,
        Some(CheckpointSource::Input),
        "CP-LS-07: source"
    );
    assert_eq!(listed[0].metadata.step, Some(2), "CP-LS-07: step");
}

/// CP-LS-08: a filter nothing matches lists nothing.
pub async fn cp_ls_08_filter_without_match<S: CheckpointSaver>(saver: &S) {
    let (tid, _) = l4(saver).await;
    let listed = list(
        saver,
        ListQuery::thread(&tid).filter(json!({"source": "update", "step": 99})),
    )
    .await;
    assert!(listed.is_empty(), "CP-LS-08: no match");
}

/// CP-LS-09: custom metadata keys are filterable and returned.
pub async fn cp_ls_09_filter_by_custom_key<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    for (score, run) in [(42, "run-abc"), (99, "run-xyz")] {
        let meta = loop_metadata()
            .with("score", json!(score))
            .with("run_id", json!(run));
        put(saver, &config(&tid), checkpoint(), meta).await;
    }
    let listed = list(saver, ListQuery::thread(&tid).filter(json!({"score": 42}))).await;
    assert_eq!(listed.len(), 1, "CP-LS-09: one checkpoint with score 42");
    let found = listed[0].metadata.to_json();
    assert_eq!(found["score"], json!(42), "CP-LS-09: score is returned");
    assert_eq!(
        found["run_id"],
        json!("run-abc"),
        "CP-LS-09: run_id is returned"
    );
}

/// CP-LS-10: `before` lists only checkpoints with a strictly smaller id.
pub async fn cp_ls_10_before_is_exclusive<S: CheckpointSaver>(saver: &S) {
    let (tid, ids) = l4(saver).await;
    let listed = list_ids(saver, ListQuery::thread(&tid).before(ids[2].clone())).await;
    assert_eq!(
        listed,
        vec![ids[1].clone(), ids[0].clone()],
        "CP-LS-10: only id1 and id0"
    );
}

/// CP-LS-11: `limit` caps the number of results.
pub async fn cp_ls_11_limit<S: CheckpointSaver>(saver: &S) {
    let (tid, ids) = l4(saver).await;
    let one = list_ids(saver, ListQuery::thread(&tid).limit(1)).await;
    let two = list_ids(saver, ListQuery::thread(&tid).limit(2)).await;
    assert_eq!(
        one,
        vec![ids[3].clone()],
        "CP-LS-11: limit 1 returns the newest"
    );
    assert_eq!(
        two,
        vec![ids[3].clone(), ids[2].clone()],
        "CP-LS-11: limit 2 returns the two newest"
    );
}

/// CP-LS-12: `before` with `limit` is a newest-first page below the cursor.
pub async fn cp_ls_12_before_with_limit<S: CheckpointSaver>(saver: &S) {
    let (tid, ids) = l4(saver).await;
    let listed = list_ids(
        saver,
        ListQuery::thread(&tid).before(ids[3].clone()).limit(1),
    )
    .await;
    assert_eq!(listed, vec![ids[2].clone()], "CP-LS-12: exactly [id2]");
}

/// CP-LS-13: a metadata filter combines with the thread.
pub async fn cp_ls_13_filter_within_thread<S: CheckpointSaver>(saver: &S) {
    let (tid, ids) = l4(saver).await;
    let listed = list(
        saver,
        ListQuery::thread(&tid).filter(json!({"source": "loop"})),
    )
    .await;
    assert_eq!(listed.len(), 2, "CP-LS-13: two loop checkpoints");
    assert!(
        listed
            .iter()
            .all(|t| t.metadata.source == Some(CheckpointSource::Loop)),
        "CP-LS-13: all results have source loop"
    );
    assert!(
        listed.iter().all(|t| t.config.thread_id == tid),
        "CP-LS-13: all results belong to the thread"
    );
    assert_eq!(
        crate::fixtures::ids(&listed),
        vec![ids[3].clone(), ids[1].clone()],
        "CP-LS-13: id3 and id1"
    );
}

/// CP-LS-14: filtering an empty thread lists nothing, without error.
pub async fn cp_ls_14_filter_on_empty_thread<S: CheckpointSaver>(saver: &S) {
    let listed = list(
        saver,
        ListQuery::thread(thread_id()).filter(json!({"source": "nonexistent"})),
    )
    .await;
    assert!(listed.is_empty(), "CP-LS-14: nothing listed");
}

/// CP-LS-15: listed tuples carry their pending writes.
pub async fn cp_ls_15_list_includes_writes<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    let task = task_id();
    put_writes(saver, &stored, &task, &[("ch", text("val"))]).await;
    let listed = list(saver, ListQuery::thread(&tid)).await;
    assert_eq!(listed.len(), 1, "CP-LS-15: one checkpoint");
    assert_eq!(
        listed[0].pending_writes,
        vec![pending(&task, "ch", text("val"))],
        "CP-LS-15: its write"
    );
}

/// CP-LS-16: namespace `""` lists the root namespace only, not child
/// namespaces.
pub async fn cp_ls_16_root_namespace_excludes_children<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let root = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    put(
        saver,
        &config_ns(&tid, "child:1"),
        checkpoint(),
        loop_metadata(),
    )
    .await;
    put(
        saver,
        &config_ns(&tid, "child:2"),
        checkpoint(),
        loop_metadata(),
    )
    .await;
    let listed = list_ids(saver, ListQuery::thread(&tid).ns("")).await;
    assert_eq!(
        listed,
        vec![id_of(&root)],
        "CP-LS-16: exactly the root checkpoint"
    );
}
