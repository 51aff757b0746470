//! Golden trace 32: the saver contract after a real run that stopped at an
//! interrupt with a sibling task already finished: `get_tuple` (the
//! checkpoint's versions, versions seen, updated channels and values;
//! metadata; parent; pending writes), `list` (order, limit, before, filter,
//! all threads), and `put` / `put_writes` / `get_next_version` /
//! `delete_thread` by hand. Versions are compared by counter (`"2.*"`), as
//! the case records them.
//!
//! `serde_roundtrip` is compared for every sample
//! (`trace_32_serializer_round_trips`, `trace_32_tuples_sets_and_bytes`),
//! without Python's tag (`msgpack`, `bytes`): ours is JSON, tag `json`.
//! Its fields are read so:
//! - `dict`, `message`, `send`: the value read back from the savers'
//!   `JsonSerializer` equals the one written and has its type
//!   (`type_back`: `dict` for a JSON object, the message's class, `Send`).
//! - `tuple`, `set`, `bytes` go through two real serializing savers
//!   (`InMemorySaver::with_serializer(JsonSerializer)` and SQLite) as the
//!   Rust types `(i64, String)`, `BTreeSet<i64>` / `HashSet<i64>` and
//!   `Vec<u8>`. JSON has none of the three: each is written as an array.
//!   What keeps a type is the format in Python (msgpack has set and bytes
//!   types and no tuple) and the reader in Rust (serde decodes the array
//!   into the type asked for). So `equal` and `type_back` are read for the
//!   untyped reader (the `Value` a saver returns: `equal` when it is still
//!   the value written, of its type; `type_back` the Python name of its
//!   JSON kind) and for the typed reader (`Value::decode::<T>()`). A
//!   tuple comes back, untyped, as the list `[1, "x"]`: `equal: false`,
//!   `type_back: list`, as LangGraph's does. A set and bytes come back
//!   equal as `set` and `bytes` when read as their types, as LangGraph's
//!   do. Rust keeps more on the other side: a tuple read as
//!   `(i64, String)` is equal too, and untyped a set or bytes is a list;
//!   the test asserts both.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver,
    CheckpointSource, InMemorySaver, ListQuery,
};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{CompileOptions, NodeError, START, Schema, StateGraph, TaskContext};
use support::{assert_trace_ids, fixture, py_interrupts};

fn expected(key: &str) -> Json {
    fixture("32_checkpointer_api")[key].clone()
}

/// `"<counter>.*"`, as the case writes versions.
fn version(v: &ChannelVersion) -> Json {
    json!(format!("{}.*", v.counter()))
}

fn config_json(config: &CheckpointConfig) -> Json {
    json!({"configurable": {
        "thread_id": config.thread_id,
        "checkpoint_ns": config.checkpoint_ns,
        "checkpoint_id": config.checkpoint_id.as_ref().map(ToString::to_string),
    }})
}

fn checkpoint_json(checkpoint: &Checkpoint) -> Json {
    json!({
        "v": checkpoint.v,
        "id": checkpoint.id.to_string(),
        "channel_versions": checkpoint.channel_versions.iter().map(|(k, v)| (k.clone(), version(v))).collect::<serde_json::Map<_, _>>(),
        "versions_seen": checkpoint.versions_seen.iter().map(|(node, seen)| {
            (node.clone(), json!(seen.iter().map(|(k, v)| (k.clone(), version(v))).collect::<serde_json::Map<_, _>>()))
        }).collect::<serde_json::Map<_, _>>(),
        "updated_channels": checkpoint.updated_channels,
        "channel_values": checkpoint.channel_values.iter().map(|(k, v)| (k.clone(), v.to_json().unwrap())).collect::<serde_json::Map<_, _>>(),
    })
}

async fn steps(saver: &InMemorySaver, query: ListQuery) -> Vec<Json> {
    saver
        .list(query)
        .map(|t| json!(t.unwrap().metadata.step))
        .collect()
        .await
}

