//! ringleader's objects as Kubernetes keeps them, and back. The manager and
//! the agent speak ringleader's object contract (docs/control-plane.md);
//! kube-apiserver refuses some of its writes, so they are carried
//! differently there, and read back into the same shape:
//!
//! * a pod's spec is immutable once created, but a gang's release adds the
//!   placement-dependent env: it travels in annotation [`ENV_ANNOTATION`];
//! * a pod is bound through `pods/binding`, not by writing `spec.nodeName`;
//! * a graceful delete is a DELETE with a grace period, not a patch of
//!   `metadata.deletionTimestamp`;
//! * built-in kinds (Deployment, batch Job) drop unknown status fields: the
//!   job controller's state goes to annotation [`JOB_STATE_ANNOTATION`];
//! * ringleader's Node is a core v1 Node whose hardware description sits in
//!   annotation [`NODE_SPEC_ANNOTATION`] (nodes without it are read from
//!   what clusters publish, see `ringleader_scheduler::k8s_node`), and its
//!   agent's device figures in [`DEVICE_TELEMETRY_ANNOTATION`] (NodeStatus
//!   has no field for them).
//!
//! Pure functions, so each rule is tested on its own.

use crate::kinds::Kind;
use k8s_openapi::api::core::v1::ConfigMap;
use ringleader_api::time::{parse_rfc3339, rfc3339};
use ringleader_scheduler::k8s_node::{
    is_kubelet_node, HARDWARE_PROBLEM_ANNOTATION, KUBELET_NODE_ANNOTATION, NETWORK_UNHEALTHY_DEVICES_ANNOTATION,
    UNHEALTHY_DEVICES_ANNOTATION,
};
use serde_json::{json, Map, Value};

/// Pod annotation: the env of each container, set at release (JSON array of
/// `env` arrays, in container order).
pub const ENV_ANNOTATION: &str = "ringleader.io/env";
/// Deployment / batch Job annotation: the job controller's state (JSON).
pub const JOB_STATE_ANNOTATION: &str = "ringleader.io/job-state";
/// Node annotation: ringleader's `spec` of the node (JSON).
pub const NODE_SPEC_ANNOTATION: &str = "ringleader.io/node-spec";
/// Node annotation: ringleader's `status.deviceTelemetry` (JSON array), the
/// utilisation, memory, temperature and power the agent read of the
/// devices; absent when it reads none (virtual devices, a failed read).
pub const DEVICE_TELEMETRY_ANNOTATION: &str = "ringleader.io/device-telemetry";

fn annotations_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let meta = object.as_object_mut()?.entry("metadata").or_insert_with(|| json!({}));
    let annotations = meta.as_object_mut()?.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations.as_object_mut()
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// An object read from kube-apiserver, as ringleader's controllers expect
/// it. `device_info`: MindCluster's `mindx-dl-deviceinfo-<node>` ConfigMaps
/// known so far, which describe nodes no ringleader agent registered.
pub fn from_kube(kind: &Kind, mut object: Value, device_info: &[ConfigMap]) -> Value {
    if let Some(o) = object.as_object_mut() {
        // List items come without them.
        o.insert("apiVersion".into(), json!(kind.api_version));
        o.insert("kind".into(), json!(kind.kind));
        // Server-side apply's bookkeeping is never read here, and is often
        // the biggest part of an object: kept for every pod it was much of
        // what the manager's memory held (kube-scheduler drops it from its
        // informers too). An update sent without it keeps the server's.
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    if kind.is_node() {
        return node_from_kube(&object, device_info);
    }
    if kind.kind == "Pod" && kind.api_version == "v1" {
        if let Some(envs) = annotation(&object, ENV_ANNOTATION).and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
        {
            if let Some(containers) = object.pointer_mut("/spec/containers").and_then(Value::as_array_mut) {
                for (c, env) in containers.iter_mut().zip(envs) {
                    if let Some(c) = c.as_object_mut() {
                        c.insert("env".into(), env);
                    }
                }
            }
        }
    }
    if kind.typed_status() {
        if let Some(state) = annotation(&object, JOB_STATE_ANNOTATION).and_then(|s| serde_json::from_str(s).ok()) {
            let state: Value = state;
            if let Some(o) = object.as_object_mut() {
                let status = o.entry("status").or_insert_with(|| json!({}));
                if let Some(s) = status.as_object_mut() {
                    s.insert("ringleader".into(), state);
                }
            }
        }
    }
    object
}

/// How one merge patch of ringleader's reaches kube-apiserver.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Write {
    /// Merge patch of the object itself (metadata, spec).
    pub main: Option<Value>,
    /// The node a pod is bound to (`pods/binding`).
    pub bind: Option<String>,
    /// Annotations the binding itself sets on the pod (kube-apiserver merges
    /// a Binding's annotations into its pod's), in place of a PATCH.
    pub bind_annotations: Option<Map<String, Value>>,
    /// Merge patch through `/status`.
    pub status: Option<Value>,
    /// A graceful delete, with its grace period in seconds.
    pub delete: Option<i64>,
}

