//! Authorization of every request before its handler runs, as
//! kube-apiserver's filter chain does it: the request's attributes (verb
//! from method and query, API group, resource, subresource, namespace,
//! name, or the path of a non-resource URL) are derived from the URL alone
//! ([`Attributes::of`]), decided by [`crate::rbac`], and a refusal is a 403
//! `Status` worded as Kubernetes words it ([`forbidden`]). Node agents are
//! further held to their own node's objects ([`node_scope`]), as
//! Kubernetes' Node authorizer holds kubelets.
//!
//! Also here: `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`,
//! which `kubectl auth can-i` asks.

use crate::identity::Identity;
use crate::rbac::{self, Decision};
use crate::ServerState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use ringleader_registry::resources::{self, NODES, PODS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::{json, Value};

/// The group of SelfSubjectAccessReview.
pub const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";
/// The path `kubectl auth can-i` posts to.
pub const SSAR_PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// What a request asks to do, in RBAC's terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// get, list, watch, create, update, patch, delete, deletecollection;
    /// for a non-resource URL the lower-case HTTP method.
    pub verb: String,
    pub api_group: String,
    /// Plural, e.g. `pods` (empty for a non-resource URL).
    pub resource: String,
    /// e.g. `log`.
    pub subresource: String,
    /// Empty for cluster-scoped resources and requests across namespaces.
    pub namespace: String,
    /// Empty for collections.
    pub name: String,
    /// `false`: a non-resource URL (`/version`, `/metrics`, discovery).
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
}

impl Attributes {
    /// The attributes of a request, from its method and URL.
    pub fn of(method: &Method, uri: &Uri) -> Attributes {
        let path = uri.path().to_string();
        let watch = uri.query().is_some_and(|q| {
            q.split('&').any(|kv| matches!(kv.split_once('=').unwrap_or((kv, "")), ("watch", "true" | "1" | "")))
        });
        let non_resource = |path: String| Attributes {
            verb: method.as_str().to_ascii_lowercase(),
            resource_request: false,
            path,
            ..Attributes::default()
        };
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, rest) = match segs.as_slice() {
            ["api", _, rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", g, _, rest @ ..] if !rest.is_empty() => (*g, rest),
            _ => return non_resource(path),
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns] => ("", &["namespaces", *ns][..]),
            ["namespaces", ns, rest @ ..] => (*ns, rest),
            _ => ("", rest),
        };
        let (resource, name, subresource) = match rest {
            [r] => (*r, "", String::new()),
            [r, n] => (*r, *n, String::new()),
            [r, n, sub @ ..] => (*r, *n, sub.join("/")),
            [] => ("", "", String::new()),
        };
        let verb = match *method {
            Method::GET | Method::HEAD if name.is_empty() && watch => "watch",
            Method::GET | Method::HEAD if name.is_empty() => "list",
            Method::GET | Method::HEAD if watch => "watch",
            Method::GET | Method::HEAD => "get",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if name.is_empty() => "deletecollection",
            Method::DELETE => "delete",
            _ => "",
        };
        let verb = if verb.is_empty() { method.as_str().to_ascii_lowercase() } else { verb.to_string() };
        Attributes {
            verb,
            api_group: group.to_string(),
            resource: resource.to_string(),
            subresource,
            namespace: namespace.to_string(),
            name: name.to_string(),
            resource_request: true,
            path,
        }
    }

    /// A create of one object (what each document of a bulk apply is).
    pub fn write_of(verb: &str, rt: &resources::ResourceType, namespace: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.to_string(),
            api_group: rt.group.to_string(),
            resource: rt.plural.to_string(),
            subresource: String::new(),
            namespace: if rt.namespaced { namespace.to_string() } else { String::new() },
            name: name.to_string(),
            resource_request: true,
            path: rt.object_path(namespace, name),
        }
    }

    /// The bulk apply handler authorizes each document itself.
    fn is_bulk_apply(&self) -> bool {
        self.resource_request && self.api_group == "ringleader.io" && self.resource == "apply" && self.name.is_empty()
    }

    /// `pods`, or `pytorchjobs.kubeflow.org` outside the core group.
    fn group_resource(&self) -> String {
        if self.api_group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.api_group)
        }
    }
}

