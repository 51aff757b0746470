//! Checkpoint saver workloads: what a checkpoint costs when the saver shares
//! live values versus when it serializes them.

use std::collections::BTreeMap;

use serde_json::json;
use stategraph_checkpoint::serde::JsonSerializer;
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver,
    CheckpointSource, InMemorySaver,
};
use stategraph_core::Value;

use tokio::runtime::Runtime;

use crate::saver_workload::{get_latest, list_all, store_chain};
use crate::{Outcome, Runner, Workload};

const CHANNELS: usize = 15;
const CHECKPOINTS: usize = 100;

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "checkpoint_memory_put_shared",
            setup: || Box::new(|| put_many(InMemorySaver::new())),
        },
        Workload {
            name: "checkpoint_memory_put_serialized",
            setup: || Box::new(|| put_many(InMemorySaver::with_serializer(JsonSerializer))),
        },
        Workload {
            name: "checkpoint_memory_get",
            setup: || stored(|runtime, saver| runtime.block_on(get_latest(saver))),
        },
        Workload {
            name: "checkpoint_memory_list",
            setup: || stored(|runtime, saver| runtime.block_on(list_all(saver))),
        },
    ]
}

/// The wide_state input document `M` of WORKLOADS.md section 6 (25 leaves).
pub(crate) fn wide_document() -> serde_json::Value {
    let items: Vec<serde_json::Value> = (0..5)
        .flat_map(|_| {
            [
                json!("hi?".repeat(10)),
                json!(true),
                json!(1),
                json!(6_327_816_386_138_i64),
                json!(null),
            ]
        })
        .collect();
    let inner: serde_json::Map<String, serde_json::Value> = (0..5)
        .map(|j| (format!("inner_{j}"), json!(items.clone())))
        .collect();
    let outer: serde_json::Map<String, serde_json::Value> = (0..5)
        .map(|i| {
            (
                format!("outer_{i}"),
                serde_json::Value::Object(inner.clone()),
            )
        })
        .collect();
    serde_json::Value::Object(outer)
}

/// An `InMemorySaver` (sharing values) holding one stored run of the chain
/// (see [`store_chain`]); each run of the workload is `timed` on it. The
/// same reads as `checkpoint_sqlite_get` / `_list`, with no driver below.
fn stored(timed: fn(&Runtime, &InMemorySaver) -> Outcome) -> Runner {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"));
    let saver = InMemorySaver::new();
    runtime.block_on(store_chain(&saver));
    Box::new(move || timed(&runtime, &saver))
}

/// Puts a chain of checkpoints where every channel changes at every step
/// (the worst case for a saver), then reads the latest back.
fn put_many(saver: InMemorySaver) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"));
    // Shared like Python's objects: a fresh list per value, the document itself by reference.
    let document = std::sync::Arc::new(wide_document());
    runtime.block_on(async {
        let mut config = CheckpointConfig::thread("bench");
        let mut versions: BTreeMap<String, ChannelVersion> = BTreeMap::new();
        for step in 0..CHECKPOINTS {
            let mut checkpoint = Checkpoint::empty();
            let mut new_versions = BTreeMap::new();
            for channel in 0..CHANNELS {
                let name = format!("key_{channel}");
                let version = saver.get_next_version(versions.get(&name));
                // Each step writes a fresh value, as a node would.
                let value = Value::new(vec![document.clone()]);
                checkpoint = checkpoint.with_channel(name.clone(), value, version);
                versions.insert(name.clone(), version);
                new_versions.insert(name, version);
            }
            let metadata = CheckpointMetadata::new(CheckpointSource::Loop, step as i64);
            config = saver
                .put(&config, checkpoint, metadata, new_versions)
                .await
                .unwrap_or_else(|err| panic!("put failed: {err}"));
        }
        let latest = saver
            .get_tuple(&CheckpointConfig::thread("bench"))
            .await
            .unwrap_or_else(|err| panic!("get_tuple failed: {err}"))
            .unwrap_or_else(|| panic!("the latest checkpoint is missing"));
        Outcome {
            chunks: CHECKPOINTS,
            check: json!({
                "checkpoints": CHECKPOINTS,
                "channels": latest.checkpoint.channel_values.len(),
                "last_step": latest.metadata.step,
            })
            .into(),
        }
    })
}
