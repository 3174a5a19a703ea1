//! Admission checks every written object passes, whatever its kind, before
//! the store sees it (creates, replaces, patches, applies and their dry runs):
//!
//! - names and namespaces as Kubernetes names them (DNS-1123 subdomain, or
//!   label where Kubernetes uses one), label keys and values, annotation
//!   keys and their total size;
//! - a `ringleader.io` Node's hardware as the scheduler reads it (a known
//!   profile or parsable tool output, device IDs the profile has), so one bad
//!   Node cannot stop the manager's snapshot;
//! - counts in range: device resources whole and at most
//!   [`MAX_DEVICES_PER_CONTAINER`], replicas and the like not negative, in
//!   every pod spec of every kind (a Pod's own, and every template);
//! - a Pod's `ringleader.io/devices` among its node's devices;
//! - the stored size at most [`MAX_OBJECT_BYTES`], as etcd's request limit.
//!
//! Rules for job kinds and typed kinds stay in `ringleader-api` (what
//! `ringleader validate` says); this module adds what holds for any object.

use crate::ServerState;
use axum::http::StatusCode;
use ringleader_api::devices::classify;
use ringleader_api::kinds::cluster::Node as NodeObject;
use ringleader_api::path;
use ringleader_api::validate::{
    is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name, is_quantity, LABEL_RULE,
    LABEL_VALUE_RULE, QUALIFIED_NAME_RULE, SUBDOMAIN_RULE,
};
use ringleader_api::FieldError;
use ringleader_observability::metrics::DEVICES_ANNOTATION;
use ringleader_registry::resources::{ResourceType, NAMESPACES, NODES, PODS, POD_DISRUPTION_BUDGETS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use ringleader_topology::{builtin_names, Profile};
use serde_json::Value;

/// Largest object stored, in bytes of its JSON: etcd's default request limit
/// (1.5 MiB), which is what kube-apiserver objects are bounded by.
pub const MAX_OBJECT_BYTES: usize = 1_572_864;
/// Largest total of annotation keys and values, as Kubernetes (256 KiB).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 << 10;
/// Most devices one container may ask for. The largest machines have 8–16
/// accelerators and a SuperPoD a few hundred; 1,024 leaves room for any real
/// one while refusing typos like `1e9`, which would overflow counts.
pub const MAX_DEVICES_PER_CONTAINER: u64 = 1024;
/// Most replicas of one count field (`ringleader-api` bounds a job's total
/// pods the same way).
pub const MAX_REPLICAS: u64 = 100_000;
/// How deep the walk for pod specs goes (a pod spec in a job sits at depth 5).
const MAX_WALK_DEPTH: usize = 16;
/// How much of a long value an error quotes.
const SHOWN_CHARS: usize = 64;

/// Count fields (anywhere under `spec`) that must be whole and not negative.
const COUNT_FIELDS: &[&str] = &[
    "replicas",
    "minAvailable",
    "backoffLimit",
    "backoffLimitPerIndex",
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
    "minMember",
    "maxRetry",
    "minReplicas",
    "maxReplicas",
    "minSuccess",
    "slotsPerWorker",
    "progressDeadlineSeconds",
    "revisionHistoryLimit",
    "minReadySeconds",
];

/// 413 when the object's JSON is larger than [`MAX_OBJECT_BYTES`].
pub(crate) fn check_size(rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let size = json_len(object);
    if size <= MAX_OBJECT_BYTES {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    Err(too_large(rt, name, size))
}

/// 413 RequestEntityTooLarge for an object of `size` bytes (at least).
pub(crate) fn too_large(rt: &ResourceType, name: &str, size: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        format!(
            "{} {}: the object is {size} bytes of JSON; the limit is {MAX_OBJECT_BYTES} (1.5 MiB, as etcd)",
            qualified_kind(rt),
            shown(name)
        ),
    )
    .with_object(&qualified_kind(rt), name)
}

/// `Kind.group`, as 422 errors name a kind.
pub(crate) fn qualified_kind(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.to_string()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

/// Bytes of the compact JSON of `value`, counted without building it.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a failure would only undercount.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A value as errors quote it: JSON-escaped (so NUL and newlines show), and
/// cut to its first characters when long.
fn shown(s: &str) -> String {
    let chars = s.chars().count();
    if chars <= SHOWN_CHARS {
        return Value::String(s.to_string()).to_string();
    }
    let head: String = s.chars().take(SHOWN_CHARS).collect();
    format!("{}... ({chars} characters)", Value::String(head))
}

/// Every rule of this module an object breaks (the store-dependent Pod
/// device check is [`pod_devices`]).
pub(crate) fn errors(rt: &ResourceType, object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    metadata(rt, object, &mut errs);
    if let Some(spec) = object.get("spec") {
        if rt == PODS {
            pod_spec(spec, "spec", &mut errs);
        } else {
            pod_specs_within(spec, "spec", 0, &mut errs);
        }
        counts(spec, "spec", 0, &mut errs);
    }
    if rt == NODES {
        node(object, &mut errs);
    }
    if rt == POD_DISRUPTION_BUDGETS {
        disruption_budget(object, &mut errs);
    }
    errs
}

/// A PodDisruptionBudget has Kubernetes' shape and one of `minAvailable`
/// and `maxUnavailable`, each a count or a percentage.
fn disruption_budget(object: &Value, errs: &mut Vec<FieldError>) {
    if let Err(e) = serde_json::from_value::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(object.clone()) {
        errs.push(FieldError::new("spec", "", format!("not a policy/v1 PodDisruptionBudget: {e}")));
        return;
    }
    let given = |f: &str| object.pointer(&format!("/spec/{f}")).filter(|v| !v.is_null());
    if let (Some(_), Some(max)) = (given("minAvailable"), given("maxUnavailable")) {
        errs.push(FieldError::new("spec", max, "minAvailable and maxUnavailable cannot be both set"));
    }
    for f in ["minAvailable", "maxUnavailable"] {
        let Some(v) = given(f) else { continue };
        let ok = match v {
            Value::Number(n) => n.as_u64().is_some(),
            Value::String(s) => s.strip_suffix('%').is_some_and(|p| p.parse::<u64>().is_ok_and(|p| p <= 100)),
            _ => false,
        };
        if !ok {
            errs.push(FieldError::new(
                format!("spec.{f}"),
                v,
                "must be a non-negative integer or a percentage (0%-100%)",
            ));
        }
    }
}

fn metadata(rt: &ResourceType, object: &Value, errs: &mut Vec<FieldError>) {
    let meta = object.get("metadata");
    if let Some(name) = meta.and_then(|m| m.get("name")).and_then(Value::as_str) {
        // Job kinds name their pods `<job>-<role>-<i>`, so theirs are labels;
        // a namespace name is a label as in Kubernetes.
        let (ok, rule) = if rt.job || rt == NAMESPACES {
            (is_dns1123_label(name), LABEL_RULE)
        } else {
            (is_dns1123_subdomain(name), SUBDOMAIN_RULE)
        };
        if !ok {
            errs.push(FieldError::new("metadata.name", shown(name), rule));
        }
    }
    if let Some(ns) = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str) {
        if rt.namespaced && !is_dns1123_label(ns) {
            errs.push(FieldError::new("metadata.namespace", shown(ns), LABEL_RULE));
        }
    }
    if let Some(labels) = meta.and_then(|m| m.get("labels")) {
        string_map(labels, "metadata.labels", errs, |key, value, field, errs| {
            if !is_qualified_name(key) {
                errs.push(FieldError::new(field.to_string(), shown(key), format!("label key {QUALIFIED_NAME_RULE}")));
            } else if !is_label_value(value) {
                errs.push(FieldError::new(field.to_string(), shown(value), LABEL_VALUE_RULE));
            }
        });
    }
    if let Some(annotations) = meta.and_then(|m| m.get("annotations")) {
        let mut total = 0usize;
        string_map(annotations, "metadata.annotations", errs, |key, value, field, errs| {
            total = total.saturating_add(key.len() + value.len());
            if !is_qualified_name(key) {
                errs.push(FieldError::new(
                    field.to_string(),
                    shown(key),
                    format!("annotation key {QUALIFIED_NAME_RULE}"),
                ));
            }
        });
        if total > MAX_ANNOTATIONS_BYTES {
            errs.push(FieldError::new(
                "metadata.annotations",
                format!("{total} bytes"),
                format!("annotations may total at most {MAX_ANNOTATIONS_BYTES} bytes (256 KiB) of keys and values"),
            ));
        }
    }
}

/// Calls `each(key, value, field)` for each entry of a string map, and
/// reports entries that are not strings and a map that is not one.
fn string_map(
    map: &Value,
    field: &str,
    errs: &mut Vec<FieldError>,
    mut each: impl FnMut(&str, &str, &str, &mut Vec<FieldError>),
) {
    match map {
        Value::Null => {}
        Value::Object(entries) => {
            for (key, value) in entries {
                let at = path::key(field, key);
                match value {
                    Value::String(v) => each(key, v, &at, errs),
                    Value::Null => each(key, "", &at, errs),
                    other => errs.push(FieldError::new(at, other, "must be a string")),
                }
            }
        }
        other => errs.push(FieldError::new(field, other, "must be a map of strings")),
    }
}

/// Finds pod specs (a map with a `containers` list) under `value`.
fn pod_specs_within(value: &Value, field: &str, depth: usize, errs: &mut Vec<FieldError>) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if map.get("containers").is_some_and(Value::is_array) {
                pod_spec(value, field, errs);
                return;
            }
            for (k, v) in map {
                pod_specs_within(v, &path::key(field, k), depth + 1, errs);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pod_specs_within(v, &path::index(field, i), depth + 1, errs);
            }
        }
        _ => {}
    }
}

