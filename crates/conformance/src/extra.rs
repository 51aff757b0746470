//! CP-EXT: extension cases, not in the upstream suite, that make the port
//! stricter: concurrent writes, pagination under appends, the filter
//! semantics, value fidelity and writes for checkpoints not stored yet.

use std::collections::BTreeMap;

use futures::future::join_all;
use serde_json::json;
use stategraph_checkpoint::{
    CheckpointId, CheckpointSaver, ListQuery, PendingWrite, Value, special,
};
use stategraph_core::ErrorKind;

use crate::fixtures::{
    chain_steps, checkpoint, checkpoint_with, config, delete_thread, get, get_found, id_of, ids,
    list, list_ids, loop_metadata, pending, put, put_values, put_writes, task_id, text, thread_id,
    try_list,
};

/// CP-EXT-01: 32 tasks writing 8 writes each, concurrently, against one
/// checkpoint: all 256 writes are kept, none lost or duplicated, each with its
/// value, ordered by `(task_id, index)`.
///
/// The calls run concurrently on one task (`join_all`), which needs no `Clone`
/// bound on the saver; backends with connection pools still see overlapping
/// requests.
pub async fn cp_ext_01_concurrent_writes_are_all_kept<S: CheckpointSaver>(saver: &S) {
    let stored = put_values(saver, &config(&thread_id()), &[("k", text("v"))]).await;
    let tasks: Vec<String> = (0..32).map(|_| task_id()).collect();
    let write = |t: usize, i: usize| Value::from_json(json!({"task": t, "write": i}));
    let calls = tasks.iter().enumerate().map(|(t, task)| {
        let writes = (0..8).map(|i| (format!("ch{i}"), write(t, i))).collect();
        saver.put_writes(&stored, writes, task, "")
    });
    for (t, result) in join_all(calls).await.into_iter().enumerate() {
        result.unwrap_or_else(|err| panic!("CP-EXT-01: put_writes of task {t} failed: {err}"));
    }
    let mut expected: Vec<(String, usize, PendingWrite)> = Vec::with_capacity(256);
    for (t, task) in tasks.iter().enumerate() {
        for i in 0..8 {
            expected.push((
                task.clone(),
                i,
                pending(task, &format!("ch{i}"), write(t, i)),
            ));
        }
    }
    expected.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let expected: Vec<PendingWrite> = expected.into_iter().map(|(_, _, w)| w).collect();
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.pending_writes.len(),
        256,
        "CP-EXT-01: exactly 256 writes"
    );
    assert_eq!(
        tuple.pending_writes, expected,
        "CP-EXT-01: every write, ordered by (task_id, index)"
    );
}

/// CP-EXT-02: 16 concurrent writers of the same `(task, index)` leave exactly
/// one row, for a regular channel and for a special channel. Afterwards the
/// documented semantics hold per write, also inside a mixed batch: a regular
/// write is first-writer-wins (a later write is ignored), a special write is
/// last-writer-wins (a later write replaces it). Writes of one task are ordered
/// by index, so the special write (index -1) comes first.
pub async fn cp_ext_02_same_write_key_keeps_one_row<S: CheckpointSaver>(saver: &S) {
    let stored = put_values(saver, &config(&thread_id()), &[("k", text("v"))]).await;
    let task = task_id();
    let regular: Vec<Value> = (0..16)
        .map(|i| Value::new(format!("regular {i}")))
        .collect();
    let errors: Vec<Value> = (0..16).map(|i| Value::new(format!("error {i}"))).collect();
    let calls = regular
        .iter()
        .map(|v| saver.put_writes(&stored, vec![("ch".into(), v.clone())], &task, ""));
    for result in join_all(calls).await {
        result.unwrap_or_else(|err| panic!("CP-EXT-02: concurrent regular write failed: {err}"));
    }
    let calls = errors
        .iter()
        .map(|v| saver.put_writes(&stored, vec![(special::ERROR.into(), v.clone())], &task, ""));
    for result in join_all(calls).await {
        result.unwrap_or_else(|err| panic!("CP-EXT-02: concurrent special write failed: {err}"));
    }
    let tuple = get_found(saver, &stored).await;
    let channels: Vec<&str> = tuple
        .pending_writes
        .iter()
        .map(|w| w.channel.as_str())
        .collect();
    assert_eq!(
        channels,
        vec![special::ERROR, "ch"],
        "CP-EXT-02: one row per key, ordered by index"
    );
    let kept_regular = tuple.pending_writes[1].value.clone();
    assert!(
        regular.contains(&kept_regular),
        "CP-EXT-02: the regular row holds a written value"
    );
    assert!(
        errors.contains(&tuple.pending_writes[0].value),
        "CP-EXT-02: the special row holds a written value"
    );

    put_writes(saver, &stored, &task, &[("ch", text("late"))]).await;
    put_writes(saver, &stored, &task, &[(special::ERROR, text("final"))]).await;
    let expected = vec![
        pending(&task, special::ERROR, text("final")),
        pending(&task, "ch", kept_regular.clone()),
    ];
    assert_eq!(
        get_found(saver, &stored).await.pending_writes,
        expected,
        "CP-EXT-02: regular first-writer-wins, special last-writer-wins"
    );

    put_writes(
        saver,
        &stored,
        &task,
        &[("ch", text("mixed")), (special::ERROR, text("mixed error"))],
    )
    .await;
    let expected = vec![
        pending(&task, special::ERROR, text("mixed error")),
        pending(&task, "ch", kept_regular),
    ];
    assert_eq!(
        get_found(saver, &stored).await.pending_writes,
        expected,
        "CP-EXT-02: a mixed batch is decided per write"
    );
}

