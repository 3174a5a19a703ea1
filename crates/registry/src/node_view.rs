//! The cluster's `ringleader.io/v1alpha1 Node`s projected as core `v1
//! Node`s, so `kubectl get nodes` and client libraries see the machines (the
//! API server serves the view at `/api/v1/nodes`; Kubernetes mode writes the
//! same projection). The view is computed on every read. Writes through it
//! ([`apply_write`]: `kubectl label|annotate|cordon|uncordon|edit node`)
//! change what the view shares with the real object — labels, annotations
//! and `spec.unschedulable` — on that object: one Node, two views.

use crate::resources::{ResourceType, NODES};
use crate::status::ApiError;
use axum::http::StatusCode;
use ringleader_api::time::rfc3339;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The core `v1 Node` resource this module serves.
pub static CORE_NODES: ResourceType = ResourceType {
    kind: "Node",
    group: "",
    version: "v1",
    api_version: "v1",
    plural: "nodes",
    singular: "node",
    short_names: &["no"],
    namespaced: false,
    job: false,
};

/// The taint Kubernetes puts on a cordoned node (shown, never stored).
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Label of the node's hardware profile, as cloud providers label instance types.
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn device_ids(v: &Value, pointer: &str) -> BTreeSet<u64> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(BTreeSet::new(), |a| a.iter().filter_map(Value::as_u64).collect())
}

/// The Ready condition: from `spec.stopped`, `status.ready` (which the
/// manager turns false when heartbeats stop) and `status.lastHeartbeat`.
fn ready_condition(node: &Value) -> Value {
    let heartbeat = node.pointer("/status/lastHeartbeat").and_then(Value::as_f64).map(rfc3339);
    let created = s(node, "/metadata/creationTimestamp").to_string();
    let stopped = node.pointer("/spec/stopped").and_then(Value::as_bool) == Some(true);
    let (status, reason, message) = match node.pointer("/status/ready").and_then(Value::as_bool) {
        _ if stopped => ("False", "NodeStopped", "the node is stopped (spec.stopped): it runs no pods"),
        Some(true) => ("True", "AgentReady", "the ringleader agent is heartbeating"),
        Some(false) => ("Unknown", "NodeStatusUnknown", "the ringleader agent stopped posting heartbeats"),
        None => ("Unknown", "NodeStatusNeverUpdated", "the ringleader agent never posted a heartbeat"),
    };
    // ringleader keeps no transition history: the last heartbeat (or the
    // node's creation) is the latest time the state is known to hold from.
    let at = heartbeat.clone().unwrap_or(created);
    let mut c = json!({
        "type": "Ready", "status": status, "reason": reason, "message": message,
        "lastTransitionTime": at,
    });
    c["lastHeartbeatTime"] = json!(heartbeat.unwrap_or(at));
    c
}

/// `Ready`, then the conditions the manager keeps on the node (`Valid`
/// False when it cannot model the node), so `kubectl describe node` shows why
/// a node is skipped.
fn conditions(node: &Value) -> Value {
    let mut list = vec![ready_condition(node)];
    let kept = node.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten();
    list.extend(kept.filter(|c| c.get("type").and_then(Value::as_str).is_some_and(|t| t != "Ready")).map(|c| {
        let mut c = c.clone();
        if c.get("lastHeartbeatTime").is_none() {
            c["lastHeartbeatTime"] = c.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
        }
        c
    }));
    Value::Array(list)
}

