//! What the agent reads from a `v1 Pod` object: where it is bound, whether it
//! may start, whether it is being deleted, and the first container's launch
//! data. Read from the JSON directly so that a malformed pod is reported, not
//! a reason to stop.

use ringleader_store::ObjectKey;
use serde_json::Value;
use std::collections::BTreeMap;

/// Set to `"true"` by the job controller once env and files are complete.
pub const START: &str = "ringleader.io/start";
/// JSON object, pod-visible path → content, written into the sandbox.
pub const FILES: &str = "ringleader.io/files";
/// Written by the manager: files to take from ConfigMaps of the pod's
/// namespace, JSON pod path → `<configmap>/<key>` (the rank table).
pub const CONFIG_FILES: &str = "ringleader.io/config-files";
/// Simulated runtime: seconds the pod runs.
pub const DURATION: &str = "ringleader.io/duration";
/// Written by the agent: the pod's log file.
pub const LOG_PATH: &str = "ringleader.io/log-path";
/// Written by the agent: the process group of the pod, so a later agent can
/// kill what a crashed one left behind.
pub const PID: &str = "ringleader.io/pid";

/// Store key of a pod.
pub fn pod_key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", namespace, name)
}

/// One annotation.
/// Device IDs the scheduler bound (`0,1,2,3`), the manager's annotation.
pub const DEVICES: &str = "ringleader.io/devices";

/// The bound device IDs; an entry that is not a device ID is an error
/// naming it (the agent then refuses to start the pod).
pub fn devices(pod: &Value) -> Result<Vec<u32>, String> {
    let Some(text) = annotation(pod, DEVICES).filter(|t| !t.trim().is_empty()) else { return Ok(Vec::new()) };
    text.split(',')
        .map(|d| {
            d.trim().parse::<u32>().map_err(|_| {
                format!("metadata.annotations[{DEVICES}]: {d:?} is not a device ID (comma-separated integers)")
            })
        })
        .collect()
}

/// Annotations the scheduler writes on a pod that holds a share of its
/// GPUs (cores, or memory as ACK's gpushare and HAMi read it).
const GPU_SHARE_ANNOTATIONS: &[&str] =
    &["ringleader.io/gpu-milli", "ALIYUN_COM_GPU_MEM_IDX", "hami.io/vgpu-devices-allocated"];

/// Whether the pod holds a share of its devices rather than the devices
/// whole: vNPUs of its chips (a `huawei.com/npu-core: <chip>-<template>` or
/// static vNPU annotation) or a GPU share, all written at binding. Such pods
/// share a device, whose capacity the scheduler counts, so they do not
/// conflict with one another.
pub fn holds_share(pod: &Value) -> bool {
    use ringleader_api::devices::{classify, Family};
    use ringleader_api::DeviceKind;
    let Some(annotations) = pod.get("metadata").and_then(|m| m.get("annotations")).and_then(Value::as_object) else {
        return false;
    };
    annotations.keys().any(|k| {
        GPU_SHARE_ANNOTATIONS.contains(&k.as_str())
            || matches!(classify(k), Some((Family::Ascend, DeviceKind::DynamicVnpu | DeviceKind::StaticVnpu { .. })))
    })
}

pub fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The fields of a pod every event is judged by.
#[derive(Debug, Clone, PartialEq)]
pub struct PodInfo {
    /// Store key.
    pub key: ObjectKey,
    /// `metadata.uid`: tells a recreated pod of the same name from the old one.
    pub uid: String,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `ringleader.io/start` is `"true"`.
    pub start: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `metadata.deletionGracePeriodSeconds`.
    pub grace_seconds: Option<f64>,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `spec.hostname`.
    pub hostname: Option<String>,
    /// `spec.subdomain`.
    pub subdomain: Option<String>,
    /// `status.podIP` when it is not the node's (a pod network's address).
    pub pod_ip: Option<String>,
}

