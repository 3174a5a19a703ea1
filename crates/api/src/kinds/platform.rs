//! The platform kinds of seeds 003 and 004 (`platform.ringleader.io/v1alpha1`):
//! resource groups, workspaces, training jobs and their runs, datasets,
//! images, storage mounts, scripts and their runs, and audit records. The
//! shapes are those of `notes/platform-shapes.md`; the rules on them are in
//! [`crate::validate`]. Statuses are typed here for the controller that
//! writes them; [`super::Object`] keeps them opaque, so read one with
//! [`status_of`].

use super::object::Object;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `apiVersion` of every platform kind.
pub const API_VERSION: &str = "platform.ringleader.io/v1alpha1";
/// The API group.
pub const GROUP: &str = "platform.ringleader.io";
/// Namespace of the preset images.
pub const PRESET_NAMESPACE: &str = "platform-system";

/// Accelerator families of a resource group.
pub const ACCELERATORS: &[&str] = &["NVIDIA", "Ascend"];
/// Scheduling policies of a resource group.
pub const POLICIES: &[&str] = &["DRF", "Binpack", "Gang"];
/// States of a resource group.
pub const RESOURCE_GROUP_STATES: &[&str] =
    &["creating", "create-failed", "configuring", "config-failed", "running", "deleting"];
/// Roles of a workspace member.
pub const MEMBER_ROLES: &[&str] = &["admin", "member"];
/// Frameworks of a training job.
pub const FRAMEWORKS: &[&str] = &["PyTorchDDP", "PyTorchDeepSpeed", "TensorFlowPS", "MPI", "MindSpore"];
/// Visibility of a training job or dataset.
pub const VISIBILITIES: &[&str] = &["only-me", "workspace"];
/// AI Hub's categories of a training job.
pub const CATEGORIES: &[&str] = &["debug", "inference", "training", "special"];
/// A container's image pull policies.
pub const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
/// Env conventions of PyTorch pods.
pub const ENV_VARIANTS: &[&str] = &["kubeflow", "aihub"];
/// Most shared memory a training job's pod may ask for, in GiB.
pub const MAX_SHARED_MEMORY_GB: u64 = 1024;
/// Longest estimated run time, in seconds (a year).
pub const MAX_ESTIMATED_RUN_TIME_SECONDS: u64 = 366 * 24 * 3600;
/// Longest project name.
pub const MAX_PROJECT_CHARS: usize = 64;
/// What a VIP job does on a busy node.
pub const ON_BUSY: &[&str] = &["wait", "kill"];
/// States of a run.
pub const RUN_STATES: &[&str] =
    &["creating", "created", "queued", "running", "succeeded", "failed", "stopping", "stopped", "abnormal"];
/// Types of a dataset.
pub const DATASET_TYPES: &[&str] = &["text", "image"];
/// Per-node states of a storage mount.
pub const MOUNT_STATES: &[&str] = &["mounted", "unmounted"];
/// States of a script run (overall and per node).
pub const SCRIPT_RUN_STATES: &[&str] = &["running", "succeeded", "failed"];
/// Verbs of an audit record.
pub const AUDIT_VERBS: &[&str] =
    &["create", "update", "patch", "delete", "run", "stop", "lock", "unlock", "adopt", "bind", "unbind", "remove"];
/// Sources of a platform node (seed 004): made by the platform, or an
/// existing machine brought in (纳管).
pub const NODE_SOURCES: &[&str] = &["new", "adopted"];
/// Binding states of a platform node (seed 004 节点绑定状态): 已绑定-正常,
/// 绑定失败, 解绑失败, 未绑定.
pub const BINDING_STATES: &[&str] = &["bound", "bind-failed", "unbind-failed", "unbound"];
/// Where a dataset is mounted when the mount names no path.
pub const DEFAULT_DATASET_PATH: &str = "/data";
/// Most mounts of one training job.
pub const MAX_MOUNTS: usize = 10;
/// Shortest (and default) script timeout, in seconds.
pub const MIN_SCRIPT_TIMEOUT: i64 = 600;
/// Longest description, in characters.
pub const MAX_DESCRIPTION: usize = 300;
/// Longest display name, training job name and dataset name, in characters.
pub const MAX_SHORT_NAME: usize = 20;

