//! Delegated authorization for endpoints beside the API (the agent's log
//! endpoint, the standalone manager's secure `/metrics`): the caller's own
//! bearer token asks the API server, through a SelfSubjectAccessReview,
//! whether it may do what it asks, so the endpoint holds no credentials or
//! rules of its own and RBAC stays the API server's. Any API server that
//! serves the review answers (ringleader's, kube-apiserver). "Yes" answers
//! are cached for a short while; "no" is asked again each time, so a new
//! RoleBinding takes effect at once.

use axum::http::{HeaderMap, StatusCode};
use ringleader_client::Client;
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an allowed (token, request) pair is not asked again.
const ALLOWED_FOR: Duration = Duration::from_secs(30);
/// Most cached answers (the cache starts over beyond).
const MOST_CACHED: usize = 4096;

/// Asks `api` on behalf of callers, remembering recent "yes" answers.
#[derive(Clone)]
pub struct Delegated {
    api: Client,
    /// (token digest, attributes as JSON text) → when it was allowed.
    allowed: Arc<Mutex<HashMap<(String, String), Instant>>>,
}

/// The bearer token of a request, if it carries one.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "))?.trim();
    (!token.is_empty()).then(|| token.to_string())
}

/// The API's 401.
pub fn unauthorized() -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
}

impl Delegated {
    /// Asks `api` (its address and CA; its own credentials are not used).
    pub fn new(api: Client) -> Delegated {
        Delegated { api, allowed: Arc::default() }
    }

    /// Whether the holder of `token` may do what `attributes` says (a
    /// SubjectAccessReview's `resourceAttributes` or `nonResourceAttributes`
    /// object, e.g. `{"nonResourceAttributes": {"path": "/metrics", "verb":
    /// "get"}}`). A token the API server does not accept is a 401.
    pub async fn allows(&self, token: &str, attributes: Value) -> Result<bool, ApiError> {
        let key = (crate::identity::digest(token), attributes.to_string());
        if let Ok(cache) = self.allowed.lock() {
            if cache.get(&key).is_some_and(|at| at.elapsed() < ALLOWED_FOR) {
                return Ok(true);
            }
        }
        let review =
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attributes});
        let url = format!("{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", self.api.base());
        let response = self.api.http().post(&url).bearer_auth(token).json(&review).send().await.map_err(|e| {
            ApiError::internal(format!("cannot ask the API server whether the caller may do this: {e}"))
        })?;
        if response.status().as_u16() == 401 {
            return Err(unauthorized());
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|e| ApiError::internal(format!("the API server's access review could not be read: {e}")))?;
        let ok = answer.pointer("/status/allowed").and_then(Value::as_bool) == Some(true);
        if ok {
            if let Ok(mut cache) = self.allowed.lock() {
                if cache.len() >= MOST_CACHED {
                    cache.clear();
                }
                cache.insert(key, Instant::now());
            }
        }
        Ok(ok)
    }
}
