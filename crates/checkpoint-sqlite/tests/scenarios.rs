//! Scenarios beyond the conformance suite (issue 4, USER-ISSUES T2, T6, T7,
//! T14): several processes and handles on one file, compare-and-set races,
//! random value round trips, corrupt stored values, long histories, blob
//! garbage collection and concurrent setup.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::{StreamExt, TryStreamExt};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use stategraph_checkpoint::{
    ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointSaver, CheckpointSource, CheckpointTuple, Error, ListQuery, PruneStrategy, Value,
};
use stategraph_checkpoint_sqlite::SqliteSaver;
use stategraph_core::ErrorKind;

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("stategraph-sqlite-scenario-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("checkpoints.db");
    (dir, path)
}

fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

fn metadata(step: i64) -> CheckpointMetadata {
    CheckpointMetadata::new(CheckpointSource::Loop, step)
}

/// Stores a child of `parent` with one changed channel `step`.
async fn put_step(saver: &SqliteSaver, parent: &CheckpointConfig, step: i64) -> CheckpointConfig {
    let version = ChannelVersion::new(u64::try_from(step + 1).unwrap(), 0);
    let checkpoint = Checkpoint::empty().with_channel("step", Value::new(step), version);
    let new_versions: ChannelVersions = [("step".to_owned(), version)].into();
    saver
        .put(parent, checkpoint, metadata(step), new_versions)
        .await
        .unwrap()
}

async fn list_all(saver: &SqliteSaver, query: ListQuery) -> Vec<CheckpointTuple> {
    saver.list(query).try_collect().await.unwrap()
}

// ---------------------------------------------------------------------------
// T7: several OS processes writing one file.

const T7_DB: &str = "STATEGRAPH_SQLITE_T7_DB";
const T7_WORKER: &str = "STATEGRAPH_SQLITE_T7_WORKER";
const T7_PROCESSES: usize = 4;
const T7_TASKS: usize = 2;
const T7_PUTS_PER_TASK: usize = 250;

/// The body of one T7 child process. The parent test runs this test binary
/// again with `--exact t7_child_process_entry_point` and the database path in
/// `STATEGRAPH_SQLITE_T7_DB`; in a normal test run the variable is unset and
/// this test does nothing.
#[test]
fn t7_child_process_entry_point() {
    let (Ok(path), Ok(worker)) = (std::env::var(T7_DB), std::env::var(T7_WORKER)) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    runtime.block_on(async move {
        // Every child opens (and migrates) the fresh file at the same time.
        let saver = SqliteSaver::open(&path).unwrap();
        let tasks = (0..T7_TASKS).map(|task| {
            let saver = saver.clone();
            let thread_id = format!("t7-{worker}-{task}");
            tokio::spawn(async move {
                let mut head = CheckpointConfig::thread(&thread_id);
                for step in 0..T7_PUTS_PER_TASK {
                    let step = i64::try_from(step).unwrap();
                    head = match saver
                        .put(
                            &head,
                            Checkpoint::empty().with_channel(
                                "step",
                                Value::new(step),
                                ChannelVersion::new(u64::try_from(step + 1).unwrap(), 0),
                            ),
                            metadata(step),
                            [(
                                "step".to_owned(),
                                ChannelVersion::new(u64::try_from(step + 1).unwrap(), 0),
                            )]
                            .into(),
                        )
                        .await
                    {
                        Ok(config) => config,
                        Err(err) => panic!("T7 put failed in {thread_id}: {err}"),
                    };
                    if let Err(err) = saver
                        .put_writes(
                            &head,
                            vec![("out".to_owned(), Value::new(json!({"step": step})))],
                            "task",
                            "",
                        )
                        .await
                    {
                        panic!("T7 put_writes failed in {thread_id}: {err}");
                    }
                }
            })
        });
        for task in join_all(tasks).await {
            task.unwrap();
        }
    });
}

