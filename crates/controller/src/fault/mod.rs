//! Faults: node NotReady, unhealthy chips, chips with an unhealthy network.
//! Which pods a fault hits, which devices are isolated (never handed out
//! while unhealthy), and how the pods are removed: `fault-scheduling: grace`
//! deletes gracefully and forces after a grace period (15 min by default),
//! `force` deletes at once. Pod-level rescheduling with
//! `huawei.com/recover_policy_path: pod`, job-level otherwise. Jobs without
//! a `fault-scheduling` label still lose their pods on a node NotReady
//! beyond the toleration ([`node_loss`]): those pods are marked Failed with
//! reason `NodeLost`, and the job's restart and lifecycle policies decide.

pub mod config;

use crate::lifecycle::{ObservedNode, ObservedPod, PodPhase};
pub use config::{
    DeviceRef, FaultConfig, FaultKind, NodeLossConfig, DEFAULT_GRACE_PERIOD_SECS, DEFAULT_HEARTBEAT_TIMEOUT_SECS,
    DEFAULT_NOT_READY_TOLERATION_SECS,
};
use std::collections::{BTreeSet, HashMap};

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
    // Only a node that is down or has a broken chip faults a pod: looked up
    // by name, as a gang of thousands of pods spans thousands of nodes.
    let troubled: HashMap<&str, &ObservedNode> = nodes
        .iter()
        .filter(|n| !n.ready || !n.unhealthy_devices.is_empty() || !n.network_unhealthy_devices.is_empty())
        .map(|n| (n.name.as_str(), n))
        .collect();
    if troubled.is_empty() {
        return out;
    }
    for pod in pods {
        if !matches!(pod.phase, PodPhase::Running | PodPhase::Pending | PodPhase::Unknown) {
            continue;
        }
        let Some(node_name) = &pod.node else { continue };
        let Some(node) = troubled.get(node_name.as_str()) else { continue };
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

/// What node loss means for the pods of a job at `now`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLoss {
    /// Pods to mark Failed with reason `NodeLost`: (pod, node).
    pub lost: Vec<(String, String)>,
    /// The next time a pod on a NotReady node becomes lost.
    pub next: Option<u64>,
}

/// Pods still live (or terminating, which a lost node never finishes) on
/// NotReady nodes past the toleration, and when the next one will be.
pub fn node_loss<'a>(
    pods: impl IntoIterator<Item = &'a ObservedPod>,
    nodes: &[ObservedNode],
    config: &NodeLossConfig,
    now: u64,
) -> NodeLoss {
    let mut out = NodeLoss::default();
    // Only a NotReady node loses pods (see `lost_at`).
    let down: HashMap<&str, &ObservedNode> = nodes.iter().filter(|n| !n.ready).map(|n| (n.name.as_str(), n)).collect();
    if down.is_empty() {
        return out;
    }
    for pod in pods {
        if !pod.phase.is_live() || pod.node_lost {
            continue;
        }
        let Some(node) = pod.node.as_deref().and_then(|n| down.get(n)) else { continue };
        let Some(at) = config.lost_at(node) else { continue };
        if now >= at {
            out.lost.push((pod.name.clone(), node.name.clone()));
        } else {
            out.next = Some(out.next.map_or(at, |n| n.min(at)));
        }
    }
    out
}

impl NodeLossConfig {
    /// When the pods of a NotReady node count as lost: its last heartbeat,
    /// plus the time to be marked NotReady, plus the toleration. `None` for
    /// a ready node, or one that never heartbeat (nothing ran there).
    pub fn lost_at(&self, node: &ObservedNode) -> Option<u64> {
        if node.ready {
            return None;
        }
        let last = node.last_heartbeat?;
        Some(last.saturating_add(self.heartbeat_timeout_secs).saturating_add(self.toleration_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::PodPhase;

    fn pod(name: &str, node: &str, phase: PodPhase) -> ObservedPod {
        ObservedPod {
            name: name.to_string(),
            slot: name.to_string(),
            role: "worker".to_string(),
            index: 0,
            generation: 0,
            job_version: 0,
            phase,
            exit_code: None,
            evicted: false,
            node_lost: false,
            phase_since: 0,
            deleting: false,
            node: Some(node.to_string()),
            devices: vec![0, 1],
            placement: None,
        }
    }

    fn node(name: &str, ready: bool, beat: Option<u64>) -> ObservedNode {
        ObservedNode { name: name.to_string(), ready, last_heartbeat: beat, ..ObservedNode::default() }
    }

    #[test]
    fn pods_of_a_silent_node_are_lost_after_timeout_plus_toleration() {
        let cfg = NodeLossConfig::default();
        let nodes = [node("up", true, Some(1_000)), node("down", false, Some(1_000)), node("never", false, None)];
        assert_eq!(cfg.lost_at(&nodes[0]), None, "a ready node loses nothing");
        assert_eq!(cfg.lost_at(&nodes[1]), Some(1_000 + 40 + 300), "as Kubernetes: 40 s grace, 300 s toleration");
        assert_eq!(cfg.lost_at(&nodes[2]), None, "never heard from: nothing ran there");

        let mut terminating = pod("c", "down", PodPhase::Running);
        terminating.deleting = true;
        let mut already = pod("d", "down", PodPhase::Failed);
        already.node_lost = true;
        let pods = [pod("a", "up", PodPhase::Running), pod("b", "down", PodPhase::Running), terminating, already, {
            pod("e", "down", PodPhase::Succeeded)
        }];
        let before = node_loss(&pods, &nodes, &cfg, 1_339);
        assert!(before.lost.is_empty(), "one second short of the toleration");
        assert_eq!(before.next, Some(1_340), "the controller wakes up when it ends");
        let after = node_loss(&pods, &nodes, &cfg, 1_340);
        let names: Vec<&str> = after.lost.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["b", "c"], "live and terminating pods of the lost node, nothing finished");
        assert!(after.lost.iter().all(|(_, n)| n == "down"));
        assert_eq!(after.next, None);

        let short = NodeLossConfig { heartbeat_timeout_secs: 1, toleration_secs: 2 };
        assert_eq!(node_loss(&pods, &nodes, &short, 1_003).lost.len(), 2, "tests scale it to seconds");
    }
}
