//! Who is calling: the middleware that runs [`Auth::authenticate`] on every
//! protected request, and [`Caller`], which handlers take to run
//! [`Auth::authorize`] and apply the filter it returns.
//!
//! [`Auth::authenticate`]: crate::auth::Auth::authenticate
//! [`Auth::authorize`]: crate::auth::Auth::authorize

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::{ApiError, ApiState};
use crate::auth::{
    Action, AuthContext, AuthError, AuthFilter, AuthRequest, AuthUser, Authorization, Resource,
};

/// The routes anyone may call (the official server's unprotected ones).
const PUBLIC: [&str; 5] = ["/", "/ok", "/info", "/docs", "/openapi.json"];

/// The authenticated user of a request; `None` when the server has no
/// [`Auth`](crate::auth::Auth).
#[derive(Clone, Debug, Default)]
pub(crate) struct Caller(pub(crate) Option<Arc<AuthUser>>);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned().unwrap_or_default())
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::FORBIDDEN);
        Self::new(status, err.detail)
    }
}

/// The mark of a request the server makes to itself (a relative webhook
/// URL): it is not authenticated, as the official server's loopback client
/// is not. Only code inside the server can set it (it is a request
/// extension, not a header).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loopback;

/// Runs the server's [`Auth::authenticate`](crate::auth::Auth::authenticate)
/// before every protected route; its refusal is the answer.
pub(super) async fn authenticate(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(auth) = &state.auth else {
        return next.run(request).await;
    };
    if request.method() == Method::OPTIONS
        || PUBLIC.contains(&request.uri().path())
        || request.extensions().get::<Loopback>().is_some()
    {
        return next.run(request).await;
    }
    let seen = AuthRequest {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        query: request.uri().query().map(str::to_owned),
        headers: request
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect(),
    };
    match auth.dyn_authenticate(&seen).await {
        Ok(user) => {
            request
                .extensions_mut()
                .insert(Caller(Some(Arc::new(user))));
            next.run(request).await
        }
        Err(err) => ApiError::from(err).into_response(),
    }
}

impl Caller {
    /// The user, when there is one.
    pub(crate) fn user(&self) -> Option<&AuthUser> {
        self.0.as_deref()
    }

    /// Runs the server's `authorize` for `action` on `resource` with the
    /// request's payload `value` (which it may change): the filter to apply,
    /// `None` for none.
    ///
    /// # Errors
    /// 403 `Forbidden` when denied; the handler's own refusal.
    pub(crate) async fn authorize(
        &self,
        state: &ApiState,
        resource: Resource,
        action: Action,
        value: &mut Value,
    ) -> Result<Option<AuthFilter>, ApiError> {
        let (Some(user), Some(auth)) = (self.0.as_deref(), &state.auth) else {
            return Ok(None);
        };
        let ctx = AuthContext {
            user,
            resource,
            action,
        };
        match auth.dyn_authorize(&ctx, value).await? {
            Authorization::Allow => Ok(None),
            Authorization::Deny => Err(ApiError::new(StatusCode::FORBIDDEN, "Forbidden")),
            Authorization::Filter(filter) if filter.is_empty() => Ok(None),
            Authorization::Filter(filter) => AuthFilter::new(filter)
                .map(Some)
                .map_err(|bad| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, bad.0)),
        }
    }

    /// [`Caller::authorize`] with a payload of `fields`, which the
    /// handler reads but whose changes nothing uses (reads and deletes).
    pub(crate) async fn filter(
        &self,
        state: &ApiState,
        resource: Resource,
        action: Action,
        fields: Value,
    ) -> Result<Option<AuthFilter>, ApiError> {
        let mut value = fields;
        self.authorize(state, resource, action, &mut value).await
    }
}

/// Whether a resource with `metadata` passes `filter` (no filter: yes).
pub(crate) fn passes(filter: Option<&AuthFilter>, metadata: &Map<String, Value>) -> bool {
    filter.is_none_or(|filter| filter.matches(metadata))
}
