//! The agent-inbox convention for human review (LangGraph's
//! `langgraph.prebuilt.interrupt`): a node interrupts with a list of
//! [`HumanInterrupt`]s and is resumed with one [`HumanResponse`] per
//! request.
//!
//! The types serialize to the JSON LangGraph's `TypedDict`s have, so a UI
//! written for LangGraph (Agent Inbox) reads and answers them unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use stategraph_core::JsonMap;
use stategraph_graph::{NodeError, TaskContext};

/// What a human is asked to act on: an action and its arguments
/// (`{"action": ..., "args": {...}}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ActionRequest {
    /// The action, e.g. a tool name or "Approve the refund".
    pub action: String,
    /// Its arguments.
    pub args: JsonMap,
}

impl ActionRequest {
    /// The action `action` with `args`.
    pub fn new(action: impl Into<String>, args: JsonMap) -> Self {
        Self {
            action: action.into(),
            args,
        }
    }
}

/// Which answers the human may give (`{"allow_ignore", "allow_respond",
/// "allow_edit", "allow_accept"}`). [`Default`] allows none; see
/// [`HumanInterruptConfig::all`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HumanInterruptConfig {
    /// The human may skip the step ([`HumanResponse::Ignore`]).
    pub allow_ignore: bool,
    /// The human may answer with text ([`HumanResponse::Response`]).
    pub allow_respond: bool,
    /// The human may change the request ([`HumanResponse::Edit`]).
    pub allow_edit: bool,
    /// The human may approve as is ([`HumanResponse::Accept`]).
    pub allow_accept: bool,
}

impl HumanInterruptConfig {
    /// Every answer allowed.
    pub fn all() -> Self {
        Self {
            allow_ignore: true,
            allow_respond: true,
            allow_edit: true,
            allow_accept: true,
        }
    }

    /// Sets whether the human may ignore the request.
    #[must_use]
    pub fn with_ignore(mut self, allow: bool) -> Self {
        self.allow_ignore = allow;
        self
    }

    /// Sets whether the human may answer with text.
    #[must_use]
    pub fn with_respond(mut self, allow: bool) -> Self {
        self.allow_respond = allow;
        self
    }

    /// Sets whether the human may edit the request.
    #[must_use]
    pub fn with_edit(mut self, allow: bool) -> Self {
        self.allow_edit = allow;
        self
    }

    /// Sets whether the human may accept the request.
    #[must_use]
    pub fn with_accept(mut self, allow: bool) -> Self {
        self.allow_accept = allow;
        self
    }
}

/// A request for human review, the value a node interrupts with (in a
/// list): `{"action_request", "config", "description"}`, the description
/// `null` when unset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HumanInterrupt {
    /// What the human acts on.
    pub action_request: ActionRequest,
    /// Which answers are allowed.
    pub config: HumanInterruptConfig,
    /// More detail for the human (Markdown in Agent Inbox).
    #[serde(default)]
    pub description: Option<String>,
}

impl HumanInterrupt {
    /// A request to act on `action_request`, allowing the answers of
    /// `config`.
    pub fn new(action_request: ActionRequest, config: HumanInterruptConfig) -> Self {
        Self {
            action_request,
            config,
            description: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A human's answer to one [`HumanInterrupt`]: `{"type": "accept" |
/// "ignore" | "response" | "edit", "args": ...}`, where `args` is `null`
/// for accept and ignore, the text for a response, and the edited
/// [`ActionRequest`] for an edit.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum HumanResponse {
    /// Approve the request as is.
    Accept,
    /// Skip the step.
    Ignore,
    /// Answer with text.
    Response(String),
    /// Go ahead with this changed request.
    Edit(ActionRequest),
}

impl HumanResponse {
    /// The `type` this answer has in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Ignore => "ignore",
            Self::Response(_) => "response",
            Self::Edit(_) => "edit",
        }
    }
}

/// The JSON shape of a [`HumanResponse`].
#[derive(Serialize, Deserialize)]
struct RawResponse {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    args: Json,
}

impl Serialize for HumanResponse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let args = match self {
            Self::Accept | Self::Ignore => Json::Null,
            Self::Response(text) => Json::String(text.clone()),
            Self::Edit(request) => {
                serde_json::to_value(request).map_err(serde::ser::Error::custom)?
            }
        };
        RawResponse {
            kind: self.kind().to_owned(),
            args,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HumanResponse {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawResponse::deserialize(deserializer)?;
        match raw.kind.as_str() {
            "accept" => Ok(Self::Accept),
            "ignore" => Ok(Self::Ignore),
            "response" => match raw.args {
                Json::String(text) => Ok(Self::Response(text)),
                other => Err(D::Error::custom(format!(
                    "a `response` answer needs text args, got {other}"
                ))),
            },
            "edit" => serde_json::from_value(raw.args)
                .map(Self::Edit)
                .map_err(|err| D::Error::custom(format!("bad `edit` args: {err}"))),
            other => Err(D::Error::unknown_variant(
                other,
                &["accept", "ignore", "response", "edit"],
            )),
        }
    }
}

