//! The one internal job model every job kind normalises into. The controller
//! and the scheduler read only this, never the kind-specific objects.

use crate::ascend as keys;
use crate::devices::{self, DeviceRequest};
use crate::kinds::kubeflow::RunPolicy;
use crate::kinds::volcano::LifecyclePolicy;
use crate::kinds::Resource;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::Serialize;
use std::collections::BTreeMap;

/// Which kind the job was submitted as (decides names, env and status shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum JobKind {
    /// MindCluster AscendJob.
    AscendJob,
    /// Kubeflow PyTorchJob.
    PyTorchJob,
    /// Kubeflow TFJob.
    TfJob,
    /// Kubeflow MPIJob.
    MpiJob,
    /// Volcano Job.
    VolcanoJob,
    /// Deployment (inference; never completes).
    Deployment,
    /// batch/v1 Job.
    BatchJob,
}

impl JobKind {
    /// A Deployment's or batch Job's pods: replicas that each work alone,
    /// made and replaced one by one, not a gang that lives and dies whole.
    pub fn independent_replicas(self) -> bool {
        matches!(self, JobKind::Deployment | JobKind::BatchJob)
    }
}

/// Training framework, where the kind says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// PyTorch.
    PyTorch,
    /// MindSpore.
    MindSpore,
    /// TensorFlow.
    TensorFlow,
    /// MPI.
    Mpi,
}

impl Framework {
    /// The `framework` label of acjob and vcjob (`pytorch`, `mindspore`, `tensorflow`).
    pub fn from_label(label: &str) -> Option<Framework> {
        match label {
            "pytorch" => Some(Framework::PyTorch),
            "mindspore" => Some(Framework::MindSpore),
            "tensorflow" => Some(Framework::TensorFlow),
            _ => None,
        }
    }
}

/// Pod restart policy, including Kubeflow's `ExitCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RestartPolicy {
    /// Always restart.
    Always,
    /// Restart on failure.
    OnFailure,
    /// Never restart.
    Never,
    /// Exit 1–127 permanent, 128–255 retryable.
    ExitCode,
}

impl RestartPolicy {
    /// Parses the YAML spelling.
    pub fn parse(s: &str) -> Option<RestartPolicy> {
        match s {
            "Always" => Some(RestartPolicy::Always),
            "OnFailure" => Some(RestartPolicy::OnFailure),
            "Never" => Some(RestartPolicy::Never),
            "ExitCode" => Some(RestartPolicy::ExitCode),
            _ => None,
        }
    }
}

/// One role of a job with defaults applied.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Role {
    /// Replica type or task name.
    pub name: String,
    /// Pods of this role.
    pub replicas: u32,
    /// Pods of this role that must start together, if the kind says.
    pub min_available: Option<u32>,
    /// Restart policy of its pods.
    pub restart_policy: RestartPolicy,
    /// The accelerators each pod asks for.
    pub device: Option<DeviceRequest>,
    /// Prefix of pod names.
    pub pod_prefix: String,
    /// Pod template.
    pub template: PodTemplateSpec,
    /// Sub-gangs (Volcano `partitionPolicy`): pods in partitions placed whole.
    pub partitions: Option<Partitions>,
}

/// A role's pods in partitions of `size`, each placed whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Partitions {
    /// Pods per partition.
    pub size: u32,
    /// Partitions that must be placed (0: the job's minAvailable decides).
    pub min: u32,
    /// Where each partition must lie.
    pub network_topology: Option<NetworkTopologyConstraint>,
}

/// Where and with whom the job is scheduled.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// Queue (`default` when unset).
    pub queue: String,
    /// Pods that must be placed together.
    pub min_available: u32,
    /// PriorityClass name.
    pub priority_class: Option<String>,
    /// Scheduler that owns the job.
    pub scheduler_name: Option<String>,
}

/// How faults are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultScheduling {
    /// Graceful delete, forced after a grace period.
    Grace,
    /// Immediate forced delete.
    Force,
}

/// Elastic bounds, in replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Elastic {
    /// Fewest replicas the job may run with.
    pub min_replicas: u32,
    /// Most replicas.
    pub max_replicas: u32,
}

/// `runPolicy.cleanPodPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CleanPodPolicy {
    /// Delete all pods when the job ends.
    All,
    /// Delete running pods.
    Running,
    /// Keep pods.
    None,
}

