//! PostgreSQL saver workloads: `put` (pooler-safe unnamed statements, and
//! cached prepared statements) beside plain sqlx inserting the same bytes,
//! and a 100,000-checkpoint history (get-latest latency, paged scan).
//!
//! They need a server: `STATEGRAPH_TEST_POSTGRES_URL` (`cargo xtask
//! with-postgres -- cargo run --release -p stategraph-bench -- -w
//! 'checkpoint_postgres*'`). Without it they are left out, with one line on
//! stderr.

use std::sync::Arc;

use futures::StreamExt;
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointId, CheckpointSaver,
};
use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_postgres::bench_baseline::{RawCheckpoint, RawWriter, ScratchSchema};
use stategraph_core::Value;
use tokio::runtime::Runtime;

use crate::checkpoint::wide_document;
use crate::saver_workload::{
    CHANNELS, CHECKPOINTS, GET_THREAD, GETS, HISTORY, PUT_WRITES, chain, get_latest, get_outcome,
    latest_address, list_all, list_outcome, metadata, put_chain, put_check, put_writes_many,
    put_writes_outcome, read_history, store_chain, task_writes,
};
use crate::{Outcome, Runner, Workload};

const URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";
pub(crate) fn workloads() -> Vec<Workload> {
    if url().is_none() {
        // The bench binary reports to the terminal; say why these are missing.
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "stategraph-bench: {URL_VAR} is unset, the checkpoint_postgres_* workloads are skipped"
            );
        }
        return Vec::new();
    }
    vec![
        Workload {
            name: "checkpoint_postgres_put",
            setup: saver_put_unnamed,
        },
        Workload {
            name: "checkpoint_postgres_put_prepared",
            setup: saver_put_prepared,
        },
        Workload {
            name: "checkpoint_postgres_put_raw",
            setup: raw_put,
        },
        Workload {
            name: "checkpoint_postgres_get",
            setup: || saver_get(false),
        },
        Workload {
            name: "checkpoint_postgres_get_prepared",
            setup: || saver_get(true),
        },
        Workload {
            name: "checkpoint_postgres_get_raw",
            setup: raw_get,
        },
        Workload {
            name: "checkpoint_postgres_put_writes",
            setup: || saver_put_writes(false),
        },
        Workload {
            name: "checkpoint_postgres_put_writes_prepared",
            setup: || saver_put_writes(true),
        },
        Workload {
            name: "checkpoint_postgres_put_writes_raw",
            setup: raw_put_writes,
        },
        Workload {
            name: "checkpoint_postgres_list",
            setup: || saver_list(false),
        },
        Workload {
            name: "checkpoint_postgres_list_prepared",
            setup: || saver_list(true),
        },
        Workload {
            name: "checkpoint_postgres_list_raw",
            setup: raw_list,
        },
        Workload {
            name: "checkpoint_postgres_history_100k",
            setup: history,
        },
    ]
}

fn url() -> Option<String> {
    std::env::var(URL_VAR).ok().filter(|url| !url.is_empty())
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"))
}

/// A scratch schema with the saver's tables, and a saver on it.
fn scratch(runtime: &Runtime, connections: u32) -> (ScratchSchema, PostgresSaver) {
    let url = url().unwrap_or_else(|| panic!("{URL_VAR} is unset"));
    runtime.block_on(async {
        let schema = ScratchSchema::create(&url)
            .await
            .unwrap_or_else(|err| panic!("cannot create a schema: {err}"));
        let pool = schema
            .pool(connections)
            .await
            .unwrap_or_else(|err| panic!("cannot connect: {err}"));
        let saver = PostgresSaver::from_pool(pool);
        saver
            .setup()
            .await
            .unwrap_or_else(|err| panic!("setup failed: {err}"));
        (schema, saver)
    })
}

fn saver_put_unnamed() -> Runner {
    saver_put(false)
}

fn saver_put_prepared() -> Runner {
    saver_put(true)
}