/// CP-EXT-07: keyset pagination (`before` the last id of the previous page)
/// while new checkpoints are appended between pages returns every
/// pre-existing checkpoint exactly once, newest first: no duplicates, no gaps.
pub async fn cp_ext_07_pagination_while_appending<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = chain_steps(saver, &config(&tid), 10).await;
    let expected: Vec<CheckpointId> = stored.iter().rev().map(id_of).collect();
    let mut head = stored[9].clone();
    let mut seen: Vec<CheckpointId> = list_ids(saver, ListQuery::thread(&tid).limit(3)).await;
    assert_eq!(seen, expected[..3], "CP-EXT-07: first page");
    let mut appended = 0;
    loop {
        head = put(saver, &head, checkpoint(), loop_metadata()).await;
        appended += 1;
        let cursor = seen
            .last()
            .cloned()
            .unwrap_or_else(|| panic!("CP-EXT-07: empty first page"));
        let page = list_ids(saver, ListQuery::thread(&tid).before(cursor).limit(3)).await;
        if page.is_empty() {
            break;
        }
        assert!(
            page.len() <= 3,
            "CP-EXT-07: a page holds at most `limit` checkpoints"
        );
        seen.extend(page);
        assert!(
            appended <= 10,
            "CP-EXT-07: pagination does not terminate: {seen:?}"
        );
    }
    assert_eq!(
        seen, expected,
        "CP-EXT-07: every pre-existing checkpoint exactly once, newest first"
    );
    let total = list(saver, ListQuery::thread(&tid)).await.len();
    assert_eq!(
        total,
        10 + appended,
        "CP-EXT-07: the appended checkpoints are stored"
    );
}

