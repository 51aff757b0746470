//! Typed state end to end: `#[derive(State)]` used from another crate, its
//! schema, partial updates, reducers, the zero-copy view, missing keys,
//! `Send`s with typed arguments, topics and ephemeral keys, serde renames and
//! the `crate` override.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    ChannelValues, END, FromInput, IntoNodeOutput, NodeError, START, Send, State, StateGraph,
};

/// Keeps the longer string: a user reducer named by path.
mod pick {
    pub(crate) fn longest(current: String, write: String) -> String {
        if write.len() > current.len() {
            write
        } else {
            current
        }
    }
}

/// The map-reduce state of LangGraph's jokes example.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Overall {
    /// What to joke about.
    pub subjects: Vec<String>,
    /// Every joke, in task order.
    #[state(reducer = append)]
    pub jokes: Vec<String>,
    /// The longest joke so far.
    #[state(reducer = pick::longest)]
    pub best: String,
    /// How many reviews ran.
    #[state(reducer = add)]
    pub reviews: u32,
    /// A plain key nobody writes in some tests.
    pub note: Option<String>,
}

/// What one `generate` task gets.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Subject {
    subject: String,
}

fn config() -> RunnableConfig {
    RunnableConfig::default()
}

/// Runs `app` on `input` to the end; its final state.
async fn finished<S: State>(
    app: &stategraph_graph::CompiledStateGraph,
    input: impl stategraph_graph::TypedInput<S>,
) -> S {
    app.invoke_typed(input, &config())
        .await
        .unwrap()
        .done()
        .unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_schema_has_one_key_per_field_in_order() {
    let schema = Overall::schema();
    assert_eq!(
        schema.keys().collect::<Vec<_>>(),
        ["subjects", "jokes", "best", "reviews", "note"]
    );
    let debug = format!("{schema:?}");
    assert!(debug.contains("LastValue"), "{debug}");
    assert!(debug.contains("BinaryOperatorAggregate"), "{debug}");
}

#[tokio::test]
async fn map_reduce_over_a_typed_state() {
    async fn generate(input: Subject) -> Result<OverallUpdate, NodeError> {
        let joke = format!("a joke about {}", input.subject);
        Ok(OverallUpdate::default()
            .jokes(vec![joke.clone()])
            .best(joke))
    }
    async fn review(state: OverallView) -> Result<OverallUpdate, NodeError> {
        Ok(OverallUpdate::default()
            .reviews(1_u32)
            .note(format!("{} jokes", state.jokes.len())))
    }

    let mut graph = StateGraph::typed::<Overall>();
    graph.add_node("generate", generate).unwrap();
    graph.add_node("review", review).unwrap();
    graph
        .add_conditional_edges(
            START,
            |state: &OverallView| {
                state
                    .subjects
                    .iter()
                    .map(|s| Send::new("generate", Subject { subject: s.clone() }))
                    .collect::<Vec<_>>()
            },
            None,
        )
        .unwrap();
    graph.add_edge("generate", "review").unwrap();
    graph
        .add_conditional_edges(
            "review",
            |state: &OverallView| if *state.reviews < 3 { "review" } else { END },
            None,
        )
        .unwrap();
    let app = graph.compile().unwrap();

    let input = Overall {
        subjects: strings(&["cats", "elephants", "dogs"]),
        ..Default::default()
    };
    let out = finished(&app, input).await;
    assert_eq!(
        out.jokes,
        [
            "a joke about cats",
            "a joke about elephants",
            "a joke about dogs"
        ]
    );
    assert_eq!(out.best, "a joke about elephants");
    assert_eq!(out.reviews, 3);
    assert_eq!(out.note.as_deref(), Some("3 jokes"));
    assert_eq!(out.subjects, ["cats", "elephants", "dogs"]);
}

#[tokio::test]
async fn an_update_writes_exactly_its_set_fields() {
    let update = OverallUpdate::default()
        .note("hello".to_owned())
        .jokes(strings(&["j"]));
    let values: ChannelValues = update.clone().into();
    let keys: Vec<&str> = values.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["jokes", "note"], "field order, only the set fields");
    assert_eq!(values.json("note"), Some(json!("hello")));

    // Through a graph: both fields are written in the same step.
    let mut graph = StateGraph::typed::<Overall>();
    graph
        .add_node("write", move |_: OverallView| {
            let update = update.clone();
            async move { Ok::<_, NodeError>(update) }
        })
        .unwrap();
    graph.add_edge(START, "write").unwrap();
    graph.add_edge("write", END).unwrap();
    let app = graph.compile().unwrap();
    let input = Overall {
        jokes: strings(&["first"]),
        ..Default::default()
    };
    let out = finished(&app, input).await;
    assert_eq!(out.jokes, ["first", "j"]);
    assert_eq!(out.note.as_deref(), Some("hello"));
    // An empty update writes nothing.
    let empty: ChannelValues = OverallUpdate::default().into();
    assert!(empty.is_empty());
}