/// The core `v1 Node` of a stored `ringleader.io/v1alpha1 Node`.
pub fn project(node: &Value) -> Value {
    let name = s(node, "/metadata/name");
    let profile = s(node, "/spec/profile");
    let mut labels = node.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    labels.entry("kubernetes.io/hostname").or_insert_with(|| json!(name));
    labels.entry("kubernetes.io/os").or_insert_with(|| json!(std::env::consts::OS));
    labels.entry("kubernetes.io/arch").or_insert_with(|| json!(go_arch()));
    if !profile.is_empty() {
        labels.insert(INSTANCE_TYPE_LABEL.into(), json!(profile));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    for field in ["uid", "creationTimestamp", "resourceVersion", "annotations", "deletionTimestamp"] {
        if let Some(x) = node.pointer(&format!("/metadata/{field}")).filter(|x| !x.is_null()) {
            metadata.insert(field.into(), x.clone());
        }
    }
    metadata.insert("labels".into(), Value::Object(labels));

    let mut capacity = Map::new();
    let mut allocatable = Map::new();
    if let Some(p) = ringleader_topology::builtin(profile) {
        let total = p.len() as u64;
        let mut broken = device_ids(node, "/status/unhealthyDevices");
        broken.extend(device_ids(node, "/status/networkUnhealthyDevices"));
        let broken = broken.iter().filter(|d| **d < total).count() as u64;
        capacity.insert(p.resource_name.clone(), json!(total.to_string()));
        allocatable.insert(p.resource_name.clone(), json!((total - broken).to_string()));
    }
    // What the agent measured of the machine, when it reported it.
    for (field, value) in node.pointer("/status/capacity").and_then(Value::as_object).into_iter().flatten() {
        capacity.entry(field.clone()).or_insert_with(|| value.clone());
        allocatable.entry(field.clone()).or_insert_with(|| value.clone());
    }

    let address = s(node, "/spec/address");
    let mut addresses = Vec::new();
    if !address.is_empty() {
        addresses.push(json!({"type": "InternalIP", "address": address}));
    }
    addresses.push(json!({"type": "Hostname", "address": name}));

    let info = |field: &str| json!(s(node, &format!("/status/nodeInfo/{field}")));
    let node_info = json!({
        "machineID": info("machineID"),
        "systemUUID": info("systemUUID"),
        "bootID": info("bootID"),
        "kernelVersion": info("kernelVersion"),
        "osImage": info("osImage"),
        "containerRuntimeVersion": info("containerRuntimeVersion"),
        "kubeletVersion": info("kubeletVersion"),
        "kubeProxyVersion": info("kubeProxyVersion"),
        "operatingSystem": match s(node, "/status/nodeInfo/operatingSystem") {
            "" => std::env::consts::OS,
            os => os,
        },
        "architecture": match s(node, "/status/nodeInfo/architecture") {
            "" => go_arch(),
            arch => arch,
        },
    });

    let mut spec = json!({});
    let flag = |field: &str| node.pointer(&format!("/spec/{field}")).and_then(Value::as_bool) == Some(true);
    let mut taints: Vec<Value> = node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    if flag("stopped") || flag("unschedulable") {
        spec["unschedulable"] = json!(true);
        taints.insert(0, json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}));
    }
    if !taints.is_empty() {
        spec["taints"] = Value::Array(taints);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions(node),
            "addresses": addresses,
            "nodeInfo": node_info,
        },
    })
}

