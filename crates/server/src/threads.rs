//! Threads as the API shows them (API.md 2, TRANSCRIPTS.md sections 3, 8
//! and 22), and what a thread search asks for.

use chrono::{DateTime, Utc};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::settings::{ThreadSettings, TtlStrategy};

/// A thread's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ThreadStatus {
    /// Nothing running or pending, and the last run finished.
    Idle,
    /// A run is pending or running.
    Busy,
    /// The last run stopped with tasks left: an interrupt or a breakpoint.
    Interrupted,
    /// The last run failed.
    Error,
}

impl ThreadStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "busy",
            Self::Interrupted => "interrupted",
            Self::Error => "error",
        }
    }
}

/// What a thread holds besides its bookkeeping. The official server shows
/// different keys for each: a new thread has `values: null`, a copy has no
/// `values` at all, and a thread with state has `values`, `error` and
/// `interrupts` (TRANSCRIPTS.md sections 3 and 8).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub(crate) enum ThreadContent {
    /// Created; no run and no update yet.
    Fresh,
    /// Copied from another thread; its checkpoints are the source's.
    Copied,
    /// Has state: after a run or an update.
    Stateful {
        /// The latest state values.
        values: Value,
        /// The last run's error, or `None`.
        error: Option<Value>,
        /// `{task_id: [{id, value}]}` for tasks with interrupts.
        interrupts: Map<String, Value>,
    },
}

/// A thread. Its serde form is the record a repository stores; the API
/// shows it through [`Thread::view`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Thread {
    pub(crate) thread_id: String,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) updated_at: DateTime<Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) state_updated_at: DateTime<Utc>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) status: ThreadStatus,
    pub(crate) config: Map<String, Value>,
    pub(crate) content: ThreadContent,
    /// Its time to live, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl: Option<ThreadTtl>,
}

/// The longest TTL, in minutes: a thousand years.
pub(crate) const MAX_TTL_MINUTES: f64 = 1000.0 * 365.25 * 24.0 * 60.0;

/// A thread's time to live (the official `ThreadTTLInfo`): counted from
/// the create or patch that set it; runs and updates do not extend it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadTtl {
    pub(crate) strategy: TtlStrategy,
    pub(crate) ttl_minutes: f64,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) expires_at: DateTime<Utc>,
}

impl ThreadTtl {
    /// A TTL of `minutes` set `now`; `minutes` is checked by
    /// [`ThreadTtl::check_minutes`] (callers do), and an expiry past
    /// chrono's range is kept at its end.
    pub(crate) fn new(strategy: TtlStrategy, minutes: f64, now: DateTime<Utc>) -> Self {
        let millis = (minutes.clamp(0.0, MAX_TTL_MINUTES) * 60_000.0) as i64;
        let expires_at = now
            .checked_add_signed(chrono::Duration::milliseconds(millis))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        Self {
            strategy,
            ttl_minutes: minutes,
            expires_at,
        }
    }

    /// Whether `minutes` is a TTL: a number from 0 to
    /// [`MAX_TTL_MINUTES`] (a thousand years; an expiry has to stay a
    /// four-digit year to be stored and read back).
    ///
    /// # Errors
    /// What is wrong, for a 422 or a settings error.
    pub(crate) fn check_minutes(minutes: f64) -> Result<f64, String> {
        if minutes.is_finite() && (0.0..=MAX_TTL_MINUTES).contains(&minutes) {
            Ok(minutes)
        } else {
            Err(format!(
                "a TTL is a number of minutes from 0 to {MAX_TTL_MINUTES}, not {minutes}"
            ))
        }
    }

    /// A request's `ttl` (`{"ttl": minutes, "strategy": "delete" |
    /// "keep_latest"}`, the strategy `delete` when left out); `None` for
    /// `{}`, which sets none, as on the official server.
    ///
    /// # Errors
    /// What is wrong, for a 422: not an object, minutes that are not a
    /// number of zero or more, an unknown strategy.
    pub(crate) fn from_request(value: &Value, now: DateTime<Utc>) -> Result<Option<Self>, String> {
        let Value::Object(fields) = value else {
            return Err(format!(
                "ttl must be an object like {{\"ttl\": minutes, \"strategy\": \"delete\"}}, not {value}"
            ));
        };
        let strategy = match fields.get("strategy") {
            None | Some(Value::Null) => TtlStrategy::Delete,
            Some(given) => serde_json::from_value(given.clone()).map_err(|_| {
                format!("ttl.strategy must be \"delete\" or \"keep_latest\", not {given}")
            })?,
        };
        match fields.get("ttl") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(minutes)) => {
                let minutes = Self::check_minutes(minutes.as_f64().unwrap_or(f64::NAN))
                    .map_err(|err| format!("ttl.ttl: {err}"))?;
                Ok(Some(Self::new(strategy, minutes, now)))
            }
            Some(other) => Err(format!("ttl.ttl must be a number of minutes, not {other}")),
        }
    }

    /// The TTL of a thread made `now` without one: the server's default.
    pub(crate) fn default_of(settings: &ThreadSettings, now: DateTime<Utc>) -> Option<Self> {
        settings
            .default_ttl_minutes
            .map(|minutes| Self::new(settings.default_ttl_strategy, minutes, now))
    }

    /// The same TTL, started again `now`.
    pub(crate) fn restarted(&self, now: DateTime<Utc>) -> Self {
        Self::new(self.strategy, self.ttl_minutes, now)
    }

    /// Its API form: `{"strategy", "ttl_minutes", "expires_at"}`.
    pub(crate) fn view(&self) -> Value {
        serde_json::json!({
            "strategy": self.strategy.as_str(),
            "ttl_minutes": self.ttl_minutes,
            "expires_at": crate::wire::timestamp(self.expires_at),
        })
    }
}

