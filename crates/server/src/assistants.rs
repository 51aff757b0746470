//! Assistants (API.md 1.3 and 3): a graph with its own config, context and
//! metadata, versioned. The server keeps one *system* assistant per
//! registered graph; users create, patch, search and delete their own.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::ApiError;

/// The namespace of system assistant ids: `uuid5(this, graph_id)`.
const SYSTEM_NAMESPACE: uuid::Uuid = uuid::uuid!("6ba7b821-9dad-11d1-80b4-00c04fd430c8");

/// The official server's text when `config.configurable` and `context` are
/// both given.
pub(crate) const CONFIGURABLE_AND_CONTEXT: &str = "Cannot specify both configurable and context. Prefer setting context alone. Context was introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.";

/// An assistant as the API shows it (fields in the official order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Assistant {
    pub(crate) assistant_id: String,
    pub(crate) graph_id: String,
    pub(crate) config: Map<String, Value>,
    pub(crate) context: Map<String, Value>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) name: String,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) version: u32,
    pub(crate) description: Option<String>,
}

/// One version of an assistant, as `POST /assistants/{id}/versions` lists
/// it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AssistantVersion {
    pub(crate) assistant_id: String,
    pub(crate) version: u32,
    pub(crate) graph_id: String,
    pub(crate) config: Map<String, Value>,
    pub(crate) context: Map<String, Value>,
    pub(crate) metadata: Map<String, Value>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
}

impl Assistant {
    /// The system assistant of `graph_id`, made at `created_at`.
    pub(crate) fn system(graph_id: &str, created_at: DateTime<Utc>) -> Self {
        let mut metadata = Map::new();
        metadata.insert("created_by".into(), "system".into());
        Self {
            assistant_id: system_id(graph_id),
            graph_id: graph_id.to_owned(),
            config: Map::new(),
            context: Map::new(),
            metadata,
            name: graph_id.to_owned(),
            created_at,
            updated_at: created_at,
            version: 1,
            description: None,
        }
    }

    /// This assistant's current state as a version record.
    pub(crate) fn as_version(&self) -> AssistantVersion {
        AssistantVersion {
            assistant_id: self.assistant_id.clone(),
            version: self.version,
            graph_id: self.graph_id.clone(),
            config: self.config.clone(),
            context: self.context.clone(),
            metadata: self.metadata.clone(),
            created_at: self.updated_at,
            name: self.name.clone(),
            description: self.description.clone(),
        }
    }

    /// The assistant as the API shows it, with only the `select`ed fields
    /// when given, in the official order.
    pub(crate) fn view<'a>(&'a self, select: Option<&'a [AssistantField]>) -> AssistantView<'a> {
        AssistantView {
            assistant: self,
            select,
        }
    }
}

/// An assistant serialized with only some fields (see [`Assistant::view`]).
pub(crate) struct AssistantView<'a> {
    assistant: &'a Assistant,
    select: Option<&'a [AssistantField]>,
}

impl Serialize for AssistantView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let a = self.assistant;
        let mut map = serializer.serialize_map(None)?;
        for field in AssistantField::ALL {
            if self.select.is_some_and(|select| !select.contains(&field)) {
                continue;
            }
            let name = field.name();
            match field {
                AssistantField::AssistantId => map.serialize_entry(name, &a.assistant_id)?,
                AssistantField::GraphId => map.serialize_entry(name, &a.graph_id)?,
                AssistantField::Config => map.serialize_entry(name, &a.config)?,
                AssistantField::Context => map.serialize_entry(name, &a.context)?,
                AssistantField::Metadata => map.serialize_entry(name, &a.metadata)?,
                AssistantField::Name => map.serialize_entry(name, &a.name)?,
                AssistantField::CreatedAt => {
                    map.serialize_entry(name, &crate::wire::timestamp(a.created_at))?;
                }
                AssistantField::UpdatedAt => {
                    map.serialize_entry(name, &crate::wire::timestamp(a.updated_at))?;
                }
                AssistantField::Version => map.serialize_entry(name, &a.version)?,
                AssistantField::Description => map.serialize_entry(name, &a.description)?,
            }
        }
        map.end()
    }
}

/// The id of a graph's system assistant.
pub(crate) fn system_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&SYSTEM_NAMESPACE, graph_id.as_bytes()).to_string()
}

/// An assistant id from a path, in its canonical form.
///
/// # Errors
/// 422 `Invalid assistant ID: must be a UUID` (the official text).
pub(crate) fn assistant_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|id| id.to_string())
        .map_err(|_| ApiError::invalid("Invalid assistant ID: must be a UUID"))
}

