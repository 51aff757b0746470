//! Rust ports of the official server's fixture graphs
//! (`shared/server/fixture/graph.py`: `hitl`, `simple`, `parent`, `boom`),
//! served under the same names by `examples/server` and used by this
//! crate's tests to compare with what the official server answered.
//! Compiled with the feature `fixtures`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::graph::{
    CompiledStateGraph, GraphError, NodeError, START, State, StateGraph, TaskContext,
};
use stategraph::llm::{AiMessage, CallOptions, ChatModel, FakeStreamingModel, Message};
use stategraph::store::Store;

/// The fixtures' state: `messages` merged with `add_messages`, `count`
/// and `approved` set by nodes.
/// As the Python fixture's `TypedDict`s (`total=False`), no key is
/// required in its JSON schemas.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
#[state(partial)]
pub struct Fixture {
    /// The conversation.
    #[state(reducer = stategraph::llm::add_messages)]
    pub messages: Vec<Message>,
    /// A counter the nodes add to.
    pub count: Option<i64>,
    /// The reviewer's answer.
    pub approved: Option<String>,
}

/// `START -> agent -> review -> finish`: the agent streams a fake model's
/// answer ("Hello from the fake model") and writes a custom chunk, review
/// asks for approval with an interrupt, finish puts the answer in the
/// store and adds 100 to `count`.
///
/// # Errors
/// None in practice: the graph is fixed ([`GraphError`] for the builder's
/// signature).
pub fn hitl() -> Result<CompiledStateGraph, GraphError> {
    let mut graph = StateGraph::typed::<Fixture>();
    graph.add_node("agent", |state: Fixture, ctx: TaskContext| async move {
        ctx.write_custom(json!({"progress": "agent-start"}));
        // A fresh id per reply, as a real model's (`lc_run--<uuid>` on the
        // official server): clients find where a message first appeared by
        // its id, so two branches must not share one.
        let reply = AiMessage::new("Hello from the fake model")
            .with_id(format!("lc_run--{}-0", uuid::Uuid::now_v7()));
        let model = FakeStreamingModel::new([reply]);
        let reply = model
            .invoke(&state.messages, &CallOptions::default())
            .await?;
        let count = state.count.unwrap_or(0) + 1;
        Ok::<_, NodeError>(
            FixtureUpdate::default()
                .messages(vec![reply.into()])
                .count(Some(count)),
        )
    })?;
    graph.add_node("review", |state: Fixture, ctx: TaskContext| async move {
        let count = state.count.unwrap_or(0);
        let answer = ctx.interrupt(json!({"question": "approve?", "count": count}))?;
        let answer = answer.to_json()?;
        // Python's `str(answer)` of a string is the string itself.
        let answer = answer
            .as_str()
            .map_or_else(|| answer.to_string(), str::to_owned);
        Ok::<_, NodeError>(FixtureUpdate::default().approved(Some(answer)))
    })?;
    graph.add_node("finish", |state: Fixture, ctx: TaskContext| async move {
        if let Some(store) = ctx.store() {
            store
                .put(
                    &["memories", "demo"],
                    "last",
                    json!({"approved": state.approved}),
                )
                .await
                .map_err(|err| NodeError::new("StoreError", err.to_string()))?;
        }
        Ok::<_, NodeError>(FixtureUpdate::default().count(Some(state.count.unwrap_or(0) + 100)))
    })?;
    graph.add_edge(START, "agent")?;
    graph.add_edge("agent", "review")?;
    graph.add_edge("review", "finish")?;
    graph.compile()
}

/// `START -> slow`: sleeps `count / 10` seconds, then adds 1 to `count`.
///
/// # Errors
/// As [`hitl`].
pub fn simple() -> Result<CompiledStateGraph, GraphError> {
    let mut graph = StateGraph::typed::<Fixture>();
    graph.add_node("slow", |state: Fixture| async move {
        let count = state.count.unwrap_or(0);
        let seconds = u64::try_from(count).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(seconds.saturating_mul(100))).await;
        Ok::<_, NodeError>(FixtureUpdate::default().count(Some(count + 1)))
    })?;
    graph.add_edge(START, "slow")?;
    graph.compile()
}

