//! Behaviours checked against LangGraph 1.2.22 beyond the shared traces
//! (issue 23). Each test compares with what LangGraph did, recorded by the
//! script of the same name in `fixtures/fidelity/record/`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use support::{chunks, named};

use futures::StreamExt;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{InMemorySaver, ListQuery};
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, NodeError, NodeSpec, RunOptions, START, Schema,
    Send, StateGraph, StateSnapshot, StreamMode, TaskContext,
};
use stategraph_pregel::PregelError;

/// A snapshot in the recorders' shape: interrupts by the value they ask.
fn snapshot(state: &StateSnapshot) -> Json {
    let asked = |items: &[stategraph_graph::Interrupt]| -> Vec<Json> {
        items.iter().map(|i| i.value.to_json().unwrap()).collect()
    };
    json!({
        "values": state.values.to_json().unwrap(),
        "next": state.next,
        "interrupts": asked(&state.interrupts),
        "tasks": state.tasks.iter().map(|task| json!({
            "name": task.name,
            "interrupts": asked(&task.interrupts),
            "result": task.result.as_ref().map(|r| r.to_json().unwrap()),
            "error": task.error,
        })).collect::<Vec<_>>(),
    })
}

/// Item 1: two parallel nodes interrupt and the resume answers one. The
/// latest state lists no interrupt under the finished task; the same
/// checkpoint read as history lists both.
#[tokio::test]
async fn parallel_interrupts_partly_answered() {
    let expected = support::fidelity("parallel_interrupts_partly_answered");
    let mut graph = StateGraph::new(Schema::new().append("log"));
    for name in ["a", "b"] {
        graph
            .add_node(name, move |_: Json, ctx: TaskContext| async move {
                let answer = ctx.interrupt(format!("{name}?"))?.to_json()?;
                let answer = answer.as_str().unwrap_or_default().to_owned();
                Ok::<_, NodeError>(json!({"log": [format!("{name}:{answer}")]}))
            })
            .unwrap();
        graph.add_edge(START, name).unwrap();
    }
    let app = graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("t");
    app.invoke(json!({"log": []}), &cfg).await.unwrap();
    let first = app.get_state(&cfg).await.unwrap();
    let asked_a = first
        .interrupts
        .iter()
        .find(|i| i.value.to_json().unwrap() == json!("a?"))
        .unwrap();
    let answer = Command::new().resume_by_id([(asked_a.id.clone(), Value::from_json(json!("A")))]);
    app.invoke(answer, &cfg).await.unwrap();

    let live = app.get_state(&cfg).await.unwrap();
    assert_eq!(snapshot(&live), expected["live"]);
    let at =
        RunnableConfig::thread("t").with_checkpoint_id(live.config.checkpoint_id.clone().unwrap());
    let recorded = app.get_state(&at).await.unwrap();
    assert_eq!(snapshot(&recorded), expected["recorded"]);
}

/// Item 3: `Command(resume=…)` on a thread with no checkpoint. With a
/// checkpointer the run starts from the beginning and the answer is unused
/// (its interrupt fires); without one it is an error.
#[tokio::test]
async fn resume_on_fresh_thread() {
    let expected = support::fidelity("resume_on_fresh_thread");
    let build = |options: CompileOptions| {
        let mut graph = StateGraph::new(Schema::new().last_value("x"));
        graph
            .add_node("a", |s: Json| async move {
                let x = s["x"].as_str().unwrap_or_default();
                Ok::<_, NodeError>(json!({"x": format!("{x}a")}))
            })
            .unwrap();
        graph
            .add_node("ask", |s: Json, ctx: TaskContext| async move {
                let answer = ctx.interrupt("q")?.to_json()?;
                let x = s["x"].as_str().unwrap_or_default();
                Ok::<_, NodeError>(json!({"x": format!("{x} got {}", answer.as_str().unwrap())}))
            })
            .unwrap();
        graph.add_edge(START, "a").unwrap();
        graph.add_edge("a", "ask").unwrap();
        graph.compile_with(options).unwrap()
    };
    let app = build(CompileOptions::new().checkpointer(InMemorySaver::new()));
    let resume = |answer: Json| Command::new().resume(Value::from_json(answer));
    let streamed = |chunks: Vec<Json>| Json::Array(chunks.into_iter().map(named).collect());

    let cfg = RunnableConfig::thread("fresh");
    assert_eq!(
        streamed(chunks(&app, resume(json!("hi")), &cfg).await),
        expected["first"]
    );
    let history: Vec<Json> = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap()
        .iter()
        .map(|s| {
            let meta = s.metadata.as_ref().unwrap();
            json!({
                "source": meta.source,
                "step": meta.step,
                "next": s.next,
                "values": s.values.to_json().unwrap(),
            })
        })
        .collect();
    assert_eq!(Json::Array(history), expected["history"]);
    assert_eq!(
        streamed(chunks(&app, resume(json!("second")), &cfg).await),
        expected["second"]
    );

    let cfg = RunnableConfig::thread("with-update");
    let with_update = resume(json!("hi")).update("x", Value::from_json(json!("u")));
    assert_eq!(
        streamed(chunks(&app, with_update, &cfg).await),
        expected["with_update"]
    );

    let cfg = RunnableConfig::thread("by-id");
    let by_id = Command::new().resume_by_id([(
        "0123456789abcdef0123456789abcdef".to_owned(),
        Value::from_json(json!("hi")),
    )]);
    assert_eq!(streamed(chunks(&app, by_id, &cfg).await), expected["by_id"]);

    let plain = build(CompileOptions::new());
    let err = plain
        .invoke(resume(json!("hi")), &RunnableConfig::default())
        .await
        .unwrap_err();
    let without = &expected["without_checkpointer"];
    assert_eq!(support::error_json(&err)["$error"], without["error"]);
    assert_eq!(err.to_string(), without["message"].as_str().unwrap());
}

