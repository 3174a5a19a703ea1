//! Volcano kinds: `batch.volcano.sh/v1alpha1` Job (vcjob) and
//! `scheduling.volcano.sh/v1beta1` Queue and PodGroup.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A lifecycle policy: on an event (or exit code), take an action.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecyclePolicy {
    /// `RestartJob`, `RestartTask`, `RestartPod`, `AbortJob`, `CompleteJob`, `TerminateJob`.
    pub action: Option<String>,
    /// One event.
    pub event: Option<String>,
    /// Several events.
    #[serde(default)]
    pub events: Vec<String>,
    /// A container exit code (not 0); excludes `event`.
    pub exit_code: Option<i32>,
    /// How long to wait before acting, e.g. `10m`.
    pub timeout: Option<String>,
}

/// Network-topology constraint (HyperNode tiers).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopology {
    /// `hard` or `soft`.
    pub mode: Option<String>,
    /// Highest HyperNode tier the job may span (1 = one ToR).
    pub highest_tier_allowed: Option<i32>,
}

/// One task (role) of a vcjob.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Task name, used in pod names.
    #[serde(default)]
    pub name: String,
    /// Pods of this task.
    pub replicas: Option<i32>,
    /// Pods of this task that must start together.
    pub min_available: Option<i32>,
    /// Pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Task lifecycle policies (checked before the job's).
    #[serde(default)]
    pub policies: Vec<LifecyclePolicy>,
    /// Retries of this task.
    pub max_retry: Option<i32>,
    /// Sub-gangs: the task's pods in partitions, each placed whole.
    pub partition_policy: Option<PartitionPolicy>,
}

/// A task's partitions (Volcano `partitionPolicy`): `totalPartitions` groups
/// of `partitionSize` pods, each placed whole, inside one HyperNode when
/// `networkTopology` says so.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionPolicy {
    /// Partitions; times `partitionSize` must equal the task's replicas.
    pub total_partitions: Option<i32>,
    /// Pods per partition.
    pub partition_size: Option<i32>,
    /// Where each partition must lie.
    pub network_topology: Option<NetworkTopology>,
    /// Partitions that must be placed for the job to start (0: the job's minAvailable decides).
    pub min_partitions: Option<i32>,
}

/// `batch.volcano.sh/v1alpha1` Job spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoJobSpec {
    /// Normally `volcano`.
    pub scheduler_name: Option<String>,
    /// Pods that must start together.
    pub min_available: Option<i32>,
    /// Tasks.
    #[serde(default)]
    pub tasks: Vec<TaskSpec>,
    /// Job lifecycle policies.
    #[serde(default)]
    pub policies: Vec<LifecyclePolicy>,
    /// Plugins (`env`, `svc`, `ssh`, `pytorch`, `hcclrank` …) with their arguments.
    #[serde(default)]
    pub plugins: BTreeMap<String, Vec<String>>,
    /// Queue.
    pub queue: Option<String>,
    /// Restarts before the job fails (default 3).
    pub max_retry: Option<i32>,
    /// Seconds to keep a finished job.
    pub ttl_seconds_after_finished: Option<i32>,
    /// PriorityClass name.
    pub priority_class_name: Option<String>,
    /// Pods that must succeed for the job to succeed.
    pub min_success: Option<i32>,
    /// Network-topology constraint.
    pub network_topology: Option<NetworkTopology>,
}

/// Guaranteed resources of a queue.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Guarantee {
    /// Resource amounts.
    #[serde(default)]
    pub resource: BTreeMap<String, Quantity>,
}

/// `scheduling.volcano.sh/v1beta1` Queue spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Share of spare capacity (default 1).
    pub weight: Option<i32>,
    /// Upper bound of resources.
    #[serde(default)]
    pub capability: BTreeMap<String, Quantity>,
    /// Resources reserved for the queue.
    pub guarantee: Option<Guarantee>,
    /// Resources the queue deserves under contention.
    #[serde(default)]
    pub deserved: BTreeMap<String, Quantity>,
    /// Whether other queues may reclaim what it uses beyond its share.
    pub reclaimable: Option<bool>,
    /// Parent queue (hierarchical queues).
    pub parent: Option<String>,
    /// The platform ResourceGroup the queue belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
    /// The one platform Workspace that may use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Fixed quota as instance spec × count (the platform controller
    /// writes `capability` from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<QueueQuota>,
}

/// A queue's quota: `instanceCount` instances of `instanceSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueQuota {
    /// One instance's devices, CPU and memory.
    #[serde(default)]
    pub instance_spec: crate::kinds::platform::InstanceSpec,
    /// How many instances (at least 1).
    #[serde(default)]
    pub instance_count: i64,
}

/// `scheduling.volcano.sh/v1beta1` PodGroup spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Pods that must start together.
    pub min_member: Option<i32>,
    /// Per-task minimums.
    #[serde(default)]
    pub min_task_member: BTreeMap<String, i32>,
    /// Queue.
    pub queue: Option<String>,
    /// PriorityClass name.
    pub priority_class_name: Option<String>,
    /// Resources the gang needs before it is admitted.
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// Network-topology constraint.
    pub network_topology: Option<NetworkTopology>,
}
