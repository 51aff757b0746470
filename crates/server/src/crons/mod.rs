//! Crons (API.md 11, TRANSCRIPTS.md section 20): a run request fired on a
//! schedule, on one thread or on a new thread each time; the record, the
//! request bodies, searches, and the scheduler that fires them.

pub(crate) mod schedule;
pub(crate) mod scheduler;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::ApiError;
use crate::threads::SortOrder;
pub(crate) use schedule::Schedule;

/// What happens to the thread of a stateless cron's run when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnRunCompleted {
    Delete,
    Keep,
}

/// A cron as the API shows it (fields in the official order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cron {
    pub(crate) cron_id: String,
    pub(crate) assistant_id: String,
    pub(crate) thread_id: Option<String>,
    pub(crate) user_id: String,
    #[serde(with = "optional_time")]
    pub(crate) end_time: Option<DateTime<Utc>>,
    pub(crate) schedule: String,
    pub(crate) timezone: Option<String>,
    /// The run request each fire makes (`config.configurable.cron_id` set).
    pub(crate) payload: Map<String, Value>,
    #[serde(with = "optional_time")]
    pub(crate) next_run_date: Option<DateTime<Utc>>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) on_run_completed: Option<OnRunCompleted>,
    pub(crate) enabled: bool,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) updated_at: DateTime<Utc>,
}

/// An optional time in the API's form.
mod optional_time {
    use chrono::{DateTime, Utc};
    use serde::Deserialize;

    pub(crate) fn serialize<S: serde::Serializer>(
        time: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => serializer.serialize_str(&crate::wire::timestamp(*time)),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| super::parse_time(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A time a client sends: RFC 3339, or without a zone (then UTC), as
/// pydantic reads it.
fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc));
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|time| time.and_utc())
        .map_err(|_| format!("{text:?} is not a date and time"))
}

/// The time zone a request names.
///
/// # Errors
/// 422 with the official text for a name that is not an IANA zone.
pub(crate) fn zone(name: Option<&str>) -> Result<Option<chrono_tz::Tz>, ApiError> {
    name.map(|name| {
        name.parse::<chrono_tz::Tz>().map_err(|_| {
            ApiError::invalid(format!(
                "Invalid timezone: '{name}'. Use IANA timezone format (e.g. 'America/New_York')."
            ))
        })
    })
    .transpose()
}

/// The schedule a request names.
///
/// # Errors
/// 422 with the official text.
pub(crate) fn schedule(text: &str) -> Result<Schedule, ApiError> {
    Schedule::parse(text).map_err(|why| {
        ApiError::invalid(format!(
            "Invalid cron schedule: '{text}'. Reason: {}. Ensure the schedule uses the standard cron format (minute hour day_of_month month day_of_week). Example: '*/5 * * * *' for every 5 minutes.",
            why.0
        ))
    })
}

impl Cron {
    /// The next fire time after `after`, by its schedule and zone (`None`
    /// when the stored schedule no longer parses, or never fires).
    pub(crate) fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let zone = self.timezone.as_deref().and_then(|name| name.parse().ok());
        Schedule::parse(&self.schedule)
            .ok()?
            .next_after(after, zone)
    }

    /// Whether it fires at `now`: enabled, not ended, and due.
    pub(crate) fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.enabled
            && self.end_time.is_none_or(|end| end >= now)
            && self.next_run_date.is_some_and(|next| next <= now)
    }

    /// The cron as the API shows it, with only the `select`ed fields.
    pub(crate) fn view(&self, select: Option<&[CronField]>) -> Value {
        let Ok(Value::Object(mut map)) = serde_json::to_value(self) else {
            return Value::Null;
        };
        if let Some(select) = select {
            map.retain(|key, _| select.iter().any(|field| field.name() == key));
        }
        Value::Object(map)
    }
}