/// Sets `metadata.annotations[key]` of the main patch being built (a
/// metadata or annotations field that is not an object is refused, not
/// indexed into).
fn annotate(main: &mut Map<String, Value>, key: &str, text: String) -> Result<(), String> {
    let meta = main.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else { return Err("metadata: must be an object".into()) };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if annotations.is_null() {
        *annotations = json!({});
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return Err(format!("metadata.annotations: {annotations}: must be an object"));
    };
    annotations.insert(key.to_string(), json!(text));
    Ok(())
}

/// Folds merge patch `more` into merge patch `into`, keeping its nulls:
/// both are patches still to send, and a null is what removes a field
/// there (`json_patch::merge` applies a patch, dropping them).
fn combine(into: &mut Value, more: Value) {
    match (into, more) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot @ Value::Object(_)) if v.is_object() => combine(slot, v),
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, more) => *slot = more,
    }
}

/// Splits a merge patch of ringleader's onto the calls Kubernetes takes.
/// `job_state`: the current job-controller state of a typed-status kind
/// (what [`JOB_STATE_ANNOTATION`] holds), to merge a patch of it into.
pub fn split_patch(kind: &Kind, patch: &Value, job_state: Option<&Value>) -> Result<Write, String> {
    let Some(fields) = patch.as_object() else {
        return Err("a merge patch must be a JSON object".into());
    };
    let mut main = Map::new();
    let mut write = Write::default();
    for (field, value) in fields {
        match field.as_str() {
            "status" if kind.status_subresource => {
                let mut status = value.clone();
                if kind.typed_status() {
                    if let Some(state) = status.as_object_mut().and_then(|s| s.remove("ringleader")) {
                        let mut merged = job_state.cloned().unwrap_or_else(|| json!({}));
                        json_patch::merge(&mut merged, &state);
                        let text = serde_json::to_string(&merged).map_err(|e| e.to_string())?;
                        annotate(&mut main, JOB_STATE_ANNOTATION, text)?;
                    }
                }
                write.status = Some(status);
            }
            "spec" if kind.kind == "Pod" => {
                let Some(spec) = value.as_object() else { return Err("spec: must be an object".into()) };
                for (f, v) in spec {
                    match f.as_str() {
                        "nodeName" => match v.as_str() {
                            Some(node) if !node.is_empty() => write.bind = Some(node.to_string()),
                            _ => return Err(format!("spec.nodeName: {v}: a pod is unbound only by deleting it")),
                        },
                        "containers" => {
                            let envs: Vec<Value> = v
                                .as_array()
                                .ok_or("spec.containers: must be an array")?
                                .iter()
                                .map(|c| c.get("env").cloned().unwrap_or_else(|| json!([])))
                                .collect();
                            let text = serde_json::to_string(&envs).map_err(|e| e.to_string())?;
                            annotate(&mut main, ENV_ANNOTATION, text)?;
                        }
                        other => {
                            return Err(format!("spec.{other}: a pod's spec cannot change once created in Kubernetes"))
                        }
                    }
                }
            }
            "metadata" => {
                let mut meta = value.clone();
                let Some(m) = meta.as_object_mut() else { return Err(format!("metadata: {value}: must be an object")) };
                {
                    if m.remove("deletionTimestamp").is_some_and(|t| !t.is_null()) {
                        write.delete = Some(m.get("deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30));
                    }
                    m.remove("deletionGracePeriodSeconds");
                }
                let into = main.entry("metadata").or_insert_with(|| json!({}));
                combine(into, meta);
            }
            _ => {
                main.insert(field.clone(), value.clone());
            }
        }
    }
    if main.get("metadata").and_then(Value::as_object).is_some_and(Map::is_empty) {
        main.remove("metadata");
    }
    if write.bind.is_some() {
        if let Some(annotations) = annotations_only(&main) {
            write.bind_annotations = Some(annotations);
            main.clear();
        }
    }
    if !main.is_empty() {
        write.main = Some(Value::Object(main));
    }
    Ok(write)
}

/// The annotations of a main patch that sets only annotations, each to a
/// string: those a Binding can carry (it can neither remove one nor touch
/// anything else), sparing the pod a PATCH of its own.
fn annotations_only(main: &Map<String, Value>) -> Option<Map<String, Value>> {
    if main.len() != 1 {
        return None;
    }
    let meta = main.get("metadata")?.as_object()?;
    if meta.len() != 1 {
        return None;
    }
    let annotations = meta.get("annotations")?.as_object()?;
    annotations.values().all(Value::is_string).then(|| annotations.clone())
}

/// A new object as Kubernetes takes it: pods get `scheduler` as their
/// scheduler, ringleader Nodes become core Nodes, Events about
/// cluster-scoped objects go to `default`.
pub fn for_create(kind: &Kind, mut object: Value, scheduler: &str) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("uid");
        meta.remove("creationTimestamp");
    }
    if kind.is_node() {
        return node_to_kube(&object);
    }
    // Only into objects: indexing a field of another type would panic.
    let set = |o: &mut Value, outer: &str, field: &str, v: Value| {
        if let Some(inner) = o.get_mut(outer).and_then(Value::as_object_mut) {
            inner.insert(field.to_string(), v);
        }
    };
    match (kind.api_version, kind.kind) {
        ("v1", "Pod") => set(&mut object, "spec", "schedulerName", json!(scheduler)),
        ("v1", "Event") if object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").is_empty() => {
            set(&mut object, "metadata", "namespace", json!("default"))
        }
        _ => {}
    }
    if kind.typed_status() {
        if let Some(state) =
            object.get_mut("status").and_then(Value::as_object_mut).and_then(|s| s.remove("ringleader"))
        {
            if let (Some(a), Ok(text)) = (annotations_mut(&mut object), serde_json::to_string(&state)) {
                a.insert(JOB_STATE_ANNOTATION.into(), json!(text));
            }
        }
    }
    object
}

