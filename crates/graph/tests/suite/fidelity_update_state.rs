//! Issue 23, item 6: `update_state` and `bulk_update_state` in full, each
//! compared with LangGraph 1.2.22 as `fixtures/fidelity/record/
//! update_state_full.py` recorded it: `as_node` END (clear the tasks),
//! `__input__`, `__copy__` (with and without updates), task ids and where
//! an update's writes are saved, several supersteps, their errors, and
//! updating a subgraph through its namespaced config.
//!
//! Ids are made stable as the recorder does (see `Ids`). Pending writes
//! are compared per checkpoint as sets (sorted by task and channel): the
//! savers order them differently. The config an update returns is our
//! `CheckpointConfig` (thread, namespace, id), without the recorder's
//! `checkpoint_map`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{CheckpointConfig, CheckpointSaver, InMemorySaver, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    COPY, CompileOptions, CompiledStateGraph, END, INPUT, NodeError, START, Schema, StateGraph,
    StateSnapshot, StateUpdate, StreamMode, TaskContext,
};
use stategraph_pregel::{Command, Input, PregelError};

use crate::support;

fn expected(scenario: &str) -> Json {
    support::fidelity("update_state_full")[scenario].clone()
}

/// A graph and the saver it checkpoints to.
struct App {
    graph: CompiledStateGraph,
    saver: Arc<InMemorySaver>,
}

fn schema() -> Schema {
    Schema::new().last_value("x").append("log")
}

fn compile(graph: StateGraph, before: &[&str]) -> App {
    let saver = Arc::new(InMemorySaver::new());
    let graph = graph
        .compile_with(
            CompileOptions::new()
                .shared_checkpointer(saver.clone())
                .interrupt_before(before.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()),
        )
        .unwrap();
    App { graph, saver }
}

fn add_logger(graph: &mut StateGraph, name: &'static str) {
    if name == "ask" {
        graph
            .add_node("ask", |_: Json, ctx: TaskContext| async move {
                let answer = ctx.interrupt("q")?.to_json()?;
                let answer = answer.as_str().unwrap_or_default().to_owned();
                Ok::<_, NodeError>(json!({"log": [format!("ask:{answer}")]}))
            })
            .unwrap();
    } else {
        graph
            .add_node(name, move |_: Json| async move {
                Ok::<_, NodeError>(json!({"log": [name]}))
            })
            .unwrap();
    }
}

/// `START -> names[0] -> ...`; `ask` interrupts, the others log their name.
fn chain(names: &[&'static str], before: &[&str]) -> App {
    let mut graph = StateGraph::new(schema());
    let mut previous = START;
    for name in names {
        add_logger(&mut graph, name);
        graph.add_edge(previous, name).unwrap();
        previous = name;
    }
    compile(graph, before)
}

/// `START -> fast`, `START -> ask`, both `-> join`.
fn parallel() -> App {
    let mut graph = StateGraph::new(schema());
    for name in ["fast", "ask", "join"] {
        add_logger(&mut graph, name);
    }
    for name in ["fast", "ask"] {
        graph.add_edge(START, name).unwrap();
        graph.add_edge(name, "join").unwrap();
    }
    compile(graph, &[])
}

/// Parent `START -> sub -> after`; sub is `START -> inner1 -> inner2`,
/// and inner2 interrupts.
fn subgraph_parent() -> App {
    let append = |suffix: &'static str| {
        move |s: Json| async move {
            let x = s["x"].as_str().unwrap_or_default();
            Ok::<_, NodeError>(json!({"x": format!("{x}{suffix}")}))
        }
    };
    let mut sub = StateGraph::new(schema());
    sub.add_node("inner1", append("|inner1")).unwrap();
    sub.add_node("inner2", |s: Json, ctx: TaskContext| async move {
        let answer = ctx.interrupt("sub-q")?.to_json()?;
        let x = s["x"].as_str().unwrap_or_default();
        Ok::<_, NodeError>(
            json!({"x": format!("{x}|inner2:{}", answer.as_str().unwrap_or_default())}),
        )
    })
    .unwrap();
    sub.add_edge(START, "inner1").unwrap();
    sub.add_edge("inner1", "inner2").unwrap();
    let mut parent = StateGraph::new(schema());
    parent.add_node("sub", sub.compile().unwrap()).unwrap();
    parent.add_node("after", append("|after")).unwrap();
    parent.add_edge(START, "sub").unwrap();
    parent.add_edge("sub", "after").unwrap();
    compile(parent, &[])
}