/// The stored ringleader.io Node after a write of its core view: `wanted`
/// is the whole core Node the client sent (`PUT`) or the view with the
/// client's patch applied. Its labels, annotations and `spec.unschedulable`
/// land on the stored object; labels the view only adds (hostname, os,
/// arch) are not stored unless changed; `status` is ignored, as a write of
/// a Node's main resource ignores it on Kubernetes. A change the stored
/// Node cannot hold (another spec field, a taint with an unknown effect,
/// the profile's instance-type label) is refused, naming the field. Taints
/// land on `spec.taints`; a new `NoExecute` one gets `timeAdded` (`now`),
/// from which its pods' `tolerationSeconds` count.
pub fn apply_write(stored: &Value, wanted: &Value, now: &str) -> Result<Value, ApiError> {
    let view = project(stored);
    let name = s(stored, "/metadata/name");
    // 422 Invalid, in kube-apiserver's words: `Node "n" is invalid: <field>: Invalid value: <value>: <why>`.
    let invalid = |field: &str, value: &Value, message: String| {
        ApiError::invalid("Node", name, &[ringleader_api::FieldError::new(field, value, message)])
    };
    let labels_of = |v: &Value| v.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    let (wanted_labels, view_labels, stored_labels) = (labels_of(wanted), labels_of(&view), labels_of(stored));
    if let (Some(was), Some(now)) = (view_labels.get(INSTANCE_TYPE_LABEL), wanted_labels.get(INSTANCE_TYPE_LABEL)) {
        if was != now {
            return Err(invalid(
                &format!("metadata.labels[{INSTANCE_TYPE_LABEL}]"),
                now,
                format!("the node's profile is {was}; it is not a label to change"),
            ));
        }
    }
    let mut labels = Map::new();
    for (k, v) in wanted_labels {
        let only_shown = !stored_labels.contains_key(&k) && view_labels.get(&k) == Some(&v);
        if !only_shown {
            labels.insert(k, v);
        }
    }
    let spec = wanted.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(field) = spec.keys().find(|k| !matches!(k.as_str(), "unschedulable" | "taints")) {
        let message = "not held by a ringleader node (its spec is the ringleader.io Node's)".to_string();
        return Err(invalid(&format!("spec.{field}"), &spec[field.as_str()], message));
    }
    let unschedulable = match spec.get("unschedulable") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(invalid("spec.unschedulable", other, "must be true or false".into())),
    };
    let taints = wanted_taints(wanted, stored, now, &invalid)?;
    let mut out = stored.clone();
    let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(invalid("metadata", &Value::Null, "the stored node has none".into()));
    };
    if labels.is_empty() {
        meta.remove("labels");
    } else {
        meta.insert("labels".into(), Value::Object(labels));
    }
    match wanted.pointer("/metadata/annotations").and_then(Value::as_object) {
        Some(a) if !a.is_empty() => meta.insert("annotations".into(), Value::Object(a.clone())),
        _ => meta.remove("annotations"),
    };
    if let Some(rv) = wanted.pointer("/metadata/resourceVersion").filter(|v| v.is_string()) {
        meta.insert("resourceVersion".into(), rv.clone());
    }
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        if unschedulable {
            spec.insert("unschedulable".into(), json!(true));
        } else {
            spec.remove("unschedulable");
        }
        if taints.is_empty() {
            spec.remove("taints");
        } else {
            spec.insert("taints".into(), Value::Array(taints));
        }
    }
    Ok(out)
}

/// The effects a taint may have.
const TAINT_EFFECTS: [&str; 3] = ["NoExecute", "NoSchedule", "PreferNoSchedule"];

/// The taints `wanted` gives the node (the cordon taint is
/// `spec.unschedulable`'s, not stored), each checked as kube-apiserver
/// checks them; a `NoExecute` taint keeps the `timeAdded` it had, or gets `now`.
fn wanted_taints(
    wanted: &Value,
    stored: &Value,
    now: &str,
    invalid: &dyn Fn(&str, &Value, String) -> ApiError,
) -> Result<Vec<Value>, ApiError> {
    let list = match wanted.pointer("/spec/taints") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(invalid("spec.taints", other, "must be a list of taints".into())),
    };
    let before: Vec<&Value> = stored.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten().collect();
    let mut out: Vec<Value> = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let key = t.get("key").and_then(Value::as_str).unwrap_or_default();
        if key == UNSCHEDULABLE_TAINT {
            continue;
        }
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
        if !ringleader_api::validate::is_qualified_name(key) {
            let why = format!("name part {}", ringleader_api::validate::QUALIFIED_NAME_RULE);
            return Err(invalid(&format!("spec.taints[{i}].key"), &json!(key), why));
        }
        if !TAINT_EFFECTS.contains(&effect) {
            let supported = TAINT_EFFECTS.map(|e| format!("{e:?}")).join(", ");
            let field = format!("spec.taints[{i}].effect");
            return Err(invalid(&field, &json!(effect), format!("Unsupported value: supported values: {supported}")));
        }
        let value = t.get("value").and_then(Value::as_str).unwrap_or_default();
        if !value.is_empty() && !ringleader_api::validate::is_label_value(value) {
            let why = ringleader_api::validate::LABEL_VALUE_RULE.to_string();
            return Err(invalid(&format!("spec.taints[{i}].value"), &json!(value), why));
        }
        let same = |o: &Value| o.get("key") == t.get("key") && o.get("effect") == t.get("effect");
        if out.iter().any(same) {
            let why = "taints must be unique by key and effect pair".to_string();
            return Err(invalid(&format!("spec.taints[{i}]"), t, why));
        }
        let mut taint = json!({"key": key, "effect": effect});
        if !value.is_empty() {
            taint["value"] = json!(value);
        }
        if effect == "NoExecute" {
            let added = t
                .get("timeAdded")
                .filter(|v| v.is_string())
                .or_else(|| before.iter().find(|o| same(o)).and_then(|o| o.get("timeAdded")))
                .cloned()
                .unwrap_or_else(|| json!(now));
            taint["timeAdded"] = added;
        }
        out.push(taint);
    }
    Ok(out)
}