fn ids(list: Option<&Value>) -> String {
    list.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).map(|d| d.to_string()).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

fn parse_ids(text: Option<&str>) -> Value {
    json!(text.unwrap_or("").split(',').filter_map(|d| d.trim().parse::<u32>().ok()).collect::<Vec<_>>())
}

/// ringleader's Node as a core v1 Node: the projection the API server
/// serves (capacity, conditions, addresses), its spec and device health in
/// annotations, the agent's endpoint port as the kubelet's.
pub fn node_to_kube(node: &Value) -> Value {
    let mut out = ringleader_registry::node_view::project(node);
    let spec = node.get("spec").cloned().unwrap_or_else(|| json!({}));
    if let Some(a) = annotations_mut(&mut out) {
        // Marks of the manager's view, never the Node's (an agent
        // registering on a kubelet's Node is read with them).
        a.remove(KUBELET_NODE_ANNOTATION);
        a.remove(HARDWARE_PROBLEM_ANNOTATION);
        a.insert(NODE_SPEC_ANNOTATION.into(), json!(spec.to_string()));
        a.insert(UNHEALTHY_DEVICES_ANNOTATION.into(), json!(ids(node.pointer("/status/unhealthyDevices"))));
        a.insert(
            NETWORK_UNHEALTHY_DEVICES_ANNOTATION.into(),
            json!(ids(node.pointer("/status/networkUnhealthyDevices"))),
        );
        match node.pointer("/status/deviceTelemetry").filter(|t| t.is_array()) {
            Some(figures) => a.insert(DEVICE_TELEMETRY_ANNOTATION.into(), json!(figures.to_string())),
            None => a.remove(DEVICE_TELEMETRY_ANNOTATION),
        };
    }
    let port = node
        .pointer("/status/agentEndpoint/url")
        .and_then(Value::as_str)
        .and_then(|u| u.rsplit(':').next())
        .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok());
    if let (Some(port), Some(status)) = (port, out.get_mut("status").and_then(Value::as_object_mut)) {
        status.insert("daemonEndpoints".into(), json!({"kubeletEndpoint": {"Port": port}}));
    }
    out
}