/// T7 / CP-EXT-19: 4 OS processes open one fresh file at once (concurrent
/// setup) and each stores 500 checkpoints and 500 writes from two tasks: no
/// process sees an error ("database is locked" included) and every row is
/// present.
#[test]
fn t7_four_processes_writing_one_file_see_no_lock_errors() {
    let (_dir, path) = temp_db();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..T7_PROCESSES)
        .map(|worker| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "t7_child_process_entry_point",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(T7_DB, &path)
                .env(T7_WORKER, worker.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (worker, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "T7 worker {worker} failed: {}\n{stdout}\n{stderr}",
            output.status
        );
        assert!(
            stdout.contains("1 passed"),
            "T7 worker {worker} ran no test:\n{stdout}"
        );
        assert!(
            !stderr.contains("locked") && !stdout.contains("locked"),
            "T7 worker {worker}:\n{stdout}\n{stderr}"
        );
    }
    let conn = raw(&path);
    let expected = i64::try_from(T7_PROCESSES * T7_TASKS * T7_PUTS_PER_TASK).unwrap();
    assert_eq!(count(&conn, "SELECT count(*) FROM checkpoints"), expected);
    assert_eq!(count(&conn, "SELECT count(*) FROM writes"), expected);
    assert_eq!(count(&conn, "SELECT count(*) FROM blobs"), expected);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM stategraph_migrations"),
        count(&conn, "SELECT max(v) FROM stategraph_migrations"),
        "one row per migration although 4 processes set up the file at once"
    );
    let threads = count(&conn, "SELECT count(DISTINCT thread_id) FROM checkpoints");
    assert_eq!(threads, i64::try_from(T7_PROCESSES * T7_TASKS).unwrap());
}

// ---------------------------------------------------------------------------
// T2: compare-and-set races between savers on one file.

/// T2 / CP-EXT-03: 8 savers (8 writer connections) on one file race
/// `put_if_head` on one thread for 20 rounds: each round exactly one wins and
/// 7 get `Conflict`; the head's parent chain holds every committed
/// checkpoint and nothing else was stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t2_eight_concurrent_writers_one_winner_per_round() {
    let (_dir, path) = temp_db();
    let savers: Vec<SqliteSaver> = (0..8).map(|_| SqliteSaver::open(&path).unwrap()).collect();
    let thread = CheckpointConfig::thread("t2");
    let first = savers[0]
        .put_if_head(
            &thread,
            Checkpoint::empty(),
            metadata(-1),
            ChannelVersions::new(),
        )
        .await
        .unwrap();
    let mut committed = vec![first.clone()];
    let mut head = first;
    for round in 0..20 {
        let start = Arc::new(tokio::sync::Barrier::new(savers.len()));
        let attempts = savers.iter().map(|saver| {
            let (saver, head, start) = (saver.clone(), head.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                saver
                    .put_if_head(
                        &head,
                        Checkpoint::empty(),
                        metadata(round),
                        ChannelVersions::new(),
                    )
                    .await
            })
        });
        let results: Vec<_> = join_all(attempts)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let winners: Vec<CheckpointConfig> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        for err in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(err.kind(), ErrorKind::Conflict, "round {round}: {err}");
        }
        head = winners[0].clone();
        committed.push(head.clone());
    }
    // Walk the parent chain from the latest checkpoint.
    let mut chain = Vec::new();
    let mut cursor = Some(thread.clone());
    while let Some(config) = cursor {
        let tuple = savers[3].get_tuple(&config).await.unwrap().unwrap();
        chain.push(tuple.config.clone());
        cursor = tuple.parent_config;
    }
    chain.reverse();
    assert_eq!(
        chain, committed,
        "the head chain is every committed checkpoint"
    );
    let stored = list_all(&savers[5], ListQuery::thread("t2")).await;
    assert_eq!(stored.len(), 21, "no losing checkpoint was stored");
}

// ---------------------------------------------------------------------------
// T14: values round-trip exactly; corrupt values name their channel.

fn text_with_specials() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\0'),
            Just('😀'),
            Just('🚀'),
            Just('é'),
            Just('"'),
            Just('\\'),
            Just('\n'),
            any::<char>(),
        ],
        0..12,
    )
    .prop_map(String::from_iter)
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0), any::<i64>()].prop_map(|i| json!(i)),
        ((1_u64 << 53) + 1..=u64::MAX).prop_map(|u| json!(u)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        text_with_specials().prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(text_with_specials(), inner, 0..6)
                .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
        ]
    })
}