/// `platform.ringleader.io/v1alpha1` ResourceGroup (cluster-scoped).
pub type ResourceGroup = Object<ResourceGroupSpec>;
/// `platform.ringleader.io/v1alpha1` Workspace (cluster-scoped).
pub type Workspace = Object<WorkspaceSpec>;
/// `platform.ringleader.io/v1alpha1` TrainingJob (in its workspace's namespace).
pub type TrainingJob = Object<TrainingJobSpec>;
/// `platform.ringleader.io/v1alpha1` Run (in its job's namespace).
pub type Run = Object<RunSpec>;
/// `platform.ringleader.io/v1alpha1` Dataset (namespaced).
pub type Dataset = Object<DatasetSpec>;
/// `platform.ringleader.io/v1alpha1` Image (namespaced; presets in `platform-system`).
pub type Image = Object<ImageSpec>;
/// `platform.ringleader.io/v1alpha1` StorageMount (cluster-scoped).
pub type StorageMount = Object<StorageMountSpec>;
/// `platform.ringleader.io/v1alpha1` Script (cluster-scoped).
pub type Script = Object<ScriptSpec>;
/// `platform.ringleader.io/v1alpha1` ScriptRun (cluster-scoped).
pub type ScriptRun = Object<ScriptRunSpec>;
/// `platform.ringleader.io/v1alpha1` AuditRecord (cluster-scoped, written by the API server).
pub type AuditRecord = Object<AuditRecordSpec>;
/// `platform.ringleader.io/v1alpha1` PlatformNode (cluster-scoped): a node
/// in the platform's node list, its source and its binding to a resource group.
pub type PlatformNode = Object<PlatformNodeSpec>;

/// An object's `status` typed as `S` (the default when it has none or it
/// does not parse: a controller then rewrites it whole).
pub fn status_of<T, S: DeserializeOwned + Default>(object: &Object<T>) -> S {
    object.status.as_ref().and_then(|s| serde_json::from_value(s.clone()).ok()).unwrap_or_default()
}

/// A label selector of exact matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelMatch {
    /// Labels a node must have, all of them.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
}

/// The nodes of a resource group: by name, by label, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelection {
    /// Nodes by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Nodes by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelMatch>,
}

/// `ResourceGroup` spec: a node pool (virtual cluster).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroupSpec {
    /// Name shown to people: letters (Chinese included), digits and `_`, 1–20, not starting with `_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Accelerator family: `NVIDIA` or `Ascend`.
    #[serde(default)]
    pub accelerator: String,
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Scheduling policies, a subset of `DRF`, `Binpack`, `Gang` (default `[Gang]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<String>>,
    /// Prefer nodes under one switch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub topology_affinity: bool,
    /// Which nodes belong.
    #[serde(default)]
    pub nodes: NodeSelection,
}

impl ResourceGroupSpec {
    /// The policies in force (`[Gang]` when unset).
    pub fn effective_policies(&self) -> Vec<String> {
        self.policies.clone().unwrap_or_else(|| vec!["Gang".to_string()])
    }
}

/// `ResourceGroup` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroupStatus {
    /// `creating`, `create-failed`, `configuring`, `config-failed`, `running` or `deleting`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// The nodes that belong.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Why the state is what it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A member of a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// User name as tokens name it.
    #[serde(default)]
    pub user: String,
    /// `admin` or `member`.
    #[serde(default)]
    pub role: String,
}

/// `Workspace` spec: members and the queues they may use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    /// Name shown to people (display-name rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource group its queues come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
    /// Queues (of that resource group) its members may submit to.
    #[serde(default)]
    pub queues: Vec<String>,
    /// Members and their roles.
    #[serde(default)]
    pub members: Vec<Member>,
}

/// `Workspace` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    /// The namespace of its objects (its name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `ready` or `failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One instance's resources: devices, CPU and memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSpec {
    /// NVIDIA GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<i64>,
    /// Ascend NPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npu: Option<i64>,
    /// CPU, e.g. `"8"` or `"500m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Quantity>,
    /// Memory, e.g. `"64Gi"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Quantity>,
}

/// An environment variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvVar {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Value.
    #[serde(default)]
    pub value: String,
}

/// One role of a training job: its pods' count and resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrainingRole {
    /// Role name, as the framework names it (`Master`, `Worker`, `PS` …).
    #[serde(default)]
    pub name: String,
    /// Pods of the role (at least 1).
    #[serde(default = "one")]
    pub count: i64,
    /// Resources of each pod.
    #[serde(default)]
    pub resources: InstanceSpec,
}

fn one() -> i64 {
    1
}

