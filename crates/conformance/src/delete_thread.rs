//! CP-DT: deleting threads (base capability `delete_thread`).

use stategraph_checkpoint::{CheckpointSaver, ListQuery};

use crate::fixtures::{
    CHILD_NS, chain_steps, config, config_ns, delete_thread, get, get_found, list, put_values,
    put_writes, task_id, text, thread_id,
};

/// CP-DT-01: after `delete_thread`, the thread has no latest checkpoint and
/// lists nothing; no stored checkpoint is found by id.
pub async fn cp_dt_01_delete_removes_checkpoints<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 3).await;
    assert_eq!(
        list(saver, ListQuery::thread(&tid)).await.len(),
        3,
        "CP-DT-01: setup stored 3"
    );
    delete_thread(saver, &tid).await;
    assert!(
        get(saver, &config(&tid)).await.is_none(),
        "CP-DT-01: no latest checkpoint after delete"
    );
    assert!(
        list(saver, ListQuery::thread(&tid)).await.is_empty(),
        "CP-DT-01: nothing listed after delete"
    );
    for cfg in &stored {
        assert!(
            get(saver, cfg).await.is_none(),
            "CP-DT-01: {cfg:?} must be gone"
        );
    }
}

/// CP-DT-02: deleting a thread removes its pending writes with it.
pub async fn cp_dt_02_delete_removes_writes<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put_values(saver, &config(&tid), &[("k", text("v"))]).await;
    put_writes(saver, &stored, &task_id(), &[("ch", text("val"))]).await;
    assert_eq!(
        get_found(saver, &stored).await.pending_writes.len(),
        1,
        "CP-DT-02: write visible before"
    );
    delete_thread(saver, &tid).await;
    assert!(
        get(saver, &stored).await.is_none(),
        "CP-DT-02: checkpoint gone after delete"
    );
}

/// CP-DT-03: deleting a thread removes every namespace of it.
pub async fn cp_dt_03_delete_removes_all_namespaces<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    put_values(saver, &config(&tid), &[("k", text("v"))]).await;
    put_values(saver, &config_ns(&tid, CHILD_NS), &[("k", text("v"))]).await;
    get_found(saver, &config(&tid)).await;
    get_found(saver, &config_ns(&tid, CHILD_NS)).await;
    delete_thread(saver, &tid).await;
    assert!(
        get(saver, &config(&tid)).await.is_none(),
        "CP-DT-03: root namespace gone"
    );
    assert!(
        get(saver, &config_ns(&tid, CHILD_NS)).await.is_none(),
        "CP-DT-03: child namespace gone"
    );
}

/// CP-DT-04: deleting one thread leaves other threads untouched.
pub async fn cp_dt_04_delete_keeps_other_threads<S: CheckpointSaver>(saver: &S) {
    let (a, b) = (thread_id(), thread_id());
    put_values(saver, &config(&a), &[("k", text("a"))]).await;
    let kept = put_values(saver, &config(&b), &[("k", text("b"))]).await;
    delete_thread(saver, &a).await;
    assert!(
        get(saver, &config(&a)).await.is_none(),
        "CP-DT-04: thread A gone"
    );
    let tuple = get_found(saver, &config(&b)).await;
    assert_eq!(tuple.config, kept, "CP-DT-04: thread B still present");
    assert_eq!(
        tuple.checkpoint.channel_values["k"],
        text("b"),
        "CP-DT-04: thread B's value"
    );
}

/// CP-DT-05: deleting a thread that does not exist is not an error.
pub async fn cp_dt_05_delete_missing_thread_is_noop<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    saver
        .delete_thread(&tid)
        .await
        .unwrap_or_else(|err| panic!("CP-DT-05: deleting a missing thread must succeed: {err}"));
}