impl PodInfo {
    /// Read from an object stored under `key`.
    pub fn of(key: &ObjectKey, pod: &Value) -> PodInfo {
        PodInfo {
            key: key.clone(),
            uid: str_at(pod, "/metadata/uid").unwrap_or_default().to_string(),
            node_name: str_at(pod, "/spec/nodeName").map(str::to_string),
            start: annotation(pod, START) == Some("true"),
            deleting: pod.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()),
            grace_seconds: pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_f64),
            phase: str_at(pod, "/status/phase").map(str::to_string),
            hostname: str_at(pod, "/spec/hostname").map(str::to_string),
            subdomain: str_at(pod, "/spec/subdomain").map(str::to_string),
            pod_ip: str_at(pod, "/status/podIP")
                .filter(|ip| !ip.is_empty() && Some(*ip) != str_at(pod, "/status/hostIP"))
                .map(str::to_string),
        }
    }

    /// The grace period its deletion gives (`default` when it names none
    /// usable).
    pub fn grace(&self, default: std::time::Duration) -> std::time::Duration {
        self.grace_seconds
            .filter(|g| g.is_finite() && *g >= 0.0)
            .map(|g| std::time::Duration::from_secs_f64(g.min(1e7)))
            .unwrap_or(default)
    }

    /// Succeeded or Failed.
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded") | Some("Failed"))
    }

    /// The phase is Running.
    pub fn is_running(&self) -> bool {
        self.phase.as_deref() == Some("Running")
    }
}

/// Name of the first container (`main` when it has none), for container statuses.
pub fn container_name(pod: &Value) -> String {
    str_at(pod, "/spec/containers/0/name").unwrap_or("main").to_string()
}

/// `status.startTime` as Unix seconds.
pub fn start_time(pod: &Value) -> Option<f64> {
    str_at(pod, "/status/startTime").and_then(ringleader_api::time::parse_rfc3339)
}

/// `ringleader.io/duration`: absent → `Ok(None)` (runs until deleted);
/// anything but a finite non-negative number of seconds is an error.
pub fn duration(pod: &Value) -> Result<Option<f64>, String> {
    let Some(raw) = annotation(pod, DURATION) else { return Ok(None) };
    match raw.trim().parse::<f64>() {
        Ok(d) if d.is_finite() && d >= 0.0 => Ok(Some(d)),
        _ => Err(format!("annotation {DURATION}: {raw:?} is not a number of seconds")),
    }
}

/// The first container as the agent launches it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Container {
    /// `command`.
    pub command: Vec<String>,
    /// `args`.
    pub args: Vec<String>,
    /// `env`, in order: (name, value) with `valueFrom.fieldRef` resolved.
    pub env: Vec<(String, String)>,
    /// `workingDir`.
    pub working_dir: Option<String>,
}

/// Where the pod runs, for `fieldRef`s that name it.
pub struct Placement<'a> {
    /// Node name.
    pub node: &'a str,
    /// Node address (`status.podIP`, `status.hostIP`).
    pub address: &'a str,
}

fn string_list(v: Option<&Value>, field: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| s.as_str().map(str::to_string).ok_or_else(|| format!("{field}[{i}]: must be a string")))
            .collect(),
        Some(_) => Err(format!("{field}: must be a list of strings")),
    }
}

/// Value of a `fieldRef.fieldPath`, for the paths a pod can see about itself.
fn field_ref(pod: &Value, placement: &Placement<'_>, path: &str) -> Option<String> {
    let map_entry = |prefix: &str, map: &str| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_prefix("['")?.strip_suffix("']")?;
        pod.get("metadata")?.get(map)?.get(key)?.as_str().map(str::to_string)
    };
    match path {
        "metadata.name" => str_at(pod, "/metadata/name").map(str::to_string),
        "metadata.namespace" => Some(str_at(pod, "/metadata/namespace").unwrap_or("default").to_string()),
        "metadata.uid" => str_at(pod, "/metadata/uid").map(str::to_string),
        "spec.nodeName" => Some(placement.node.to_string()),
        "spec.serviceAccountName" => str_at(pod, "/spec/serviceAccountName").map(str::to_string),
        "status.podIP" | "status.hostIP" | "status.podIPs" | "status.hostIPs" => Some(placement.address.to_string()),
        _ => map_entry("metadata.labels", "labels").or_else(|| map_entry("metadata.annotations", "annotations")),
    }
}

