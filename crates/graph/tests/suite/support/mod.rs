//! Shared support for the golden-trace tests (`trace_NN_*.rs`): loading the
//! recorded LangGraph 1.2.22 observations, encoding our results the way the
//! Python `_common.py` encodes its own, normalising run-dependent ids, and
//! comparing with the README's rules (error classes exactly, error messages
//! loosely, chunks of one superstep as a multiset).
//!
//! Each test module uses only part of it.
#![allow(dead_code)]

use std::collections::HashMap;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{CompiledStateGraph, NodeError};
use stategraph_pregel::{Input, PregelError, StreamMode, StreamModes};

/// The recorded observations of a case, e.g. `fixture("01_last_value_conflict")`.
pub(crate) fn fixture(case: &str) -> Json {
    recorded("traces", case)
}

/// What LangGraph 1.2.22 did in one fidelity check (issue 23), recorded by
/// `fixtures/fidelity/record/<case>.py`.
pub(crate) fn fidelity(case: &str) -> Json {
    recorded("fidelity", case)
}

/// `fixtures/<dir>/<case>.json`.
fn recorded(dir: &str, case: &str) -> Json {
    let path = format!(
        "{}/../../fixtures/{dir}/{case}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// Streams `updates` and `values`; the chunks as `[mode, payload]`.
pub(crate) async fn chunks(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    cfg: &RunnableConfig,
) -> Vec<Json> {
    let modes = StreamModes::from([StreamMode::Updates, StreamMode::Values]);
    app.stream(input, cfg, modes)
        .map(|chunk| {
            let chunk = chunk.unwrap();
            json!([chunk.mode.as_str(), chunk.to_json()])
        })
        .collect()
        .await
}

/// Interrupt ids replaced by the value they ask for, so chunks compare.
pub(crate) fn named(mut chunk: Json) -> Json {
    if let Some(items) = chunk
        .pointer_mut("/1/__interrupt__")
        .and_then(Json::as_array_mut)
    {
        for item in items {
            *item = item["value"].clone();
        }
    }
    chunk
}

/// A sync node body as an async node (`std::future::Ready`).
pub(crate) fn node<F>(
    f: F,
) -> impl Fn(Json) -> std::future::Ready<Result<Json, NodeError>> + Send + Sync + 'static
where
    F: Fn(Json) -> Json + Send + Sync + 'static,
{
    move |state| std::future::ready(Ok(f(state)))
}

/// `{"$error": class, "message": message}` of a failed run, as Python's
/// `catch` records the exception `invoke` raised. A node's own error is what
/// Python raises (not a wrapper), so it is reported with the node's class and
/// message.
pub(crate) fn error_json(err: &PregelError) -> Json {
    match err {
        PregelError::Node { error, .. } => {
            json!({"$error": error.class(), "message": error.message()})
        }
        other => json!({"$error": other.class(), "message": other.to_string()}),
    }
}

/// Python's `catch(fn)`: `{"ok": value}` or `{"raised": {"$error", "message"}}`.
pub(crate) fn catch(result: Result<Value, PregelError>) -> Json {
    match result {
        Ok(value) => json!({"ok": value.to_json().unwrap_or(Json::Null)}),
        Err(err) => json!({"raised": error_json(&err)}),
    }
}

/// `invoke` as JSON (panics on a failed run).
pub(crate) async fn invoke(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
) -> Json {
    match app.invoke(input, config).await {
        Ok(value) => value.to_json().unwrap_or(Json::Null),
        Err(err) => panic!("the run failed: {err}"),
    }
}

/// `catch(lambda: app.invoke(input, config))`.
pub(crate) async fn catch_invoke(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
) -> Json {
    catch(app.invoke(input, config).await)
}

/// A streamed run: the chunks, each tagged with the superstep group it came
/// from, and the run's error if it failed.
pub(crate) struct Streamed {
    /// `(group, mode, payload)` in stream order. Groups are delimited by the
    /// `values` chunk every superstep that writes state emits last.
    pub(crate) chunks: Vec<(usize, StreamMode, Json)>,
    /// The error that ended the run.
    pub(crate) error: Option<PregelError>,
}

impl Streamed {
    /// The payloads (Python's `stream(..., stream_mode=mode)` with one mode).
    pub(crate) fn payloads(&self) -> Json {
        Json::Array(
            self.chunks
                .iter()
                .map(|(_, _, data)| data.clone())
                .collect(),
        )
    }

    /// `[mode, payload]` pairs (Python's `stream_mode=[...]` with several modes).
    pub(crate) fn tagged(&self) -> Json {
        Json::Array(
            self.chunks
                .iter()
                .map(|(_, mode, data)| json!([mode.as_str(), data]))
                .collect(),
        )
    }

    /// The payloads grouped by superstep.
    pub(crate) fn by_step(&self) -> Vec<Vec<Json>> {
        let mut groups: Vec<Vec<Json>> = Vec::new();
        for (group, _, data) in &self.chunks {
            while groups.len() <= *group {
                groups.push(Vec::new());
            }
            groups[*group].push(data.clone());
        }
        groups.retain(|g| !g.is_empty());
        groups
    }
}

/// Streams a run with `modes`. `values` chunks are always requested (they
/// close each superstep) and dropped from the result unless asked for.
pub(crate) async fn stream(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
    modes: impl Into<StreamModes>,
) -> Streamed {
    let modes: StreamModes = modes.into();
    let mut run = app.stream(input, config, modes.with(StreamMode::Values));
    let mut chunks = Vec::new();
    let mut group = 0;
    let mut error = None;
    while let Some(item) = run.next().await {
        match item {
            Ok(chunk) => {
                let is_values = chunk.mode == StreamMode::Values;
                if !is_values || modes.contains(StreamMode::Values) {
                    chunks.push((group, chunk.mode, chunk.to_json()));
                }
                if is_values {
                    group += 1;
                }
            }
            Err(err) => error = Some(err),
        }
    }
    Streamed { chunks, error }
}

/// The payloads of a one-mode stream of a run that must succeed.
pub(crate) async fn stream_ok(
    app: &CompiledStateGraph,
    input: impl Into<Input>,
    config: &RunnableConfig,
    mode: StreamMode,
) -> Streamed {
    let streamed = stream(app, input, config, mode).await;
    if let Some(err) = &streamed.error {
        panic!("the run failed: {err}");
    }
    streamed
}

/// Asserts that `actual` (grouped by superstep) equals the recorded chunk list
/// `expected`, where chunks of one superstep may come in any order (the README:
/// parallel tasks' chunks come out in completion order, which is unspecified)
/// but the supersteps themselves are in order.
#[track_caller]
pub(crate) fn assert_steps_eq(actual: &[Vec<Json>], expected: &Json) {
    let expected = expected.as_array().expect("the expected chunks are a list");
    let flat: Vec<&Json> = actual.iter().flatten().collect();
    assert_eq!(
        flat.len(),
        expected.len(),
        "chunk count differs\n actual: {}\n expected: {}",
        Json::Array(flat.iter().map(|j| (*j).clone()).collect()),
        Json::Array(expected.clone()),
    );
    let mut offset = 0;
    for (step, group) in actual.iter().enumerate() {
        let want = &expected[offset..offset + group.len()];
        offset += group.len();
        let mut got: Vec<String> = group.iter().map(Json::to_string).collect();
        let mut want: Vec<String> = want.iter().map(Json::to_string).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "superstep group {step} differs (as a multiset)");
    }
}

/// Asserts `actual == expected` under the README's rules: JSON equality
/// (object key order is not significant) except that inside `{"$error",
/// "message"}` objects the class must match exactly and the message only
/// loosely (see [`messages_match`]).
#[track_caller]
pub(crate) fn assert_trace(actual: &Json, expected: &Json) {
    if let Err(path) = compare(actual, expected, "$") {
        panic!(
            "trace mismatch at {path}\n actual:   {}\n expected: {}",
            serde_json::to_string_pretty(actual).unwrap_or_default(),
            serde_json::to_string_pretty(expected).unwrap_or_default(),
        );
    }
}

fn compare(actual: &Json, expected: &Json, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (Json::Object(a), Json::Object(e)) if e.contains_key("$error") => {
            if a.get("$error") != e.get("$error") {
                return Err(format!("{path}.$error"));
            }
            let text = |m: &serde_json::Map<String, Json>| {
                m.get("message")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            if messages_match(&text(a), &text(e)) {
                Ok(())
            } else {
                Err(format!("{path}.message"))
            }
        }
        (Json::Object(a), Json::Object(e)) => {
            if a.len() != e.len() || a.keys().any(|k| !e.contains_key(k)) {
                return Err(format!("{path} (keys)"));
            }
            for (key, value) in e {
                compare(&a[key], value, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Json::Array(a), Json::Array(e)) => {
            if a.len() != e.len() {
                return Err(format!("{path} (length)"));
            }
            for (i, (x, y)) in a.iter().zip(e).enumerate() {
                compare(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ if actual == expected => Ok(()),
        _ => Err(path.to_owned()),
    }
}

/// Error messages are informative (README): they must say the same thing,
/// not byte for byte. After dropping the "For troubleshooting, visit: <url>"
/// trailer, lower-casing and collapsing whitespace, one message must contain
/// the other (our messages may add context such as the state key).
pub(crate) fn messages_match(actual: &str, expected: &str) -> bool {
    fn clean(message: &str) -> String {
        let head = message
            .split("For troubleshooting, visit:")
            .next()
            .unwrap_or_default();
        // LangGraph's hint names Python's `Annotated`; ours names the Rust
        // ways to give a key a reducer (PORTING.md, deliberate differences).
        let head = head
            .split(" Use an Annotated key to handle multiple values.")
            .next()
            .unwrap_or_default();
        head.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }
    let (a, e) = (clean(actual), clean(expected));
    a.contains(&e) || e.contains(&a)
}

/// Python's `str()` of JSON data (`['a', 1]`, `{'k': True}`), for nodes that
/// format state values into strings as the case scripts do.
pub(crate) fn py_str(value: &Json) -> String {
    match value {
        Json::Null => "None".to_owned(),
        Json::Bool(true) => "True".to_owned(),
        Json::Bool(false) => "False".to_owned(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => format!("'{s}'"),
        Json::Array(items) => format!(
            "[{}]",
            items.iter().map(py_str).collect::<Vec<_>>().join(", ")
        ),
        Json::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("'{k}': {}", py_str(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Asserts that an observation carrying run-dependent ids matches the
/// recorded one: our raw ids go through [`normalise_ids`], and the recorded
/// placeholders are renumbered within the observation by
/// [`renumber_placeholders`] (the fixture numbers them across the whole file,
/// so `<task:20>` may be the first task of one observation). Only which ids
/// are equal is compared, as the README asks.
#[track_caller]
pub(crate) fn assert_trace_ids(actual: &Json, expected: &Json) {
    assert_trace(&normalise_ids(actual), &renumber_placeholders(expected));
}

/// Renumbers the placeholders of a recorded observation as if it were the
/// whole document: `<ckpt:N>` keep their relative (creation) order and start
/// at 1; other kinds are numbered by first appearance.
pub(crate) fn renumber_placeholders(value: &Json) -> Json {
    let mut found: Vec<(String, String, usize)> = Vec::new();
    walk_strings(value, &mut |s| {
        for (kind, n) in placeholders_in(s) {
            if !found.iter().any(|(k, _, m)| *k == kind && *m == n) {
                found.push((kind.clone(), format!("<{kind}:{n}>"), n));
            }
        }
    });
    let mut mapping: HashMap<String, String> = HashMap::new();
    let mut checkpoints: Vec<usize> = found
        .iter()
        .filter(|(kind, _, _)| kind == "ckpt")
        .map(|(_, _, n)| *n)
        .collect();
    checkpoints.sort_unstable();
    for (i, n) in checkpoints.iter().enumerate() {
        mapping.insert(format!("<ckpt:{n}>"), format!("<ckpt:{}>", i + 1));
    }
    let mut counters: HashMap<String, usize> = HashMap::new();
    for (kind, placeholder, _) in &found {
        if kind != "ckpt" {
            let n = counters.entry(kind.clone()).or_insert(0);
            *n += 1;
            mapping.insert(placeholder.clone(), format!("<{kind}:{n}>"));
        }
    }
    map_strings(value, &|s| {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(start) = rest.find('<') {
            out.push_str(&rest[..start]);
            let tail = &rest[start..];
            match tail
                .find('>')
                .and_then(|end| mapping.get(&tail[..=end]).map(|m| (end, m)))
            {
                Some((end, replacement)) => {
                    out.push_str(replacement);
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push('<');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        out
    })
}

/// The `(kind, N)` of the `<kind:N>` placeholders inside `s`, in order.
fn placeholders_in(s: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find('<') {
        let tail = &rest[start + 1..];
        if let Some(end) = tail.find('>')
            && let Some((kind, n)) = tail[..end].split_once(':')
            && ["ckpt", "task", "interrupt", "uuid", "hex"].contains(&kind)
            && let Ok(n) = n.parse()
        {
            out.push((kind.to_owned(), n));
        }
        rest = tail;
    }
    out
}

fn map_strings(value: &Json, f: &impl Fn(&str) -> String) -> Json {
    match value {
        Json::String(s) => Json::String(f(s)),
        Json::Array(items) => Json::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Json::Object(map) => {
            Json::Object(map.iter().map(|(k, v)| (f(k), map_strings(v, f))).collect())
        }
        other => other.clone(),
    }
}

/// Replaces run-dependent ids by the README's placeholders: checkpoint ids
/// (values of `checkpoint_id` keys) become `<ckpt:N>` in sorted (= creation)
/// order; task ids (the `id` of task payloads, and the suffix of namespace
/// segments `node:<id>`) `<task:N>`; other UUIDs `<uuid:N>` and other 32-hex
/// strings `<hex:N>`, numbered by first appearance (depth-first, keys in
/// document order); interrupt ids (the `id` inside `{"$interrupt": {...}}`)
/// `<interrupt:N>`. Caveat: without serde_json's `preserve_order` feature the
/// keys of one object are walked sorted, not in Python's insertion order; that
/// only matters for an object holding several different ids.
pub(crate) fn normalise_ids(value: &Json) -> Json {
    let mut kinds: HashMap<String, &'static str> = HashMap::new();
    note_kinds(value, &mut kinds);
    let mut found: Vec<String> = Vec::new();
    walk_strings(value, &mut |s| {
        for id in ids_in(s) {
            if !found.contains(&id) {
                found.push(id);
            }
        }
    });
    let mut mapping: HashMap<String, String> = HashMap::new();
    let mut checkpoints: Vec<&String> = found
        .iter()
        .filter(|id| kinds.get(*id) == Some(&"ckpt"))
        .collect();
    checkpoints.sort();
    for (i, id) in checkpoints.into_iter().enumerate() {
        mapping.insert(id.clone(), format!("<ckpt:{}>", i + 1));
    }
    let mut counters: HashMap<&str, usize> = HashMap::new();
    for id in &found {
        if mapping.contains_key(id) {
            continue;
        }
        let kind = kinds
            .get(id)
            .copied()
            .unwrap_or(if id.len() == 36 { "uuid" } else { "hex" });
        let n = counters.entry(kind).or_insert(0);
        *n += 1;
        mapping.insert(id.clone(), format!("<{kind}:{n}>"));
    }
    replace_ids(value, &mapping)
}

fn note_kinds(value: &Json, kinds: &mut HashMap<String, &'static str>) {
    match value {
        Json::Object(map) => {
            if let Some(Json::String(id)) = map.get("$interrupt").and_then(|i| i.get("id")) {
                kinds.entry(id.clone()).or_insert("interrupt");
            }
            let task_like = map.contains_key("name")
                && ["triggers", "result", "interrupts"]
                    .iter()
                    .any(|k| map.contains_key(*k));
            for (key, item) in map {
                if let Json::String(s) = item {
                    if key == "checkpoint_id" {
                        kinds.entry(s.clone()).or_insert("ckpt");
                    } else if key == "id" && task_like {
                        kinds.entry(s.clone()).or_insert("task");
                    }
                }
                note_kinds(item, kinds);
            }
        }
        Json::Array(items) => items.iter().for_each(|item| note_kinds(item, kinds)),
        Json::String(s) => {
            // Namespace segments "node:<task id>", possibly joined with '|'.
            for segment in s.split('|') {
                if let Some((_, id)) = segment.split_once(':')
                    && is_uuid(id)
                {
                    kinds.entry(id.to_owned()).or_insert("task");
                }
            }
        }
        _ => {}
    }
}

fn walk_strings(value: &Json, f: &mut impl FnMut(&str)) {
    match value {
        Json::String(s) => f(s),
        Json::Array(items) => items.iter().for_each(|item| walk_strings(item, f)),
        Json::Object(map) => {
            for (key, item) in map {
                f(key);
                walk_strings(item, f);
            }
        }
        _ => {}
    }
}

fn replace_ids(value: &Json, mapping: &HashMap<String, String>) -> Json {
    map_strings(value, &|s| {
        let mut out = s.to_owned();
        for id in ids_in(s) {
            if let Some(placeholder) = mapping.get(&id) {
                out = out.replace(&id, placeholder);
            }
        }
        out
    })
}

fn is_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| is_hex(p))
}

/// The UUIDs and standalone 32-hex strings inside `s`, in order.
fn ids_in(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let hexish = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-';
    let mut ids = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !hexish(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && hexish(bytes[i]) {
            i += 1;
        }
        let run = &s[start..i];
        // A run of hex digits and dashes may hold a UUID or a 32-hex id.
        let mut j = 0;
        while j < run.len() {
            if run.len() - j >= 36 && is_uuid(&run[j..j + 36]) {
                ids.push(run[j..j + 36].to_owned());
                j += 36;
            } else {
                j += 1;
            }
        }
        for piece in run.split('-') {
            if piece.len() == 32 && is_hex(piece) {
                ids.push(piece.to_owned());
            }
        }
    }
    ids
}

/// Our JSON with interrupts encoded as `_common.py` encodes them: every
/// item of an `__interrupt__` list (and of a task's `interrupts`) becomes
/// `{"$interrupt": {"value", "id"}}`.
pub(crate) fn py_interrupts(value: &Json) -> Json {
    let wrap = |items: &Json| match items {
        Json::Array(items) => Json::Array(
            items
                .iter()
                .map(|item| json!({"$interrupt": py_interrupts(item)}))
                .collect(),
        ),
        other => py_interrupts(other),
    };
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .map(|(key, item)| {
                    let item = if key == "__interrupt__" || key == "interrupts" {
                        wrap(item)
                    } else {
                        py_interrupts(item)
                    };
                    (key.clone(), item)
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(py_interrupts).collect()),
        other => other.clone(),
    }
}

/// A `StateSnapshot` as `_common.py`'s `snapshot` encodes it (no
/// `created_at`; configs under `configurable`).
pub(crate) fn snapshot_json(snapshot: &stategraph_graph::StateSnapshot) -> Json {
    py_interrupts(&snapshot_raw(snapshot))
}

/// [`snapshot_json`] with interrupts as we serialize them.
fn snapshot_raw(snapshot: &stategraph_graph::StateSnapshot) -> Json {
    let config = |c: &stategraph_checkpoint::CheckpointConfig| {
        json!({"configurable": {
            "thread_id": c.thread_id,
            "checkpoint_ns": c.checkpoint_ns,
            "checkpoint_id": c.checkpoint_id.as_ref().map(|id| id.to_string()),
        }})
    };
    let tasks: Vec<Json> = snapshot
        .tasks
        .iter()
        .map(|task| {
            let mut out = json!({
                "id": task.id,
                "name": task.name,
                "path": task.path,
                "interrupts": task.interrupts.iter().map(|i| serde_json::to_value(i).unwrap()).collect::<Vec<_>>(),
            });
            if let Some(error) = &task.error {
                out["error"] = json!(error);
            }
            if let Some(state) = &task.state {
                out["state"] = json!({"configurable": {
                    "thread_id": state.thread_id,
                    "checkpoint_ns": state.checkpoint_ns,
                }});
            }
            if let Some(subgraph) = &task.subgraph {
                out["state"] = snapshot_raw(subgraph);
            }
            if let Some(result) = &task.result {
                out["result"] = result.to_json().unwrap();
            }
            out
        })
        .collect();
    json!({
        "values": snapshot.values.to_json().unwrap(),
        "next": snapshot.next,
        "config": config(&snapshot.config),
        "metadata": snapshot.metadata.as_ref().map(|m| m.to_json()),
        "parent_config": snapshot.parent_config.as_ref().map(config),
        "tasks": tasks,
        "interrupts": snapshot.interrupts.iter().map(|i| serde_json::to_value(i).unwrap()).collect::<Vec<_>>(),
    })
}

/// `_common.py`'s `history(app, config)`: every snapshot, newest first.
pub(crate) async fn history_json(app: &CompiledStateGraph, config: &RunnableConfig) -> Json {
    let history = app
        .get_state_history(config, stategraph_checkpoint::ListQuery::default())
        .await
        .unwrap_or_else(|err| panic!("get_state_history failed: {err}"));
    Json::Array(history.iter().map(snapshot_json).collect())
}

/// `[step, source, next, log]` of each checkpoint of a thread, newest first
/// (the summary several cases record).
pub(crate) async fn log_history(app: &CompiledStateGraph, config: &RunnableConfig) -> Json {
    let history = app
        .get_state_history(config, stategraph_checkpoint::ListQuery::default())
        .await
        .unwrap_or_else(|err| panic!("get_state_history failed: {err}"));
    Json::Array(
        history
            .into_iter()
            .map(|s| {
                let metadata = s.metadata.map(|m| m.to_json()).unwrap_or_default();
                let values = s.values.to_json().unwrap_or_default();
                json!([metadata["step"], metadata["source"], s.next, values["log"]])
            })
            .collect(),
    )
}

/// Rewrites every message in `value` (our serde form, `{"type": "ai",
/// "content", ...}`) into the trace encoding of `_common.message`: the
/// class name as `$msg`, `content`, and the other public fields only when
/// not empty (`status` only when not `success`; `response_metadata`
/// dropped).
pub(crate) fn py_messages(value: &Json) -> Json {
    const FIELDS: [&str; 12] = [
        "content",
        "id",
        "name",
        "tool_calls",
        "invalid_tool_calls",
        "tool_call_chunks",
        "tool_call_id",
        "status",
        "artifact",
        "additional_kwargs",
        "usage_metadata",
        "chunk_position",
    ];
    let class = |kind: &str| match kind {
        "human" => Some("HumanMessage"),
        "ai" => Some("AIMessage"),
        "system" => Some("SystemMessage"),
        "tool" => Some("ToolMessage"),
        "remove" => Some("RemoveMessage"),
        "AIMessageChunk" => Some("AIMessageChunk"),
        _ => None,
    };
    match value {
        Json::Object(map) => {
            let kind = map.get("type").and_then(Json::as_str).and_then(class);
            match kind {
                Some(kind) if map.contains_key("content") => {
                    let mut out = serde_json::Map::new();
                    out.insert("$msg".into(), kind.into());
                    for field in FIELDS {
                        let Some(v) = map.get(field) else { continue };
                        let empty = v.is_null()
                            || v.as_array().is_some_and(Vec::is_empty)
                            || v.as_object().is_some_and(serde_json::Map::is_empty)
                            || v.as_str() == Some("");
                        if (empty && field != "content") || (field == "status" && v == "success") {
                            continue;
                        }
                        out.insert(field.into(), py_messages(v));
                    }
                    Json::Object(out)
                }
                _ => Json::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), py_messages(v)))
                        .collect(),
                ),
            }
        }
        Json::Array(items) => Json::Array(items.iter().map(py_messages).collect()),
        other => other.clone(),
    }
}

/// The throwaway cluster `cargo xtask ci` starts (`None` outside CI when
/// the variable is unset: the PostgreSQL part is then skipped, loudly).
#[allow(clippy::print_stderr)] // Says that the PostgreSQL part did not run.
pub(crate) fn postgres_url() -> Option<String> {
    match std::env::var("STATEGRAPH_TEST_POSTGRES_URL") {
        Ok(url) => Some(url),
        // CI must not pass without PostgreSQL.
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("STATEGRAPH_TEST_POSTGRES_URL is not set under CI")
        }
        Err(_) => {
            eprintln!("STATEGRAPH_TEST_POSTGRES_URL is not set: PostgreSQL part not run");
            None
        }
    }
}

/// A `tracing` collector keeping the messages of the events `keep` accepts.
#[derive(Clone)]
pub(crate) struct EventLog {
    keep: fn(&tracing::Metadata<'_>) -> bool,
    messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl EventLog {
    pub(crate) fn new(keep: fn(&tracing::Metadata<'_>) -> bool) -> Self {
        Self {
            keep,
            messages: std::sync::Arc::default(),
        }
    }

    /// The messages kept so far.
    pub(crate) fn messages(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

impl tracing::Subscriber for EventLog {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        if (self.keep)(event.metadata()) {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.messages.lock().unwrap().push(message.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Runs `run` with a collector of warnings; its output and their messages.
pub(crate) async fn with_warnings<T>(
    run: impl std::future::Future<Output = T>,
) -> (T, Vec<String>) {
    let log = EventLog::new(|metadata| *metadata.level() == tracing::Level::WARN);
    let dispatch = tracing::Dispatch::new(log.clone());
    let _guard = tracing::dispatcher::set_default(&dispatch);
    let out = run.await;
    (out, log.messages())
}

/// The fidelity recorders' `stable_ids`: a string that is a UUID becomes
/// `<ckpt>`, a UUID inside a longer string (a namespace `node:<id>`)
/// `<task-id>`, in values and object keys alike.
pub(crate) fn stable_ids(value: &Json) -> Json {
    let text = |s: &str| {
        if is_uuid(s) {
            return "<ckpt>".to_owned();
        }
        let mut out = s.to_owned();
        for id in ids_in(s) {
            out = out.replace(&id, "<task-id>");
        }
        out
    };
    match value {
        Json::String(s) => Json::String(text(s)),
        Json::Array(items) => items.iter().map(stable_ids).collect(),
        Json::Object(map) => map
            .iter()
            .map(|(key, item)| (text(key), stable_ids(item)))
            .collect(),
        other => other.clone(),
    }
}
