//! The graph workloads of `shared/bench/WORKLOADS.md` that need no
//! checkpointer and no chat model, driven as the spec says: compiled once,
//! `stream` in `updates` mode, fresh thread id per run, unlimited recursion.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use stategraph_channels::{BinaryOperatorAggregate, LastValue, reducers};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{List, RunnableConfig, Value};
use stategraph_graph::{
    ChannelValues, CompileOptions, CompiledStateGraph, Durability, END, NodeError, RunOptions,
    START, Schema, Send, StateGraph,
};
use stategraph_pregel::{NodeUpdate, StreamMode, UpdatePayload};

use crate::{Check, Outcome, Runner, Workload};

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "sequential_10",
            setup: || sequential_runner(10),
        },
        Workload {
            name: "sequential_1000",
            setup: || sequential_runner(1000),
        },
        Workload {
            name: "fanout_to_subgraph_10x",
            setup: || fanout_runner(10, false),
        },
        Workload {
            name: "fanout_to_subgraph_100x",
            setup: || fanout_runner(100, false),
        },
        Workload {
            name: "fanout_to_subgraph_10x_checkpoint",
            setup: || fanout_runner(10, true),
        },
        Workload {
            name: "fanout_to_subgraph_100x_checkpoint",
            setup: || fanout_runner(100, true),
        },
        Workload {
            name: "wide_dict_25x300",
            setup: || wide_runner(5, 5, 300, false),
        },
        Workload {
            name: "wide_dict_25x300_checkpoint",
            setup: || wide_runner(5, 5, 300, true),
        },
        Workload {
            name: "wide_dict_15x600",
            setup: || wide_runner(3, 5, 600, false),
        },
        Workload {
            name: "wide_dict_15x600_checkpoint",
            setup: || wide_runner(3, 5, 600, true),
        },
        Workload {
            name: "wide_dict_9x1200",
            setup: || wide_runner(3, 3, 1200, false),
        },
        Workload {
            name: "wide_dict_9x1200_checkpoint",
            setup: || wide_runner(3, 3, 1200, true),
        },
        Workload {
            name: "sequential_1000_first_event_latency",
            setup: first_event_runner,
        },
        Workload {
            name: "sequential_1000_compilation",
            setup: || compilation_runner(sequential_builder(1000)),
        },
        Workload {
            name: "wide_dict_15x600_compilation",
            setup: || compilation_runner(wide_builder(600)),
        },
    ]
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|err| panic!("cannot build a tokio runtime: {err}"))
}

/// Compiles a workload's graph; `checkpoint` gives it one in-memory saver,
/// shared by every repetition (the `*_checkpoint` variants).
pub(crate) fn compile(builder: &StateGraph, checkpoint: bool) -> CompiledStateGraph {
    let options = if checkpoint {
        CompileOptions::new().checkpointer(InMemorySaver::new())
    } else {
        CompileOptions::new()
    };
    builder
        .compile_with(options)
        .unwrap_or_else(|err| panic!("{err}"))
}

/// The run configuration of every workload: a fresh thread, no recursion limit.
fn config(run: usize) -> RunnableConfig {
    RunnableConfig::thread(format!("bench-{run}")).with_recursion_limit(1_000_000_000)
}

/// Streams `updates` to the end and returns the chunks.
pub(crate) fn run_updates(
    rt: &tokio::runtime::Runtime,
    graph: &CompiledStateGraph,
    input: &Value,
    run: usize,
) -> Vec<Arc<NodeUpdate>> {
    rt.block_on(async {
        // Durability `exit`: a graph with a checkpointer saves one
        // checkpoint per run, when it ends.
        let options = RunOptions::new().durability(Durability::Exit);
        graph
            .stream_with(input.clone(), &config(run), StreamMode::Updates, options)
            .map(|chunk| {
                let chunk = chunk.unwrap_or_else(|err| panic!("the run failed: {err}"));
                chunk
                    .data
                    .downcast_arc::<NodeUpdate>()
                    .unwrap_or_else(|_| panic!("an updates chunk that is not a node update"))
            })
            .collect()
            .await
    })
}

fn messages_schema() -> Schema {
    // MessagesState: `messages` with a list reducer (add_messages arrives with
    // the LLM layer; this workload never writes the key).
    Schema::new().append("messages")
}

