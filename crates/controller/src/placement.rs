//! Where the scheduler put each pod: the input of every placement-dependent
//! value (addresses, visible devices, hostfile, rank tables).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One accelerator given to a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedDevice {
    /// Physical device ID on the node (`Ascend910-3` → 3, GPU index).
    pub id: u32,
    /// NPU RoCE address (`device_ip` in hccl.json), when the node reports it.
    pub device_ip: Option<String>,
    /// SuperPoD-wide device ID (A3), when the node reports it.
    pub super_device_id: Option<String>,
}

/// Where one pod runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodPlacement {
    /// Node name.
    pub node: String,
    /// Address of the node.
    pub host_ip: String,
    /// Address of the pod (equals `host_ip` with host networking).
    pub pod_ip: String,
    /// Devices in the order the pod sees them.
    pub devices: Vec<PlacedDevice>,
    /// SuperPoD of the node (A3 SuperPoD only).
    pub super_pod_id: Option<String>,
    /// The rendezvous port this pod listens on, as [`crate::ports::assign`]
    /// chose it on the pod's address; `None`: not chosen (the job's declared
    /// or default port stands), or the pod listens on none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// Placements by pod name. A pod missing here is not placed yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Pod name → placement.
    pub pods: BTreeMap<String, PodPlacement>,
}

impl Placement {
    /// The placement of one pod, if it has one.
    pub fn pod(&self, name: &str) -> Option<&PodPlacement> {
        self.pods.get(name)
    }

    /// Comma-separated device IDs of a pod, or `None` when it has none.
    pub fn device_list(&self, name: &str) -> Option<String> {
        let p = self.pods.get(name)?;
        if p.devices.is_empty() {
            return None;
        }
        Some(p.devices.iter().map(|d| d.id.to_string()).collect::<Vec<_>>().join(","))
    }
}