/// `START -> child`, a subgraph whose one node adds 10 to `count`.
///
/// # Errors
/// As [`hitl`].
pub fn parent() -> Result<CompiledStateGraph, GraphError> {
    let mut inner = StateGraph::typed::<Fixture>();
    inner.add_node("inner", |state: Fixture| async move {
        Ok::<_, NodeError>(FixtureUpdate::default().count(Some(state.count.unwrap_or(0) + 10)))
    })?;
    inner.add_edge(START, "inner")?;
    let mut graph = StateGraph::typed::<Fixture>();
    graph.add_node("child", inner.compile()?)?;
    graph.add_edge(START, "child")?;
    graph.compile()
}

/// `START -> explode`, which fails with `ValueError("boom: intentional
/// failure for the error-event transcript")`.
///
/// # Errors
/// As [`hitl`].
pub fn boom() -> Result<CompiledStateGraph, GraphError> {
    let mut graph = StateGraph::typed::<Fixture>();
    graph.add_node("explode", |_: Fixture| async {
        Err::<FixtureUpdate, _>(NodeError::new(
            "ValueError",
            "boom: intentional failure for the error-event transcript",
        ))
    })?;
    graph.add_edge(START, "explode")?;
    graph.compile()
}

/// The four fixture graphs under their fixture names, in the official
/// `langgraph.json`'s order.
///
/// # Errors
/// As [`hitl`].
pub fn all() -> Result<Vec<(&'static str, CompiledStateGraph)>, GraphError> {
    Ok(vec![
        ("hitl", hitl()?),
        ("simple", simple()?),
        ("parent", parent()?),
        ("boom", boom()?),
    ])
}

/// The official fixture's toy auth (`shared/server/fixture/auth.py`): the
/// bearer token is the user name, `alice` and `bob` are the users; a new
/// thread gets its creator as `metadata.owner`, and each user sees only
/// the threads they own; store namespaces are moved under the user's name.
#[derive(Clone, Copy, Debug, Default)]
pub struct OwnerAuth;

impl crate::auth::Auth for OwnerAuth {
    async fn authenticate(
        &self,
        request: &crate::auth::AuthRequest,
    ) -> Result<crate::auth::AuthUser, crate::auth::AuthError> {
        use crate::auth::{AuthError, AuthUser};
        let Some(user) = request
            .authorization()
            .and_then(|header| header.strip_prefix("Bearer "))
        else {
            return Err(AuthError::unauthorized("missing bearer token"));
        };
        let user = user.trim();
        if !["alice", "bob"].contains(&user) {
            return Err(AuthError::forbidden("unknown user"));
        }
        Ok(AuthUser::new(user).with_permissions(["threads:write"]))
    }

    async fn authorize(
        &self,
        ctx: &crate::auth::AuthContext<'_>,
        value: &mut serde_json::Value,
    ) -> Result<crate::auth::Authorization, crate::auth::AuthError> {
        use crate::auth::{Action, Authorization, Resource};
        use serde_json::Value;
        let me = Value::String(ctx.user.identity.clone());
        let owner = || {
            let mut filter = serde_json::Map::new();
            filter.insert("owner".into(), me.clone());
            Authorization::Filter(filter)
        };
        match (ctx.resource, ctx.action) {
            (Resource::Threads, Action::Create) => {
                if let Value::Object(fields) = value {
                    let metadata = fields
                        .entry("metadata")
                        .or_insert_with(|| Value::Object(serde_json::Map::new()));
                    if let Value::Object(metadata) = metadata {
                        metadata.insert("owner".into(), me.clone());
                    }
                }
                Ok(owner())
            }
            (Resource::Threads, _) => Ok(owner()),
            (Resource::Store, _) => {
                let labels: Vec<Value> = match value.get("namespace") {
                    Some(Value::Array(labels)) => labels.clone(),
                    _ => Vec::new(),
                };
                if labels.first() != Some(&me) {
                    let mut moved = vec![me.clone()];
                    moved.extend(labels);
                    value["namespace"] = Value::Array(moved);
                }
                Ok(Authorization::Allow)
            }
            _ => Ok(Authorization::Allow),
        }
    }
}