#[tokio::test]
async fn reducers_named_by_path_fold_parallel_writes() {
    let mut graph = StateGraph::typed::<Overall>();
    for (name, best) in [("a", "short"), ("b", "the longest one"), ("c", "medium")] {
        graph
            .add_node(name, move |_: OverallView| async move {
                Ok::<_, NodeError>(OverallUpdate::default().best(best).reviews(2_u32))
            })
            .unwrap();
        graph.add_edge(START, name).unwrap();
        graph.add_edge(name, END).unwrap();
    }
    let app = graph.compile().unwrap();
    let out = finished(
        &app,
        Overall {
            best: "seed".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(out.best, "the longest one");
    assert_eq!(out.reviews, 6);
}

/// A large value that counts its clones.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Big {
    /// The payload.
    pub bytes: Vec<u8>,
}

static BIG_CLONES: AtomicUsize = AtomicUsize::new(0);

impl Clone for Big {
    fn clone(&self) -> Self {
        BIG_CLONES.fetch_add(1, Ordering::SeqCst);
        Self {
            bytes: self.bytes.clone(),
        }
    }
}

/// A loop state with a large untouched key.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Looping {
    /// Never written by the nodes.
    pub big: Big,
    /// The step counter.
    pub n: u64,
}

#[tokio::test]
async fn the_view_never_copies_untouched_values() {
    // Addresses, not `Arc`s: holding the values would make the output share them.
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut graph = StateGraph::typed::<Looping>();
    let record = seen.clone();
    graph
        .add_node("tick", move |state: LoopingView| {
            record
                .lock()
                .unwrap()
                .push(Arc::as_ptr(&state.big) as usize);
            async move { Ok::<_, NodeError>(LoopingUpdate::default().n(*state.n + 1)) }
        })
        .unwrap();
    graph.add_edge(START, "tick").unwrap();
    graph
        .add_conditional_edges(
            "tick",
            |state: &LoopingView| if *state.n < 100 { "tick" } else { END },
            None,
        )
        .unwrap();
    let app = graph.compile().unwrap();

    let input = Looping {
        big: Big {
            bytes: vec![7; 1 << 20],
        },
        n: 0,
    };
    let buffer = input.big.bytes.as_ptr();
    let out = app
        .invoke_typed(input, &config().with_recursion_limit(1000))
        .await
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(out.n, 100);
    assert_eq!(out.big.bytes.len(), 1 << 20);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 100);
    // Every step saw the very same allocation...
    assert!(seen.iter().all(|big| *big == seen[0]));
    // ...the output's payload is the input's buffer, moved in and out...
    assert_eq!(out.big.bytes.as_ptr(), buffer);
    // ...and nothing was cloned: not the input, not 100 node reads and 100
    // router reads, not the output.
    assert_eq!(BIG_CLONES.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn consecutive_nodes_share_untouched_values() {
    let seen: Arc<Mutex<Vec<Arc<Vec<String>>>>> = Arc::default();
    let mut graph = StateGraph::typed::<Overall>();
    for name in ["first", "second"] {
        let record = seen.clone();
        graph
            .add_node(name, move |state: OverallView| {
                record.lock().unwrap().push(state.subjects.clone());
                async move { Ok::<_, NodeError>(OverallUpdate::default().reviews(1_u32)) }
            })
            .unwrap();
    }
    graph.add_edge(START, "first").unwrap();
    graph.add_edge("first", "second").unwrap();
    graph.add_edge("second", END).unwrap();
    let app = graph.compile().unwrap();
    app.invoke(json!({"subjects": ["cats"]}), &config())
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(Arc::ptr_eq(&seen[0], &seen[1]));
}

#[tokio::test]
async fn missing_keys_read_as_defaults() {
    let seen: Arc<Mutex<Option<OverallView>>> = Arc::default();
    let record = seen.clone();
    let mut graph = StateGraph::typed::<Overall>();
    graph
        .add_node("read", move |state: OverallView| {
            *record.lock().unwrap() = Some(state);
            async { Ok::<_, NodeError>(()) }
        })
        .unwrap();
    graph.add_edge(START, "read").unwrap();
    graph.add_edge("read", END).unwrap();
    let app = graph.compile().unwrap();
    // A partial JSON input: `note` is never written.
    let out = app
        .invoke(json!({"subjects": ["owls"]}), &config())
        .await
        .unwrap();
    assert!(out.to_json().unwrap().get("note").is_none());

    let view = seen.lock().unwrap().take().unwrap();
    assert_eq!(*view.subjects, ["owls"]);
    assert_eq!(*view.note, None);
    assert!(view.jokes.is_empty());
    let state = view.to_state();
    assert_eq!(state.subjects, ["owls"]);
    assert_eq!(state.note, None);

    // The view of an empty map: every key at its default.
    let empty = Overall::view(&ChannelValues::default()).unwrap();
    assert_eq!(*empty.reviews, 0);
}

#[test]
fn a_view_reads_keys_in_any_order() {
    // Fields in order, then shuffled, partial, with a key the state does not
    // declare: each key lands in its own field.
    let value = |json: serde_json::Value| Value::from_json(json);
    let in_order = ChannelValues::new(vec![
        (Arc::from("subjects"), value(json!(["a"]))),
        (Arc::from("jokes"), value(json!(["j"]))),
        (Arc::from("best"), value(json!("b"))),
        (Arc::from("reviews"), value(json!(2))),
        (Arc::from("note"), value(json!("n"))),
    ]);
    let shuffled = ChannelValues::new(vec![
        (Arc::from("note"), value(json!("n"))),
        (Arc::from("other"), value(json!(7))),
        (Arc::from("reviews"), value(json!(2))),
        (Arc::from("subjects"), value(json!(["a"]))),
        (Arc::from("best"), value(json!("b"))),
    ]);
    for values in [in_order, shuffled] {
        let view = Overall::view(&values).unwrap();
        assert_eq!(*view.subjects, ["a"]);
        assert_eq!(*view.best, "b");
        assert_eq!(*view.reviews, 2);
        assert_eq!(view.note.as_deref(), Some("n"));
    }
    let view = Overall::view(&ChannelValues::new(vec![(
        Arc::from("reviews"),
        value(json!(3)),
    )]))
    .unwrap();
    assert_eq!(*view.reviews, 3);
    assert!(view.jokes.is_empty() && view.subjects.is_empty());
}

#[tokio::test]
async fn sends_carry_typed_arguments() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let mut graph = StateGraph::typed::<Overall>();
    // A node taking a typed `Send` argument (the live value, not JSON).
    graph
        .add_node("by_subject", |input: Subject| async move {
            Ok::<_, NodeError>(OverallUpdate::default().jokes(vec![input.subject]))
        })
        .unwrap();
    // A node taking the view, sent a whole state or a JSON object.
    graph
        .add_node("by_view", move |state: OverallView| {
            record
                .lock()
                .unwrap()
                .push(format!("{:?}/{:?}", state.subjects, state.note));
            async { Ok::<_, NodeError>(()) }
        })
        .unwrap();
    graph
        .add_conditional_edges(
            START,
            |_: &OverallView| {
                vec![
                    Send::new(
                        "by_subject",
                        Subject {
                            subject: "sent".into(),
                        },
                    ),
                    Send::new(
                        "by_view",
                        Overall {
                            subjects: strings(&["live"]),
                            note: Some("state".into()),
                            ..Default::default()
                        },
                    ),
                    Send::new("by_view", json!({"subjects": ["json"]})),
                ]
            },
            None,
        )
        .unwrap();
    graph.add_edge("by_subject", END).unwrap();
    graph.add_edge("by_view", END).unwrap();
    let app = graph.compile().unwrap();
    let out = finished(&app, Overall::default()).await;
    assert_eq!(out.jokes, ["sent"]);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"["live"]/Some("state")"#.to_owned(),
            r#"["json"]/None"#.to_owned()
        ]
    );
}

