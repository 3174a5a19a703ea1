//! The `ringleader.io/v1alpha1 Node` objects the agent registers, and the
//! fields it owns in them (see docs/control-plane.md): `spec.profile`,
//! `spec.network`, `spec.address`, `metadata.labels`, `status.ready=true`,
//! `status.lastHeartbeat`, `status.unhealthyDevices`,
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
