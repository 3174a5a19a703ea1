//! Core v1 Namespaces as kube-apiserver keeps them: the `kubernetes`
//! finalizer every namespace carries until its content is gone, the
//! `kubernetes.io/metadata.name` label, `status.phase` Active or
//! Terminating, and the namespaces that exist from the start and may not
//! be deleted. The API server admits them with these rules and the manager
//! empties a terminating one (`ringleader_manager::namespaces`).

use serde_json::{json, Map, Value};

/// `apiVersion` of a Namespace.
pub const API_VERSION: &str = "v1";
/// `kind` of a Namespace.
pub const KIND: &str = "Namespace";
/// The finalizer kube-apiserver puts in `spec.finalizers`: the namespace
/// goes only once its content is gone.
pub const FINALIZER: &str = "kubernetes";
/// The label carrying the namespace's name, set on every namespace (as
/// Kubernetes 1.21+ does) so selectors can name namespaces.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Namespaces that exist from the start and may not be deleted:
/// Kubernetes' own three and the platform's.
pub const BUILTIN: [&str; 4] = ["default", "kube-system", "kube-public", "platform-system"];

/// Whether `name` is one of the [`BUILTIN`] namespaces.
pub fn builtin(name: &str) -> bool {
    BUILTIN.contains(&name)
}

/// A new namespace `name`, as the API server stores one created bare.
pub fn object(name: &str) -> Value {
    let mut o = json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}});
    defaulted(&mut o, None);
    o
}

/// Fills in what the API server sets on every write of a namespace:
/// the finalizer (when `spec.finalizers` is absent), the name label, and
/// `status` — the stored one (`before`), or Active for a new namespace:
/// nobody writes a namespace's phase through the object.
pub fn defaulted(object: &mut Value, before: Option<&Value>) {
    fill_spec(object);
    let status = before.and_then(|b| b.get("status")).cloned().unwrap_or_else(|| json!({"phase": "Active"}));
    if let Some(map) = object.as_object_mut() {
        map.insert("status".into(), status);
    }
}

/// The finalizer (when `spec.finalizers` is absent) and the name label.
pub fn fill_spec(object: &mut Value) {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let Some(map) = object.as_object_mut() else { return };
    let spec = map.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if let Some(spec) = spec.as_object_mut() {
        spec.entry("finalizers").or_insert_with(|| json!([FINALIZER]));
    }
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), json!(name));
        }
    }
}

/// Whether the namespace is being deleted (marked, or its phase says so).
pub fn terminating(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        || object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// The merge patch that starts a namespace's deletion at `now` (RFC 3339).
pub fn terminate_patch(now: &str) -> Value {
    json!({"metadata": {"deletionTimestamp": now}, "status": {"phase": "Terminating"}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_namespace_is_active_with_its_finalizer_and_label() {
        let o = object("vcjob");
        assert_eq!(o["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(o["metadata"]["labels"][NAME_LABEL], "vcjob");
        assert_eq!(o["status"]["phase"], "Active");
        assert!(!terminating(&o));
    }

    #[test]
    fn the_phase_is_the_servers_not_the_writers() {
        let before = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Terminating"}});
        let mut o = json!({"metadata": {"name": "a", "labels": {NAME_LABEL: "b"}}, "status": {"phase": "Active"}});
        defaulted(&mut o, Some(&before));
        assert_eq!(o["status"]["phase"], "Terminating");
        assert_eq!(o["metadata"]["labels"][NAME_LABEL], "a");
        let mut fresh = json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}});
        defaulted(&mut fresh, None);
        assert_eq!(fresh["status"]["phase"], "Active");
        assert!(terminating(&before));
        assert!(builtin("kube-system") && !builtin("vcjob"));
    }
}