/// A core v1 Node as ringleader's Node: the spec a ringleader agent
/// registered, or else the hardware and health the cluster publishes
/// (`device_info`: MindCluster's device-info ConfigMaps).
pub fn node_from_kube(node: &Value, device_info: &[ConfigMap]) -> Value {
    let registered = annotation(node, NODE_SPEC_ANNOTATION).and_then(|s| serde_json::from_str::<Value>(s).ok());
    let ours = registered.is_some();
    let (spec, published, problem) = match registered {
        Some(spec) => (spec, None, None),
        None => match foreign(node, device_info) {
            Ok((spec, health)) => (spec, Some(health), None),
            Err(why) => (json!({}), None, Some(why)),
        },
    };
    let mut metadata = Map::new();
    for field in ["name", "uid", "resourceVersion", "creationTimestamp", "labels", "annotations", "deletionTimestamp"] {
        if let Some(v) = node.pointer(&format!("/metadata/{field}")).filter(|v| !v.is_null()) {
            metadata.insert(field.into(), v.clone());
        }
    }
    // Marks the view, never the Node: whoever writes Nodes asks this mark.
    if ours {
        if let Some(a) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(KUBELET_NODE_ANNOTATION);
            a.remove(HARDWARE_PROBLEM_ANNOTATION);
        }
    } else if let Some(a) = metadata.entry("annotations").or_insert_with(|| json!({})).as_object_mut() {
        a.insert(KUBELET_NODE_ANNOTATION.into(), json!("true"));
        match problem {
            Some(why) => a.insert(HARDWARE_PROBLEM_ANNOTATION.into(), json!(why)),
            None => a.remove(HARDWARE_PROBLEM_ANNOTATION),
        };
    }
    let conditions = node.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let ready = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = Map::new();
    if let Some(ready) = ready {
        status.insert("ready".into(), json!(ready.get("status").and_then(Value::as_str) == Some("True")));
        // Only ringleader's agents heartbeat through the Node: a kubelet's
        // liveness is its Lease, judged by kube-controller-manager, which
        // writes the Ready condition read above.
        let heartbeat = ready.get("lastHeartbeatTime").and_then(Value::as_str).and_then(parse_rfc3339);
        if let Some(t) = heartbeat.filter(|_| ours) {
            status.insert("lastHeartbeat".into(), json!(t));
        }
    }
    let (unhealthy, network) = match published {
        Some(health) => health,
        None => (
            parse_ids(annotation(node, UNHEALTHY_DEVICES_ANNOTATION)),
            parse_ids(annotation(node, NETWORK_UNHEALTHY_DEVICES_ANNOTATION)),
        ),
    };
    status.insert("unhealthyDevices".into(), unhealthy);
    status.insert("networkUnhealthyDevices".into(), network);
    let figures = annotation(node, DEVICE_TELEMETRY_ANNOTATION).and_then(|s| serde_json::from_str::<Value>(s).ok());
    if let Some(figures) = figures.filter(Value::is_array) {
        status.insert("deviceTelemetry".into(), figures);
    }
    let others: Vec<Value> =
        conditions.iter().filter(|c| c.get("type").and_then(Value::as_str) != Some("Ready")).cloned().collect();
    if !others.is_empty() {
        status.insert("conditions".into(), Value::Array(others));
    }
    if let Some(info) = node.pointer("/status/nodeInfo") {
        status.insert("nodeInfo".into(), info.clone());
    }
    json!({
        "apiVersion": crate::kinds::RINGLEADER_NODE.0, "kind": "Node",
        "metadata": metadata, "spec": spec, "status": status,
    })
}

/// Unhealthy and network-unhealthy device IDs, as status lists.
type Health = (Value, Value);

/// The spec and health of a Node no ringleader agent registered, as the
/// cluster publishes them (`ringleader_scheduler::k8s_node`): `nvidia-smi
/// topo -m` / `npu-smi info` text from ringleader's annotations, else the
/// built-in profile MindCluster's device info, ACK's labels or the capacity
/// name; the InternalIP. Empty when nothing describes an accelerator the
/// scheduler models (the node then offers no devices): the error says why.
fn foreign(node: &Value, device_info: &[ConfigMap]) -> Result<(Value, Health), String> {
    use ringleader_scheduler::k8s_node::{
        node_hardware, HardwareSource, NPU_SMI_INFO_ANNOTATION, NVIDIA_SMI_TOPO_ANNOTATION,
    };
    let mut spec = json!({});
    // As listed (no apiVersion) or already renamed to ringleader's kind.
    let mut core = node.clone();
    if let Some(o) = core.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!("Node"));
    }
    let typed: k8s_openapi::api::core::v1::Node =
        serde_json::from_value(core).map_err(|e| format!("not a core v1 Node: {e}"))?;
    let hw = node_hardware(&typed, device_info).map_err(|e| e.to_string())?;
    match hw.source {
        HardwareSource::Annotation(a) if a == NVIDIA_SMI_TOPO_ANNOTATION => {
            spec["topologyText"] = json!(annotation(node, a).unwrap_or_default())
        }
        HardwareSource::Annotation(a) if a == NPU_SMI_INFO_ANNOTATION => {
            spec["npuSmiText"] = json!(annotation(node, a).unwrap_or_default())
        }
        _ if ringleader_topology::builtin(&hw.profile.name).is_some() => spec["profile"] = json!(hw.profile.name),
        _ => {}
    }
    if let Some(address) = &hw.address {
        spec["address"] = json!(address);
    }
    Ok((spec, (json!(hw.unhealthy), json!(hw.network_unhealthy))))
}