/// `graph` with a first node, `draft`, writing `draft` from `topic`.
fn drafting(mut graph: StateGraph) -> StateGraph {
    graph
        .add_node("draft", |s: Json| async move {
            let topic = s["topic"].as_str().unwrap().to_owned();
            Ok::<_, NodeError>(json!({"draft": format!("draft on {topic}")}))
        })
        .unwrap();
    graph.add_edge(START, "draft").unwrap();
    graph
}

/// Item 4: a subgraph node's `updates` chunk is the subgraph's output as
/// the parent's keys hold it: the keys the parent has (unchanged ones
/// included), never the subgraph's own keys.
#[tokio::test]
async fn subgraph_private_update() {
    let expected = support::fidelity("subgraph_private_update");
    for (case, finish) in [("only_private", false), ("both", true)] {
        let mut child = drafting(StateGraph::new(
            Schema::new()
                .last_value("topic")
                .last_value("draft")
                .last_value("result"),
        ));
        if finish {
            child
                .add_node("finish", |s: Json| async move {
                    let draft = s["draft"].as_str().unwrap().to_uppercase();
                    Ok::<_, NodeError>(json!({"result": draft}))
                })
                .unwrap();
            child.add_edge("draft", "finish").unwrap();
        }
        let mut parent = StateGraph::new(Schema::new().last_value("topic").last_value("result"));
        parent.add_node("join", child.compile().unwrap()).unwrap();
        parent.add_edge(START, "join").unwrap();
        let app = parent.compile().unwrap();
        let input = || json!({"topic": "cats"});
        let cfg = RunnableConfig::default();
        let expected = &expected[case];

        let updates = app
            .stream(input(), &cfg, StreamMode::Updates)
            .map(|chunk| chunk.unwrap().to_json())
            .collect::<Vec<_>>()
            .await;
        assert_eq!(Json::Array(updates), expected["updates"], "{case}");

        let nested = app
            .stream_with(
                input(),
                &cfg,
                StreamMode::Updates,
                RunOptions::new().subgraphs(true),
            )
            .map(|chunk| {
                let chunk = chunk.unwrap();
                let ns: Vec<&str> = chunk
                    .namespace
                    .iter()
                    .map(|part| part.split(':').next().unwrap())
                    .collect();
                json!([ns, chunk.to_json()])
            })
            .collect::<Vec<_>>()
            .await;
        assert_eq!(Json::Array(nested), expected["subgraph_updates"], "{case}");

        let values = app
            .stream(input(), &cfg, StreamMode::Values)
            .map(|chunk| chunk.unwrap().to_json())
            .collect::<Vec<_>>()
            .await;
        assert_eq!(Json::Array(values), expected["values"], "{case}");
    }
}

