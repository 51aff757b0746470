//! CP-LIM: the limit table of `stategraph_core::limits` (docs/LIMITS.md)
//! holds on every saver alike: ids at their limit are stored and read back,
//! one byte more or a NUL character is an [`Error::Limit`] before anything
//! is stored, and metadata is limited in depth and size.
//!
//! The cases of the [`checkpoint_conformance!`](crate::checkpoint_conformance)
//! macro are cheap. Two cases move values of the size limit (64 MiB) and run
//! once per backend instead of once per configuration: every saver calls
//! [`metadata_size_limit`], savers that serialize values also call
//! [`serialized_value_size_limit`].

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointId, CheckpointMetadata,
    CheckpointSaver, Error, ListQuery, PruneStrategy, Result, Value,
};
use stategraph_core::limits::{LimitError, MAX_DEPTH, MAX_ID_BYTES, MAX_VALUE_BYTES};
use stategraph_core::{ErrorKind, ValueError};

use crate::fixtures::{
    checkpoint, checkpoint_with, config, config_ns, get, get_found, id_of, list, list_ids,
    list_items, loop_metadata, pending, put, put_values, put_writes, task_id, text, text_of_bytes,
    thread_id, version,
};

/// The limit error of `result`, after checking that it is one, of
/// `operation`, and of kind `InvalidInput`.
fn limit_error<T: std::fmt::Debug>(case: &str, operation: &str, result: Result<T>) -> LimitError {
    match result {
        Err(Error::Limit {
            operation: found,
            limit,
        }) => {
            assert_eq!(found, operation, "{case}: the error names the operation");
            assert_eq!(limit.kind(), ErrorKind::InvalidInput, "{case}");
            limit
        }
        other => panic!("{case}: {operation} must fail with a limit error, got {other:?}"),
    }
}

/// What a limit error is about (`"thread_id"`, ...).
fn what(limit: &LimitError) -> &'static str {
    match limit {
        LimitError::TooLong { what, .. }
        | LimitError::Nul { what, .. }
        | LimitError::TooDeep { what, .. }
        | LimitError::TooLarge { what, .. } => what,
        _ => "",
    }
}

/// A put of `checkpoint` with all its versions as new, and loop metadata.
async fn try_put<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    checkpoint: Checkpoint,
) -> Result<()> {
    let new_versions = checkpoint.channel_versions.clone();
    saver
        .put(config, checkpoint, loop_metadata(), new_versions)
        .await
        .map(drop)
}