fn sequential_builder(n: usize) -> StateGraph {
    let mut graph = StateGraph::new(messages_schema());
    let mut previous = START.to_owned();
    for i in 0..n {
        let name = format!("node_{i}");
        graph
            .add_node(&name, |_: ChannelValues| async { Ok::<_, NodeError>(()) })
            .and_then(|g| g.add_edge(&previous, &name))
            .unwrap_or_else(|err| panic!("{err}"));
        previous = name;
    }
    graph
        .add_edge(&previous, END)
        .unwrap_or_else(|err| panic!("{err}"));
    graph
}

fn sequential_runner(n: usize) -> Runner {
    let graph = sequential_builder(n)
        .compile()
        .unwrap_or_else(|err| panic!("{err}"));
    let rt = runtime();
    let input = Value::from_json(json!({"messages": []}));
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let chunks = run_updates(&rt, &graph, &input, run);
        Outcome {
            chunks: chunks.len(),
            check: Check::later(move || {
                let names: Vec<&str> = chunks.iter().map(|c| &*c.node).collect();
                json!({
                    "chunks": chunks.len(),
                    "first_node": names.first(),
                    "last_node": names.last(),
                    "all_updates_empty": chunks.iter().all(|c| matches!(c.update, UpdatePayload::None)),
                })
            }),
        }
    })
}

fn first_event_runner() -> Runner {
    let graph = sequential_builder(1000)
        .compile()
        .unwrap_or_else(|err| panic!("{err}"));
    let rt = runtime();
    let input = Value::from_json(json!({"messages": []}));
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let first = rt.block_on(async {
            let mut stream = graph.stream(input.clone(), &config(run), StreamMode::Updates);
            let first = stream.next().await;
            drop(stream);
            first
        });
        let first: Vec<String> = first
            .into_iter()
            .filter_map(|c| {
                c.ok()?
                    .data
                    .downcast_arc::<NodeUpdate>()
                    .ok()
                    .map(|u| u.node.to_string())
            })
            .collect();
        Outcome {
            chunks: first.len(),
            check: json!({"chunks": first.len(), "first": first}).into(),
        }
    })
}

pub(crate) fn compilation_runner(builder: StateGraph) -> Runner {
    Box::new(move || {
        let compiled = builder.compile().unwrap_or_else(|err| panic!("{err}"));
        // As the Python harness: only `compile()` is timed. The check reads
        // the last compiled graph after the clock stops, and each graph is
        // dropped there too (Python's compiled graphs hold reference cycles,
        // so its harness leaves their freeing to the garbage collector).
        Outcome {
            chunks: 0,
            check: Check::later(move || {
                let user_nodes = compiled
                    .pregel()
                    .shape()
                    .node_names()
                    .iter()
                    .filter(|n| !n.starts_with("__"))
                    .count();
                json!({"user_nodes": user_nodes})
            }),
        }
    })
}

const BUMP_SUFFIX: &str = " a a a a a a a a a a";

/// The fan-out subgraph: edit, generate, then bump until ten bumps.
fn joke_subgraph() -> CompiledStateGraph {
    let mut sub = StateGraph::new(
        Schema::new()
            .key("subject", LastValue::<Value>::new())
            .key("jokes", LastValue::<Value>::new()),
    )
    .with_input_keys(["subject"])
    .and_then(|g| g.with_output_keys(["jokes"]))
    .unwrap_or_else(|err| panic!("{err}"));
    let result = (|| -> Result<(), stategraph_graph::GraphError> {
        sub.add_node("edit", |s: ChannelValues| async move {
            let subject = s.get("subject").map(subject_text).unwrap_or_default();
            Ok::<_, NodeError>(ChannelValues::new(vec![(
                Arc::from("subject"),
                Value::new(concat_exact(&subject, " - hohoho")),
            )]))
        })?;
        sub.add_node("generate", |s: ChannelValues| async move {
            let subject = s.get("subject").map(subject_text).unwrap_or_default();
            Ok::<_, NodeError>(ChannelValues::new(vec![(
                Arc::from("jokes"),
                Value::new(vec![Arc::<str>::from(concat_exact(
                    "Joke about ",
                    &subject,
                ))]),
            )]))
        })?;
        sub.add_node("bump", |s: ChannelValues| async move {
            let joke = first_joke(&s);
            Ok::<_, NodeError>(ChannelValues::new(vec![(
                Arc::from("jokes"),
                Value::new(vec![Arc::<str>::from(concat_exact(joke, " a"))]),
            )]))
        })?;
        sub.add_edge(START, "edit")?;
        sub.add_edge("edit", "generate")?;
        sub.add_edge("generate", "bump")?;
        sub.set_finish_point("generate")?;
        sub.add_conditional_edges(
            "bump",
            |s: &ChannelValues| {
                if first_joke(s).ends_with(BUMP_SUFFIX) {
                    END
                } else {
                    "bump"
                }
            },
            None,
        )?;
        Ok(())
    })();
    result.unwrap_or_else(|err| panic!("{err}"));
    sub.compile().unwrap_or_else(|err| panic!("{err}"))
}