/// Item 4, the `None` form: when the node writes none of the parent's keys
/// (a subgraph whose output holds only its own keys, or a node returning
/// only keys the parent does not have), `updates` shows `{"join": null}`;
/// a node returning both kinds shows only the parent's keys.
#[tokio::test]
async fn node_update_with_no_parent_key() {
    let expected = support::fidelity("subgraph_private_update");
    let child = drafting(
        StateGraph::new(Schema::new().last_value("topic").last_value("draft"))
            .with_output_keys(["draft"])
            .unwrap(),
    );
    let private_output = NodeSpec::new(child.compile().unwrap());
    let unknown_keys = NodeSpec::new(|_: Json| async { Ok::<_, NodeError>(json!({"draft": "x"})) });
    for (case, node) in [
        ("private_output", private_output),
        ("unknown_keys", unknown_keys),
    ] {
        let mut parent = StateGraph::new(Schema::new().last_value("topic").last_value("result"));
        parent.add_node_spec("join", node).unwrap();
        parent.add_edge(START, "join").unwrap();
        let app = parent.compile().unwrap();
        let cfg = RunnableConfig::default();
        for mode in [StreamMode::Updates, StreamMode::Values] {
            let chunks = app
                .stream(json!({"topic": "cats"}), &cfg, mode)
                .map(|chunk| chunk.unwrap().to_json())
                .collect::<Vec<_>>()
                .await;
            assert_eq!(
                Json::Array(chunks),
                expected[case][mode.as_str()],
                "{case} {mode:?}"
            );
        }
    }
}

/// Item 13: input that does not fit a typed state is a `ValidationError`
/// naming the key, as pydantic's is for LangGraph. `"41"` for an integer is
/// refused too: serde does not coerce (PORTING.md, deliberate differences).
#[tokio::test]
async fn typed_input_validation() {
    use serde::{Deserialize, Serialize};
    use stategraph_graph::State;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Counter {
        count: i64,
        name: String,
    }

    let expected = support::fidelity("typed_input_validation");
    let mut graph = StateGraph::typed::<Counter>();
    graph
        .add_node("bump", |c: CounterView| async move {
            Ok::<_, NodeError>(CounterUpdate::default().count(*c.count + 1))
        })
        .unwrap();
    graph.add_edge(START, "bump").unwrap();
    let app = graph.compile().unwrap();
    let cfg = RunnableConfig::default();
    for case in ["word", "list"] {
        let value = match case {
            "word" => json!("abc"),
            _ => json!([1]),
        };
        let err = app.invoke(json!({"count": value}), &cfg).await.unwrap_err();
        assert_eq!(err.class(), expected[case]["error"], "{case}: {err}");
        assert!(err.to_string().contains("'count'"), "{case}: {err}");
    }
    // LangGraph coerces `"41"`; the strict decoding refuses it the same way.
    assert_eq!(expected["numeric_text"]["output"], json!({"count": 42}));
    let err = app.invoke(json!({"count": "41"}), &cfg).await.unwrap_err();
    assert_eq!(err.class(), "ValidationError", "{err}");

    // A node's write that does not fit, and a node input that does not decode.
    let mut graph = StateGraph::typed::<Counter>();
    graph
        .add_node("write", |_: CounterView| async {
            Ok::<_, NodeError>(json!({"count": "zzz"}))
        })
        .unwrap();
    graph.add_edge(START, "write").unwrap();
    let err = graph
        .compile()
        .unwrap()
        .invoke(json!({"count": 1}), &cfg)
        .await
        .unwrap_err();
    assert_eq!(err.class(), "ValidationError", "{err}");

    #[derive(Clone, Debug, Deserialize)]
    struct Named {
        #[allow(dead_code)]
        name: u32,
    }
    let mut graph = StateGraph::typed::<Counter>();
    graph
        .add_node("read", |_: Named| async { Ok::<_, NodeError>(()) })
        .unwrap();
    graph.add_edge(START, "read").unwrap();
    let err = graph
        .compile()
        .unwrap()
        .invoke(json!({"name": "x"}), &cfg)
        .await
        .unwrap_err();
    assert_eq!(err.class(), "ValidationError", "{err}");
    assert!(err.to_string().contains("name"), "{err}");
}