/// A field of the API's cron, as `select` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CronField {
    CronId,
    AssistantId,
    ThreadId,
    UserId,
    EndTime,
    Schedule,
    Timezone,
    Payload,
    NextRunDate,
    Metadata,
    OnRunCompleted,
    Enabled,
    CreatedAt,
    UpdatedAt,
}

impl CronField {
    fn name(self) -> &'static str {
        match self {
            Self::CronId => "cron_id",
            Self::AssistantId => "assistant_id",
            Self::ThreadId => "thread_id",
            Self::UserId => "user_id",
            Self::EndTime => "end_time",
            Self::Schedule => "schedule",
            Self::Timezone => "timezone",
            Self::Payload => "payload",
            Self::NextRunDate => "next_run_date",
            Self::Metadata => "metadata",
            Self::OnRunCompleted => "on_run_completed",
            Self::Enabled => "enabled",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
        }
    }
}

/// The fields of a create body the record keeps outside the payload
/// (they are also left in the payload, as the official server leaves them).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CronCreate {
    pub(crate) assistant_id: Option<String>,
    pub(crate) schedule: Option<String>,
    pub(crate) timezone: Option<String>,
    #[serde(with = "optional_time")]
    pub(crate) end_time: Option<DateTime<Utc>>,
    pub(crate) enabled: Option<bool>,
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) on_run_completed: Option<OnRunCompleted>,
    pub(crate) webhook: Option<Value>,
}