#[tokio::test]
async fn trace_32_after_an_interrupted_run() {
    let saver = InMemorySaver::new();
    let mut g = StateGraph::new(Schema::new().append("log"));
    g.add_node("ok", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["ok"]}))
    })
    .unwrap();
    g.add_node("ask", |_s: Json, ctx: TaskContext| async move {
        tokio::task::yield_now().await;
        Ok::<_, NodeError>(json!({"log": [ctx.interrupt("?")?.to_json()?]}))
    })
    .unwrap();
    g.add_edge(START, "ok").unwrap();
    g.add_edge(START, "ask").unwrap();
    let app = g
        .compile_with(CompileOptions::new().shared_checkpointer(std::sync::Arc::new(saver.clone())))
        .unwrap();
    let cfg = RunnableConfig::thread("cp");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();

    let thread = CheckpointConfig::thread("cp");
    let tuple = saver.get_tuple(&thread).await.unwrap().unwrap();
    let mut checkpoint = checkpoint_json(&tuple.checkpoint);
    let want_checkpoint = expected("checkpoint");
    let mut pending: Vec<Json> = tuple
        .pending_writes
        .iter()
        .map(|w| py_interrupts(&json!({w.channel.clone(): w.value.to_json().unwrap()})))
        .map(|w| {
            let (channel, value) = w.as_object().unwrap().iter().next().unwrap();
            json!([channel, value])
        })
        .collect();
    pending.sort_by_key(ToString::to_string);
    checkpoint["id"] = json!(tuple.checkpoint.id.to_string());
    let actual = json!({
        "checkpoint": checkpoint,
        "metadata": tuple.metadata.to_json(),
        "config": config_json(&tuple.config),
        "parent_config": tuple.parent_config.as_ref().map(config_json),
        "pending_writes": pending,
    });
    assert_trace_ids(
        &actual,
        &json!({
            "checkpoint": want_checkpoint,
            "metadata": expected("metadata"),
            "config": expected("config"),
            "parent_config": expected("parent_config"),
            "pending_writes": expected("pending_writes"),
        }),
    );
    let mut keys: Vec<&str> = checkpoint
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.push("ts");
    keys.sort_unstable();
    assert_eq!(json!(keys), expected("checkpoint_keys"));

    let all: Vec<Json> = saver
        .list(ListQuery::thread("cp"))
        .map(|t| {
            let m = t.unwrap().metadata.to_json();
            json!([m["step"], m["source"]])
        })
        .collect()
        .await;
    assert_eq!(json!(all), expected("list_all"));
    assert_eq!(
        json!(steps(&saver, ListQuery::thread("cp").limit(1)).await),
        expected("list_limit1")
    );
    let input_only = ListQuery::thread("cp").filter(json!({"source": "input"}));
    assert_eq!(
        json!(steps(&saver, input_only).await),
        expected("list_filter_input")
    );
    let before = ListQuery::thread("cp").before(tuple.config.checkpoint_id.clone().unwrap());
    assert_eq!(
        json!(steps(&saver, before).await),
        expected("list_before_latest")
    );
    let everything = saver.list(ListQuery::default()).count().await;
    assert_eq!(json!(everything), expected("list_no_config_all_threads"));
}

#[tokio::test]
async fn trace_32_by_hand() {
    let saver = InMemorySaver::new();
    let x = saver.get_next_version(None);
    let checkpoint = Checkpoint::empty().with_channel("x", Value::new(1), x);
    let versions = checkpoint.channel_versions.clone();
    let mut metadata = CheckpointMetadata::new(CheckpointSource::Update, 5);
    metadata.extra.insert("custom".into(), json!("meta"));
    let base = CheckpointConfig::thread("manual");
    let saved = saver
        .put(&base, checkpoint, metadata, versions)
        .await
        .unwrap();
    saver
        .put_writes(
            &saved,
            vec![("x".into(), Value::new(2)), ("y".into(), Value::new("w"))],
            "task-1",
            "",
        )
        .await
        .unwrap();
    let back = saver.get_tuple(&saved).await.unwrap().unwrap();
    let next_from_none = version(&saver.get_next_version(None));
    let next_from_7 = version(&saver.get_next_version(Some(&ChannelVersion::new(7, 0))));
    saver.delete_thread("manual").await.unwrap();
    let after_delete = saver
        .get_tuple(&base)
        .await
        .unwrap()
        .map(|_| json!("still there"));
    let manual = json!({
        "put_returns": config_json(&saved),
        "roundtrip_values": back.checkpoint.channel_values.iter().map(|(k, v)| (k.clone(), v.to_json().unwrap())).collect::<serde_json::Map<_, _>>(),
        "roundtrip_metadata": back.metadata.to_json(),
        "pending_writes": back.pending_writes.iter().map(|w| json!([w.task_id, w.channel, w.value.to_json().unwrap()])).collect::<Vec<_>>(),
        "next_version_from_none": next_from_none,
        "next_version_from_int_7": next_from_7,
        "after_delete_thread": after_delete,
    });
    assert_trace_ids(&manual, &expected("manual"));
}