/// The rules of one pod spec at `field` that hold for any kind.
fn pod_spec(spec: &Value, field: &str, errs: &mut Vec<FieldError>) {
    let Some(map) = spec.as_object() else { return };
    if let Some(v) = map.get("activeDeadlineSeconds").filter(|v| !v.is_null()) {
        if v.as_u64().is_none_or(|n| n < 1) {
            errs.push(FieldError::new(
                path::key(field, "activeDeadlineSeconds"),
                v,
                "must be a whole number of seconds, at least 1",
            ));
        }
    }
    if let Some(v) = map.get("terminationGracePeriodSeconds").filter(|v| !v.is_null()) {
        if v.as_u64().is_none() {
            errs.push(FieldError::new(
                path::key(field, "terminationGracePeriodSeconds"),
                v,
                "must be a whole number of seconds, 0 or more",
            ));
        }
    }
    if let Some(rp) = map.get("restartPolicy").and_then(Value::as_str) {
        if !matches!(rp, "Always" | "OnFailure" | "Never") {
            errs.push(FieldError::new(
                path::key(field, "restartPolicy"),
                shown(rp),
                "allowed: Always, OnFailure, Never",
            ));
        }
    }
    if let Some(node) = map.get("nodeName").and_then(Value::as_str) {
        if !node.is_empty() && !is_dns1123_subdomain(node) {
            errs.push(FieldError::new(path::key(field, "nodeName"), shown(node), SUBDOMAIN_RULE));
        }
    }
    for list in ["containers", "initContainers"] {
        let Some(containers) = map.get(list).and_then(Value::as_array) else { continue };
        for (i, c) in containers.iter().enumerate() {
            let cf = path::index(&path::key(field, list), i);
            let Some(resources) = c.get("resources") else { continue };
            for section in ["limits", "requests"] {
                let Some(Value::Object(entries)) = resources.get(section) else { continue };
                for (name, q) in entries {
                    quantity(name, q, &path::key(&path::key(&path::key(&cf, "resources"), section), name), errs);
                }
            }
        }
    }
}