/// Calls every operation with one id replaced by `bad(name)`, in every
/// place an id goes; returns `(operation, what, result)` for each call.
/// Afterwards, checks that the valid checkpoint the calls wrote against
/// is unchanged.
async fn every_place<S: CheckpointSaver>(
    case: &str,
    saver: &S,
    bad: &dyn Fn(&str) -> String,
) -> Vec<(&'static str, &'static str, Result<()>)> {
    let tid = thread_id();
    let stored = put_values(saver, &config(&tid), &[("k", text("v"))]).await;
    let mut calls: Vec<(&'static str, &'static str, Result<()>)> = Vec::new();

    let puts: Vec<(&str, CheckpointConfig, Checkpoint)> = vec![
        ("thread_id", config(&bad("thread")), checkpoint()),
        ("checkpoint_ns", config_ns(&tid, &bad("ns")), checkpoint()),
        (
            "checkpoint_id",
            config(&tid).with_id(bad("0")),
            checkpoint(),
        ),
        ("checkpoint_id", config(&tid), {
            let mut named = checkpoint();
            named.id = CheckpointId::from(bad("id"));
            named
        }),
        (
            "channel name",
            config(&tid),
            checkpoint_with(&[(bad("channel").as_str(), text("v"))]),
        ),
        ("node name", config(&tid), {
            let mut seen = checkpoint();
            seen.versions_seen
                .entry(bad("node"))
                .or_default()
                .insert("k".into(), version(1));
            seen
        }),
        ("channel name", config(&tid), {
            let mut updated = checkpoint();
            updated.updated_channels = Some(vec!["k".into(), bad("channel")]);
            updated
        }),
    ];
    for (what, config, checkpoint) in puts {
        calls.push(("put", what, try_put(saver, &config, checkpoint).await));
    }
    if saver.capabilities().put_if_head {
        let result = saver
            .put_if_head(
                &config(&bad("thread")),
                checkpoint(),
                loop_metadata(),
                ChannelVersions::new(),
            )
            .await;
        calls.push(("put_if_head", "thread_id", result.map(drop)));
    }

    let other_thread = CheckpointConfig {
        thread_id: bad("thread"),
        ..stored.clone()
    };
    // (what, config, channel, task id)
    let writes: Vec<(&str, CheckpointConfig, String, String)> = vec![
        ("thread_id", other_thread, "k".into(), task_id()),
        (
            "checkpoint_id",
            stored.clone().with_id(bad("id")),
            "k".into(),
            task_id(),
        ),
        ("channel name", stored.clone(), bad("channel"), task_id()),
        ("task_id", stored.clone(), "k".into(), bad("task")),
    ];
    for (what, config, channel, task) in writes {
        let result = saver
            .put_writes(&config, vec![(channel, text("w"))], &task, "")
            .await;
        calls.push(("put_writes", what, result));
    }

    let gets = [
        ("thread_id", config(&bad("thread"))),
        ("checkpoint_ns", config_ns(&tid, &bad("ns"))),
        ("checkpoint_id", config(&tid).with_id(bad("id"))),
    ];
    for (what, config) in gets {
        calls.push(("get_tuple", what, saver.get_tuple(&config).await.map(drop)));
    }

    let queries = [
        ("thread_id", ListQuery::thread(bad("thread"))),
        ("checkpoint_ns", ListQuery::thread(&tid).ns(bad("ns"))),
        (
            "checkpoint_id",
            ListQuery::config(&config(&tid).with_id(bad("id"))),
        ),
        ("before", ListQuery::thread(&tid).before(bad("id"))),
    ];
    for (what, query) in queries {
        let mut items = list_items(saver, query).await;
        assert_eq!(
            items.len(),
            1,
            "{case}: a refused listing is one error item"
        );
        calls.push(("list", what, items.remove(0).map(drop)));
    }

    calls.push((
        "delete_thread",
        "thread_id",
        saver.delete_thread(&bad("thread")).await,
    ));
    if saver.capabilities().copy_thread {
        let result = saver.copy_thread(&tid, &bad("thread")).await;
        calls.push(("copy_thread", "thread_id", result));
    }
    if saver.capabilities().prune {
        // The valid thread comes first: a refused prune touches nothing.
        let threads = [tid.clone(), bad("thread")];
        let result = saver.prune(&threads, PruneStrategy::Delete).await;
        calls.push(("prune", "thread_id", result));
    }

    let tuple = get_found(saver, &stored).await;
    assert!(
        tuple.pending_writes.is_empty(),
        "{case}: no refused write was stored"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid)).await,
        vec![id_of(&stored)],
        "{case}: no refused checkpoint was stored, nothing was deleted"
    );
    calls
}