/// Asks a human to review `requests` and returns their answers, one per
/// request: interrupts with the list (LangGraph's `interrupt([request,
/// ...])`) and, on resume, reads the resume value as a list of
/// [`HumanResponse`]s.
///
/// # Errors
/// The interrupt while it has no answer (return it from the node with `?`,
/// as with [`TaskContext::interrupt`]); a `ValueError` when the resume
/// value is not a list of human responses.
///
/// # Example
/// ```
/// use serde_json::json;
/// use stategraph_checkpoint::InMemorySaver;
/// use stategraph_core::{RunnableConfig, Value};
/// use stategraph_graph::{Command, CompileOptions, NodeError, START, Schema, StateGraph, TaskContext};
/// use stategraph_prebuilt::{
///     ActionRequest, HumanInterrupt, HumanInterruptConfig, HumanResponse, request_human_review,
/// };
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut graph = StateGraph::new(Schema::new().last_value("decision"));
/// graph.add_node("review", |_state: serde_json::Value, ctx: TaskContext| async move {
///     let request = HumanInterrupt::new(
///         ActionRequest::new("send_email", Default::default()),
///         HumanInterruptConfig::all(),
///     );
///     let answers = request_human_review(&ctx, vec![request])?;
///     let decision = answers.first().map_or("none", HumanResponse::kind);
///     Ok::<_, NodeError>(json!({"decision": decision}))
/// })?;
/// graph.add_edge(START, "review")?;
/// let app = graph.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
/// let config = RunnableConfig::thread("t1");
/// let paused = app.invoke(json!({}), &config).await?.to_json()?;
/// assert_eq!(paused["__interrupt__"][0]["value"][0]["action_request"]["action"], "send_email");
///
/// let answers = json!([{"type": "accept", "args": null}]);
/// let done = app.invoke(Command::new().resume(Value::from_json(answers)), &config).await?;
/// assert_eq!(done.to_json()?["decision"], "accept");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub fn request_human_review(
    ctx: &TaskContext,
    requests: Vec<HumanInterrupt>,
) -> Result<Vec<HumanResponse>, NodeError> {
    let answer = ctx.interrupt(requests)?;
    let json = answer.to_json()?;
    serde_json::from_value(json).map_err(|err| {
        NodeError::new(
            "ValueError",
            format!("the resume value is not a list of human responses: {err}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Json) -> JsonMap {
        match value {
            Json::Object(map) => map,
            _ => JsonMap::new(),
        }
    }

    #[test]
    fn interrupts_have_langgraphs_shape() {
        let request = HumanInterrupt::new(
            ActionRequest::new("send_email", args(json!({"to": "x@y.z"}))),
            HumanInterruptConfig::all().with_edit(false),
        );
        let expected = json!({
            "action_request": {"action": "send_email", "args": {"to": "x@y.z"}},
            "config": {"allow_ignore": true, "allow_respond": true, "allow_edit": false, "allow_accept": true},
            "description": null,
        });
        assert_eq!(serde_json::to_value(&request).unwrap(), expected);
        let back: HumanInterrupt = serde_json::from_value(expected).unwrap();
        assert_eq!(back, request);
        let described = request.with_description("Please review");
        assert_eq!(
            serde_json::to_value(&described).unwrap()["description"],
            "Please review"
        );
    }

    #[test]
    fn responses_round_trip_in_every_form() {
        let edit = ActionRequest::new("send_email", args(json!({"to": "z@z"})));
        let cases = [
            (
                HumanResponse::Accept,
                json!({"type": "accept", "args": null}),
            ),
            (
                HumanResponse::Ignore,
                json!({"type": "ignore", "args": null}),
            ),
            (
                HumanResponse::Response("no".into()),
                json!({"type": "response", "args": "no"}),
            ),
            (
                HumanResponse::Edit(edit),
                json!({"type": "edit", "args": {"action": "send_email", "args": {"to": "z@z"}}}),
            ),
        ];
        for (response, shape) in cases {
            assert_eq!(serde_json::to_value(&response).unwrap(), shape);
            let back: HumanResponse = serde_json::from_value(shape).unwrap();
            assert_eq!(back, response);
        }
        // `args` may be left out where it is null.
        let accept: HumanResponse = serde_json::from_value(json!({"type": "accept"})).unwrap();
        assert_eq!(accept, HumanResponse::Accept);
    }

    #[test]
    fn malformed_responses_are_errors() {
        for bad in [
            json!({"type": "maybe"}),
            json!({"type": "response", "args": 1}),
            json!({"type": "edit", "args": "x"}),
            json!({"args": null}),
        ] {
            assert!(
                serde_json::from_value::<HumanResponse>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
