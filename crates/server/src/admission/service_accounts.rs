//! The ServiceAccount admission plugin's part for pods, as kube-apiserver's:
//! a created pod runs as `spec.serviceAccountName` (default `default`, with
//! the deprecated `spec.serviceAccount` mirroring it), and one naming an
//! account its namespace lacks is refused. A missing `default` account is
//! let through: the manager creates it in every namespace shortly after the
//! namespace appears ([`ringleader_manager`]'s serviceaccounts controller),
//! and refusing pods in that moment would fail the first `kubectl run` in a
//! new namespace for a race no user can see.

use crate::state::ServerState;
use axum::http::StatusCode;
use ringleader_api::kinds::service_account::{self, DEFAULT};
use ringleader_registry::resources::{ResourceType, PODS, SERVICE_ACCOUNTS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::Value;

/// Defaults a pod's account fields in place; the account it names, when
/// it must be looked up (`None`: nothing to check).
pub(crate) fn defaulted(rt: &ResourceType, object: &mut Value) -> Option<(String, String)> {
    if rt != PODS {
        return None;
    }
    let name = service_account::of_pod(object).to_string();
    let spec = object.get_mut("spec").and_then(Value::as_object_mut)?;
    spec.insert("serviceAccountName".into(), Value::String(name.clone()));
    spec.insert("serviceAccount".into(), Value::String(name.clone()));
    let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
    (name != DEFAULT).then_some((ns, name))
}

/// kube-apiserver's refusal of a pod whose account `ns/name` is absent.
pub(crate) fn missing(pod: &str, ns: &str, name: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "Forbidden",
        format!(
            "pods {pod:?} is forbidden: error looking up service account {ns}/{name}: serviceaccount {name:?} not found"
        ),
    )
    .with_object("pods", pod)
}

/// [`defaulted`], then the named account looked up in the store.
pub(crate) async fn admit_create(state: &ServerState, rt: &ResourceType, object: &mut Value) -> Result<(), ApiError> {
    let Some((ns, name)) = defaulted(rt, object) else { return Ok(()) };
    let key = ObjectKey::new(SERVICE_ACCOUNTS.api_version, SERVICE_ACCOUNTS.kind, &ns, &name);
    if state.blocking(move |s| s.get(&key)).await?.is_some() {
        return Ok(());
    }
    let pod = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    Err(missing(pod, &ns, &name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_run_as_default_unless_they_name_an_account() {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "ns1"}, "spec": {"containers": []}});
        assert_eq!(defaulted(PODS, &mut pod), None, "default is not looked up");
        assert_eq!(
            (pod["spec"]["serviceAccountName"].as_str(), pod["spec"]["serviceAccount"].as_str()),
            (Some("default"), Some("default"))
        );
        let mut old = json!({"metadata": {"name": "p", "namespace": "ns1"}, "spec": {"serviceAccount": "robot"}});
        assert_eq!(
            defaulted(PODS, &mut old),
            Some(("ns1".into(), "robot".into())),
            "the deprecated field still names it"
        );
        assert_eq!(old["spec"]["serviceAccountName"], "robot");
        let mut cm = json!({"metadata": {"name": "c"}});
        assert_eq!(defaulted(SERVICE_ACCOUNTS, &mut cm), None);
        assert!(cm.get("spec").is_none());
        let e = missing("p", "ns1", "robot");
        assert_eq!(e.code, StatusCode::FORBIDDEN);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: error looking up service account ns1/robot: serviceaccount \"robot\" not found"
        );
    }
}