/// Python's f-string of the subject: a list of letters prints as its repr.
fn subject_text(value: &Value) -> Cow<'_, str> {
    if let Some(text) = value.downcast_ref::<String>() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(match value.as_json() {
        Some(serde_json::Value::String(text)) => return Cow::Borrowed(text),
        Some(serde_json::Value::Array(items)) => {
            let mut text = String::with_capacity(items.len() * 5 + 2);
            text.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                text.push('\'');
                text.push_str(item.as_str().unwrap_or_default());
                text.push('\'');
            }
            text.push(']');
            text
        }
        Some(other) => other.to_string(),
        None => String::new(),
    })
}

/// `a` then `b` in a string of exactly their length, as Python builds one
/// (`format!` would leave up to twice the capacity, kept by every saved joke).
fn concat_exact(a: &str, b: &str) -> String {
    let mut text = String::with_capacity(a.len() + b.len());
    text.push_str(a);
    text.push_str(b);
    text
}

/// The subgraph's joke. Jokes are shared strings: the parent's list holds
/// the subgraph's strings, as Python's list holds references.
fn first_joke(state: &ChannelValues) -> &str {
    let Some(jokes) = state.get("jokes") else {
        return "";
    };
    if let Some(jokes) = jokes.downcast_ref::<Vec<Arc<str>>>() {
        return jokes.first().map_or("", |joke| &**joke);
    }
    jokes
        .as_json()
        .and_then(|j| j.get(0))
        .and_then(|j| j.as_str())
        .unwrap_or_default()
}

fn fanout_runner(n: usize, checkpoint: bool) -> Runner {
    let mut parent = StateGraph::new(
        Schema::new()
            .key("subjects", LastValue::<Value>::new())
            .key(
                "jokes",
                BinaryOperatorAggregate::new(reducers::append::<Vec<Arc<str>>>),
            ),
    );
    let result = (|| -> Result<(), stategraph_graph::GraphError> {
        parent.add_node("generate_joke", joke_subgraph())?;
        parent.add_conditional_edges(
            START,
            |s: &ChannelValues| {
                // Each Send shares its subject with the input, as Python passes references.
                let subjects = s
                    .get("subjects")
                    .and_then(|v| v.clone().try_live::<Vec<Value>>().ok());
                subjects
                    .iter()
                    .flat_map(|subjects| subjects.iter())
                    .map(|subject| {
                        Send::new(
                            "generate_joke",
                            ChannelValues::new(vec![(Arc::from("subject"), subject.clone())]),
                        )
                    })
                    .collect::<Vec<_>>()
            },
            None,
        )?;
        parent.add_edge("generate_joke", END)?;
        Ok(())
    })();
    result.unwrap_or_else(|err| panic!("{err}"));
    let graph = compile(&parent, checkpoint);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let subjects: Vec<Value> = (0..n)
        .map(|i| {
            let letters: Vec<String> = (0..1000)
                .map(|j| (letters[(31 * i + 7 * j) % 26] as char).to_string())
                .collect();
            Value::from_json(json!(letters))
        })
        .collect();
    let input = Value::new(ChannelValues::new(vec![(
        Arc::from("subjects"),
        Value::new(subjects),
    )]));
    let rt = runtime();
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let chunks = run_updates(&rt, &graph, &input, run);
        Outcome {
            chunks: chunks.len(),
            check: Check::later(move || {
                let jokes: Vec<Arc<str>> = chunks
                    .iter()
                    .filter(|c| &*c.node == "generate_joke")
                    .flat_map(|c| match &c.update {
                        UpdatePayload::Map(values) => values
                            .get("jokes")
                            .and_then(|j| j.clone().decode::<Vec<Arc<str>>>().ok())
                            .map(|j| (*j).clone())
                            .unwrap_or_default(),
                        _ => Vec::new(),
                    })
                    .collect();
                let mut lengths: Vec<usize> = jokes.iter().map(|j| j.chars().count()).collect();
                lengths.sort_unstable();
                lengths.dedup();
                json!({
                    "chunks": chunks.len(),
                    "jokes": jokes.len(),
                    "joke_lengths": lengths,
                    "all_end_with_10_bumps": jokes.iter().all(|j| j.ends_with(&format!(" - hohoho{BUMP_SUFFIX}"))),
                })
            }),
        }
    })
}

