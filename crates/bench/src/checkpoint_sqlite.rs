//! SQLite saver workloads: `put` beside plain rusqlite inserting the same
//! bytes, `get_tuple` beside plain rusqlite reading them back, and a
//! 100,000-checkpoint history (get-latest latency, paged scan).

use std::path::PathBuf;
use std::sync::Arc;

use stategraph_checkpoint::{ChannelVersion, Checkpoint, CheckpointConfig, CheckpointSaver};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_checkpoint_sqlite::bench_baseline::{RawCheckpoint, RawWriter};
use stategraph_core::Value;
use tokio::runtime::Runtime;

use crate::checkpoint::wide_document;
use crate::saver_workload::{
    CHANNELS, CHECKPOINTS, GET_THREAD, GETS, HISTORY, PUT_WRITES, chain, get_latest, get_outcome,
    latest_address, list_all, list_outcome, metadata, put_chain, put_check, put_writes_many,
    put_writes_outcome, read_history, store_chain, task_writes,
};
use crate::{Outcome, Runner, Workload};

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "checkpoint_sqlite_put",
            setup: saver_put,
        },
        Workload {
            name: "checkpoint_sqlite_put_raw",
            setup: raw_put,
        },
        Workload {
            name: "checkpoint_sqlite_get",
            setup: saver_get,
        },
        Workload {
            name: "checkpoint_sqlite_get_raw",
            setup: raw_get,
        },
        Workload {
            name: "checkpoint_sqlite_put_writes",
            setup: saver_put_writes,
        },
        Workload {
            name: "checkpoint_sqlite_put_writes_raw",
            setup: raw_put_writes,
        },
        Workload {
            name: "checkpoint_sqlite_list",
            setup: saver_list,
        },
        Workload {
            name: "checkpoint_sqlite_list_raw",
            setup: raw_list,
        },
        Workload {
            name: "checkpoint_sqlite_history_100k",
            setup: history,
        },
    ]
}

/// A directory under the system temp dir, deleted when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "stategraph-bench-sqlite-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
        Self(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("checkpoints.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"))
}

/// 100 `SqliteSaver::put`s of a 15-channel checkpoint on a file database,
/// a fresh thread per run, then one `get_tuple` of the latest. Building the
/// values is timed, as in the raw baseline and `checkpoint_memory_put_*`.
fn saver_put() -> Runner {
    let scratch = Scratch::new();
    let saver = SqliteSaver::open(scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    let runtime = runtime();
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &scratch;
        run += 1;
        let thread = format!("bench-{run}");
        runtime.block_on(put_chain(&saver, &thread))
    })
}

/// The same checkpoints serialized to the same bytes (serde_json) and
/// inserted with plain rusqlite: one transaction per checkpoint with the
/// same statements, on the calling thread, without the saver's checks.
fn raw_put() -> Runner {
    let scratch = Scratch::new();
    let mut writer = RawWriter::open(&scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &scratch;
        run += 1;
        let thread = format!("bench-{run}");
        let mut parent: Option<String> = None;
        for (step, (mut checkpoint, new_versions)) in chain().into_iter().enumerate() {
            let blobs: Vec<(String, String, Vec<u8>)> = new_versions
                .iter()
                .map(|(channel, version)| {
                    let bytes = serde_json::to_vec(&checkpoint.channel_values[channel])
                        .unwrap_or_else(|err| panic!("serialize failed: {err}"));
                    (channel.clone(), version.to_string(), bytes)
                })
                .collect();
            checkpoint.channel_values.clear();
            let document = serde_json::to_string(&checkpoint)
                .unwrap_or_else(|err| panic!("serialize failed: {err}"));
            let metadata = serde_json::to_string(&metadata(step))
                .unwrap_or_else(|err| panic!("serialize failed: {err}"));
            let id = checkpoint.id.to_string();
            writer
                .put(&RawCheckpoint {
                    thread_id: &thread,
                    checkpoint_id: &id,
                    parent: parent.as_deref(),
                    document: &document,
                    metadata: &metadata,
                    blobs: &blobs,
                })
                .unwrap_or_else(|err| panic!("insert failed: {err}"));
            parent = Some(id);
        }
        Outcome {
            chunks: CHECKPOINTS,
            check: put_check(CHECKPOINTS, CHANNELS).into(),
        }
    })
}