/// A dataset or a storage mount inside a training job's pods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mount {
    /// A Dataset of the job's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// A StorageMount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Where in the pod (datasets: `/data` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Mount {
    /// The path in the pod: as written, or `/data` for a dataset.
    pub fn effective_path(&self) -> Option<&str> {
        self.path.as_deref().or(self.dataset.as_ref().map(|_| DEFAULT_DATASET_PATH))
    }
}

/// The VIP option of seed 003: chosen machines, and what to do when busy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Vip {
    /// The machines the job runs on.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `wait` for the jobs on them to finish, or `kill` them at once.
    #[serde(default)]
    pub on_busy: String,
}

/// `TrainingJob` spec: saved without running; each run makes a [`Run`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrainingJobSpec {
    /// Name shown to people (display-name rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Queue the runs are admitted to.
    #[serde(default)]
    pub queue: String,
    /// Container image.
    #[serde(default)]
    pub image: String,
    /// `PyTorchDDP`, `PyTorchDeepSpeed`, `TensorFlowPS`, `MPI` or `MindSpore`.
    #[serde(default)]
    pub framework: String,
    /// Start command, beginning with a launcher (`/bin/bash -c`, `python`, `torchrun` …).
    #[serde(default)]
    pub command: String,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Roles with their counts and resources.
    #[serde(default)]
    pub roles: Vec<TrainingRole>,
    /// Datasets and storage mounted into the pods (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// `only-me` or `workspace` (default `only-me`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Where the job writes TensorBoard logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorboard_path: Option<String>,
    /// Runs it on chosen machines, never preempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip: Option<Vip>,
    /// AI Hub's category: `debug`, `inference`, `training` or `special`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The project the job belongs to (AI Hub), at most 64 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// How long a run is expected to take, in seconds (AI Hub: to the second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_run_time_seconds: Option<u64>,
    /// Shared memory of each pod in GiB (AI Hub): an in-memory volume of that size at `/dev/shm`.
    #[serde(default, rename = "sharedMemoryGB", skip_serializing_if = "Option::is_none")]
    pub shared_memory_gb: Option<u64>,
    /// The containers' `imagePullPolicy`: `Always` (AI Hub's "always pull"), `IfNotPresent` (the default) or `Never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    /// SSH access (AI Hub): each container declares port 22 (`ssh`), and the run shows each pod's login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh: Option<bool>,
    /// The IB (RDMA) network (AI Hub): with NCCL auto-settings, `NCCL_IB_DISABLE=0` and the RDMA interface (`front1`); off, `NCCL_IB_DISABLE=1` and the Ethernet one (`en`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_network: Option<bool>,
    /// NCCL auto-settings for this job's GPU pods (default: on when `ibNetwork` is set, else the cluster's `up --nccl-auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_auto: Option<bool>,
    /// Env convention of PyTorch pods: `kubeflow` or `aihub` (`WORLD_SIZE` = total GPUs, `RANK` = node index); default: the cluster's `up --env-variant`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_variant: Option<String>,
}

/// `TrainingJob` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrainingJobStatus {
    /// Runs made so far.
    #[serde(default)]
    pub runs: u32,
    /// The newest run's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_run: String,
    /// Who created the job.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_by: String,
}

/// `Run` spec: one run of a training job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    /// The TrainingJob (same namespace).
    #[serde(default)]
    pub training_job: String,
    /// Set by "stop": frees the devices, keeps the record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop: bool,
}

/// The framework job a run made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRef {
    /// e.g. `kubeflow.org/v1`.
    #[serde(default)]
    pub api_version: String,
    /// e.g. `PyTorchJob`.
    #[serde(default)]
    pub kind: String,
    /// Name (`<trainingjob>-r<N>`).
    #[serde(default)]
    pub name: String,
}

/// One pod of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPod {
    /// Role.
    #[serde(default)]
    pub role: String,
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Pod phase.
    #[serde(default)]
    pub phase: String,
    /// Restarts.
    #[serde(default)]
    pub restarts: u32,
    /// Pod IP.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_ip: String,
    /// Host IP.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
    /// The node it ran on (where its log is kept once it is gone).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// How to log in to it, with the TrainingJob's `ssh: true` (`ssh -p 22 root@<pod IP>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ssh: String,
    /// Start (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    /// Seconds it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// Its log (tail).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log: String,
}

/// One state change of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineEntry {
    /// The state entered.
    #[serde(default)]
    pub state: String,
    /// When (RFC 3339).
    #[serde(default)]
    pub time: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Who killed a run (a VIP job and its user).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KilledBy {
    /// The VIP job (`namespace/name`).
    #[serde(default)]
    pub job: String,
    /// Its user.
    #[serde(default)]
    pub user: String,
}