/// One resource quantity: devices whole and at most
/// [`MAX_DEVICES_PER_CONTAINER`], other extended resources whole, any
/// quantity not negative.
fn quantity(name: &str, q: &Value, field: &str, errs: &mut Vec<FieldError>) {
    let whole: Option<u64> = match q {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    let text = match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if classify(name).is_some() {
        match whole {
            Some(n) if n <= MAX_DEVICES_PER_CONTAINER => {}
            _ => errs.push(FieldError::new(
                field,
                shown(&text),
                format!("device counts must be whole numbers from 0 to {MAX_DEVICES_PER_CONTAINER}"),
            )),
        }
    } else if ringleader_api::devices::is_extended(name) {
        if whole.is_none() {
            errs.push(FieldError::new(field, shown(&text), "extended resources must be whole non-negative numbers"));
        }
    } else if !is_quantity(&text) {
        errs.push(FieldError::new(
            field,
            shown(&text),
            "must be a non-negative Kubernetes quantity (e.g. 8, 500m, 64Gi)",
        ));
    }
}

/// Count fields under `spec`: whole, not negative, and replicas bounded.
fn counts(value: &Value, field: &str, depth: usize, errs: &mut Vec<FieldError>) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            // A pod spec's deadline is [`pod_spec`]'s (it must be at least 1).
            let pod = map.get("containers").is_some_and(Value::is_array);
            for (k, v) in map {
                let at = path::key(field, k);
                let count = COUNT_FIELDS.contains(&k.as_str()) && !(pod && k == "activeDeadlineSeconds");
                if let (true, Value::Number(n)) = (count, v) {
                    match n.as_u64() {
                        None => errs.push(FieldError::new(at, n, "must be a whole number, 0 or more")),
                        Some(c) if k.ends_with("eplicas") && c > MAX_REPLICAS => {
                            errs.push(FieldError::new(at, n, format!("must be at most {MAX_REPLICAS}")))
                        }
                        Some(c) if c > i32::MAX as u64 && !k.ends_with("Seconds") => {
                            errs.push(FieldError::new(at, n, format!("must be at most {}", i32::MAX)))
                        }
                        Some(_) => {}
                    }
                } else {
                    counts(v, &at, depth + 1, errs);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                counts(v, &path::index(field, i), depth + 1, errs);
            }
        }
        _ => {}
    }
}