/// A field of the API's assistant, as `select` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AssistantField {
    AssistantId,
    GraphId,
    Config,
    Context,
    Metadata,
    Name,
    CreatedAt,
    UpdatedAt,
    Version,
    Description,
}

impl AssistantField {
    /// Every field, in the order the official server writes them.
    const ALL: [Self; 10] = [
        Self::AssistantId,
        Self::GraphId,
        Self::Config,
        Self::Context,
        Self::Metadata,
        Self::Name,
        Self::CreatedAt,
        Self::UpdatedAt,
        Self::Version,
        Self::Description,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::AssistantId => "assistant_id",
            Self::GraphId => "graph_id",
            Self::Config => "config",
            Self::Context => "context",
            Self::Metadata => "metadata",
            Self::Name => "name",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
            Self::Version => "version",
            Self::Description => "description",
        }
    }
}

/// Keeps `config.configurable` and `context` equal, as the official server
/// does: the configurable keys win when given, else the context is copied
/// into `configurable`.
///
/// # Errors
/// 400 when both are given and not empty.
fn reconcile(
    config: &mut Map<String, Value>,
    context: Option<Map<String, Value>>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    let configurable = match config.get("configurable") {
        Some(Value::Object(map)) if !map.is_empty() => Some(map.clone()),
        None | Some(Value::Null | Value::Object(_)) => None,
        Some(_) => return Err(ApiError::invalid("config.configurable must be an object")),
    };
    match (configurable, context) {
        (Some(_), Some(context)) if !context.is_empty() => {
            Err(ApiError::bad_request(CONFIGURABLE_AND_CONTEXT))
        }
        (Some(configurable), _) => Ok(Some(configurable)),
        (None, Some(context)) if !context.is_empty() => {
            config.insert("configurable".into(), Value::Object(context.clone()));
            Ok(Some(context))
        }
        (None, context) => Ok(context),
    }
}

/// Whether to fail or answer the existing assistant when the id is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IfExists {
    #[default]
    Raise,
    DoNothing,
}

/// A `POST /assistants` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AssistantCreate {
    pub(crate) graph_id: Option<String>,
    pub(crate) assistant_id: Option<String>,
    pub(crate) config: Option<Map<String, Value>>,
    pub(crate) context: Option<Map<String, Value>>,
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) if_exists: Option<IfExists>,
}

impl AssistantCreate {
    /// The new assistant (version 1, made `now`), and what to do when its
    /// id is taken. `graph_exists` tells the registered graphs.
    ///
    /// # Errors
    /// 422 without a graph or with an id that is not a UUID; 404 for a
    /// graph the server does not serve; 400 for both `configurable` and
    /// `context`.
    pub(crate) fn check(
        self,
        graph_exists: impl Fn(&str) -> Result<(), ApiError>,
        now: DateTime<Utc>,
    ) -> Result<(Assistant, IfExists), ApiError> {
        let Some(graph_id) = self.graph_id else {
            return Err(ApiError::invalid("\"graph_id\" is a required property"));
        };
        let assistant_id = match self.assistant_id {
            Some(id) => assistant_id(&id)?,
            None => uuid::Uuid::new_v4().to_string(),
        };
        graph_exists(&graph_id)?;
        let mut config = self.config.unwrap_or_default();
        let context = reconcile(&mut config, self.context)?.unwrap_or_default();
        let assistant = Assistant {
            assistant_id,
            graph_id,
            config,
            context,
            metadata: self.metadata.unwrap_or_default(),
            name: self.name.unwrap_or_else(|| "Untitled".to_owned()),
            created_at: now,
            updated_at: now,
            version: 1,
            description: self.description,
        };
        Ok((assistant, self.if_exists.unwrap_or_default()))
    }
}

/// A `PATCH /assistants/{id}` body: what it gives replaces (metadata is
/// merged), and the result is a new version.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AssistantPatch {
    pub(crate) graph_id: Option<String>,
    pub(crate) config: Option<Map<String, Value>>,
    pub(crate) context: Option<Map<String, Value>>,
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
}

/// A change to an assistant that a repository applies in one step, given
/// the stored assistant and its newest version number.
#[derive(Clone, Debug)]
pub(crate) enum AssistantChange {
    /// A new version from a patch.
    Patch(AssistantPatch),
    /// An earlier version made current again.
    SetLatest(u32),
}