/// `Run` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    /// One of [`RUN_STATES`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// The framework job it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobRef>,
    /// Its pods.
    #[serde(default)]
    pub pods: Vec<RunPod>,
    /// State changes, oldest first.
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
    /// Set when a VIP job killed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_by: Option<KilledBy>,
    /// When it started running.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    /// When it finished.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completion_time: String,
    /// Why the state is what it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Where a dataset's files are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DatasetSource {
    /// A node directory (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// An object-storage bucket (named, not fetched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
}

/// `Dataset` spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetSpec {
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `only-me` or `workspace` (default `only-me`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// `text` or `image`.
    #[serde(default, rename = "type")]
    pub data_type: String,
    /// Where the files are.
    #[serde(default)]
    pub source: DatasetSource,
}

/// `Image` spec: a preset (namespace `platform-system`) or a workspace's custom image.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// Reference, `repo/name:tag`.
    #[serde(default)]
    pub image: String,
    /// Version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Framework it carries (free text, e.g. `PyTorch 2.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    /// Machine type, e.g. `Ascend910B`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_type: Option<String>,
    /// Operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// Job type, e.g. `training`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_type: Option<String>,
    /// A preset image (only in namespace `platform-system`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preset: bool,
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `Image` status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageStatus {
    /// When it last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_time: String,
}

fn yes() -> bool {
    true
}

/// `StorageMount` spec: a node directory mounted on chosen nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageMountSpec {
    /// Directory on each node, starting with `/`.
    #[serde(default)]
    pub node_directory: String,
    /// Nodes it is mounted on.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// What is mounted (e.g. a parallel-FS export).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Desired: mounted (default) or not.
    #[serde(default = "yes")]
    pub mounted: bool,
}

/// One node of a storage mount.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeMount {
    /// Node.
    #[serde(default)]
    pub node: String,
    /// `mounted` or `unmounted`.
    #[serde(default)]
    pub state: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `StorageMount` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StorageMountStatus {
    /// Per node.
    #[serde(default)]
    pub nodes: Vec<NodeMount>,
}

/// `PlatformNode` spec: where the node came from and the resource group it
/// should be bound to (none: unbound).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformNodeSpec {
    /// `new` (the platform made it) or `adopted` (纳管: brought in); set at creation.
    #[serde(default)]
    pub source: String,
    /// The ResourceGroup the node is bound to; absent or null: unbound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

/// `PlatformNode` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformNodeStatus {
    /// `bound`, `bind-failed`, `unbind-failed` or `unbound`.
    #[serde(default)]
    pub binding: String,
    /// The group the node is a member of now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `Script` spec: a shell script to run on nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptSpec {
    /// Shell text.
    #[serde(default)]
    pub content: String,
    /// Seconds before a run is killed (at least 600, default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// At most 300 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ScriptSpec {
    /// The timeout in force.
    pub fn effective_timeout(&self) -> i64 {
        self.timeout_seconds.unwrap_or(MIN_SCRIPT_TIMEOUT)
    }
}

/// `ScriptRun` spec: a script on chosen nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptRunSpec {
    /// The Script.
    #[serde(default)]
    pub script: String,
    /// Nodes to run it on.
    #[serde(default)]
    pub nodes: Vec<String>,
}

/// One node's result of a script run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptNodeResult {
    /// Node.
    #[serde(default)]
    pub node: String,
    /// `running`, `succeeded` or `failed`.
    #[serde(default)]
    pub state: String,
    /// Exit code, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Output (tail).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// `ScriptRun` status (controller-written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptRunStatus {
    /// `running`, `succeeded` or `failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// Per node.
    #[serde(default)]
    pub nodes: Vec<ScriptNodeResult>,
    /// Start (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    /// End (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completion_time: String,
}

/// `AuditRecord` spec: who did what to which object, and when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditRecordSpec {
    /// The user of the request.
    #[serde(default)]
    pub user: String,
    /// One of [`AUDIT_VERBS`].
    #[serde(default)]
    pub verb: String,
    /// `group/Kind` (`Kind` alone for the core group).
    #[serde(default)]
    pub resource: String,
    /// Namespace (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// When (RFC 3339).
    #[serde(default)]
    pub time: String,
    /// More about it (e.g. the run a stop was for).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}