/// The serializer round trips of `serde_roundtrip` that have Rust
/// counterparts: a JSON dict, an AI message and a `Send` come back equal and
/// of the same type through the savers' `JsonSerializer`.
#[test]
fn trace_32_serializer_round_trips() {
    use stategraph_checkpoint::serde::{JsonSerializer, Serializer};
    use stategraph_llm::Message;
    use stategraph_pregel::Send;

    fn round_trip(value: Value) -> Value {
        let encoded = JsonSerializer.dumps("c", &value).unwrap();
        JsonSerializer
            .loads("c", &encoded.tag, &encoded.bytes)
            .unwrap()
    }
    let dict = json!({"a": [1, 2.5, null, true]});
    let back = round_trip(Value::from_json(dict.clone()))
        .to_json()
        .unwrap();
    let dict_result = json!({"equal": back == dict, "type_back": if back.is_object() { "dict" } else { "other" }});

    let message = Message::ai("hi").with_id("m1");
    let back: Message = (*round_trip(Value::new(message.clone()))
        .decode::<Message>()
        .unwrap())
    .clone();
    let message_result = json!({"equal": back == message, "type_back": back.class_name()});

    let send = Send::new("node", json!({"k": 1}));
    let back = round_trip(Value::new(send.clone()))
        .decode_owned::<Send>()
        .unwrap();
    let send_equal =
        back.node == send.node && back.arg.to_json().unwrap() == send.arg.to_json().unwrap();
    let send_result = json!({"equal": send_equal, "type_back": "Send"});

    let expected = &fixture("32_checkpointer_api")["serde_roundtrip"];
    for (name, actual) in [
        ("dict", dict_result),
        ("message", message_result),
        ("send", send_result),
    ] {
        let mut recorded = expected[name].clone();
        recorded.as_object_mut().unwrap().remove("tag");
        assert_eq!(actual, recorded, "{name}");
    }
}

/// `{equal, type_back}` of a value read back untyped (the saver's `Value`)
/// and typed (decoded as `T`, whose Python name is `python_type`).
fn readings<T>(written: &T, back: &Value, python_type: &str) -> (Json, Json)
where
    T: serde::de::DeserializeOwned + PartialEq + Clone + Send + Sync + 'static,
{
    let untyped = json!({
        "equal": back.downcast_ref::<T>() == Some(written),
        "type_back": stategraph_llm::python_type_name(&back.to_json().unwrap()),
    });
    let typed = match back.clone().decode_owned::<T>() {
        Ok(read) => json!({"equal": read == *written, "type_back": python_type}),
        Err(err) => json!({"equal": false, "type_back": err.to_string()}),
    };
    (untyped, typed)
}

/// `serde_roundtrip`'s tuple, set and bytes, through real serializing
/// savers (see the module doc for how each field is read).
#[tokio::test]
async fn trace_32_tuples_sets_and_bytes() {
    use std::collections::{BTreeSet, HashSet};

    use stategraph_checkpoint::serde::JsonSerializer;
    use stategraph_checkpoint_sqlite::SqliteSaver;

    async fn round_trip<S: CheckpointSaver>(saver: &S) {
        let tuple: (i64, String) = (1, "x".into());
        let set = BTreeSet::from([3_i64]);
        let hash_set = HashSet::from([3_i64]);
        let bytes: Vec<u8> = vec![0, 1];
        let mut checkpoint = Checkpoint::empty();
        for (channel, value) in [
            ("tuple", Value::new(tuple.clone())),
            ("set", Value::new(set.clone())),
            ("hash_set", Value::new(hash_set.clone())),
            ("bytes", Value::new(bytes.clone())),
        ] {
            let version = saver.get_next_version(None);
            checkpoint = checkpoint.with_channel(channel, value, version);
        }
        let versions = checkpoint.channel_versions.clone();
        let metadata = CheckpointMetadata::new(CheckpointSource::Update, 0);
        let saved = saver
            .put(
                &CheckpointConfig::thread("serde"),
                checkpoint,
                metadata,
                versions,
            )
            .await
            .unwrap();
        let back = saver.get_tuple(&saved).await.unwrap().unwrap();
        let value = |channel: &str| back.checkpoint.channel_values[channel].clone();

        let expected = &fixture("32_checkpointer_api")["serde_roundtrip"];
        let recorded = |name: &str| {
            let mut recorded = expected[name].clone();
            recorded.as_object_mut().unwrap().remove("tag");
            recorded
        };
        let list = json!({"equal": false, "type_back": "list"});

        // LangGraph's tuple comes back a list; ours too, read untyped.
        let (untyped, typed) = readings(&tuple, &value("tuple"), "tuple");
        assert_eq!(untyped, recorded("tuple"));
        assert_eq!(typed, json!({"equal": true, "type_back": "tuple"}));

        // LangGraph's set and bytes keep their type; ours, read as theirs.
        for (untyped, typed) in [
            readings(&set, &value("set"), "set"),
            readings(&hash_set, &value("hash_set"), "set"),
        ] {
            assert_eq!(typed, recorded("set"));
            assert_eq!(untyped, list);
        }
        let (untyped, typed) = readings(&bytes, &value("bytes"), "bytes");
        assert_eq!(typed, recorded("bytes"));
        assert_eq!(untyped, list);
        assert_eq!(value("bytes").to_json().unwrap(), json!([0, 1]));
    }

    round_trip(&InMemorySaver::with_serializer(JsonSerializer)).await;
    round_trip(&SqliteSaver::in_memory().unwrap()).await;
}
