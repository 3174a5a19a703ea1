//! A uniform view of the roles (replica types, tasks, replicas) of every job
//! kind, with the field path of each, so validation and normalisation walk
//! all kinds the same way.

use crate::kinds::kubeflow::ReplicaSpec;
use crate::kinds::Resource;
use crate::path;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use std::collections::BTreeMap;

/// One role of a job as written, before defaults.
#[derive(Debug, Clone)]
pub struct RoleSpec<'a> {
    /// Replica type (`Master`, `Worker`), Volcano task name, or `default`
    /// for Deployment and batch Job.
    pub name: &'a str,
    /// Field path of the role, e.g. `spec.replicaSpecs.Worker` or `spec.tasks[1]`.
    pub field: String,
    /// Pods requested, as written.
    pub replicas: Option<i32>,
    /// Field path of the replica count (`spec.parallelism` for a batch Job).
    pub replicas_field: String,
    /// Role-level restart policy, as written.
    pub restart_policy: Option<&'a str>,
    /// Role-level minAvailable (Volcano tasks).
    pub min_available: Option<i32>,
    /// The pod template.
    pub template: &'a PodTemplateSpec,
    /// Prefix of pod names: pod `i` is `<pod_prefix>-<i>`.
    pub pod_prefix: String,
    /// Volcano `partitionPolicy` of the task.
    pub partition_policy: Option<&'a crate::kinds::volcano::PartitionPolicy>,
}

/// Roles whose replicas may be at most 1.
pub const SINGLETON_ROLES: &[&str] = &["Master", "Chief", "Scheduler", "Launcher"];

/// Where a role comes first in rank order: the coordinator roles, then PS, then workers.
pub fn rank_order(name: &str) -> u8 {
    match name {
        "Master" | "Chief" | "Scheduler" | "Launcher" => 0,
        "PS" => 1,
        "Worker" => 2,
        "Evaluator" => 3,
        _ => 4,
    }
}

fn kubeflow_roles<'a>(job: &str, field: &str, specs: &'a BTreeMap<String, ReplicaSpec>) -> Vec<RoleSpec<'a>> {
    let mut roles: Vec<RoleSpec<'a>> = specs
        .iter()
        .map(|(name, spec)| RoleSpec {
            name,
            field: path::key(field, name),
            replicas: spec.replicas,
            replicas_field: path::key(&path::key(field, name), "replicas"),
            restart_policy: spec.restart_policy.as_deref(),
            min_available: None,
            template: &spec.template,
            pod_prefix: format!("{job}-{}", name.to_lowercase()),
            partition_policy: None,
        })
        .collect();
    roles.sort_by_key(|r| rank_order(r.name));
    roles
}

/// The one role of a Deployment or batch Job: pods `<name>-<i>`, `replicas`
/// (default 1) read from `replicas_field`.
fn single_role<'a>(
    job: &str,
    template: &'a PodTemplateSpec,
    replicas: Option<i32>,
    replicas_field: &str,
) -> RoleSpec<'a> {
    RoleSpec {
        name: "default",
        field: "spec".to_string(),
        replicas: Some(replicas.unwrap_or(1)),
        replicas_field: replicas_field.to_string(),
        restart_policy: None,
        min_available: None,
        template,
        pod_prefix: job.to_string(),
        partition_policy: None,
    }
}

impl Resource {
    /// The roles of a job kind in rank order; empty for non-job kinds.
    pub fn roles(&self) -> Vec<RoleSpec<'_>> {
        let job = self.name();
        match self {
            Resource::AscendJob(o) => kubeflow_roles(job, "spec.replicaSpecs", &o.spec.replica_specs),
            Resource::PyTorchJob(o) => kubeflow_roles(job, "spec.pytorchReplicaSpecs", &o.spec.pytorch_replica_specs),
            Resource::TfJob(o) => kubeflow_roles(job, "spec.tfReplicaSpecs", &o.spec.tf_replica_specs),
            Resource::MpiJob(o) => kubeflow_roles(job, "spec.mpiReplicaSpecs", &o.spec.mpi_replica_specs),
            Resource::VolcanoJob(o) => o
                .spec
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| RoleSpec {
                    name: &t.name,
                    field: path::index("spec.tasks", i),
                    replicas: t.replicas,
                    replicas_field: path::key(&path::index("spec.tasks", i), "replicas"),
                    restart_policy: None,
                    min_available: t.min_available,
                    template: &t.template,
                    pod_prefix: format!("{job}-{}", t.name),
                    partition_policy: t.partition_policy.as_ref(),
                })
                .collect(),
            Resource::Deployment(d) => d
                .spec
                .as_ref()
                .map(|spec| single_role(job, &spec.template, spec.replicas, "spec.replicas"))
                .into_iter()
                .collect(),
            Resource::BatchJob(j) => j
                .spec
                .as_ref()
                .map(|spec| single_role(job, &spec.template, spec.parallelism, "spec.parallelism"))
                .into_iter()
                .collect(),
            Resource::ConfigMap(_)
            | Resource::Secret(_)
            | Resource::Queue(_)
            | Resource::PodGroup(_)
            | Resource::Node(_)
            | Resource::Workload(_)
            | Resource::PriorityClass(_)
            | Resource::ResourceGroup(_)
            | Resource::Workspace(_)
            | Resource::TrainingJob(_)
            | Resource::Run(_)
            | Resource::Dataset(_)
            | Resource::Image(_)
            | Resource::StorageMount(_)
            | Resource::Script(_)
            | Resource::ScriptRun(_)
            | Resource::AuditRecord(_)
            | Resource::PlatformNode(_)
            | Resource::CheckRun(_) => Vec::new(),
        }
    }

    /// Whether the object is a job kind (creates pods).
    pub fn is_job(&self) -> bool {
        !matches!(
            self,
            Resource::ConfigMap(_)
                | Resource::Secret(_)
                | Resource::Queue(_)
                | Resource::PodGroup(_)
                | Resource::Node(_)
                | Resource::Workload(_)
                | Resource::PriorityClass(_)
                | Resource::CheckRun(_)
        ) && !self.is_platform()
    }
}