/// Whether the view of a Node (from [`node_from_kube`]) is a Node no
/// ringleader agent registered: its kubelet's, written by nobody here.
pub fn is_foreign_node(view: &Value) -> bool {
    is_kubelet_node(view)
}

/// What of `patch` may reach a Node no ringleader agent registered: a
/// registration (a `spec`: an agent taking the Node over) goes the usual
/// way (`None`); a change of labels alone (a ResourceGroup claiming the
/// node, which a user asked for) is the merge patch returned; anything
/// else (conditions, annotations, health, heartbeats) is refused: that
/// Node's status is its kubelet's and the node lifecycle controller's.
pub fn foreign_node_write(patch: &Value) -> Result<Option<Value>, String> {
    let refuse = || {
        format!(
            "{patch}: the Node has no ringleader agent ({NODE_SPEC_ANNOTATION} unset): its status and \
             annotations belong to its kubelet, ringleader does not write them"
        )
    };
    let Some(fields) = patch.as_object() else { return Err(refuse()) };
    if fields.contains_key("spec") {
        return Ok(None);
    }
    let labels_only = fields.len() == 1
        && fields.get("metadata").and_then(Value::as_object).is_some_and(|m| m.len() == 1 && m.contains_key("labels"));
    if labels_only {
        return Ok(Some(json!({"metadata": {"labels": patch["metadata"]["labels"].clone()}})));
    }
    Err(refuse())
}

/// The status patch of a heartbeat: the Ready condition only (a strategic
/// merge patch keeps the other conditions and the transition time).
pub fn heartbeat_status(ready: bool, at: f64) -> Value {
    let (status, reason, message) = if ready {
        ("True", "AgentReady", "the ringleader agent is heartbeating")
    } else {
        ("Unknown", "NodeStatusUnknown", "the ringleader agent stopped posting heartbeats")
    };
    json!({"status": {"conditions": [{
        "type": "Ready", "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": rfc3339(at),
    }]}})
}

/// Whether `patch` is a heartbeat (`status.ready: true` and
/// `status.lastHeartbeat`, nothing else): the agent's most frequent write.
pub fn heartbeat(patch: &Value) -> Option<f64> {
    let status = patch.as_object().filter(|p| p.len() == 1)?.get("status")?.as_object()?;
    if status.len() != 2 || status.get("ready") != Some(&json!(true)) {
        return None;
    }
    status.get("lastHeartbeat")?.as_f64()
}

/// The writes that take core Node `old` to `new`: a merge patch of labels
/// and annotations (removed keys null), a strategic merge patch of status.
pub fn node_diff(old: &Value, new: &Value) -> (Option<Value>, Option<Value>) {
    let mut meta = Map::new();
    for field in ["labels", "annotations"] {
        let o = old.pointer(&format!("/metadata/{field}")).and_then(Value::as_object).cloned().unwrap_or_default();
        let n = new.pointer(&format!("/metadata/{field}")).and_then(Value::as_object).cloned().unwrap_or_default();
        let mut changes = Map::new();
        for (k, v) in &n {
            if o.get(k) != Some(v) {
                changes.insert(k.clone(), v.clone());
            }
        }
        for k in o.keys().filter(|k| !n.contains_key(*k)) {
            changes.insert(k.clone(), Value::Null);
        }
        if !changes.is_empty() {
            meta.insert(field.into(), Value::Object(changes));
        }
    }
    let main = (!meta.is_empty()).then(|| json!({"metadata": meta}));
    let mut status = Map::new();
    for field in ["capacity", "allocatable", "conditions", "addresses", "nodeInfo", "daemonEndpoints"] {
        let (o, n) = (old.pointer(&format!("/status/{field}")), new.pointer(&format!("/status/{field}")));
        if let Some(n) = n.filter(|n| Some(*n) != o) {
            status.insert(field.into(), n.clone());
        }
    }
    let status = (!status.is_empty()).then(|| json!({"status": status}));
    (main, status)
}

#[cfg(test)]
mod tests;