/// What a change came to.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "made once per request and matched at once"
)]
pub(crate) enum Changed {
    /// The assistant after it (and the version record to add, for a patch).
    Done(Assistant, Option<AssistantVersion>),
    /// No assistant with that id.
    NoAssistant,
    /// No such version of it.
    NoVersion,
}

impl AssistantPatch {
    /// Checks the parts that need no stored record: a known graph, and not
    /// both `configurable` and `context`.
    ///
    /// # Errors
    /// 404 for an unknown graph, 400 for both.
    pub(crate) fn check(
        mut self,
        graph_exists: impl Fn(&str) -> Result<(), ApiError>,
    ) -> Result<Self, ApiError> {
        if let Some(graph_id) = &self.graph_id {
            graph_exists(graph_id)?;
        }
        let mut config = self.config.take().unwrap_or_default();
        self.context = reconcile(&mut config, self.context.take())?;
        self.config = Some(config);
        Ok(self)
    }
}

impl AssistantChange {
    /// Applies the change to `current`, whose newest version is `newest`;
    /// `version` reads a stored version (for [`AssistantChange::SetLatest`]).
    pub(crate) fn apply(
        self,
        mut current: Assistant,
        newest: u32,
        version: impl FnOnce(u32) -> Option<AssistantVersion>,
        now: DateTime<Utc>,
    ) -> Changed {
        match self {
            Self::Patch(patch) => {
                if let Some(graph_id) = patch.graph_id {
                    current.graph_id = graph_id;
                }
                if let Some(config) = patch.config.filter(|config| !config.is_empty()) {
                    current.config = config;
                }
                if let Some(context) = patch.context {
                    current.context = context;
                }
                if let Some(metadata) = patch.metadata {
                    current.metadata.extend(metadata);
                }
                if let Some(name) = patch.name {
                    current.name = name;
                }
                if patch.description.is_some() {
                    current.description = patch.description;
                }
                current.version = newest.saturating_add(1);
                current.updated_at = now;
                let record = current.as_version();
                Changed::Done(current, Some(record))
            }
            Self::SetLatest(wanted) => {
                let Some(stored) = version(wanted) else {
                    return Changed::NoVersion;
                };
                current.graph_id = stored.graph_id;
                current.config = stored.config;
                current.context = stored.context;
                current.metadata = stored.metadata;
                current.name = stored.name;
                current.description = stored.description;
                current.version = stored.version;
                current.updated_at = now;
                Changed::Done(current, None)
            }
        }
    }
}

/// Which assistants a search or count takes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AssistantFilter {
    pub(crate) graph_id: Option<String>,
    /// A case-insensitive part of the name.
    pub(crate) name: Option<String>,
    /// Metadata containing this (`jsonb @>`).
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl AssistantFilter {
    /// Whether `assistant` passes.
    pub(crate) fn matches(&self, assistant: &Assistant) -> bool {
        self.graph_id
            .as_ref()
            .is_none_or(|g| g.is_empty() || *g == assistant.graph_id)
            && self
                .name
                .as_ref()
                .is_none_or(|name| assistant.name.to_lowercase().contains(&name.to_lowercase()))
            && crate::wire::metadata_contains(&assistant.metadata, self.metadata.as_ref())
    }
}

/// What to sort assistants by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AssistantSort {
    AssistantId,
    GraphId,
    Name,
    #[default]
    CreatedAt,
    UpdatedAt,
}

/// A page of assistants.
#[derive(Clone, Debug, Default)]
pub(crate) struct AssistantSearch {
    pub(crate) filter: AssistantFilter,
    pub(crate) sort_by: AssistantSort,
    pub(crate) sort_order: crate::threads::SortOrder,
    pub(crate) limit: usize,
    pub(crate) offset: usize,
}

impl AssistantSearch {
    /// One page of `found` (every match) in this search's order, and the
    /// count of matches. Names and graph ids sort case-insensitively, as
    /// the official server's; ties by id, so pages are stable.
    pub(crate) fn page(&self, found: Vec<Assistant>) -> (Vec<Assistant>, usize) {
        let order = |a: &Assistant, b: &Assistant| {
            let by = match self.sort_by {
                AssistantSort::AssistantId => std::cmp::Ordering::Equal,
                AssistantSort::GraphId => a.graph_id.to_lowercase().cmp(&b.graph_id.to_lowercase()),
                AssistantSort::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
                AssistantSort::CreatedAt => a.created_at.cmp(&b.created_at),
                AssistantSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            }
            .then_with(|| a.assistant_id.cmp(&b.assistant_id));
            self.sort_order.apply(by)
        };
        crate::wire::sorted_page(found, order, self.offset, self.limit)
    }
}

