//! CP-EXT: extension cases, not in the upstream suite, that make the port
//! stricter: concurrent writes, pagination under appends, the filter
//! semantics, value fidelity, writes for checkpoints not stored yet and
//! checkpoints whose values are missing.

use std::collections::BTreeMap;

use futures::future::join_all;
use serde_json::json;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, CheckpointConfig, CheckpointId, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, CheckpointTuple, Error, ListQuery, PendingWrite, Result,
    Value, special,
};
use stategraph_core::ErrorKind;

use crate::fixtures::{
    CHILD_NS, chain_steps, checkpoint, checkpoint_with, config, config_ns, delete_thread, get,
    get_found, id_of, ids, json_of, large_text, list, list_ids, list_items, loop_metadata,
    metadata, pending, put, put_values, put_with, put_writes, task_id, text, thread_id, try_list,
    values, version,
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

/// CP-EXT-09: a filter that is not a JSON object (`null`, a boolean, a
/// number, a string, an array) is not "no filter": `list` yields exactly one
/// item, an `Err` of kind [`ErrorKind::InvalidInput`], for one thread and
/// across threads. An object filter given afterwards replaces it.
pub async fn cp_ext_09_non_object_filter_is_invalid_input<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put(saver, &config(&tid), checkpoint(), loop_metadata()).await;
    for filter in [
        json!(null),
        json!(true),
        json!(1),
        json!("source"),
        json!([{"source": "loop"}]),
    ] {
        for query in [ListQuery::thread(&tid), ListQuery::all()] {
            let shown = format!("{query:?} with filter {filter}");
            let items = list_items(saver, query.filter(filter.clone())).await;
            match items.as_slice() {
                [Err(err)] => assert_eq!(
                    err.kind(),
                    ErrorKind::InvalidInput,
                    "CP-EXT-09: {shown}: {err}"
                ),
                other => panic!(
                    "CP-EXT-09: {shown} must yield one InvalidInput error, got {} items: {:?}",
                    other.len(),
                    other
                        .iter()
                        .map(|item| item.as_ref().map(|t| id_of(&t.config)))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }
    let replaced = ListQuery::thread(&tid)
        .filter(json!("source"))
        .filter(json!({"source": "loop"}));
    assert_eq!(
        list_ids(saver, replaced).await,
        vec![id_of(&stored)],
        "CP-EXT-09: an object filter replaces a rejected one"
    );
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

/// A listing item reduced to what CP-EXT-21 compares: the id of a
/// checkpoint read, or of a checkpoint reported missing a value.
#[derive(Debug, PartialEq)]
enum Item {
    Read(CheckpointId),
    Missing(CheckpointId),
}

/// The checkpoint ids of listing items; panics on an error other than
/// [`Error::Integrity`].
fn items(case: &str, listed: Vec<Result<CheckpointTuple>>) -> Vec<Item> {
    listed
        .into_iter()
        .map(|item| match item {
            Ok(tuple) => Item::Read(id_of(&tuple.config)),
            Err(Error::Integrity { checkpoint_id, .. }) => Item::Missing(checkpoint_id),
            Err(err) => panic!("{case}: unexpected list error: {err}"),
        })
        .collect()
}

/// Asserts that `err` is the [`Error::Integrity`] of `operation` for
/// channel `channel` at `version` of the checkpoint at `address`.
fn assert_missing(
    case: &str,
    err: &Error,
    operation: &str,
    address: &CheckpointConfig,
    channel: &str,
    version: ChannelVersion,
) {
    assert_eq!(err.kind(), ErrorKind::Backend, "{case}: kind of {err}");
    let Error::Integrity {
        operation: op,
        thread_id,
        checkpoint_ns,
        checkpoint_id,
        channel: missing,
        version: listed,
    } = err
    else {
        panic!("{case}: expected Error::Integrity, got {err}");
    };
    assert_eq!(*op, operation, "{case}: operation");
    assert_eq!(thread_id, &address.thread_id, "{case}: thread");
    assert_eq!(checkpoint_ns, &address.checkpoint_ns, "{case}: namespace");
    assert_eq!(
        Some(checkpoint_id),
        address.checkpoint_id.as_ref(),
        "{case}: checkpoint"
    );
    assert_eq!(missing, channel, "{case}: channel");
    assert_eq!(*listed, version, "{case}: version");
    let message = err.to_string();
    for part in [&address.thread_id, checkpoint_id.as_str(), channel] {
        assert!(message.contains(part), "{case}: {message:?} names {part:?}");
    }
}

/// Stores a child of `parent` that lists channel `x` at version 7 without
/// storing a value for it (`new_versions` is empty, as if the version were
/// unchanged) and reads channel `y` at version 1 from the parent.
async fn put_missing_x<S: CheckpointSaver>(
    saver: &S,
    parent: &CheckpointConfig,
    metadata: CheckpointMetadata,
) -> CheckpointConfig {
    let broken = checkpoint()
        .with_channel("y", text("kept"), version(1))
        .with_channel("x", text("never stored"), version(7));
    put_with(saver, parent, broken, metadata, ChannelVersions::new()).await
}

/// CP-EXT-21: a checkpoint that lists a channel version whose value is not
/// stored is unreadable, never read as if the channel were empty:
/// `get_tuple` by id and as the latest fails with [`Error::Integrity`]
/// (kind [`ErrorKind::Backend`]) naming the operation, thread, namespace,
/// checkpoint, channel and version, and `list` yields that error in the
/// checkpoint's place. The parent stays readable, and a cleared channel (a
/// version stored without a value) is absent, not missing.
///
/// The value is missing because a `put` named its version as unchanged
/// without any checkpoint having stored it; backend tests delete stored value
/// rows to the same effect.
pub async fn cp_ext_21_missing_value_is_an_integrity_error<S: CheckpointSaver>(saver: &S) {
    let case = "CP-EXT-21";
    let tid = thread_id();
    let parent = put_values(
        saver,
        &config_ns(&tid, CHILD_NS),
        &[("x", text("v1")), ("y", text("kept"))],
    )
    .await;
    let broken = put_missing_x(saver, &parent, loop_metadata()).await;
    let x = version(7);
    for address in [broken.clone(), config_ns(&tid, CHILD_NS)] {
        match saver.get_tuple(&address).await {
            Ok(found) => panic!(
                "{case}: get_tuple({address:?}) must fail, it read {:?}",
                found.map(|t| t.checkpoint.channel_values)
            ),
            Err(err) => assert_missing(case, &err, "get_tuple", &broken, "x", x),
        }
    }
    let listed = list_items(saver, ListQuery::thread(&tid)).await;
    assert_eq!(listed.len(), 2, "{case}: list yields both checkpoints");
    match &listed[0] {
        Err(err) => assert_missing(case, err, "list", &broken, "x", x),
        Ok(tuple) => panic!(
            "{case}: list must report the broken checkpoint, it read {:?}",
            tuple.checkpoint.channel_values
        ),
    }
    match &listed[1] {
        Ok(tuple) => assert_eq!(tuple.config, parent, "{case}: then the parent"),
        Err(err) => panic!("{case}: the parent must list: {err}"),
    }
    assert_eq!(
        get_found(saver, &parent).await.checkpoint.channel_values,
        values(&[("x", text("v1")), ("y", text("kept"))]),
        "{case}: the parent reads its values"
    );

    let mut cleared = checkpoint().with_channel("y", text("kept"), version(1));
    cleared.channel_versions.insert("x".into(), version(8));
    let new_versions: ChannelVersions = [("x".to_owned(), version(8))].into();
    let cleared = put_with(saver, &parent, cleared, loop_metadata(), new_versions).await;
    assert_eq!(
        get_found(saver, &cleared).await.checkpoint.channel_values,
        values(&[("y", text("kept"))]),
        "{case}: a cleared channel is absent, not an error"
    );
}

/// CP-EXT-21: one unreadable checkpoint does not stop a listing. Listing
/// every thread yields an `Err` in its place and every other checkpoint, of
/// its own thread and of the others, newest first; `limit` counts the `Err`
/// item; `before` pages past it; a filter that excludes it lists no error.
/// Needs a fresh saver.
pub async fn cp_ext_21_list_goes_on_past_an_unreadable_checkpoint<S: CheckpointSaver>(saver: &S) {
    let case = "CP-EXT-21";
    let (thread_a, thread_b, thread_c) = (thread_id(), thread_id(), thread_id());
    let a0 = put_values(saver, &config(&thread_a), &[("y", text("a"))]).await;
    let b0 = put_values(saver, &config(&thread_b), &[("y", text("b"))]).await;
    let b1 = put_missing_x(saver, &b0, metadata(CheckpointSource::Loop, 1)).await;
    let c0 = put_values(saver, &config(&thread_c), &[("y", text("c"))]).await;
    let a1 = put(saver, &a0, checkpoint(), loop_metadata()).await;
    let [a0, b0, b1, c0, a1] = [a0, b0, b1, c0, a1].map(|address| id_of(&address));
    let read = |id: &CheckpointId| Item::Read(id.clone());
    let cases = [
        (
            ListQuery::all(),
            vec![
                read(&a1),
                read(&c0),
                Item::Missing(b1.clone()),
                read(&b0),
                read(&a0),
            ],
        ),
        (
            ListQuery::all().limit(3),
            vec![read(&a1), read(&c0), Item::Missing(b1.clone())],
        ),
        (
            ListQuery::all().before(c0.clone()),
            vec![Item::Missing(b1.clone()), read(&b0), read(&a0)],
        ),
        (
            ListQuery::all().before(b1.clone()),
            vec![read(&b0), read(&a0)],
        ),
        (
            ListQuery::thread(&thread_b),
            vec![Item::Missing(b1.clone()), read(&b0)],
        ),
        (
            ListQuery::all().filter(json!({"source": "loop", "step": 1})),
            vec![Item::Missing(b1.clone())],
        ),
        (
            ListQuery::all().filter(json!({"step": 0})),
            vec![read(&a1), read(&c0), read(&b0), read(&a0)],
        ),
    ];
    for (query, expected) in cases {
        let shown = format!("{query:?}");
        let listed = items(case, list_items(saver, query).await);
        assert_eq!(listed, expected, "{case}: {shown}");
    }
    let clean = list_ids(saver, ListQuery::thread(&thread_a)).await;
    assert_eq!(
        clean,
        vec![a1, a0],
        "{case}: other threads list without error"
    );
}

/// CP-EXT-22: large strings (which a saver may store once per thread, see
/// `stategraph_checkpoint::pieces`) round-trip exactly wherever they occur:
/// alone, inside lists and objects, repeated within a value, shared by two
/// channels, two checkpoints, a pending write and another thread; and a
/// deleted thread takes them with it without touching the other thread.
pub async fn cp_ext_22_large_strings_round_trip<S: CheckpointSaver>(saver: &S) {
    let (a, b) = (large_text("A", 70_000), large_text("B", 20_000));
    let (tid, other) = (thread_id(), thread_id());
    let first = checkpoint()
        .with_channel("big", Value::new(a.clone()), version(1))
        .with_channel("list", Value::new(json!([a, b, "short"])), version(1));
    let c1 = put(saver, &config(&tid), first, loop_metadata()).await;
    put_writes(
        saver,
        &c1,
        &task_id(),
        &[
            ("big", Value::new(a.clone())),
            ("obj", Value::new(json!({"x": b}))),
        ],
    )
    .await;
    // The child keeps `big` at version 1 and writes `list` and `again` anew.
    let second = checkpoint()
        .with_channel("big", Value::new(a.clone()), version(1))
        .with_channel("list", Value::new(json!([a, b, a])), version(2))
        .with_channel("again", Value::new(a.clone()), version(1));
    let mut new_versions = ChannelVersions::new();
    new_versions.insert("list".into(), version(2));
    new_versions.insert("again".into(), version(1));
    let c2 = put_with(saver, &c1, second, loop_metadata(), new_versions).await;
    put_values(saver, &config(&other), &[("big", Value::new(a.clone()))]).await;

    let expect = |tuple: &CheckpointTuple, list: serde_json::Value, again: bool| {
        let json = |channel: &str| tuple.checkpoint.channel_values.get(channel).map(json_of);
        assert_eq!(json("big"), Some(json!(a)), "CP-EXT-22: big");
        assert_eq!(json("list"), Some(list), "CP-EXT-22: list");
        assert_eq!(json("again"), again.then(|| json!(a)), "CP-EXT-22: again");
    };
    let tuple1 = get_found(saver, &c1).await;
    expect(&tuple1, json!([a, b, "short"]), false);
    let writes: Vec<serde_json::Value> = tuple1
        .pending_writes
        .iter()
        .map(|w| json_of(&w.value))
        .collect();
    assert_eq!(writes, vec![json!(a), json!({"x": b})], "CP-EXT-22: writes");
    expect(&get_found(saver, &c2).await, json!([a, b, a]), true);
    let listed = list(saver, ListQuery::thread(&tid)).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&c2), id_of(&c1)],
        "CP-EXT-22: list"
    );
    expect(&listed[0], json!([a, b, a]), true);
    expect(&listed[1], json!([a, b, "short"]), false);

    delete_thread(saver, &tid).await;
    assert!(
        get(saver, &config(&tid)).await.is_none(),
        "CP-EXT-22: deleted"
    );
    let kept = get_found(saver, &config(&other)).await;
    assert_eq!(
        kept.checkpoint.channel_values.get("big").map(json_of),
        Some(json!(a)),
        "CP-EXT-22: the other thread keeps its copy"
    );
}