/// Item 8: routers taking the run's config (`(state, config)`) or its
/// context (`(state, runtime)`), and a route to a node that does not exist,
/// ignored with a warning as LangGraph logs one.
#[tokio::test]
async fn router_forms() {
    use stategraph_core::RunnableConfig as Config;
    use stategraph_graph::{END, PathMap};

    let expected = support::fidelity("router_forms");
    let build = |add: &dyn Fn(&mut StateGraph)| {
        let mut graph = StateGraph::new(Schema::new().last_value("x").last_value("log"));
        graph
            .add_node("start", |_: Json| async {
                Ok::<_, NodeError>(json!({"x": 1}))
            })
            .unwrap();
        for side in ["left", "right"] {
            graph
                .add_node(side, move |_: Json| async move {
                    Ok::<_, NodeError>(json!({"log": [side]}))
                })
                .unwrap();
            graph.add_edge(side, END).unwrap();
        }
        graph.add_edge(START, "start").unwrap();
        add(&mut graph);
        graph.compile().unwrap()
    };
    let sides = || Some(PathMap::from([("left", "left"), ("right", "right")]));

    let app = build(&|graph| {
        let router = |_: &Json, config: &Config| -> String {
            config.configurable.extra["target"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        graph
            .add_conditional_edges("start", router, sides())
            .unwrap();
    });
    let cfg = Config::default().with_configurable("target", json!("left"));
    let out = app.invoke(json!({"x": 0}), &cfg).await.unwrap();
    assert_eq!(out.to_json().unwrap(), expected["by_config"]);

    struct Target(&'static str);
    let app = build(&|graph| {
        let router = |_: &Json, ctx: &TaskContext| ctx.context::<Target>().unwrap().0;
        graph
            .add_conditional_edges("start", router, sides())
            .unwrap();
    });
    let options = stategraph_graph::RunOptions::new().context(Target("right"));
    let out = app
        .invoke_with(json!({"x": 0}), &Config::default(), options)
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected["by_runtime"]);

    let app = build(&|graph| {
        graph
            .add_conditional_edges("start", |_: &Json| "nowhere", None)
            .unwrap();
    });
    let (out, warnings) =
        support::with_warnings(app.invoke(json!({"x": 0}), &Config::default())).await;
    let unknown = &expected["unknown"];
    assert_eq!(out.unwrap().to_json().unwrap(), unknown["output"]);
    assert_eq!(
        warnings.len(),
        unknown["warnings"].as_array().unwrap().len()
    );
    assert!(warnings[0].contains("nowhere"), "{warnings:?}");
}

/// Item 5: a compiled graph's JSON schemas (input, output, context, config)
/// from a typed state, as LangGraph's `get_*_jsonschema` give them for the
/// same `TypedDict`s. Compared without the details only one side writes
/// (schemars' integer `format`; pydantic's `anyOf` for an optional value).
#[tokio::test]
async fn graph_jsonschemas() {
    use serde::{Deserialize, Serialize};
    use stategraph_graph::State;
    use stategraph_llm::schemars::{self, JsonSchema};

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Overall {
        name: String,
        count: i64,
        #[state(reducer = append)]
        items: Vec<String>,
        note: Option<String>,
    }

    #[derive(JsonSchema, Deserialize)]
    #[schemars(crate = "schemars")]
    #[allow(dead_code)]
    struct Ctx {
        user_id: String,
    }

    /// Drops `format`; writes `{"type": [t, "null"]}` as `anyOf`.
    fn plain(json: &Json) -> Json {
        match json {
            Json::Object(map) => {
                let mut out = serde_json::Map::new();
                for (key, value) in map {
                    if key == "format" {
                        continue;
                    }
                    out.insert(key.clone(), plain(value));
                }
                if let Some(Json::Array(types)) = out.get("type").cloned() {
                    out.remove("type");
                    let any: Vec<Json> = types.iter().map(|t| json!({"type": t})).collect();
                    out.insert("anyOf".into(), Json::Array(any));
                }
                Json::Object(out)
            }
            Json::Array(items) => Json::Array(items.iter().map(plain).collect()),
            other => other.clone(),
        }
    }
    fn sorted_required(mut json: Json) -> Json {
        if let Some(required) = json.get_mut("required").and_then(Json::as_array_mut) {
            required.sort_by_key(|k| k.as_str().unwrap_or_default().to_owned());
        }
        json
    }

    let expected = support::fidelity("graph_jsonschemas");
    let build = |graph: StateGraph| {
        let mut graph = graph;
        graph
            .add_node("n", |_: Json| async { Ok::<_, NodeError>(()) })
            .unwrap();
        graph.add_edge(START, "n").unwrap();
        graph.compile().unwrap()
    };
    let full = build(StateGraph::typed::<Overall>().with_context_schema::<Ctx>());
    for (ours, theirs) in [
        (full.input_jsonschema(), &expected["input"]),
        (full.output_jsonschema(), &expected["output"]),
        (full.context_jsonschema().unwrap(), &expected["context"]),
        (full.config_jsonschema(), &expected["config"]),
    ] {
        assert_eq!(
            sorted_required(plain(&ours)),
            sorted_required(theirs.clone())
        );
    }

    // Input and output keys narrow the schemas (LangGraph's input and
    // output schemas; the title stays the state's).
    let narrow = build(
        StateGraph::typed::<Overall>()
            .with_input_keys(["name"])
            .unwrap()
            .with_output_keys(["items"])
            .unwrap(),
    );
    for (ours, theirs) in [
        (narrow.input_jsonschema(), &expected["narrow_input"]),
        (narrow.output_jsonschema(), &expected["narrow_output"]),
    ] {
        assert_eq!(plain(&ours)["properties"], theirs["properties"]);
        assert_eq!(ours["required"], theirs["required"]);
    }
    assert_eq!(narrow.context_jsonschema(), None);
    assert!(expected["no_context"].is_null());

    // `#[state(partial)]`: a `TypedDict` with `total=False`, which pydantic
    // writes without `required`.
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    #[state(partial)]
    struct Loose {
        name: String,
        count: i64,
    }
    let loose = build(StateGraph::typed::<Loose>());
    for schema in [loose.input_jsonschema(), loose.output_jsonschema()] {
        assert_eq!(schema.get("required"), None, "{schema}");
        assert_eq!(schema["properties"]["count"]["type"], "integer");
    }

    // A dynamic schema: any value per key unless described.
    let dynamic = build(StateGraph::new(
        Schema::new()
            .last_value("topic")
            .describe("topic", json!({"type": "string"})),
    ));
    assert_eq!(
        dynamic.input_jsonschema(),
        json!({"properties": {"topic": {"title": "Topic", "type": "string"}},
               "required": ["topic"], "title": "State", "type": "object"})
    );
}

/// What each recording node of [`task_config_graph`] was given, by node.
type SeenConfigs =
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, RunnableConfig>>>;

/// The recorder's graph: `START -> peek -> sub` (a subgraph whose one node
/// is `inner`) plus a `Send` to `fan` from peek; peek, fan and inner keep
/// the config they are given.
fn task_config_graph(saver: Option<InMemorySaver>, seen: &SeenConfigs) -> CompiledStateGraph {
    let recorder = |name: &'static str| {
        let seen = seen.clone();
        move |_: Json, ctx: TaskContext| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .insert(name.to_owned(), ctx.config().clone());
                Ok::<_, NodeError>(json!({}))
            }
        }
    };
    let mut sub = StateGraph::new(Schema::new().last_value("x"));
    sub.add_node("inner", recorder("inner")).unwrap();
    sub.add_edge(START, "inner").unwrap();
    let mut graph = StateGraph::new(Schema::new().last_value("x"));
    graph.add_node("peek", recorder("peek")).unwrap();
    graph.add_node("sub", sub.compile().unwrap()).unwrap();
    graph.add_node("fan", recorder("fan")).unwrap();
    graph.add_edge(START, "peek").unwrap();
    graph.add_edge("peek", "sub").unwrap();
    graph
        .add_conditional_edges(
            "peek",
            |_: &Json| vec![Send::new("fan", json!({"x": "to-fan"}))],
            Some(stategraph_graph::PathMap::from(["fan"])),
        )
        .unwrap();
    match saver {
        Some(saver) => graph
            .compile_with(CompileOptions::new().checkpointer(saver))
            .unwrap(),
        None => graph.compile().unwrap(),
    }
}

