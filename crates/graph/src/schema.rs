//! State schemas: the keys of a graph's state and the channel of each.

use std::fmt;
use std::sync::Arc;

use stategraph_channels::{BinaryOperatorAggregate, Channel, LastValue, reducers};

use crate::GraphError;

/// The keys of a state and the channel that stores each one.
///
/// ```
/// use stategraph_graph::Schema;
///
/// let schema = Schema::new()
///     .last_value("subject")
///     .reducer("jokes", stategraph_channels::reducers::json_add);
/// assert_eq!(schema.keys().collect::<Vec<_>>(), ["subject", "jokes"]);
/// ```
// Keys and channels are shared: a compiled graph holds the same key names
// and channel prototypes (which runs copy, never change).
#[derive(Clone, Default)]
pub struct Schema {
    keys: Vec<(Arc<str>, Arc<dyn Channel>)>,
    // What the graph's JSON schemas show: a title, and keys' value schemas
    // (shared: compiled graphs keep a copy of the schema).
    title: Option<Arc<str>>,
    json: Arc<Vec<(Arc<str>, serde_json::Value)>>,
    // Whether no key is required in the JSON schemas (a `TypedDict` with
    // `total=False`).
    partial: bool,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.keys.iter().map(|(k, c)| (k, c)))
            .finish()
    }
}

impl Schema {
    /// An empty schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a key stored in `channel` (replacing an earlier declaration of the key).
    #[must_use]
    pub fn key(mut self, name: impl Into<String>, channel: impl Channel) -> Self {
        let name: String = name.into();
        self.keys.retain(|(k, _)| **k != *name);
        self.keys.push((Arc::from(name), Arc::new(channel)));
        self
    }

    /// Adds a JSON key without reducer: one write per step, last value wins.
    #[must_use]
    pub fn last_value(self, name: impl Into<String>) -> Self {
        self.key(name, LastValue::<serde_json::Value>::new())
    }

    /// Adds a JSON key folded with `reducer`, starting at `null` (so the first
    /// write is kept as is).
    #[must_use]
    pub fn reducer(
        self,
        name: impl Into<String>,
        reducer: impl Fn(serde_json::Value, serde_json::Value) -> serde_json::Value
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.key(name, BinaryOperatorAggregate::new(reducer))
    }

    /// Adds a JSON list key with Python's `operator.add` (list concatenation),
    /// starting at `[]` as LangGraph's `Annotated[list, operator.add]`.
    #[must_use]
    pub fn append(self, name: impl Into<String>) -> Self {
        self.key(name, ListAppend::channel())
    }

    /// Names the state in its JSON schemas (a typed state's struct name;
    /// `State` when unnamed).
    #[must_use]
    pub fn titled(mut self, title: impl Into<String>) -> Self {
        self.title = Some(Arc::from(title.into()));
        self
    }

    /// Describes the values of `key` in the graph's JSON schemas (any value
    /// when undescribed), e.g. `json!({"type": "integer"})`.
    #[must_use]
    pub fn describe(mut self, key: impl Into<String>, schema: serde_json::Value) -> Self {
        let key: String = key.into();
        let json = Arc::make_mut(&mut self.json);
        json.retain(|(k, _)| **k != *key);
        json.push((Arc::from(key), schema));
        self
    }

    /// Marks every key optional in the graph's JSON schemas, as a Python
    /// `TypedDict` declared with `total=False` (by default every key is
    /// required, as a `TypedDict`'s are).
    #[must_use]
    pub fn partial(mut self) -> Self {
        self.partial = true;
        self
    }

    /// Whether the JSON schemas require no key (see [`Schema::partial`]).
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// The state's title in JSON schemas, if named.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The JSON schema of `key`'s values, if described.
    pub fn key_json_schema(&self, key: &str) -> Option<&serde_json::Value> {
        self.json.iter().find(|(k, _)| **k == *key).map(|(_, s)| s)
    }

    /// The key names, in declaration order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(k, _)| &**k)
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the schema has no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether the schema declares `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.keys.iter().any(|(k, _)| **k == *key)
    }

    /// The keys with their channel prototypes, in declaration order.
    pub(crate) fn channels(&self) -> &[(Arc<str>, Arc<dyn Channel>)] {
        &self.keys
    }

    /// Adds the keys of `other` this schema lacks, with their channels and
    /// value schemas.
    pub(crate) fn add_missing(&mut self, other: &Schema) {
        for (key, channel) in &other.keys {
            if self.contains(key) {
                continue;
            }
            self.keys.push((key.clone(), channel.clone()));
            if let Some(json) = other.key_json_schema(key) {
                Arc::make_mut(&mut self.json).push((key.clone(), json.clone()));
            }
        }
    }

    pub(crate) fn check_keys<'a>(
        &self,
        what: &str,
        keys: impl IntoIterator<Item = &'a String>,
    ) -> Result<(), GraphError> {
        for key in keys {
            if !self.contains(key) {
                return Err(GraphError::InvalidSchema(format!(
                    "{what} key {key:?} is not a state key"
                )));
            }
        }
        Ok(())
    }
}

/// A JSON list channel that starts at `[]` and concatenates writes.
struct ListAppend;

impl ListAppend {
    fn channel() -> BinaryOperatorAggregate<serde_json::Value> {
        fn empty_list() -> serde_json::Value {
            serde_json::Value::Array(Vec::new())
        }
        BinaryOperatorAggregate::with_initial(reducers::json_add, empty_list)
    }
}