/// A page of an assistant's versions, newest first, with a metadata filter.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct VersionQuery {
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) limit: Option<usize>,
    pub(crate) offset: Option<usize>,
}

impl VersionQuery {
    /// The page of `versions` (any order) this query asks for.
    pub(crate) fn page(&self, mut versions: Vec<AssistantVersion>) -> Vec<AssistantVersion> {
        versions.retain(|version| {
            crate::wire::metadata_contains(&version.metadata, self.metadata.as_ref())
        });
        versions.sort_by_key(|version| std::cmp::Reverse(version.version));
        versions
            .into_iter()
            .skip(self.offset.unwrap_or(0))
            .take(self.limit.unwrap_or(10))
            .collect()
    }
}

/// Merges two JSON objects, the second's entries winning (the official
/// server's `_merge_jsonb`, which is shallow).
pub(crate) fn merged(base: &Map<String, Value>, over: Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    out.extend(over);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ids_are_the_official_servers() {
        // The ids LangGraph Server 0.16.7 gave the fixture graphs.
        assert_eq!(system_id("hitl"), "d2a02ed8-fb92-5e43-81ea-cb78d82caa2f");
        assert_eq!(system_id("simple"), "5e0f6b46-d00f-5af4-87dc-ea2105ff526d");
        assert_eq!(system_id("parent"), "0b226d00-e4ec-5b58-8e33-88f4bd4debe7");
    }

    fn known(_: &str) -> Result<(), ApiError> {
        Ok(())
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn configurable_is_mirrored_into_context_and_back() {
        let now = Utc::now();
        let body = AssistantCreate {
            graph_id: Some("hitl".into()),
            config: Some(object(
                serde_json::json!({"configurable": {"model": "fake"}}),
            )),
            ..AssistantCreate::default()
        };
        let (assistant, _) = body.check(known, now).unwrap();
        assert_eq!(
            Value::Object(assistant.context),
            serde_json::json!({"model": "fake"})
        );

        let body = AssistantCreate {
            graph_id: Some("hitl".into()),
            context: Some(object(serde_json::json!({"model": "m"}))),
            ..AssistantCreate::default()
        };
        let (assistant, _) = body.check(known, now).unwrap();
        assert_eq!(
            Value::Object(assistant.config),
            serde_json::json!({"configurable": {"model": "m"}})
        );
        assert_eq!(assistant.name, "Untitled");

        let both = AssistantCreate {
            graph_id: Some("hitl".into()),
            config: Some(object(serde_json::json!({"configurable": {"a": 1}}))),
            context: Some(object(serde_json::json!({"b": 2}))),
            ..AssistantCreate::default()
        };
        assert_eq!(both.check(known, now).unwrap_err().status().as_u16(), 400);
    }

    #[test]
    fn a_patch_makes_the_next_version_and_set_latest_restores_one() {
        let now = Utc::now();
        let mut original = Assistant::system("hitl", now);
        original.metadata = object(serde_json::json!({"team": "docs"}));
        let v1 = original.as_version();
        let patch = AssistantPatch {
            metadata: Some(object(serde_json::json!({"v": 2}))),
            name: Some("renamed".into()),
            ..AssistantPatch::default()
        }
        .check(known)
        .unwrap();
        let Changed::Done(patched, Some(record)) =
            AssistantChange::Patch(patch).apply(original, 1, |_| None, now)
        else {
            panic!("the patch did not apply");
        };
        assert_eq!(patched.version, 2);
        assert_eq!(record.version, 2);
        assert_eq!(
            Value::Object(patched.metadata.clone()),
            serde_json::json!({"team": "docs", "v": 2})
        );
        let Changed::Done(back, None) = AssistantChange::SetLatest(1).apply(
            patched.clone(),
            2,
            |n| (n == 1).then(|| v1.clone()),
            now,
        ) else {
            panic!("set_latest did not apply");
        };
        assert_eq!(back.version, 1);
        assert_eq!(back.name, "hitl");
        assert!(matches!(
            AssistantChange::SetLatest(7).apply(patched, 2, |_| None, now),
            Changed::NoVersion
        ));
    }

    #[test]
    fn names_match_case_insensitively_by_part() {
        let assistant = Assistant::system("Hitl-Graph", Utc::now());
        let filter = AssistantFilter {
            name: Some("hitl".into()),
            ..AssistantFilter::default()
        };
        assert!(filter.matches(&assistant));
    }
}
