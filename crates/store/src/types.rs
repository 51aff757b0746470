//! Items, the four operations of [`Store::batch`](crate::Store::batch) and
//! their results, and the namespace rules.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use stategraph_core::JsonMap;
use stategraph_core::limits::{self, LimitError};

use crate::{Result, StoreError};

/// A namespace: a non-empty path of labels, such as `["users", "alice",
/// "memories"]`.
pub type Namespace = Vec<String>;

/// A stored value with its address and timestamps (LangGraph's `Item`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Item {
    /// Where it lives.
    pub namespace: Namespace,
    /// Its key within the namespace.
    pub key: String,
    /// The value: a JSON object.
    pub value: JsonMap,
    /// When it was first put (kept by later puts of the same key).
    pub created_at: DateTime<Utc>,
    /// When it was last put.
    pub updated_at: DateTime<Utc>,
}

/// An item found by a search, with its similarity score when the search
/// ranked it by a query (LangGraph's `SearchItem`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Cosine similarity to the query; `None` when not ranked.
    pub score: Option<f64>,
}

impl Item {
    /// An item, as a backend reads it.
    pub fn new(
        namespace: Namespace,
        key: impl Into<String>,
        value: JsonMap,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    ) -> Self {
        Self {
            namespace,
            key: key.into(),
            value,
            created_at,
            updated_at,
        }
    }
}

impl SearchItem {
    /// A search result.
    pub fn new(item: Item, score: Option<f64>) -> Self {
        Self { item, score }
    }
}

/// Which fields of a put value the semantic index embeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexFields {
    /// The store's configured fields (LangGraph's `index=None`).
    #[default]
    Default,
    /// Not indexed (`index=False`).
    No,
    /// These field paths (`index=["text", "tags[*]"]`).
    Fields(Vec<String>),
}

/// How long a put item lives.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Ttl {
    /// The store's default TTL, if it has one (LangGraph's `ttl` left unset).
    #[default]
    Default,
    /// Forever, whatever the default (`ttl=None` given explicitly).
    Never,
    /// This many minutes (fractions allowed).
    Minutes(f64),
}

/// Reads one item.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GetOp {
    /// The item's namespace.
    pub namespace: Namespace,
    /// Its key.
    pub key: String,
    /// Whether reading extends its TTL (when the store's `refresh_on_read`
    /// allows).
    pub refresh_ttl: bool,
}

/// Writes or deletes one item.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PutOp {
    /// The item's namespace.
    pub namespace: Namespace,
    /// Its key.
    pub key: String,
    /// The value, or `None` to delete the item.
    pub value: Option<JsonMap>,
    /// What the semantic index embeds.
    pub index: IndexFields,
    /// How long it lives.
    pub ttl: Ttl,
}

/// Finds items under a namespace prefix.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SearchOp {
    /// The namespace prefix, whole labels only (`["foo"]` matches `["foo",
    /// "bar"]`, never `["foobar"]`); empty matches everything.
    pub namespace_prefix: Namespace,
    /// Conditions on value fields: `{"key": value}` (equality) or `{"key":
    /// {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}}`, all of
    /// which must hold; keys may be dotted paths.
    pub filter: JsonMap,
    /// How many results at most (default 10).
    pub limit: usize,
    /// How many to skip (default 0).
    pub offset: usize,
    /// A natural-language query to rank by (stores with a semantic index).
    pub query: Option<String>,
    /// Whether returned items get their TTL extended.
    pub refresh_ttl: bool,
}

/// Lists the namespaces that hold items.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ListNamespacesOp {
    /// Conditions all listed namespaces meet.
    pub match_conditions: Vec<MatchCondition>,
    /// Namespaces are cut to this many labels (and de-duplicated).
    pub max_depth: Option<usize>,
    /// How many at most (default 100).
    pub limit: usize,
    /// How many to skip.
    pub offset: usize,
}

/// A condition on a namespace: it starts or ends with these labels, `"*"`
/// matching any one label.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatchCondition {
    /// The namespace starts with these labels.
    Prefix(Namespace),
    /// The namespace ends with these labels.
    Suffix(Namespace),
}

/// One operation of a batch.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Read one item.
    Get(GetOp),
    /// Write or delete one item.
    Put(PutOp),
    /// Search a namespace prefix.
    Search(SearchOp),
    /// List namespaces.
    ListNamespaces(ListNamespacesOp),
}

/// The result of one operation, at the operation's position.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OpResult {
    /// A get: the item, if there is one.
    Item(Option<Item>),
    /// A put (nothing to return).
    Done,
    /// A search.
    Items(Vec<SearchItem>),
    /// A namespace listing.
    Namespaces(Vec<Namespace>),
}

impl GetOp {
    /// Reads `key` in `namespace`, refreshing its TTL.
    pub fn new(namespace: Namespace, key: impl Into<String>) -> Self {
        Self {
            namespace,
            key: key.into(),
            refresh_ttl: true,
        }
    }
}

