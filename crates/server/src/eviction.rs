//! `pods/eviction`: a `policy/v1 Eviction` posted for a pod (`kubectl
//! drain`, or a tool asking politely) deletes it gracefully, with the
//! `deleteOptions` it carries, and answers kube-apiserver's `201 Success`
//! Status — unless the PodDisruptionBudget that selects the pod allows no
//! disruption now (429, which `kubectl drain` retries). The delete itself
//! is the pipeline's, as for any deleted pod (its agent stops it; its job
//! controller replaces it where it may run).

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

/// Why evicting `pod` would break a budget, in kube-apiserver's words, if
/// it would: `budgets` and `pods` are those of the pod's namespace, as they
/// are now. A pod that is not healthy does not count against its budget;
/// a pod more than one budget selects cannot be evicted (as on Kubernetes).
pub(crate) fn budget_refusal(pod: &Value, budgets: &[Value], pods: &[Value]) -> Option<ApiError> {
    use ringleader_api::kinds::disruption::{budget, healthy, selects};
    let mine: Vec<&Value> = budgets.iter().filter(|b| selects(b, pod)).collect();
    let name = |v: &Value| v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    match mine.as_slice() {
        [] => None,
        [b] => {
            let selected: Vec<&Value> = pods.iter().filter(|p| selects(b, p)).collect();
            let budget = budget(b, &selected);
            if !healthy(pod) || budget.disruptions_allowed > 0 {
                return None;
            }
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            )
            .with_object("pods.policy", &name(pod));
            e.causes.push(ringleader_registry::status::Cause {
                field: String::new(),
                message: format!(
                    "The disruption budget {} needs {} healthy pods and has {} currently",
                    name(b),
                    budget.desired_healthy,
                    budget.current_healthy
                ),
                reason: "DisruptionBudget".into(),
            });
            Some(e)
        }
        _ => Some(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )),
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

    #[test]
    fn a_budget_that_allows_no_disruption_refuses_with_429() {
        let pod = |n: &str| {
            json!({"metadata": {"name": n, "namespace": "default", "labels": {"app": "web"}},
                                   "status": {"phase": "Running"}})
        };
        let pods = [pod("w-0"), pod("w-1")];
        let budget = |min: u64| {
            json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": "web"}}}})
        };
        assert!(budget_refusal(&pods[0], &[budget(1)], &pods).is_none(), "one of two may go");
        let e = budget_refusal(&pods[0], &[budget(2)], &pods);
        let e = e.map(|e| (e.code, e.message, e.causes[0].message.clone()));
        assert_eq!(
            e,
            Some((
                StatusCode::TOO_MANY_REQUESTS,
                "Cannot evict pod as it would violate the pod's disruption budget.".into(),
                "The disruption budget web needs 2 healthy pods and has 2 currently".into()
            ))
        );
        let mut pending = pod("w-2");
        pending["status"]["phase"] = json!("Pending");
        assert!(budget_refusal(&pending, &[budget(2)], &pods).is_none(), "an unhealthy pod may go");
        let two = [budget(1), budget(1)];
        assert!(budget_refusal(&pods[0], &two, &pods).is_some_and(|e| e.code == StatusCode::INTERNAL_SERVER_ERROR));
    }
}