impl CronCreate {
    /// A new cron from the body `payload` (as sent) that `self` was read
    /// from, firing the resolved `assistant_id`, on `thread_id` or on a new
    /// thread each time.
    ///
    /// # Errors
    /// 422 without a schedule, or with a schedule or zone that does not
    /// parse.
    pub(crate) fn into_cron(
        self,
        mut payload: Map<String, Value>,
        assistant_id: String,
        thread_id: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Cron, ApiError> {
        let Some(text) = self.schedule else {
            return Err(ApiError::invalid("\"schedule\" is a required property"));
        };
        let zone = zone(self.timezone.as_deref())?;
        let parsed = schedule(&text)?;
        let cron_id = crate::wire::time_ordered_id();
        payload.insert("assistant_id".into(), Value::String(assistant_id.clone()));
        stamp(&mut payload, &cron_id);
        let on_run_completed = match thread_id {
            Some(_) => None,
            None => Some(self.on_run_completed.unwrap_or(OnRunCompleted::Delete)),
        };
        Ok(Cron {
            cron_id,
            assistant_id,
            thread_id,
            user_id: String::new(),
            end_time: self.end_time,
            next_run_date: parsed.next_after(now, zone),
            schedule: text,
            timezone: self.timezone,
            payload,
            metadata: self.metadata.unwrap_or_default(),
            on_run_completed,
            enabled: self.enabled.unwrap_or(true),
            created_at: now,
            updated_at: now,
        })
    }
}

/// Writes `config.configurable.cron_id` into a payload.
fn stamp(payload: &mut Map<String, Value>, cron_id: &str) {
    let config = payload
        .entry("config")
        .or_insert_with(|| Value::Object(Map::new()));
    if !config.is_object() {
        *config = Value::Object(Map::new());
    }
    if let Value::Object(config) = config {
        let configurable = config
            .entry("configurable")
            .or_insert_with(|| Value::Object(Map::new()));
        if !configurable.is_object() {
            *configurable = Value::Object(Map::new());
        }
        if let Value::Object(configurable) = configurable {
            configurable.insert("cron_id".into(), Value::String(cron_id.to_owned()));
        }
    }
}

/// A `PATCH /runs/crons/{id}` body: the record's own fields, and the whole
/// body merged into the payload.
#[derive(Clone, Debug)]
pub(crate) struct CronPatch {
    body: Map<String, Value>,
    schedule: Option<String>,
    timezone: Option<String>,
    /// `Some(None)`: `end_time: null`, which clears it.
    end_time: Option<Option<DateTime<Utc>>>,
    enabled: Option<bool>,
    on_run_completed: Option<OnRunCompleted>,
    metadata: Option<Map<String, Value>>,
}

impl CronPatch {
    /// Reads and checks a patch body.
    ///
    /// # Errors
    /// 400 for an empty body; 422 for fields of the wrong shape, or a
    /// schedule or zone that does not parse.
    pub(crate) fn parse(body: Map<String, Value>) -> Result<Self, ApiError> {
        if body.is_empty() {
            return Err(ApiError::bad_request("Request body cannot be empty"));
        }
        /// The fields the record keeps; the rest only go to the payload.
        #[derive(Deserialize)]
        struct Fields {
            schedule: Option<String>,
            timezone: Option<String>,
            enabled: Option<bool>,
            on_run_completed: Option<OnRunCompleted>,
            metadata: Option<Map<String, Value>>,
        }
        let mut own = body.clone();
        own.remove("end_time");
        let fields: Fields =
            serde_path_to_error::deserialize(Value::Object(own)).map_err(|err| {
                ApiError::invalid(format!(
                    "Invalid request body: {}: {}",
                    err.path(),
                    err.inner()
                ))
            })?;
        if let Some(text) = &fields.schedule {
            schedule(text)?;
        }
        zone(fields.timezone.as_deref())?;
        let end_time = match body.get("end_time") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(text)) => Some(Some(parse_time(text).map_err(|why| {
                ApiError::invalid(format!("Invalid request body: end_time: {why}"))
            })?)),
            Some(_) => {
                return Err(ApiError::invalid(
                    "Invalid request body: end_time: not a date and time",
                ));
            }
        };
        Ok(Self {
            schedule: fields.schedule,
            timezone: fields.timezone,
            end_time,
            enabled: fields.enabled,
            on_run_completed: fields.on_run_completed,
            metadata: fields.metadata,
            body,
        })
    }

    /// Applies it to `cron` at `now`: the next fire time recomputed when
    /// the schedule or zone changes, metadata merged, the body merged into
    /// the payload (its assistant and `cron_id` kept).
    pub(crate) fn apply(self, cron: &mut Cron, now: DateTime<Utc>) {
        let reschedule = self.schedule.is_some() || self.timezone.is_some();
        if let Some(timezone) = self.timezone {
            cron.timezone = Some(timezone);
        }
        if let Some(schedule) = self.schedule {
            cron.schedule = schedule;
        }
        if reschedule {
            cron.next_run_date = cron.next_after(now);
        }
        if let Some(end_time) = self.end_time {
            cron.end_time = end_time;
        }
        if let Some(enabled) = self.enabled {
            cron.enabled = enabled;
        }
        if let Some(on_run_completed) = self.on_run_completed {
            cron.on_run_completed = Some(on_run_completed);
        }
        if let Some(metadata) = self.metadata {
            cron.metadata.extend(metadata);
        }
        let assistant_id = cron.payload.get("assistant_id").cloned();
        cron.payload.extend(self.body);
        if let Some(assistant_id) = assistant_id {
            cron.payload.insert("assistant_id".into(), assistant_id);
        }
        stamp(&mut cron.payload, &cron.cron_id);
        cron.updated_at = now;
    }
}

/// Which crons a search or count takes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CronFilter {
    pub(crate) assistant_id: Option<String>,
    pub(crate) thread_id: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl CronFilter {
    /// Whether `cron` passes.
    pub(crate) fn matches(&self, cron: &Cron) -> bool {
        self.assistant_id
            .as_ref()
            .is_none_or(|id| *id == cron.assistant_id)
            && self
                .thread_id
                .as_ref()
                .is_none_or(|id| cron.thread_id.as_ref() == Some(id))
            && self.enabled.is_none_or(|enabled| enabled == cron.enabled)
            && crate::wire::metadata_contains(&cron.metadata, self.metadata.as_ref())
    }
}

/// What to sort crons by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CronSort {
    CronId,
    AssistantId,
    ThreadId,
    NextRunDate,
    EndTime,
    #[default]
    CreatedAt,
    UpdatedAt,
}

