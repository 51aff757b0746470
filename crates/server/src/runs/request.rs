//! A `RunCreate` body (API.md 5.2): parsed, checked, turned into the run
//! record, and the record turned back into what the runtime runs.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use stategraph::graph::{Durability, RunOptions, StreamMode, StreamModes};
use stategraph::pregel::{Command, Input};
use stategraph::{CheckpointId, RunnableConfig};

use super::{MultitaskStrategy, Run, RunConfig, RunKwargs, RunStatus};
use crate::api::ApiError;
use crate::assistants::{Assistant, merged};

/// A `RunCreate` body, stateful or stateless. Null means absent; unknown
/// fields are ignored, as the official server does.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RunCreate {
    assistant_id: Option<String>,
    input: Option<Value>,
    command: Option<Value>,
    metadata: Option<Map<String, Value>>,
    config: Option<Map<String, Value>>,
    context: Option<Map<String, Value>>,
    checkpoint: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
    stream_mode: Option<OneOrMany<ModeName>>,
    stream_subgraphs: Option<bool>,
    stream_resumable: Option<bool>,
    interrupt_before: Option<Breakpoints>,
    interrupt_after: Option<Breakpoints>,
    multitask_strategy: Option<MultitaskStrategy>,
    if_not_exists: Option<IfNotExists>,
    on_disconnect: Option<OnDisconnect>,
    on_completion: Option<OnCompletion>,
    durability: Option<DurabilityName>,
    checkpoint_during: Option<bool>,
    webhook: Option<Value>,
    after_seconds: Option<f64>,
    feedback_keys: Option<Value>,
}

/// One value or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// A stream mode's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ModeName {
    Values,
    Updates,
    MessagesTuple,
    Custom,
    Messages,
    Debug,
    Events,
    Tasks,
    Checkpoints,
    Tools,
    Lifecycle,
}

impl ModeName {
    fn as_str(self) -> &'static str {
        match self {
            Self::Values => "values",
            Self::Updates => "updates",
            Self::MessagesTuple => "messages-tuple",
            Self::Custom => "custom",
            Self::Messages => "messages",
            Self::Debug => "debug",
            Self::Events => "events",
            Self::Tasks => "tasks",
            Self::Checkpoints => "checkpoints",
            Self::Tools => "tools",
            Self::Lifecycle => "lifecycle",
        }
    }

    /// The runtime's mode behind it, for the modes this server streams.
    fn runtime(self) -> Option<StreamMode> {
        match self {
            Self::Values => Some(StreamMode::Values),
            Self::Updates => Some(StreamMode::Updates),
            Self::MessagesTuple => Some(StreamMode::Messages),
            Self::Custom => Some(StreamMode::Custom),
            Self::Debug => Some(StreamMode::Debug),
            Self::Tasks => Some(StreamMode::Tasks),
            Self::Checkpoints => Some(StreamMode::Checkpoints),
            // The legacy `messages` mode is the same stream, shown whole
            // (see `runs::legacy`).
            Self::Messages => Some(StreamMode::Messages),
            Self::Events | Self::Tools | Self::Lifecycle => None,
        }
    }
}

/// `interrupt_before` / `interrupt_after`: `"*"` or node names.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(untagged)]
enum Breakpoints {
    All(String),
    Nodes(Vec<String>),
}

/// Whether a run on a thread that does not exist creates it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum IfNotExists {
    /// 404 (the default).
    #[default]
    Reject,
    /// A new thread with that id.
    Create,
}

/// What a client's disconnect does to the run it streams or waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnDisconnect {
    /// The run is cancelled.
    Cancel,
    /// The run goes on (the default).
    #[default]
    Continue,
}

/// What happens to a stateless run's thread when the run ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OnCompletion {
    #[default]
    Delete,
    Keep,
}

/// `durability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DurabilityName {
    Sync,
    Async,
    Exit,
}