/// A task config as the recorder shows it: `configurable` (with its
/// `checkpoint_id`, null) and `metadata`, ids made stable.
fn config_view(config: &RunnableConfig) -> Json {
    let mut configurable = serde_json::to_value(&config.configurable).unwrap();
    configurable
        .as_object_mut()
        .unwrap()
        .entry("checkpoint_id")
        .or_insert(Json::Null);
    support::stable_ids(&json!({
        "configurable": configurable,
        "metadata": config.metadata,
    }))
}

fn seen_views(seen: &SeenConfigs) -> Json {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(node, config)| (node.clone(), config_view(config)))
        .collect()
}

/// The recorded configs of one case, without the saved-checkpoint names.
fn recorded_views(case: &Json) -> Json {
    let mut configs = case["configs"].clone();
    for view in configs.as_object_mut().unwrap().values_mut() {
        view.as_object_mut().unwrap().remove("checkpoints");
    }
    configs
}

/// Item 11: each task gets its own config: its namespace, no checkpoint id,
/// the checkpoint each enclosing namespace's step started from, and the
/// `langgraph_*` metadata; inside a subgraph, the subgraph's namespace too.
#[tokio::test]
async fn task_config() {
    let expected = support::fidelity("task_config");
    let seen = SeenConfigs::default();

    let app = task_config_graph(None, &seen);
    let mut cfg = RunnableConfig::default().with_configurable("user", json!("u1"));
    cfg.metadata.insert("m".into(), json!(1));
    app.invoke(json!({"x": "in"}), &cfg).await.unwrap();
    assert_eq!(
        seen_views(&seen),
        recorded_views(&expected["no_checkpointer"])
    );

    seen.lock().unwrap().clear();
    let app = task_config_graph(Some(InMemorySaver::new()), &seen);
    let cfg = RunnableConfig::thread("t").with_configurable("user", json!("u1"));
    app.invoke(json!({"x": "in"}), &cfg).await.unwrap();
    assert_eq!(seen_views(&seen), recorded_views(&expected["with_saver"]));
    // The map names the checkpoints the steps started from: peek's step
    // (next: peek), then the step sub and fan ran in.
    let history = app
        .get_state_history(&cfg, ListQuery::default())
        .await
        .unwrap();
    let before = |next: &[&str]| {
        let found = history.iter().find(|s| s.next == next).unwrap();
        json!(found.config.checkpoint_id.as_ref().unwrap().to_string())
    };
    let seen_now = seen.lock().unwrap().clone();
    let map = |node: &str| seen_now[node].configurable.extra["checkpoint_map"].clone();
    assert_eq!(map("peek")[""], before(&["peek"]));
    assert_eq!(map("inner")[""], before(&["fan", "sub"]));
    assert_eq!(map("fan")[""], before(&["fan", "sub"]));

    // Time travel: the task config has no checkpoint id; the metadata
    // names the checkpoint travelled to.
    seen.lock().unwrap().clear();
    let past = RunnableConfig::thread("t")
        .with_checkpoint_id(
            history
                .iter()
                .find(|s| s.next == ["peek"])
                .unwrap()
                .config
                .checkpoint_id
                .clone()
                .unwrap(),
        )
        .with_configurable("user", json!("u1"));
    app.invoke(stategraph_pregel::Input::Resume, &past)
        .await
        .unwrap();
    assert_eq!(seen_views(&seen), recorded_views(&expected["time_travel"]));
}