/// CP-LIM-01: a thread id, checkpoint namespace, checkpoint ids (the
/// checkpoint's and its parent's), task id, channel and node name of
/// exactly `MAX_ID_BYTES` bytes (text that does not compress, with
/// two-byte characters) are stored and read back by `put`, `put_writes`,
/// `get_tuple` and `list`, and removed by `delete_thread`.
pub async fn cp_lim_01_ids_at_the_limit_round_trip<S: CheckpointSaver>(saver: &S) {
    let at = |prefix: &str| text_of_bytes(prefix, MAX_ID_BYTES);
    let tid = at(&thread_id());
    let (ns, channel, node, task) = (at("ns-"), at("channel-"), at("node-"), at("task-"));
    let base = config_ns(&tid, &ns);

    let mut first = checkpoint_with(&[(channel.as_str(), text("v1"))]);
    first.id = CheckpointId::from(at("0-"));
    first
        .versions_seen
        .entry(node.clone())
        .or_default()
        .insert(channel.clone(), version(1));
    let parent = put(saver, &base, first.clone(), loop_metadata()).await;
    assert_eq!(parent, base.clone().with_id(first.id.clone()), "CP-LIM-01");
    put_writes(saver, &parent, &task, &[(channel.as_str(), text("w"))]).await;
    let mut second = checkpoint().with_channel(channel.clone(), text("v2"), version(2));
    second.id = CheckpointId::from(at("1-"));
    let child = put(saver, &parent, second.clone(), loop_metadata()).await;

    let read = get_found(saver, &parent).await;
    assert_eq!(read.config, parent, "CP-LIM-01: the parent's address");
    assert_eq!(
        read.checkpoint.channel_values.get(&channel),
        Some(&text("v1")),
        "CP-LIM-01: the value of the long channel"
    );
    assert_eq!(
        read.checkpoint.versions_seen, first.versions_seen,
        "CP-LIM-01: the long node name"
    );
    assert_eq!(
        read.pending_writes,
        vec![pending(&task, &channel, text("w"))],
        "CP-LIM-01: the write of the long task"
    );
    let latest = get_found(saver, &base).await;
    assert_eq!(latest.config, child, "CP-LIM-01: the latest checkpoint");
    assert_eq!(
        latest.parent_config,
        Some(parent.clone()),
        "CP-LIM-01: the long parent id"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid).ns(&ns)).await,
        vec![second.id.clone(), first.id.clone()],
        "CP-LIM-01: list"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid).before(second.id.clone())).await,
        vec![first.id],
        "CP-LIM-01: list before the long id"
    );
    saver
        .delete_thread(&tid)
        .await
        .unwrap_or_else(|err| panic!("CP-LIM-01: delete_thread failed: {err}"));
    assert!(
        get(saver, &base).await.is_none(),
        "CP-LIM-01: the long thread is deleted"
    );
}

/// CP-LIM-02: an id one byte over `MAX_ID_BYTES`, in any place an id goes
/// (thread, namespace, checkpoint id and parent, channel and node names,
/// task id, a listing's `before`), is refused by every operation with
/// `Error::Limit` (`TooLong`, naming the id and the limit) before anything
/// is stored or deleted.
pub async fn cp_lim_02_ids_over_the_limit_are_refused<S: CheckpointSaver>(saver: &S) {
    let over = |prefix: &str| text_of_bytes(prefix, MAX_ID_BYTES + 1);
    for (operation, expected, result) in every_place("CP-LIM-02", saver, &over).await {
        let case = format!("CP-LIM-02: {operation} with a long {expected}");
        let limit = limit_error(&case, operation, result);
        assert!(
            matches!(
                limit,
                LimitError::TooLong { bytes, limit, .. }
                    if bytes == MAX_ID_BYTES + 1 && limit == MAX_ID_BYTES
            ),
            "{case}: {limit}"
        );
        assert_eq!(what(&limit), expected, "{case}: names the id");
    }
}

/// CP-LIM-03: a NUL character in any place an id goes, in a task path or
/// in a checkpoint's `ts` is refused by every operation with
/// `Error::Limit` (`Nul`) before anything is stored or deleted
/// (PostgreSQL cannot store NUL in text; every saver refuses it alike).
pub async fn cp_lim_03_nul_in_ids_is_refused<S: CheckpointSaver>(saver: &S) {
    let with_nul = |prefix: &str| format!("{prefix}\0x");
    let mut calls = every_place("CP-LIM-03", saver, &with_nul).await;
    let stored = put_values(saver, &config(&thread_id()), &[("k", text("v"))]).await;
    let result = saver
        .put_writes(&stored, vec![("k".into(), text("w"))], &task_id(), "a\0b")
        .await;
    calls.push(("put_writes", "task_path", result));
    let mut stamped = checkpoint();
    stamped.ts.push('\0');
    calls.push((
        "put",
        "checkpoint ts",
        try_put(saver, &stored, stamped).await,
    ));
    for (operation, expected, result) in calls {
        let case = format!("CP-LIM-03: {operation} with NUL in {expected}");
        let limit = limit_error(&case, operation, result);
        assert!(matches!(limit, LimitError::Nul { .. }), "{case}: {limit}");
        assert_eq!(what(&limit), expected, "{case}: names the id");
    }
    assert!(
        get_found(saver, &stored).await.pending_writes.is_empty(),
        "CP-LIM-03: the write with a NUL task path was not stored"
    );
}

