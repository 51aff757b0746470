//! Rows of a SQLite saver's file that someone else wrote: a corrupted file,
//! an older or foreign writer, a hand edit.
//!
//! Input: fields separated by `\0`. Field 0 is a metadata filter (JSON
//! text) for `list`; then come rows, each a kind field and the fields that
//! kind takes (a field of another kind is skipped):
//!
//! - `c ID PARENT DOCUMENT METADATA`: a `checkpoints` row (no parent when
//!   `PARENT` is empty);
//! - `b CHANNEL VERSION TAG BYTES`: a `blobs` row;
//! - `w CHECKPOINT TASK INDEX CHANNEL TAG BYTES`: a `writes` row (`INDEX`
//!   in decimal; the row's position when it does not parse).
//!
//! Empty `BYTES` are NULL.
//! Text that is not UTF-8 is stored as a BLOB, as a foreign writer could.
//! The rows go into a fresh thread of one database file per process, through
//! a plain rusqlite connection; then the saver reads the thread back
//! (`get_tuple`, `list`, `copy_thread`, `prune`, `delete_for_runs`) and a
//! graph checkpointed by it shows, resumes and answers the thread. All of
//! it must end in values or typed errors, never a panic or a hang.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params};
use serde_json::json;
use stategraph_checkpoint::{
    CheckpointConfig, CheckpointSaver, ListQuery, PruneStrategy, SharedSaver,
};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{Command, CompiledStateGraph};
use stategraph_pregel::Input;

/// The saver, a graph it checkpoints, and a raw connection to its file.
struct Fixture {
    saver: SqliteSaver,
    graph: CompiledStateGraph,
    raw: Mutex<Connection>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // Memory-backed when the machine has /dev/shm: the target is bound by
        // SQLite's file writes otherwise.
        let shm = PathBuf::from("/dev/shm");
        let dir = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        remove_stale_files(&dir);
        let path = dir.join(format!("{PREFIX}{}.db", std::process::id()));
        let saver = SqliteSaver::open(&path).expect("the saver opens a fresh file");
        let shared: SharedSaver = Arc::new(saver.clone());
        let graph = stategraph_fuzz::pausing_graph(shared);
        let raw = Connection::open(&path).expect("a second connection opens the file");
        raw.busy_timeout(std::time::Duration::from_secs(10))
            .expect("busy timeout");
        Fixture {
            saver,
            graph,
            raw: Mutex::new(raw),
        }
    })
}

/// The start of the names of this target's database files (then the pid).
const PREFIX: &str = "stategraph-fuzz-";

