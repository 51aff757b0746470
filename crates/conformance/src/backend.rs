//! CP-BK: cases taken from backend-specific upstream tests that apply to
//! every saver.
//!
//! CP-BK-02 to CP-BK-09 list across all threads (`ListQuery::all()`), so they
//! need a saver that holds nothing else: the
//! [`checkpoint_conformance!`](crate::checkpoint_conformance) macro gives every
//! test its own fresh saver.

use std::collections::BTreeSet;

use serde_json::json;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, CheckpointConfig, CheckpointMetadata, CheckpointSaver,
    CheckpointSource, ListQuery, Value,
};
use stategraph_core::ErrorKind;
use stategraph_core::json::json_eq;

use crate::fixtures::{
    checkpoint, checkpoint_with, config, config_ns, get, get_found, id_of, ids, list, list_ids,
    loop_metadata, metadata, pending, put, put_values, put_with, put_writes, task_id, text,
    thread_id, values, version,
};

/// The upstream `test_search` data: thread 1 with one root checkpoint, thread
/// 2 with one root checkpoint and one in namespace `"inner"`, stored in this
/// order.
struct Search {
    thread_1: String,
    thread_2: String,
    c1: CheckpointConfig,
    c2: CheckpointConfig,
    c3: CheckpointConfig,
}

async fn search<S: CheckpointSaver>(saver: &S) -> Search {
    let (thread_1, thread_2) = (thread_id(), thread_id());
    let m1 = metadata(CheckpointSource::Input, 2)
        .with("writes", json!({}))
        .with("score", json!(1));
    let m2 = metadata(CheckpointSource::Loop, 1)
        .with("writes", json!({"foo": "bar"}))
        .with("score", json!(null));
    let c1 = put(saver, &config(&thread_1), checkpoint(), m1).await;
    let c2 = put(saver, &config(&thread_2), checkpoint(), m2).await;
    let c3 = put(
        saver,
        &config_ns(&thread_2, "inner"),
        checkpoint(),
        CheckpointMetadata::default(),
    )
    .await;
    Search {
        thread_1,
        thread_2,
        c1,
        c2,
        c3,
    }
}

/// CP-BK-02: listing every thread with a metadata filter finds the one
/// matching checkpoint, with its exact metadata. Needs a fresh saver.
pub async fn cp_bk_02_search_all_threads_by_source<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list(saver, ListQuery::all().filter(json!({"source": "input"}))).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&data.c1)],
        "CP-BK-02: exactly thread 1's checkpoint"
    );
    let expected = json!({"source": "input", "step": 2, "writes": {}, "score": 1, "parents": {}});
    let found = listed[0].metadata.to_json();
    assert!(
        json_eq(&found, &expected),
        "CP-BK-02: exact metadata, got {found}"
    );
    assert_eq!(
        listed[0].config.thread_id, data.thread_1,
        "CP-BK-02: thread 1"
    );
}

/// CP-BK-03: a filter value that is an object matches a metadata value equal
/// to it (`writes = {"foo": "bar"}`). Needs a fresh saver.
pub async fn cp_bk_03_search_by_nested_object<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list_ids(
        saver,
        ListQuery::all().filter(json!({"step": 1, "writes": {"foo": "bar"}})),
    )
    .await;
    assert_eq!(
        listed,
        vec![id_of(&data.c2)],
        "CP-BK-03: exactly thread 2's root checkpoint"
    );
}

/// CP-BK-04: listing every thread without a filter returns every checkpoint,
/// newest first across threads and namespaces. Needs a fresh saver.
pub async fn cp_bk_04_search_all_threads_unfiltered<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list_ids(saver, ListQuery::all().filter(json!({}))).await;
    assert_eq!(
        listed,
        vec![id_of(&data.c3), id_of(&data.c2), id_of(&data.c1)],
        "CP-BK-04: all 3 checkpoints, newest first"
    );
}

/// CP-BK-05: a filter nothing matches returns nothing across threads. Needs a
/// fresh saver.
pub async fn cp_bk_05_search_without_match<S: CheckpointSaver>(saver: &S) {
    search(saver).await;
    let listed = list(
        saver,
        ListQuery::all().filter(json!({"source": "update", "step": 1})),
    )
    .await;
    assert!(listed.is_empty(), "CP-BK-05: no match");
}

