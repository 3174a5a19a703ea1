//! Expansion of a normalised job into its PodGroup and pods: names, labels,
//! annotations, hostnames — everything that does not depend on placement.
//!
//! Pod names follow the reference operators: `<job>-<role>-<index>`
//! (Kubeflow and acjob lower-case the replica type, Volcano uses the task
//! name), `<name>-<index>` for Deployment and batch Job. When a pod is
//! rescheduled (fault, restart) its *generation* grows. Kinds whose pod names
//! are addresses other pods dial (`MASTER_ADDR`, hostfile, `TF_CONFIG`,
//! `/etc/volcano/*.host`) keep the name, as Kubeflow, Volcano and the Ascend
//! Operator recreate pods under the same name; Deployment and batch Job pods,
//! whose names nobody dials (Kubernetes gives them random suffixes, which is
//! why the seed sees `resnetinfer1-2-scpr5` become `resnetinfer1-2-xsdsf`),
//! get `-v<job version>` / `-g<generation>` appended so each incarnation has
//! a new name.

use crate::extras::JobExtras;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ringleader_api::kinds::volcano::PodGroupSpec;
use ringleader_api::kinds::PodGroup;
use ringleader_api::model::{Job, JobKind, Role};
use ringleader_api::protected::annotation_owner;
use std::collections::BTreeMap;

/// Kubeflow label: job name.
pub const KF_JOB_NAME: &str = "training.kubeflow.org/job-name";
/// Kubeflow label: operator that owns the pod.
pub const KF_OPERATOR_NAME: &str = "training.kubeflow.org/operator-name";
/// Kubeflow label: replica type, lower-case.
pub const KF_REPLICA_TYPE: &str = "training.kubeflow.org/replica-type";
/// Kubeflow label: index within the replica type.
pub const KF_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";
/// Kubeflow label: `master` on the Master/Chief pod (MPI: `launcher`/`worker`).
pub const KF_JOB_ROLE: &str = "training.kubeflow.org/job-role";
/// Volcano label and annotation: job name.
pub const VC_JOB_NAME: &str = "volcano.sh/job-name";
/// Volcano label: job namespace.
pub const VC_JOB_NAMESPACE: &str = "volcano.sh/job-namespace";
/// Volcano label: queue.
pub const VC_QUEUE_NAME: &str = "volcano.sh/queue-name";
/// Volcano label and annotation: task name.
pub const VC_TASK_SPEC: &str = "volcano.sh/task-spec";
/// Volcano annotation: job version (restarts of the whole job).
pub const VC_JOB_VERSION: &str = "volcano.sh/job-version";
/// Annotation naming the PodGroup the pod is gang-scheduled with.
pub const GROUP_NAME: &str = "scheduling.k8s.io/group-name";
/// Annotation with the pod's rank for hccl.json (Ascend Operator, Volcano `hcclrank`).
pub const HCCL_RANK_INDEX: &str = "hccl/rankIndex";

/// One pod to create.
#[derive(Debug, Clone, PartialEq)]
pub struct PodPlan {
    /// Pod name (generation included where the kind renames, see the module doc).
    pub name: String,
    /// Name of the pod's slot, stable across generations: `<pod_prefix>-<index>`.
    pub slot: String,
    /// Role (replica type or task) as written.
    pub role: String,
    /// Index within the role.
    pub index: u32,
    /// Rank of the pod over the whole job (roles in rank order).
    pub rank: u32,
    /// Incarnation of the slot: 0 at creation, +1 per reschedule.
    pub generation: u32,
    /// `spec.hostname`, when the kind sets one.
    pub hostname: Option<String>,
    /// `spec.subdomain` (the headless service), when the kind sets one.
    pub subdomain: Option<String>,
    /// The pod template with the controller's labels and annotations merged in.
    pub template: PodTemplateSpec,
}

impl PodPlan {
    /// Labels of the pod.
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default()
    }

    /// Annotations of the pod.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.template.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default()
    }
}

/// Knobs of one expansion: the current size and the incarnation of each slot.
#[derive(Debug, Clone, Default)]
pub struct ExpandOptions {
    /// Replicas per role overriding the job's (elastic rescale).
    pub replicas: BTreeMap<String, u32>,
    /// Generation per slot (absent: 0).
    pub generations: BTreeMap<String, u32>,
    /// Job-level restarts so far (Volcano `volcano.sh/job-version`).
    pub job_version: u32,
}

