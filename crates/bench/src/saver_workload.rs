//! What the SQLite and PostgreSQL saver workloads share: the checkpoint
//! chain a `put` workload writes, and the timed reads of the long history.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use serde_json::json;
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointId, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, ListQuery,
};
use stategraph_core::Value;

use crate::Outcome;
use crate::checkpoint::wide_document;

/// Channels of each checkpoint a `put` workload writes.
pub(crate) const CHANNELS: usize = 15;
/// Checkpoints a `put` workload writes per run.
pub(crate) const CHECKPOINTS: usize = 100;
/// Checkpoints in the long history (fewer in unit tests, which run every
/// workload once in debug mode).
pub(crate) const HISTORY: usize = if cfg!(test) { 1_000 } else { 100_000 };
/// `get_tuple` calls measured on the long history.
const LATEST_CALLS: usize = 1_000;
/// Page size of the paged scan.
const SCAN_PAGE: usize = 100;
/// `get_tuple` calls per run of the `*_get` workloads.
pub(crate) const GETS: usize = 100;
/// The thread the `*_get` workloads read.
pub(crate) const GET_THREAD: &str = "get";

/// The checkpoints of one run: every channel changes at every step (the
/// worst case for a saver), as `checkpoint_memory_put_*`.
pub(crate) fn chain() -> Vec<(Checkpoint, BTreeMap<String, ChannelVersion>)> {
    let document = Arc::new(wide_document());
    let mut versions: BTreeMap<String, ChannelVersion> = BTreeMap::new();
    (0..CHECKPOINTS)
        .map(|_| {
            let mut checkpoint = Checkpoint::empty();
            let mut new_versions = BTreeMap::new();
            for channel in 0..CHANNELS {
                let name = format!("key_{channel}");
                let version = ChannelVersion::next(versions.get(&name));
                let value = Value::new(vec![document.clone()]);
                checkpoint = checkpoint.with_channel(name.clone(), value, version);
                versions.insert(name.clone(), version);
                new_versions.insert(name, version);
            }
            (checkpoint, new_versions)
        })
        .collect()
}

/// Loop metadata for `step`.
pub(crate) fn metadata(step: usize) -> CheckpointMetadata {
    CheckpointMetadata::new(
        CheckpointSource::Loop,
        i64::try_from(step).unwrap_or(i64::MAX),
    )
}

/// The check of a `put` workload.
pub(crate) fn put_check(checkpoints: usize, channels: usize) -> serde_json::Value {
    json!({"checkpoints": checkpoints, "channels": channels})
}

/// Puts one run of [`chain`] on `thread`, each checkpoint the child of the
/// one before; returns the address of the last.
async fn put_all<S: CheckpointSaver + ?Sized>(saver: &S, thread: &str) -> CheckpointConfig {
    let mut config = CheckpointConfig::thread(thread);
    for (step, (checkpoint, new_versions)) in chain().into_iter().enumerate() {
        config = saver
            .put(&config, checkpoint, metadata(step), new_versions)
            .await
            .unwrap_or_else(|err| panic!("put failed: {err}"));
    }
    config
}

/// The timed part of a saver's `*_put` workload: [`chain`] put on a fresh
/// `thread`, then its latest checkpoint read back for the check.
pub(crate) async fn put_chain<S: CheckpointSaver + ?Sized>(saver: &S, thread: &str) -> Outcome {
    put_all(saver, thread).await;
    let latest = saver
        .get_tuple(&CheckpointConfig::thread(thread))
        .await
        .unwrap_or_else(|err| panic!("get_tuple failed: {err}"))
        .unwrap_or_else(|| panic!("the latest checkpoint is missing"));
    Outcome {
        chunks: CHECKPOINTS,
        check: put_check(CHECKPOINTS, latest.checkpoint.channel_values.len()).into(),
    }
}

/// Stores (untimed, in the workload's setup) one run of [`chain`] on
/// [`GET_THREAD`], with a pending write on its last checkpoint.
pub(crate) async fn store_chain<S: CheckpointSaver + ?Sized>(saver: &S) {
    let config = put_all(saver, GET_THREAD).await;
    saver
        .put_writes(&config, vec![("out".to_owned(), Value::new(1))], "task", "")
        .await
        .unwrap_or_else(|err| panic!("put_writes failed: {err}"));
}

/// The timed part of a `*_get` workload: [`GETS`] `get_tuple`s of the
/// latest checkpoint on [`GET_THREAD`] (values decoded, the pending write
/// attached).
pub(crate) async fn get_latest<S: CheckpointSaver + ?Sized>(saver: &S) -> Outcome {
    let config = CheckpointConfig::thread(GET_THREAD);
    let mut last = None;
    for _ in 0..GETS {
        last = saver
            .get_tuple(&config)
            .await
            .unwrap_or_else(|err| panic!("get_tuple failed: {err}"));
    }
    let latest = last.unwrap_or_else(|| panic!("the latest checkpoint is missing"));
    get_outcome(
        latest.checkpoint.channel_values.len(),
        latest.pending_writes.len(),
    )
}

/// The outcome of a `*_get` workload whose last read found `channels`
/// values and `writes` pending writes.
pub(crate) fn get_outcome(channels: usize, writes: usize) -> Outcome {
    Outcome {
        chunks: GETS,
        check: json!({"gets": GETS, "channels": channels, "writes": writes}).into(),
    }
}

/// `put_writes` calls per run of the `*_put_writes` workloads.
pub(crate) const PUT_WRITES: usize = 100;
/// Writes per `put_writes` call (channels a task wrote).
pub(crate) const WRITES_EACH: usize = 3;