/// CP-BK-06: a thread without a namespace lists every namespace of the
/// thread. Needs a fresh saver.
pub async fn cp_bk_06_thread_without_namespace_lists_all<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list(saver, ListQuery::thread(&data.thread_2)).await;
    assert_eq!(listed.len(), 2, "CP-BK-06: thread 2 has 2 checkpoints");
    let namespaces: BTreeSet<&str> = listed
        .iter()
        .map(|t| t.config.checkpoint_ns.as_str())
        .collect();
    assert_eq!(
        namespaces,
        BTreeSet::from(["", "inner"]),
        "CP-BK-06: both namespaces"
    );
}

/// CP-BK-07: without a thread, `before` compares ids across all threads.
/// Needs a fresh saver.
pub async fn cp_bk_07_before_across_threads<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list(saver, ListQuery::all().before(id_of(&data.c2))).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&data.c1)],
        "CP-BK-07: only thread 1's older checkpoint"
    );
    assert_eq!(
        listed[0].config.thread_id, data.thread_1,
        "CP-BK-07: from thread 1"
    );
}

/// CP-BK-08: `limit` applies within a thread. Needs a fresh saver.
pub async fn cp_bk_08_limit_within_thread<S: CheckpointSaver>(saver: &S) {
    let data = search(saver).await;
    let listed = list(saver, ListQuery::thread(&data.thread_2).limit(1)).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&data.c3)],
        "CP-BK-08: thread 2's newest checkpoint"
    );
    assert_eq!(
        listed[0].config.thread_id, data.thread_2,
        "CP-BK-08: from thread 2"
    );
}

/// CP-BK-09: `limit` across threads: 2 gives 2, 0 gives nothing, none gives
/// all 5. Needs a fresh saver.
pub async fn cp_bk_09_limit_across_threads<S: CheckpointSaver>(saver: &S) {
    for _ in 0..5 {
        put(saver, &config(&thread_id()), checkpoint(), loop_metadata()).await;
    }
    assert_eq!(
        list(saver, ListQuery::all().limit(2)).await.len(),
        2,
        "CP-BK-09: limit 2"
    );
    assert!(
        list(saver, ListQuery::all().limit(0)).await.is_empty(),
        "CP-BK-09: limit 0 returns nothing"
    );
    assert_eq!(
        list(saver, ListQuery::all()).await.len(),
        5,
        "CP-BK-09: no limit"
    );
}

/// CP-BK-11: filter keys may contain hyphens and start with digits, and a
/// dotted key is a path into nested objects.
pub async fn cp_bk_11_filter_keys_with_hyphens_and_digits<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let meta = loop_metadata()
        .with("access-level", json!("public"))
        .with("user", json!({"access-level": "nested", "123abc": "ok2"}))
        .with("123abc", json!("ok"));
    let stored = put(saver, &config(&tid), checkpoint(), meta).await;
    for (filter, hits) in [
        (json!({"access-level": "public"}), 1),
        (json!({"user.access-level": "nested"}), 1),
        (json!({"123abc": "ok"}), 1),
        (json!({"user.123abc": "ok2"}), 1),
        (json!({"user.access-level": "public"}), 0),
        (json!({"access-level": "nested"}), 0),
    ] {
        let listed = list_ids(saver, ListQuery::thread(&tid).filter(filter.clone())).await;
        let expected = if hits == 1 {
            vec![id_of(&stored)]
        } else {
            Vec::new()
        };
        assert_eq!(listed, expected, "CP-BK-11: filter {filter}");
    }
}

/// CP-BK-12: NUL characters are stripped from string metadata on `put`, and a
/// filter on the stripped text finds the checkpoint.
pub async fn cp_bk_12_nul_characters_are_stripped<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let meta = loop_metadata().with("my_key", json!("\u{0}abc"));
    let stored = put(saver, &config(&tid), checkpoint(), meta).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.metadata.extra.get("my_key"),
        Some(&json!("abc")),
        "CP-BK-12: NUL stripped"
    );
    let listed = list_ids(
        saver,
        ListQuery::thread(&tid).filter(json!({"my_key": "abc"})),
    )
    .await;
    assert_eq!(
        listed,
        vec![id_of(&stored)],
        "CP-BK-12: the filter finds the checkpoint"
    );
}