impl Thread {
    /// A new thread with this id and metadata, made `now`.
    pub(crate) fn new(thread_id: String, metadata: Map<String, Value>, now: DateTime<Utc>) -> Self {
        Self {
            thread_id,
            created_at: now,
            updated_at: now,
            state_updated_at: now,
            metadata,
            status: ThreadStatus::Idle,
            config: Map::new(),
            content: ThreadContent::Fresh,
            ttl: None,
        }
    }

    /// Its state values, when it has any.
    pub(crate) fn values(&self) -> Option<&Value> {
        match &self.content {
            ThreadContent::Stateful { values, .. } => Some(values),
            ThreadContent::Fresh | ThreadContent::Copied => None,
        }
    }

    /// The value of one field of the API's thread, `None` when this thread
    /// does not show that field.
    fn field(&self, field: ThreadField) -> Option<Value> {
        let time = |t: &DateTime<Utc>| Value::String(crate::wire::timestamp(*t));
        Some(match field {
            ThreadField::ThreadId => Value::String(self.thread_id.clone()),
            ThreadField::CreatedAt => time(&self.created_at),
            ThreadField::UpdatedAt => time(&self.updated_at),
            ThreadField::StateUpdatedAt => time(&self.state_updated_at),
            ThreadField::Metadata => Value::Object(self.metadata.clone()),
            ThreadField::Status => Value::String(self.status.as_str().into()),
            ThreadField::Config => Value::Object(self.config.clone()),
            ThreadField::Values => match &self.content {
                ThreadContent::Fresh => Value::Null,
                ThreadContent::Copied => return None,
                ThreadContent::Stateful { values, .. } => values.clone(),
            },
            ThreadField::Error => match &self.content {
                ThreadContent::Stateful { error, .. } => error.clone().unwrap_or(Value::Null),
                ThreadContent::Fresh | ThreadContent::Copied => return None,
            },
            ThreadField::Interrupts => match &self.content {
                ThreadContent::Stateful { interrupts, .. } => Value::Object(interrupts.clone()),
                ThreadContent::Fresh | ThreadContent::Copied => return None,
            },
        })
    }

    /// The thread as the API shows it, with only the `select`ed fields
    /// when given; fields in the official server's order.
    pub(crate) fn view<'a>(&'a self, select: Option<&'a [ThreadField]>) -> ThreadView<'a> {
        ThreadView {
            thread: self,
            select,
        }
    }
}

/// A field of the API's thread, as `select` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThreadField {
    ThreadId,
    CreatedAt,
    UpdatedAt,
    StateUpdatedAt,
    Metadata,
    Status,
    Config,
    Values,
    Error,
    Interrupts,
}

impl ThreadField {
    /// Every field, in the order the official server writes them.
    const ALL: [Self; 10] = [
        Self::ThreadId,
        Self::CreatedAt,
        Self::UpdatedAt,
        Self::StateUpdatedAt,
        Self::Metadata,
        Self::Status,
        Self::Config,
        Self::Values,
        Self::Error,
        Self::Interrupts,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::ThreadId => "thread_id",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
            Self::StateUpdatedAt => "state_updated_at",
            Self::Metadata => "metadata",
            Self::Status => "status",
            Self::Config => "config",
            Self::Values => "values",
            Self::Error => "error",
            Self::Interrupts => "interrupts",
        }
    }
}

/// A thread serialized as the API shows it (see [`Thread::view`]).
pub(crate) struct ThreadView<'a> {
    thread: &'a Thread,
    select: Option<&'a [ThreadField]>,
}

impl Serialize for ThreadView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for field in ThreadField::ALL {
            if self.select.is_some_and(|select| !select.contains(&field)) {
                continue;
            }
            if let Some(value) = self.thread.field(field) {
                map.serialize_entry(field.name(), &value)?;
            }
        }
        map.end()
    }
}