/// A checked request: what creating the run needs.
#[derive(Debug)]
pub(crate) struct RunRequest {
    /// The assistant it runs, as it was when the run was asked for.
    pub(crate) assistant: Assistant,
    /// Who asked for it (with auth): the run sees them in its config.
    pub(crate) user: Option<crate::auth::AuthUser>,
    /// How long after it is asked for it may start.
    after_seconds: f64,
    pub(crate) multitask_strategy: MultitaskStrategy,
    pub(crate) if_not_exists: IfNotExists,
    pub(crate) on_disconnect: OnDisconnect,
    metadata: Map<String, Value>,
    kwargs: RunKwargs,
}

impl RunCreate {
    /// A body read from JSON.
    ///
    /// # Errors
    /// 422 naming the field of the wrong shape.
    pub(crate) fn from_json(value: Value) -> Result<Self, ApiError> {
        serde_path_to_error::deserialize(value).map_err(|err| {
            ApiError::invalid(format!(
                "Invalid request body: {}: {}",
                err.path(),
                err.inner()
            ))
        })
    }

    /// The assistant it names (an id or a graph id), as given.
    ///
    /// # Errors
    /// 422 when it names none.
    pub(crate) fn assistant(&self) -> Result<&str, ApiError> {
        self.assistant_id
            .as_deref()
            .ok_or_else(|| ApiError::invalid("\"assistant_id\" is a required property"))
    }

    /// Checks the body for a run of `assistant`, whose config, context and
    /// metadata it merges over. `stateless`: a `/runs` route, whose run
    /// gets a temporary thread.
    ///
    /// # Errors
    /// 422 for what this server does not serve yet (it refuses rather than
    /// pretend); 400 for what the official server refuses with 400.
    pub(crate) fn check(
        self,
        assistant: Assistant,
        stateless: bool,
    ) -> Result<RunRequest, ApiError> {
        let modes = match self.stream_mode {
            None => vec![ModeName::Values],
            Some(OneOrMany::One(mode)) => vec![mode],
            Some(OneOrMany::Many(modes)) if modes.is_empty() => vec![ModeName::Values],
            Some(OneOrMany::Many(modes)) => modes,
        };
        if let Some(mode) = modes.iter().find(|mode| mode.runtime().is_none()) {
            return Err(ApiError::unsupported(&format!(
                "stream_mode '{}'",
                mode.as_str()
            )));
        }
        let strategy = self.multitask_strategy.unwrap_or_default();
        let webhook = match self.webhook {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(url)) => Value::String(url),
            Some(_) => return Err(ApiError::invalid("webhook must be a URL")),
        };
        let feedback_keys = feedback_keys(self.feedback_keys)?;
        let after_seconds = self.after_seconds.unwrap_or(0.0);
        if !after_seconds.is_finite() || !(0.0..=MAX_DELAY_SECONDS).contains(&after_seconds) {
            return Err(ApiError::invalid(format!(
                "after_seconds must be between 0 and {MAX_DELAY_SECONDS}, got {after_seconds}"
            )));
        }
        for breakpoints in [&self.interrupt_before, &self.interrupt_after] {
            if let Some(Breakpoints::All(all)) = breakpoints
                && all != "*"
            {
                return Err(ApiError::invalid(format!(
                    "interrupt_before and interrupt_after take \"*\" or a list of nodes, not {all:?}"
                )));
            }
        }
        if let Some(command) = &self.command {
            Command::from_json(command.clone())
                .map_err(|err| ApiError::invalid(format!("Invalid command: {}", err.0)))?;
            if stateless && command.get("resume").is_some_and(truthy) {
                return Err(ApiError::bad_request(
                    "You must provide a thread_id when resuming.",
                ));
            }
        }
        let mut config = self.config.unwrap_or_default();
        let mut configurable = match config.remove("configurable") {
            Some(Value::Object(map)) => map,
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(ApiError::invalid("config.configurable must be an object"));
            }
        };
        let config_metadata = match config.remove("metadata") {
            Some(Value::Object(map)) => map,
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(ApiError::invalid("config.metadata must be an object")),
        };
        let context = self.context.unwrap_or_default();
        if !configurable.is_empty() && !context.is_empty() {
            return Err(ApiError::bad_request(
                crate::assistants::CONFIGURABLE_AND_CONTEXT,
            ));
        }
        // As the official server: a given context is mirrored into
        // `configurable` (marked), else `context` mirrors `configurable`.
        let context = if context.is_empty() {
            configurable.clone()
        } else {
            configurable = context.clone();
            configurable.insert("__context_provided__".into(), Value::Bool(true));
            context
        };
        // The assistant's config and context under the request's (the
        // official server's shallow `_merge_jsonb`).
        let mut assistant_config = assistant.config.clone();
        // The run's metadata is the merged one the record carries.
        assistant_config.remove("metadata");
        let mut configurable = match assistant_config.remove("configurable") {
            Some(Value::Object(base)) => merged(&base, configurable),
            _ => configurable,
        };
        let context = merged(&assistant.context, context);
        let config = merged(&assistant_config, config);
        if let Some(id) = self.checkpoint_id {
            configurable.insert("checkpoint_id".into(), Value::String(id));
        }
        if let Some(checkpoint) = self.checkpoint {
            configurable.extend(checkpoint);
        }
        let temporary = stateless && self.on_completion.unwrap_or_default() == OnCompletion::Delete;
        let durability = match (self.durability, self.checkpoint_during) {
            (Some(DurabilityName::Sync), _) => "sync",
            (Some(DurabilityName::Exit), _) | (None, Some(false)) => "exit",
            (Some(DurabilityName::Async), _) | (None, _) => "async",
        };
        let breakpoints = |b: Option<Breakpoints>| {
            b.map_or(Value::Null, |b| {
                serde_json::to_value(b).unwrap_or(Value::Null)
            })
        };
        let kwargs = RunKwargs {
            input: self.input.unwrap_or(Value::Null),
            command: self.command.unwrap_or(Value::Null),
            config: RunConfig {
                configurable,
                metadata: config_metadata,
                other: config,
            },
            context,
            stream_mode: modes.iter().map(|m| m.as_str().to_owned()).collect(),
            interrupt_before: breakpoints(self.interrupt_before),
            interrupt_after: breakpoints(self.interrupt_after),
            webhook,
            feedback_keys,
            temporary,
            subgraphs: self.stream_subgraphs.unwrap_or(false),
            resumable: self.stream_resumable.unwrap_or(false),
            checkpoint_during: self.checkpoint_during.unwrap_or(true),
            durability: durability.to_owned(),
        };
        Ok(RunRequest {
            assistant,
            user: None,
            after_seconds,
            multitask_strategy: strategy,
            if_not_exists: self.if_not_exists.unwrap_or_default(),
            on_disconnect: self.on_disconnect.unwrap_or_default(),
            metadata: self.metadata.unwrap_or_default(),
            kwargs,
        })
    }
}