/// Restart limits, deadlines and fault handling.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultPolicy {
    /// Restarts allowed (Kubeflow `backoffLimit`, Volcano `maxRetry`).
    pub backoff_limit: Option<u32>,
    /// `fault-scheduling` label.
    pub fault_scheduling: Option<FaultScheduling>,
    /// `huawei.com/recover_policy_path: pod`.
    pub pod_level_recovery: bool,
    /// Elastic training bounds.
    pub elastic: Option<Elastic>,
    /// Seconds the job may run.
    pub active_deadline_seconds: Option<u64>,
    /// Seconds a finished job is kept.
    pub ttl_seconds_after_finished: Option<u64>,
    /// Which pods to delete at the end.
    pub clean_pod_policy: CleanPodPolicy,
    /// Volcano lifecycle policies of the job.
    pub policies: Vec<LifecyclePolicy>,
}

/// Volcano network-topology constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologyConstraint {
    /// `hard`: stay pending rather than span more tiers.
    pub hard: bool,
    /// Highest HyperNode tier the job may span.
    pub highest_tier_allowed: Option<u32>,
}

/// Topology constraints from labels, annotations and spec fields.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyConstraints {
    /// `huawei.com/schedule_policy`.
    pub schedule_policy: Option<String>,
    /// `accelerator-type` node selector.
    pub accelerator_type: Option<String>,
    /// `host-arch` node selector.
    pub host_arch: Option<String>,
    /// `ring-controller.atlas`.
    pub ring_controller: Option<String>,
    /// `sp-block` in chips.
    pub sp_block: Option<u32>,
    /// `tor-affinity`.
    pub tor_affinity: Option<String>,
    /// `super-pod-affinity`.
    pub super_pod_affinity: Option<String>,
    /// ACK `gpu-topology` label (the job name).
    pub gpu_topology: Option<String>,
    /// ACK `gpu-topology-replica`.
    pub gpu_topology_replica: Option<u32>,
    /// Volcano `networkTopology`.
    pub network_topology: Option<NetworkTopologyConstraint>,
}

/// When the job has succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SuccessPolicy {
    /// The kind's default (acjob: one pod; Kubeflow: master/chief/workers; Volcano: minAvailable).
    Default,
    /// Every worker must succeed.
    AllWorkers,
    /// At least this many pods must succeed (Volcano `minSuccess`).
    MinSuccess(u32),
}

impl SuccessPolicy {
    /// The `successPolicy` field of acjob and TFJob: `AllWorkers`, else the default.
    pub fn from_field(field: Option<&str>) -> SuccessPolicy {
        if field == Some("AllWorkers") {
            SuccessPolicy::AllWorkers
        } else {
            SuccessPolicy::Default
        }
    }
}

/// A job of any kind, normalised.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Submitted kind.
    pub kind: JobKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Labels of the job object.
    pub labels: BTreeMap<String, String>,
    /// Annotations of the job object.
    pub annotations: BTreeMap<String, String>,
    /// Framework, where known.
    pub framework: Option<Framework>,
    /// Roles in rank order.
    pub roles: Vec<Role>,
    /// Queue, gang, priority.
    pub scheduling: SchedulingPolicy,
    /// Restarts and faults.
    pub fault: FaultPolicy,
    /// Topology constraints.
    pub topology: TopologyConstraints,
    /// Success rule.
    pub success: SuccessPolicy,
}

