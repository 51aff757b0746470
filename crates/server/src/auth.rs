//! Custom authentication and authorization (API.md 13): the Rust form of a
//! `langgraph_sdk.Auth` object with its `@auth.authenticate` and `@auth.on`
//! handlers.
//!
//! [`Auth::authenticate`] runs on every request but `/ok`, `/info`,
//! `/docs` and `/openapi.json`, and says who is calling (or ends the request
//! with its status). [`Auth::authorize`] runs before each operation on a
//! resource, with the request's payload, which it may change (stamp an
//! owner into metadata, move a store namespace under the user). It allows,
//! denies (403), or returns a [filter](Authorization::Filter) on the
//! resource's metadata: a thread, assistant or cron that does not match is
//! not found (404, never 403), and searches leave it out.

use std::future::Future;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};

/// What [`Auth::authenticate`] sees of a request.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AuthRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The headers, names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
}

impl AuthRequest {
    /// A request, as tests and other front ends make one.
    pub fn new(method: impl Into<String>, path: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            path: path.into(),
            ..Self::default()
        }
    }

    /// The same request with a header added.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The `Authorization` header.
    pub fn authorization(&self) -> Option<&str> {
        self.header("authorization")
    }
}

/// Who is calling: what [`Auth::authenticate`] returns. Runs see it as
/// `config.configurable.langgraph_auth_user` (and its identity and
/// permissions as `langgraph_auth_user_id`, `langgraph_auth_permissions`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuthUser {
    /// The user's id.
    pub identity: String,
    /// A name to show (the identity when not given).
    pub display_name: String,
    /// Always `true` for a user [`Auth::authenticate`] let in.
    pub is_authenticated: bool,
    /// What the user may do, as the application names it.
    pub permissions: Vec<String>,
    /// Any other fields, kept beside the ones above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthUser {
    /// A user known by `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        let identity = identity.into();
        Self {
            display_name: identity.clone(),
            identity,
            is_authenticated: true,
            permissions: Vec::new(),
            extra: Map::new(),
        }
    }

    /// The same user with these permissions.
    #[must_use]
    pub fn with_permissions<I, S>(mut self, permissions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.permissions = permissions.into_iter().map(Into::into).collect();
        self
    }
}

/// A refusal: the request ends with this status and `{"detail": ...}`
/// (LangGraph's `Auth.exceptions.HTTPException`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct AuthError {
    /// The HTTP status (401 and 403 are the usual ones).
    pub status: u16,
    /// The `detail` of the answer.
    pub detail: String,
}

impl AuthError {
    /// 401 with `detail`.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self {
            status: 401,
            detail: detail.into(),
        }
    }

    /// 403 with `detail`.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self {
            status: 403,
            detail: detail.into(),
        }
    }
}

/// What a request acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// Threads, and the runs and state on them.
    Threads,
    /// Assistants.
    Assistants,
    /// Crons.
    Crons,
    /// The store.
    Store,
}

/// What a request does to its [`Resource`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// Makes one.
    Create,
    /// Reads one (a thread's state, history and runs too).
    Read,
    /// Changes one (a thread's state, a run's cancel too).
    Update,
    /// Deletes one.
    Delete,
    /// Searches or counts.
    Search,
    /// Starts a run on a thread (or a stateless run).
    CreateRun,
    /// Store: writes an item.
    Put,
    /// Store: reads an item.
    Get,
    /// Store: lists namespaces.
    ListNamespaces,
}

/// The context of an [`Auth::authorize`] call (LangGraph's `AuthContext`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct AuthContext<'a> {
    /// Who is calling.
    pub user: &'a AuthUser,
    /// On what.
    pub resource: Resource,
    /// Doing what.
    pub action: Action,
}

/// What [`Auth::authorize`] decides.
#[derive(Clone, Debug, PartialEq)]
pub enum Authorization {
    /// Go on (LangGraph's `None` or `True`).
    Allow,
    /// 403 `Forbidden` (LangGraph's `False`).
    Deny,
    /// Go on, on the resources whose metadata match: `{key: value}` and
    /// `{key: {"$eq": value}}` compare, `{key: {"$contains": v or [v, ...]}}`
    /// looks in a list; `{"$or": [f, f, ...]}` and `{"$and": [...]}` (two or
    /// more filters each, at most two levels deep) combine.
    Filter(Map<String, Value>),
}