const LIST_KEYS: &[&str] = &[
    "messages",
    "trigger_events",
    "categorizations",
    "responses",
    "memory_docs",
    "relevant_rules",
];
const DICT_KEYS: &[&str] = &[
    "user_info",
    "crm_info",
    "slack_participants",
    "notified_assignees",
    "autoresponse",
    "issue",
];

/// A shared dict: Python dicts hold references, so do we.
type Dict = BTreeMap<String, Value>;

/// Python truthiness of a stored value.
fn truthy(value: &Value) -> bool {
    if let Some(dict) = value.downcast_ref::<Dict>() {
        return !dict.is_empty();
    }
    match value.as_json() {
        Some(serde_json::Value::Null) | None => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(serde_json::Value::Array(a)) => !a.is_empty(),
        Some(serde_json::Value::Object(o)) => !o.is_empty(),
        Some(serde_json::Value::Number(n)) => n.as_f64() != Some(0.0),
    }
}

/// The wide state: lists of shared dicts, shared dicts, strings.
fn wide_schema() -> Schema {
    let list = || BinaryOperatorAggregate::new(reducers::append::<List<Value>>);
    let dict_merge = || BinaryOperatorAggregate::new(reducers::merge::<Dict>);
    Schema::new()
        .key("messages", list())
        .key("trigger_events", list())
        .key(
            "primary_issue_medium",
            BinaryOperatorAggregate::new(|x: String, y: String| if y.is_empty() { x } else { y }),
        )
        .key(
            "autoresponse",
            BinaryOperatorAggregate::<Value>::empty(reducers::replace),
        )
        .key(
            "issue",
            BinaryOperatorAggregate::<Value>::empty(|x, y| if truthy(&y) { y } else { x }),
        )
        .key("relevant_rules", LastValue::<List<Value>>::new())
        .key("memory_docs", LastValue::<List<Value>>::new())
        .key("categorizations", list())
        .key("responses", list())
        .key(
            "user_info",
            BinaryOperatorAggregate::<Value>::empty(non_null_new_or_old),
        )
        .key(
            "crm_info",
            BinaryOperatorAggregate::<Value>::empty(non_null_new_or_old),
        )
        .key(
            "email_thread_id",
            BinaryOperatorAggregate::<Value>::empty(non_null_new_or_old),
        )
        .key("slack_participants", dict_merge())
        .key("bot_id", LastValue::<String>::new())
        .key("notified_assignees", dict_merge())
}

fn non_null_new_or_old(x: Value, y: Value) -> Value {
    if y.as_json().is_some_and(serde_json::Value::is_null) {
        x
    } else {
        y
    }
}

/// A fresh string of `n` random lowercase letters: 12 letters per 64-bit
/// xorshift draw, 5 bits each (folded onto 26 letters; the slight bias does
/// not matter here), as `random.choices` does its work in C.
pub(crate) fn random_lowercase(n: usize, seed: &mut u64) -> String {
    const LETTERS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyzabcdef";
    let mut bytes = Vec::with_capacity(n + 12);
    while bytes.len() < n {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let draw = *seed;
        bytes.extend((0..12).map(|k| LETTERS[((draw >> (5 * k)) & 31) as usize]));
    }
    bytes.truncate(n);
    String::from_utf8(bytes).unwrap_or_default()
}

/// The node body shared by the six nodes (WORKLOADS.md section 6).
fn read_write(
    state: &ChannelValues,
    read: &str,
    writes: &[&str],
    n: usize,
    seed: &mut u64,
) -> ChannelValues {
    let value = state.get(read).cloned().unwrap_or_else(Value::null);
    let list = value.clone().try_live::<List<Value>>().ok();
    let (single, many): (Value, Value) = match list {
        Some(items) => (
            items.last().cloned().unwrap_or_else(Value::null),
            Value::from_arc(items),
        ),
        None => (value.clone(), Value::new(List::from(vec![value]))),
    };
    ChannelValues::new(
        writes
            .iter()
            .map(|key| {
                let written = if LIST_KEYS.contains(key) {
                    many.clone()
                } else if DICT_KEYS.contains(key) {
                    single.clone()
                } else {
                    Value::new(random_lowercase(n, seed))
                };
                (Arc::from(*key), written)
            })
            .collect(),
    )
}