/// 100 `PostgresSaver::put`s of a 15-channel checkpoint, a fresh thread per
/// run, then one `get_tuple` of the latest. Building the values is timed, as
/// in the raw baseline and `checkpoint_sqlite_put`.
fn saver_put(prepared: bool) -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    let saver = saver.with_prepared_statements(prepared);
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &schema;
        run += 1;
        let thread = format!("bench-{run}");
        runtime.block_on(put_chain(&saver, &thread))
    })
}

/// The same checkpoints serialized to the same bytes (serde_json, as
/// `JsonSerializer`) and inserted with plain sqlx: cached prepared
/// statements, one transaction per checkpoint, the same two inserts, without
/// the saver's checks and retries.
fn raw_put() -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    let writer = RawWriter::new(saver.pool().clone());
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &schema;
        run += 1;
        let thread = format!("bench-{run}");
        runtime.block_on(async {
            let mut parent: Option<String> = None;
            for (step, (mut checkpoint, new_versions)) in chain().into_iter().enumerate() {
                let mut channels = Vec::with_capacity(CHANNELS);
                let mut versions = Vec::with_capacity(CHANNELS);
                let mut values = Vec::with_capacity(CHANNELS);
                for (channel, version) in &new_versions {
                    let bytes = serde_json::to_vec(&checkpoint.channel_values[channel])
                        .unwrap_or_else(|err| panic!("serialize failed: {err}"));
                    channels.push(channel.clone());
                    versions.push(version.to_string());
                    values.push(bytes);
                }
                checkpoint.channel_values.clear();
                let document = serde_json::to_value(&checkpoint)
                    .unwrap_or_else(|err| panic!("serialize failed: {err}"));
                let metadata = metadata(step).to_json();
                let id = checkpoint.id.to_string();
                writer
                    .put(&RawCheckpoint {
                        thread_id: &thread,
                        checkpoint_id: &id,
                        parent: parent.as_deref(),
                        document: &document,
                        metadata: &metadata,
                        channels: &channels,
                        versions: &versions,
                        values: &values,
                    })
                    .await
                    .unwrap_or_else(|err| panic!("insert failed: {err}"));
                parent = Some(id);
            }
            Outcome {
                chunks: CHECKPOINTS,
                check: put_check(CHECKPOINTS, CHANNELS).into(),
            }
        })
    })
}

/// [`GETS`] `PostgresSaver::get_tuple`s of the latest checkpoint of a
/// 15-channel thread (see [`get_latest`]), with unnamed statements in a
/// transaction (the default) or cached prepared ones.
fn saver_get(prepared: bool) -> Runner {
    on_stored_chain(prepared, |runtime, saver| {
        runtime.block_on(get_latest(saver))
    })
}

/// A saver on a scratch schema holding one stored run of the chain (see
/// [`store_chain`]); each run of the workload is `timed` on it.
fn on_stored_chain(prepared: bool, timed: fn(&Runtime, &PostgresSaver) -> Outcome) -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    let saver = saver.with_prepared_statements(prepared);
    runtime.block_on(store_chain(&saver));
    Box::new(move || {
        let _keep = &schema;
        timed(&runtime, &saver)
    })
}

/// The same read with plain sqlx: the saver's query as a cached prepared
/// statement, no transaction, no retry, every JSON value parsed.
fn raw_get() -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    runtime.block_on(store_chain(&saver));
    let reader = RawWriter::new(saver.pool().clone());
    Box::new(move || {
        let _keep = &schema;
        runtime.block_on(async {
            let mut last = None;
            for _ in 0..GETS {
                last = reader
                    .latest(GET_THREAD, 1)
                    .await
                    .unwrap_or_else(|err| panic!("latest failed: {err}"))
                    .pop();
            }
            let latest = last.unwrap_or_else(|| panic!("the latest checkpoint is missing"));
            get_outcome(latest.values.len(), latest.writes.len())
        })
    })
}

/// [`PUT_WRITES`] `PostgresSaver::put_writes` of three writes on the latest
/// checkpoint of a stored run (see [`put_writes_many`]), with unnamed
/// statements in a transaction (the default) or cached prepared ones.
fn saver_put_writes(prepared: bool) -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    let saver = saver.with_prepared_statements(prepared);
    runtime.block_on(store_chain(&saver));
    let address = runtime.block_on(latest_address(&saver));
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &schema;
        run += 1;
        runtime.block_on(put_writes_many(&saver, &address, run))
    })
}

