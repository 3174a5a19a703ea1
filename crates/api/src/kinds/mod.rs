//! Typed objects of every kind ringleader accepts, and dispatch on
//! `apiVersion` + `kind`. Core Kubernetes kinds come from `k8s-openapi`, so
//! any valid pod template round-trips; job CRDs are defined here.

pub mod ascend;
pub mod check;
pub mod cluster;
pub mod deployment;
pub mod disruption;
pub mod kubeflow;
pub mod namespace;
mod object;
pub mod platform;
pub mod service;
pub mod service_account;
pub mod volcano;

pub use object::Object;

use crate::error::FieldError;
use crate::path;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as BatchJob;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;

/// MindCluster AscendJob.
pub type AscendJob = Object<ascend::AscendJobSpec>;
/// Kubeflow PyTorchJob.
pub type PyTorchJob = Object<kubeflow::PyTorchJobSpec>;
/// Kubeflow TFJob.
pub type TfJob = Object<kubeflow::TfJobSpec>;
/// Kubeflow MPIJob (v2beta1).
pub type MpiJob = Object<kubeflow::MpiJobSpec>;
/// Volcano Job.
pub type VolcanoJob = Object<volcano::VolcanoJobSpec>;
/// Volcano Queue.
pub type Queue = Object<volcano::QueueSpec>;
/// Volcano PodGroup.
pub type PodGroup = Object<volcano::PodGroupSpec>;
/// ringleader Workload: a job already running, with its pods' nodes and devices.
pub type Workload = Object<cluster::WorkloadSpec>;

/// Every object ringleader understands.
#[derive(Debug, Clone)]
pub enum Resource {
    /// `mindxdl.gitee.com/v1` AscendJob.
    AscendJob(AscendJob),
    /// `kubeflow.org/v1` PyTorchJob.
    PyTorchJob(PyTorchJob),
    /// `kubeflow.org/v1` TFJob.
    TfJob(TfJob),
    /// `kubeflow.org/v2beta1` MPIJob.
    MpiJob(MpiJob),
    /// `batch.volcano.sh/v1alpha1` Job.
    VolcanoJob(VolcanoJob),
    /// `apps/v1` Deployment.
    Deployment(Box<Deployment>),
    /// `batch/v1` Job.
    BatchJob(Box<BatchJob>),
    /// `v1` ConfigMap.
    ConfigMap(ConfigMap),
    /// `v1` Secret (image pull credentials, keys).
    Secret(Secret),
    /// `scheduling.volcano.sh/v1beta1` Queue.
    Queue(Queue),
    /// `scheduling.volcano.sh/v1beta1` PodGroup.
    PodGroup(PodGroup),
    /// `ringleader.io/v1alpha1` Node of a cluster file.
    Node(Box<cluster::Node>),
    /// `ringleader.io/v1alpha1` Workload of a cluster file.
    Workload(Workload),
    /// `scheduling.k8s.io/v1` PriorityClass.
    PriorityClass(Box<PriorityClass>),
    /// `platform.ringleader.io/v1alpha1` ResourceGroup.
    ResourceGroup(Box<platform::ResourceGroup>),
    /// `platform.ringleader.io/v1alpha1` Workspace.
    Workspace(Box<platform::Workspace>),
    /// `platform.ringleader.io/v1alpha1` TrainingJob.
    TrainingJob(Box<platform::TrainingJob>),
    /// `platform.ringleader.io/v1alpha1` Run.
    Run(Box<platform::Run>),
    /// `platform.ringleader.io/v1alpha1` Dataset.
    Dataset(Box<platform::Dataset>),
    /// `platform.ringleader.io/v1alpha1` Image.
    Image(Box<platform::Image>),
    /// `platform.ringleader.io/v1alpha1` StorageMount.
    StorageMount(Box<platform::StorageMount>),
    /// `platform.ringleader.io/v1alpha1` Script.
    Script(Box<platform::Script>),
    /// `platform.ringleader.io/v1alpha1` ScriptRun.
    ScriptRun(Box<platform::ScriptRun>),
    /// `platform.ringleader.io/v1alpha1` AuditRecord.
    AuditRecord(Box<platform::AuditRecord>),
    /// `ringleader.io/v1alpha1` CheckRun.
    CheckRun(Box<check::CheckRun>),
    /// `platform.ringleader.io/v1alpha1` PlatformNode.
    PlatformNode(Box<platform::PlatformNode>),
}

/// The job kinds (`(apiVersion, kind)`) the job controller runs: the first
/// entries of [`SUPPORTED`].
pub const JOB_KINDS: &[(&str, &str)] = SUPPORTED.split_at(7).0;