/// CP-BK-17: the saver snapshots what it is given: changing the caller's own
/// copies of the checkpoint, metadata and writes after `put`/`put_writes`, or
/// the tuple read back, never changes what the saver returns.
pub async fn cp_bk_17_caller_copies_are_independent<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut mine = checkpoint_with(&[("k", text("original"))]);
    let mut my_metadata = loop_metadata().with("tag", json!("original"));
    let stored = put(saver, &config(&tid), mine.clone(), my_metadata.clone()).await;
    let expected = get_found(saver, &stored).await;
    assert_eq!(
        expected.checkpoint.channel_values,
        values(&[("k", text("original"))]),
        "CP-BK-17: setup"
    );

    mine.channel_values.insert("k".into(), text("mutated"));
    mine.channel_values.insert("extra".into(), text("added"));
    mine.channel_versions.insert("k".into(), version(9));
    mine.versions_seen
        .insert("node".into(), [("k".to_owned(), version(9))].into());
    mine.ts = "mutated".into();
    my_metadata.step = Some(99);
    my_metadata.extra.insert("tag".into(), json!("mutated"));
    assert_eq!(
        get_found(saver, &stored).await,
        expected,
        "CP-BK-17: caller's checkpoint copy changed"
    );

    let task = task_id();
    let mut my_writes = vec![("ch".to_owned(), text("original"))];
    saver
        .put_writes(&stored, my_writes.clone(), &task, "")
        .await
        .unwrap_or_else(|err| panic!("CP-BK-17: put_writes failed: {err}"));
    my_writes[0].1 = text("mutated");
    my_writes.push(("other".to_owned(), text("added")));
    let mut read = get_found(saver, &stored).await;
    assert_eq!(
        read.pending_writes,
        vec![pending(&task, "ch", text("original"))],
        "CP-BK-17: writes copy"
    );
    let snapshot = read.clone();

    read.checkpoint.channel_values.clear();
    read.metadata.step = Some(-5);
    read.pending_writes.clear();
    assert_eq!(
        get_found(saver, &stored).await,
        snapshot,
        "CP-BK-17: mutating a read tuple changed the saver"
    );
}

/// CP-BK-18: writes may arrive before the checkpoint they reference is
/// stored; they are accepted and visible once the checkpoint exists.
pub async fn cp_bk_18_writes_before_checkpoint<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let checkpoint = checkpoint_with(&[("k", text("v"))]);
    let early = config(&tid).with_id(checkpoint.id.clone());
    let task = task_id();
    put_writes(saver, &early, &task, &[("ch", text("early"))]).await;
    let stored = put(saver, &config(&tid), checkpoint, loop_metadata()).await;
    assert_eq!(
        stored, early,
        "CP-BK-18: the checkpoint is stored at the written address"
    );
    let expected = vec![pending(&task, "ch", text("early"))];
    assert_eq!(
        get_found(saver, &stored).await.pending_writes,
        expected,
        "CP-BK-18: by id"
    );
    assert_eq!(
        get_found(saver, &config(&tid)).await.pending_writes,
        expected,
        "CP-BK-18: latest"
    );
}

/// CP-BK-19: a re-put of a stored checkpoint id with the same parent replaces
/// checkpoint and metadata without duplicating it; a re-put with a different
/// parent fails with [`ErrorKind::Conflict`] and changes nothing.
pub async fn cp_bk_19_reput_replaces_or_conflicts<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let parent = put_values(saver, &config(&tid), &[("k", text("parent"))]).await;
    let first = checkpoint().with_channel("k", text("first"), version(2));
    let retry = {
        let mut retry = first.clone();
        retry.channel_values.insert("k".into(), text("second"));
        retry.channel_versions.insert("k".into(), version(3));
        retry
    };
    let stored = put(saver, &parent, first, metadata(CheckpointSource::Loop, 1)).await;
    let again = put(
        saver,
        &parent,
        retry.clone(),
        metadata(CheckpointSource::Loop, 5),
    )
    .await;
    assert_eq!(again, stored, "CP-BK-19: a re-put returns the same address");
    let listed = list(saver, ListQuery::thread(&tid)).await;
    assert_eq!(
        ids(&listed),
        vec![id_of(&stored), id_of(&parent)],
        "CP-BK-19: no duplicate row"
    );
    let read = get_found(saver, &stored).await;
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("k", text("second"))]),
        "CP-BK-19: replaced values"
    );
    assert_eq!(read.metadata.step, Some(5), "CP-BK-19: replaced metadata");
    assert_eq!(
        read.parent_config,
        Some(parent.clone()),
        "CP-BK-19: same parent"
    );

    let orphan = put(
        saver,
        &config(&tid).with_ns("other"),
        checkpoint(),
        loop_metadata(),
    )
    .await;
    for (what, other_parent) in [
        ("no parent", config(&tid)),
        ("another parent", config(&tid).with_id(id_of(&orphan))),
    ] {
        match saver
            .put(
                &other_parent,
                retry.clone(),
                loop_metadata(),
                ChannelVersions::new(),
            )
            .await
        {
            Ok(cfg) => panic!("CP-BK-19: a re-put with {what} must fail, it stored {cfg:?}"),
            Err(err) => assert_eq!(
                err.kind(),
                ErrorKind::Conflict,
                "CP-BK-19: re-put with {what}: {err}"
            ),
        }
    }
    let read = get_found(saver, &stored).await;
    assert_eq!(
        read.parent_config,
        Some(parent),
        "CP-BK-19: the conflict changed the parent"
    );
    assert_eq!(
        read.metadata.step,
        Some(5),
        "CP-BK-19: the conflict changed the metadata"
    );
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("k", text("second"))]),
        "CP-BK-19: values kept"
    );
}