/// CP-EXT-09: the metadata filter semantics documented in
/// `stategraph_checkpoint::MetadataFilter`, through `list`:
/// - a key is a dotted path into nested objects; a top-level key containing
///   dots is found first;
/// - values match by exact JSON equality, numbers compared numerically
///   (`1` matches `1.0`), objects and arrays compared whole (no partial
///   containment), `true` never matches `1`;
/// - `null` matches a present `null` only, never a missing key;
/// - unicode values and 1 MB strings compare like any string;
/// - keys outside `[A-Za-z0-9_.-]` (spaces, quotes, non-ASCII) make `list`
///   fail with [`ErrorKind::InvalidInput`].
pub async fn cp_ext_09_filter_semantics<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let big = "x".repeat(1 << 20);
    let first_meta = loop_metadata()
        .with("nested", json!({"a": 1, "b": {"c": [1, 2]}}))
        .with("nothing", json!(null))
        .with("flag", json!(true))
        .with("one", json!(1))
        .with("half", json!(1.5))
        .with("two_float", json!(2.0))
        .with("tags", json!(["x", "y"]))
        .with("text", json!("héllo ✓ 😀"))
        .with("a.b", json!("top-level dotted key"))
        .with("a", json!({"b": "nested b"}))
        .with("big", json!(big));
    let second_meta = loop_metadata()
        .with("one", json!(2))
        .with("flag", json!(false));
    let first = put(saver, &config(&tid), checkpoint(), first_meta).await;
    let second = put(saver, &config(&tid), checkpoint(), second_meta).await;
    let (only_first, only_second, both) = (
        vec![id_of(&first)],
        vec![id_of(&second)],
        vec![id_of(&second), id_of(&first)],
    );
    let none: Vec<CheckpointId> = Vec::new();
    let cases = [
        (json!({}), &both),
        (json!({"nested": {"a": 1, "b": {"c": [1, 2]}}}), &only_first),
        (json!({"nested": {"b": {"c": [1, 2]}, "a": 1}}), &only_first),
        (json!({"nested": {"a": 1}}), &none),
        (
            json!({"nested": {"a": 1, "b": {"c": [1, 2]}, "d": 3}}),
            &none,
        ),
        (json!({"nested.a": 1}), &only_first),
        (json!({"nested.b.c": [1, 2]}), &only_first),
        (json!({"nested.b.c": [1]}), &none),
        (json!({"nothing": null}), &only_first),
        (json!({"missing": null}), &none),
        (json!({"flag": null}), &none),
        (json!({"flag": true}), &only_first),
        (json!({"flag": false}), &only_second),
        (json!({"flag": 1}), &none),
        (json!({"flag": "true"}), &none),
        (json!({"one": 1.0}), &only_first),
        (json!({"one": 2}), &only_second),
        (json!({"one": "1"}), &none),
        (json!({"half": 1.5}), &only_first),
        (json!({"two_float": 2}), &only_first),
        (json!({"tags": ["x", "y"]}), &only_first),
        (json!({"tags": ["y", "x"]}), &none),
        (json!({"tags": ["x"]}), &none),
        (json!({"tags": "x"}), &none),
        (json!({"text": "héllo ✓ 😀"}), &only_first),
        (json!({"text": "hello"}), &none),
        (json!({"a.b": "top-level dotted key"}), &only_first),
        (json!({"a.b": "nested b"}), &none),
        (json!({"big": big}), &only_first),
        (json!({"big": format!("{}y", &big[1..])}), &none),
        (json!({"source": "loop", "one": 2}), &only_second),
    ];
    for (filter, expected) in cases {
        let shown: String = filter.to_string().chars().take(120).collect();
        let listed = list_ids(saver, ListQuery::thread(&tid).filter(filter)).await;
        assert_eq!(&listed, expected, "CP-EXT-09: filter {shown}");
    }
    for key in ["bad key", "x') OR '1'='1", "ключ", "😀", ""] {
        let mut filter = serde_json::Map::new();
        filter.insert(key.to_owned(), json!(1));
        match try_list(saver, ListQuery::thread(&tid).filter(filter.into())).await {
            Ok(listed) => panic!(
                "CP-EXT-09: filter key {key:?} must be rejected, listed {:?}",
                ids(&listed)
            ),
            Err(err) => assert_eq!(
                err.kind(),
                ErrorKind::InvalidInput,
                "CP-EXT-09: filter key {key:?}: {err}"
            ),
        }
    }
}

fn nested(depth: usize) -> serde_json::Value {
    (0..depth).fold(json!("bottom"), |inner, level| {
        if level % 2 == 0 {
            json!([inner])
        } else {
            json!({ "level": inner })
        }
    })
}