impl Job {
    /// Normalises a job kind; `None` for ConfigMap, Queue and PodGroup.
    /// Call after validation: invalid values fall back to defaults here.
    pub fn from_resource(resource: &Resource) -> Option<Job> {
        if !resource.is_job() {
            return None;
        }
        let meta = resource.metadata();
        let labels = meta.labels.clone().unwrap_or_default();
        let annotations = meta.annotations.clone().unwrap_or_default();
        let kind = match resource {
            Resource::AscendJob(_) => JobKind::AscendJob,
            Resource::PyTorchJob(_) => JobKind::PyTorchJob,
            Resource::TfJob(_) => JobKind::TfJob,
            Resource::MpiJob(_) => JobKind::MpiJob,
            Resource::VolcanoJob(_) => JobKind::VolcanoJob,
            Resource::Deployment(_) => JobKind::Deployment,
            _ => JobKind::BatchJob,
        };
        let default_restart = match kind {
            JobKind::AscendJob | JobKind::TfJob => RestartPolicy::Never,
            JobKind::PyTorchJob => RestartPolicy::OnFailure,
            JobKind::Deployment => RestartPolicy::Always,
            _ => RestartPolicy::Never,
        };
        let roles: Vec<Role> = resource
            .roles()
            .into_iter()
            .map(|r| {
                let pod_restart = r.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
                let restart_policy =
                    r.restart_policy.or(pod_restart).and_then(RestartPolicy::parse).unwrap_or(match (kind, r.name) {
                        (JobKind::MpiJob, "Launcher") => RestartPolicy::OnFailure,
                        _ => default_restart,
                    });
                Role {
                    name: r.name.to_string(),
                    replicas: r.replicas.unwrap_or(1).max(0) as u32,
                    min_available: r.min_available.map(|m| m.max(0) as u32),
                    restart_policy,
                    device: devices::pod_request(r.template),
                    pod_prefix: r.pod_prefix,
                    template: r.template.clone(),
                    partitions: r.partition_policy.and_then(|pp| {
                        Some(Partitions {
                            size: u32::try_from(pp.partition_size?).ok().filter(|s| *s > 0)?,
                            min: pp.min_partitions.unwrap_or(0).max(0) as u32,
                            network_topology: pp.network_topology.as_ref().map(|n| NetworkTopologyConstraint {
                                hard: n.mode.as_deref() != Some("soft"),
                                highest_tier_allowed: n.highest_tier_allowed.map(|t| t.max(0) as u32),
                            }),
                        })
                    }),
                }
            })
            .collect();
        let total = roles.iter().fold(0u32, |acc, r| acc.saturating_add(r.replicas));
        let label = |k: &str| labels.get(k).cloned();
        let annotation = |k: &str| annotations.get(k).cloned();
        let selector =
            |k: &str| roles.iter().find_map(|r| r.template.spec.as_ref()?.node_selector.as_ref()?.get(k).cloned());

        let (run_policy, framework, success, min_available, queue, priority, scheduler) = match resource {
            Resource::AscendJob(o) => (
                Some(&o.spec.run_policy),
                label(keys::FRAMEWORK).and_then(|f| Framework::from_label(&f)),
                SuccessPolicy::from_field(o.spec.success_policy.as_deref()),
                None,
                None,
                None,
                o.spec.scheduler_name.clone(),
            ),
            Resource::PyTorchJob(o) => {
                (Some(&o.spec.run_policy), Some(Framework::PyTorch), SuccessPolicy::Default, None, None, None, None)
            }
            Resource::TfJob(o) => (
                Some(&o.spec.run_policy),
                Some(Framework::TensorFlow),
                SuccessPolicy::from_field(o.spec.success_policy.as_deref()),
                None,
                None,
                None,
                None,
            ),
            Resource::MpiJob(o) => {
                (Some(&o.spec.run_policy), Some(Framework::Mpi), SuccessPolicy::Default, None, None, None, None)
            }
            Resource::VolcanoJob(o) => (
                None,
                label(keys::FRAMEWORK).and_then(|f| Framework::from_label(&f)),
                o.spec
                    .min_success
                    .map(|m| SuccessPolicy::MinSuccess(m.max(0) as u32))
                    .unwrap_or(SuccessPolicy::Default),
                o.spec.min_available.map(|m| m.max(0) as u32),
                o.spec.queue.clone(),
                o.spec.priority_class_name.clone(),
                o.spec.scheduler_name.clone(),
            ),
            _ => (None, None, SuccessPolicy::Default, None, None, None, None),
        };
        let sched = run_policy.and_then(|p| p.scheduling_policy.as_ref());
        // MindCluster's own key beats the Kubeflow run policy: the seeds'
        // AscendJobs carry both, and the annotation is the one Ascend
        // Operator and the Volcano plugin read. It is on the job or, as the
        // seeds' inference examples put it, on a pod template.
        let schedule_min = annotation(keys::SCHEDULE_MIN_AVAILABLE)
            .or_else(|| {
                roles.iter().find_map(|r| {
                    r.template.metadata.as_ref()?.annotations.as_ref()?.get(keys::SCHEDULE_MIN_AVAILABLE).cloned()
                })
            })
            .and_then(|v| v.trim().parse::<u32>().ok());
        let min_available = min_available
            .or(schedule_min)
            .or_else(|| sched.and_then(|s| s.min_available).map(|m| m.max(0) as u32))
            .unwrap_or(total);
        let queue = queue
            .or_else(|| sched.and_then(|s| s.queue.clone()))
            .or_else(|| annotation("scheduling.volcano.sh/queue-name"))
            .unwrap_or_else(|| "default".to_string());
        let priority_class = priority
            .or_else(|| sched.and_then(|s| s.priority_class.clone()))
            .or_else(|| roles.iter().find_map(|r| r.template.spec.as_ref()?.priority_class_name.clone()));

        let fault = fault_policy(resource, run_policy, &labels, &annotations, total);
        let network_topology = match resource {
            Resource::VolcanoJob(o) => o.spec.network_topology.as_ref().map(|n| NetworkTopologyConstraint {
                hard: n.mode.as_deref() != Some("soft"),
                highest_tier_allowed: n.highest_tier_allowed.map(|t| t.max(0) as u32),
            }),
            _ => None,
        };
        let pod_label =
            |k: &str| roles.iter().find_map(|r| r.template.metadata.as_ref()?.labels.as_ref()?.get(k).cloned());
        let topology = TopologyConstraints {
            schedule_policy: annotation(keys::SCHEDULE_POLICY),
            accelerator_type: selector(keys::ACCELERATOR_TYPE),
            host_arch: selector(keys::HOST_ARCH),
            ring_controller: label(keys::RING_CONTROLLER).or_else(|| pod_label(keys::RING_CONTROLLER)),
            sp_block: annotation(keys::SP_BLOCK).and_then(|v| v.parse().ok()),
            tor_affinity: label(keys::TOR_AFFINITY),
            super_pod_affinity: label(keys::SUPER_POD_AFFINITY),
            gpu_topology: pod_label("gpu-topology").or_else(|| label("gpu-topology")),
            gpu_topology_replica: pod_label("gpu-topology-replica")
                .or_else(|| label("gpu-topology-replica"))
                .and_then(|v| v.parse().ok()),
            network_topology,
        };
        Some(Job {
            kind,
            namespace: resource.namespace().to_string(),
            name: resource.name().to_string(),
            labels,
            annotations,
            framework,
            roles,
            scheduling: SchedulingPolicy { queue, min_available, priority_class, scheduler_name: scheduler },
            fault,
            topology,
            success,
        })
    }