fn wide_builder(n: usize) -> StateGraph {
    let mut graph = StateGraph::new(wide_schema());
    let nodes: [(&str, &str, &[&str]); 6] = [
        (
            "one",
            "messages",
            &["trigger_events", "primary_issue_medium"],
        ),
        ("two", "trigger_events", &["autoresponse", "issue"]),
        ("three", "autoresponse", &["relevant_rules"]),
        (
            "four",
            "trigger_events",
            &["categorizations", "responses", "memory_docs"],
        ),
        (
            "five",
            "categorizations",
            &[
                "user_info",
                "crm_info",
                "email_thread_id",
                "slack_participants",
                "bot_id",
                "notified_assignees",
            ],
        ),
        ("six", "responses", &["messages"]),
    ];
    let result = (|| -> Result<(), stategraph_graph::GraphError> {
        for (index, (name, read, writes)) in nodes.into_iter().enumerate() {
            let seed = std::sync::Mutex::new(0x9E37_79B9_7F4A_7C15_u64 ^ (index as u64 + 1));
            graph.add_node(name, move |state: ChannelValues| {
                let mut seed = seed.lock().unwrap_or_else(|p| p.into_inner());
                let update = read_write(&state, read, writes, n, &mut seed);
                async move { Ok::<_, NodeError>(update) }
            })?;
        }
        graph.add_edge(START, "one")?;
        graph.add_edge("one", "two")?;
        graph.add_edge("two", "three")?;
        graph.add_edge("two", "four")?;
        graph.add_waiting_edge(["three", "four"], "five")?;
        graph.add_edge("five", "six")?;
        graph.add_conditional_edges(
            "six",
            move |s: &ChannelValues| {
                let len = s
                    .get("messages")
                    .and_then(|v| v.downcast_ref::<List<Value>>().map(List::len))
                    .unwrap_or(0);
                if len > n { END } else { "one" }
            },
            None,
        )?;
        Ok(())
    })();
    result.unwrap_or_else(|err| panic!("{err}"));
    graph
}

/// The input document `M`: outer keys of inner keys of the 25-item list `L`,
/// shared by reference wherever it is stored.
pub(crate) fn wide_document(outer: usize, inner: usize) -> Value {
    let l: Vec<serde_json::Value> = (0..5)
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
    let l = Value::from_json(serde_json::Value::Array(l));
    let inner_map: Dict = (0..inner)
        .map(|j| (j.to_string().repeat(10), l.clone()))
        .collect();
    let inner_value = Value::new(inner_map);
    let outer_map: Dict = (0..outer)
        .map(|i| (i.to_string().repeat(10), inner_value.clone()))
        .collect();
    Value::new(outer_map)
}

fn wide_runner(outer: usize, inner: usize, n: usize, checkpoint: bool) -> Runner {
    wide_run(compile(&wide_builder(n), checkpoint), outer, inner)
}

/// Runs a compiled wide graph (dict or typed state) on the input `{messages:
/// [M]}` and checks it as the Python harness does.
pub(crate) fn wide_run(graph: CompiledStateGraph, outer: usize, inner: usize) -> Runner {
    let document = wide_document(outer, inner);
    let input = Value::new(ChannelValues::new(vec![(
        Arc::from("messages"),
        Value::new(List::from(vec![document])),
    )]));
    let rt = runtime();
    let mut run = 0;
    Box::new(move || {
        run += 1;
        let chunks = run_updates(&rt, &graph, &input, run);
        Outcome {
            chunks: chunks.len(),
            check: Check::later(move || {
                let mut messages_len = 1;
                let mut counts: HashMap<&str, usize> = HashMap::new();
                for chunk in &chunks {
                    *counts.entry(&*chunk.node).or_default() += 1;
                    if let ("six", UpdatePayload::Map(values)) = (&*chunk.node, &chunk.update) {
                        messages_len += values
                            .get("messages")
                            .and_then(|v| v.downcast_ref::<List<Value>>())
                            .map_or(0, List::len);
                    }
                }
                let node_counts: serde_json::Map<String, serde_json::Value> =
                    ["one", "two", "three", "four", "five", "six"]
                        .iter()
                        .map(|k| ((*k).to_owned(), json!(counts.get(k).copied().unwrap_or(0))))
                        .collect();
                json!({
                    "chunks": chunks.len(),
                    "iterations": counts.get("six").copied().unwrap_or(0),
                    "final_messages_len": messages_len,
                    "node_counts": node_counts,
                })
            }),
        }
    })
}