/// The `(apiVersion, kind)` pairs accepted, in the order error messages list them.
pub const SUPPORTED: &[(&str, &str)] = &[
    ("mindxdl.gitee.com/v1", "AscendJob"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("ringleader.io/v1alpha1", "Node"),
    ("ringleader.io/v1alpha1", "Workload"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("platform.ringleader.io/v1alpha1", "ResourceGroup"),
    ("platform.ringleader.io/v1alpha1", "Workspace"),
    ("platform.ringleader.io/v1alpha1", "TrainingJob"),
    ("platform.ringleader.io/v1alpha1", "Run"),
    ("platform.ringleader.io/v1alpha1", "Dataset"),
    ("platform.ringleader.io/v1alpha1", "Image"),
    ("platform.ringleader.io/v1alpha1", "StorageMount"),
    ("platform.ringleader.io/v1alpha1", "Script"),
    ("platform.ringleader.io/v1alpha1", "ScriptRun"),
    ("platform.ringleader.io/v1alpha1", "AuditRecord"),
    ("ringleader.io/v1alpha1", "CheckRun"),
    ("platform.ringleader.io/v1alpha1", "PlatformNode"),
];

fn supported_list() -> String {
    SUPPORTED.iter().map(|(a, k)| format!("{a} {k}")).collect::<Vec<_>>().join(", ")
}

impl Resource {
    /// Types a document by its `apiVersion` and `kind`. A field of the wrong
    /// type is reported with its path and value.
    pub fn from_value(value: &serde_json::Value) -> Result<Resource, FieldError> {
        let api_version = value.get("apiVersion").and_then(|v| v.as_str());
        let kind = value.get("kind").and_then(|v| v.as_str());
        let (api_version, kind) = match (api_version, kind) {
            (Some(a), Some(k)) => (a, k),
            (None, _) => {
                return Err(FieldError::new(
                    "apiVersion",
                    value.get("apiVersion").map(|v| v.to_string()).unwrap_or_default(),
                    format!("a string apiVersion is required; supported: {}", supported_list()),
                ))
            }
            (_, None) => {
                return Err(FieldError::new(
                    "kind",
                    value.get("kind").map(|v| v.to_string()).unwrap_or_default(),
                    format!("a string kind is required; supported: {}", supported_list()),
                ))
            }
        };
        let resource = match (api_version, kind) {
            ("mindxdl.gitee.com/v1", "AscendJob") => Resource::AscendJob(typed(value)?),
            ("batch.volcano.sh/v1alpha1", "Job") => Resource::VolcanoJob(typed(value)?),
            ("kubeflow.org/v1", "PyTorchJob") => Resource::PyTorchJob(typed(value)?),
            ("kubeflow.org/v1", "TFJob") => Resource::TfJob(typed(value)?),
            ("kubeflow.org/v2beta1", "MPIJob") => Resource::MpiJob(typed(value)?),
            ("apps/v1", "Deployment") => Resource::Deployment(Box::new(typed(value)?)),
            ("batch/v1", "Job") => Resource::BatchJob(Box::new(typed(value)?)),
            ("v1", "ConfigMap") => Resource::ConfigMap(typed(value)?),
            ("v1", "Secret") => Resource::Secret(typed(value)?),
            ("scheduling.volcano.sh/v1beta1", "Queue") => Resource::Queue(typed(value)?),
            ("scheduling.volcano.sh/v1beta1", "PodGroup") => Resource::PodGroup(typed(value)?),
            ("ringleader.io/v1alpha1", "Node") => Resource::Node(Box::new(typed(value)?)),
            ("ringleader.io/v1alpha1", "Workload") => Resource::Workload(typed(value)?),
            ("scheduling.k8s.io/v1", "PriorityClass") => Resource::PriorityClass(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "ResourceGroup") => Resource::ResourceGroup(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "Workspace") => Resource::Workspace(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "TrainingJob") => Resource::TrainingJob(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "Run") => Resource::Run(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "Dataset") => Resource::Dataset(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "Image") => Resource::Image(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "StorageMount") => Resource::StorageMount(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "Script") => Resource::Script(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "ScriptRun") => Resource::ScriptRun(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "AuditRecord") => Resource::AuditRecord(Box::new(typed(value)?)),
            ("ringleader.io/v1alpha1", "CheckRun") => Resource::CheckRun(Box::new(typed(value)?)),
            ("platform.ringleader.io/v1alpha1", "PlatformNode") => Resource::PlatformNode(Box::new(typed(value)?)),
            _ => {
                return Err(FieldError::new(
                    "kind",
                    format!("{api_version} {kind}"),
                    format!("unsupported apiVersion/kind; supported: {}", supported_list()),
                ))
            }
        };
        Ok(resource)
    }

    /// The object's metadata.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Resource::AscendJob(o) => &o.metadata,
            Resource::PyTorchJob(o) => &o.metadata,
            Resource::TfJob(o) => &o.metadata,
            Resource::MpiJob(o) => &o.metadata,
            Resource::VolcanoJob(o) => &o.metadata,
            Resource::Deployment(o) => &o.metadata,
            Resource::BatchJob(o) => &o.metadata,
            Resource::ConfigMap(o) => &o.metadata,
            Resource::Secret(o) => &o.metadata,
            Resource::Queue(o) => &o.metadata,
            Resource::PodGroup(o) => &o.metadata,
            Resource::Node(o) => &o.metadata,
            Resource::Workload(o) => &o.metadata,
            Resource::PriorityClass(o) => &o.metadata,
            Resource::ResourceGroup(o) => &o.metadata,
            Resource::Workspace(o) => &o.metadata,
            Resource::TrainingJob(o) => &o.metadata,
            Resource::Run(o) => &o.metadata,
            Resource::Dataset(o) => &o.metadata,
            Resource::Image(o) => &o.metadata,
            Resource::StorageMount(o) => &o.metadata,
            Resource::Script(o) => &o.metadata,
            Resource::ScriptRun(o) => &o.metadata,
            Resource::AuditRecord(o) => &o.metadata,
            Resource::CheckRun(o) => &o.metadata,
            Resource::PlatformNode(o) => &o.metadata,
        }
    }

    /// The kind as written in YAML.
    pub fn kind(&self) -> &'static str {
        match self {
            Resource::AscendJob(_) => "AscendJob",
            Resource::PyTorchJob(_) => "PyTorchJob",
            Resource::TfJob(_) => "TFJob",
            Resource::MpiJob(_) => "MPIJob",
            Resource::VolcanoJob(_) | Resource::BatchJob(_) => "Job",
            Resource::Deployment(_) => "Deployment",
            Resource::ConfigMap(_) => "ConfigMap",
            Resource::Secret(_) => "Secret",
            Resource::Queue(_) => "Queue",
            Resource::PodGroup(_) => "PodGroup",
            Resource::Node(_) => "Node",
            Resource::Workload(_) => "Workload",
            Resource::PriorityClass(_) => "PriorityClass",
            Resource::ResourceGroup(_) => "ResourceGroup",
            Resource::Workspace(_) => "Workspace",
            Resource::TrainingJob(_) => "TrainingJob",
            Resource::Run(_) => "Run",
            Resource::Dataset(_) => "Dataset",
            Resource::Image(_) => "Image",
            Resource::StorageMount(_) => "StorageMount",
            Resource::Script(_) => "Script",
            Resource::ScriptRun(_) => "ScriptRun",
            Resource::AuditRecord(_) => "AuditRecord",
            Resource::CheckRun(_) => "CheckRun",
            Resource::PlatformNode(_) => "PlatformNode",
        }
    }

    /// The object's name (empty when missing).
    pub fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or("")
    }

    /// Whether it is a `platform.ringleader.io` kind.
    pub fn is_platform(&self) -> bool {
        matches!(
            self,
            Resource::ResourceGroup(_)
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
        )
    }

    /// The object's namespace (`default` when unset).
    pub fn namespace(&self) -> &str {
        self.metadata().namespace.as_deref().unwrap_or("default")
    }
}