fn thread(name: &str) -> RunnableConfig {
    RunnableConfig::thread(name)
}

fn at(config: &CheckpointConfig) -> RunnableConfig {
    let mut out =
        RunnableConfig::thread(&config.thread_id).with_checkpoint_ns(config.checkpoint_ns.clone());
    out.configurable
        .checkpoint_id
        .clone_from(&config.checkpoint_id);
    out
}

/// The thread's (or namespace's) latest state.
fn latest(config: &RunnableConfig) -> RunnableConfig {
    thread(config.thread_id().unwrap()).with_checkpoint_ns(config.checkpoint_ns().to_owned())
}

fn update(values: Option<Json>, as_node: Option<&str>) -> StateUpdate {
    let mut update = StateUpdate::default();
    update.values = values.map(Value::from_json);
    update.as_node = as_node.map(str::to_owned);
    update
}

fn uuid5(checkpoint: &str, name: &str) -> String {
    let namespace = uuid::Uuid::parse_str(checkpoint).unwrap();
    uuid::Uuid::new_v5(&namespace, name.as_bytes()).to_string()
}

/// The recorder's stable names for a thread's ids: checkpoints by position
/// in their namespace (`ckpt#1` the oldest; `sub/ckpt#1` in a subgraph's),
/// the task a checkpoint plans for a node `<node>@<checkpoint>`, the id an
/// update with no task to reuse gets `update@`/`update<i>@<checkpoint>`,
/// an `__input__` update's `input@<checkpoint>`.
struct Ids(HashMap<String, String>);

impl Ids {
    async fn of(app: &App, thread: &str) -> Self {
        let mut query = ListQuery::default();
        query.thread_id = Some(thread.to_owned());
        let tuples: Vec<_> = app.saver.list(query).map(|t| t.unwrap()).collect().await;
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for t in &tuples {
            let ns = &t.config.checkpoint_ns;
            let prefix = if ns.is_empty() {
                String::new()
            } else {
                let nodes: Vec<&str> = ns
                    .split('|')
                    .map(|p| p.split(':').next().unwrap())
                    .collect();
                format!("{}/", nodes.join("|"))
            };
            groups
                .entry(prefix)
                .or_default()
                .push(t.checkpoint.id.to_string());
        }
        let mut names = HashMap::new();
        names.insert(
            stategraph_pregel::names::NULL_TASK_ID.to_owned(),
            "null-task".to_owned(),
        );
        for (prefix, mut ids) in groups {
            ids.sort();
            for (i, id) in ids.into_iter().enumerate() {
                names.insert(id, format!("{prefix}ckpt#{}", i + 1));
            }
        }
        for t in &tuples {
            let id = t.checkpoint.id.to_string();
            let label = names[&id].clone();
            names.insert(uuid5(&id, "__interrupt__"), format!("update@{label}"));
            for i in 1..4 {
                names.insert(
                    uuid5(&id, &format!("__interrupt__:{i}")),
                    format!("update{i}@{label}"),
                );
            }
            names.insert(uuid5(&id, "__input__"), format!("input@{label}"));
            let state = app.graph.get_state(&at(&t.config)).await.unwrap();
            for task in state.tasks {
                names
                    .entry(task.id)
                    .or_insert(format!("{}@{label}", task.name));
            }
        }
        Self(names)
    }

    fn stable(&self, value: &Json) -> Json {
        let text = |s: &str| -> String {
            if let Some(name) = self.0.get(s) {
                return name.clone();
            }
            match support::stable_ids(&Json::String(s.to_owned())) {
                Json::String(stable) if stable == "<ckpt>" => "<uuid>".to_owned(),
                Json::String(stable) => stable,
                _ => unreachable!(),
            }
        };
        match value {
            Json::String(s) => Json::String(text(s)),
            Json::Array(items) => items.iter().map(|v| self.stable(v)).collect(),
            Json::Object(map) => map.iter().map(|(k, v)| (text(k), self.stable(v))).collect(),
            other => other.clone(),
        }
    }
}

fn asked(items: &[stategraph_graph::Interrupt]) -> Vec<Json> {
    items.iter().map(|i| i.value.to_json().unwrap()).collect()
}