/// CP-BK-21: two forks of one parent that both bump channel `c` to the same
/// counter (with different salts) and different values each read their own
/// value; the parent still reads its own.
pub async fn cp_bk_21_forks_at_the_same_counter<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let base = ChannelVersion::next(None);
    let parent_checkpoint = checkpoint().with_channel("c", text("base"), base);
    let parent = put(saver, &config(&tid), parent_checkpoint, loop_metadata()).await;
    let (version_a, version_b) = (
        ChannelVersion::next(Some(&base)),
        ChannelVersion::next(Some(&base)),
    );
    assert_eq!(
        version_a.counter(),
        version_b.counter(),
        "CP-BK-21: setup: same counter"
    );
    assert_ne!(version_a, version_b, "CP-BK-21: setup: fresh salts differ");
    let fork_a = put(
        saver,
        &parent,
        checkpoint().with_channel("c", text("A"), version_a),
        loop_metadata(),
    )
    .await;
    let fork_b = put(
        saver,
        &parent,
        checkpoint().with_channel("c", text("B"), version_b),
        loop_metadata(),
    )
    .await;
    let read = |cfg: CheckpointConfig| async move {
        get_found(saver, &cfg).await.checkpoint.channel_values
    };
    assert_eq!(
        read(fork_a).await,
        values(&[("c", text("A"))]),
        "CP-BK-21: fork A reads its value"
    );
    assert_eq!(
        read(fork_b).await,
        values(&[("c", text("B"))]),
        "CP-BK-21: fork B reads its value"
    );
    assert_eq!(
        read(parent).await,
        values(&[("c", text("base"))]),
        "CP-BK-21: the parent reads its value"
    );
}

/// CP-BK-23: a channel listed in `new_versions` without a value (the channel
/// was cleared) reads back absent; the parent still reads its value.
pub async fn cp_bk_23_versioned_channel_without_value_is_absent<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let parent = put_values(
        saver,
        &config(&tid),
        &[("x", text("v1")), ("y", text("kept"))],
    )
    .await;
    let mut cleared = checkpoint().with_channel("y", text("kept"), version(1));
    cleared.channel_versions.insert("x".into(), version(2));
    let new_versions: ChannelVersions = [("x".to_owned(), version(2))].into();
    let child = put_with(saver, &parent, cleared, loop_metadata(), new_versions).await;
    let read = get_found(saver, &child).await;
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("y", text("kept"))]),
        "CP-BK-23: x is absent"
    );
    assert_eq!(
        read.checkpoint.channel_versions.get("x"),
        Some(&version(2)),
        "CP-BK-23: x keeps its version"
    );
    let read_parent = get_found(saver, &parent).await;
    assert_eq!(
        read_parent.checkpoint.channel_values,
        values(&[("x", text("v1")), ("y", text("kept"))]),
        "CP-BK-23: the parent still reads x"
    );
    // A stored `null` is a value, not an absence.
    let with_null = checkpoint().with_channel("x", Value::null(), version(3));
    let null_child = put(saver, &child, with_null, loop_metadata()).await;
    let read = get_found(saver, &null_child).await;
    assert_eq!(
        read.checkpoint.channel_values,
        values(&[("x", Value::null())]),
        "CP-BK-23: null is present"
    );
    assert!(
        get(saver, &child).await.is_some(),
        "CP-BK-23: the cleared checkpoint is still stored"
    );
}