    /// Every pod the job creates, in rank order: `<job>-<role>-<index>`
    /// (Kubeflow and acjob lower-case the replica type; Volcano uses the task
    /// name; Deployment and batch Job `<name>-<index>`).
    pub fn pod_names(&self) -> Vec<String> {
        self.roles.iter().flat_map(|r| (0..r.replicas).map(move |i| format!("{}-{i}", r.pod_prefix))).collect()
    }

    /// Total pods over all roles.
    pub fn total_replicas(&self) -> u32 {
        self.roles.iter().fold(0u32, |acc, r| acc.saturating_add(r.replicas))
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

fn fault_policy(
    resource: &Resource,
    run_policy: Option<&RunPolicy>,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    total: u32,
) -> FaultPolicy {
    let elastic = match resource {
        Resource::PyTorchJob(o) => o.spec.elastic_policy.as_ref().map(|e| Elastic {
            min_replicas: e.min_replicas.unwrap_or(1).max(0) as u32,
            max_replicas: e.max_replicas.map(|m| m.max(0) as u32).unwrap_or(total),
        }),
        _ if labels.get(keys::ELASTIC_SCHEDULING).map(String::as_str) == Some("on") => Some(Elastic {
            min_replicas: annotations.get(keys::MIN_REPLICAS).and_then(|v| v.parse().ok()).unwrap_or(1),
            max_replicas: total,
        }),
        _ => None,
    };
    let (backoff_limit, ttl, policies) = match resource {
        Resource::VolcanoJob(o) => (
            Some(o.spec.max_retry.unwrap_or(3).max(0) as u32),
            o.spec.ttl_seconds_after_finished.map(|t| t.max(0) as u64),
            o.spec.policies.clone(),
        ),
        Resource::BatchJob(j) => (
            Some(j.spec.as_ref().and_then(|s| s.backoff_limit).unwrap_or(6).max(0) as u32),
            j.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished).map(|t| t.max(0) as u64),
            Vec::new(),
        ),
        _ => (
            run_policy.and_then(|p| p.backoff_limit).map(|b| b.max(0) as u32),
            run_policy.and_then(|p| p.ttl_seconds_after_finished).map(|t| t.max(0) as u64),
            Vec::new(),
        ),
    };
    let active_deadline_seconds = match resource {
        Resource::BatchJob(j) => j.spec.as_ref().and_then(|s| s.active_deadline_seconds),
        _ => run_policy.and_then(|p| p.active_deadline_seconds),
    }
    .map(|d| d.max(0) as u64);
    let clean_pod_policy = match run_policy.and_then(|p| p.clean_pod_policy.as_deref()) {
        Some("All") => CleanPodPolicy::All,
        Some("Running") => CleanPodPolicy::Running,
        _ => CleanPodPolicy::None,
    };
    FaultPolicy {
        backoff_limit,
        // Seed 000 puts the switch on the job, or (its inference
        // Deployments) in the pod template's labels.
        fault_scheduling: labels
            .get(keys::FAULT_SCHEDULING)
            .cloned()
            .or_else(|| {
                resource
                    .roles()
                    .iter()
                    .find_map(|r| r.template.metadata.as_ref()?.labels.as_ref()?.get(keys::FAULT_SCHEDULING).cloned())
            })
            .and_then(|v| match v.as_str() {
                "grace" => Some(FaultScheduling::Grace),
                "force" => Some(FaultScheduling::Force),
                _ => None,
            }),
        pod_level_recovery: annotations.get(keys::RECOVER_POLICY_PATH).map(String::as_str) == Some("pod"),
        elastic,
        active_deadline_seconds,
        ttl_seconds_after_finished: ttl,
        clean_pod_policy,
        policies,
    }
}