/// T14 / CP-EXT-10: 200 random values (strings with NUL and emoji, i64
/// extremes, u64 above 2^53, finite floats, nested arrays and objects) read
/// back exactly (same JSON, same number representation) as channel values
/// and as pending writes, under random channel names (without NUL).
#[test]
fn t14_random_values_round_trip_exactly() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(json_value(), text_with_specials()), |(value, channel)| {
            // A channel name is an identifier: NUL is refused there
            // (docs/LIMITS.md), values keep it.
            let channel = format!("ch {}", channel.replace('\0', ""));
            let read = runtime.block_on(async {
                let thread = uuid::Uuid::new_v4().to_string();
                let version = ChannelVersion::next(None);
                let checkpoint = Checkpoint::empty().with_channel(
                    channel.clone(),
                    Value::from_json(value.clone()),
                    version,
                );
                let stored = saver
                    .put(
                        &CheckpointConfig::thread(&thread),
                        checkpoint,
                        metadata(0),
                        [(channel.clone(), version)].into(),
                    )
                    .await
                    .unwrap();
                saver
                    .put_writes(
                        &stored,
                        vec![(channel.clone(), Value::from_json(value.clone()))],
                        "task",
                        "",
                    )
                    .await
                    .unwrap();
                saver.get_tuple(&stored).await.unwrap().unwrap()
            });
            let as_value = read.checkpoint.channel_values[&channel].to_json().unwrap();
            prop_assert_eq!(&as_value, &value);
            prop_assert_eq!(read.pending_writes.len(), 1);
            let as_write = read.pending_writes[0].value.to_json().unwrap();
            prop_assert_eq!(&as_write, &value);
            Ok(())
        })
        .unwrap();
}

/// T14 / CP-EXT-22: a stored value that no longer decodes fails `get_tuple`
/// and `list` with a serialization error naming the operation and the
/// channel (and the position of the bad byte), for channel values and for
/// pending writes; an unknown serializer tag is an error too, never a silent
/// default.
#[tokio::test]
async fn t14_corrupt_stored_value_error_names_the_channel() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let version = ChannelVersion::next(None);
    let checkpoint = Checkpoint::empty()
        .with_channel("good", Value::new("fine"), version)
        .with_channel("bad_channel", Value::new(json!({"a": [1, 2]})), version);
    let stored = saver
        .put(
            &CheckpointConfig::thread("t14"),
            checkpoint,
            metadata(0),
            [
                ("good".to_owned(), version),
                ("bad_channel".to_owned(), version),
            ]
            .into(),
        )
        .await
        .unwrap();
    saver
        .put_writes(
            &stored,
            vec![("bad_write".into(), Value::new(1))],
            "task",
            "",
        )
        .await
        .unwrap();
    let conn = raw(&path);

    conn.execute(
        "UPDATE blobs SET bytes = CAST('{\"a\": [1, }' AS BLOB) WHERE channel = 'bad_channel'",
        [],
    )
    .unwrap();
    let err = saver.get_tuple(&stored).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization, "{err}");
    let message = err.to_string();
    assert!(
        message.contains("get_tuple failed for channel \"bad_channel\""),
        "{message}"
    );
    assert!(message.contains("column"), "names the position: {message}");
    let err = saver
        .list(ListQuery::thread("t14"))
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("list failed for channel \"bad_channel\""),
        "{err}"
    );

    conn.execute(
        "UPDATE blobs SET bytes = CAST('{\"a\": [1, 2]}' AS BLOB) WHERE channel = 'bad_channel'",
        [],
    )
    .unwrap();
    conn.execute("UPDATE writes SET bytes = CAST('[1' AS BLOB)", [])
        .unwrap();
    let err = saver.get_tuple(&stored).await.unwrap_err();
    assert!(err.to_string().contains("channel \"bad_write\""), "{err}");

    conn.execute(
        "UPDATE writes SET bytes = CAST('1' AS BLOB), tag = 'pickle'",
        [],
    )
    .unwrap();
    let err = saver.get_tuple(&stored).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization, "{err}");
    assert!(err.to_string().contains("pickle"), "{err}");

    conn.execute("UPDATE checkpoints SET metadata = '{not json'", [])
        .unwrap();
    let err = saver.get_tuple(&stored).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Backend, "{err}");
    assert!(err.to_string().contains("metadata"), "{err}");
}

