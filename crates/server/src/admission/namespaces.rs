//! Namespace lifecycle, as kube-apiserver's `NamespaceLifecycle` admission
//! plugin: nothing is created in a namespace that does not exist or is
//! being deleted, and the namespaces that exist from the start are never
//! deleted. A namespace's own phase and finalizer are the server's
//! ([`ringleader_api::kinds::namespace::defaulted`]).

use crate::state::ServerState;
use axum::http::StatusCode;
use ringleader_api::kinds::namespace;
use ringleader_registry::resources::{ResourceType, NAMESPACES};
use ringleader_registry::status::{ApiError, Cause, Resource};
use ringleader_store::ObjectKey;
use serde_json::Value;

/// The key of namespace `name`.
pub(crate) fn key(name: &str) -> ObjectKey {
    ObjectKey::new(NAMESPACES.api_version, NAMESPACES.kind, "", name)
}

/// Why `object` (of `rt`, being created) may not be, given what its
/// namespace is in the store (`None`: there is none); `None` when it may.
pub(crate) fn refusal(rt: &ResourceType, object: &Value, namespace: Option<&Value>) -> Option<ApiError> {
    if !rt.namespaced {
        return None;
    }
    let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    match namespace {
        None => Some(ApiError::not_found(&Resource { plural: "namespaces".into(), group: String::new() }, ns)),
        Some(n) if namespace::terminating(n) => {
            let mut e = ApiError::new(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    rt.qualified()
                ),
            )
            .with_object(&rt.qualified(), name);
            e.causes.push(Cause {
                field: "metadata.namespace".into(),
                message: format!("namespace {ns} is being terminated"),
                reason: "NamespaceTerminating".into(),
            });
            Some(e)
        }
        Some(_) => None,
    }
}

/// [`refusal`] with the namespace read from the store.
pub(crate) async fn admit_create(state: &ServerState, rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    if !rt.namespaced {
        return Ok(());
    }
    let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let k = key(ns);
    let found = state.blocking(move |s| s.get(&k)).await?;
    match refusal(rt, object, found.as_ref().map(|n| &n.object)) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// 403 for a delete of a namespace that exists from the start, worded as
/// kube-apiserver's.
pub(crate) fn undeletable(name: &str) -> Option<ApiError> {
    namespace::builtin(name).then(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("namespaces {name:?} is forbidden: this namespace may not be deleted"),
        )
        .with_object("namespaces", name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources::{CORE_NODES, PODS};
    use serde_json::json;

    #[test]
    fn content_needs_a_namespace_that_exists_and_is_not_terminating() {
        let pod = json!({"metadata": {"name": "p", "namespace": "vcjob"}});
        let missing = refusal(PODS, &pod, None).map(|e| (e.code, e.message));
        assert_eq!(missing, Some((StatusCode::NOT_FOUND, "namespaces \"vcjob\" not found".to_string())));
        let active = namespace::object("vcjob");
        assert!(refusal(PODS, &pod, Some(&active)).is_none());
        let mut going = active.clone();
        going["status"]["phase"] = json!("Terminating");
        let e = refusal(PODS, &pod, Some(&going));
        assert!(e.as_ref().is_some_and(|e| e.code == StatusCode::FORBIDDEN
            && e.message.contains("unable to create new content in namespace vcjob because it is being terminated")
            && e.causes[0].reason == "NamespaceTerminating"));
        assert!(refusal(NAMESPACES, &json!({"metadata": {"name": "x"}}), None).is_none(), "cluster-scoped");
        assert!(refusal(CORE_NODES, &json!({}), None).is_none());
    }

    #[test]
    fn the_builtin_namespaces_may_not_be_deleted() {
        for name in ["default", "kube-system", "kube-public", "platform-system"] {
            let e = undeletable(name).map(|e| (e.code, e.message));
            assert_eq!(
                e,
                Some((
                    StatusCode::FORBIDDEN,
                    format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
                ))
            );
        }
        assert!(undeletable("vcjob").is_none());
    }
}
