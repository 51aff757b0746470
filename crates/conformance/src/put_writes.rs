//! CP-PW: pending writes (base capability `put_writes`).
//!
//! Every case stores one checkpoint on a fresh thread and writes against the
//! returned config.

use std::collections::BTreeSet;

use serde_json::json;
use stategraph_checkpoint::{CheckpointConfig, CheckpointSaver, Value, special};

use crate::fixtures::{
    CHILD_NS, checkpoint, config, config_ns, get_found, loop_metadata, pending, put, put_values,
    put_writes, task_id, text, thread_id,
};

async fn stored_checkpoint<S: CheckpointSaver>(saver: &S) -> CheckpointConfig {
    put_values(saver, &config(&thread_id()), &[("k", text("v"))]).await
}

/// CP-PW-01: one write of one task reads back as exactly that pending write.
pub async fn cp_pw_01_single_write_is_pending<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    put_writes(saver, &stored, &task, &[("channel1", text("value1"))]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes,
        vec![pending(&task, "channel1", text("value1"))],
        "CP-PW-01: exactly the one write must be pending"
    );
}

/// CP-PW-02: three writes in one call are all pending, each with its value.
pub async fn cp_pw_02_multiple_writes_in_one_call<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    let writes = [
        ("ch1", text("v1")),
        ("ch2", text("v2")),
        ("ch3", text("v3")),
    ];
    put_writes(saver, &stored, &task, &writes).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes.len(),
        3,
        "CP-PW-02: three pending writes"
    );
    let channels: BTreeSet<&str> = tuple
        .pending_writes
        .iter()
        .map(|w| w.channel.as_str())
        .collect();
    assert_eq!(
        channels,
        BTreeSet::from(["ch1", "ch2", "ch3"]),
        "CP-PW-02: channel set"
    );
    for (channel, value) in writes {
        assert!(
            tuple
                .pending_writes
                .contains(&pending(&task, channel, value)),
            "CP-PW-02: write to {channel:?} must read back with its value"
        );
    }
}

/// CP-PW-03: two tasks writing the same channel do not collide: one pending
/// write per task, each with its own value.
pub async fn cp_pw_03_tasks_do_not_collide<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let (t1, t2) = (task_id(), task_id());
    put_writes(saver, &stored, &t1, &[("ch", text("from_t1"))]).await;
    put_writes(saver, &stored, &t2, &[("ch", text("from_t2"))]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes.len(),
        2,
        "CP-PW-03: one write per task"
    );
    assert!(
        tuple
            .pending_writes
            .contains(&pending(&t1, "ch", text("from_t1"))),
        "CP-PW-03: task 1's write"
    );
    assert!(
        tuple
            .pending_writes
            .contains(&pending(&t2, "ch", text("from_t2"))),
        "CP-PW-03: task 2's write"
    );
}

/// CP-PW-04: a pending write carries the id of the task that wrote it.
pub async fn cp_pw_04_write_carries_task_id<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    put_writes(saver, &stored, &task, &[("ch", text("val"))]).await;
    let tuple = get_found(saver, &stored).await;
    assert!(
        tuple.pending_writes.iter().any(|w| w.task_id == task),
        "CP-PW-04: some pending write must carry task id {task:?}: {:?}",
        tuple.pending_writes
    );
}

/// CP-PW-05: an object written as a value reads back equal.
pub async fn cp_pw_05_object_value_round_trips<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    let value = Value::from_json(json!({"data": 123}));
    put_writes(saver, &stored, &task, &[("my_channel", value.clone())]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes,
        vec![pending(&task, "my_channel", value)],
        "CP-PW-05: the object must read back equal"
    );
}

/// CP-PW-06: a write with a task path (`"a:b:c"`) is accepted and pending.
pub async fn cp_pw_06_task_path_is_accepted<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    saver
        .put_writes(
            &stored,
            vec![("ch".to_owned(), text("val"))],
            &task,
            "a:b:c",
        )
        .await
        .unwrap_or_else(|err| panic!("CP-PW-06: put_writes with a task path failed: {err}"));
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes,
        vec![pending(&task, "ch", text("val"))],
        "CP-PW-06: exactly one pending write"
    );
}

