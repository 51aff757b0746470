//! [`MessagesState`]: LangGraph's ready-made state for chat graphs.

use serde::{Deserialize, Serialize};
use stategraph_llm::Message;

/// A state of one `messages` key merged with [`stategraph_llm::add_messages`]
/// (LangGraph's `MessagesState`): new messages are appended, a message whose
/// id is already there replaces it, messages without an id get one, and
/// `Message::remove` / `Message::remove_all` delete. Input may use any
/// form `Message` reads (`("user", "hi")` pairs, OpenAI- or LangChain-style
/// dicts, plain strings).
///
/// ```
/// use serde_json::json;
/// use stategraph_graph::{MessagesState, MessagesStateUpdate, MessagesStateView, NodeError, StateGraph, START};
/// use stategraph_llm::Message;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut graph = StateGraph::typed::<MessagesState>();
/// graph.add_node("bot", |state: MessagesStateView| {
///     let heard = state.messages.last().map(|m| m.text().into_owned()).unwrap_or_default();
///     let reply = Message::ai(format!("echo:{heard}"));
///     async move { Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![reply])) }
/// })?;
/// graph.add_edge(START, "bot")?;
/// let out = graph.compile()?.invoke(json!({"messages": [["user", "yo"]]}), &Default::default()).await?;
/// let state: MessagesState = serde_json::from_value(out.to_json()?)?;
/// assert_eq!(state.messages[1].text(), "echo:yo");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(crate::State, Clone, Debug, Default, Serialize, Deserialize)]
#[state(crate = "crate")]
pub struct MessagesState {
    /// The conversation.
    #[state(reducer = stategraph_llm::add_messages)]
    pub messages: Vec<Message>,
}