fn id_of(config: Option<&CheckpointConfig>) -> Json {
    config
        .and_then(|c| c.checkpoint_id.as_ref())
        .map_or(Json::Null, |id| json!(id.to_string()))
}

/// The recorder's `state`: the latest snapshot, its metadata, id and parent.
async fn state(app: &App, config: &RunnableConfig) -> Json {
    let ids = Ids::of(app, config.thread_id().unwrap()).await;
    let s = app.graph.get_state(&latest(config)).await.unwrap();
    let metadata = s.metadata.clone().unwrap();
    ids.stable(&json!({
        "values": s.values.to_json().unwrap(),
        "next": s.next,
        "interrupts": asked(&s.interrupts),
        "tasks": s.tasks.iter().map(|t| json!({
            "name": t.name,
            "interrupts": asked(&t.interrupts),
            "result": t.result.as_ref().map(|r| r.to_json().unwrap()),
            "error": t.error,
        })).collect::<Vec<_>>(),
        "metadata": {
            "source": serde_json::to_value(metadata.source).unwrap(),
            "step": metadata.step,
            "parents": metadata.parents.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect::<serde_json::Map<_, _>>(),
        },
        "id": id_of(Some(&s.config)),
        "parent": id_of(s.parent_config.as_ref()),
    }))
}

fn history_entry(s: &StateSnapshot) -> Json {
    let metadata = s.metadata.clone().unwrap();
    json!({
        "id": id_of(Some(&s.config)),
        "source": serde_json::to_value(metadata.source).unwrap(),
        "step": metadata.step,
        "next": s.next,
        "values": s.values.to_json().unwrap(),
        "parent": id_of(s.parent_config.as_ref()),
        "tasks": s.tasks.iter().map(|t| json!({
            "id": t.id,
            "name": t.name,
            "result": t.result.as_ref().map(|r| r.to_json().unwrap()),
            "interrupts": asked(&t.interrupts),
        })).collect::<Vec<_>>(),
    })
}

async fn history(app: &App, config: &RunnableConfig) -> Json {
    let ids = Ids::of(app, config.thread_id().unwrap()).await;
    let history = app
        .graph
        .get_state_history(&latest(config), ListQuery::default())
        .await
        .unwrap();
    ids.stable(&history.iter().map(history_entry).collect())
}

/// A pending write's value as the recorder shows it (interrupts by the
/// value they ask for).
fn write_value(channel: &str, value: &Value) -> Json {
    let json = value.to_json().unwrap();
    if channel != "__interrupt__" {
        return json;
    }
    json.as_array()
        .unwrap()
        .iter()
        .map(|i| json!({"interrupt": i["value"]}))
        .collect()
}

/// Each checkpoint's pending writes, by checkpoint name, as sorted
/// `[task, channel, value]` triples.
async fn writes(app: &App, config: &RunnableConfig) -> BTreeMap<String, Json> {
    let ids = Ids::of(app, config.thread_id().unwrap()).await;
    let mut query = ListQuery::default();
    query.thread_id = config.thread_id().map(str::to_owned);
    let tuples: Vec<_> = app.saver.list(query).map(|t| t.unwrap()).collect().await;
    let mut out = BTreeMap::new();
    for t in tuples {
        let mut triples: Vec<Json> = t
            .pending_writes
            .iter()
            .map(|w| {
                ids.stable(&json!([
                    w.task_id,
                    w.channel,
                    write_value(&w.channel, &w.value)
                ]))
            })
            .collect();
        triples.sort_by_key(|w| format!("{}|{}", w[0], w[1]));
        out.insert(
            ids.stable(&json!(t.checkpoint.id.to_string())).to_string(),
            json!(triples),
        );
    }
    out
}

fn recorded_writes(recorded: &Json) -> BTreeMap<String, Json> {
    recorded
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let mut triples = entry["pending_writes"].as_array().unwrap().clone();
            triples.sort_by_key(|w| format!("{}|{}", w[0], w[1]));
            (entry["checkpoint"].to_string(), json!(triples))
        })
        .collect()
}

async fn conf(app: &App, returned: &CheckpointConfig) -> Json {
    let ids = Ids::of(app, &returned.thread_id).await;
    ids.stable(&json!({
        "thread_id": returned.thread_id,
        "checkpoint_ns": returned.checkpoint_ns,
        "checkpoint_id": id_of(Some(returned)),
    }))
}