/// The built-in profile names, for messages.
fn profiles() -> String {
    builtin_names().join(", ")
}

/// A `ringleader.io` Node read as the scheduler reads it.
fn node(object: &Value, errs: &mut Vec<FieldError>) {
    let spec = object.get("spec").filter(|s| !s.is_null());
    let sources = ["profile", "topologyText", "npuSmiText"]
        .iter()
        .filter(|k| spec.and_then(|s| s.get(**k)).is_some_and(|v| !v.is_null()))
        .count();
    if sources != 1 {
        let what = if spec.is_none() { "a Node needs a spec" } else { "a Node needs" };
        errs.push(FieldError::missing(
            "spec.profile",
            format!(
                "{what} with exactly one of spec.profile (built-in profiles: {}), spec.topologyText (nvidia-smi topo -m output) or spec.npuSmiText (npu-smi info output)",
                profiles()
            ),
        ));
        return;
    }
    // A value of the wrong type is reported by the typed check.
    let Ok(typed) = serde_json::from_value::<NodeObject>(object.clone()) else { return };
    let profile = match ringleader_scheduler::cluster::Node::from_object(&typed) {
        Ok(n) => n.profile,
        Err(found) => {
            // The profile name is quoted and escaped as every other value here.
            let quoted = |mut e: FieldError| {
                if e.field == "spec.profile" && !e.value.is_empty() {
                    e.value = shown(&e.value);
                }
                e
            };
            errs.extend(found.into_iter().map(quoted));
            return;
        }
    };
    let faults = [
        ("spec.injectedFaults.unhealthy", &typed.spec.injected_faults.unhealthy),
        ("spec.injectedFaults.network", &typed.spec.injected_faults.network),
    ];
    for (field, ids) in faults {
        for (i, id) in ids.iter().enumerate() {
            if !profile.devices.iter().any(|d| d.id == *id) {
                errs.push(FieldError::new(path::index(field, i), id, no_such_device(&profile)));
            }
        }
    }
    let network = &typed.spec.network;
    for (field, v) in [
        ("spec.network.tor", &network.tor),
        ("spec.network.spine", &network.spine),
        ("spec.network.superPod", &network.super_pod),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty() && !is_label_value(v)) {
            errs.push(FieldError::new(field, shown(v), LABEL_VALUE_RULE));
        }
    }
    if let Some(a) = typed.spec.address.as_deref().filter(|a| !a.is_empty()) {
        if a.parse::<std::net::IpAddr>().is_err() && !is_dns1123_subdomain(&a.to_ascii_lowercase()) {
            errs.push(FieldError::new("spec.address", shown(a), "must be an IP address or a DNS-1123 host name"));
        }
    }
    if let Some(t) = typed.status.last_heartbeat.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        errs.push(FieldError::new("status.lastHeartbeat", t, "must be seconds since the Unix epoch, 0 or more"));
    }
}

fn no_such_device(profile: &Profile) -> String {
    let ids: Vec<String> = profile.devices.iter().map(|d| d.id.to_string()).collect();
    format!("no such device on profile {}; device IDs: {}", profile.name, ids.join(", "))
}

/// The device IDs of the profile of a stored Node, or why there are none.
fn node_profile(object: &Value) -> Result<std::sync::Arc<Profile>, String> {
    let typed: NodeObject = serde_json::from_value(object.clone()).map_err(|e| format!("it cannot be read: {e}"))?;
    ringleader_scheduler::cluster::Node::from_object(&typed).map(|n| n.profile).map_err(|errs| {
        let lines: Vec<String> = errs.iter().map(ToString::to_string).collect();
        format!("its hardware is invalid: {}", lines.join("; "))
    })
}