impl PutOp {
    /// Writes `value` at `key` in `namespace`, indexed with the store's
    /// fields and living the store's default TTL.
    pub fn put(namespace: Namespace, key: impl Into<String>, value: JsonMap) -> Self {
        Self {
            namespace,
            key: key.into(),
            value: Some(value),
            index: IndexFields::Default,
            ttl: Ttl::Default,
        }
    }

    /// Deletes `key` in `namespace`.
    pub fn delete(namespace: Namespace, key: impl Into<String>) -> Self {
        Self {
            namespace,
            key: key.into(),
            value: None,
            index: IndexFields::Default,
            ttl: Ttl::Default,
        }
    }

    /// Sets what the index embeds.
    #[must_use]
    pub fn with_index(mut self, index: IndexFields) -> Self {
        self.index = index;
        self
    }

    /// Sets how long the item lives.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Ttl) -> Self {
        self.ttl = ttl;
        self
    }
}

impl SearchOp {
    /// Searches under `namespace_prefix`: no filter, no query, the first
    /// 10 results.
    pub fn new(namespace_prefix: Namespace) -> Self {
        Self {
            namespace_prefix,
            filter: JsonMap::new(),
            limit: 10,
            offset: 0,
            query: None,
            refresh_ttl: true,
        }
    }

    /// Sets the filter.
    #[must_use]
    pub fn with_filter(mut self, filter: JsonMap) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the query.
    #[must_use]
    pub fn with_query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Sets limit and offset.
    #[must_use]
    pub fn with_page(mut self, limit: usize, offset: usize) -> Self {
        self.limit = limit;
        self.offset = offset;
        self
    }

    /// Sets whether returned items get their TTL extended.
    #[must_use]
    pub fn with_refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = refresh;
        self
    }
}

impl ListNamespacesOp {
    /// Every namespace, the first 100.
    pub fn new() -> Self {
        Self {
            match_conditions: Vec::new(),
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }

    /// Only namespaces starting with `prefix` (`"*"` matches any label).
    #[must_use]
    pub fn with_prefix(mut self, prefix: Namespace) -> Self {
        self.match_conditions.push(MatchCondition::Prefix(prefix));
        self
    }

    /// Only namespaces ending with `suffix` (`"*"` matches any label).
    #[must_use]
    pub fn with_suffix(mut self, suffix: Namespace) -> Self {
        self.match_conditions.push(MatchCondition::Suffix(suffix));
        self
    }

    /// Cuts namespaces to `depth` labels.
    #[must_use]
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// Sets limit and offset.
    #[must_use]
    pub fn with_page(mut self, limit: usize, offset: usize) -> Self {
        self.limit = limit;
        self.offset = offset;
        self
    }
}

impl Default for ListNamespacesOp {
    fn default() -> Self {
        Self::new()
    }
}

/// Checks the labels of a namespace an item is stored under: at least one,
/// none empty, none containing `.` (SQL stores join labels with `.`), and
/// within the limit table
/// ([`check_namespace`](stategraph_core::limits::check_namespace): label
/// count, label and namespace length, no NUL).
///
/// # Errors
/// [`StoreError::InvalidNamespace`] naming the rule broken, or
/// [`StoreError::Limit`].
pub fn validate_namespace(namespace: &[String]) -> Result<()> {
    let fail = |reason: String| StoreError::InvalidNamespace {
        namespace: namespace.to_vec(),
        reason,
    };
    if namespace.is_empty() {
        return Err(fail("Namespace cannot be empty.".into()));
    }
    if let Some(label) = namespace.iter().find(|label| label.is_empty()) {
        return Err(fail(format!(
            "Namespace labels cannot be empty strings (got {label:?})."
        )));
    }
    if let Some(label) = namespace.iter().find(|label| label.contains('.')) {
        return Err(fail(format!(
            "Invalid namespace label {label:?}: Namespace labels cannot contain periods ('.')."
        )));
    }
    limits::check_namespace(namespace)?;
    Ok(())
}

/// Checks the key of an item read or written: at most
/// [`MAX_KEY_BYTES`](stategraph_core::limits::MAX_KEY_BYTES), no NUL. Any
/// other string is a key, the empty one included.
///
/// # Errors
/// [`StoreError::Limit`].
pub fn validate_key(key: &str) -> Result<()> {
    limits::check_key(key)?;
    Ok(())
}

/// Checks that a put's value can be read back and stored by every
/// backend: it nests at most
/// [`MAX_DEPTH`](stategraph_core::limits::MAX_DEPTH) levels, its own
/// object included (checked without recursion, so any depth is safe to
/// check), and is at most
/// [`MAX_VALUE_BYTES`](stategraph_core::limits::MAX_VALUE_BYTES) as compact
/// JSON (counted without building the text).
///
/// # Errors
/// [`StoreError::ValueTooDeep`] or [`StoreError::ValueTooLarge`].
pub fn validate_value(put: &PutOp) -> Result<()> {
    let Some(value) = &put.value else {
        return Ok(());
    };
    match limits::check_object_depth("a store value", value.values())
        .and_then(|()| limits::check_map_size("a store value", value))
    {
        Ok(()) => Ok(()),
        Err(LimitError::TooDeep { limit, .. }) => Err(StoreError::ValueTooDeep {
            namespace: put.namespace.clone(),
            key: put.key.clone(),
            limit,
        }),
        Err(LimitError::TooLarge { limit, .. }) => Err(StoreError::ValueTooLarge {
            namespace: put.namespace.clone(),
            key: put.key.clone(),
            limit,
        }),
        Err(other) => Err(other.into()),
    }
}

/// [`validate_value`] for every put of a batch, before any of it runs:
/// each value too deep is taken out and dropped without recursion (a value
/// tens of thousands of levels deep would overflow the stack when dropped
/// the ordinary way), and the first one's error is returned.
///
/// # Errors
/// [`StoreError::ValueTooDeep`].
pub fn refuse_deep_values(ops: &mut [Op]) -> Result<()> {
    let mut first = None;
    for op in ops {
        if let Op::Put(put) = op
            && let Err(err) = validate_value(put)
        {
            if let Some(value) = put.value.take() {
                stategraph_core::json::drop_deep(serde_json::Value::Object(value));
            }
            first.get_or_insert(err);
        }
    }
    first.map_or(Ok(()), Err)
}

/// [`validate_namespace`] plus the rule of user writes: the root label
/// `langgraph` is reserved for the system.
///
/// # Errors
/// [`StoreError::InvalidNamespace`] naming the rule broken.
pub fn validate_user_namespace(namespace: &[String]) -> Result<()> {
    validate_namespace(namespace)?;
    if namespace.first().map(String::as_str) == Some("langgraph") {
        return Err(StoreError::InvalidNamespace {
            namespace: namespace.to_vec(),
            reason: "Root label for namespace cannot be \"langgraph\".".into(),
        });
    }
    Ok(())
}

/// A namespace from labels: `ns(["users", "alice"])`.
pub fn ns<I, S>(labels: I) -> Namespace
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    labels.into_iter().map(Into::into).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_deeper_than_a_read_accepts_are_refused() {
        let nested = |depth: usize| {
            (0..depth).fold(serde_json::json!(1), |inner, _| serde_json::json!([inner]))
        };
        let put = |depth| {
            let mut value = JsonMap::new();
            value.insert("v".into(), nested(depth));
            PutOp::put(ns(["a"]), "k", value)
        };
        let limit = stategraph_core::json::MAX_DEPTH;
        assert!(validate_value(&put(limit - 1)).is_ok());
        let err = validate_value(&put(limit)).unwrap_err();
        assert!(
            matches!(err, StoreError::ValueTooDeep { limit: 127, .. }),
            "{err}"
        );
    }