/// The recorder's `after_update`: the returned config, the state and the
/// history, and (when recorded) the pending writes.
async fn check_after_update(
    app: &App,
    returned: &CheckpointConfig,
    config: &RunnableConfig,
    recorded: &Json,
) {
    let mut config_recorded = recorded["config"].clone();
    config_recorded
        .as_object_mut()
        .unwrap()
        .remove("checkpoint_map");
    assert_eq!(
        conf(app, returned).await,
        config_recorded,
        "returned config"
    );
    assert_eq!(state(app, config).await, recorded["state"], "state");
    assert_eq!(history(app, config).await, recorded["history"], "history");
    if !recorded["writes"].is_null() {
        assert_eq!(
            writes(app, config).await,
            recorded_writes(&recorded["writes"]),
            "writes"
        );
    }
}

async fn invoke(app: &App, input: impl Into<Input>, config: &RunnableConfig) -> Json {
    let ids = Ids::of(app, config.thread_id().unwrap()).await;
    let out = app.graph.invoke(input, config).await.unwrap();
    ids.stable(&out.to_json().unwrap())
}

async fn stream_updates(app: &App, config: &RunnableConfig) -> Json {
    let chunks: Vec<Json> = app
        .graph
        .stream(Input::Resume, config, StreamMode::Updates)
        .map(|c| c.unwrap().to_json())
        .collect()
        .await;
    json!(chunks)
}

fn error(result: Result<CheckpointConfig, PregelError>) -> Json {
    match result {
        Ok(_) => json!({"error": null}),
        Err(err) => json!({"error": err.class(), "message": err.to_string()}),
    }
}

async fn start(app: &App, name: &str) -> RunnableConfig {
    let config = thread(name);
    app.graph
        .invoke(json!({"log": ["in"]}), &config)
        .await
        .unwrap();
    config
}

async fn checkpoints(app: &App, config: &RunnableConfig) -> usize {
    app.graph
        .get_state_history(config, ListQuery::default())
        .await
        .unwrap()
        .len()
}

/// One `as_node=END` case: a thread paused, cleared, compared, resumed;
/// and a second thread cleared, then streamed.
async fn end_case(app: &App, thread: &str, scenario: &str) {
    let recorded = expected(scenario);
    let cfg = start(app, thread).await;
    assert_eq!(state(app, &cfg).await, recorded["paused"]);
    if !recorded["paused_writes"].is_null() {
        assert_eq!(
            writes(app, &cfg).await,
            recorded_writes(&recorded["paused_writes"])
        );
    }
    let returned = app.graph.update_state(&cfg, None, Some(END)).await.unwrap();
    check_after_update(app, &returned, &cfg, &recorded).await;
    assert_eq!(
        invoke(app, Input::Resume, &cfg).await,
        recorded["invoke_after"]
    );
    if !recorded["history_after_invoke"].is_null() {
        assert_eq!(history(app, &cfg).await, recorded["history_after_invoke"]);
    }
    let cfg = start(app, &format!("{thread}-stream")).await;
    app.graph.update_state(&cfg, None, Some(END)).await.unwrap();
    assert_eq!(stream_updates(app, &cfg).await, recorded["stream_after"]);
}

/// `as_node=END` on a thread paused at an interrupt, at a static
/// breakpoint, and after parallel tasks of which one finished.
#[tokio::test]
async fn update_state_as_end_clears_the_tasks() {
    end_case(
        &chain(&["a", "ask", "b"], &[]),
        "end-interrupt",
        "end_on_interrupt",
    )
    .await;
    end_case(
        &chain(&["a", "b"], &["b"]),
        "end-breakpoint",
        "end_on_breakpoint",
    )
    .await;
    end_case(&parallel(), "end-parallel", "end_on_parallel").await;

    let recorded = expected("end_errors");
    let app = chain(&["a", "ask", "b"], &[]);
    let cfg = start(&app, "end-errors").await;
    let bulk = |updates: Vec<StateUpdate>| app.graph.bulk_update_state(&cfg, vec![updates]);
    let found = json!({
        "with_values": error(app.graph.update_state(&cfg, Some(Value::from_json(json!({"log": ["x"]}))), Some(END)).await),
        "two_clears_in_superstep": error(bulk(vec![update(None, Some(END)), update(None, Some(END))]).await),
        "clear_then_node_update_in_superstep": error(
            bulk(vec![update(None, Some(END)), update(Some(json!({"log": ["x"]})), Some("b"))]).await
        ),
        "checkpoints_after": checkpoints(&app, &cfg).await,
    });
    assert_eq!(found, recorded);
}