/// The PodGroup and pods of a job.
#[derive(Debug, Clone)]
pub struct Expansion {
    /// The gang: `scheduling.volcano.sh/v1beta1` PodGroup.
    pub pod_group: PodGroup,
    /// Pods in rank order.
    pub pods: Vec<PodPlan>,
}

/// Name of the PodGroup of a job (the pods' `scheduling.k8s.io/group-name`).
pub fn pod_group_name(job: &Job) -> String {
    job.name.clone()
}

/// Name of the pod in `slot` at slot `generation` of job `version` (see the
/// module doc): Deployment and batch Job pods append `-v<version>` once the
/// job restarted and `-g<generation>` once the slot restarted.
pub fn pod_name(job: &Job, slot: &str, generation: u32, version: u32) -> String {
    if !job.kind.independent_replicas() {
        return slot.to_string();
    }
    let mut name = slot.to_string();
    if version > 0 {
        name.push_str(&format!("-v{version}"));
    }
    if generation > 0 {
        name.push_str(&format!("-g{generation}"));
    }
    name
}

/// Replicas of a role after any elastic override.
pub fn role_replicas(role: &Role, opts: &ExpandOptions) -> u32 {
    opts.replicas.get(&role.name).copied().unwrap_or(role.replicas)
}

/// Builds the PodGroup: minMember = the job's minAvailable (capped by the
/// current size), queue, priority class, and minTaskMember for Volcano tasks
/// that set one.
pub fn pod_group(job: &Job, opts: &ExpandOptions) -> PodGroup {
    let total: u32 = job.roles.iter().map(|r| role_replicas(r, opts)).sum();
    let min_task_member = job
        .roles
        .iter()
        .filter_map(|r| r.min_available.map(|m| (r.name.clone(), m.min(role_replicas(r, opts)) as i32)))
        .collect();
    PodGroup {
        api_version: "scheduling.volcano.sh/v1beta1".to_string(),
        kind: "PodGroup".to_string(),
        metadata: ObjectMeta {
            name: Some(pod_group_name(job)),
            namespace: Some(job.namespace.clone()),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            min_member: Some(job.scheduling.min_available.min(total) as i32),
            min_task_member,
            queue: Some(job.scheduling.queue.clone()),
            priority_class_name: job.scheduling.priority_class.clone(),
            min_resources: None,
            network_topology: None,
        },
        status: None,
    }
}

/// Expands a job into its PodGroup and pods.
pub fn expand(job: &Job, extras: &JobExtras, opts: &ExpandOptions) -> Expansion {
    let mut pods = Vec::new();
    let mut rank = 0u32;
    // hccl/rankIndex numbers only pods with chips, so a chipless MindSpore
    // Scheduler does not leave a gap in the rank table.
    let mut device_rank = 0u32;
    for role in &job.roles {
        let has_devices = role.device.as_ref().is_some_and(|d| d.count > 0);
        for index in 0..role_replicas(role, opts) {
            let slot = format!("{}-{index}", role.pod_prefix);
            let generation = opts.generations.get(&slot).copied().unwrap_or(0);
            let hccl_rank = has_devices.then_some(device_rank);
            pods.push(plan_pod(job, extras, opts, role, (index, rank, hccl_rank), slot, generation));
            rank += 1;
            device_rank += u32::from(has_devices);
        }
    }
    Expansion { pod_group: pod_group(job, opts), pods }
}