/// A Pod's `ringleader.io/devices` must name devices its node has, each once,
/// and needs the node. `before` is the stored pod of an update: a patch that
/// changes neither the annotation nor the node is not checked again (its
/// node may have gone since, which is the node lifecycle's business).
pub(crate) async fn pod_devices(
    state: &ServerState,
    rt: &ResourceType,
    object: &Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    if rt != PODS {
        return Ok(());
    }
    let pointer = format!("/metadata/annotations/{}", DEVICES_ANNOTATION.replace('/', "~1"));
    let Some(raw) = object.pointer(&pointer).and_then(Value::as_str) else { return Ok(()) };
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if let Some(before) = before {
        let same = |p: &str| before.pointer(p) == object.pointer(p);
        if same(&pointer) && same("/spec/nodeName") {
            return Ok(());
        }
    }
    let field = path::key("metadata.annotations", DEVICES_ANNOTATION);
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let refuse =
        |message: String| Err(ApiError::invalid("Pod", name, &[FieldError::new(field.clone(), shown(raw), message)]));
    let mut ids: Vec<u32> = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u32>() {
            Ok(id) if !ids.contains(&id) => ids.push(id),
            Ok(id) => return refuse(format!("device {id} is named twice")),
            Err(_) => {
                return refuse(format!("{part:?} is not a device ID; write comma-separated device IDs, e.g. 0,1"))
            }
        }
    }
    if node.is_empty() {
        return refuse("devices are bound together with spec.nodeName, which is not set".to_string());
    }
    let key = ObjectKey::new(NODES.api_version, NODES.kind, "", node);
    let Some(stored) = state.blocking(move |s| s.get(&key)).await? else {
        return refuse(format!("spec.nodeName {} names no Node, so its devices cannot be checked", shown(node)));
    };
    let profile = match node_profile(&stored.object) {
        Ok(p) => p,
        Err(why) => return refuse(format!("Node {} has no usable device list: {why}", shown(node))),
    };
    match ids.iter().find(|id| !profile.devices.iter().any(|d| d.id == **id)) {
        Some(id) => refuse(format!("device {id} is not on Node {}: {}", shown(node), no_such_device(&profile))),
        None => Ok(()),
    }
}

/// Errors of `after` that `before` (the stored object a patch started from)
/// did not have already: a patch is blamed only for what it changes, so a
/// label added to an object stored before a rule existed still goes in.
pub(crate) fn new_errors(before: &[FieldError], after: Vec<FieldError>) -> Vec<FieldError> {
    after.into_iter().filter(|e| !before.contains(e)).collect()
}