/// A page of crons.
#[derive(Clone, Debug, Default)]
pub(crate) struct CronSearch {
    pub(crate) sort_by: CronSort,
    pub(crate) sort_order: SortOrder,
    pub(crate) limit: usize,
    pub(crate) offset: usize,
}

impl CronSearch {
    /// One page of `found` in this search's order, and the count of
    /// matches (ties by id, so pages are stable).
    pub(crate) fn page(&self, found: Vec<Cron>) -> (Vec<Cron>, usize) {
        let order = |a: &Cron, b: &Cron| {
            let by = match self.sort_by {
                CronSort::CronId => std::cmp::Ordering::Equal,
                CronSort::AssistantId => a.assistant_id.cmp(&b.assistant_id),
                CronSort::ThreadId => a.thread_id.cmp(&b.thread_id),
                CronSort::NextRunDate => a.next_run_date.cmp(&b.next_run_date),
                CronSort::EndTime => a.end_time.cmp(&b.end_time),
                CronSort::CreatedAt => a.created_at.cmp(&b.created_at),
                CronSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            }
            .then_with(|| a.cron_id.cmp(&b.cron_id));
            self.sort_order.apply(by)
        };
        crate::wire::sorted_page(found, order, self.offset, self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_cron_keeps_the_request_as_its_payload_with_its_id() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T02:15:46.206730+00:00")
            .unwrap()
            .with_timezone(&Utc);
        let body = object(serde_json::json!({
            "assistant_id": "simple",
            "schedule": "0 9 * * 1",
            "input": {"count": 0},
            "timezone": "Europe/Paris"
        }));
        let create: CronCreate = serde_json::from_value(Value::Object(body.clone())).unwrap();
        let cron = create
            .into_cron(
                body,
                "5e0f6b46-d00f-5af4-87dc-ea2105ff526d".into(),
                None,
                now,
            )
            .unwrap();
        assert_eq!(cron.on_run_completed, Some(OnRunCompleted::Delete));
        assert_eq!(
            crate::wire::timestamp(cron.next_run_date.unwrap()),
            "2026-11-23T08:00:00+00:00"
        );
        assert_eq!(
            cron.payload["assistant_id"],
            "5e0f6b46-d00f-5af4-87dc-ea2105ff526d"
        );
        assert_eq!(
            cron.payload["config"]["configurable"]["cron_id"],
            cron.cron_id.as_str()
        );
        assert!(cron.is_due(cron.next_run_date.unwrap()));
        assert!(!cron.is_due(now));
    }

    #[test]
    fn a_patch_merges_into_the_payload_and_reschedules() {
        let now = Utc::now();
        let body = object(serde_json::json!({"assistant_id": "a", "schedule": "0 0 * * *"}));
        let create: CronCreate = serde_json::from_value(Value::Object(body.clone())).unwrap();
        let mut cron = create
            .into_cron(body, "a-id".into(), Some("t".into()), now)
            .unwrap();
        assert_eq!(cron.on_run_completed, None);
        let patch = CronPatch::parse(object(serde_json::json!({
            "schedule": "*/5 * * * *",
            "input": {"x": 1},
            "assistant_id": "other",
            "metadata": {"k": "v"},
            "end_time": null
        })))
        .unwrap();
        patch.apply(&mut cron, now);
        assert_eq!(cron.schedule, "*/5 * * * *");
        assert_eq!(cron.payload["input"], serde_json::json!({"x": 1}));
        assert_eq!(
            cron.payload["assistant_id"], "a-id",
            "the assistant is kept"
        );
        assert_eq!(cron.metadata["k"], "v");
        assert!(cron.next_run_date.unwrap() <= now + chrono::Duration::minutes(5));
        assert!(CronPatch::parse(Map::new()).is_err());
        assert!(CronPatch::parse(object(serde_json::json!({"timezone": "Mars/Olympus"}))).is_err());
    }
}