fn plan_pod(
    job: &Job,
    extras: &JobExtras,
    opts: &ExpandOptions,
    role: &Role,
    (index, rank, hccl_rank): (u32, u32, Option<u32>),
    slot: String,
    generation: u32,
) -> PodPlan {
    let name = pod_name(job, &slot, generation, opts.job_version);
    let mut template = role.template.clone();
    let meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    let mut labels = meta.labels.clone().unwrap_or_default();
    let mut annotations = meta.annotations.clone().unwrap_or_default();
    let lower = role.name.to_lowercase();
    let set = |m: &mut BTreeMap<String, String>, k: &str, v: String| {
        m.insert(k.to_string(), v);
    };
    let coordinator = matches!(role.name.as_str(), "Master" | "Chief" | "Scheduler");
    match job.kind {
        JobKind::PyTorchJob | JobKind::TfJob => {
            let operator = if job.kind == JobKind::PyTorchJob { "pytorchjob-controller" } else { "tfjob-controller" };
            set(&mut labels, KF_JOB_NAME, job.name.clone());
            set(&mut labels, KF_OPERATOR_NAME, operator.to_string());
            set(&mut labels, KF_REPLICA_TYPE, lower.clone());
            set(&mut labels, KF_REPLICA_INDEX, index.to_string());
            if coordinator {
                set(&mut labels, KF_JOB_ROLE, "master".to_string());
            }
        }
        JobKind::MpiJob => {
            set(&mut labels, KF_JOB_NAME, job.name.clone());
            set(&mut labels, KF_OPERATOR_NAME, "mpi-operator".to_string());
            set(&mut labels, KF_JOB_ROLE, lower.clone());
            if role.name != "Launcher" {
                set(&mut labels, KF_REPLICA_INDEX, index.to_string());
            }
        }
        JobKind::AscendJob => {
            // The Ascend Operator builds on kubeflow/common, which also sets the
            // short keys; the seed's anti-affinity selects on `job-name`.
            set(&mut labels, "group-name", "mindxdl.gitee.com".to_string());
            set(&mut labels, "job-name", job.name.clone());
            set(&mut labels, "replica-type", lower.clone());
            set(&mut labels, "replica-index", index.to_string());
            set(&mut labels, KF_JOB_NAME, job.name.clone());
            set(&mut labels, KF_OPERATOR_NAME, "ascendjob-controller".to_string());
            set(&mut labels, KF_REPLICA_TYPE, lower.clone());
            set(&mut labels, KF_REPLICA_INDEX, index.to_string());
            if coordinator {
                set(&mut labels, KF_JOB_ROLE, "master".to_string());
            }
            if let Some(r) = hccl_rank {
                set(&mut annotations, HCCL_RANK_INDEX, r.to_string());
            }
        }
        JobKind::VolcanoJob => {
            set(&mut labels, VC_JOB_NAME, job.name.clone());
            set(&mut labels, VC_JOB_NAMESPACE, job.namespace.clone());
            set(&mut labels, VC_QUEUE_NAME, job.scheduling.queue.clone());
            set(&mut labels, VC_TASK_SPEC, role.name.clone());
            set(&mut annotations, VC_JOB_NAME, job.name.clone());
            set(&mut annotations, VC_JOB_VERSION, opts.job_version.to_string());
            set(&mut annotations, VC_TASK_SPEC, role.name.clone());
            if let Some(r) = hccl_rank.filter(|_| extras.volcano_plugins.contains_key("hcclrank")) {
                set(&mut annotations, HCCL_RANK_INDEX, r.to_string());
            }
        }
        JobKind::BatchJob => {
            set(&mut labels, "job-name", job.name.clone());
            set(&mut labels, "batch.kubernetes.io/job-name", job.name.clone());
        }
        JobKind::Deployment => {
            if let Some(hash) = &extras.template_hash {
                set(&mut labels, ringleader_api::kinds::deployment::TEMPLATE_HASH, hash.clone());
            }
        }
    }
    set(&mut annotations, GROUP_NAME, pod_group_name(job));
    // The server refuses these in templates; a job stored before it did, or
    // written to the store directly, still must not bind its pods itself.
    annotations.retain(|k, _| annotation_owner(k).is_none());
    meta.name = Some(name.clone());
    meta.namespace = Some(job.namespace.clone());
    meta.labels = Some(labels);
    meta.annotations = Some(annotations);
    let (hostname, subdomain) = match job.kind {
        JobKind::Deployment | JobKind::BatchJob => (None, None),
        _ => (Some(name.clone()), Some(job.name.clone())),
    };
    if let Some(spec) = template.spec.as_mut() {
        spec.node_name = None;
        spec.hostname = hostname.clone();
        spec.subdomain = subdomain.clone();
    }
    PodPlan { name, slot, role: role.name.clone(), index, rank, generation, hostname, subdomain, template }
}