// ---------------------------------------------------------------------------
// Issue 21 (items 8 and 9): missing values and unreadable rows.

/// CP-EXT-21: deleting a checkpoint's value rows makes it an integrity
/// error naming thread, namespace, checkpoint, channel and version, from
/// `get_tuple` (by id and as the latest) and as its own `list` item; it is
/// never read as an empty channel. The older checkpoints, whose values are
/// still stored, read as before.
#[tokio::test]
async fn t21_deleted_value_rows_are_an_integrity_error() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let mut stored = Vec::new();
    let mut head = CheckpointConfig::thread("t21").with_ns("child:1");
    for step in 0..3 {
        head = put_step(&saver, &head, step).await;
        stored.push(head.clone());
    }
    let latest_version = ChannelVersion::new(3, 0);
    let deleted = raw(&path)
        .execute(
            "DELETE FROM blobs WHERE channel = 'step' AND version = ?1",
            [latest_version.to_string()],
        )
        .unwrap();
    assert_eq!(deleted, 1);

    for address in [
        stored[2].clone(),
        CheckpointConfig::thread("t21").with_ns("child:1"),
    ] {
        let err = saver.get_tuple(&address).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Backend, "{err}");
        let Error::Integrity {
            operation,
            thread_id,
            checkpoint_ns,
            checkpoint_id,
            channel,
            version,
        } = &err
        else {
            panic!("expected an integrity error, got {err}");
        };
        assert_eq!(*operation, "get_tuple");
        assert_eq!(
            (thread_id.as_str(), checkpoint_ns.as_str()),
            ("t21", "child:1")
        );
        assert_eq!(Some(checkpoint_id), stored[2].checkpoint_id.as_ref());
        assert_eq!((channel.as_str(), *version), ("step", latest_version));
        let message = err.to_string();
        assert!(message.contains("\"t21\""), "{message}");
        assert!(message.contains(checkpoint_id.as_str()), "{message}");
        assert!(message.contains("channel \"step\""), "{message}");
    }
    let older = saver.get_tuple(&stored[1]).await.unwrap().unwrap();
    assert_eq!(older.checkpoint.channel_values["step"], Value::new(1));

    let items: Vec<_> = saver.list(ListQuery::thread("t21")).collect().await;
    assert_eq!(items.len(), 3);
    assert!(
        matches!(
            &items[0],
            Err(Error::Integrity {
                operation: "list",
                ..
            })
        ),
        "{:?}",
        items[0].as_ref().err()
    );
    let rest: Vec<_> = items[1..]
        .iter()
        .map(|item| item.as_ref().unwrap().config.clone())
        .collect();
    assert_eq!(rest, [stored[1].clone(), stored[0].clone()]);
}

