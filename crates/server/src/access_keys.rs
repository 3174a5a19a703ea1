//! Requests signed with an access key (`Authorization: RL-HMAC-SHA256 …`,
//! [`ringleader_auth::access_key`]): the body is read here, once, because
//! the signature covers its digest, then handed on unchanged. And the
//! callers' own keys through the API ([`COLLECTION_PATH`], [`ITEM_PATH`]):
//! every authenticated user may make, list, disable and delete its own
//! (RBAC's `system:basic-user`); an administrator (`system:masters`) any
//! user's.

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

/// The collection of the caller's access keys: `POST` makes one (the
/// answer holds the secret key, the only time it is shown), `GET` lists
/// them (never a secret).
pub const COLLECTION_PATH: &str = "/apis/ringleader.io/v1alpha1/accesskeys";
/// One key: `DELETE` deletes it, `PATCH {"disabled": true|false}` disables
/// or enables it.
pub const ITEM_PATH: &str = "/apis/ringleader.io/v1alpha1/accesskeys/{name}";

fn not_found(message: String) -> ApiError {
    ApiError::new(axum::http::StatusCode::NOT_FOUND, "NotFound", message)
}

fn data_dir(state: &ServerState) -> Result<std::path::PathBuf, ApiError> {
    state
        .data_dir()
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| not_found("access keys are not served: the server has no data directory".into()))
}

/// Whether `id` manages every user's keys (not only its own).
fn manages_all(id: &Identity) -> bool {
    id.in_group(ringleader_auth::identity::MASTERS_GROUP)
}

fn listed(k: &access_key::AccessKeyEntry) -> serde_json::Value {
    serde_json::json!({"accessKeyId": k.access_key_id, "user": k.user, "groups": k.groups,
                       "disabled": k.disabled, "createdAt": k.created_at})
}

fn blocking_err(e: tokio::task::JoinError) -> ApiError {
    ApiError::internal(format!("access keys: {e}"))
}

/// `POST` [`COLLECTION_PATH`]: a key pair for the caller, or (an
/// administrator, body `{"user": …, "groups": […]}`) for another user.
pub(crate) async fn create(
    axum::extract::State(state): axum::extract::State<ServerState>,
    identity: Option<axum::Extension<Identity>>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let answer = async {
        let axum::Extension(id) = identity.ok_or_else(|| ApiError::unauthorized("no identity"))?;
        let dir = data_dir(&state)?;
        let asked: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
            serde_json::json!({})
        } else {
            serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("body: not JSON: {e}")))?
        };
        let own_groups: Vec<String> =
            id.groups.iter().filter(|g| *g != ringleader_auth::identity::AUTHENTICATED_GROUP).cloned().collect();
        let (user, groups) = match asked.get("user").and_then(serde_json::Value::as_str) {
            Some(u) if u != id.user => {
                if !manages_all(&id) {
                    return Err(ApiError::new(
                        axum::http::StatusCode::FORBIDDEN,
                        "Forbidden",
                        format!("user {:?} may make access keys for itself only, not for {u:?}", id.user),
                    ));
                }
                let groups = asked
                    .get("groups")
                    .and_then(serde_json::Value::as_array)
                    .map(|g| g.iter().filter_map(serde_json::Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default();
                (u.to_string(), groups)
            }
            _ => (id.user.clone(), own_groups),
        };
        let now = ringleader_api::time::now_rfc3339();
        let (u, g) = (user.clone(), groups);
        let (ak, sk) = tokio::task::spawn_blocking(move || access_key::create(&dir, &u, &g, &now))
            .await
            .map_err(blocking_err)?
            .map_err(ApiError::bad_request)?;
        Ok(serde_json::json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "AccessKey",
            "accessKeyId": ak, "secretAccessKey": sk, "user": user}))
    }
    .await;
    match answer {
        Ok(v) => (axum::http::StatusCode::CREATED, axum::Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET` [`COLLECTION_PATH`]: the caller's keys (an administrator's: all).
pub(crate) async fn list(
    axum::extract::State(state): axum::extract::State<ServerState>,
    identity: Option<axum::Extension<Identity>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let answer = async {
        let axum::Extension(id) = identity.ok_or_else(|| ApiError::unauthorized("no identity"))?;
        let dir = data_dir(&state)?;
        let file = tokio::task::spawn_blocking(move || access_key::read(&dir))
            .await
            .map_err(blocking_err)?
            .map_err(ApiError::internal)?;
        let items: Vec<serde_json::Value> =
            file.keys.iter().filter(|k| manages_all(&id) || k.user == id.user).map(listed).collect();
        Ok::<_, ApiError>(
            serde_json::json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "AccessKeyList", "items": items}),
        )
    }
    .await;
    match answer {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The key `ak` if `id` may manage it; 404 otherwise (another user's key
/// is not confirmed to exist).
fn owned(dir: &std::path::Path, id: &Identity, ak: &str) -> Result<access_key::AccessKeyEntry, ApiError> {
    let file = access_key::read(dir).map_err(ApiError::internal)?;
    file.keys
        .into_iter()
        .find(|k| k.access_key_id == ak && (manages_all(id) || k.user == id.user))
        .ok_or_else(|| not_found(format!("accesskeys.ringleader.io {ak:?} not found")))
}

/// `DELETE` and `PATCH` of [`ITEM_PATH`].
pub(crate) async fn item(
    axum::extract::State(state): axum::extract::State<ServerState>,
    identity: Option<axum::Extension<Identity>>,
    axum::extract::Path(ak): axum::extract::Path<String>,
    method: axum::http::Method,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let answer = async {
        let axum::Extension(id) = identity.ok_or_else(|| ApiError::unauthorized("no identity"))?;
        let dir = data_dir(&state)?;
        let disabled = if method == axum::http::Method::PATCH {
            let v: serde_json::Value =
                serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("body: not JSON: {e}")))?;
            Some(v.get("disabled").and_then(serde_json::Value::as_bool).ok_or_else(|| {
                ApiError::bad_request(format!("body: {v}: a PATCH sets \"disabled\" to true or false"))
            })?)
        } else {
            None
        };
        tokio::task::spawn_blocking(move || {
            let mut entry = owned(&dir, &id, &ak)?;
            match disabled {
                Some(d) => {
                    access_key::set_disabled(&dir, &ak, d).map_err(ApiError::internal)?;
                    entry.disabled = d;
                }
                None => access_key::delete(&dir, &ak).map_err(ApiError::internal)?,
            }
            Ok::<_, ApiError>(listed(&entry))
        })
        .await
        .map_err(blocking_err)?
    }
    .await;
    match answer {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}