/// CP-LIM-04: metadata nested `MAX_DEPTH` levels deep (its own object
/// included) is stored, read back and filtered; one level deeper is
/// refused with `Error::Limit` (`TooDeep`) instead of stored unreadable.
pub async fn cp_lim_04_metadata_depth_is_limited<S: CheckpointSaver>(saver: &S) {
    let nested = |depth: usize| (0..depth).fold(json!("leaf"), |inner, _| json!([inner]));
    let tid = thread_id();
    let deepest = loop_metadata()
        .with("tag", json!("deep"))
        .with("deep", nested(MAX_DEPTH - 1));
    let stored = put(saver, &config(&tid), checkpoint(), deepest).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        tuple.metadata.extra.get("deep"),
        Some(&nested(MAX_DEPTH - 1)),
        "CP-LIM-04: the deepest metadata reads back"
    );
    assert_eq!(
        list_ids(
            saver,
            ListQuery::thread(&tid).filter(json!({"tag": "deep"}))
        )
        .await,
        vec![id_of(&stored)],
        "CP-LIM-04: and is listed through a filter"
    );
    for depth in [MAX_DEPTH, 1_000] {
        let result = saver
            .put(
                &stored,
                checkpoint(),
                loop_metadata().with("deep", nested(depth)),
                ChannelVersions::new(),
            )
            .await;
        let limit = limit_error("CP-LIM-04", "put", result);
        assert_eq!(
            limit,
            LimitError::TooDeep {
                what: "metadata",
                limit: MAX_DEPTH
            },
            "CP-LIM-04: {depth} levels"
        );
    }
    assert_eq!(
        list(saver, ListQuery::thread(&tid)).await.len(),
        1,
        "CP-LIM-04: the refused checkpoints were not stored"
    );
}

/// CP-LIM-05: NUL characters are stripped from metadata keys as from its
/// strings (CP-BK-12), at any depth, so the metadata reads back and
/// filters the same on every saver; `delete_for_runs` given a run id with
/// a NUL deletes the checkpoints `put` stored for that run (whose `run_id`
/// lost its NUL).
pub async fn cp_lim_05_nul_in_metadata_keys_is_stripped<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let metadata = loop_metadata()
        .with("k\0ey", json!("v"))
        .with("nested", json!({"a\0": {"\0b": ["c\0"]}}));
    let stored = put(saver, &config(&tid), checkpoint(), metadata).await;
    let tuple = get_found(saver, &stored).await;
    let expected: Json = json!({"key": "v", "nested": {"a": {"b": ["c"]}}});
    assert_eq!(
        Json::Object(tuple.metadata.extra.clone()),
        expected,
        "CP-LIM-05: keys without NUL"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid).filter(json!({"key": "v"}))).await,
        vec![id_of(&stored)],
        "CP-LIM-05: the stripped key filters"
    );
    if !saver.capabilities().delete_for_runs {
        return;
    }
    let run = format!("run\0{}", thread_id());
    let doomed = put(
        saver,
        &config(&thread_id()),
        checkpoint(),
        loop_metadata().with("run_id", json!(run)),
    )
    .await;
    assert_eq!(
        get_found(saver, &doomed).await.metadata.run_id,
        Some(run.replace('\0', "")),
        "CP-LIM-05: the stored run id lost its NUL"
    );
    saver
        .delete_for_runs(&[run])
        .await
        .unwrap_or_else(|err| panic!("CP-LIM-05: delete_for_runs failed: {err}"));
    assert!(
        get(saver, &doomed).await.is_none(),
        "CP-LIM-05: the run's checkpoint is deleted"
    );
    assert!(
        get(saver, &stored).await.is_some(),
        "CP-LIM-05: other checkpoints are kept"
    );
}