/// The longest a run may be put off (`after_seconds`): a year.
const MAX_DELAY_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// Seconds as the official server writes them: a whole number as an
/// integer.
fn seconds_value(seconds: f64) -> Value {
    if seconds.fract() == 0.0 && seconds < 9.0e15 {
        #[allow(clippy::cast_possible_truncation, reason = "whole and in range")]
        return Value::from(seconds as i64);
    }
    Value::from(seconds)
}

/// Python's truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

impl RunRequest {
    /// What a thread this run creates is given as metadata besides its
    /// graph and assistant: the config's metadata, then the request's.
    pub(crate) fn new_thread_metadata(&self) -> Map<String, Value> {
        let mut metadata = self.kwargs.config.metadata.clone();
        metadata.extend(self.metadata.clone());
        metadata
    }

    /// The URL its result is POSTed to when it ends, if any.
    pub(crate) fn webhook(&self) -> Option<&str> {
        self.kwargs.webhook.as_str()
    }

    /// The config its thread keeps: the run's config keys other than
    /// `configurable` and `metadata` (`tags`, `recursion_limit`), and the
    /// assistant's configurable keys under the thread's own (`existing`).
    pub(crate) fn thread_config(
        &self,
        existing: Option<&Map<String, Value>>,
    ) -> Map<String, Value> {
        let mut config = self.kwargs.config.other.clone();
        let mut configurable = match self.assistant.config.get("configurable") {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        if let Some(Value::Object(own)) = existing.and_then(|config| config.get("configurable")) {
            configurable.extend(own.clone());
        }
        config.insert("configurable".into(), Value::Object(configurable));
        config
    }

    /// The pending run record, on `thread_id`, as the official server fills
    /// it: metadata merged from the assistant, the thread's metadata when
    /// the thread was there before the run (`existing`), the config and the
    /// request (the assistant id always the resolved one); the configurable
    /// keys the server adds.
    pub(crate) fn into_run(
        self,
        run_id: String,
        thread_id: &str,
        existing: Option<&Map<String, Value>>,
        now: DateTime<Utc>,
    ) -> Run {
        let assistant = self.assistant;
        let mut metadata = assistant.metadata;
        if let Some(thread_metadata) = existing {
            metadata.extend(thread_metadata.clone());
        }
        metadata.extend(self.kwargs.config.metadata.clone());
        metadata.extend(self.metadata);
        metadata.insert(
            "assistant_id".into(),
            Value::String(assistant.assistant_id.clone()),
        );
        let mut kwargs = self.kwargs;
        let configurable = &mut kwargs.config.configurable;
        if let Some(user) = &self.user {
            configurable.insert(
                "langgraph_auth_user".into(),
                serde_json::to_value(user).unwrap_or(Value::Null),
            );
            configurable.insert(
                "langgraph_auth_user_id".into(),
                Value::String(user.identity.clone()),
            );
            configurable.insert(
                "langgraph_auth_permissions".into(),
                Value::from(user.permissions.clone()),
            );
        }
        let defaults = [
            ("langgraph_auth_user", Value::Null),
            ("langgraph_auth_user_id", Value::String(String::new())),
            ("langgraph_auth_permissions", Value::Array(Vec::new())),
            (
                "langgraph_request_id",
                Value::String(crate::wire::random_id()),
            ),
            (
                "__request_start_time_ms__",
                Value::from(now.timestamp_millis()),
            ),
            ("__after_seconds__", seconds_value(self.after_seconds)),
        ];
        for (key, value) in defaults {
            configurable.entry(key).or_insert(value);
        }
        let user_id = configurable
            .get("user_id")
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()));
        configurable.insert("run_id".into(), Value::String(run_id.clone()));
        configurable.insert("thread_id".into(), Value::String(thread_id.to_owned()));
        configurable.insert("graph_id".into(), Value::String(assistant.graph_id));
        configurable.insert(
            "assistant_id".into(),
            Value::String(assistant.assistant_id.clone()),
        );
        configurable.insert("user_id".into(), user_id);
        kwargs.config.metadata = metadata.clone();
        // A delayed run is due (and listed) at the time it may start, as
        // the official server records it.
        let due = now
            + chrono::Duration::from_std(std::time::Duration::from_secs_f64(self.after_seconds))
                .unwrap_or_default();
        Run {
            run_id,
            thread_id: thread_id.to_owned(),
            assistant_id: assistant.assistant_id,
            metadata,
            status: RunStatus::Pending,
            kwargs,
            multitask_strategy: self.multitask_strategy,
            created_at: due,
            updated_at: now,
            langsmith_session_name: None,
        }
    }
}