/// The first container, or why the pod cannot run.
pub fn first_container(pod: &Value, placement: &Placement<'_>) -> Result<Container, String> {
    let c = match pod.pointer("/spec/containers") {
        Some(Value::Array(cs)) => cs.first().ok_or("spec.containers: at least one container is required")?,
        _ => return Err("spec.containers: at least one container is required".into()),
    };
    let command = string_list(c.get("command"), "spec.containers[0].command")?;
    let args = string_list(c.get("args"), "spec.containers[0].args")?;
    let mut env = Vec::new();
    if let Some(list) = c.get("env").filter(|v| !v.is_null()) {
        let list = list.as_array().ok_or("spec.containers[0].env: must be a list")?;
        for (i, e) in list.iter().enumerate() {
            let name = e
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty() && !n.contains('=') && !n.contains('\0'))
                .ok_or_else(|| format!("spec.containers[0].env[{i}].name: required, without '='"))?;
            let value = if let Some(v) = e.get("value").filter(|v| !v.is_null()) {
                match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }
            } else if let Some(path) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
                match field_ref(pod, placement, path) {
                    Some(v) => v,
                    None => {
                        tracing::debug!(var = name, path, "fieldRef the agent cannot resolve; variable left out");
                        continue;
                    }
                }
            } else if e.get("valueFrom").is_some_and(|v| !v.is_null()) {
                tracing::debug!(var = name, "valueFrom other than fieldRef is not supported; variable left out");
                continue;
            } else {
                String::new()
            };
            env.push((name.to_string(), value));
        }
    }
    let working_dir = c.get("workingDir").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(Container { command, args, env, working_dir })
}

/// `ringleader.io/files`: pod-visible path → content (empty when absent).
pub fn files(pod: &Value) -> Result<BTreeMap<String, String>, String> {
    let Some(raw) = annotation(pod, FILES) else { return Ok(BTreeMap::new()) };
    let parsed: Value = serde_json::from_str(raw).map_err(|e| format!("annotation {FILES}: not JSON: {e}"))?;
    let obj =
        parsed.as_object().ok_or_else(|| format!("annotation {FILES}: must be a JSON object (path → content)"))?;
    obj.iter()
        .map(|(path, content)| match content {
            Value::String(s) => Ok((path.clone(), s.clone())),
            _ => Err(format!("annotation {FILES}: the content of {path:?} must be a string")),
        })
        .collect()
}

/// `ringleader.io/config-files`: pod path → (ConfigMap name, key).
pub fn config_files(pod: &Value) -> Result<BTreeMap<String, (String, String)>, String> {
    let Some(raw) = annotation(pod, CONFIG_FILES) else { return Ok(BTreeMap::new()) };
    let parsed: Value = serde_json::from_str(raw).map_err(|e| format!("annotation {CONFIG_FILES}: not JSON: {e}"))?;
    let obj = parsed
        .as_object()
        .ok_or_else(|| format!("annotation {CONFIG_FILES}: must be a JSON object (path → \"<configmap>/<key>\")"))?;
    obj.iter()
        .map(|(path, source)| {
            let pair = source.as_str().and_then(|s| s.split_once('/')).filter(|(m, k)| !m.is_empty() && !k.is_empty());
            match pair {
                Some((map, key)) => Ok((path.clone(), (map.to_string(), key.to_string()))),
                None => {
                    Err(format!("annotation {CONFIG_FILES}: {path:?} must name \"<configmap>/<key>\", not {source}"))
                }
            }
        })
        .collect()
}