/// The writes of one task: [`WRITES_EACH`] channels, each a fresh list
/// holding the wide document.
pub(crate) fn task_writes(document: &Arc<serde_json::Value>) -> Vec<(String, Value)> {
    (0..WRITES_EACH)
        .map(|channel| (format!("key_{channel}"), Value::new(vec![document.clone()])))
        .collect()
}

/// The outcome of a `*_put_writes` workload.
pub(crate) fn put_writes_outcome() -> Outcome {
    Outcome {
        chunks: PUT_WRITES,
        check: json!({"put_writes": PUT_WRITES, "writes_each": WRITES_EACH}).into(),
    }
}

/// The address of the latest checkpoint of [`GET_THREAD`] (see
/// [`store_chain`]), read in a workload's setup.
pub(crate) async fn latest_address<S: CheckpointSaver + ?Sized>(saver: &S) -> CheckpointConfig {
    saver
        .get_tuple(&CheckpointConfig::thread(GET_THREAD))
        .await
        .unwrap_or_else(|err| panic!("get_tuple failed: {err}"))
        .unwrap_or_else(|| panic!("the latest checkpoint is missing"))
        .config
}

/// The timed part of a `*_put_writes` workload: [`PUT_WRITES`] tasks'
/// writes on the checkpoint at `address`, task ids unique to `run`.
/// Building the values is timed, as in the raw baselines.
pub(crate) async fn put_writes_many<S: CheckpointSaver + ?Sized>(
    saver: &S,
    address: &CheckpointConfig,
    run: usize,
) -> Outcome {
    let document = Arc::new(wide_document());
    for task in 0..PUT_WRITES {
        saver
            .put_writes(
                address,
                task_writes(&document),
                &format!("task-{run}-{task}"),
                "",
            )
            .await
            .unwrap_or_else(|err| panic!("put_writes failed: {err}"));
    }
    put_writes_outcome()
}

/// The timed part of a `*_list` workload: one `list` of the whole stored
/// run on [`GET_THREAD`] (see [`store_chain`]), every tuple decoded.
pub(crate) async fn list_all<S: CheckpointSaver + ?Sized>(saver: &S) -> Outcome {
    let tuples: Vec<_> = saver
        .list(ListQuery::thread(GET_THREAD).limit(CHECKPOINTS))
        .try_collect()
        .await
        .unwrap_or_else(|err| panic!("list failed: {err}"));
    let newest = tuples
        .first()
        .map_or(0, |t| t.checkpoint.channel_values.len());
    list_outcome(tuples.len(), newest)
}

/// The outcome of a `*_list` workload that read `listed` checkpoints, the
/// newest with `channels` values.
pub(crate) fn list_outcome(listed: usize, channels: usize) -> Outcome {
    Outcome {
        chunks: listed,
        check: json!({"listed": listed, "newest_channels": channels}).into(),
    }
}

/// The timed part of a `*_history_100k` workload, on a thread holding
/// [`HISTORY`] checkpoints: [`LATEST_CALLS`] get-latest calls (p50 and p99
/// in the check), one `list(limit = 20)`, and a keyset-paged scan of the
/// whole history (pages of [`SCAN_PAGE`], `before` = last id), checked
/// strictly descending.
pub(crate) async fn read_history<S: CheckpointSaver + ?Sized>(saver: &S, thread: &str) -> Outcome {
    let latest_config = CheckpointConfig::thread(thread);
    let mut latencies: Vec<Duration> = Vec::with_capacity(LATEST_CALLS);
    for _ in 0..LATEST_CALLS {
        let start = Instant::now();
        let latest = saver
            .get_tuple(&latest_config)
            .await
            .unwrap_or_else(|err| panic!("get_tuple failed: {err}"));
        latencies.push(start.elapsed());
        assert!(latest.is_some(), "the latest checkpoint is missing");
    }
    latencies.sort();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let p50 = micros(latencies[latencies.len() / 2]);
    let p99 = micros(latencies[latencies.len() * 99 / 100]);

    let start = Instant::now();
    let first_page: Vec<_> = saver
        .list(ListQuery::thread(thread).limit(20))
        .try_collect()
        .await
        .unwrap_or_else(|err| panic!("list failed: {err}"));
    let list_20 = micros(start.elapsed());

    let start = Instant::now();
    let mut scanned = 0_usize;
    let mut descending = true;
    let mut before: Option<CheckpointId> = None;
    let mut previous: Option<CheckpointId> = None;
    loop {
        let mut query = ListQuery::thread(thread).limit(SCAN_PAGE);
        if let Some(cursor) = before.take() {
            query = query.before(cursor);
        }
        let page: Vec<_> = saver
            .list(query)
            .try_collect()
            .await
            .unwrap_or_else(|err| panic!("list failed: {err}"));
        if page.is_empty() {
            break;
        }
        for tuple in &page {
            let id = tuple.config.checkpoint_id.clone();
            descending &= previous.is_none() || id < previous;
            previous = id;
        }
        scanned += page.len();
        before = previous.clone();
    }
    let scan_s = start.elapsed().as_secs_f64();
    Outcome {
        chunks: scanned,
        check: json!({
            "checkpoints": HISTORY,
            "scanned": scanned,
            "strictly_descending": descending,
            "first_page": first_page.len(),
            "get_latest_p50_us": p50.round(),
            "get_latest_p99_us": p99.round(),
            "list_limit_20_us": list_20.round(),
            "paged_scan_s": (scan_s * 1000.0).round() / 1000.0,
        })
        .into(),
    }
}