/// `as_node=__input__`: on a finished thread, on a fresh one, and its errors.
#[tokio::test]
async fn update_state_as_input_writes_input() {
    let recorded = expected("input");
    let app = chain(&["a", "b"], &[]);
    let input = |log: &str| Some(Value::from_json(json!({"log": [log]})));

    let cfg = start(&app, "input-finished").await;
    let returned = app
        .graph
        .update_state(&cfg, input("again"), Some(INPUT))
        .await
        .unwrap();
    let case = &recorded["finished"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );
    assert_eq!(history(&app, &cfg).await, case["history_after_invoke"]);

    let cfg = thread("input-fresh");
    let returned = app
        .graph
        .update_state(&cfg, input("new"), Some(INPUT))
        .await
        .unwrap();
    let case = &recorded["fresh"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );
    assert_eq!(history(&app, &cfg).await, case["history_after_invoke"]);

    let cfg = start(&app, "input-none").await;
    assert_eq!(
        error(app.graph.update_state(&cfg, None, Some(INPUT)).await),
        recorded["values_none"]
    );
    let cfg = start(&app, "input-empty").await;
    let returned = app
        .graph
        .update_state(&cfg, Some(Value::from_json(json!({}))), Some(INPUT))
        .await
        .unwrap();
    let case = &recorded["values_empty_dict"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );
    assert_eq!(
        error(
            app.graph
                .update_state(&thread("input-fresh-none"), None, Some(INPUT))
                .await
        ),
        recorded["fresh_values_none"]
    );
    let cfg = start(&app, "input-two").await;
    let two = vec![
        update(Some(json!({"log": ["i1"]})), Some(INPUT)),
        update(Some(json!({"log": ["i2"]})), Some(INPUT)),
    ];
    assert_eq!(
        error(app.graph.bulk_update_state(&cfg, vec![two]).await),
        recorded["two_in_superstep"]
    );
}

/// `as_node=__copy__`: of the latest and of a past checkpoint, with
/// updates, and its errors.
#[tokio::test]
async fn update_state_as_copy_forks_a_sibling() {
    let recorded = expected("copy");
    let app = chain(&["a", "b"], &[]);

    let cfg = start(&app, "copy-latest").await;
    let returned = app
        .graph
        .update_state(&cfg, None, Some(COPY))
        .await
        .unwrap();
    let case = &recorded["latest"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );

    let cfg = start(&app, "copy-past").await;
    let history_now = app
        .graph
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap();
    let past = history_now
        .iter()
        .find(|s| s.metadata.as_ref().unwrap().step == Some(0))
        .unwrap();
    let past = at(&past.config);
    let returned = app
        .graph
        .update_state(&past, None, Some(COPY))
        .await
        .unwrap();
    let case = &recorded["past"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &at(&returned)).await,
        case["invoke_returned_config"]
    );
    assert_eq!(history(&app, &cfg).await, case["history_after_invoke"]);

    assert_eq!(
        error(
            app.graph
                .update_state(&thread("copy-fresh"), None, Some(COPY))
                .await
        ),
        recorded["fresh"]
    );
    let two = vec![update(None, Some(COPY)), update(None, Some(COPY))];
    assert_eq!(
        error(app.graph.bulk_update_state(&cfg, vec![two]).await),
        recorded["two_in_superstep"]
    );

    let app = chain(&["a", "b"], &["b"]);
    let cfg = start(&app, "copy-list").await;
    let pairs = json!([[{"log": ["cloned-b"]}, "b"]]);
    let returned = app
        .graph
        .update_state(&cfg, Some(Value::from_json(pairs)), Some(COPY))
        .await
        .unwrap();
    let case = &recorded["with_updates"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );
    let cfg = start(&app, "copy-list-two").await;
    let pairs = json!([[{"log": ["cloned-b"]}, "b"], [{"log": ["cloned-a"]}, "a"]]);
    let returned = app
        .graph
        .update_state(&cfg, Some(Value::from_json(pairs)), Some(COPY))
        .await
        .unwrap();
    check_after_update(&app, &returned, &cfg, &recorded["with_two_updates"]).await;
}