    #[test]
    fn namespaces_follow_langgraphs_rules() {
        assert!(validate_namespace(&ns(["a", "b"])).is_ok());
        for (bad, reason) in [
            (ns::<[&str; 0], &str>([]), "cannot be empty"),
            (ns(["the", "thing.about"]), "cannot contain periods"),
            (ns(["some", "fun", ""]), "empty strings"),
        ] {
            let err = validate_namespace(&bad).unwrap_err();
            assert!(err.to_string().contains(reason), "{err}");
        }
        assert!(validate_user_namespace(&ns(["langgraph", "foo"])).is_err());
        assert!(validate_user_namespace(&ns(["foo", "langgraph", "foo"])).is_ok());
        assert!(validate_namespace(&ns(["langgraph", "foo"])).is_ok());
    }

    #[test]
    fn namespaces_and_keys_follow_the_limit_table() {
        let err = validate_namespace(&ns(["a", "b\u{0}"])).unwrap_err();
        assert!(
            matches!(err, StoreError::Limit(LimitError::Nul { .. })),
            "{err}"
        );
        let labels = vec!["l".to_owned(); limits::MAX_NAMESPACE_LABELS + 1];
        let err = validate_namespace(&labels).unwrap_err();
        assert!(
            matches!(err, StoreError::Limit(LimitError::TooManyLabels { .. })),
            "{err}"
        );
        assert_eq!(err.kind(), stategraph_core::ErrorKind::InvalidInput);
        // LangGraph's rules come first.
        let err = validate_namespace(&ns(["a.b", "c\u{0}"])).unwrap_err();
        assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
        assert!(validate_key(&"k".repeat(limits::MAX_KEY_BYTES)).is_ok());
        let err = validate_key(&"k".repeat(limits::MAX_KEY_BYTES + 1)).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is 1025 bytes long, more than the 1024 allowed"),
            "{err}"
        );
        assert!(validate_key("").is_ok());
    }
}