/// The same writes serialized to the same bytes (serde_json) and inserted
/// with plain sqlx: one multi-row insert per task, cached prepared.
fn raw_put_writes() -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    runtime.block_on(store_chain(&saver));
    let address = runtime.block_on(latest_address(&saver));
    let checkpoint_id = address
        .checkpoint_id
        .unwrap_or_else(|| panic!("the latest checkpoint has no id"))
        .to_string();
    let writer = RawWriter::new(saver.pool().clone());
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &schema;
        run += 1;
        runtime.block_on(async {
            let document = Arc::new(wide_document());
            for task in 0..PUT_WRITES {
                let (channels, values): (Vec<String>, Vec<Vec<u8>>) = task_writes(&document)
                    .into_iter()
                    .map(|(channel, value)| {
                        let bytes = serde_json::to_vec(&value)
                            .unwrap_or_else(|err| panic!("serialize failed: {err}"));
                        (channel, bytes)
                    })
                    .unzip();
                writer
                    .put_writes(
                        GET_THREAD,
                        &checkpoint_id,
                        &format!("task-{run}-{task}"),
                        &channels,
                        &values,
                    )
                    .await
                    .unwrap_or_else(|err| panic!("insert failed: {err}"));
            }
            put_writes_outcome()
        })
    })
}

/// One `PostgresSaver::list` of a stored 100-checkpoint run (see
/// [`list_all`]), unnamed statements in a transaction or cached prepared.
fn saver_list(prepared: bool) -> Runner {
    on_stored_chain(prepared, |runtime, saver| runtime.block_on(list_all(saver)))
}

/// The same rows with plain sqlx: the saver's query with the limit, one
/// cached prepared statement, every JSON value parsed.
fn raw_list() -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 2);
    runtime.block_on(store_chain(&saver));
    let reader = RawWriter::new(saver.pool().clone());
    Box::new(move || {
        let _keep = &schema;
        runtime.block_on(async {
            let tuples = reader
                .latest(GET_THREAD, CHECKPOINTS)
                .await
                .unwrap_or_else(|err| panic!("latest failed: {err}"));
            list_outcome(tuples.len(), tuples.first().map_or(0, |t| t.values.len()))
        })
    })
}

/// Builds (untimed; 8 puts in flight) one thread of [`HISTORY`] checkpoints,
/// each with one changed channel and one pending write; a run then times
/// [`read_history`].
fn history() -> Runner {
    let runtime = runtime();
    let (schema, saver) = scratch(&runtime, 8);
    let thread = "history";
    runtime.block_on(async {
        let mut version: Option<ChannelVersion> = None;
        let mut parent: Option<CheckpointId> = None;
        let mut steps = Vec::with_capacity(HISTORY);
        for step in 0..HISTORY {
            let next = ChannelVersion::next(version.as_ref());
            version = Some(next);
            let checkpoint = Checkpoint::empty().with_channel("step", Value::new(step), next);
            let config = match parent.replace(checkpoint.id.clone()) {
                Some(id) => CheckpointConfig::thread(thread).with_id(id),
                None => CheckpointConfig::thread(thread),
            };
            steps.push((step, config, checkpoint, next));
        }
        futures::stream::iter(steps)
            .map(|(step, config, checkpoint, next)| {
                let saver = &saver;
                async move {
                    let stored = saver
                        .put(
                            &config,
                            checkpoint,
                            metadata(step),
                            [("step".to_owned(), next)].into(),
                        )
                        .await
                        .unwrap_or_else(|err| panic!("put failed: {err}"));
                    saver
                        .put_writes(
                            &stored,
                            vec![("out".to_owned(), Value::new(step))],
                            "task",
                            "",
                        )
                        .await
                        .unwrap_or_else(|err| panic!("put_writes failed: {err}"));
                }
            })
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
    });
    Box::new(move || {
        let _keep = &schema;
        runtime.block_on(read_history(&saver, thread))
    })
}
