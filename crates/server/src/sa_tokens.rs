//! ServiceAccount tokens over the API: the `serviceaccounts/token`
//! subresource (an `authentication.k8s.io/v1 TokenRequest` posted for an
//! account, answered with a signed token, as `kubectl create token` asks),
//! and the authentication of such tokens on every request — the signature,
//! expiry and audience ([`ringleader_auth::sa_token`]), then the account and
//! the pod or Secret the token is bound to, which must still be stored with
//! the uids the token carries (a token outlives neither, as on Kubernetes).

use crate::decode::{self, Req};
use crate::ServerState;
use axum::http::StatusCode;
use axum::response::Response;
use ringleader_api::error::FieldError;
use ringleader_auth::sa_token::{self, Claims, ObjectRef, API_AUDIENCE};
use ringleader_auth::Identity;
use ringleader_registry::resources::{PODS, SERVICE_ACCOUNTS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::{json, Value};

/// Shortest life a TokenRequest may ask (kube-apiserver: ten minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// Life of a token whose request names none (kube-apiserver: an hour).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Longest life a TokenRequest may ask (kube-apiserver: 2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
const KIND: &str = "TokenRequest";
const API_VERSION: &str = "authentication.k8s.io/v1";

/// `(namespace, account)` of `/api/v1/namespaces/{ns}/serviceaccounts/{name}/token`.
pub(crate) fn target(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "serviceaccounts", name, "token"] = segs.as_slice() else { return None };
    (!ns.is_empty() && !name.is_empty()).then(|| (ns.to_string(), name.to_string()))
}

/// What a TokenRequest asks, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    /// `(kind, name, uid)`: the object the token dies with; uid may be empty.
    pub bound: Option<(String, String, String)>,
}

/// The spec of a TokenRequest for account `name`, or why it is refused,
/// in kube-apiserver's words.
pub(crate) fn spec(request: &Value, name: &str) -> Result<Spec, ApiError> {
    let kind = request.get("kind").and_then(Value::as_str).unwrap_or(KIND);
    if kind != KIND {
        return Err(ApiError::bad_field("kind", format!("{kind:?}: must be TokenRequest")));
    }
    let spec = request.get("spec").cloned().unwrap_or(Value::Null);
    let mut errors = Vec::new();
    let audiences = match spec.get("audiences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        Some(other) => {
            errors.push(FieldError::new("spec.audiences", other, "must be a list of strings"));
            Vec::new()
        }
    };
    let expiration_seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => match v.as_i64() {
            Some(s) if s < MIN_EXPIRATION_SECONDS => {
                errors.push(FieldError::new(
                    "spec.expirationSeconds",
                    s,
                    "may not specify a duration less than 10 minutes",
                ));
                s
            }
            Some(s) if s > MAX_EXPIRATION_SECONDS => {
                errors.push(FieldError::new(
                    "spec.expirationSeconds",
                    s,
                    "may not specify a duration larger than 2^32 seconds",
                ));
                s
            }
            Some(s) => s,
            None => {
                errors.push(FieldError::new("spec.expirationSeconds", v, "must be an integer"));
                0
            }
        },
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid("TokenRequest.authentication.k8s.io", name, &errors));
    }
    let bound = match spec.get("boundObjectRef") {
        None | Some(Value::Null) => None,
        Some(r) => {
            let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            let kind = s("kind");
            if !matches!(kind.as_str(), "Pod" | "Secret") {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {name:?} to object of kind {kind:?}: supported kinds are \"Pod\" and \"Secret\""
                )));
            }
            if s("name").is_empty() {
                return Err(ApiError::bad_field("spec.boundObjectRef.name", "Required value"));
            }
            Some((kind, s("name"), s("uid")))
        }
    };
    Ok(Spec { audiences, expiration_seconds, bound })
}

/// `POST …/serviceaccounts/{name}/token`: a token for the account, bound
/// to the pod or Secret the request names. A node agent may ask only for
/// the account of a pod bound to its node, bound to that pod (as the Node
/// authorizer holds a kubelet).
pub(crate) async fn serve(state: &ServerState, req: &Req, ns: &str, name: &str) -> Result<Response, ApiError> {
    let (request, _) = decode::body(req)?;
    let spec = spec(&request, name)?;
    let Some(signer) = state.sa_signer() else {
        return Err(ApiError::internal("this server has no service account signing key"));
    };
    let sa_key = ObjectKey::new(SERVICE_ACCOUNTS.api_version, SERVICE_ACCOUNTS.kind, ns, name);
    let bound_key = spec.bound.as_ref().map(|(kind, n, _)| match kind.as_str() {
        "Pod" => ObjectKey::new(PODS.api_version, PODS.kind, ns, n),
        _ => ObjectKey::new("v1", "Secret", ns, n),
    });
    let (k, b) = (sa_key.clone(), bound_key.clone());
    let (account, bound) = state
        .blocking(move |s| {
            let account = s.get(&k)?;
            let bound = match &b {
                Some(b) => s.get(b)?,
                None => None,
            };
            Ok((account, bound))
        })
        .await?;
    let Some(account) = account else {
        return Err(ringleader_store::StoreError::NotFound(sa_key).into());
    };
    let uid = |v: &Value| v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let (mut pod, mut secret) = (None, None);
    if let (Some((kind, bname, buid)), Some(key)) = (&spec.bound, bound_key) {
        let Some(object) = bound else {
            return Err(ringleader_store::StoreError::NotFound(key).into());
        };
        if !buid.is_empty() && *buid != uid(&object.object) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Conflict",
                format!("the UID in the bound object reference ({buid}) does not match the UID in record. The object might have been deleted and then recreated"),
            ));
        }
        let reference = ObjectRef { name: bname.clone(), uid: uid(&object.object) };
        if kind == "Pod" {
            if ringleader_api::kinds::service_account::of_pod(&object.object) != name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                )));
            }
            node_may_ask(req.identity.as_ref(), &object.object, name)?;
            pod = Some(reference);
        } else {
            secret = Some(reference);
        }
    }
    if pod.is_none() {
        if let Some(node) = req.identity.as_ref().and_then(Identity::node_name) {
            return Err(node_refusal(node, name));
        }
    }
    let now = ringleader_api::time::now() as i64;
    let account_ref = ObjectRef { name: name.to_string(), uid: uid(&account.object) };
    let claims = Claims::new(ns, account_ref, &spec.audiences, now, spec.expiration_seconds, pod, secret);
    let token = signer.mint(&claims).map_err(ApiError::internal)?;
    let answer = answer(&request, ns, name, &claims, &token, spec.expiration_seconds);
    Ok(req.format.respond(StatusCode::CREATED, &answer))
}