/// Where an update's writes are saved: under a given task id, under the
/// id of the task the checkpoint planned for the node, or a new one.
#[tokio::test]
async fn update_state_saves_its_writes_under_task_ids() {
    let recorded = expected("task_id");
    let app = chain(&["a", "b"], &["a"]);
    let cfg = start(&app, "task-id-given").await;
    assert_eq!(state(&app, &cfg).await, recorded["paused"]);
    let given = update(Some(json!({"log": ["by-my-task"]})), Some("a")).task_id("my-task");
    let returned = app
        .graph
        .bulk_update_state(&cfg, vec![vec![given]])
        .await
        .unwrap();
    let case = &recorded["given"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );

    let cfg = start(&app, "task-id-prepared").await;
    let values = Some(Value::from_json(json!({"log": ["by-update"]})));
    let returned = app
        .graph
        .update_state(&cfg, values.clone(), Some("a"))
        .await
        .unwrap();
    let case = &recorded["prepared"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );

    let app = chain(&["a", "b"], &[]);
    let cfg = start(&app, "task-id-none-prepared").await;
    let returned = app
        .graph
        .update_state(&cfg, values, Some("a"))
        .await
        .unwrap();
    check_after_update(&app, &returned, &cfg, &recorded["no_prepared_task"]).await;
}

/// Several supersteps, several updates in one, and the errors.
#[tokio::test]
async fn bulk_update_state_applies_supersteps_in_order() {
    let recorded = expected("bulk");
    let app = chain(&["a", "b"], &[]);
    let cfg = start(&app, "bulk-two-supersteps").await;
    let steps = vec![
        vec![update(Some(json!({"log": ["s1"]})), Some("a"))],
        vec![update(Some(json!({"log": ["s2"]})), Some("b"))],
    ];
    let returned = app.graph.bulk_update_state(&cfg, steps).await.unwrap();
    check_after_update(&app, &returned, &cfg, &recorded["two_supersteps"]).await;

    let cfg = start(&app, "bulk-one-superstep").await;
    let step = vec![
        update(Some(json!({"log": ["u-a"]})), Some("a")),
        update(Some(json!({"log": ["u-b"]})), Some("b")),
    ];
    let returned = app.graph.bulk_update_state(&cfg, vec![step]).await.unwrap();
    let case = &recorded["two_updates_one_superstep"];
    check_after_update(&app, &returned, &cfg, case).await;
    assert_eq!(
        invoke(&app, Input::Resume, &cfg).await,
        case["invoke_after"]
    );

    let cfg = start(&app, "bulk-errors").await;
    let bulk = |steps: Vec<Vec<StateUpdate>>| app.graph.bulk_update_state(&cfg, steps);
    let x = || update(Some(json!({"log": ["x"]})), Some("a"));
    let found = json!({
        "no_supersteps": error(bulk(vec![]).await),
        "empty_superstep": error(bulk(vec![vec![]]).await),
        "empty_second_superstep": error(bulk(vec![vec![x()], vec![]]).await),
        "missing_as_node": error(bulk(vec![vec![x(), update(Some(json!({"log": ["y"]})), None)]]).await),
        "unknown_as_node": error(bulk(vec![vec![update(Some(json!({"log": ["x"]})), Some("nope"))]]).await),
        "unknown_as_node_of_two": error(bulk(vec![vec![x(), update(Some(json!({"log": ["y"]})), Some("nope"))]]).await),
        "checkpoints_after": checkpoints(&app, &cfg).await,
    });
    assert_eq!(found, recorded["errors"]);
}

