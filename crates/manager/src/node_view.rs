//! Nodes as the job controller and the scheduler see them, read from the cache.

use crate::cache::Cache;
use std::collections::BTreeSet;

/// A node as the job controller and scheduler see it.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// Name.
    pub name: String,
    /// Its address (pods on the node's network get it too).
    pub address: String,
    /// Pods not on the node's network get addresses of their own.
    pub pod_network: bool,
    /// SuperPoD, if any.
    pub super_pod: Option<String>,
    /// Heartbeating.
    pub ready: bool,
    /// Cordoned: no new pods (its own stay).
    pub unschedulable: bool,
    /// Device IDs of its profile.
    pub devices: Vec<u32>,
    /// Broken devices.
    pub unhealthy: BTreeSet<u32>,
    /// Network-broken devices.
    pub network_unhealthy: BTreeSet<u32>,
    /// `status.lastHeartbeat` (seconds since the epoch).
    pub last_heartbeat: Option<f64>,
}

/// Nodes from the cache.
pub fn node_views(cache: &Cache) -> Vec<NodeView> {
    cache
        .of_kind("ringleader.io/v1alpha1", "Node")
        .filter_map(|n| {
            let node: ringleader_api::kinds::cluster::Node = serde_json::from_value(n.object.clone()).ok()?;
            let name = node.metadata.name.clone()?;
            let profile = node.spec.profile.as_deref().and_then(ringleader_topology::profiles::builtin);
            Some(NodeView {
                address: node.spec.address.clone().unwrap_or_else(|| "127.0.0.1".to_string()),
                pod_network: node.status.pod_network == Some(true),
                super_pod: node.spec.network.super_pod.clone(),
                ready: node.status.ready != Some(false) && !node.spec.stopped,
                unschedulable: node.spec.unschedulable,
                devices: profile.map(|p| p.devices.iter().map(|d| d.id).collect()).unwrap_or_default(),
                unhealthy: node.status.unhealthy_devices.iter().copied().collect(),
                network_unhealthy: node.status.network_unhealthy_devices.iter().copied().collect(),
                last_heartbeat: node.status.last_heartbeat.filter(|t| t.is_finite() && *t >= 0.0),
                name,
            })
        })
        .collect()
}