#[tokio::test]
async fn a_value_of_the_wrong_shape_names_its_key() {
    let mut graph = StateGraph::typed::<Overall>();
    graph
        .add_node("read", |_: OverallView| async { Ok::<_, NodeError>(()) })
        .unwrap();
    graph
        .add_conditional_edges(
            START,
            |_: &OverallView| Send::new("read", json!({"reviews": "many"})),
            None,
        )
        .unwrap();
    graph.add_edge("read", END).unwrap();
    let err = graph
        .compile()
        .unwrap()
        .invoke_typed(Overall::default(), &config())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("at `reviews`"), "{err}");
    assert!(err.contains("u32"), "{err}");

    // Not a map at all.
    let err = OverallView::from_input(Value::new(3_u8)).unwrap_err();
    assert!(err.message().contains("ChannelValues"), "{err}");
}

#[tokio::test]
async fn the_state_struct_is_a_node_input_too() {
    let mut graph = StateGraph::typed::<Overall>();
    graph
        .add_node("copy", |state: Overall| async move {
            Ok::<_, NodeError>(OverallUpdate::default().note(format!("{}", state.subjects.len())))
        })
        .unwrap();
    graph.add_edge(START, "copy").unwrap();
    graph.add_edge("copy", END).unwrap();
    let out = graph
        .compile()
        .unwrap()
        .invoke_typed(
            Overall {
                subjects: strings(&["a", "b"]),
                ..Default::default()
            },
            &config(),
        )
        .await
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(out.note.as_deref(), Some("2"));
}

