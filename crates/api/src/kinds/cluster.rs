//! ringleader's own cluster-description kinds (`ringleader.io/v1alpha1`):
//! the nodes of a cluster file, with their hardware and what is in use.

use serde::{Deserialize, Serialize};

/// Where a node sits in the network.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeNetwork {
    /// Top-of-rack switch (HyperNode tier 1).
    pub tor: Option<String>,
    /// Spine / leaf group above the ToR (HyperNode tier 2).
    pub spine: Option<String>,
    /// Ascend SuperPoD.
    pub super_pod: Option<String>,
}

/// A node's hardware: a built-in profile, or the text of `nvidia-smi topo -m` / `npu-smi info`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// Built-in profile name (`ringleader profiles` lists them).
    pub profile: Option<String>,
    /// `nvidia-smi topo -m` output.
    pub topology_text: Option<String>,
    /// `npu-smi info` output.
    pub npu_smi_text: Option<String>,
    /// Network position.
    #[serde(default)]
    pub network: NodeNetwork,
    /// Node address (virtual nodes: `127.0.1.N`).
    pub address: Option<String>,
    /// Admin switch: the node is stopped (its agent kills its pods and stops
    /// heartbeating, as if the machine lost power), until set back to false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// Cordoned (`kubectl cordon`): no new pod is placed here; those
    /// running stay, until set back to false (`kubectl uncordon`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// Taints (`kubectl taint`): pods that do not tolerate a `NoSchedule`
    /// or `NoExecute` one are not placed here, and those of a `NoExecute`
    /// one are evicted (after their `tolerationSeconds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// Faults injected by `ringleader node fault`: the agent reports these
    /// devices as broken until recovered.
    #[serde(default, skip_serializing_if = "InjectedFaults::is_empty")]
    pub injected_faults: InjectedFaults,
}

/// Device faults injected by an operator (`ringleader node fault`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InjectedFaults {
    /// Devices reported unhealthy.
    #[serde(default)]
    pub unhealthy: Vec<u32>,
    /// Devices reported network-unhealthy.
    #[serde(default)]
    pub network: Vec<u32>,
}

impl InjectedFaults {
    /// No fault injected.
    pub fn is_empty(&self) -> bool {
        self.unhealthy.is_empty() && self.network.is_empty()
    }
}

/// Devices in use or broken on the node, by device ID.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// In use by workloads outside this plan.
    #[serde(default)]
    pub allocated_devices: Vec<u32>,
    /// Unhealthy: never allocated.
    #[serde(default)]
    pub unhealthy_devices: Vec<u32>,
    /// Network-unhealthy: not for multi-pod jobs.
    #[serde(default)]
    pub network_unhealthy_devices: Vec<u32>,
    /// Whether the node's agent is heartbeating (unset: a static cluster
    /// file, where every node counts as ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Last heartbeat, seconds since the Unix epoch (agent-written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<f64>,
    /// Where a standalone agent serves its pods' logs (the API server
    /// proxies `…/log` there, as kube-apiserver does to the kubelet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_endpoint: Option<AgentEndpoint>,
    /// Whether the agent gives pods addresses of their own (a CNI pod
    /// network; agent-written): a pod's address is then known only once its
    /// sandbox runs, so the controller names peers instead of addressing them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_network: Option<bool>,
}

/// A standalone agent's HTTPS endpoint (agent-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEndpoint {
    /// Base URL, e.g. `https://10.0.0.2:10250`.
    pub url: String,
    /// PEM of the CA that signed the agent's serving certificate: the API
    /// server trusts only it when it connects.
    pub ca_pem: String,
}

/// `ringleader.io/v1alpha1` Node.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// `ringleader.io/v1alpha1`.
    pub api_version: String,
    /// `Node`.
    pub kind: String,
    /// Name and labels.
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// Hardware and network.
    #[serde(default)]
    pub spec: NodeSpec,
    /// Devices in use or broken.
    #[serde(default)]
    pub status: NodeStatus,
}

/// One pod of a running workload: where it runs and on which devices.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPod {
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Node the pod runs on.
    pub node: Option<String>,
    /// Device IDs (as the node's profile numbers them) the pod holds.
    #[serde(default)]
    pub devices: Vec<u32>,
}

/// A job already running when the scheduler takes its snapshot.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// Queue it was admitted to (`default` when unset).
    pub queue: Option<String>,
    /// PriorityClass name.
    pub priority_class_name: Option<String>,
    /// Priority value, instead of a PriorityClass.
    pub priority: Option<i32>,
    /// A VIP job is never preempted.
    #[serde(default)]
    pub vip: bool,
    /// Its pods.
    #[serde(default)]
    pub pods: Vec<WorkloadPod>,
}