/// Item 9: `output_keys` for one run: a list of keys gives maps, one key
/// bare values, in `values` and `updates` chunks and in the output; an
/// unknown key fails the run.
#[tokio::test]
async fn output_keys() {
    let expected = support::fidelity("output_keys");
    let mut graph = StateGraph::new(Schema::new().last_value("a").last_value("b"));
    graph
        .add_node("n", |_: Json| async {
            Ok::<_, NodeError>(json!({"a": "A", "b": "B"}))
        })
        .unwrap();
    graph.add_edge(START, "n").unwrap();
    let app = graph.compile().unwrap();
    let cfg = RunnableConfig::default();
    let stream = |keys: stategraph_pregel::IoSpec| {
        let options = RunOptions::new().output_keys(keys);
        app.stream_with(
            json!({"a": "x"}),
            &cfg,
            StreamMode::Values | StreamMode::Updates,
            options,
        )
        .map(|chunk| chunk.map(|c| json!([c.mode.as_str(), c.to_json()])))
        .collect::<Vec<_>>()
    };
    let many: Vec<Json> = stream(["a"].into())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(json!(many), expected["stream_many"]);
    let one: Vec<Json> = stream("a".into())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(json!(one), expected["stream_one"]);
    let invoke = |keys: stategraph_pregel::IoSpec| {
        app.invoke_with(json!({"a": "x"}), &cfg, RunOptions::new().output_keys(keys))
    };
    assert_eq!(
        invoke(["b"].into()).await.unwrap().to_json().unwrap(),
        expected["invoke_many"]
    );
    assert_eq!(
        invoke("b".into()).await.unwrap().to_json().unwrap(),
        expected["invoke_one"]
    );
    let refused = stream(["zz"].into()).await;
    let err = refused.into_iter().find_map(Result::err).unwrap();
    assert_eq!(
        json!({"error": err.class(), "message": err.to_string()}),
        expected["unknown_key"]
    );
}

