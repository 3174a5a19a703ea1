//! The `ringleader.io/v1alpha1 Node` objects the agent registers, and the
//! fields it owns in them (see docs/control-plane.md): `spec.profile` (or
//! `spec.topologyText` / `spec.npuSmiText` for detected hardware),
//! `spec.network`, `spec.address`, `metadata.labels`, `status.ready=true`,
//! `status.lastHeartbeat`, `status.nodeInfo`, `status.unhealthyDevices`,
//! `status.networkUnhealthyDevices`. `spec.stopped` and
//! `spec.injectedFaults` belong to the CLI and are only read.

use crate::config::VirtualNode;

use ringleader_store::ObjectKey;
use serde_json::{json, Map, Value};

/// `apiVersion` of Node objects.
pub const API_VERSION: &str = "ringleader.io/v1alpha1";
/// `kind` of Node objects.
pub const KIND: &str = "Node";
/// Label every node carries, as on Kubernetes nodes.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Store key of a node.
pub fn node_key(name: &str) -> ObjectKey {
    ObjectKey::new(API_VERSION, KIND, "", name)
}

fn labels(node: &VirtualNode) -> Map<String, Value> {
    let mut labels: Map<String, Value> = node.labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    labels.entry(HOSTNAME_LABEL.to_string()).or_insert_with(|| json!(node.name));
    labels
}

/// The network position with absent tiers as `null`, so a merge patch clears
/// tiers the configuration no longer has.
fn network_patch(node: &VirtualNode) -> Value {
    json!({ "tor": node.network.tor, "spine": node.network.spine, "superPod": node.network.super_pod })
}

/// The hardware statement: exactly one of `profile`, `topologyText`,
/// `npuSmiText` (as the Node schema wants), the other two `null` so that a
/// merge patch removes a statement the node no longer makes.
fn hardware_patch(node: &VirtualNode) -> Map<String, Value> {
    let profile = (!node.profile.is_empty() && node.topology_text.is_none() && node.npu_smi_text.is_none())
        .then(|| json!(node.profile));
    let mut spec = Map::new();
    spec.insert("profile".into(), profile.unwrap_or(Value::Null));
    spec.insert("topologyText".into(), node.topology_text.as_ref().map_or(Value::Null, |t| json!(t)));
    spec.insert("npuSmiText".into(), node.npu_smi_text.as_ref().map_or(Value::Null, |t| json!(t)));
    spec
}

/// The Node object a fresh registration creates (not yet ready: the first
/// heartbeat says so).
pub fn node_object(node: &VirtualNode) -> Value {
    let mut spec = hardware_patch(node);
    spec.retain(|_, v| !v.is_null());
    let mut network = Map::new();
    for (k, v) in [("tor", &node.network.tor), ("spine", &node.network.spine), ("superPod", &node.network.super_pod)] {
        if let Some(v) = v {
            network.insert(k.to_string(), json!(v));
        }
    }
    spec.insert("network".into(), Value::Object(network));
    spec.insert("address".into(), json!(node.address));
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": { "name": node.name, "labels": labels(node) },
        "spec": spec,
        "status": { "unhealthyDevices": [], "networkUnhealthyDevices": [] },
    })
}

/// Merge patch re-registering an existing node: only the agent's fields, so
/// `spec.stopped`, `spec.injectedFaults` and the manager's status survive.
pub fn registration_patch(node: &VirtualNode) -> Value {
    let mut spec = hardware_patch(node);
    spec.insert("network".into(), network_patch(node));
    spec.insert("address".into(), json!(node.address));
    json!({ "metadata": { "labels": labels(node) }, "spec": spec })
}

/// Merge patch of one heartbeat at `now` (Unix seconds).
pub fn heartbeat_patch(now: f64) -> Value {
    json!({ "status": { "ready": true, "lastHeartbeat": now } })
}

