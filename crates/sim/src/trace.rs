//! A loaded trace: the cluster's nodes and the workload's pods.

use ringleader_scheduler::nodeorder::{ModelId, NodeState, PodShape};

/// One node as the trace describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// Node name (`sn` column).
    pub name: String,
    /// Allocatable CPU in millicores.
    pub cpu_milli: u32,
    /// Allocatable memory in MiB.
    pub mem_mib: u64,
    /// Number of GPUs.
    pub gpus: u32,
    /// GPU model id into [`Cluster::models`] (None without GPUs).
    pub model: Option<ModelId>,
}

impl NodeSpec {
    /// The node with nothing allocated.
    pub fn empty_state(&self) -> NodeState {
        NodeState::new(self.cpu_milli, self.mem_mib, self.gpus as usize, self.model)
    }
}

/// The nodes of a trace and the GPU model names they use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cluster {
    /// Nodes in file order.
    pub nodes: Vec<NodeSpec>,
    /// GPU model names; a [`ModelId`] indexes this table.
    pub models: Vec<String>,
}

impl Cluster {
    /// Total GPU capacity in milli-GPU.
    pub fn gpu_capacity_milli(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum()
    }

    /// Total number of GPUs.
    pub fn gpu_count(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.gpus)).sum()
    }

    /// Id of a model name, if some node carries it.
    pub fn model_id(&self, name: &str) -> Option<ModelId> {
        self.models.iter().position(|m| m == name).and_then(|i| ModelId::try_from(i).ok())
    }
}

/// One pod of the workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRecord {
    /// Pod name.
    pub name: String,
    /// Its request.
    pub shape: PodShape,
    /// The `gpu_spec` text as written (empty: any model).
    pub spec: String,
    /// Arrival time in seconds, when the trace has one.
    pub creation: Option<u64>,
    /// Departure time in seconds, when the trace has one.
    pub deletion: Option<u64>,
}

/// The pods of a trace, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// Pods in file order.
    pub pods: Vec<PodRecord>,
}

impl Workload {
    /// Total GPU request in milli-GPU.
    pub fn gpu_request_milli(&self) -> u64 {
        self.pods.iter().map(|p| p.shape.total_gpu_milli()).sum()
    }
}
