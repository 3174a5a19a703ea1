//! Pod subresources the container runtime cannot serve yet, refused with a
//! Status that says so (rather than the bare 404 of an unknown path):
//! `ephemeralcontainers` (`kubectl debug`) as kube-apiserver refuses an
//! invalid pod change, 422 naming `spec.ephemeralContainers`, so kubectl
//! prints the reason; `exec`, `attach` and `portforward` (`kubectl exec`,
//! `attach`, `cp`, `port-forward`) with 405.

use axum::http::{Method, StatusCode};
use ringleader_registry::status::{ApiError, Cause};

/// The refusal of a request for one of those subresources, if it is one.
pub fn refusal(_method: &Method, path: &str) -> Option<ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", name, sub] = segs.as_slice() else { return None };
    if ns.is_empty() || name.is_empty() {
        return None;
    }
    match *sub {
        "ephemeralcontainers" => {
            let field = "spec.ephemeralContainers";
            let detail = "ephemeral containers are not supported by this cluster's runtime yet";
            let mut e = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!("Pod {name:?} is invalid: {field}: Forbidden: {detail}"),
            )
            .with_object("Pod", name);
            let message = format!("Forbidden: {detail}");
            e.causes.push(Cause { field: field.into(), message, reason: "FieldValueForbidden".into() });
            Some(e)
        }
        "exec" | "attach" | "portforward" => Some(
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!(
                    "pods {name:?} {sub} is not supported: this cluster's container runtime does not support \
                     exec, attach or port-forward yet (logs: kubectl logs {name} -n {ns})"
                ),
            )
            .with_object("pods", name),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_unsupported_subresources_are_refused() {
        let e = refusal(&Method::PATCH, "/api/v1/namespaces/a/pods/p/ephemeralcontainers");
        let e = e.map(|e| (e.code.as_u16(), e.message)).unwrap_or_default();
        assert_eq!(e.0, 422);
        assert!(e.1.contains("not supported by this cluster's runtime"), "{}", e.1);
        let e = refusal(&Method::POST, "/api/v1/namespaces/a/pods/p/exec").map(|e| e.code.as_u16());
        assert_eq!(e, Some(405));
        assert!(refusal(&Method::GET, "/api/v1/namespaces/a/pods/p/log").is_none());
        assert!(refusal(&Method::GET, "/api/v1/namespaces/a/pods/p").is_none());
    }
}
