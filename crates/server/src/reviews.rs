//! The two self reviews besides SelfSubjectAccessReview ([`crate::authz`]):
//! `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews` (`kubectl
//! auth can-i --list`), answered with every RBAC rule that applies to the
//! caller in the namespace asked, and `POST
//! /apis/authentication.k8s.io/v1/selfsubjectreviews` (`kubectl auth
//! whoami`), answered with who the caller is. Neither is stored.

use crate::ServerState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use ringleader_auth::identity::Identity;
use ringleader_auth::rbac::{self, Rule};
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};

/// Where `kubectl auth can-i --list` posts.
pub const RULES_REVIEW_PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
/// Where `kubectl auth whoami` posts.
pub const SELF_REVIEW_PATH: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.to_ascii_lowercase().contains("protobuf"))
}

/// The namespace a SelfSubjectRulesReview asks about (`spec.namespace`).
fn namespace_asked(headers: &HeaderMap, body: &[u8]) -> Result<String, ApiError> {
    if is_protobuf(headers) {
        return ringleader_auth::ssar_protobuf::rules_review_namespace(body)
            .map_err(|e| ApiError::bad_field("body", e));
    }
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/json");
    let review = crate::decode::parse_value(content_type, body)?.0;
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("SelfSubjectRulesReview");
    if kind != "SelfSubjectRulesReview" {
        return Err(ApiError::bad_field("kind", format!("{kind:?}: must be SelfSubjectRulesReview")));
    }
    match review.pointer("/spec/namespace") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(ns)) => Ok(ns.clone()),
        Some(other) => Err(ApiError::bad_field("spec.namespace", format!("{other}: must be a string"))),
    }
}

/// The review's `status`: resource rules and non-resource rules apart, as
/// Kubernetes lists them.
fn status(rules: &[Rule]) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        if !r.non_resource_urls.is_empty() {
            non_resource_rules.push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
        if !r.resources.is_empty() {
            let mut rule = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(rule);
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}

/// `POST …/selfsubjectrulesreviews`.
pub async fn self_subject_rules_review(
    State(state): State<ServerState>,
    identity: Option<Extension<Identity>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(Extension(id)) = identity else {
        return ApiError::unauthorized("no identity").into_response();
    };
    let answer = async {
        let namespace = namespace_asked(&headers, &body)?;
        let ns = namespace.clone();
        let rules = state.blocking(move |s| rbac::rules_for(s, &id, &ns)).await?;
        Ok::<_, ApiError>(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"namespace": namespace},
            "status": status(&rules),
        }))
    };
    match answer.await {
        Ok(review) => (StatusCode::CREATED, axum::Json(review)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST …/selfsubjectreviews`: the body says nothing the answer needs.
pub async fn self_subject_review(identity: Option<Extension<Identity>>) -> Response {
    let Some(Extension(id)) = identity else {
        return ApiError::unauthorized("no identity").into_response();
    };
    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": {"username": id.user, "groups": id.groups}},
    });
    (StatusCode::CREATED, axum::Json(review)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_split_as_kubernetes_lists_them() {
        let rules = [
            Rule::of(&json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["p"]})),
            Rule::of(&json!({"nonResourceURLs": ["/version"], "verbs": ["get"]})),
        ];
        let s = status(&rules);
        assert_eq!(s["resourceRules"][0]["resourceNames"], json!(["p"]));
        assert_eq!(s["nonResourceRules"][0]["nonResourceURLs"], json!(["/version"]));
        assert_eq!(s["resourceRules"].as_array().map(Vec::len), Some(1));
    }
}