/// Issue 21 item 9: unreadable rows (metadata or checkpoint document that is
/// not JSON, a deleted value, a value that does not decode) are each one
/// `Err` item in their place, and the listing of every thread goes on past
/// them, across SQLite's 64-row pages, with every other checkpoint in order.
/// `limit` counts the `Err` items; a filter still reports rows whose
/// metadata cannot be read (it cannot tell whether they match).
#[tokio::test]
async fn list_goes_on_past_unreadable_rows_across_pages() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let threads = ["t21-a", "t21-b", "t21-c"];
    let mut heads: Vec<CheckpointConfig> = threads
        .iter()
        .map(|t| CheckpointConfig::thread(*t))
        .collect();
    for step in 0..50 {
        for head in &mut heads {
            *head = put_step(&saver, head, step).await;
        }
    }
    let healthy: Vec<CheckpointConfig> = list_all(&saver, ListQuery::all())
        .await
        .into_iter()
        .map(|t| t.config)
        .collect();
    assert_eq!(healthy.len(), 150);

    let conn = raw(&path);
    let key = |i: usize| {
        let config = &healthy[i];
        (
            config.thread_id.clone(),
            config.checkpoint_id.clone().unwrap().as_str().to_owned(),
        )
    };
    // The last row of the first page and the first of the second.
    let (thread, id) = key(63);
    conn.execute(
        "UPDATE checkpoints SET metadata = '{not json' WHERE thread_id = ?1 AND checkpoint_id = ?2",
        [&thread, &id],
    )
    .unwrap();
    let (thread, id) = key(64);
    conn.execute(
        "UPDATE checkpoints SET checkpoint = 'nope' WHERE thread_id = ?1 AND checkpoint_id = ?2",
        [&thread, &id],
    )
    .unwrap();
    // Each checkpoint stores its own `step` version, so these touch one row each.
    let step_version = |(thread, id): (String, String)| {
        let version: String = conn
            .query_row(
                "SELECT json_extract(checkpoint, '$.channel_versions.step') FROM checkpoints
                 WHERE thread_id = ?1 AND checkpoint_id = ?2",
                [&thread, &id],
                |row| row.get(0),
            )
            .unwrap();
        [thread, version]
    };
    conn.execute(
        "DELETE FROM blobs WHERE thread_id = ?1 AND channel = 'step' AND version = ?2",
        step_version(key(100)),
    )
    .unwrap();
    conn.execute(
        "UPDATE blobs SET bytes = CAST('[1' AS BLOB)
         WHERE thread_id = ?1 AND channel = 'step' AND version = ?2",
        step_version(key(130)),
    )
    .unwrap();
    let bad = [63, 64, 100, 130];

    let listed: Vec<_> = saver.list(ListQuery::all()).collect().await;
    assert_eq!(listed.len(), 150, "one item per row");
    for (i, item) in listed.iter().enumerate() {
        match item {
            Ok(tuple) => {
                assert!(!bad.contains(&i), "row {i} must be an error");
                assert_eq!(tuple.config, healthy[i], "row {i}");
            }
            Err(err) => assert!(bad.contains(&i), "row {i}: {err}"),
        }
    }
    let kinds: Vec<ErrorKind> = bad
        .iter()
        .map(|i| listed[*i].as_ref().unwrap_err().kind())
        .collect();
    assert_eq!(
        kinds,
        [
            ErrorKind::Backend,
            ErrorKind::Backend,
            ErrorKind::Backend,
            ErrorKind::Serialization
        ]
    );
    assert!(matches!(&listed[100], Err(Error::Integrity { .. })));

    let limited: Vec<_> = saver.list(ListQuery::all().limit(65)).collect().await;
    assert_eq!(limited.len(), 65, "limit counts the error items");
    assert!(limited[63].is_err() && limited[64].is_err());

    let filtered: Vec<_> = saver
        .list(ListQuery::all().filter(json!({"step": 21})))
        .collect()
        .await;
    let errors = filtered.iter().filter(|item| item.is_err()).count();
    assert_eq!(errors, 1, "only the row whose metadata is unreadable");
    assert_eq!(filtered.len(), 4, "3 threads at step 21, and that row");
}

// ---------------------------------------------------------------------------
// Long histories, storage and maintenance.

/// U07 in small (the 100,000-checkpoint measurement is a benchmark): a
/// thread of 5,000 checkpoints lists in keyset pages of 20 (`before` = last
/// id) and as one stream, strictly descending, every checkpoint once; a
/// `limit` stops the stream early; the latest is found by one index probe.
#[tokio::test]
async fn history_of_5000_checkpoints_lists_in_pages_strictly_descending() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let mut head = CheckpointConfig::thread("long");
    for step in 0..5_000 {
        head = put_step(&saver, &head, step).await;
    }
    let started = Instant::now();
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("long"))
        .await
        .unwrap()
        .unwrap();
    let latest_took = started.elapsed();
    assert_eq!(latest.config, head);
    assert_eq!(latest.checkpoint.channel_values["step"], Value::new(4_999));
    assert!(latest_took < Duration::from_secs(1), "{latest_took:?}");

    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let mut query = ListQuery::thread("long").limit(20);
        if let Some(cursor) = before.take() {
            query = query.before(cursor);
        }
        let page = list_all(&saver, query).await;
        assert!(page.len() <= 20);
        let Some(last) = page.last() else { break };
        before = last.config.checkpoint_id.clone();
        paged.extend(page.into_iter().map(|t| t.config.checkpoint_id.unwrap()));
    }
    assert_eq!(paged.len(), 5_000);
    assert!(paged.windows(2).all(|w| w[0] > w[1]), "strictly descending");

    let streamed: Vec<_> = list_all(&saver, ListQuery::thread("long").ns(""))
        .await
        .into_iter()
        .map(|t| t.config.checkpoint_id.unwrap())
        .collect();
    assert_eq!(streamed, paged, "one stream equals the pages");

    let filtered = list_all(
        &saver,
        ListQuery::thread("long")
            .filter(json!({"step": 17}))
            .limit(1),
    )
    .await;
    assert_eq!(filtered.len(), 1);
    assert_eq!(filtered[0].metadata.step, Some(17));
}