/// CP-EXT-10: values round-trip by [`Value`] equality, as channel values and
/// as pending writes: the empty string, a 1 MB string, nesting depth 100,
/// `i64::MIN`/`i64::MAX`, `u64::MAX` and integers above 2^53 (exact), floats
/// (exact, including subnormals and extremes), emoji and non-ASCII map keys
/// and channel names, bytes (as an array of numbers) and `null` (present, not
/// absent).
///
/// Depth 100, not upstream's 1,000: serde_json refuses to parse JSON nested
/// deeper than 128 levels by default, so a JSON-backed saver cannot go
/// deeper. NaN and infinities are out of scope: JSON cannot represent them
/// (`JsonSerializer` documents that they become `null`).
pub async fn cp_ext_10_value_fidelity<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let entries: Vec<(&str, Value)> = vec![
        ("empty", text("")),
        ("big", Value::new("ab✓".repeat((1 << 20) / 5))),
        ("deep", Value::from_json(nested(100))),
        (
            "integers",
            Value::new(json!([
                i64::MIN,
                i64::MAX,
                u64::MAX,
                (1_u64 << 53) + 1,
                -(1_i64 << 53) - 1,
                0,
                -1
            ])),
        ),
        (
            "floats",
            Value::new(vec![
                0.1,
                -2.5,
                1e300,
                -1e-300,
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                5e-324,
                std::f64::consts::PI,
                0.1 + 0.2,
                1.0,
            ]),
        ),
        (
            "emoji_keys",
            Value::new(json!({"😀": 1, "🚀🚀": {"ключ": "値"}, "": "empty key"})),
        ),
        ("😀 channel", text("emoji channel name")),
        ("bytes", Value::new(vec![0_u8, 255, 128, 10])),
        ("null", Value::null()),
    ];
    let stored = put(
        saver,
        &config(&tid),
        checkpoint_with(&entries),
        loop_metadata(),
    )
    .await;
    let task = task_id();
    put_writes(saver, &stored, &task, &entries).await;
    let tuple = get_found(saver, &stored).await;
    let read: &BTreeMap<String, Value> = &tuple.checkpoint.channel_values;
    assert_eq!(
        read.len(),
        entries.len(),
        "CP-EXT-10: every channel reads back, null included"
    );
    for (channel, expected) in &entries {
        let value = read
            .get(*channel)
            .unwrap_or_else(|| panic!("CP-EXT-10: channel {channel:?} is missing"));
        assert!(
            value == expected,
            "CP-EXT-10: channel value {channel:?} changed in the round trip"
        );
    }
    assert_eq!(
        tuple.pending_writes.len(),
        entries.len(),
        "CP-EXT-10: every write reads back"
    );
    for (channel, expected) in &entries {
        let write = tuple
            .pending_writes
            .iter()
            .find(|w| w.channel == *channel)
            .unwrap_or_else(|| panic!("CP-EXT-10: write to {channel:?} is missing"));
        assert!(
            write.value == *expected,
            "CP-EXT-10: write to {channel:?} changed in the round trip"
        );
    }
}

/// CP-EXT-12: writes against a checkpoint id that is not stored are not shown
/// anywhere until a checkpoint with that id is stored (then they are its
/// pending writes), are never shown on other checkpoints, and are removed by
/// `delete_thread`, also those of an id that was never stored (storing the
/// ids afterwards shows none).
pub async fn cp_ext_12_writes_for_unstored_checkpoint<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let existing = put_values(saver, &config(&tid), &[("k", text("v"))]).await;
    let future = checkpoint_with(&[("k", text("future"))]);
    let address = config(&tid).with_id(future.id.clone());
    let never = checkpoint_with(&[("k", text("never"))]);
    let task = task_id();
    put_writes(saver, &address, &task, &[("ch", text("early"))]).await;
    put_writes(
        saver,
        &config(&tid).with_id(never.id.clone()),
        &task,
        &[("ch", text("orphan"))],
    )
    .await;
    assert!(
        get(saver, &address).await.is_none(),
        "CP-EXT-12: the unstored id is not found"
    );
    let latest = get_found(saver, &config(&tid)).await;
    assert_eq!(
        latest.config, existing,
        "CP-EXT-12: latest is still the stored checkpoint"
    );
    assert!(
        latest.pending_writes.is_empty(),
        "CP-EXT-12: the write is not shown on another checkpoint"
    );
    let listed = list(saver, ListQuery::thread(&tid)).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&existing)],
        "CP-EXT-12: list shows only the stored checkpoint"
    );
    assert!(
        listed[0].pending_writes.is_empty(),
        "CP-EXT-12: list shows no foreign write"
    );

    let stored = put(saver, &existing, future.clone(), loop_metadata()).await;
    assert_eq!(stored, address, "CP-EXT-12: stored at the written address");
    let expected = vec![pending(&task, "ch", text("early"))];
    assert_eq!(
        get_found(saver, &address).await.pending_writes,
        expected,
        "CP-EXT-12: visible once stored"
    );
    assert!(
        get_found(saver, &existing).await.pending_writes.is_empty(),
        "CP-EXT-12: not on the parent"
    );

    delete_thread(saver, &tid).await;
    for (what, checkpoint) in [("stored", future), ("never stored", never)] {
        let again = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
        assert!(
            get_found(saver, &again).await.pending_writes.is_empty(),
            "CP-EXT-12: delete_thread must remove the writes of the {what} checkpoint id"
        );
    }
}
