//! Assistants: so far the system assistants, one per registered graph
//! (API.md 1.3), searched and read (TRANSCRIPTS.md section 2).

use serde::Serialize;
use serde_json::{Map, Value};

/// The namespace of system assistant ids: `uuid5(this, graph_id)`.
const SYSTEM_NAMESPACE: uuid::Uuid = uuid::uuid!("6ba7b821-9dad-11d1-80b4-00c04fd430c8");

/// An assistant as the API shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Assistant {
    pub(crate) assistant_id: String,
    pub(crate) graph_id: String,
    pub(crate) config: Map<String, Value>,
    pub(crate) context: Map<String, Value>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) name: String,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
    #[serde(with = "crate::wire::api_time")]
    pub(crate) updated_at: chrono::DateTime<chrono::Utc>,
    pub(crate) version: u32,
    pub(crate) description: Option<String>,
}

impl Assistant {
    /// The system assistant of `graph_id`, made at `created_at`.
    pub(crate) fn system(graph_id: &str, created_at: chrono::DateTime<chrono::Utc>) -> Self {
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
}

/// The id of a graph's system assistant.
pub(crate) fn system_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&SYSTEM_NAMESPACE, graph_id.as_bytes()).to_string()
}

/// A `POST /assistants/search` body (absent and null both mean the
/// default; other fields are ignored, as the official server tolerates
/// what the SDKs add).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Search {
    pub(crate) graph_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) metadata: Option<Map<String, Value>>,
    pub(crate) limit: Option<usize>,
    pub(crate) offset: Option<usize>,
}

impl Search {
    /// Whether `assistant` matches: the same graph and name when given,
    /// and every given metadata entry present with that value.
    pub(crate) fn matches(&self, assistant: &Assistant) -> bool {
        self.graph_id
            .as_ref()
            .is_none_or(|g| *g == assistant.graph_id)
            && self.name.as_ref().is_none_or(|n| *n == assistant.name)
            && self.metadata.as_ref().is_none_or(|wanted| {
                wanted
                    .iter()
                    .all(|(key, value)| assistant.metadata.get(key) == Some(value))
            })
    }
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
}