/// U06: a value is stored once per version (unchanged channels are not
/// copied into every checkpoint); `prune` keeps the latest state readable
/// and deletes the blobs and writes nothing references; `delete_thread`
/// leaves no row behind.
#[tokio::test]
async fn blobs_are_stored_once_per_version_and_collected_after_prune() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let big = Value::new("x".repeat(10_000));
    let big_version = ChannelVersion::next(None);
    let mut head = CheckpointConfig::thread("gc");
    for step in 0..10_i64 {
        let version = ChannelVersion::new(u64::try_from(step + 1).unwrap(), 0);
        let checkpoint = Checkpoint::empty()
            .with_channel("big", big.clone(), big_version)
            .with_channel("step", Value::new(step), version);
        let mut new_versions: ChannelVersions = [("step".to_owned(), version)].into();
        if step == 0 {
            new_versions.insert("big".to_owned(), big_version);
        }
        head = saver
            .put(&head, checkpoint, metadata(step), new_versions)
            .await
            .unwrap();
        saver
            .put_writes(&head, vec![("out".into(), Value::new(step))], "task", "")
            .await
            .unwrap();
    }
    let conn = raw(&path);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM blobs"),
        11,
        "big once, step 10 times"
    );
    let before = saver
        .get_tuple(&CheckpointConfig::thread("gc"))
        .await
        .unwrap()
        .unwrap();

    saver
        .prune(&["gc".to_owned()], PruneStrategy::KeepLatest)
        .await
        .unwrap();
    let after = saver
        .get_tuple(&CheckpointConfig::thread("gc"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after, before, "the latest state is unchanged");
    assert_eq!(count(&conn, "SELECT count(*) FROM checkpoints"), 1);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM blobs"),
        2,
        "big and the last step"
    );
    assert_eq!(count(&conn, "SELECT count(*) FROM writes"), 1);

    saver.delete_thread("gc").await.unwrap();
    for table in ["checkpoints", "blobs", "writes"] {
        assert_eq!(
            count(&conn, &format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
    }
}

/// U09: in WAL mode a read never waits for a writer: while another
/// connection holds the write lock, `get_tuple` and `list` answer at once and
/// a `put` waits (busy timeout) and succeeds when the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_proceed_while_another_connection_holds_the_write_lock() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let first = put_step(&saver, &CheckpointConfig::thread("wal"), 0).await;
    let holder = raw(&path);
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();

    let writer = {
        let (saver, first) = (saver.clone(), first.clone());
        tokio::spawn(async move { put_step(&saver, &first, 1).await })
    };
    let started = Instant::now();
    let read = saver
        .get_tuple(&CheckpointConfig::thread("wal"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.config, first);
    assert_eq!(list_all(&saver, ListQuery::thread("wal")).await.len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "reads did not wait"
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!writer.is_finished(), "the put waits for the write lock");
    holder.execute_batch("COMMIT").unwrap();
    let second = writer.await.unwrap();
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("wal"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.config, second);
}

/// T6 / CP-EXT-16: 8 savers opening one fresh file at the same moment all
/// succeed with exactly one row per migration; `setup` again is a no-op; a
/// dropped migrations table is recreated without touching the data.
#[test]
fn t6_eight_concurrent_setups_all_succeed() {
    let (_dir, path) = temp_db();
    let start = Arc::new(Barrier::new(8));
    let openers: Vec<_> = (0..8)
        .map(|_| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                SqliteSaver::open(&path).map(|_| ())
            })
        })
        .collect();
    for opener in openers {
        opener.join().unwrap().unwrap();
    }
    let conn = raw(&path);
    let versions: HashSet<i64> = {
        let mut stmt = conn.prepare("SELECT v FROM stategraph_migrations").unwrap();
        stmt.query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let applied = count(&conn, "SELECT count(*) FROM stategraph_migrations");
    assert_eq!(usize::try_from(applied).unwrap(), versions.len());
    assert_eq!(versions, (1..=applied).collect());
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let saver = SqliteSaver::open(&path).unwrap();
        put_step(&saver, &CheckpointConfig::thread("t6"), 0).await;
        saver.setup().await.unwrap();
        conn.execute_batch("DROP TABLE stategraph_migrations")
            .unwrap();
        saver.setup().await.unwrap();
        assert_eq!(
            count(&conn, "SELECT count(*) FROM stategraph_migrations"),
            applied
        );
        let latest = saver
            .get_tuple(&CheckpointConfig::thread("t6"))
            .await
            .unwrap();
        assert!(
            latest.is_some(),
            "the data survives re-running the migrations"
        );
    });
}

