//! Authorization of every request before its handler runs, as
//! kube-apiserver's filter chain does it: the request's attributes (verb
//! from method and query, API group, resource, subresource, namespace,
//! name, or the path of a non-resource URL) are derived from the URL alone
//! ([`Attributes::of`]), decided by [`ringleader_auth::rbac`], and a refusal is a 403
//! `Status` worded as Kubernetes words it ([`forbidden`]). Node agents are
//! further held to their own node's objects ([`node_scope`]), as
//! Kubernetes' Node authorizer holds kubelets.
//!
//! Also here: `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`,
//! which `kubectl auth can-i` asks.

use crate::ServerState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
pub use ringleader_auth::attributes::{forbidden, Attributes, AUTHORIZATION_GROUP, SSAR_PATH};
use ringleader_auth::identity::Identity;
use ringleader_auth::rbac::{self, Decision};
use ringleader_registry::resources::{self, NODES, PODS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::{json, Value};

/// Decides `a` for `id` against the store's RBAC objects.
pub async fn decide(state: &ServerState, id: &Identity, a: &Attributes) -> Result<Decision, ApiError> {
    let (id, a) = (id.clone(), a.clone());
    state.blocking(move |s| rbac::authorize(s, &id, &a)).await
}

/// Authorizes one request (called by the auth middleware): RBAC, then the
/// node scope of agents. The bulk apply is let through here and authorizes
/// each of its documents ([`authorize_write`]).
pub async fn check(state: &ServerState, id: &Identity, a: &Attributes) -> Result<(), ApiError> {
    // Both authorize what they touch themselves: each document, each series.
    if a.is_bulk_apply() || a.is_history() {
        return Ok(());
    }
    if !decide(state, id, a).await?.allowed {
        return Err(forbidden(id, a, ""));
    }
    node_scope(state, id, a).await
}

/// The write `verb` of one object, as [`check`] would decide a request for it.
pub async fn authorize_write(
    state: &ServerState,
    id: &Identity,
    verb: &str,
    rt: &resources::ResourceType,
    object: &Value,
) -> Result<(), ApiError> {
    let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let a = Attributes::write_of(verb, rt, &s("/metadata/namespace"), &s("/metadata/name"));
    check(state, id, &a).await
}

/// A node agent may write only its own Node and the pods bound to it (and
/// Events); reads are not narrowed. Everyone else passes.
async fn node_scope(state: &ServerState, id: &Identity, a: &Attributes) -> Result<(), ApiError> {
    let Some(node) = id.node_name() else { return Ok(()) };
    if !a.resource_request || matches!(a.verb.as_str(), "get" | "list" | "watch") || a.resource == "events" {
        return Ok(());
    }
    // Which pod's account it may ask for is checked by the handler
    // (crate::sa_tokens), which reads the pod anyway.
    if a.resource == "serviceaccounts" && a.subresource == "token" && a.verb == "create" {
        return Ok(());
    }
    let nodes = a.resource == "nodes" && (a.api_group == NODES.group || a.api_group.is_empty());
    if nodes {
        // A create names the node in its body: checked on write (crate::protect).
        if (a.name == node || (a.verb == "create" && a.name.is_empty())) && a.verb != "delete" {
            return Ok(());
        }
        return Err(forbidden(id, a, &format!("node {node:?} may write only its own Node object")));
    }
    if a.resource == PODS.plural && a.api_group.is_empty() && !a.name.is_empty() && a.verb != "create" {
        let key = ObjectKey::new(PODS.api_version, PODS.kind, &a.namespace, &a.name);
        let bound = state
            .blocking(move |s| s.get(&key))
            .await?
            .and_then(|p| p.object.pointer("/spec/nodeName").and_then(Value::as_str).map(str::to_string));
        if bound.as_deref() == Some(node) {
            return Ok(());
        }
        return Err(forbidden(id, a, &format!("node {node:?} may write only pods bound to it")));
    }
    Err(forbidden(id, a, &format!("node {node:?} may write only its own Node, its pods and Events")))
}

/// `POST …/selfsubjectaccessreviews`: whether the caller may do what the
/// review's `spec.resourceAttributes` (or `nonResourceAttributes`) say.
pub async fn self_subject_access_review(
    State(state): State<ServerState>,
    identity: Option<Extension<Identity>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(Extension(id)) = identity else {
        return ApiError::unauthorized("no identity").into_response();
    };
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/json");
    match review(&state, &id, content_type, &body).await {
        Ok(answer) => (StatusCode::CREATED, axum::Json(answer)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn review(state: &ServerState, id: &Identity, content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    // kubectl sends this one as protobuf only.
    let mut review = if content_type.to_ascii_lowercase().contains("protobuf") {
        ringleader_auth::ssar_protobuf::review(body).map_err(|e| ApiError::bad_field("body", e))?
    } else {
        crate::decode::parse_value(content_type, body)?.0
    };
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("SelfSubjectAccessReview");
    if kind != "SelfSubjectAccessReview" {
        return Err(ApiError::bad_field("kind", format!("{kind:?}: must be SelfSubjectAccessReview")));
    }
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let a = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), None) if r.is_object() => Attributes {
            verb: s(r, "verb"),
            api_group: s(r, "group"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            namespace: s(r, "namespace"),
            name: s(r, "name"),
            resource_request: true,
            path: String::new(),
        },
        (None, Some(n)) if n.is_object() => {
            Attributes { verb: s(n, "verb"), path: s(n, "path"), resource_request: false, ..Attributes::default() }
        }
        _ => {
            return Err(ApiError::bad_field(
                "spec",
                "exactly one of resourceAttributes and nonResourceAttributes must be specified",
            ))
        }
    };
    if a.verb.is_empty() {
        let field = if a.resource_request { "resourceAttributes" } else { "nonResourceAttributes" };
        return Err(ApiError::bad_field(&format!("spec.{field}.verb"), "required"));
    }
    let decision = decide(state, id, &a).await?;
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    if let Some(map) = review.as_object_mut() {
        map.insert("apiVersion".into(), json!("authorization.k8s.io/v1"));
        map.insert("kind".into(), json!("SelfSubjectAccessReview"));
        map.entry("metadata").or_insert_with(|| json!({}));
        map.insert("status".into(), status);
    }
    Ok(review)
}