/// Topic and ephemeral keys, which the state does not always hold.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Events {
    /// The writes of the last step.
    #[state(channel = "topic")]
    pub fresh: Vec<String>,
    /// Every write ever.
    #[state(channel = "topic", accumulate)]
    pub log: Vec<String>,
    /// Lives one step.
    #[state(channel = "ephemeral")]
    pub flash: Option<String>,
    /// What `collect` saw.
    pub seen: Vec<String>,
}

#[tokio::test]
async fn topics_and_ephemeral_keys() {
    let mut graph = StateGraph::typed::<Events>();
    for name in ["a", "b"] {
        graph
            .add_node(name, move |_: EventsView| async move {
                Ok::<_, NodeError>(
                    EventsUpdate::default()
                        .fresh(vec![name.to_owned()])
                        .log(vec![name.to_owned()]),
                )
            })
            .unwrap();
        graph.add_edge(START, name).unwrap();
        graph.add_edge(name, "collect").unwrap();
    }
    graph
        .add_node("collect", |state: EventsView| async move {
            let mut seen = (*state.fresh).clone();
            seen.push(format!("flash={:?}", state.flash));
            Ok::<_, NodeError>(EventsUpdate::default().seen(seen).flash("now".to_owned()))
        })
        .unwrap();
    graph.add_edge("collect", END).unwrap();
    let app = graph.compile().unwrap();
    let out = finished(&app, Events::default()).await;
    assert_eq!(out.seen, ["a", "b", "flash=None"]);
    assert_eq!(out.log, ["a", "b"]);
    // `fresh` was emptied after the step that read it; `flash` holds the
    // last step's write. Keys the output lacks read as defaults.
    assert!(out.fresh.is_empty());
    assert_eq!(out.flash.as_deref(), Some("now"));
    let raw = app.invoke(json!({}), &config()).await.unwrap();
    assert!(raw.to_json().unwrap().get("fresh").is_none());
}

/// Keys follow serde's names. `default` lets the struct be decoded from a
/// state that does not hold every key yet.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Renamed {
    /// Key `userName`.
    pub user_name: String,
    /// Key `ID`.
    #[serde(rename = "ID")]
    pub id: u64,
    /// Key `type` (a raw identifier).
    pub r#type: String,
}

#[tokio::test]
async fn keys_follow_serde_names() {
    assert_eq!(
        Renamed::schema().keys().collect::<Vec<_>>(),
        ["userName", "ID", "type"]
    );
    let mut graph = StateGraph::typed::<Renamed>();
    // The struct decoded from the state's JSON agrees with the key names.
    graph
        .add_node("copy", |state: Renamed| async move {
            Ok::<_, NodeError>(
                RenamedUpdate::default().r#type(format!("{}#{}", state.user_name, state.id)),
            )
        })
        .unwrap();
    graph.add_edge(START, "copy").unwrap();
    graph.add_edge("copy", END).unwrap();
    let app = graph.compile().unwrap();
    let out = app
        .invoke(json!({"userName": "ada", "ID": 7}), &config())
        .await
        .unwrap();
    assert_eq!(out.to_json().unwrap()["type"], json!("ada#7"));
}