/// CP-LIM-06: metadata of exactly `MAX_VALUE_BYTES` bytes as compact JSON
/// is stored and read back; one byte more is refused with `Error::Limit`
/// (`TooLarge`). Every saver runs it once (not part of the macro: it moves
/// 64 MiB).
pub async fn metadata_size_limit<S: CheckpointSaver>(saver: &S) {
    let padded = |len: usize| CheckpointMetadata::default().with("pad", json!("m".repeat(len)));
    let frame = serde_json::to_vec(&padded(0)).map_or(0, |text| text.len());
    let tid = thread_id();
    let stored = put(
        saver,
        &config(&tid),
        checkpoint(),
        padded(MAX_VALUE_BYTES - frame),
    )
    .await;
    let tuple = get_found(saver, &stored).await;
    assert!(
        tuple.metadata == padded(MAX_VALUE_BYTES - frame),
        "CP-LIM-06: metadata of the size limit reads back unchanged"
    );
    drop(tuple);
    let result = saver
        .put(
            &stored,
            checkpoint(),
            padded(MAX_VALUE_BYTES - frame + 1),
            ChannelVersions::new(),
        )
        .await;
    let limit = limit_error("CP-LIM-06", "put", result);
    assert_eq!(
        limit,
        LimitError::TooLarge {
            what: "metadata",
            limit: MAX_VALUE_BYTES
        },
        "CP-LIM-06"
    );
    assert_eq!(
        list_ids(saver, ListQuery::thread(&tid)).await,
        vec![id_of(&stored)],
        "CP-LIM-06: the refused checkpoint was not stored"
    );
}

/// CP-LIM-07: for savers that serialize values, a channel value and a
/// pending write of exactly `MAX_VALUE_BYTES` bytes as JSON are stored and
/// read back; a channel value one byte larger is refused with
/// `Error::Value` (`ValueError::TooLarge`) naming the channel (writes go
/// through the same serializer, whose unit tests refuse them). Run once per backend (it
/// moves 64 MiB values), not by `InMemorySaver::new()`, which keeps live
/// values and never serializes them.
pub async fn serialized_value_size_limit<S: CheckpointSaver>(saver: &S) {
    // A JSON string: the quotes take two bytes.
    let sized = |bytes: usize| Value::new("s".repeat(bytes - 2));
    let read_len = |value: Option<&Value>| {
        value
            .and_then(|value| value.clone().decode::<String>().ok())
            .map(|text| text.len() + 2)
    };
    let tid = thread_id();
    let task = task_id();
    let stored = put(
        saver,
        &config(&tid),
        checkpoint_with(&[("big", sized(MAX_VALUE_BYTES))]),
        loop_metadata(),
    )
    .await;
    put_writes(saver, &stored, &task, &[("big", sized(MAX_VALUE_BYTES))]).await;
    let tuple = get_found(saver, &stored).await;
    assert_eq!(
        read_len(tuple.checkpoint.channel_values.get("big")),
        Some(MAX_VALUE_BYTES),
        "CP-LIM-07: a channel value of the size limit reads back"
    );
    assert_eq!(
        read_len(tuple.pending_writes.first().map(|write| &write.value)),
        Some(MAX_VALUE_BYTES),
        "CP-LIM-07: a write of the size limit reads back"
    );
    drop(tuple);
    let child = checkpoint_with(&[("big", sized(MAX_VALUE_BYTES + 1))]);
    match try_put(saver, &stored, child).await {
        Err(Error::Value {
            channel,
            source: ValueError::TooLarge { limit },
            ..
        }) => {
            assert_eq!(channel, "big", "CP-LIM-07: the error names the channel");
            assert_eq!(limit, MAX_VALUE_BYTES, "CP-LIM-07: and the limit");
        }
        other => panic!("CP-LIM-07: a value one byte larger must be refused, got {other:?}"),
    }
    assert_eq!(
        list(saver, ListQuery::thread(&tid)).await.len(),
        1,
        "CP-LIM-07: the refused checkpoint was not stored"
    );
}
