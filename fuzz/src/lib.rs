//! What several fuzz targets share: a runtime, a small graph that pauses,
//! unique thread ids, and the field format the byte-oriented targets read.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value as Json, json};
use stategraph_checkpoint::{InMemorySaver, SharedSaver};
use stategraph_graph::{
    CompileOptions, CompiledStateGraph, END, MessagesState, NodeError, START, State, StateGraph,
    TaskContext,
};

/// A current-thread tokio runtime with a blocking pool (the SQLite saver
/// runs its statements there) and timers, built once per process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime builds")
    })
}

/// A thread id no earlier input of this process used, so inputs do not
/// see each other's threads.
pub fn fresh_thread(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("fuzz-{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `START -> echo -> ask -> END` over `MessagesState`'s `messages` (merged
/// with `add_messages`) plus `write` (last value), `log` (appended) and
/// `answer` (last value). `echo` logs `write` and adds an AI message;
/// `ask` pauses with `write` as its question and stores the answer it is
/// resumed with.
pub fn pausing_graph(saver: SharedSaver) -> CompiledStateGraph {
    let schema = MessagesState::schema()
        .last_value("write")
        .append("log")
        .last_value("answer");
    let mut graph = StateGraph::new(schema);
    graph
        .add_node("echo", |state: Json| async move {
            Ok::<_, NodeError>(json!({
                "log": [state["write"].clone()],
                "messages": [{"role": "ai", "content": "seen"}],
            }))
        })
        .expect("echo is a new node");
    graph
        .add_node("ask", |state: Json, ctx: TaskContext| async move {
            let answer = ctx.interrupt(json!({"question": state["write"].clone()}))?;
            Ok::<_, NodeError>(json!({"answer": answer.to_json()?}))
        })
        .expect("ask is a new node");
    graph.add_edge(START, "echo").expect("START -> echo");
    graph.add_edge("echo", "ask").expect("echo -> ask");
    graph.add_edge("ask", END).expect("ask -> END");
    graph
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the graph compiles")
}

/// A [`pausing_graph`] and its in-memory saver, shared by a target's inputs.
pub struct Paused {
    /// The saver the graph checkpoints to.
    pub saver: SharedSaver,
    /// The graph.
    pub graph: CompiledStateGraph,
}

/// The process's [`Paused`] fixture, built on first use.
pub fn paused() -> &'static Paused {
    static PAUSED: OnceLock<Paused> = OnceLock::new();
    PAUSED.get_or_init(|| {
        let saver: SharedSaver = std::sync::Arc::new(InMemorySaver::new());
        let graph = pausing_graph(saver.clone());
        Paused { saver, graph }
    })
}

/// The fields of `bytes` separated by `separator`: the byte-oriented
/// targets read their inputs as such fields, so seeds stay readable and
/// any byte string is still an input.
pub fn fields(bytes: &[u8], separator: u8) -> Vec<&[u8]> {
    bytes.split(|byte| *byte == separator).collect()
}

/// `bytes` as text, with invalid UTF-8 replaced (the targets whose entry
/// points take `&str`).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