/// A facade that re-exports the graph crate, as `stategraph` will.
mod facade {
    pub(crate) use stategraph_graph as graph;
}

/// A state whose generated code reaches the graph crate through the facade.
#[derive(facade::graph::State, Clone, Debug, Default, Serialize, Deserialize)]
#[state(crate = "facade::graph")]
struct Counter {
    #[state(reducer = add)]
    count: i64,
}

#[tokio::test]
async fn the_crate_path_can_be_overridden() {
    let mut graph = StateGraph::typed::<Counter>();
    graph
        .add_node("inc", |state: CounterView| async move {
            Ok::<_, NodeError>(CounterUpdate::default().count(*state.count + 1))
        })
        .unwrap();
    graph.add_edge(START, "inc").unwrap();
    graph.add_edge("inc", END).unwrap();
    let out = graph
        .compile()
        .unwrap()
        .invoke_typed(Counter { count: 20 }, &config())
        .await
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(out.count, 41);
}

#[test]
fn views_and_updates_convert_from_the_state() {
    let state = Overall {
        subjects: strings(&["x"]),
        reviews: 2,
        ..Default::default()
    };
    let view = OverallView::from(state.clone());
    assert_eq!(*view.reviews, 2);
    let shared = view.clone();
    // Shared: cloned out; unique: moved out.
    assert_eq!(shared.into_state().subjects, ["x"]);
    assert_eq!(Overall::from(view).reviews, 2);
    let update = OverallUpdate::from(state);
    assert_eq!(update.reviews, Some(2));
    assert!(matches!(
        update.into_node_output(),
        stategraph_graph::__private::NodeOutput::Value(_)
    ));
}

/// A conditional edge sees the node's own writes reduced in, and with
/// `add_messages` that includes the id it gives a message that has none:
/// the id the edge sees is the id the step commits (as in LangGraph, where
/// the reducer sets the id on the very message object the step keeps).
#[tokio::test]
async fn an_edge_sees_the_message_ids_the_step_commits() {
    use stategraph_graph::{MessagesState, MessagesStateUpdate, MessagesStateView};
    use stategraph_llm::Message;

    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut graph = StateGraph::typed::<MessagesState>();
    graph
        .add_node("speak", |_state: MessagesStateView| async move {
            Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![Message::ai("hi")]))
        })
        .unwrap();
    graph.add_edge(START, "speak").unwrap();
    let log = seen.clone();
    graph
        .add_conditional_edges(
            "speak",
            move |state: &MessagesStateView| {
                let id = state
                    .messages
                    .last()
                    .and_then(|m| m.id())
                    .unwrap_or_default();
                log.lock().unwrap().push(id.to_owned());
                END
            },
            None,
        )
        .unwrap();
    let out = graph
        .compile()
        .unwrap()
        .invoke(
            json!({"messages": [["user", "yo"]]}),
            &RunnableConfig::default(),
        )
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let committed = out["messages"][1]["id"].as_str().unwrap().to_owned();
    assert!(!committed.is_empty());
    assert_eq!(*seen.lock().unwrap(), vec![committed]);
}

/// A ticket waiting for a person's decision.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Ticket {
    title: String,
    note: Option<String>,
    #[state(reducer = append)]
    log: Vec<String>,
}

fn ticket_app(before: &[&str]) -> stategraph_graph::CompiledStateGraph {
    let mut graph = StateGraph::typed::<Ticket>();
    graph
        .add_node(
            "triage",
            |t: TicketView, ctx: stategraph_graph::TaskContext| async move {
                let decision = ctx.interrupt(format!("triage {}?", t.title))?.to_json()?;
                let decision = decision.as_str().unwrap_or_default().to_owned();
                Ok::<_, NodeError>(TicketUpdate::default().log(vec![decision]))
            },
        )
        .unwrap();
    graph
        .add_node("close", |_: TicketView| async {
            Ok::<_, NodeError>(TicketUpdate::default().log(vec!["closed".to_owned()]))
        })
        .unwrap();
    graph.add_edge(START, "triage").unwrap();
    graph.add_edge("triage", "close").unwrap();
    let saver = stategraph_checkpoint::InMemorySaver::new();
    let options = stategraph_graph::CompileOptions::new()
        .checkpointer(saver)
        .interrupt_before(before.iter().copied());
    graph.compile_with(options).unwrap()
}

