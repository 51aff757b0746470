//! Fixtures shared by the cases, mirroring the checklist's F-CKPT, F-META,
//! F-CFG, F-PUT and F-CHAIN, plus saver calls that panic with a clear message
//! instead of returning errors.
//!
//! Every case creates its threads with [`thread_id`] (a fresh UUID v4), so
//! cases never depend on an empty store unless they say so.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointId,
    CheckpointMetadata, CheckpointSaver, CheckpointSource, CheckpointTuple, ListQuery,
    PendingWrite, Result, Value,
};

/// The child namespace most cases use next to the root namespace `""`.
pub const CHILD_NS: &str = "child:1";

/// A fresh thread id (a random UUID v4).
pub fn thread_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A fresh task id (a random UUID v4).
pub fn task_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A fresh run id (a random UUID v4).
pub fn run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A text of exactly `bytes` UTF-8 bytes: `prefix`, then pseudo-random
/// letters, digits, `-`, `_` and `é` (two bytes) drawn from a generator
/// seeded by `prefix`. It does not compress (PostgreSQL compresses long
/// index entries, which would hide an entry too large for its index), its
/// length in characters is not its length in bytes, and it holds no `.`
/// (illegal in store labels) and no NUL.
///
/// # Panics
/// When `prefix` is longer than `bytes`.
pub fn text_of_bytes(prefix: &str, bytes: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert!(
        prefix.len() <= bytes,
        "the prefix is longer than {bytes} bytes"
    );
    let mut text = String::with_capacity(bytes);
    text.push_str(prefix);
    let mut state = prefix
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
        | 1;
    while text.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if state % 8 == 0 && text.len() + 2 <= bytes {
            text.push('é');
        } else {
            text.push(char::from(ALPHABET[((state >> 3) % 64) as usize]));
        }
    }
    text
}

/// A string of about `bytes` bytes, named by `prefix`, that a saver may store
/// as a piece (`stategraph_checkpoint::pieces`): pseudo-random text with
/// quotes, backslashes, a NUL and a newline, so its JSON form has escapes.
pub fn large_text(prefix: &str, bytes: usize) -> String {
    let mut text = text_of_bytes(prefix, bytes);
    text.push_str("\"q\" \\ \u{0}\n end");
    text
}

/// The version with counter `counter` and salt 0: two calls with the same
/// counter give the same version (the checklist's integer versions).
pub fn version(counter: u64) -> ChannelVersion {
    ChannelVersion::new(counter, 0)
}

/// F-CKPT: an empty checkpoint (format 1, fresh monotonic id, current time).
pub fn checkpoint() -> Checkpoint {
    Checkpoint::empty()
}

/// F-CKPT(values): a checkpoint holding `values`, every channel at version 1.
pub fn checkpoint_with(values: &[(&str, Value)]) -> Checkpoint {
    values
        .iter()
        .fold(checkpoint(), |checkpoint, (channel, value)| {
            checkpoint.with_channel(*channel, value.clone(), version(1))
        })
}

/// F-META: metadata with a source and a step (and empty `parents`).
pub fn metadata(source: CheckpointSource, step: i64) -> CheckpointMetadata {
    CheckpointMetadata::new(source, step)
}

/// F-META with the defaults: `source = loop`, `step = 0`.
pub fn loop_metadata() -> CheckpointMetadata {
    metadata(CheckpointSource::Loop, 0)
}

/// F-CFG: the latest checkpoint of a thread's root namespace `""`.
pub fn config(thread_id: &str) -> CheckpointConfig {
    CheckpointConfig::thread(thread_id)
}

/// F-CFG with a namespace.
pub fn config_ns(thread_id: &str, ns: &str) -> CheckpointConfig {
    CheckpointConfig::thread(thread_id).with_ns(ns)
}

/// The checkpoint id of a stored config; panics when it has none.
pub fn id_of(config: &CheckpointConfig) -> CheckpointId {
    config
        .checkpoint_id
        .clone()
        .unwrap_or_else(|| panic!("config {config:?} carries no checkpoint_id"))
}

/// The checkpoint ids of tuples, in order.
pub fn ids(tuples: &[CheckpointTuple]) -> Vec<CheckpointId> {
    tuples.iter().map(|tuple| id_of(&tuple.config)).collect()
}

/// A pending write, for comparisons.
pub fn pending(task_id: &str, channel: &str, value: Value) -> PendingWrite {
    PendingWrite {
        task_id: task_id.to_owned(),
        channel: channel.to_owned(),
        value,
    }
}

/// A string value.
pub fn text(value: &str) -> Value {
    Value::new(value.to_owned())
}

/// The JSON form of a value; panics when it has none.
pub fn json_of(value: &Value) -> serde_json::Value {
    value
        .to_json()
        .unwrap_or_else(|err| panic!("value {value:?} has no JSON form: {err}"))
}

/// A map of channel values, for comparisons with `channel_values`.
pub fn values(entries: &[(&str, Value)]) -> BTreeMap<String, Value> {
    entries
        .iter()
        .map(|(channel, value)| ((*channel).to_owned(), value.clone()))
        .collect()
}