/// A thread search's `extract`: aliases of values picked from each thread
/// by a path (`values.messages[-1].content`), shown as `extracted`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Extract(Vec<(String, String)>);

impl Extract {
    /// The columns a path may start from.
    const COLUMNS: [&str; 4] = ["values", "metadata", "config", "interrupts"];

    /// Checks the aliases and paths (the official rules and texts).
    ///
    /// # Errors
    /// 422: more than 10 paths, an alias that is not an identifier or is a
    /// thread field, a path that starts elsewhere.
    pub(crate) fn parse(given: Map<String, Value>) -> Result<Self, crate::api::ApiError> {
        use crate::api::ApiError;
        if given.len() > 10 {
            return Err(ApiError::invalid(format!(
                "Maximum of 10 extract paths allowed, got {}",
                given.len()
            )));
        }
        let mut reserved: Vec<&str> = given
            .keys()
            .filter(|alias| {
                ThreadField::ALL
                    .iter()
                    .any(|field| field.name() == alias.as_str())
            })
            .map(String::as_str)
            .collect();
        if !reserved.is_empty() {
            reserved.sort_unstable();
            return Err(ApiError::invalid(format!(
                "Extract keys cannot use reserved field names: {reserved:?}"
            )));
        }
        let mut pairs = Vec::with_capacity(given.len());
        for (alias, path) in given {
            let identifier = alias
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !identifier {
                return Err(ApiError::invalid(format!(
                    "Extract key '{alias}' must be a valid identifier (letters, digits, underscores)"
                )));
            }
            let Some(path) = path.as_str().filter(|path| !path.is_empty()) else {
                return Err(ApiError::invalid(format!(
                    "Extract path for '{alias}' must be a non-empty string"
                )));
            };
            let root = path.split(['.', '[']).next().unwrap_or_default();
            if !Self::COLUMNS.contains(&root) {
                return Err(ApiError::invalid(format!(
                    "Extract path '{path}' must start with one of: {}",
                    Self::COLUMNS.join(", ")
                )));
            }
            pairs.push((alias, path.to_owned()));
        }
        Ok(Self(pairs))
    }

    /// The `extracted` object of a thread shown as `view` (null where a
    /// path leads nowhere).
    pub(crate) fn of(&self, view: &Value) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(alias, path)| (alias.clone(), pick(view, path)))
                .collect(),
        )
    }
}

/// The value at a dot and bracket path (`a.b[-1].c`); null when absent.
fn pick(root: &Value, path: &str) -> Value {
    let mut current = root;
    for part in path.split(['.', '[']) {
        if part.is_empty() {
            continue;
        }
        if part.starts_with('_') {
            return Value::Null;
        }
        let next = match part.strip_suffix(']') {
            Some(index) => {
                let (Ok(index), Value::Array(items)) = (index.parse::<i64>(), current) else {
                    return Value::Null;
                };
                let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                let at = if index < 0 { len + index } else { index };
                usize::try_from(at).ok().and_then(|at| items.get(at))
            }
            None => current.get(part),
        };
        match next {
            Some(value) => current = value,
            None => return Value::Null,
        }
    }
    current.clone()
}

/// What to sort threads by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThreadSort {
    ThreadId,
    Status,
    CreatedAt,
    #[default]
    UpdatedAt,
    StateUpdatedAt,
}

/// Ascending or descending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SortOrder {
    Asc,
    #[default]
    Desc,
}

impl SortOrder {
    /// `by` in this order.
    pub(crate) fn apply(self, by: std::cmp::Ordering) -> std::cmp::Ordering {
        match self {
            Self::Asc => by,
            Self::Desc => by.reverse(),
        }
    }
}

/// Which threads a search or count takes.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ThreadFilter {
    /// Only these ids.
    pub(crate) ids: Option<Vec<String>>,
    /// Metadata containing this (`jsonb @>`).
    pub(crate) metadata: Option<Map<String, Value>>,
    /// State values containing this.
    pub(crate) values: Option<Map<String, Value>>,
    /// Only this status.
    pub(crate) status: Option<ThreadStatus>,
    /// The caller's auth filter on metadata (never from the body).
    #[serde(skip)]
    pub(crate) auth: Option<crate::auth::AuthFilter>,
}

impl ThreadFilter {
    /// Whether `thread` passes.
    pub(crate) fn matches(&self, thread: &Thread) -> bool {
        use crate::wire::contains;
        self.ids
            .as_ref()
            .is_none_or(|ids| ids.contains(&thread.thread_id))
            && self.status.is_none_or(|status| status == thread.status)
            && self
                .auth
                .as_ref()
                .is_none_or(|auth| auth.matches(&thread.metadata))
            && crate::wire::metadata_contains(&thread.metadata, self.metadata.as_ref())
            && self.values.as_ref().is_none_or(|wanted| {
                thread
                    .values()
                    .is_some_and(|values| contains(values, &Value::Object(wanted.clone())))
            })
    }
}

