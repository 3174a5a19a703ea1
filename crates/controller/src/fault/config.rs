//! What fault handling is configured with and names: the grace period of
//! fault-deleted pods, node-loss timings, a device of a node, the kinds of
//! fault.

use serde::Serialize;

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

/// Seconds a pod may stay on a NotReady node before it counts as lost
/// (Kubernetes' default `node.kubernetes.io/not-ready` toleration).
pub const DEFAULT_NOT_READY_TOLERATION_SECS: u64 = 300;

/// Seconds without a heartbeat before the manager marks a node NotReady.
pub const DEFAULT_HEARTBEAT_TIMEOUT_SECS: u64 = 40;

/// When pods on a silent node are given up for lost. Jobs without a
/// `fault-scheduling` label (and not elastic) are handled this way; the
/// labelled ones move as soon as the node is NotReady.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLossConfig {
    /// Silence after which a node is NotReady (the manager's heartbeat timeout).
    pub heartbeat_timeout_secs: u64,
    /// How long pods tolerate a NotReady node.
    pub toleration_secs: u64,
}

impl Default for NodeLossConfig {
    fn default() -> Self {
        NodeLossConfig {
            heartbeat_timeout_secs: DEFAULT_HEARTBEAT_TIMEOUT_SECS,
            toleration_secs: DEFAULT_NOT_READY_TOLERATION_SECS,
        }
    }
}