/// What the runtime runs for a run record.
pub(crate) struct Plan {
    pub(crate) input: Input,
    pub(crate) config: RunnableConfig,
    /// The modes the client asked for.
    pub(crate) modes: StreamModes,
    /// Messages are shown in the legacy `messages` form (`messages/metadata`,
    /// `messages/partial`, `messages/complete`): asked for without
    /// `messages-tuple`.
    pub(crate) legacy_messages: bool,
    pub(crate) options: RunOptions,
}

impl Plan {
    /// The plan of `run`, from its record alone (so any process holding the
    /// record can execute it).
    ///
    /// # Errors
    /// What the record holds that the runtime cannot take: a command of
    /// another shape (LangGraph's `InvalidUpdateError`).
    pub(crate) fn of(run: &Run) -> Result<Self, String> {
        let kwargs = &run.kwargs;
        let input = if !kwargs.command.is_null() {
            Input::Command(Command::from_json(kwargs.command.clone()).map_err(|err| err.0)?)
        } else if kwargs.input.is_null() {
            Input::Resume
        } else {
            Input::Value(stategraph::Value::from_json(kwargs.input.clone()))
        };
        let mut config = RunnableConfig::thread(&run.thread_id);
        for (key, value) in &kwargs.config.configurable {
            match (key.as_str(), value) {
                ("thread_id", _) => {}
                ("checkpoint_id", Value::String(id)) => {
                    config = config.with_checkpoint_id(CheckpointId::from(id.as_str()));
                }
                ("checkpoint_ns", Value::String(ns)) => config = config.with_checkpoint_ns(ns),
                _ => config = config.with_configurable(key, value.clone()),
            }
        }
        config.metadata = kwargs.config.metadata.clone();
        // LangGraph Server's checkpoints name their thread in metadata.
        config
            .metadata
            .insert("thread_id".into(), Value::String(run.thread_id.clone()));
        config.run_id = Some(run.run_id.clone());
        if let Some(Value::Array(tags)) = kwargs.config.other.get("tags") {
            config.tags = tags
                .iter()
                .filter_map(|tag| tag.as_str().map(str::to_owned))
                .collect();
        }
        if let Some(limit) = kwargs
            .config
            .other
            .get("recursion_limit")
            .and_then(Value::as_u64)
        {
            config = config.with_recursion_limit(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        let mut modes = StreamModes::NONE;
        for name in &kwargs.stream_mode {
            let mode: ModeName = serde_json::from_value(Value::String(name.clone()))
                .map_err(|_| format!("unknown stream mode {name:?}"))?;
            if let Some(mode) = mode.runtime() {
                modes = modes.with(mode);
            }
        }
        let durability = match kwargs.durability.as_str() {
            "sync" => Durability::Sync,
            "exit" => Durability::Exit,
            _ => Durability::Async,
        };
        let mut options = RunOptions::new()
            .subgraphs(kwargs.subgraphs)
            .durability(durability);
        if let Some(nodes) = breakpoint_nodes(&kwargs.interrupt_before) {
            options = options.interrupt_before(nodes);
        }
        if let Some(nodes) = breakpoint_nodes(&kwargs.interrupt_after) {
            options = options.interrupt_after(nodes);
        }
        let context_given =
            kwargs.config.configurable.get("__context_provided__") == Some(&Value::Bool(true));
        if context_given {
            options = options.context_json(Value::Object(kwargs.context.clone()));
        }
        let asked = |name: &str| kwargs.stream_mode.iter().any(|mode| mode == name);
        Ok(Self {
            input,
            config,
            modes,
            legacy_messages: asked("messages") && !asked("messages-tuple"),
            options,
        })
    }
}

/// `"*"` or a list of node names, as the runtime takes them.
fn breakpoint_nodes(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(all) => Some(vec![all.clone()]),
        Value::Array(nodes) => Some(
            nodes
                .iter()
                .filter_map(|node| node.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    }
}

/// A run's `feedback_keys`, checked: a list of strings. The official server
/// asks LangSmith for a signed feedback URL per key once the run ends; this
/// server has no LangSmith client, so only an empty list (which asks for
/// nothing there either) is taken.
///
/// # Errors
/// 422 for another shape, or for keys.
fn feedback_keys(keys: Option<Value>) -> Result<Value, ApiError> {
    match keys {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::Array(keys)) if keys.iter().all(Value::is_string) => {
            if keys.is_empty() {
                Ok(Value::Array(keys))
            } else {
                Err(ApiError::unsupported(
                    "feedback_keys (LangSmith feedback URLs need a LangSmith client)",
                ))
            }
        }
        Some(other) => Err(ApiError::invalid(format!(
            "feedback_keys must be a list of strings, not {other}"
        ))),
    }
}