/// A server's authentication and authorization.
///
/// ```
/// use serde_json::{Value, json};
/// use stategraph_server::auth::{
///     Action, Auth, AuthContext, AuthError, AuthRequest, AuthUser, Authorization, Resource,
/// };
///
/// /// The bearer token is the user name; each user sees only their threads.
/// struct Owners;
///
/// impl Auth for Owners {
///     async fn authenticate(&self, request: &AuthRequest) -> Result<AuthUser, AuthError> {
///         let token = request
///             .authorization()
///             .and_then(|header| header.strip_prefix("Bearer "))
///             .ok_or_else(|| AuthError::unauthorized("missing bearer token"))?;
///         Ok(AuthUser::new(token.trim()))
///     }
///
///     async fn authorize(
///         &self,
///         ctx: &AuthContext<'_>,
///         value: &mut Value,
///     ) -> Result<Authorization, AuthError> {
///         let owner = json!({"owner": ctx.user.identity});
///         if (ctx.resource, ctx.action) == (Resource::Threads, Action::Create) {
///             value["metadata"]["owner"] = owner["owner"].clone();
///         }
///         match ctx.resource {
///             Resource::Threads => Ok(Authorization::Filter(
///                 owner.as_object().cloned().unwrap_or_default(),
///             )),
///             _ => Ok(Authorization::Allow),
///         }
///     }
/// }
///
/// let server = stategraph_server::Server::builder().auth(Owners);
/// # let _ = server;
/// ```
pub trait Auth: Send + Sync + 'static {
    /// Who is calling, or the answer that ends the request.
    fn authenticate(
        &self,
        request: &AuthRequest,
    ) -> impl Future<Output = Result<AuthUser, AuthError>> + Send;

    /// Whether `ctx.user` may do `ctx.action` on `ctx.resource`, with the
    /// request's payload `value` (which it may change). The default allows
    /// everything.
    fn authorize(
        &self,
        ctx: &AuthContext<'_>,
        value: &mut Value,
    ) -> impl Future<Output = Result<Authorization, AuthError>> + Send {
        let _ = (ctx, value);
        std::future::ready(Ok(Authorization::Allow))
    }
}

/// The object-safe twin of [`Auth`], implemented for every one.
pub(crate) trait DynAuth: Send + Sync + 'static {
    fn dyn_authenticate<'a>(
        &'a self,
        request: &'a AuthRequest,
    ) -> BoxFuture<'a, Result<AuthUser, AuthError>>;

    fn dyn_authorize<'a>(
        &'a self,
        ctx: &'a AuthContext<'a>,
        value: &'a mut Value,
    ) -> BoxFuture<'a, Result<Authorization, AuthError>>;
}

impl std::fmt::Debug for dyn DynAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth")
    }
}

impl<A: Auth> DynAuth for A {
    fn dyn_authenticate<'a>(
        &'a self,
        request: &'a AuthRequest,
    ) -> BoxFuture<'a, Result<AuthUser, AuthError>> {
        Box::pin(self.authenticate(request))
    }

    fn dyn_authorize<'a>(
        &'a self,
        ctx: &'a AuthContext<'a>,
        value: &'a mut Value,
    ) -> BoxFuture<'a, Result<Authorization, AuthError>> {
        Box::pin(self.authorize(ctx, value))
    }
}

/// A filter [`Auth::authorize`] returned, its shape checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AuthFilter(Map<String, Value>);

/// What is wrong with a filter a handler returned (a 500: the server's
/// code is at fault, not the request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadFilter(pub(crate) &'static str);

impl AuthFilter {
    /// Checks the shape of `filter` (the official server's rules).
    ///
    /// # Errors
    /// `$or`/`$and` without a list of two or more objects, or operators
    /// nested deeper than two levels.
    pub(crate) fn new(filter: Map<String, Value>) -> Result<Self, BadFilter> {
        validate(&filter, 0)?;
        Ok(Self(filter))
    }

    /// Whether `metadata` passes.
    pub(crate) fn matches(&self, metadata: &Map<String, Value>) -> bool {
        matches(metadata, &self.0)
    }

    /// Its `key: value` and `key: {"$eq": value}` conditions, as equality
    /// conditions a store search takes.
    pub(crate) fn plain_conditions(&self) -> Vec<(String, Value)> {
        self.0
            .iter()
            .filter_map(|(key, wanted)| match wanted {
                _ if key.starts_with('$') => None,
                Value::Object(op) if op.len() == 1 && op.contains_key("$eq") => {
                    op.get("$eq").map(|value| (key.clone(), value.clone()))
                }
                Value::Object(op) if op.len() == 1 && op.contains_key("$contains") => None,
                other => Some((key.clone(), other.clone())),
            })
            .collect()
    }

