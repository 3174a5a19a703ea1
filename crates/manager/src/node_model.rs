//! A Node as the job controller and the scheduler see it: its own file so
//! the cache can memoise views without importing the code that reads them.

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