/// The architecture as Kubernetes names it (Go's GOARCH).
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// A `v1 NodeList` of projected `ringleader.io` Nodes.
pub fn project_list(list: &Value) -> Value {
    let items: Vec<Value> =
        list.get("items").and_then(Value::as_array).map_or(Vec::new(), |i| i.iter().map(project).collect());
    let mut out = list.clone();
    out["apiVersion"] = json!("v1");
    out["kind"] = json!("NodeList");
    out["items"] = json!(items);
    out
}

/// Writes to the view are refused: the real object is the ringleader.io Node.
pub fn read_only(method: &str, name: Option<&str>) -> ApiError {
    let target = match name {
        Some(n) => format!("nodes \"{n}\""),
        None => "nodes".to_string(),
    };
    let mut e = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!(
            "{method} is not allowed on {target}: v1 Nodes are a read-only view of the ringleader.io/v1alpha1 Nodes; \
             change those instead ({} or `ringleader node`)",
            NODES.collection_path(None)
        ),
    );
    e.kind = Some("nodes".into());
    e.name = name.map(str::to_string);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;

    fn stored(ready: Option<bool>, stopped: bool) -> Value {
        let mut n = json!({
            "apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "u-1", "resourceVersion": "12",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"rack": "r1"}},
            "spec": {"profile": "atlas-800-910", "address": "127.0.1.1", "stopped": stopped},
            "status": {"unhealthyDevices": [2], "networkUnhealthyDevices": [2, 5], "lastHeartbeat": 1767225660.0,
                       "nodeInfo": {"kubeletVersion": "v0.1.0", "containerRuntimeVersion": "process://0.1.0",
                                    "kernelVersion": "6.1.0", "osImage": "Debian"}},
        });
        if let Some(r) = ready {
            n["status"]["ready"] = json!(r);
        }
        n
    }

    #[test]
    fn a_write_of_the_view_changes_labels_annotations_and_cordon_on_the_stored_node() {
        let node = stored(Some(true), false);
        let mut wanted = project(&node);
        wanted["metadata"]["labels"]["ack.node.gpu.schedule"] = json!("topology");
        wanted["metadata"]["labels"].as_object_mut().unwrap().remove("rack");
        wanted["metadata"]["annotations"] = json!({"team": "vision"});
        wanted["spec"]["unschedulable"] = json!(true);
        wanted["status"] = json!({"capacity": {"cpu": "999"}});
        let out = apply_write(&node, &wanted, NOW).unwrap();
        // Only what was changed is stored: not the labels the view adds.
        assert_eq!(out["metadata"]["labels"], json!({"ack.node.gpu.schedule": "topology"}));
        assert_eq!(out["metadata"]["annotations"], json!({"team": "vision"}));
        assert_eq!(out["spec"]["unschedulable"], json!(true));
        assert_eq!(out["status"], node["status"], "status is not written through the main resource");
        assert_eq!(out["spec"]["profile"], node["spec"]["profile"]);
        let view = decode(&project(&out));
        assert_eq!(view.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
        // Uncordoned: the view's unschedulable taint is not the client's to keep.
        let mut back = project(&out);
        back["spec"]["unschedulable"] = json!(false);
        let out = apply_write(&out, &back, NOW).unwrap();
        assert!(out["spec"].get("unschedulable").is_none(), "{out}");

        let refused = |edit: &dyn Fn(&mut Value)| {
            let mut w = project(&node);
            edit(&mut w);
            let e = apply_write(&node, &w, NOW).unwrap_err();
            assert_eq!(e.code, StatusCode::UNPROCESSABLE_ENTITY, "{}", e.message);
            e.message
        };
        let m = refused(&|w| w["metadata"]["labels"][INSTANCE_TYPE_LABEL] = json!("other"));
        assert!(m.starts_with("Node \"n1\" is invalid: metadata.labels[node.kubernetes.io/instance-type]"), "{m}");
        let m = refused(&|w| w["spec"]["podCIDR"] = json!("10.0.0.0/24"));
        assert!(m.contains("spec.podCIDR"), "{m}");
        let m = refused(&|w| w["spec"]["taints"] = json!([{"key": "k", "effect": "NoWay"}]));
        assert!(
            m.contains("spec.taints[0].effect") && m.contains("\"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\""),
            "{m}"
        );
        let m = refused(&|w| w["spec"]["taints"] = json!([{"key": "bad key", "effect": "NoSchedule"}]));
        assert!(m.contains("spec.taints[0].key"), "{m}");
        let twice = json!([{"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}]);
        let m = refused(&|w| w["spec"]["taints"] = twice.clone());
        assert!(m.contains("unique by key and effect"), "{m}");
        let m = refused(&|w| w["spec"]["unschedulable"] = json!("yes"));
        assert!(m.contains("spec.unschedulable"), "{m}");
    }

    const NOW: &str = "2026-11-28T10:00:00Z";

    #[test]
    fn taints_land_on_the_stored_node_and_no_execute_ones_keep_when_they_were_added() {
        let node = stored(Some(true), false);
        let mut w = project(&node);
        w["spec"]["taints"] = json!([{"key": "gpu", "value": "broken", "effect": "NoExecute"},
                                     {"key": "dedicated", "effect": "NoSchedule"}]);
        let out = apply_write(&node, &w, NOW).unwrap();
        assert_eq!(
            out["spec"]["taints"],
            json!([{"key": "gpu", "value": "broken", "effect": "NoExecute", "timeAdded": NOW},
                   {"key": "dedicated", "effect": "NoSchedule"}])
        );
        // Written again later (kubectl taint of another key): the time stays.
        let mut again = project(&out);
        again["spec"]["unschedulable"] = json!(true);
        let later = apply_write(&out, &again, "2026-11-28T11:00:00Z").unwrap();
        assert_eq!(later["spec"]["taints"][0]["timeAdded"], NOW);
        // The view shows them after the cordon taint, which is not stored.
        let view = project(&later);
        assert_eq!(view["spec"]["taints"][0]["key"], UNSCHEDULABLE_TAINT);
        assert_eq!(view["spec"]["taints"][1]["key"], "gpu");
        assert_eq!(apply_write(&later, &view, NOW).unwrap()["spec"]["taints"], later["spec"]["taints"]);
        // `kubectl taint node n gpu-` removes it.
        let mut removed = project(&later);
        removed["spec"]["taints"] = json!([{"key": "dedicated", "effect": "NoSchedule"}]);
        let out = apply_write(&later, &removed, NOW).unwrap();
        assert_eq!(out["spec"]["taints"], json!([{"key": "dedicated", "effect": "NoSchedule"}]));
    }

    fn decode(v: &Value) -> Node {
        match serde_json::from_value::<Node>(v.clone()) {
            Ok(n) => n,
            Err(e) => panic!("not a k8s-openapi Node: {e}\n{v:#}"),
        }
    }

    fn ready(n: &Node) -> (String, String) {
        let c =
            n.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        c.map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default())).unwrap_or_default()
    }

    #[test]
    fn projection_decodes_as_a_core_node() {
        let n = decode(&project(&stored(Some(true), false)));
        assert_eq!(n.metadata.name.as_deref(), Some("n1"));
        assert_eq!(n.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(n.metadata.resource_version.as_deref(), Some("12"));
        let labels = n.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("kubernetes.io/hostname").map(String::as_str), Some("n1"));
        assert_eq!(labels.get(INSTANCE_TYPE_LABEL).map(String::as_str), Some("atlas-800-910"));
        assert_eq!(labels.get("rack").map(String::as_str), Some("r1"));
        assert!(labels.contains_key("kubernetes.io/os"));
        let status = n.status.clone().unwrap_or_default();
        let cap = status.capacity.unwrap_or_default();
        let alloc = status.allocatable.unwrap_or_default();
        // atlas-800-910: 8 chips; 2 and 5 are broken.
        assert_eq!(cap.get("huawei.com/Ascend910").map(|q| q.0.as_str()), Some("8"));
        assert_eq!(alloc.get("huawei.com/Ascend910").map(|q| q.0.as_str()), Some("6"));
        let addresses = status.addresses.unwrap_or_default();
        assert_eq!((addresses[0].type_.as_str(), addresses[0].address.as_str()), ("InternalIP", "127.0.1.1"));
        assert_eq!(addresses[1].type_, "Hostname");
        let info = status.node_info.unwrap_or_default();
        assert_eq!(info.kubelet_version, "v0.1.0");
        assert_eq!(info.container_runtime_version, "process://0.1.0");
        assert_eq!(ready(&n), ("True".into(), "AgentReady".into()));
        assert!(n.spec.and_then(|s| s.unschedulable).is_none());
    }

    #[test]
    fn conditions_follow_heartbeats_and_stops() {
        assert_eq!(ready(&decode(&project(&stored(Some(false), false)))).0, "Unknown");
        assert_eq!(ready(&decode(&project(&stored(None, false)))), ("Unknown".into(), "NodeStatusNeverUpdated".into()));
        let stopped = decode(&project(&stored(Some(true), true)));
        assert_eq!(ready(&stopped), ("False".into(), "NodeStopped".into()));
        assert_eq!(stopped.spec.and_then(|s| s.unschedulable), Some(true));
        let v = project(&stored(Some(true), false));
        assert_eq!(v["status"]["conditions"][0]["lastHeartbeatTime"], "2026-01-01T00:01:00Z");
    }

    #[test]
    fn the_managers_valid_condition_follows_ready() {
        let mut n = stored(Some(true), false);
        n["status"]["conditions"] = json!([{"type": "Valid", "status": "False", "reason": "FailedValidation",
            "message": "spec.profile: x: unknown profile", "lastTransitionTime": "2026-01-01T00:02:00Z"}]);
        let v = decode(&project(&n));
        let conditions = v.status.and_then(|s| s.conditions).unwrap_or_default();
        let kinds: Vec<(&str, &str)> = conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect();
        assert_eq!(kinds, [("Ready", "True"), ("Valid", "False")]);
        assert_eq!(conditions[1].reason.as_deref(), Some("FailedValidation"));
    }

    #[test]
    fn lists_decode_as_node_lists() {
        let list = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "NodeList",
            "metadata": {"resourceVersion": "40"}, "items": [stored(Some(true), false)]});
        let v = project_list(&list);
        let l: k8s_openapi::List<Node> = match serde_json::from_value(v) {
            Ok(l) => l,
            Err(e) => panic!("not a NodeList: {e}"),
        };
        assert_eq!(l.items.len(), 1);
        assert_eq!(l.metadata.resource_version.as_deref(), Some("40"));
    }

    #[test]
    fn writes_are_refused_with_a_pointer_to_the_real_object() {
        let e = read_only("PATCH", Some("n1"));
        assert_eq!(e.code, StatusCode::METHOD_NOT_ALLOWED);
        assert!(e.message.contains("/apis/ringleader.io/v1alpha1/nodes"), "{}", e.message);
    }
}