/// Updating a subgraph's state through the namespaced config its parent's
/// snapshot gives, then resuming the parent.
#[tokio::test]
async fn update_state_in_a_subgraph_namespace() {
    let recorded = expected("subgraph");
    let app = subgraph_parent();
    let cfg = thread("subgraph");
    app.graph.invoke(json!({"x": "in"}), &cfg).await.unwrap();
    let parent = app.graph.get_state_with_subgraphs(&cfg).await.unwrap();
    let sub = parent.tasks[0].subgraph.as_ref().unwrap();
    let sub_config = at(&sub.config);
    assert_eq!(
        json!({"parent": state(&app, &cfg).await, "sub": state(&app, &sub_config).await}),
        recorded["paused"]
    );
    let mut sub_recorded = recorded["sub_config"].clone();
    sub_recorded
        .as_object_mut()
        .unwrap()
        .remove("checkpoint_map");
    assert_eq!(conf(&app, &sub.config).await, sub_recorded);

    let values = Some(Value::from_json(json!({"x": "patched"})));
    let returned = app
        .graph
        .update_state(&sub_config, values, Some("inner1"))
        .await
        .unwrap();
    let mut returned_recorded = recorded["returned_config"].clone();
    returned_recorded
        .as_object_mut()
        .unwrap()
        .remove("checkpoint_map");
    assert_eq!(conf(&app, &returned).await, returned_recorded);
    let returned = at(&returned);
    assert_eq!(state(&app, &returned).await, recorded["sub_state_after"]);
    assert_eq!(
        history(&app, &returned).await,
        recorded["sub_history_after"]
    );
    assert_eq!(state(&app, &cfg).await, recorded["parent_after"]);
    assert_eq!(
        writes(&app, &cfg).await,
        recorded_writes(&recorded["writes_after_update"])
    );
    let resumed = invoke(
        &app,
        Command::new().resume(Value::from_json(json!("ok"))),
        &cfg,
    )
    .await;
    assert_eq!(resumed, recorded["resumed"]);
    assert_eq!(
        history(&app, &cfg).await,
        recorded["parent_history_after_resume"]
    );

    let unknown = thread("subgraph").with_checkpoint_ns("nope:123");
    let values = Some(Value::from_json(json!({"x": "y"})));
    assert_eq!(
        error(
            app.graph
                .update_state(&unknown, values, Some("inner1"))
                .await
        ),
        recorded["unknown_namespace"]
    );
}

/// An update by a command (LangGraph's `update_state(Command(...))`, the
/// server's superstep `command`): its `update` is written, its `goto`
/// adds branches on top of the node's edges, its `resume` does nothing.
/// Expected values recorded from LangGraph 1.2.22 on the same chain,
/// paused before `b`.
#[tokio::test]
async fn update_state_by_a_command_writes_its_update_and_follows_its_goto() {
    let app = chain(&["a", "b", "c"], &["b"]);
    let cases = [
        (
            "cmd-goto",
            Command::new()
                .update_json(json!({"log": ["cmd"]}))
                .goto("c"),
            json!({"log": ["a", "cmd"]}),
            vec!["b", "c"],
            json!({"log": ["a", "cmd", "b", "c", "c"]}),
        ),
        (
            "cmd-send",
            Command::new().goto(stategraph_pregel::Send::new(
                "c",
                Value::from_json(json!({"log": ["sent"]})),
            )),
            json!({"log": ["a"]}),
            vec!["c", "b"],
            json!({"log": ["a", "b", "c", "c"]}),
        ),
        (
            "cmd-resume",
            Command::new()
                .resume(Value::from_json(json!("x")))
                .update_json(json!({"x": "r"}))
                .goto("c"),
            json!({"x": "r", "log": ["a"]}),
            vec!["b", "c"],
            json!({"x": "r", "log": ["a", "b", "c", "c"]}),
        ),
        (
            "cmd-no-goto",
            Command::new().update_json(json!({"log": ["u"]})),
            json!({"log": ["a", "u"]}),
            vec!["b"],
            json!({"log": ["a", "u", "b", "c"]}),
        ),
    ];
    for (name, command, values, next, after) in cases {
        let cfg = thread(name);
        app.graph
            .invoke(Value::from_json(json!({"log": []})), &cfg)
            .await
            .unwrap();
        let mut one = StateUpdate::command(command);
        one.as_node = Some("a".into());
        app.graph
            .bulk_update_state(&cfg, vec![vec![one]])
            .await
            .unwrap();
        let snapshot = app.graph.get_state(&cfg).await.unwrap();
        assert_eq!(snapshot.values.to_json().unwrap(), values, "{name}");
        assert_eq!(snapshot.next, next, "{name}");
        assert_eq!(invoke(&app, Input::Resume, &cfg).await, after, "{name}");
    }

    // Only real nodes take a command.
    let cfg = start(&app, "cmd-special").await;
    let mut special = StateUpdate::command(Command::new().goto("c"));
    special.as_node = Some(INPUT.into());
    let err = app
        .graph
        .bulk_update_state(&cfg, vec![vec![special]])
        .await
        .unwrap_err();
    assert!(matches!(err, PregelError::InvalidUpdate(_)), "{err}");
}
