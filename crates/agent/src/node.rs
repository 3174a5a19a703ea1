//! The `ringleader.io/v1alpha1 Node` objects the agent registers, and the
//! fields it owns in them (see docs/control-plane.md): `spec.profile`,
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

/// The Node object a fresh registration creates (not yet ready: the first
/// heartbeat says so).
pub fn node_object(node: &VirtualNode) -> Value {
    let mut network = Map::new();
    for (k, v) in [("tor", &node.network.tor), ("spine", &node.network.spine), ("superPod", &node.network.super_pod)] {
        if let Some(v) = v {
            network.insert(k.to_string(), json!(v));
        }
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": { "name": node.name, "labels": labels(node) },
        "spec": { "profile": node.profile, "network": network, "address": node.address },
        "status": { "unhealthyDevices": [], "networkUnhealthyDevices": [] },
    })
}

/// Merge patch re-registering an existing node: only the agent's fields, so
/// `spec.stopped`, `spec.injectedFaults` and the manager's status survive.
pub fn registration_patch(node: &VirtualNode) -> Value {
    json!({
        "metadata": { "labels": labels(node) },
        "spec": { "profile": node.profile, "network": network_patch(node), "address": node.address },
    })
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
}
