//! `pods/eviction`: a `policy/v1 Eviction` posted for a pod (`kubectl
//! drain`, or a tool asking politely) deletes it gracefully, with the
//! `deleteOptions` it carries, and answers kube-apiserver's `201 Success`
//! Status. No PodDisruptionBudget is served, so none forbids one. The
//! delete itself is the pipeline's, as for any deleted pod (its agent stops
//! it; its job controller replaces it where it may run).

use axum::http::StatusCode;
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};

/// `(namespace, pod)` of `/api/v1/namespaces/{ns}/pods/{name}/eviction`.
pub(crate) fn target(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", name, "eviction"] = segs.as_slice() else { return None };
    (!ns.is_empty() && !name.is_empty()).then(|| (ns.to_string(), name.to_string()))
}

/// The `DeleteOptions` of an Eviction of pod `name` (JSON; `{}` when it
/// carries none), or why the body is not one, in kube-apiserver's words.
pub(crate) fn delete_options(eviction: &Value, name: &str) -> Result<Value, ApiError> {
    let s = |p: &str| eviction.pointer(p).and_then(Value::as_str).unwrap_or_default();
    if s("/kind") != "Eviction" || !matches!(s("/apiVersion"), "policy/v1" | "policy/v1beta1") {
        return Err(ApiError::bad_request(format!(
            "the body must be a policy/v1 Eviction, not {} {}",
            s("/apiVersion"),
            s("/kind")
        )));
    }
    if s("/metadata/name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    match eviction.get("deleteOptions") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(o @ Value::Object(_)) => Ok(o.clone()),
        Some(other) => Err(ApiError::bad_field("deleteOptions", format!("{other} is not an object"))),
    }
}

/// What kube-apiserver answers an eviction it carried out.
pub(crate) fn success() -> (StatusCode, Value) {
    (
        StatusCode::CREATED,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eviction_names_its_pod_and_carries_delete_options() {
        assert_eq!(
            target("/api/v1/namespaces/default/pods/p-0/eviction"),
            Some(("default".to_string(), "p-0".to_string()))
        );
        assert!(target("/api/v1/namespaces/default/pods/p-0/log").is_none());
        let e = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p-0", "namespace": "default"},
                       "deleteOptions": {"gracePeriodSeconds": 5}});
        assert_eq!(delete_options(&e, "p-0").ok(), Some(json!({"gracePeriodSeconds": 5})));
        let other = delete_options(&e, "p-1").map_err(|e| (e.code, e.message));
        assert_eq!(other, Err((StatusCode::BAD_REQUEST, "name in URL does not match name in Eviction object".into())));
        let wrong = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-0"}});
        assert!(delete_options(&wrong, "p-0").is_err());
        assert_eq!(success().0, StatusCode::CREATED);
    }
}
