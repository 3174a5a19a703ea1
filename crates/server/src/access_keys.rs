//! Requests signed with an access key (`Authorization: RL-HMAC-SHA256 …`,
//! [`ringleader_auth::access_key`]): the body is read here, once, because
//! the signature covers its digest, then handed on unchanged.

use crate::ServerState;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header::AUTHORIZATION;
use ringleader_auth::access_key::{self, Signed, TIMESTAMP_HEADER};
use ringleader_auth::Identity;
use ringleader_registry::status::ApiError;

/// The request (its body restored) and who signed it, or 401 saying why.
pub(crate) async fn authenticate(state: &ServerState, request: Request) -> Result<(Request, Identity), ApiError> {
    let Some(dir) = state.data_dir().map(std::path::Path::to_path_buf) else {
        return Err(ApiError::unauthorized("access keys are not served: the server has no data directory"));
    };
    let (parts, body) = request.into_parts();
    // Within the same time as any body: a signed request trickled in slowly
    // must not hold its connection longer than an unsigned one.
    let within = state.conn_limits().body_timeout;
    let bytes = match tokio::time::timeout(within, crate::decode::read_body(body, crate::decode::MAX_BODY)).await {
        Ok(read) => read?,
        Err(_) => return Err(ApiError::body_timeout(within)),
    };
    let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let authorization = header(AUTHORIZATION.as_str()).unwrap_or_default();
    let timestamp = header(TIMESTAMP_HEADER);
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or_default().to_string();
    let now = ringleader_api::time::now() as i64;
    let body = bytes.clone();
    let found = tokio::task::spawn_blocking(move || {
        let signed = Signed {
            authorization: &authorization,
            timestamp: timestamp.as_deref(),
            method: &method,
            path: &path,
            query: &query,
            body: &body,
        };
        access_key::authenticate(&dir, &signed, now)
    })
    .await
    .map_err(|e| ApiError::internal(format!("access key check: {e}")))?;
    match found {
        Ok(identity) => Ok((Request::from_parts(parts, Body::from(bytes)), identity)),
        Err(why) => {
            tracing::info!("signed request refused: {why}");
            Err(ApiError::unauthorized(format!("access key: {why}")))
        }
    }
}