/// A typed run that stops at an interrupt says so, with the interrupts and
/// the state; the resume finishes it. Its input writes only the fields set:
/// `note` is never written (LangGraph writes only the input dict's keys).
#[tokio::test]
async fn typed_runs_report_interrupts_and_write_only_the_fields_set() {
    let app = ticket_app(&[]);
    let cfg = RunnableConfig::thread("t1");
    let first = app
        .invoke_typed(TicketUpdate::default().title("printer"), &cfg)
        .await
        .unwrap();
    assert!(first.is_interrupted());
    assert_eq!(first.interrupts().len(), 1);
    assert_eq!(
        first.interrupts()[0].value.to_json().unwrap(),
        json!("triage printer?")
    );
    assert_eq!(first.state().title, "printer");
    // A paused run is not a finished one.
    let paused = first.clone().done().unwrap_err();
    assert_eq!(paused.0.len(), 1);
    assert!(paused.to_string().contains("paused"), "{paused}");

    let saved = app.get_state(&cfg).await.unwrap();
    // As LangGraph 1.2.22 shows it: the reducer key holds its empty start.
    assert_eq!(
        saved.values.to_json().unwrap(),
        json!({"title": "printer", "log": []})
    );
    // Typed readers of the snapshot.
    let ticket = Ticket::read(&saved.values).unwrap();
    assert_eq!((ticket.title.as_str(), ticket.note), ("printer", None));

    let resume = stategraph_graph::Command::new().resume(Value::from_json(json!("fix")));
    let done = app
        .invoke_typed::<Ticket>(resume, &cfg)
        .await
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(done.log, ["fix", "closed"]);
}

/// A static breakpoint pauses a typed run too (with no interrupt to show).
#[tokio::test]
async fn typed_runs_report_breakpoints() {
    let app = ticket_app(&["triage"]);
    let cfg = RunnableConfig::thread("t2");
    let out = app
        .invoke_typed(TicketUpdate::default().title("desk"), &cfg)
        .await
        .unwrap();
    assert!(out.is_interrupted(), "{out:?}");
    assert!(out.interrupts().is_empty());
    assert_eq!(out.state().title, "desk");
    // Every field written: a full state as input.
    let cfg = RunnableConfig::thread("t3");
    let full = app
        .invoke_typed(
            Ticket {
                title: "chair".into(),
                ..Ticket::default()
            },
            &cfg,
        )
        .await
        .unwrap();
    assert!(full.is_interrupted());
    let saved = app.get_state(&cfg).await.unwrap();
    assert_eq!(
        saved.values.to_json().unwrap(),
        json!({"title": "chair", "note": null, "log": []})
    );
}

/// `updates` chunks read as typed updates: only the keys a node wrote.
#[tokio::test]
async fn updates_chunks_read_as_typed_updates() {
    use futures::StreamExt;
    use stategraph_graph::{StreamMode, UpdatePayload};

    let app = ticket_app(&[]);
    let cfg = RunnableConfig::thread("t4");
    let input = ChannelValues::from(TicketUpdate::default().title("lamp"));
    let chunks: Vec<_> = app
        .stream(Value::new(input), &cfg, StreamMode::Updates)
        .collect()
        .await;
    assert_eq!(chunks.len(), 1, "only the interrupt");
    let resume = stategraph_graph::Command::new().resume(Value::from_json(json!("ok")));
    let mut updates = Vec::new();
    let mut stream = app.stream(resume, &cfg, StreamMode::Updates);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        let update = chunk
            .data
            .downcast_ref::<stategraph_graph::NodeUpdate>()
            .unwrap();
        if let UpdatePayload::Map(values) = &update.update {
            updates.push((update.node.to_string(), Ticket::update(values).unwrap()));
        }
    }
    let (node, update) = &updates[0];
    assert_eq!(node, "triage");
    assert_eq!(update.log.as_deref(), Some(&["ok".to_owned()][..]));
    assert!(update.title.is_none() && update.note.is_none());
    // The same from the chunk's JSON form.
    let json = Value::from_json(json!({"log": ["ok"]}));
    assert_eq!(Ticket::read_update(&json).unwrap().log.unwrap(), ["ok"]);
}