/// Stores a checkpoint with explicit `new_versions`; panics on error.
pub async fn put_with<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> CheckpointConfig {
    saver
        .put(config, checkpoint, metadata, new_versions)
        .await
        .unwrap_or_else(|err| panic!("put with config {config:?} failed: {err}"))
}

/// F-PUT: stores a checkpoint with `new_versions` = all its versions; panics on error.
pub async fn put<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
) -> CheckpointConfig {
    let new_versions = checkpoint.channel_versions.clone();
    put_with(saver, config, checkpoint, metadata, new_versions).await
}

/// F-PUT(values): stores a checkpoint holding `values` (versions 1) with
/// `loop`/0 metadata.
pub async fn put_values<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    values: &[(&str, Value)],
) -> CheckpointConfig {
    put(saver, config, checkpoint_with(values), loop_metadata()).await
}

/// The channel values of the `i`-th checkpoint of a [`chain`]: `first`
/// (written by checkpoint 0 only, inherited afterwards) and `step` (`i`).
pub fn chain_values(i: usize) -> BTreeMap<String, Value> {
    values(&[("first", text("origin")), ("step", Value::new(i))])
}

/// F-CHAIN: stores `n` checkpoints under `config`'s thread and namespace, each
/// the child of the previous one, with the metadata `metadata(i)`.
///
/// Checkpoint `i` holds [`chain_values`]`(i)`: channel `step` is rewritten at
/// every checkpoint (version `i + 1`), channel `first` only by checkpoint 0, so
/// later checkpoints read it from the value stored by the first.
pub async fn chain<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    n: usize,
    metadata: impl Fn(usize) -> CheckpointMetadata,
) -> Vec<CheckpointConfig> {
    let mut stored: Vec<CheckpointConfig> = Vec::with_capacity(n);
    let base = CheckpointConfig {
        checkpoint_id: None,
        ..config.clone()
    };
    for i in 0..n {
        let counter = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
        let checkpoint = checkpoint()
            .with_channel("first", text("origin"), version(1))
            .with_channel("step", Value::new(i), version(counter));
        let mut new_versions = ChannelVersions::new();
        new_versions.insert("step".to_owned(), version(counter));
        if i == 0 {
            new_versions.insert("first".to_owned(), version(1));
        }
        let parent = stored.last().cloned().unwrap_or_else(|| base.clone());
        stored.push(put_with(saver, &parent, checkpoint, metadata(i), new_versions).await);
    }
    stored
}

/// F-CHAIN with metadata `loop`, step `i`.
pub async fn chain_steps<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    n: usize,
) -> Vec<CheckpointConfig> {
    chain(saver, config, n, |i| {
        metadata(CheckpointSource::Loop, i64::try_from(i).unwrap_or(i64::MAX))
    })
    .await
}

/// Stores writes of `task_id` against `config` (task path `""`); panics on error.
pub async fn put_writes<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
    task_id: &str,
    writes: &[(&str, Value)],
) {
    let writes = writes
        .iter()
        .map(|(channel, value)| ((*channel).to_owned(), value.clone()))
        .collect();
    saver
        .put_writes(config, writes, task_id, "")
        .await
        .unwrap_or_else(|err| {
            panic!("put_writes of task {task_id:?} with config {config:?} failed: {err}")
        });
}

/// Fetches a checkpoint; panics on error.
pub async fn get<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
) -> Option<CheckpointTuple> {
    saver
        .get_tuple(config)
        .await
        .unwrap_or_else(|err| panic!("get_tuple with config {config:?} failed: {err}"))
}

/// Fetches a checkpoint that must exist; panics on error or when it is missing.
pub async fn get_found<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
) -> CheckpointTuple {
    get(saver, config)
        .await
        .unwrap_or_else(|| panic!("get_tuple with config {config:?} found nothing"))
}

/// Lists checkpoints, keeping errors.
pub async fn try_list<S: CheckpointSaver>(
    saver: &S,
    query: ListQuery,
) -> Result<Vec<CheckpointTuple>> {
    saver.list(query).try_collect().await
}

/// Lists checkpoints, keeping every item of the stream (an `Err` item does
/// not end the collection).
pub async fn list_items<S: CheckpointSaver>(
    saver: &S,
    query: ListQuery,
) -> Vec<Result<CheckpointTuple>> {
    saver.list(query).collect().await
}

/// Lists checkpoints; panics on error.
pub async fn list<S: CheckpointSaver>(saver: &S, query: ListQuery) -> Vec<CheckpointTuple> {
    let shown = format!("{query:?}");
    try_list(saver, query)
        .await
        .unwrap_or_else(|err| panic!("list {shown} failed: {err}"))
}

/// Lists the checkpoint ids of a query; panics on error.
pub async fn list_ids<S: CheckpointSaver>(saver: &S, query: ListQuery) -> Vec<CheckpointId> {
    ids(&list(saver, query).await)
}

/// Deletes a thread; panics on error.
pub async fn delete_thread<S: CheckpointSaver>(saver: &S, thread_id: &str) {
    saver
        .delete_thread(thread_id)
        .await
        .unwrap_or_else(|err| panic!("delete_thread({thread_id:?}) failed: {err}"));
}