/// A node agent asks only for the account of a pod on its node.
fn node_may_ask(id: Option<&Identity>, pod: &Value, account: &str) -> Result<(), ApiError> {
    let Some(node) = id.and_then(Identity::node_name) else { return Ok(()) };
    if pod.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node) {
        return Ok(());
    }
    Err(node_refusal(node, account))
}

fn node_refusal(node: &str, account: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "Forbidden",
        format!("serviceaccounts \"{account}\" is forbidden: node {node:?} may ask only for tokens bound to a pod bound to it"),
    )
}

/// The TokenRequest answered: the request's spec with its defaults, and
/// `status.token` with its `expirationTimestamp`.
fn answer(request: &Value, ns: &str, name: &str, claims: &Claims, token: &str, seconds: i64) -> Value {
    let mut spec = request.get("spec").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    spec["audiences"] = json!(claims.aud);
    spec["expirationSeconds"] = json!(seconds);
    if spec.get("boundObjectRef").is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": ringleader_api::time::rfc3339(claims.iat as f64)},
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": ringleader_api::time::rfc3339(claims.exp as f64)},
    })
}

/// Who a ServiceAccount token is, at `now`, or why it is refused (for the
/// log; the caller answers a plain 401 as kube-apiserver does).
pub(crate) async fn authenticate(state: &ServerState, token: &str, now: i64) -> Result<Identity, String> {
    let Some(signer) = state.sa_signer() else { return Err("no service account signing key".into()) };
    let claims = signer.verify(token, &[API_AUDIENCE], now)?;
    let k = &claims.kubernetes;
    let ns = k.namespace.clone();
    let keys = (
        ObjectKey::new(SERVICE_ACCOUNTS.api_version, SERVICE_ACCOUNTS.kind, &ns, &k.serviceaccount.name),
        k.pod.as_ref().map(|p| ObjectKey::new(PODS.api_version, PODS.kind, &ns, &p.name)),
        k.secret.as_ref().map(|s| ObjectKey::new("v1", "Secret", &ns, &s.name)),
    );
    let (account, pod, secret) = state
        .blocking(move |s| {
            let get = |k: &Option<ObjectKey>| match k {
                Some(k) => s.get(k).map(|o| o.map(|o| o.object)),
                None => Ok(None),
            };
            Ok((s.get(&keys.0)?.map(|o| o.object), get(&keys.1)?, get(&keys.2)?))
        })
        .await
        .map_err(|e| e.message)?;
    sa_token::still_bound(&claims, account.as_ref(), pod.as_ref(), secret.as_ref())?;
    Ok(claims.identity())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_requests_are_checked_as_kube_apiserver_checks_them() {
        assert_eq!(target("/api/v1/namespaces/ns1/serviceaccounts/robot/token"), Some(("ns1".into(), "robot".into())));
        assert_eq!(target("/api/v1/namespaces/ns1/serviceaccounts/robot"), None);
        let bare = spec(&json!({"apiVersion": API_VERSION, "kind": KIND}), "robot");
        assert_eq!(bare.ok(), Some(Spec { audiences: vec![], expiration_seconds: 3600, bound: None }));
        let short = spec(&json!({"spec": {"expirationSeconds": 10}}), "robot").err();
        assert_eq!(
            short.map(|e| (e.code, e.message)),
            Some((
                StatusCode::UNPROCESSABLE_ENTITY,
                "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: Invalid value: 10: may not specify a duration less than 10 minutes".to_string()
            ))
        );
        let long = spec(&json!({"spec": {"expirationSeconds": 1_i64 << 33}}), "robot").err().map(|e| e.message);
        assert!(long.is_some_and(|m| m.contains("larger than 2^32 seconds")));
        let node = spec(&json!({"spec": {"boundObjectRef": {"kind": "Node", "name": "n1"}}}), "robot").err();
        assert!(
            node.is_some_and(|e| e.code == StatusCode::BAD_REQUEST && e.message.contains("object of kind \"Node\""))
        );
        let bound = spec(
            &json!({"spec": {"audiences": ["vault"], "expirationSeconds": 600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u1"}}}),
            "robot",
        );
        assert_eq!(
            bound.ok(),
            Some(Spec {
                audiences: vec!["vault".into()],
                expiration_seconds: 600,
                bound: Some(("Pod".into(), "p".into(), "u1".into()))
            })
        );
    }
}
