//! CP-PR: thinning threads (extended capability `prune`).
//!
//! Chains are F-CHAIN histories: the latest checkpoint reads channel `first`
//! from the value stored by the oldest one, so keeping the latest must keep
//! that value readable.

use stategraph_checkpoint::{ChannelVersions, CheckpointSaver, ListQuery, PruneStrategy, Value};

use crate::fixtures::{
    CHILD_NS, chain_steps, chain_values, checkpoint, config, config_ns, get_found, id_of, json_of,
    large_text, list, list_ids, loop_metadata, pending, put, put_with, put_writes, task_id, text,
    thread_id, version,
};

async fn prune<S: CheckpointSaver>(saver: &S, threads: &[String], strategy: PruneStrategy) {
    saver
        .prune(threads, strategy)
        .await
        .unwrap_or_else(|err| panic!("prune({threads:?}, {strategy:?}) failed: {err}"));
}

/// CP-PR-01: `KeepLatest` keeps exactly the latest checkpoint, which still
/// reads all its channel values (also those stored by pruned ancestors).
pub async fn cp_pr_01_keep_latest<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 4).await;
    prune(saver, std::slice::from_ref(&tid), PruneStrategy::KeepLatest).await;
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid)).await,
        vec![id_of(&stored[3])],
        "CP-PR-01: only the last checkpoint remains"
    );
    let latest = get_found(saver, &config(&tid)).await;
    assert_eq!(
        latest.checkpoint.channel_values,
        chain_values(3),
        "CP-PR-01: the kept checkpoint's values"
    );
}

/// CP-PR-02: pruning several threads keeps each thread's own latest.
pub async fn cp_pr_02_keep_latest_per_thread<S: CheckpointSaver>(saver: &S) {
    let (t1, t2) = (thread_id(), thread_id());
    let s1 = chain_steps(saver, &config(&t1), 3).await;
    let s2 = chain_steps(saver, &config(&t2), 2).await;
    prune(saver, &[t1.clone(), t2.clone()], PruneStrategy::KeepLatest).await;
    assert_eq!(
        list_ids(saver, ListQuery::thread(&t1)).await,
        vec![id_of(&s1[2])],
        "CP-PR-02: thread 1"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&t2)).await,
        vec![id_of(&s2[1])],
        "CP-PR-02: thread 2"
    );
}

/// CP-PR-03: `KeepLatest` keeps the latest checkpoint of every namespace.
pub async fn cp_pr_03_keep_latest_per_namespace<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let root = chain_steps(saver, &config(&tid), 3).await;
    let child = chain_steps(saver, &config_ns(&tid, CHILD_NS), 2).await;
    prune(saver, std::slice::from_ref(&tid), PruneStrategy::KeepLatest).await;
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid).ns("")).await,
        vec![id_of(&root[2])],
        "CP-PR-03: root namespace keeps its latest"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid).ns(CHILD_NS)).await,
        vec![id_of(&child[1])],
        "CP-PR-03: child namespace keeps its latest"
    );
}

/// CP-PR-04: the kept checkpoint keeps its pending writes.
pub async fn cp_pr_04_keep_latest_keeps_writes<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 3).await;
    let task = task_id();
    put_writes(saver, &stored[2], &task, &[("ch", text("val"))]).await;
    prune(saver, std::slice::from_ref(&tid), PruneStrategy::KeepLatest).await;
    let latest = get_found(saver, &stored[2]).await;
    assert_eq!(
        latest.pending_writes,
        vec![pending(&task, "ch", text("val"))],
        "CP-PR-04: its write"
    );
}

/// CP-PR-05: the `Delete` strategy removes every checkpoint of the thread.
pub async fn cp_pr_05_delete_strategy<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    chain_steps(saver, &config(&tid), 3).await;
    prune(saver, std::slice::from_ref(&tid), PruneStrategy::Delete).await;
    assert!(
        list(saver, ListQuery::thread(&tid)).await.is_empty(),
        "CP-PR-05: nothing remains"
    );
}

/// CP-PR-06: threads not named are untouched.
pub async fn cp_pr_06_other_threads_untouched<S: CheckpointSaver>(saver: &S) {
    let (t1, t2) = (thread_id(), thread_id());
    chain_steps(saver, &config(&t1), 3).await;
    chain_steps(saver, &config(&t2), 2).await;
    let before = list_ids(saver, ListQuery::thread(&t2)).await;
    prune(saver, std::slice::from_ref(&t1), PruneStrategy::KeepLatest).await;
    assert_eq!(
        list_ids(saver, ListQuery::thread(&t2)).await,
        before,
        "CP-PR-06: thread 2 unchanged"
    );
}

/// CP-PR-07: pruning no threads is not an error.
pub async fn cp_pr_07_no_threads_is_noop<S: CheckpointSaver>(saver: &S) {
    saver
        .prune(&[], PruneStrategy::KeepLatest)
        .await
        .unwrap_or_else(|err| panic!("CP-PR-07: prune([]) must succeed: {err}"));
}

/// CP-PR-08: pruning a thread that does not exist is not an error.
pub async fn cp_pr_08_missing_thread_is_noop<S: CheckpointSaver>(saver: &S) {
    saver
        .prune(&[thread_id()], PruneStrategy::KeepLatest)
        .await
        .unwrap_or_else(|err| panic!("CP-PR-08: pruning a missing thread must succeed: {err}"));
}

/// CP-PR-09: pruning to the latest checkpoint keeps the large strings it
/// reads, whether stored by it or by an older checkpoint (a saver may store
/// them once per thread and drop those nothing refers to any more).
pub async fn cp_pr_09_keep_latest_keeps_large_values<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let (old, new, kept) = (
        large_text("old", 30_000),
        large_text("new", 30_000),
        large_text("kept", 30_000),
    );
    let first = checkpoint()
        .with_channel("changed", Value::new(old), version(1))
        .with_channel("kept", Value::new(kept.clone()), version(1));
    let c1 = put(saver, &config(&tid), first, loop_metadata()).await;
    let second = checkpoint()
        .with_channel("changed", Value::new(new.clone()), version(2))
        .with_channel("kept", Value::new(kept.clone()), version(1));
    let mut new_versions = ChannelVersions::new();
    new_versions.insert("changed".into(), version(2));
    put_with(saver, &c1, second, loop_metadata(), new_versions).await;
    prune(saver, std::slice::from_ref(&tid), PruneStrategy::KeepLatest).await;
    let latest = get_found(saver, &config(&tid)).await;
    let read = |channel: &str| latest.checkpoint.channel_values.get(channel).map(json_of);
    assert_eq!(
        read("changed"),
        Some(serde_json::json!(new)),
        "CP-PR-09: changed"
    );
    assert_eq!(
        read("kept"),
        Some(serde_json::json!(kept)),
        "CP-PR-09: kept"
    );
}
