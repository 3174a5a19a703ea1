//! Kubeflow training-operator kinds (`kubeflow.org/v1` PyTorchJob, TFJob) and
//! mpi-operator's `kubeflow.org/v2beta1` MPIJob, plus the pieces AscendJob shares.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One replica type (`Master`, `Worker`, …) of a Kubeflow-style job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Number of pods of this type (default 1).
    pub replicas: Option<i32>,
    /// `Always`, `OnFailure`, `Never` or `ExitCode`.
    pub restart_policy: Option<String>,
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
}

/// Gang-scheduling settings of `runPolicy.schedulingPolicy`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// Minimum pods to start together.
    pub min_available: Option<i32>,
    /// Volcano queue.
    pub queue: Option<String>,
    /// PriorityClass name.
    pub priority_class: Option<String>,
    /// Resources the gang needs before it is admitted.
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// Seconds a gang may wait for placement.
    pub schedule_timeout_seconds: Option<i32>,
}

/// Job-level run settings shared by the Kubeflow kinds and AscendJob.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPolicy {
    /// `All`, `Running` or `None`.
    pub clean_pod_policy: Option<String>,
    /// Seconds to keep a finished job.
    pub ttl_seconds_after_finished: Option<i32>,
    /// Seconds a job may run before it is failed.
    pub active_deadline_seconds: Option<i64>,
    /// Restarts allowed before the job fails.
    pub backoff_limit: Option<i32>,
    /// Gang settings.
    pub scheduling_policy: Option<SchedulingPolicy>,
    /// A suspended job creates no pods.
    pub suspend: Option<bool>,
}

/// `rdzvConf` entry of a PyTorch elastic policy.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RdzvConf {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default)]
    pub value: String,
}

/// PyTorch elastic training (`torchrun` rendezvous) settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElasticPolicy {
    /// Lower bound of nodes.
    pub min_replicas: Option<i32>,
    /// Upper bound of nodes.
    pub max_replicas: Option<i32>,
    /// `c10d`, `etcd` or `etcd-v2`.
    pub rdzv_backend: Option<String>,
    /// Rendezvous port.
    pub rdzv_port: Option<i32>,
    /// Rendezvous host.
    pub rdzv_host: Option<String>,
    /// Rendezvous ID.
    pub rdzv_id: Option<String>,
    /// Extra rendezvous settings.
    #[serde(default)]
    pub rdzv_conf: Vec<RdzvConf>,
    /// Processes per node.
    pub n_proc_per_node: Option<i32>,
    /// Worker-group restarts allowed.
    pub max_restarts: Option<i32>,
}

/// `kubeflow.org/v1` PyTorchJob spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PyTorchJobSpec {
    /// Run settings.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Elastic settings.
    pub elastic_policy: Option<ElasticPolicy>,
    /// `Master` and `Worker`.
    #[serde(default)]
    pub pytorch_replica_specs: BTreeMap<String, ReplicaSpec>,
    /// Processes per node (`auto`, `cpu`, `gpu` or a number).
    pub nproc_per_node: Option<String>,
}

/// `kubeflow.org/v1` TFJob spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TfJobSpec {
    /// Run settings.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// `AllWorkers` or `ChiefWorker` (default).
    pub success_policy: Option<String>,
    /// `Chief`, `PS`, `Worker`, `Evaluator`.
    #[serde(default)]
    pub tf_replica_specs: BTreeMap<String, ReplicaSpec>,
    /// Workers may join and leave.
    pub enable_dynamic_worker: Option<bool>,
}

/// `kubeflow.org/v2beta1` MPIJob spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MpiJobSpec {
    /// Slots per worker in the hostfile (default 1).
    pub slots_per_worker: Option<i32>,
    /// Run settings.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// `Launcher` and `Worker`.
    #[serde(default)]
    pub mpi_replica_specs: BTreeMap<String, ReplicaSpec>,
    /// Where the SSH keys are mounted.
    pub ssh_auth_mount_path: Option<String>,
    /// `OpenMPI` (default), `Intel` or `MPICH`.
    pub mpi_implementation: Option<String>,
    /// The launcher also runs a worker process.
    pub run_launcher_as_worker: Option<bool>,
    /// `AtStartup` or `WaitForWorkersReady`.
    pub launcher_creation_policy: Option<String>,
}