/// A page of threads: which, in what order, how many from where.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ThreadSearch {
    pub(crate) filter: ThreadFilter,
    pub(crate) sort_by: ThreadSort,
    pub(crate) sort_order: SortOrder,
    pub(crate) limit: usize,
    pub(crate) offset: usize,
}

impl ThreadSearch {
    /// `a` before `b` in this search's order (ties by id, so pages are
    /// stable).
    pub(crate) fn compare(&self, a: &Thread, b: &Thread) -> std::cmp::Ordering {
        let by = match self.sort_by {
            ThreadSort::ThreadId => std::cmp::Ordering::Equal,
            ThreadSort::Status => a.status.as_str().cmp(b.status.as_str()),
            ThreadSort::CreatedAt => a.created_at.cmp(&b.created_at),
            ThreadSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            ThreadSort::StateUpdatedAt => a.state_updated_at.cmp(&b.state_updated_at),
        }
        .then_with(|| a.thread_id.cmp(&b.thread_id));
        self.sort_order.apply(by)
    }
}

/// A change to a thread, applied by a repository in one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ThreadPatch {
    /// Entries merged into the metadata (a key given replaces its value).
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) status: Option<ThreadStatus>,
    pub(crate) config: Option<Map<String, Value>>,
    /// New content; also moves `state_updated_at`.
    pub(crate) content: Option<ThreadContent>,
    /// A new time to live (there is no way to remove one, as on the
    /// official server).
    pub(crate) ttl: Option<ThreadTtl>,
}

impl ThreadPatch {
    /// Applies it to `thread` at `now`.
    pub(crate) fn apply(self, thread: &mut Thread, now: DateTime<Utc>) {
        thread.updated_at = now;
        if let Some(metadata) = self.metadata {
            thread.metadata.extend(metadata);
        }
        if let Some(status) = self.status {
            thread.status = status;
        }
        if let Some(config) = self.config {
            thread.config = config;
        }
        if let Some(content) = self.content {
            thread.content = content;
            thread.state_updated_at = now;
        }
        if let Some(ttl) = self.ttl {
            thread.ttl = Some(ttl);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn each_content_shows_the_official_keys() {
        let mut metadata = Map::new();
        metadata.insert("user".into(), "demo".into());
        let mut thread = Thread::new("t".into(), metadata, at("2026-11-22T02:15:08.611435Z"));
        let keys = |thread: &Thread| -> Vec<String> {
            match serde_json::to_value(thread.view(None)) {
                Ok(Value::Object(map)) => map.keys().cloned().collect(),
                other => panic!("not an object: {other:?}"),
            }
        };
        assert_eq!(
            serde_json::to_string(&thread.view(None)).ok().as_deref(),
            Some(
                r#"{"thread_id":"t","created_at":"2026-11-22T02:15:08.611435+00:00","updated_at":"2026-11-22T02:15:08.611435+00:00","state_updated_at":"2026-11-22T02:15:08.611435+00:00","metadata":{"user":"demo"},"status":"idle","config":{},"values":null}"#
            ),
            "TRANSCRIPTS.md section 3, in the same order"
        );
        thread.content = ThreadContent::Copied;
        assert!(!keys(&thread).contains(&"values".to_owned()));
        thread.content = ThreadContent::Stateful {
            values: json!({"count": 1}),
            error: None,
            interrupts: Map::new(),
        };
        assert_eq!(
            keys(&thread),
            [
                "config",
                "created_at",
                "error",
                "interrupts",
                "metadata",
                "state_updated_at",
                "status",
                "thread_id",
                "updated_at",
                "values"
            ]
        );
        let select = [ThreadField::ThreadId, ThreadField::Status];
        assert_eq!(
            serde_json::to_value(thread.view(Some(&select))).ok(),
            Some(json!({"thread_id": "t", "status": "idle"}))
        );
    }

    #[test]
    fn a_patch_merges_metadata_and_moves_the_right_times() {
        let created = at("2026-11-22T02:15:08Z");
        let mut thread = Thread::new("t".into(), Map::new(), created);
        let later = at("2026-11-22T02:16:00Z");
        let mut metadata = Map::new();
        metadata.insert("tag".into(), "x".into());
        ThreadPatch {
            metadata: Some(metadata),
            ..ThreadPatch::default()
        }
        .apply(&mut thread, later);
        assert_eq!(thread.metadata.get("tag"), Some(&json!("x")));
        assert_eq!(
            (thread.updated_at, thread.state_updated_at),
            (later, created),
            "a metadata patch moves only updated_at (TRANSCRIPTS.md section 8)"
        );
    }
}