/// Item 9: `push_message` sends the message to the `messages` stream at
/// once and writes it to the state key with the node's output (both in its
/// `updates` chunk); with no state key it is only streamed; a message
/// without an id is a `ValueError`.
#[tokio::test]
async fn push_message() {
    use stategraph_graph::{MessageEvent, MessagesState, MessagesStateUpdate, StreamedMessage};
    use stategraph_llm::Message;

    let expected = support::fidelity("push_message");
    let mut graph = StateGraph::typed::<MessagesState>();
    graph
        .add_node("node", |_: Json, ctx: TaskContext| async move {
            ctx.push_message(Message::ai("pushed").with_id("m1"), Some("messages"))?;
            let returned = Message::ai("returned").with_id("m2");
            Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![returned]))
        })
        .unwrap();
    graph
        .add_node("quiet", |_: Json, ctx: TaskContext| async move {
            ctx.push_message(Message::ai("not-in-state").with_id("m3"), None)?;
            Ok::<_, NodeError>(json!({}))
        })
        .unwrap();
    graph
        .add_node("noid", |_: Json, ctx: TaskContext| async move {
            let err = ctx
                .push_message(Message::ai("x"), Some("messages"))
                .unwrap_err();
            let text = format!("{}: {}", err.class(), err.message());
            let answer = Message::ai(text).with_id("err");
            Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![answer]))
        })
        .unwrap();
    graph.add_edge(START, "node").unwrap();
    graph.add_edge("node", "quiet").unwrap();
    graph.add_edge("quiet", "noid").unwrap();
    let app = graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("t");
    let message =
        |m: &Message| json!({"type": m.message_type(), "content": m.text(), "id": m.id()});
    let input = json!({"messages": [{"type": "human", "content": "hi", "id": "h"}]});
    let chunks: Vec<Json> = app
        .stream(input, &cfg, StreamMode::Messages | StreamMode::Updates)
        .map(|chunk| {
            let chunk = chunk.unwrap();
            if chunk.mode != StreamMode::Messages {
                return json!([chunk.mode.as_str(), chunk.to_json()]);
            }
            let event = chunk.data.downcast_ref::<MessageEvent>().unwrap();
            let StreamedMessage::Message(m) = &event.message else {
                panic!("a chunk")
            };
            let at = json!({
                "langgraph_node": event.metadata["langgraph_node"],
                "langgraph_step": event.metadata["langgraph_step"],
            });
            json!(["messages", message(m), at])
        })
        .collect()
        .await;
    // Ours writes the pushed message as a list of one (what a typed
    // messages key takes); LangGraph writes the message itself.
    let mut recorded = expected["chunks"].clone();
    let pushed = &mut recorded[2][1]["node"][0]["messages"];
    *pushed = json!([pushed.take()]);
    assert_eq!(json!(chunks), recorded);
    let state = app.get_state(&cfg).await.unwrap().values.to_json().unwrap();
    let state: MessagesState = serde_json::from_value(state).unwrap();
    let messages: Vec<Json> = state.messages.iter().map(message).collect();
    assert_eq!(json!(messages), expected["messages"]);
}

/// Item 10: a functional task with a cache policy: a second run (another
/// thread) gets its results from the graph's cache, marked `cached`, and
/// does not call it; the graph's `clear_cache` leaves task results.
#[tokio::test]
async fn task_cache() {
    use stategraph_graph::{CachePolicy, Entrypoint, InMemoryCache};

    let expected = support::fidelity("task_cache");
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let seen = calls.clone();
    let app = Entrypoint::new("wf", move |x: i64, _: Option<Value>, ctx: TaskContext| {
        let calls = seen.clone();
        async move {
            let slow = |x: i64| {
                let calls = calls.clone();
                ctx.cached_task("slow", &[], CachePolicy::new(), x, move || {
                    let calls = calls.clone();
                    async move {
                        calls.lock().unwrap().push(x);
                        Ok::<_, NodeError>(x * 2)
                    }
                })
            };
            let a: i64 = slow(x).await?;
            let b: i64 = slow(x + 1).await?;
            Ok::<_, NodeError>(json!(a + b))
        }
    })
    .compile(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .cache(InMemoryCache::new()),
    )
    .unwrap();
    let run = |thread: &'static str| {
        let (app, calls) = (&app, &calls);
        async move {
            let updates: Vec<Json> = app
                .stream(
                    json!(3),
                    &RunnableConfig::thread(thread),
                    StreamMode::Updates,
                )
                .map(|chunk| chunk.unwrap().to_json())
                .collect()
                .await;
            json!({"updates": updates, "calls": *calls.lock().unwrap()})
        }
    };
    assert_eq!(run("first").await, expected["first"]);
    assert_eq!(run("second").await, expected["second"]);
    app.clear_cache(None).unwrap();
    assert_eq!(run("third").await, expected["after_clear_cache"]);
}

