//! `wide_state_*`: the wide workload over a typed state (LangGraph's
//! dataclass variant), with `#[derive(State)]`, typed views and updates.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use stategraph_core::{List, Value};
use stategraph_graph::{END, NodeError, START, State, StateGraph};

use crate::{Runner, Workload};

type Dict = BTreeMap<String, Value>;

pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "wide_state_25x300",
            setup: || runner(5, 5, 300, false),
        },
        Workload {
            name: "wide_state_25x300_checkpoint",
            setup: || runner(5, 5, 300, true),
        },
        Workload {
            name: "wide_state_15x600",
            setup: || runner(3, 5, 600, false),
        },
        Workload {
            name: "wide_state_15x600_checkpoint",
            setup: || runner(3, 5, 600, true),
        },
        Workload {
            name: "wide_state_9x1200",
            setup: || runner(3, 3, 1200, false),
        },
        Workload {
            name: "wide_state_9x1200_checkpoint",
            setup: || runner(3, 3, 1200, true),
        },
        Workload {
            name: "wide_state_15x600_compilation",
            setup: compilation,
        },
    ]
}

fn new_or_old(x: String, y: String) -> String {
    if y.is_empty() { x } else { y }
}

/// A dict shared by reference, as Python's state holds the one dict `M`.
type Shared = Arc<Dict>;

fn always_new(_x: Option<Shared>, y: Option<Shared>) -> Option<Shared> {
    y
}

fn truthy_new_or_old(x: Option<Shared>, y: Option<Shared>) -> Option<Shared> {
    if y.as_ref().is_some_and(|d| !d.is_empty()) {
        y
    } else {
        x
    }
}

fn non_null_new_or_old<T>(x: Option<T>, y: Option<T>) -> Option<T> {
    if y.is_some() { y } else { x }
}

/// The 15-key state of WORKLOADS.md section 6. List elements and dicts are
/// shared `Value`s, as Python's lists hold references to one dict `M`.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Wide {
    #[state(reducer = append)]
    messages: List<Value>,
    #[state(reducer = append)]
    trigger_events: List<Value>,
    #[state(reducer = new_or_old)]
    primary_issue_medium: String,
    #[state(reducer = always_new)]
    autoresponse: Option<Shared>,
    #[state(reducer = truthy_new_or_old)]
    issue: Option<Shared>,
    relevant_rules: Option<List<Value>>,
    memory_docs: Option<List<Value>>,
    #[state(reducer = append)]
    categorizations: List<Value>,
    #[state(reducer = append)]
    responses: List<Value>,
    #[state(reducer = non_null_new_or_old)]
    user_info: Option<Shared>,
    #[state(reducer = non_null_new_or_old)]
    crm_info: Option<Shared>,
    #[state(reducer = non_null_new_or_old)]
    email_thread_id: Option<String>,
    #[state(reducer = merge)]
    slack_participants: Dict,
    bot_id: Option<String>,
    #[state(reducer = merge)]
    notified_assignees: Dict,
}

/// The last element of a list of shared dicts, as the dict itself.
fn last_dict(list: &List<Value>) -> Option<Shared> {
    list.last()
        .and_then(|v| v.clone().downcast_arc::<Dict>().ok())
}

fn random(n: usize, seed: &Mutex<u64>) -> String {
    let mut seed = seed.lock().unwrap_or_else(|p| p.into_inner());
    crate::graphs::random_lowercase(n, &mut seed)
}

fn builder(n: usize) -> StateGraph {
    let mut graph = StateGraph::typed::<Wide>();
    let seed = Arc::new(Mutex::new(0x2545_F491_4F6C_DD1D_u64));
    let result = (|| -> Result<(), stategraph_graph::GraphError> {
        let s = seed.clone();
        graph.add_node("one", move |state: WideView| {
            let update = WideUpdate::default()
                .trigger_events((*state.messages).clone())
                .primary_issue_medium(random(n, &s));
            async move { Ok::<_, NodeError>(update) }
        })?;
        graph.add_node("two", |state: WideView| {
            let single = last_dict(&state.trigger_events);
            let update = WideUpdate::default()
                .autoresponse(single.clone())
                .issue(single);
            async move { Ok::<_, NodeError>(update) }
        })?;
        graph.add_node("three", |state: WideView| {
            // Reads a dict, so `many` is a one-element list of it.
            let dict = (*state.autoresponse).clone().unwrap_or_default();
            let many = List::from(vec![Value::from_arc(dict)]);
            let update = WideUpdate::default().relevant_rules(Some(many));
            async move { Ok::<_, NodeError>(update) }
        })?;
        graph.add_node("four", |state: WideView| {
            let many = (*state.trigger_events).clone();
            let update = WideUpdate::default()
                .categorizations(many.clone())
                .responses(many.clone())
                .memory_docs(Some(many));
            async move { Ok::<_, NodeError>(update) }
        })?;
        let s = seed.clone();
        graph.add_node("five", move |state: WideView| {
            let single = last_dict(&state.categorizations);
            let update = WideUpdate::default()
                .user_info(single.clone())
                .crm_info(single.clone())
                .email_thread_id(Some(random(n, &s)))
                .slack_participants(single.as_deref().cloned().unwrap_or_default())
                .bot_id(Some(random(n, &s)))
                .notified_assignees(single.as_deref().cloned().unwrap_or_default());
            async move { Ok::<_, NodeError>(update) }
        })?;
        graph.add_node("six", |state: WideView| {
            let update = WideUpdate::default().messages((*state.responses).clone());
            async move { Ok::<_, NodeError>(update) }
        })?;
        graph.add_edge(START, "one")?;
        graph.add_edge("one", "two")?;
        graph.add_edge("two", "three")?;
        graph.add_edge("two", "four")?;
        graph.add_waiting_edge(["three", "four"], "five")?;
        graph.add_edge("five", "six")?;
        graph.add_conditional_edges(
            "six",
            move |s: &WideView| if s.messages.len() > n { END } else { "one" },
            None,
        )?;
        Ok(())
    })();
    result.unwrap_or_else(|err| panic!("{err}"));
    graph
}

fn runner(outer: usize, inner: usize, n: usize, checkpoint: bool) -> Runner {
    crate::graphs::wide_run(
        crate::graphs::compile(&builder(n), checkpoint),
        outer,
        inner,
    )
}

fn compilation() -> Runner {
    crate::graphs::compilation_runner(builder(600))
}