/// The errors of the typed rules (`ringleader validate`) and of this module
/// together, an error of the typed rules dropped where this module already
/// reported its field (both check names).
pub(crate) fn merge(mut ours: Vec<FieldError>, typed: Vec<FieldError>) -> Vec<FieldError> {
    let fields: Vec<String> = ours.iter().map(|e| e.field.clone()).collect();
    ours.extend(typed.into_iter().filter(|e| !fields.contains(&e.field)));
    ours
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources::find;
    use serde_json::json;

    fn fields(rt: &ResourceType, mut v: Value) -> Vec<String> {
        v["apiVersion"] = json!(rt.api_version);
        v["kind"] = json!(rt.kind);
        errors(rt, &v).into_iter().map(|e| format!("{}={}: {}", e.field, e.value, e.message)).collect()
    }

    #[test]
    fn names_are_checked_per_kind_and_escaped() {
        let cm = find("configmap").copied().unwrap_or(*PODS);
        for bad in ["a/b", "../etc", "a\u{0}b", "a\nb", &"a".repeat(300), "UPPER"] {
            let e = fields(&cm, json!({"metadata": {"name": bad, "namespace": "default"}}));
            assert_eq!(e.len(), 1, "{bad:?}: {e:?}");
            assert!(e[0].starts_with("metadata.name=") && e[0].contains("DNS-1123 subdomain"), "{e:?}");
        }
        let e = fields(&cm, json!({"metadata": {"name": "a\u{0}b"}}));
        assert!(e[0].contains(r#""a\u0000b""#), "{e:?}");
        let e = fields(&cm, json!({"metadata": {"name": "a".repeat(300)}}));
        assert!(e[0].contains("(300 characters)"), "{e:?}");
        assert!(fields(&cm, json!({"metadata": {"name": "rings-config.v1", "namespace": "team-a"}})).is_empty());
        let e = fields(&cm, json!({"metadata": {"name": "a", "namespace": "a.b"}}));
        assert!(e[0].starts_with("metadata.namespace=") && e[0].contains("DNS-1123 label"), "{e:?}");
    }

    #[test]
    fn labels_and_annotations() {
        let e = fields(
            PODS,
            json!({"metadata": {"name": "p", "labels": {"a/b/c": "x", "ok": "bad value", "n": 1},
                "annotations": {"-x": "y", "fine.io/k": "v"}}}),
        );
        assert_eq!(e.len(), 4, "{e:?}");
        let big = "x".repeat(MAX_ANNOTATIONS_BYTES);
        let e = fields(PODS, json!({"metadata": {"name": "p", "annotations": {"a": big}}}));
        assert!(e[0].contains("256 KiB"), "{e:?}");
    }

    #[test]
    fn device_counts_and_other_counts() {
        let pod = |limits: Value| {
            json!({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": -1,
                "containers": [{"name": "c", "resources": {"limits": limits}}]}})
        };
        let e = fields(PODS, pod(json!({"nvidia.com/gpu": 1e9, "cpu": "-1", "memory": "64Gi"})));
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e.iter().any(|e| e.contains("activeDeadlineSeconds=-1")), "{e:?}");
        assert!(
            e.iter().any(|e| e.contains(r#"["nvidia.com/gpu"]="1000000000.0""#) && e.contains("0 to 1024")),
            "{e:?}"
        );
        for bad in [json!(-1), json!(1.5), json!("2.5"), json!(1025), json!("1e9")] {
            let e = fields(PODS, pod(json!({"huawei.com/Ascend910": bad})));
            assert_eq!(e.len(), 2, "{bad}: {e:?}");
        }
        let job = find("batch/v1/jobs").or(find("job")).copied().unwrap_or(*PODS);
        let e = fields(
            &job,
            json!({"metadata": {"name": "j"}, "spec": {"backoffLimit": -1,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1e9}}}]}}}}),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("spec.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]"), "{e:?}");
        assert!(e[1].starts_with("spec.backoffLimit=-1"), "{e:?}");
    }

    #[test]
    fn nodes_need_known_hardware() {
        let e = fields(NODES, json!({"metadata": {"name": "n"}}));
        assert!(e[0].starts_with("spec.profile=") && e[0].contains("hgx-a100-8"), "{e:?}");
        let e = fields(NODES, json!({"metadata": {"name": "n"}, "spec": {"profile": "no-such"}}));
        assert!(e[0].contains("unknown profile") && e[0].contains("no-such"), "{e:?}");
        let ok = json!({"metadata": {"name": "n"}, "spec": {"profile": "hgx-a100-8", "address": "127.0.1.1",
            "network": {"tor": "tor-1"}, "injectedFaults": {"unhealthy": [7]}}, "status": {"allocatedDevices": [0]}});
        assert!(fields(NODES, ok).is_empty());
        let e = fields(
            NODES,
            json!({"metadata": {"name": "n"}, "spec": {"profile": "hgx-a100-8",
            "address": "a b", "injectedFaults": {"network": [99]}}, "status": {"allocatedDevices": [8]}}),
        );
        assert_eq!(e.len(), 1, "status devices end the read: {e:?}");
        let e = fields(
            NODES,
            json!({"metadata": {"name": "n"}, "spec": {"profile": "hgx-a100-8",
            "address": "a b", "injectedFaults": {"network": [99]}}}),
        );
        assert_eq!(e.len(), 2, "{e:?}");
    }

    #[test]
    fn sizes_and_merging() {
        let small = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        assert!(check_size(PODS, &small).is_ok());
        let big = json!({"metadata": {"name": "a"}, "data": {"k": "v".repeat(MAX_OBJECT_BYTES)}});
        let e = check_size(PODS, &big).err();
        assert_eq!(e.as_ref().map(|e| e.code), Some(StatusCode::PAYLOAD_TOO_LARGE));
        assert_eq!(json_len(&small), serde_json::to_vec(&small).map(|v| v.len()).unwrap_or(0));
        let a = FieldError::new("metadata.name", "x", "one");
        let b = FieldError::new("metadata.name", "x", "two");
        let c = FieldError::new("spec", "y", "three");
        assert_eq!(merge(vec![a.clone()], vec![b, c.clone()]), vec![a.clone(), c.clone()]);
        assert_eq!(new_errors(std::slice::from_ref(&a), vec![a.clone(), c.clone()]), vec![c]);
    }
}