/// The 403 of a refused request, in kube-apiserver's words:
/// `pods "p" is forbidden: User "alice" cannot get resource "pods" in API
/// group "" in the namespace "team-b"`, with `because` appended when set.
pub fn forbidden(id: &Identity, a: &Attributes, because: &str) -> ApiError {
    let mut message = if a.resource_request {
        let target =
            if a.name.is_empty() { a.group_resource() } else { format!("{} {:?}", a.group_resource(), a.name) };
        let resource =
            if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", a.namespace)
        };
        format!(
            "{target} is forbidden: User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            id.user, a.verb, a.api_group
        )
    } else {
        format!("forbidden: User {:?} cannot {} path {:?}", id.user, a.verb, a.path)
    };
    if !because.is_empty() {
        message.push_str(": ");
        message.push_str(because);
    }
    let mut e = ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message);
    if a.resource_request {
        e = e.with_object(&a.group_resource(), &a.name);
    }
    e
}

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
    if a.is_bulk_apply() || crate::history::http::is_history(a) {
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
        crate::ssar_protobuf::review(body).map_err(|e| ApiError::bad_field("body", e))?
    } else {
        crate::routes::parse_value(content_type, body)?.0
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

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: Method, uri: &str) -> Attributes {
        Attributes::of(&method, &uri.parse().unwrap_or_default())
    }

    #[test]
    fn attributes_come_from_method_and_path() {
        let a = of(Method::GET, "/api/v1/namespaces/team-b/pods");
        assert_eq!((a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()), ("list", "pods", "team-b"));
        let a = of(Method::GET, "/api/v1/pods?watch=true&resourceVersion=1");
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("watch", ""));
        let a = of(Method::GET, "/api/v1/namespaces/a/pods/p/log");
        assert_eq!((a.verb.as_str(), a.name.as_str(), a.subresource.as_str()), ("get", "p", "log"));
        let a = of(Method::DELETE, "/apis/kubeflow.org/v1/namespaces/a/pytorchjobs");
        assert_eq!((a.verb.as_str(), a.api_group.as_str()), ("deletecollection", "kubeflow.org"));
        let a = of(Method::PATCH, "/apis/ringleader.io/v1alpha1/nodes/n1");
        assert_eq!((a.verb.as_str(), a.name.as_str(), a.namespace.as_str()), ("patch", "n1", ""));
        let a = of(Method::GET, "/apis/apps/v1");
        assert!(!a.resource_request && a.verb == "get" && a.path == "/apis/apps/v1");
        let a = of(Method::GET, "/metrics");
        assert!(!a.resource_request);
        assert!(of(Method::POST, "/apis/ringleader.io/v1alpha1/apply").is_bulk_apply());
    }

    #[test]
    fn refusals_are_worded_as_kubernetes() {
        let id = Identity::new("alice", Vec::<String>::new());
        let e = forbidden(&id, &of(Method::GET, "/api/v1/namespaces/team-b/pods"), "");
        assert_eq!(
            e.message,
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b""#
        );
        assert_eq!(e.code, StatusCode::FORBIDDEN);
        let e = forbidden(&id, &of(Method::GET, "/apis/ringleader.io/v1alpha1/nodes/n1"), "");
        assert_eq!(
            e.message,
            r#"nodes.ringleader.io "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "ringleader.io" at the cluster scope"#
        );
        let e = forbidden(&id, &of(Method::GET, "/metrics"), "");
        assert_eq!(e.message, r#"forbidden: User "alice" cannot get path "/metrics""#);
    }
}
