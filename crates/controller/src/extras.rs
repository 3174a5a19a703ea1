//! Kind-specific fields the normalised [`Job`](ringleader_api::Job) model
//! leaves out but env vars and lifecycle need (MPI slots, PyTorch rendezvous,
//! Volcano plugins and task policies, the job UID).

use ringleader_api::kinds::kubeflow::ElasticPolicy;
use ringleader_api::kinds::volcano::LifecyclePolicy;
use ringleader_api::Resource;
use std::collections::BTreeMap;

/// MPI flavour of an MPIJob (`mpiImplementation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MpiImplementation {
    /// OpenMPI (default): hostfile lines `<host> slots=N`.
    #[default]
    OpenMpi,
    /// Intel MPI: hostfile lines `<host>:N`.
    Intel,
    /// MPICH: hostfile lines `<host>:N`.
    Mpich,
}

/// Fields of the typed object the controller needs beyond [`ringleader_api::Job`].
#[derive(Debug, Clone, Default)]
pub struct JobExtras {
    /// `metadata.uid`, when the object has one (`MINDX_TASK_ID`).
    pub uid: Option<String>,
    /// MPIJob `slotsPerWorker` (default 1).
    pub slots_per_worker: u32,
    /// MPIJob `mpiImplementation`.
    pub mpi_implementation: MpiImplementation,
    /// MPIJob `sshAuthMountPath`.
    pub ssh_auth_mount_path: Option<String>,
    /// PyTorchJob `nprocPerNode` as written (`auto` when unset).
    pub nproc_per_node: Option<String>,
    /// PyTorchJob `elasticPolicy`.
    pub pytorch_elastic: Option<ElasticPolicy>,
    /// Volcano `plugins` (`env`, `svc`, `ssh`, `pytorch`, `hcclrank`) with their arguments.
    pub volcano_plugins: BTreeMap<String, Vec<String>>,
    /// Volcano task policies by task name (checked before job policies).
    pub task_policies: BTreeMap<String, Vec<LifecyclePolicy>>,
    /// Kubeflow `runPolicy.suspend`: pods are removed and none created.
    pub suspended: bool,
    /// Deployment: the `pod-template-hash` of its template (the revision
    /// its pods should be of).
    pub template_hash: Option<String>,
    /// Deployment `spec.paused`: no new revision rolls out.
    pub paused: bool,
}

impl JobExtras {
    /// Reads the extras of a typed job; defaults for other kinds.
    pub fn from_resource(resource: &Resource) -> JobExtras {
        let mut extras =
            JobExtras { uid: resource.metadata().uid.clone(), slots_per_worker: 1, ..JobExtras::default() };
        extras.suspended = match resource {
            Resource::AscendJob(o) => o.spec.run_policy.suspend,
            Resource::PyTorchJob(o) => o.spec.run_policy.suspend,
            Resource::TfJob(o) => o.spec.run_policy.suspend,
            Resource::MpiJob(o) => o.spec.run_policy.suspend,
            _ => None,
        }
        .unwrap_or(false);
        match resource {
            Resource::MpiJob(o) => {
                extras.slots_per_worker = o.spec.slots_per_worker.unwrap_or(1).max(1) as u32;
                extras.ssh_auth_mount_path = o.spec.ssh_auth_mount_path.clone();
                extras.mpi_implementation = match o.spec.mpi_implementation.as_deref() {
                    Some("Intel") => MpiImplementation::Intel,
                    Some("MPICH") => MpiImplementation::Mpich,
                    _ => MpiImplementation::OpenMpi,
                };
            }
            Resource::PyTorchJob(o) => {
                extras.nproc_per_node = o
                    .spec
                    .nproc_per_node
                    .clone()
                    .or_else(|| o.spec.elastic_policy.as_ref()?.n_proc_per_node.map(|n| n.to_string()));
                extras.pytorch_elastic = o.spec.elastic_policy.clone();
            }
            Resource::VolcanoJob(o) => {
                extras.volcano_plugins = o.spec.plugins.clone();
                extras.task_policies = o
                    .spec
                    .tasks
                    .iter()
                    .filter(|t| !t.policies.is_empty())
                    .map(|t| (t.name.clone(), t.policies.clone()))
                    .collect();
            }
            Resource::Deployment(d) => {
                let spec = d.spec.as_ref();
                extras.template_hash = spec.map(|s| ringleader_api::kinds::deployment::template_hash(&s.template));
                extras.paused = spec.and_then(|s| s.paused).unwrap_or(false);
            }
            _ => {}
        }
        extras
    }
}
