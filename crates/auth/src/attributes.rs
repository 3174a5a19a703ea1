//! What a request asks to do, in RBAC's terms ([`Attributes`]), derived
//! from its method and URL alone as kube-apiserver derives them, and the 403
//! of a refusal worded as Kubernetes words it ([`forbidden`]).

use crate::identity::Identity;
use axum::http::{Method, StatusCode, Uri};
use ringleader_registry::resources;
use ringleader_registry::status::ApiError;

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

    /// The history endpoint (`ringleader_registry::resources::HISTORY_PATH`),
    /// which authorizes each series itself.
    pub fn is_history(&self) -> bool {
        self.resource_request
            && self.api_group == "ringleader.io"
            && self.resource == resources::HISTORY_RESOURCE
            && self.name.is_empty()
            && self.namespace.is_empty()
            && self.verb == "list"
    }

    /// The bulk apply handler authorizes each document itself.
    pub fn is_bulk_apply(&self) -> bool {
        self.resource_request && self.api_group == "ringleader.io" && self.resource == "apply" && self.name.is_empty()
    }

    /// `pods`, or `pytorchjobs.kubeflow.org` outside the core group.
    pub fn group_resource(&self) -> String {
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
