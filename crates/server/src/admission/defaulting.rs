//! Defaulting: an object made to agree with the path it was sent to, and a
//! replacing object keeping the status the manager wrote.

use axum::http::StatusCode;
use ringleader_registry::resources::{ResourceType, PODS};
use ringleader_registry::status::ApiError;
use serde_json::{json, Map, Value};

/// Makes an object agree with the path it was sent to: `apiVersion`/`kind`
/// default to the path's and must match; the path's namespace and name win
/// over absent ones and must equal present ones; a namespaced object without
/// a namespace gets `default`; a cluster-scoped one loses its namespace.
pub(crate) fn prepare(
    rt: &ResourceType,
    path_ns: Option<&str>,
    path_name: Option<&str>,
    mut object: Value,
) -> Result<Value, ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_field("body", "must be an object"));
    };
    for (field, expected) in [("apiVersion", rt.api_version), ("kind", rt.kind)] {
        match map.get(field) {
            None | Some(Value::Null) => {
                map.insert(field.to_string(), json!(expected));
            }
            Some(Value::String(s)) if s == expected => {}
            Some(other) => {
                return Err(ApiError::bad_field(
                    field,
                    format!("{other} does not match the resource of the path ({} {})", rt.api_version, rt.kind),
                ))
            }
        }
    }
    let metadata = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = metadata.as_object_mut() else {
        return Err(ApiError::bad_field("metadata", "must be an object"));
    };
    let text_at = |meta: &Map<String, Value>, f: &str| -> Result<Option<String>, ApiError> {
        match meta.get(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::bad_field(&format!("metadata.{f}"), format!("{other} is not a string"))),
        }
    };
    let body_ns = text_at(meta, "namespace")?;
    if rt.namespaced {
        let ns = match (path_ns, body_ns) {
            (Some(p), Some(b)) if p != b => {
                return Err(ApiError::bad_field(
                    "metadata.namespace",
                    format!("{b:?} does not match the namespace of the path ({p:?})"),
                ))
            }
            (Some(p), _) => p.to_string(),
            (None, Some(b)) => b,
            (None, None) => "default".to_string(),
        };
        meta.insert("namespace".into(), json!(ns));
    } else {
        meta.remove("namespace");
    }
    let body_name = text_at(meta, "name")?;
    match (path_name, body_name) {
        (Some(p), Some(b)) if p != b => {
            return Err(ApiError::bad_field(
                "metadata.name",
                format!("{b:?} does not match the name of the path ({p:?})"),
            ))
        }
        (Some(p), None) => {
            meta.insert("name".into(), json!(p));
        }
        (_, Some(_)) => {}
        (None, None) => {
            let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.name: required");
            e.causes.push(ringleader_registry::status::Cause {
                field: "metadata.name".into(),
                message: "required".into(),
                reason: "FieldValueRequired".into(),
            });
            return Err(e);
        }
    }
    if rt == PODS {
        // kube-apiserver defaults it, and `kubectl debug` reads it unchecked.
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("securityContext").or_insert_with(|| json!({}));
        }
    }
    if rt.group == "batch" && rt.kind == "Job" {
        batch_job_selector(&mut object);
    }
    Ok(object)
}

/// `status.phase: Pending` on a pod that has no phase yet.
pub(crate) fn pending_phase(pod: &mut Value) {
    let Some(map) = pod.as_object_mut() else { return };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        status.entry("phase").or_insert_with(|| json!("Pending"));
    }
}

/// The label every pod of a batch/v1 Job carries (the controller sets it).
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// A batch/v1 Job without `spec.selector` (and not `manualSelector`) selects
/// its own pods, as kube-apiserver defaults it, so `kubectl logs job/x`,
/// `describe` and `get pods -l` find them; the template carries the label.
/// kube-apiserver selects on the Job's uid, which the store gives only once
/// it writes; the controller labels every pod with the Job's name, which a
/// namespace holds one Job of at a time.
fn batch_job_selector(object: &mut Value) {
    let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string) else { return };
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("manualSelector") == Some(&json!(true)) || spec.get("selector").is_some_and(|s| !s.is_null()) {
        return;
    }
    spec.insert("selector".into(), json!({"matchLabels": {JOB_NAME_LABEL: name}}));
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        let meta = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert(JOB_NAME_LABEL.into(), json!(name));
                l.entry("job-name").or_insert_with(|| json!(name));
            }
        }
    }
}

/// Keeps the stored `status` when a replacing object carries none: users
/// re-apply specs, and must not wipe what the manager wrote.
pub(crate) fn carry_status(existing: Option<&Value>, object: &mut Value) {
    let has_status = object.get("status").is_some_and(|s| !s.is_null());
    if has_status {
        return;
    }
    if let (Some(status), Some(map)) = (existing.and_then(|e| e.get("status")), object.as_object_mut()) {
        map.insert("status".into(), status.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources::{self, PODS};
    use serde_json::json;

    #[test]
    fn prepare_defaults_and_checks_namespace_and_name() {
        let pods = *PODS;
        let o = prepare(&pods, Some("a"), None, json!({"metadata": {"name": "p"}})).unwrap_or_default();
        assert_eq!(o["metadata"]["namespace"], "a");
        assert_eq!(o["kind"], "Pod");
        let e = prepare(&pods, Some("a"), None, json!({"metadata": {"name": "p", "namespace": "b"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "metadata.namespace"));
        let o = prepare(&pods, None, None, json!({"metadata": {"name": "p"}})).unwrap_or_default();
        assert_eq!(o["metadata"]["namespace"], "default");
        let e = prepare(&pods, Some("a"), Some("q"), json!({"metadata": {"name": "p"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "metadata.name"));
        let e = prepare(&pods, Some("a"), None, json!({"kind": "Node", "metadata": {"name": "p"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "kind"));
        let o = prepare(resources::NODES, None, None, json!({"metadata": {"name": "n", "namespace": "x"}}))
            .unwrap_or_default();
        assert!(o["metadata"].get("namespace").is_none());
    }
}
