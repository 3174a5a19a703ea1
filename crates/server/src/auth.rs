//! The admin bearer token: one random secret per data directory, created at
//! first start in `<data-dir>/token` (mode 0600) and reused after, so the CLI
//! on the same machine authenticates by reading the file; and the middleware
//! that authenticates and authorizes every request (other users' tokens are
//! in [`ringleader_auth::identity`]; requests signed with an access key in
//! [`crate::access_keys`]).

use crate::ServerState;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ringleader_registry::status::ApiError;

/// Paths served without a token (probes must not need the secret).
const OPEN_PATHS: &[&str] = &["/healthz", "/livez", "/readyz"];

/// Middleware: 401 `Status` unless `Authorization: Bearer <token>` names a
/// known identity ([`ringleader_auth::identity`]), which may act as another
/// ([`crate::impersonate`]), then 403 unless that identity may make the
/// request ([`crate::authz`]). The identity goes on to the handler
/// as a request extension.
pub async fn require_token(State(state): State<ServerState>, mut request: Request, next: Next) -> Response {
    let signed = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(ringleader_auth::access_key::SCHEME));
    if signed {
        let identity;
        (request, identity) = match crate::access_keys::authenticate(&state, request).await {
            Ok(found) => found,
            Err(e) => return e.into_response(),
        };
        return authorized(&state, identity, request, next).await;
    }
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    if OPEN_PATHS.contains(&request.uri().path()) || crate::console::is_console_path(request.uri().path()) {
        // Open to anyone, but who asks decides how much a probe details.
        if let Some(identity) = presented.and_then(|t| state.authn().identify(t)) {
            request.extensions_mut().insert(identity);
        }
        return next.run(request).await;
    }
    let identity = match presented.map(|t| (t, state.authn().identify(t))) {
        Some((_, Some(identity))) => identity,
        Some((t, None)) if ringleader_auth::sa_token::looks_like_jwt(t) => {
            let now = ringleader_api::time::now() as i64;
            match crate::sa_tokens::authenticate(&state, t, now).await {
                Ok(identity) => identity,
                Err(why) => {
                    // kube-apiserver says no more than this to the client;
                    // why goes to the log.
                    tracing::info!("service account token refused: {why}");
                    return ApiError::unauthorized("Unauthorized").into_response();
                }
            }
        }
        Some((_, None)) => return ApiError::unauthorized("invalid bearer token").into_response(),
        None => {
            return ApiError::unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>` with the token from <data-dir>/token",
            )
            .into_response()
        }
    };
    authorized(&state, identity, request, next).await
}

/// The request on to the handler as `identity` (or whom it impersonates),
/// or 403 unless RBAC allows it.
async fn authorized(
    state: &ServerState,
    identity: ringleader_auth::Identity,
    mut request: Request,
    next: Next,
) -> Response {
    let identity = match crate::impersonate::resolve(state, identity, request.headers()).await {
        Ok(identity) => identity,
        Err(e) => return e.into_response(),
    };
    let attributes = crate::authz::Attributes::of(request.method(), request.uri());
    if let Err(e) = crate::authz::check(state, &identity, &attributes).await {
        return e.into_response();
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}