    /// Whether it has conditions [`plain_conditions`](Self::plain_conditions)
    /// leaves out (`$or`, `$and`, `$contains`).
    pub(crate) fn has_operators(&self) -> bool {
        self.plain_conditions().len() < self.0.len()
    }
}

fn validate(filter: &Map<String, Value>, depth: usize) -> Result<(), BadFilter> {
    if depth > 2 {
        return Err(BadFilter(
            "Your auth handler returned a filter with too many nested operators. The maximum depth for nested operators is 2. Please simplify your filter.",
        ));
    }
    for (key, groups) in filter {
        let invalid = match key.as_str() {
            "$or" => BadFilter(
                "Your auth handler returned a filter with an invalid $or operator. The $or operator must be a list of at least 2 filter objects. Check the filter returned by your auth handler.",
            ),
            "$and" => BadFilter(
                "Your auth handler returned a filter with an invalid $and operator. The $and operator must be a list of at least 2 filter objects. Check the filter returned by your auth handler.",
            ),
            _ => continue,
        };
        let Value::Array(groups) = groups else {
            return Err(invalid);
        };
        if groups.len() < 2 {
            return Err(invalid);
        }
        for group in groups {
            validate(group.as_object().ok_or(invalid)?, depth + 1)?;
        }
    }
    Ok(())
}

fn matches(metadata: &Map<String, Value>, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(key, wanted)| {
        let groups = || {
            wanted
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
        };
        match key.as_str() {
            "$or" => groups().any(|group| matches(metadata, group)),
            "$and" => groups().all(|group| matches(metadata, group)),
            _ => field_matches(metadata.get(key), wanted),
        }
    })
}

/// One `key: condition` of a filter against the metadata's value.
fn field_matches(have: Option<&Value>, wanted: &Value) -> bool {
    let Some(have) = have else {
        return false;
    };
    match wanted {
        Value::Object(op) if op.len() == 1 && op.contains_key("$eq") => Some(have) == op.get("$eq"),
        Value::Object(op) if op.len() == 1 && op.contains_key("$contains") => {
            let Value::Array(items) = have else {
                return false;
            };
            match op.get("$contains") {
                Some(Value::Array(all)) => all.iter().all(|one| items.contains(one)),
                Some(one) => items.contains(one),
                None => false,
            }
        }
        other => have == other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(value: Value) -> Result<AuthFilter, BadFilter> {
        AuthFilter::new(value.as_object().cloned().unwrap_or_default())
    }

    fn check(value: Value, metadata: &Map<String, Value>) -> bool {
        filter(value).unwrap().matches(metadata)
    }

    fn metadata(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn filters_compare_contain_and_combine() {
        let owned = metadata(json!({"owner": "alice", "tags": ["a", "b"], "n": 1}));
        assert!(check(json!({"owner": "alice"}), &owned));
        assert!(!check(json!({"owner": {"$eq": "bob"}}), &owned));
        assert!(check(json!({"tags": {"$contains": "a"}}), &owned));
        assert!(!check(json!({"tags": {"$contains": ["a", "c"]}}), &owned));
        assert!(!check(json!({"missing": 1}), &owned));
        assert!(check(json!({"$or": [{"owner": "bob"}, {"n": 1}]}), &owned));
        assert!(!check(
            json!({"$and": [{"owner": "alice"}, {"n": 2}]}),
            &owned
        ));
    }

    #[test]
    fn malformed_filters_are_the_servers_fault() {
        assert!(filter(json!({"$or": [{"owner": "alice"}]})).is_err());
        assert!(filter(json!({"a": 1, "$and": "no"})).is_err());
        let deep = json!({"$or": [
            {"$or": [{"$or": [{"a": 1}, {"b": 1}]}, {"c": 1}]},
            {"d": 1}
        ]});
        assert!(filter(deep).is_err());
    }

    #[test]
    fn a_request_reads_headers_in_any_case() {
        let request = AuthRequest::new("GET", "/threads").with_header("Authorization", "Bearer a");
        assert_eq!(request.authorization(), Some("Bearer a"));
        assert_eq!(request.header("AUTHORIZATION"), Some("Bearer a"));
    }
}
