//! Reading platform objects as JSON (name, namespace, key, labels) and
//! making what every reconciler writes (owner references, status patches).

use crate::cache::{str_at, Cache};
use ringleader_store::{ObjectKey, Op};
use serde_json::{json, Value};

/// The objects of one kind, as JSON.
pub(crate) fn objects(cache: &Cache, api: &str, kind: &str) -> Vec<Value> {
    cache.of_kind(api, kind).map(|o| o.object.clone()).collect()
}

/// `metadata.name`.
pub(crate) fn name(v: &Value) -> &str {
    str_at(v, &["metadata", "name"]).unwrap_or_default()
}

/// `metadata.namespace` (`""` for cluster-scoped objects).
pub(crate) fn namespace(v: &Value) -> &str {
    str_at(v, &["metadata", "namespace"]).unwrap_or_default()
}

/// The store key of an object.
pub(crate) fn key_of(v: &Value) -> ObjectKey {
    ObjectKey::new(
        v.get("apiVersion").and_then(Value::as_str).unwrap_or_default(),
        v.get("kind").and_then(Value::as_str).unwrap_or_default(),
        namespace(v),
        name(v),
    )
}

/// A controlling owner reference to `owner`.
pub(crate) fn owner_ref(owner: &Value) -> Value {
    json!([{
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name(owner),
        "uid": str_at(owner, &["metadata", "uid"]),
        "controller": true,
    }])
}

/// A label of an object.
pub(crate) fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get("metadata")?.get("labels")?.get(key)?.as_str()
}

/// A merge patch of `status` with the fields of `wanted` that differ from
/// the object's current status, or nothing when none does.
pub(crate) fn status_op(object: &Value, wanted: Value) -> Option<Op> {
    let current = object.get("status");
    let Value::Object(fields) = wanted else { return None };
    let changed: serde_json::Map<String, Value> = fields
        .into_iter()
        .filter(|(k, v)| {
            current.and_then(|c| c.get(k)) != Some(v) && !(v.is_null() && current.and_then(|c| c.get(k)).is_none())
        })
        .collect();
    if changed.is_empty() {
        return None;
    }
    Some(Op::Patch { key: key_of(object), patch: json!({ "status": changed }), expected: None })
}

/// An object without its null fields (entries of status lists, which a
/// merge patch replaces whole: absent reads better than null).
pub(crate) fn compact(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        other => other,
    }
}

/// A DNS-1123 label made of `prefix` and `suffix`, the prefix cut so the
/// whole fits 63 characters (names the controller derives from user names).
pub(crate) fn dns_label(prefix: &str, suffix: &str) -> String {
    let room = 63usize.saturating_sub(suffix.len());
    let mut p: String = prefix.chars().take(room).collect();
    while p.ends_with('-') {
        p.pop();
    }
    format!("{p}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::api::API;

    #[test]
    fn a_status_patch_carries_only_what_changed() {
        let o = json!({"apiVersion": API, "kind": "Workspace", "metadata": {"name": "w"},
                       "status": {"state": "ready", "message": ""}});
        assert!(status_op(&o, json!({"state": "ready", "message": ""})).is_none());
        match status_op(&o, json!({"state": "failed", "message": ""})) {
            Some(Op::Patch { patch, key, .. }) => {
                assert_eq!(patch, json!({"status": {"state": "failed"}}));
                assert_eq!(key, ObjectKey::new(API, "Workspace", "", "w"));
            }
            other => panic!("expected a patch, got {other:?}"),
        }
    }

    #[test]
    fn derived_names_stay_dns_labels() {
        assert_eq!(dns_label("sr", "-0"), "sr-0");
        let long = "a".repeat(70);
        let n = dns_label(&long, "-node-1");
        assert_eq!(n.len(), 63);
        assert!(n.ends_with("-node-1"));
        assert_eq!(dns_label("ab-----", "x"), "abx");
    }
}