fn typed<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let at = path::lookup(value, err.path()).map(|v| v.to_string()).unwrap_or_default();
        FieldError::new(path::from_serde(err.path()), at, err.inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_kinds_are_the_supported_kinds_that_are_jobs() {
        // JOB_KINDS is a prefix of SUPPORTED: the kinds after it parse from a
        // bare object and are not jobs.
        for (api_version, kind) in &SUPPORTED[JOB_KINDS.len()..] {
            let v = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
            let is_job = Resource::from_value(&v).is_ok_and(|r| r.is_job());
            assert!(!is_job, "{api_version} {kind} is a job kind missing from JOB_KINDS");
        }
    }

    #[test]
    fn unknown_kind_lists_the_supported_ones() {
        let v = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        let err = Resource::from_value(&v).unwrap_err();
        assert_eq!(err.field, "kind");
        assert_eq!(err.value, "example.com/v1 Widget");
        assert!(err.message.contains("kubeflow.org/v2beta1 MPIJob"), "{}", err.message);
    }

    #[test]
    fn wrong_type_names_the_field_path() {
        let v = serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "a"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": "two"}}}});
        let err = Resource::from_value(&v).unwrap_err();
        assert_eq!(err.field, "spec.pytorchReplicaSpecs.Worker.replicas");
        assert_eq!(err.value, "\"two\"");
    }

    #[test]
    fn pod_templates_round_trip_through_k8s_openapi() {
        let v = serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
            "resources": {"limits": {"huawei.com/Ascend910": 1}}, "securityContext": {"privileged": false}}]}}}});
        let Resource::BatchJob(job) = Resource::from_value(&v).unwrap() else { panic!("not a batch job") };
        let back = serde_json::to_value(&job).unwrap();
        assert_eq!(
            back["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["huawei.com/Ascend910"],
            "1"
        );
        assert_eq!(back["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"], false);
    }
}