/// The controlling owner (its job) of a pod in `namespace`, as a store key and uid.
pub fn controller_owner(pod: &Value, namespace: &str) -> Option<(ObjectKey, String)> {
    let refs = pod.pointer("/metadata/ownerReferences")?.as_array()?;
    let owner = refs.iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    let field = |k: &str| owner.get(k).and_then(Value::as_str);
    let key = ObjectKey::new(field("apiVersion")?, field("kind")?, namespace, field("name")?);
    Some((key, field("uid")?.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "j-worker-0", "namespace": "ns", "uid": "u1",
                "labels": { "role": "worker" },
                "annotations": { START: "true", FILES: "{\"/etc/mpi/hostfile\":\"a slots=1\\n\"}", DURATION: "1.5" },
                "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 5 },
            "spec": { "nodeName": "n-0", "hostname": "j-worker-0", "subdomain": "j",
                "containers": [{ "name": "c", "command": ["python"], "args": ["train.py"], "workingDir": "/work",
                    "env": [{ "name": "A", "value": "1" },
                            { "name": "ME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                            { "name": "IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
                            { "name": "ROLE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['role']" } } },
                            { "name": "SECRET", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k" } } }] }] },
            "status": { "phase": "Running", "startTime": "2024-01-01T00:00:00Z" },
        })
    }

    #[test]
    fn reads_the_fields_events_are_judged_by() {
        let p = pod();
        let info = PodInfo::of(&pod_key("ns", "j-worker-0"), &p);
        assert_eq!(info.uid, "u1");
        assert_eq!(info.node_name.as_deref(), Some("n-0"));
        assert!(info.start && info.deleting && info.is_running() && !info.is_terminal());
        assert_eq!(info.grace_seconds, Some(5.0));
        assert_eq!((info.hostname.as_deref(), info.subdomain.as_deref()), (Some("j-worker-0"), Some("j")));
        assert_eq!(duration(&p), Ok(Some(1.5)));
        assert_eq!(start_time(&p), Some(1_704_067_200.0));
        assert_eq!(container_name(&p), "c");
        let empty = PodInfo::of(&pod_key("ns", "x"), &json!({}));
        assert!(!empty.start && !empty.deleting && empty.node_name.is_none());
    }

    #[test]
    fn first_container_resolves_field_refs() {
        let c = first_container(&pod(), &Placement { node: "n-0", address: "127.0.1.1" }).unwrap();
        assert_eq!(c.command, ["python"]);
        assert_eq!(c.args, ["train.py"]);
        assert_eq!(c.working_dir.as_deref(), Some("/work"));
        let env: Vec<(&str, &str)> = c.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(env, [("A", "1"), ("ME", "j-worker-0"), ("IP", "127.0.1.1"), ("ROLE", "worker")]);
    }

    #[test]
    fn malformed_pods_get_a_reason() {
        let at = Placement { node: "n", address: "a" };
        assert!(first_container(&json!({"spec": {}}), &at).unwrap_err().contains("spec.containers"));
        let bad = json!({"spec": {"containers": [{"command": "echo hi"}]}});
        assert!(first_container(&bad, &at).unwrap_err().contains("command"));
        let bad = json!({"spec": {"containers": [{"command": ["x", 3]}]}});
        assert!(first_container(&bad, &at).unwrap_err().contains("command[1]"));
        let bad = json!({"metadata": {"annotations": {FILES: "[1]"}}});
        assert!(files(&bad).unwrap_err().contains(FILES));
        let bad = json!({"metadata": {"annotations": {DURATION: "soon"}}});
        assert!(duration(&bad).is_err());
        assert_eq!(files(&pod()).unwrap()["/etc/mpi/hostfile"], "a slots=1\n");
    }

    #[test]
    fn vnpu_pods_are_told_from_whole_chip_pods() {
        let with = |a: Value| json!({"metadata": {"annotations": a}});
        assert!(holds_share(&with(json!({"huawei.com/npu-core": "0-vir02_1c", DEVICES: "0"}))));
        assert!(holds_share(&with(json!({"huawei.com/Ascend310P-2c": "Ascend310P-2c-100-0"}))));
        assert!(!holds_share(&with(json!({"huawei.com/Ascend310P": "Ascend310P-0", DEVICES: "0"}))));
        assert!(!holds_share(&with(json!({DEVICES: "0,1"}))));
        assert!(!holds_share(&json!({"metadata": {}})));
        assert!(holds_share(&with(json!({"ringleader.io/gpu-milli": "250", DEVICES: "3"}))));
        assert!(holds_share(&with(json!({"ALIYUN_COM_GPU_MEM_IDX": "6", DEVICES: "6"}))));
        assert!(holds_share(&with(json!({"hami.io/vgpu-devices-allocated": "GPU5,NVIDIA,20480,0:;", DEVICES: "5"}))));
    }
}