/// Item 8: async routers route by name through a path map and by `Send`,
/// with the task's writes applied once they are done; one that fails fails
/// the run with its error.
#[tokio::test]
async fn async_router() {
    let expected = support::fidelity("async_router");
    let build = |router_kind: &str| {
        let mut graph = StateGraph::new(Schema::new().last_value("n").append("log"));
        graph
            .add_node("start", |_: Json| async {
                Ok::<_, NodeError>(json!({"log": ["start"]}))
            })
            .unwrap();
        for name in ["e", "o"] {
            graph
                .add_node(name, move |_: Json| async move {
                    Ok::<_, NodeError>(json!({"log": [name]}))
                })
                .unwrap();
        }
        graph
            .add_node("item", |s: Json| async move {
                Ok::<_, NodeError>(json!({"log": [format!("item{}", s["n"])]}))
            })
            .unwrap();
        graph.add_edge(START, "start").unwrap();
        let parity = stategraph_graph::PathMap::from([("even", "e"), ("odd", "o")]);
        match router_kind {
            "parity" => graph.add_conditional_edges(
                "start",
                |s: Json| async move {
                    tokio::task::yield_now().await;
                    if s["n"].as_i64().unwrap() % 2 == 0 {
                        "even"
                    } else {
                        "odd"
                    }
                },
                Some(parity),
            ),
            "fan" => graph.add_conditional_edges(
                "start",
                |s: Json, _ctx: TaskContext| async move {
                    let n = s["n"].as_i64().unwrap();
                    (0..n)
                        .map(|i| Send::new("item", json!({"n": i})))
                        .collect::<Vec<_>>()
                },
                Some(stategraph_graph::PathMap::from(["item"])),
            ),
            _ => graph.add_conditional_edges(
                "start",
                |_: Json| async move { Err::<&str, _>(NodeError::new("ValueError", "no route")) },
                Some(stategraph_graph::PathMap::from(["e"])),
            ),
        }
        .unwrap();
        graph.compile().unwrap()
    };
    let cfg = RunnableConfig::default();
    let parity = build("parity");
    let even = parity
        .invoke(json!({"n": 2, "log": []}), &cfg)
        .await
        .unwrap();
    assert_eq!(even.to_json().unwrap(), expected["even"]);
    let odd: Vec<Json> = parity
        .stream(json!({"n": 3, "log": []}), &cfg, StreamMode::Updates)
        .map(|c| c.unwrap().to_json())
        .collect()
        .await;
    assert_eq!(json!(odd), expected["odd_updates"]);
    let sends = build("fan")
        .invoke(json!({"n": 3, "log": []}), &cfg)
        .await
        .unwrap();
    assert_eq!(sends.to_json().unwrap(), expected["sends"]);
    let err = build("boom")
        .invoke(json!({"n": 1, "log": []}), &cfg)
        .await
        .unwrap_err();
    let PregelError::Node { error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        json!({"error": error.class(), "message": error.message()}),
        expected["raises"]
    );
}

/// Item 5: a node reading another state (`NodeSpec::input_state`, LangGraph's
/// input annotation): its keys become private channels, shown in `values`
/// chunks and `get_state`, not in the output or the input and output
/// schemas.
#[tokio::test]
async fn private_state() {
    use serde::{Deserialize, Serialize};
    use stategraph_graph::State;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Overall {
        a: String,
    }
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Private {
        private: String,
    }

    let expected = support::fidelity("private_state");
    let mut graph = StateGraph::typed::<Overall>();
    graph
        .add_node("node1", |_: Json| async {
            Ok::<_, NodeError>(json!({"private": "set by node1", "a": "A"}))
        })
        .unwrap();
    let node2 = NodeSpec::new(|p: Private| async move {
        Ok::<_, NodeError>(OverallUpdate::default().a(format!("{} read by node2", p.private)))
    });
    graph
        .add_node_spec("node2", node2.input_state::<Private>())
        .unwrap();
    graph.add_edge(START, "node1").unwrap();
    graph.add_edge("node1", "node2").unwrap();
    let app = graph
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunnableConfig::thread("t");
    let chunks = chunks(&app, json!({"a": "x"}), &cfg).await;
    assert_eq!(json!(chunks), expected["chunks"]);
    let out = app
        .invoke(json!({"a": "y"}), &RunnableConfig::thread("t2"))
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap(), expected["invoke"]);
    let state = app.get_state(&cfg).await.unwrap();
    assert_eq!(state.values.to_json().unwrap(), expected["state"]);
    let keys = |schema: Json| -> Json {
        json!(
            schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>()
        )
    };
    assert_eq!(keys(app.input_jsonschema()), expected["input_keys"]);
    assert_eq!(keys(app.output_jsonschema()), expected["output_keys"]);
}
