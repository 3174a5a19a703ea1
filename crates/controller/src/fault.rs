//! Faults: node NotReady, unhealthy chips, chips with an unhealthy network.
//! Which pods a fault hits, which devices are isolated (never handed out
//! while unhealthy), and how the pods are removed: `fault-scheduling: grace`
//! deletes gracefully and forces after a grace period (15 min by default),
//! `force` deletes at once. Pod-level rescheduling with
//! `huawei.com/recover_policy_path: pod`, job-level otherwise.

use crate::lifecycle::{ObservedNode, ObservedPod, PodPhase};
use serde::Serialize;
use std::collections::BTreeSet;

/// Seconds a gracefully deleted pod gets before it is force-deleted.
pub const DEFAULT_GRACE_PERIOD_SECS: u64 = 15 * 60;

/// Fault handling settings of the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultConfig {
    /// Seconds between the graceful and the forced delete (`grace`).
    pub grace_period_secs: u64,
    /// Whether a chip that recovers is handed out again (`-autoStowing`).
    pub auto_stowing: bool,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig { grace_period_secs: DEFAULT_GRACE_PERIOD_SECS, auto_stowing: true }
    }
}

/// One device of one node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub struct DeviceRef {
    /// Node name.
    pub node: String,
    /// Device ID on the node.
    pub device: u32,
}

/// What went wrong under a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FaultKind {
    /// The node stopped reporting.
    NodeNotReady,
    /// A chip the pod holds is unhealthy.
    DeviceUnhealthy,
    /// A chip the pod holds has an unhealthy network (multi-pod jobs only).
    DeviceNetworkUnhealthy,
}

/// A fault under one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFault {
    /// Pod name.
    pub pod: String,
    /// The fault.
    pub kind: FaultKind,
    /// Faulty devices the pod holds (empty for a node fault).
    pub devices: Vec<DeviceRef>,
}

/// Devices no pod may be given now: unhealthy chips, and network-unhealthy
/// chips when `multi_pod` (single-pod jobs do not use the chip network).
pub fn isolated_devices(nodes: &[ObservedNode], multi_pod: bool) -> BTreeSet<DeviceRef> {
    let mut out = BTreeSet::new();
    for n in nodes {
        let net = n.network_unhealthy_devices.iter().filter(|_| multi_pod);
        for d in n.unhealthy_devices.iter().chain(net) {
            out.insert(DeviceRef { node: n.name.clone(), device: *d });
        }
    }
    out
}

/// Faults under the live pods of a job.
pub fn pod_faults<'a>(
    pods: impl IntoIterator<Item = &'a ObservedPod>,
    nodes: &[ObservedNode],
    multi_pod: bool,
) -> Vec<PodFault> {
    let mut out = Vec::new();
    for pod in pods {
        if !matches!(pod.phase, PodPhase::Running | PodPhase::Pending | PodPhase::Unknown) {
            continue;
        }
        let Some(node_name) = &pod.node else { continue };
        let Some(node) = nodes.iter().find(|n| &n.name == node_name) else { continue };
        if !node.ready {
            out.push(PodFault { pod: pod.name.clone(), kind: FaultKind::NodeNotReady, devices: Vec::new() });
            continue;
        }
        let refs = |set: &BTreeSet<u32>| -> Vec<DeviceRef> {
            pod.devices
                .iter()
                .filter(|d| set.contains(d))
                .map(|d| DeviceRef { node: node_name.clone(), device: *d })
                .collect()
        };
        let bad = refs(&node.unhealthy_devices);
        if !bad.is_empty() {
            out.push(PodFault { pod: pod.name.clone(), kind: FaultKind::DeviceUnhealthy, devices: bad });
            continue;
        }
        let bad_net = refs(&node.network_unhealthy_devices);
        if multi_pod && !bad_net.is_empty() {
            out.push(PodFault { pod: pod.name.clone(), kind: FaultKind::DeviceNetworkUnhealthy, devices: bad_net });
        }
    }
    out
}