/// 64 concurrent reads through one saver (more than its 8 reader
/// connections) all answer, while writes continue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_reads_share_the_reader_pool() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let mut head = CheckpointConfig::thread("readers");
    for step in 0..10 {
        head = put_step(&saver, &head, step).await;
    }
    let reads = (0..64).map(|i| {
        let saver = saver.clone();
        tokio::spawn(async move {
            if i % 2 == 0 {
                let latest = saver
                    .get_tuple(&CheckpointConfig::thread("readers"))
                    .await
                    .unwrap();
                assert!(latest.is_some());
            } else {
                assert!(list_all(&saver, ListQuery::thread("readers")).await.len() >= 10);
            }
        })
    });
    let writes = {
        let saver = saver.clone();
        tokio::spawn(async move {
            for step in 10..30 {
                head = put_step(&saver, &head, step).await;
            }
        })
    };
    for read in join_all(reads).await {
        read.unwrap();
    }
    writes.await.unwrap();
    assert_eq!(
        list_all(&saver, ListQuery::thread("readers")).await.len(),
        30
    );
}

/// Metadata with custom keys named like typed fields (`"source":
/// "custom"`) reads back exactly as it was written.
#[tokio::test]
async fn metadata_with_foreign_known_keys_round_trips() {
    let saver = SqliteSaver::in_memory().unwrap();
    let metadata = CheckpointMetadata::default()
        .with("source", json!("custom"))
        .with("step", json!("x"));
    saver
        .put(
            &CheckpointConfig::thread("meta"),
            Checkpoint::empty(),
            metadata.clone(),
            ChannelVersions::new(),
        )
        .await
        .unwrap();
    let stored = saver
        .get_tuple(&CheckpointConfig::thread("meta"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.metadata, metadata);
}

/// Stores `checkpoint` as the child of `parent`, every version new.
async fn put(
    saver: &SqliteSaver,
    parent: &CheckpointConfig,
    checkpoint: Checkpoint,
) -> CheckpointConfig {
    let versions = checkpoint.channel_versions.clone();
    saver
        .put(parent, checkpoint, metadata(0), versions)
        .await
        .unwrap()
}

/// Issue 21, observation 12: a large string in the input, the input task's
/// write and the next checkpoint's channel is stored once for the thread;
/// pruning drops only the pieces nothing reads any more; a piece deleted
/// behind the saver's back is a typed error naming thread and channel; and
/// deleting the thread deletes its pieces.
#[tokio::test]
async fn large_strings_are_stored_once_per_thread() {
    let (_dir, path) = temp_db();
    let saver = SqliteSaver::open(&path).unwrap();
    let conn = raw(&path);
    let big = stategraph_conformance::fixtures::large_text("big", 1 << 20);
    let version = ChannelVersion::new(1, 0);
    let input =
        Checkpoint::empty().with_channel("__start__", Value::new(json!({"text": big})), version);
    let c1 = put(&saver, &CheckpointConfig::thread("t"), input).await;
    let write = vec![("text".into(), Value::new(big.clone()))];
    saver.put_writes(&c1, write, "start", "").await.unwrap();
    let step = Checkpoint::empty().with_channel("text", Value::new(big.clone()), version);
    let c2 = put(&saver, &c1, step).await;
    let stored = |sql: &str| count(&conn, sql);
    assert_eq!(stored("SELECT count(*) FROM pieces"), 1);
    let piece = stored("SELECT sum(length(bytes)) FROM pieces");
    assert!(piece > 1 << 20, "the piece holds the text: {piece}");
    let rest = stored(
        "SELECT (SELECT sum(length(bytes)) FROM blobs) + (SELECT sum(length(bytes)) FROM writes)",
    );
    assert!(
        rest < 1024,
        "values and writes hold skeletons only: {rest} bytes"
    );
    let read = saver.get_tuple(&c1).await.unwrap().unwrap();
    assert_eq!(read.pending_writes[0].value.to_json().unwrap(), json!(big));
    assert_eq!(
        read.checkpoint.channel_values["__start__"]
            .to_json()
            .unwrap(),
        json!({"text": big})
    );

    // A new text replaces the old one; pruning to the latest keeps its piece only.
    let other = stategraph_conformance::fixtures::large_text("other", 1 << 16);
    let next = Checkpoint::empty().with_channel(
        "text",
        Value::new(other.clone()),
        ChannelVersion::new(2, 0),
    );
    let c3 = put(&saver, &c2, next).await;
    assert_eq!(stored("SELECT count(*) FROM pieces"), 2);
    saver
        .prune(&["t".into()], PruneStrategy::KeepLatest)
        .await
        .unwrap();
    assert_eq!(stored("SELECT count(*) FROM pieces"), 1);
    let latest = saver.get_tuple(&c3).await.unwrap().unwrap();
    assert_eq!(
        latest.checkpoint.channel_values["text"].to_json().unwrap(),
        json!(other)
    );

    conn.execute("DELETE FROM pieces", []).unwrap();
    let err = saver.get_tuple(&c3).await.unwrap_err();
    assert!(
        matches!(&err, Error::Piece { thread_id, channel, .. } if thread_id == "t" && channel == "text"),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Backend);

    put(
        &saver,
        &c3,
        Checkpoint::empty().with_channel("text", Value::new(big), ChannelVersion::new(3, 0)),
    )
    .await;
    assert_eq!(stored("SELECT count(*) FROM pieces"), 1);
    saver.delete_thread("t").await.unwrap();
    assert_eq!(stored("SELECT count(*) FROM pieces"), 0);
}

/// A file SQLite cannot open is a backend error that names the path.
#[test]
fn an_unopenable_file_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("threads.db");
    let err = SqliteSaver::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Backend);
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.starts_with("open failed: cannot open the SQLite database"),
        "{text}"
    );
}

/// Tables of one's own in the saver's file: written in the writer's
/// batches (`write_with`, atomic: a failed write keeps nothing), read on a
/// reader connection (`read_with`), which sees every answered write.
#[tokio::test]
async fn own_tables_are_written_with_the_writer_and_read_by_the_readers() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("own.db")).unwrap();
    saver
        .write_with(|conn| conn.execute_batch("CREATE TABLE mine (v INTEGER NOT NULL)"))
        .await
        .unwrap()
        .unwrap();
    saver
        .write_with(|conn| conn.execute("INSERT INTO mine (v) VALUES (1)", []))
        .await
        .unwrap()
        .unwrap();
    let failed = saver
        .write_with(|conn| {
            conn.execute("INSERT INTO mine (v) VALUES (2)", [])?;
            conn.execute("INSERT INTO mine (v) VALUES (NULL)", [])
        })
        .await
        .unwrap();
    assert!(
        failed.is_err(),
        "the NOT NULL column refuses the second row"
    );
    let values = saver
        .read_with(|conn| {
            conn.prepare("SELECT v FROM mine ORDER BY v")?
                .query_map([], |row| row.get::<_, i64>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(values, [1], "the failed write kept nothing");
}