/// CP-PW-07: writes are idempotent per `(task_id, index)`: the same task
/// writing the same regular write twice leaves one pending write.
pub async fn cp_pw_07_regular_writes_are_idempotent<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    put_writes(saver, &stored, &task, &[("ch", text("val"))]).await;
    put_writes(saver, &stored, &task, &[("ch", text("val"))]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes,
        vec![pending(&task, "ch", text("val"))],
        "CP-PW-07: a repeated write must not duplicate"
    );
}

/// CP-PW-08: special channels (`__error__`, `__interrupt__`) are stored: one
/// ERROR write with its text and one INTERRUPT write with its object.
pub async fn cp_pw_08_special_channels<S: CheckpointSaver>(saver: &S) {
    let stored = stored_checkpoint(saver).await;
    let task = task_id();
    let interrupt = Value::from_json(json!({"reason": "human_input"}));
    put_writes(
        saver,
        &stored,
        &task,
        &[
            (special::ERROR, text("something went wrong")),
            (special::INTERRUPT, interrupt.clone()),
        ],
    )
    .await;
    let tuple = get_found(saver, &stored).await;
    let errors: Vec<_> = tuple
        .pending_writes
        .iter()
        .filter(|w| w.channel == special::ERROR)
        .collect();
    let interrupts: Vec<_> = tuple
        .pending_writes
        .iter()
        .filter(|w| w.channel == special::INTERRUPT)
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "CP-PW-08: exactly one ERROR write: {:?}",
        tuple.pending_writes
    );
    assert_eq!(
        errors[0].value,
        text("something went wrong"),
        "CP-PW-08: ERROR value"
    );
    assert_eq!(
        interrupts.len(),
        1,
        "CP-PW-08: exactly one INTERRUPT write: {:?}",
        tuple.pending_writes
    );
    assert_eq!(interrupts[0].value, interrupt, "CP-PW-08: INTERRUPT value");
    assert_eq!(
        tuple.pending_writes.len(),
        2,
        "CP-PW-08: nothing else is pending"
    );
}

/// CP-PW-09: writes are scoped by namespace: the root checkpoint shows only
/// the root write, the child-namespace checkpoint only the child write.
pub async fn cp_pw_09_writes_are_scoped_by_namespace<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let task = task_id();
    let root = put_values(saver, &config(&tid), &[("k", text("v"))]).await;
    let child = put_values(saver, &config_ns(&tid, CHILD_NS), &[("k", text("v"))]).await;
    put_writes(saver, &root, &task, &[("ch", text("root_val"))]).await;
    put_writes(saver, &child, &task, &[("ch", text("child_val"))]).await;
    let root_tuple = get_found(saver, &root).await;
    let child_tuple = get_found(saver, &child).await;
    assert_eq!(
        root_tuple.pending_writes,
        vec![pending(&task, "ch", text("root_val"))],
        "CP-PW-09: root writes"
    );
    assert_eq!(
        child_tuple.pending_writes,
        vec![pending(&task, "ch", text("child_val"))],
        "CP-PW-09: child namespace writes"
    );
}

/// CP-PW-10: writes belong to the checkpoint they were put against, not to the
/// thread: a later child checkpoint has no pending writes.
pub async fn cp_pw_10_writes_belong_to_their_checkpoint<S: CheckpointSaver>(saver: &S) {
    let c1 = stored_checkpoint(saver).await;
    put_writes(saver, &c1, &task_id(), &[("ch", text("val"))]).await;
    let c2 = put(saver, &c1, checkpoint(), loop_metadata()).await;
    let tuple = get_found(saver, &c2).await;
    assert!(
        tuple.pending_writes.is_empty(),
        "CP-PW-10: the child must have no pending writes"
    );
    assert_eq!(
        get_found(saver, &c1).await.pending_writes.len(),
        1,
        "CP-PW-10: the parent keeps its write"
    );
}