/// Deletes the database files of processes that are gone (libFuzzer exits
/// without dropping statics, so each run leaves its file behind), and any
/// file of this process's pid.
fn remove_stale_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        // Without /proc (not Linux) every other process counts as alive.
        let proc = Path::new("/proc");
        let alive = !proc.is_dir() || proc.join(pid.to_string()).exists();
        if !alive || pid == std::process::id() {
            // Another process may have deleted it first.
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Text as TEXT, other bytes as a BLOB; `None` is NULL.
fn sql(bytes: Option<&[u8]>) -> SqlValue {
    match bytes {
        None => SqlValue::Null,
        Some(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => SqlValue::Text(text.to_owned()),
            Err(_) => SqlValue::Blob(bytes.to_vec()),
        },
    }
}

fn non_empty(bytes: &[u8]) -> Option<&[u8]> {
    (!bytes.is_empty()).then_some(bytes)
}

fuzz_target!(|input: &[u8]| {
    let fields = stategraph_fuzz::fields(input, 0);
    let filter = serde_json::from_slice(fields[0]).unwrap_or(json!({}));
    let fixture = fixture();
    let thread = stategraph_fuzz::fresh_thread("rows");
    let mut ids: Vec<String> = Vec::new();
    {
        let mut raw = fixture.raw.lock().unwrap_or_else(|e| e.into_inner());
        let raw = raw.transaction().expect("a transaction begins");
        let mut rest = &fields[1..];
        let mut position = 0_i64;
        while let Some((kind, tail)) = rest.split_first() {
            position += 1;
            let takes = match *kind {
                b"c" | b"b" => 4,
                b"w" => 6,
                _ => 0,
            };
            if tail.len() < takes {
                break;
            }
            let (row, tail) = tail.split_at(takes);
            rest = tail;
            let inserted = match (*kind, row) {
                (b"c", [id, parent, document, metadata]) => {
                    ids.push(stategraph_fuzz::text(id));
                    raw.execute(
                        "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns,
                             checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
                         VALUES (?1, '', ?2, ?3, ?4, ?5)",
                        params![
                            thread,
                            sql(Some(id)),
                            sql(non_empty(parent)),
                            sql(Some(document)),
                            sql(Some(metadata))
                        ],
                    )
                }
                (b"b", [channel, version, tag, bytes]) => raw.execute(
                    "INSERT OR REPLACE INTO blobs (thread_id, checkpoint_ns, channel, version,
                         tag, bytes)
                     VALUES (?1, '', ?2, ?3, ?4, ?5)",
                    params![
                        thread,
                        sql(Some(channel)),
                        sql(Some(version)),
                        sql(Some(tag)),
                        non_empty(bytes)
                    ],
                ),
                (b"w", [checkpoint, task, index, channel, tag, bytes]) => {
                    let index = std::str::from_utf8(index)
                        .ok()
                        .and_then(|text| text.parse::<i64>().ok())
                        .unwrap_or(position);
                    raw.execute(
                        "INSERT OR REPLACE INTO writes (thread_id, checkpoint_ns,
                             checkpoint_id, task_id, idx, channel, tag, bytes)
                         VALUES (?1, '', ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![
                            thread,
                            sql(Some(checkpoint)),
                            sql(Some(task)),
                            index,
                            sql(Some(channel)),
                            sql(Some(tag)),
                            non_empty(bytes)
                        ],
                    )
                }
                _ => Ok(0),
            };
            inserted.expect("the schema takes any text or blob in these columns");
        }
        raw.commit().expect("the rows commit");
    }
    let copy = format!("{thread}-copy");
    stategraph_fuzz::runtime().block_on(async {
        let saver = &fixture.saver;
        let latest = CheckpointConfig::thread(thread.as_str());
        if let Ok(Some(tuple)) = saver.get_tuple(&latest).await {
            assert_eq!(tuple.config.thread_id, thread);
        }
        for id in ids.iter().take(4) {
            if let Ok(Some(tuple)) = saver.get_tuple(&latest.clone().with_id(id.as_str())).await {
                assert_eq!(
                    tuple.config.checkpoint_id.as_ref().map(|c| c.as_str()),
                    Some(id.as_str())
                );
            }
        }
        let _ = saver
            .list(ListQuery::thread(thread.as_str()).filter(filter))
            .collect::<Vec<_>>()
            .await;
        let _ = saver
            .list(ListQuery::thread(thread.as_str()).limit(1))
            .collect::<Vec<_>>()
            .await;
        if let Some(id) = ids.first() {
            let _ = saver
                .list(ListQuery::all().before(id.as_str()).limit(3))
                .collect::<Vec<_>>()
                .await;
        }

        let graph = &fixture.graph;
        let config = RunnableConfig::thread(thread.as_str());
        let _ = graph.get_state(&config).await;
        let _ = graph
            .get_state_history(&config, ListQuery::default().limit(3))
            .await;
        let _ = graph.invoke(Input::Resume, &config).await;
        let _ = graph
            .invoke(
                Command::new().resume(Value::from_json(json!("yes"))),
                &config,
            )
            .await;

        let _ = saver.copy_thread(&thread, &copy).await;
        let _ = saver
            .get_tuple(&CheckpointConfig::thread(copy.as_str()))
            .await;
        let _ = saver
            .prune(std::slice::from_ref(&thread), PruneStrategy::KeepLatest)
            .await;
        let _ = saver.get_tuple(&latest).await;
        let _ = saver.delete_for_runs(&["fuzz-run".to_owned()]).await;
        let _ = saver.delete_thread(&thread).await;
    });
    // Whatever the saver could not delete goes, so the file stays small.
    let raw = fixture.raw.lock().unwrap_or_else(|e| e.into_inner());
    for table in ["checkpoints", "blobs", "writes"] {
        raw.execute(
            &format!("DELETE FROM {table} WHERE thread_id IN (?1, ?2)"),
            params![thread, copy],
        )
        .expect("deleting a thread's rows");
    }
});