/// A database holding one stored run of the chain (see [`store_chain`]).
fn stored_chain(scratch: &Scratch, runtime: &Runtime) -> SqliteSaver {
    let saver = SqliteSaver::open(scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    runtime.block_on(store_chain(&saver));
    saver
}

/// [`GETS`] `SqliteSaver::get_tuple`s of the latest checkpoint of a
/// 15-channel thread (see [`get_latest`]).
fn saver_get() -> Runner {
    on_stored_chain(|runtime, saver| runtime.block_on(get_latest(saver)))
}

/// A saver on a database holding one stored run of the chain; each run of
/// the workload is `timed` on it.
fn on_stored_chain(timed: fn(&Runtime, &SqliteSaver) -> Outcome) -> Runner {
    let scratch = Scratch::new();
    let runtime = runtime();
    let saver = stored_chain(&scratch, &runtime);
    Box::new(move || {
        let _keep = &scratch;
        timed(&runtime, &saver)
    })
}

/// The same reads with plain rusqlite on the calling thread: the saver's
/// statements in one transaction, every JSON text parsed.
fn raw_get() -> Runner {
    let scratch = Scratch::new();
    drop(stored_chain(&scratch, &runtime()));
    let reader = RawWriter::open(&scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    Box::new(move || {
        let _keep = &scratch;
        let mut last = None;
        for _ in 0..GETS {
            last = reader
                .latest(GET_THREAD, 1)
                .unwrap_or_else(|err| panic!("latest failed: {err}"))
                .pop();
        }
        let latest = last.unwrap_or_else(|| panic!("the latest checkpoint is missing"));
        get_outcome(latest.values.len(), latest.writes.len())
    })
}

/// [`PUT_WRITES`] `SqliteSaver::put_writes` of three writes on
/// the latest checkpoint of a stored run (see [`put_writes_many`]).
fn saver_put_writes() -> Runner {
    let scratch = Scratch::new();
    let runtime = runtime();
    let saver = stored_chain(&scratch, &runtime);
    let address = runtime.block_on(latest_address(&saver));
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &scratch;
        run += 1;
        runtime.block_on(put_writes_many(&saver, &address, run))
    })
}

/// The same writes serialized to the same bytes (serde_json) and inserted
/// with plain rusqlite: one transaction per task, plain inserts.
fn raw_put_writes() -> Runner {
    let scratch = Scratch::new();
    let runtime = runtime();
    let saver = stored_chain(&scratch, &runtime);
    let address = runtime.block_on(latest_address(&saver));
    let checkpoint_id = address
        .checkpoint_id
        .unwrap_or_else(|| panic!("the latest checkpoint has no id"))
        .to_string();
    drop(saver);
    let mut writer = RawWriter::open(&scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    let mut run = 0_usize;
    Box::new(move || {
        let _keep = &scratch;
        run += 1;
        let document = Arc::new(wide_document());
        for task in 0..PUT_WRITES {
            let writes: Vec<(String, Vec<u8>)> = task_writes(&document)
                .into_iter()
                .map(|(channel, value)| {
                    let bytes = serde_json::to_vec(&value)
                        .unwrap_or_else(|err| panic!("serialize failed: {err}"));
                    (channel, bytes)
                })
                .collect();
            writer
                .put_writes(
                    GET_THREAD,
                    &checkpoint_id,
                    &format!("task-{run}-{task}"),
                    &writes,
                )
                .unwrap_or_else(|err| panic!("insert failed: {err}"));
        }
        put_writes_outcome()
    })
}

/// One `SqliteSaver::list` of a stored 100-checkpoint run (see [`list_all`]).
fn saver_list() -> Runner {
    on_stored_chain(|runtime, saver| runtime.block_on(list_all(saver)))
}

/// The same rows read with plain rusqlite: the saver's statements in one
/// transaction, every JSON text parsed.
fn raw_list() -> Runner {
    let scratch = Scratch::new();
    drop(stored_chain(&scratch, &runtime()));
    let reader = RawWriter::open(&scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    Box::new(move || {
        let _keep = &scratch;
        let tuples = reader
            .latest(GET_THREAD, CHECKPOINTS)
            .unwrap_or_else(|err| panic!("latest failed: {err}"));
        list_outcome(tuples.len(), tuples.first().map_or(0, |t| t.values.len()))
    })
}

/// Builds (untimed) one thread of [`HISTORY`] checkpoints, each with one
/// changed channel and one pending write; a run then times [`read_history`].
fn history() -> Runner {
    let scratch = Scratch::new();
    let saver = SqliteSaver::open(scratch.db())
        .unwrap_or_else(|err| panic!("cannot open the database: {err}"));
    let runtime = runtime();
    let thread = "history";
    runtime.block_on(async {
        let mut config = CheckpointConfig::thread(thread);
        let mut version = None;
        for step in 0..HISTORY {
            let next = ChannelVersion::next(version.as_ref());
            version = Some(next);
            let checkpoint = Checkpoint::empty().with_channel("step", Value::new(step), next);
            config = saver
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
                    &config,
                    vec![("out".to_owned(), Value::new(step))],
                    "task",
                    "",
                )
                .await
                .unwrap_or_else(|err| panic!("put_writes failed: {err}"));
        }
    });
    Box::new(move || {
        let _keep = &scratch;
        runtime.block_on(read_history(&saver, thread))
    })
}
