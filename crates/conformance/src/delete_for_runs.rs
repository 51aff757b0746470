//! CP-DR: deleting the checkpoints of runs (extended capability
//! `delete_for_runs`).
//!
//! Checkpoints carry their run in `metadata.run_id`.

use stategraph_checkpoint::{CheckpointMetadata, CheckpointSaver, ListQuery};

use crate::fixtures::{
    CHILD_NS, chain, chain_values, checkpoint, config, config_ns, get, get_found, id_of, list,
    list_ids, loop_metadata, put, put_writes, run_id, task_id, text, thread_id,
};

fn run_metadata(run: &str) -> CheckpointMetadata {
    let mut metadata = loop_metadata();
    metadata.run_id = Some(run.to_owned());
    metadata
}

async fn delete_for_runs<S: CheckpointSaver>(saver: &S, runs: &[String]) {
    saver
        .delete_for_runs(runs)
        .await
        .unwrap_or_else(|err| panic!("delete_for_runs({runs:?}) failed: {err}"));
}

/// CP-DR-01: deleting run 1 of a thread whose history is run 1 then run 2
/// leaves only run 2's checkpoint. Stricter than upstream: the remaining
/// checkpoint still reads all its values, including the one first stored by
/// the deleted checkpoint.
pub async fn cp_dr_01_delete_one_run<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let runs = [run_id(), run_id()];
    let stored = chain(saver, &config(&tid), 2, |i| run_metadata(&runs[i])).await;
    delete_for_runs(saver, &runs[..1]).await;
    let listed = list(saver, ListQuery::thread(&tid)).await;
    let listed_runs: Vec<_> = listed.iter().map(|t| t.metadata.run_id.clone()).collect();
    assert_eq!(
        listed_runs,
        vec![Some(runs[1].clone())],
        "CP-DR-01: only run 2 remains"
    );
    let survivor = get_found(saver, &stored[1]).await;
    assert_eq!(
        survivor.checkpoint.channel_values,
        chain_values(1),
        "CP-DR-01: the remaining checkpoint must still read all its values"
    );
}

/// CP-DR-02: deleting two runs of a three-run chain leaves only the third.
pub async fn cp_dr_02_delete_several_runs<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let runs = [run_id(), run_id(), run_id()];
    let stored = chain(saver, &config(&tid), 3, |i| run_metadata(&runs[i])).await;
    delete_for_runs(saver, &runs[..2]).await;
    let listed = list_ids(saver, ListQuery::thread(&tid)).await;
    assert_eq!(
        listed,
        vec![id_of(&stored[2])],
        "CP-DR-02: only run 3 remains"
    );
}

/// CP-DR-03: checkpoints of other runs are kept.
pub async fn cp_dr_03_other_runs_are_kept<S: CheckpointSaver>(saver: &S) {
    let (keep_thread, delete_thread) = (thread_id(), thread_id());
    let (keep, doomed) = (run_id(), run_id());
    let kept = put(
        saver,
        &config(&keep_thread),
        checkpoint(),
        run_metadata(&keep),
    )
    .await;
    put(
        saver,
        &config(&delete_thread),
        checkpoint(),
        run_metadata(&doomed),
    )
    .await;
    delete_for_runs(saver, std::slice::from_ref(&doomed)).await;
    assert_eq!(
        list_ids(saver, ListQuery::thread(&keep_thread)).await,
        vec![id_of(&kept)],
        "CP-DR-03: the kept run is still listed"
    );
    assert!(
        list(saver, ListQuery::thread(&delete_thread))
            .await
            .is_empty(),
        "CP-DR-03: the deleted run is gone"
    );
}

/// CP-DR-04: a deleted run's checkpoint is gone together with its writes.
pub async fn cp_dr_04_deleted_checkpoint_is_not_found<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let run = run_id();
    let stored = put(saver, &config(&tid), checkpoint(), run_metadata(&run)).await;
    put_writes(saver, &stored, &task_id(), &[("ch", text("val"))]).await;
    assert_eq!(
        get_found(saver, &stored).await.pending_writes.len(),
        1,
        "CP-DR-04: write visible before"
    );
    delete_for_runs(saver, &[run]).await;
    assert!(
        get(saver, &stored).await.is_none(),
        "CP-DR-04: the checkpoint must be gone"
    );
}

/// CP-DR-05: deleting no runs is not an error and deletes nothing.
pub async fn cp_dr_05_empty_run_list_is_noop<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(saver, &config(&tid), checkpoint(), run_metadata(&run_id())).await;
    saver
        .delete_for_runs(&[])
        .await
        .unwrap_or_else(|err| panic!("CP-DR-05: delete_for_runs([]) must succeed: {err}"));
    assert_eq!(
        get_found(saver, &stored).await.config,
        stored,
        "CP-DR-05: nothing deleted"
    );
}

/// CP-DR-06: deleting an unknown run is not an error and deletes nothing.
pub async fn cp_dr_06_unknown_run_is_noop<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(saver, &config(&tid), checkpoint(), run_metadata(&run_id())).await;
    saver
        .delete_for_runs(&[run_id()])
        .await
        .unwrap_or_else(|err| panic!("CP-DR-06: deleting an unknown run must succeed: {err}"));
    assert_eq!(
        get_found(saver, &stored).await.config,
        stored,
        "CP-DR-06: nothing deleted"
    );
}

/// CP-DR-07: a run's checkpoints are deleted in every namespace.
pub async fn cp_dr_07_all_namespaces<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let run = run_id();
    put(saver, &config(&tid), checkpoint(), run_metadata(&run)).await;
    put(
        saver,
        &config_ns(&tid, CHILD_NS),
        checkpoint(),
        run_metadata(&run),
    )
    .await;
    delete_for_runs(saver, std::slice::from_ref(&run)).await;
    for ns in ["", CHILD_NS] {
        let listed = list(saver, ListQuery::thread(&tid).ns(ns)).await;
        assert!(
            listed
                .iter()
                .all(|t| t.metadata.run_id.as_deref() != Some(run.as_str())),
            "CP-DR-07: namespace {ns:?} must not list the deleted run"
        );
    }
    assert!(
        get(saver, &config_ns(&tid, CHILD_NS)).await.is_none(),
        "CP-DR-07: child namespace emptied"
    );
}