/// One line of a system file, trimmed; empty when unreadable.
fn read_line(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// `PRETTY_NAME` of an os-release file's text.
fn pretty_name(os_release: &str) -> Option<String> {
    os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// Merge patch of `status.nodeInfo`: what the agent knows of the machine it
/// runs on and of itself, in the fields of a Kubernetes `NodeSystemInfo`
/// (the core v1 Node view serves them). The agent stands in for the kubelet
/// and `runtime` for the container runtime.
pub fn system_info_patch(runtime: &str) -> Value {
    let version = env!("CARGO_PKG_VERSION");
    let os_image = pretty_name(&std::fs::read_to_string("/etc/os-release").unwrap_or_default())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({ "status": { "nodeInfo": {
        "machineID": read_line("/etc/machine-id"),
        "systemUUID": read_line("/sys/class/dmi/id/product_uuid"),
        "bootID": read_line("/proc/sys/kernel/random/boot_id"),
        "kernelVersion": read_line("/proc/sys/kernel/osrelease"),
        "osImage": os_image,
        "containerRuntimeVersion": format!("{runtime}://{version}"),
        "kubeletVersion": format!("v{version}"),
        "kubeProxyVersion": "",
        "operatingSystem": std::env::consts::OS,
        "architecture": arch,
    }}})
}

/// Devices reported broken: (unhealthy, network-unhealthy), sorted, unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// `status.unhealthyDevices`.
    pub unhealthy: Vec<u32>,
    /// `status.networkUnhealthyDevices`.
    pub network: Vec<u32>,
}

fn device_list(v: Option<&Value>) -> Vec<u32> {
    let mut ids: Vec<u32> = v
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|d| d.as_u64().and_then(|d| u32::try_from(d).ok())).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The faults the CLI injected (`spec.injectedFaults`): what the agent must report.
pub fn injected_faults(node: &Value) -> Faults {
    let f = node.pointer("/spec/injectedFaults");
    Faults {
        unhealthy: device_list(f.and_then(|f| f.get("unhealthy"))),
        network: device_list(f.and_then(|f| f.get("network"))),
    }
}

/// The faults the node's status currently reports.
pub fn reported_faults(node: &Value) -> Faults {
    Faults {
        unhealthy: device_list(node.pointer("/status/unhealthyDevices")),
        network: device_list(node.pointer("/status/networkUnhealthyDevices")),
    }
}

/// What to report: the injected faults plus the devices the hardware itself
/// reports unhealthy (`detected`: device IDs from a `detect::HealthMonitor`).
pub fn merged_faults(injected: &Faults, detected: &[u32]) -> Faults {
    let mut unhealthy: Vec<u32> = injected.unhealthy.iter().chain(detected).copied().collect();
    unhealthy.sort_unstable();
    unhealthy.dedup();
    Faults { unhealthy, network: injected.network.clone() }
}

/// Merge patch reporting `faults`.
pub fn faults_patch(faults: &Faults) -> Value {
    json!({ "status": { "unhealthyDevices": faults.unhealthy, "networkUnhealthyDevices": faults.network } })
}

/// `spec.stopped`.
pub fn is_stopped(node: &Value) -> bool {
    node.pointer("/spec/stopped").and_then(Value::as_bool).unwrap_or(false)
}

/// `spec.address`, when set.
pub fn address(node: &Value) -> Option<&str> {
    node.pointer("/spec/address").and_then(Value::as_str).filter(|a| !a.is_empty())
}

/// The Event telling that a pod's `image` is not used: the process runtime
/// runs the command on the host, from the host's files (`None` when the pod
/// names no image).
pub fn image_not_used_event(pod: &ObjectKey, uid: &str, obj: &Value, node: &str, now: f64) -> Option<Value> {
    let image = obj.pointer("/spec/containers/0/image").and_then(Value::as_str).filter(|i| !i.is_empty())?;
    let message = format!(
        "image {image:?} is not pulled or used: the process runtime runs the command with this node's own files"
    );
    // One per pod: named by the uid's head, as before any other event.
    let suffix: String = uid.chars().filter(char::is_ascii_hexdigit).take(16).collect();
    let name = format!("{}.{suffix}", pod.name);
    Some(named_event(name, pod, uid, node, now, ("Warning", "ImageNotUsed"), &message))
}

/// An Event about a pod, as kubelet reports one (`type`, `reason`).
pub fn pod_event(
    pod: &ObjectKey,
    uid: &str,
    node: &str,
    now: f64,
    (kind, reason): (&str, &str),
    message: &str,
) -> Value {
    // Kubernetes names events `<object>.<hex>`: the uid's head and the
    // reason tell pods and reasons apart, the time each occurrence.
    let head: String = uid.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    let reason_hex: String = reason.bytes().take(4).map(|b| format!("{b:02x}")).collect();
    let nanos = (now.fract() * 1e9) as u64 ^ (now as u64);
    let name = format!("{}.{head}{reason_hex}{nanos:x}", pod.name);
    named_event(name, pod, uid, node, now, (kind, reason), message)
}

/// [`pod_event`] under the Event name given.
fn named_event(
    name: String,
    pod: &ObjectKey,
    uid: &str,
    node: &str,
    now: f64,
    (kind, reason): (&str, &str),
    message: &str,
) -> Value {
    let ns = if pod.namespace.is_empty() { "default" } else { pod.namespace.as_str() };
    let stamp = ringleader_api::time::rfc3339(now);
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "namespace": ns, "uid": uid},
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": "ringleader-agent", "host": node},
        "reportingComponent": "ringleader-agent",
        "reportingInstance": node,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::kinds::cluster::{Node, NodeNetwork};

    fn vnode() -> VirtualNode {
        VirtualNode::new("n-0", "atlas-800-910", "127.0.1.1").with_label("zone", "a").with_network(NodeNetwork {
            tor: Some("tor-1".into()),
            spine: None,
            super_pod: None,
        })
    }

    #[test]
    fn node_object_parses_as_the_api_node() {
        let obj = node_object(&vnode());
        let node: Node = serde_json::from_value(obj.clone()).unwrap();
        assert_eq!(node.spec.profile.as_deref(), Some("atlas-800-910"));
        assert_eq!(node.spec.address.as_deref(), Some("127.0.1.1"));
        assert_eq!(node.spec.network.tor.as_deref(), Some("tor-1"));
        assert_eq!(node.spec.network.spine, None);
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels["zone"], "a");
        assert_eq!(labels[HOSTNAME_LABEL], "n-0");
        assert_eq!(ringleader_store::ObjectKey::of(&obj).unwrap(), node_key("n-0"));
    }

    #[test]
    fn registration_leaves_cli_fields_alone_and_clears_dropped_tiers() {
        let p = registration_patch(&vnode());
        assert!(p["spec"].get("stopped").is_none());
        assert!(p["spec"].get("injectedFaults").is_none());
        assert_eq!(p["spec"]["network"]["spine"], Value::Null);
        assert!(p.get("status").is_none());
    }

    #[test]
    fn hardware_is_stated_once_and_registration_clears_the_others() {
        let obj = node_object(&vnode());
        assert!(obj["spec"].get("topologyText").is_none() && obj["spec"].get("npuSmiText").is_none());
        assert_eq!(registration_patch(&vnode())["spec"]["topologyText"], Value::Null);
        let text = crate::config::Hardware::NpuSmiText("| table |".into());
        let p = registration_patch(&vnode().with_hardware(text));
        assert_eq!((&p["spec"]["profile"], &p["spec"]["npuSmiText"]), (&Value::Null, &json!("| table |")));
    }

    #[test]
    fn detected_faults_merge_with_injected_ones() {
        let injected = Faults { unhealthy: vec![1, 5], network: vec![2] };
        assert_eq!(merged_faults(&injected, &[5, 0]), Faults { unhealthy: vec![0, 1, 5], network: vec![2] });
        assert_eq!(merged_faults(&Faults::default(), &[]), Faults::default());
    }

    #[test]
    fn system_info_names_the_agent_and_runtime() {
        let p = system_info_patch("process");
        let info = &p["status"]["nodeInfo"];
        assert_eq!(info["kubeletVersion"], format!("v{}", env!("CARGO_PKG_VERSION")));
        assert_eq!(info["containerRuntimeVersion"], format!("process://{}", env!("CARGO_PKG_VERSION")));
        assert!(info["osImage"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(
            pretty_name("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12\"\n").as_deref(),
            Some("Debian GNU/Linux 12")
        );
        assert_eq!(pretty_name("NAME=x\n"), None);
    }

    #[test]
    fn faults_are_read_sorted_and_unique() {
        let node = json!({
            "spec": { "stopped": true, "injectedFaults": { "unhealthy": [3, 1, 3], "network": [2] } },
            "status": { "unhealthyDevices": [1, 3] },
        });
        assert_eq!(injected_faults(&node), Faults { unhealthy: vec![1, 3], network: vec![2] });
        assert_eq!(reported_faults(&node), Faults { unhealthy: vec![1, 3], network: vec![] });
        assert!(is_stopped(&node));
        assert_eq!(injected_faults(&json!({})), Faults::default());
        assert_eq!(
            faults_patch(&Faults { unhealthy: vec![1], network: vec![] })["status"]["unhealthyDevices"],
            json!([1])
        );
    }

    #[test]
    fn a_pod_with_an_image_gets_one_warning_event_naming_it() {
        let key = ObjectKey::new("v1", "Pod", "", "p-0");
        let obj = json!({"spec": {"containers": [{"name": "c", "image": "nvcr.io/pytorch:24.01"}]}});
        let e = image_not_used_event(&key, "0a1b2c3d-0000-4000-8000-000000000000", &obj, "n1", 0.0).expect("event");
        assert_eq!(e["metadata"]["name"], "p-0.0a1b2c3d00004000");
        assert_eq!(e["metadata"]["namespace"], "default");
        assert_eq!((e["reason"].as_str(), e["type"].as_str()), (Some("ImageNotUsed"), Some("Warning")));
        assert!(e["message"].as_str().is_some_and(|m| m.contains("nvcr.io/pytorch:24.01")));
        assert_eq!(e["source"]["host"], "n1");
        let no_image = json!({"spec": {"containers": [{"name": "c"}]}});
        assert!(image_not_used_event(&key, "u", &no_image, "n1", 0.0).is_none());
    }
}
