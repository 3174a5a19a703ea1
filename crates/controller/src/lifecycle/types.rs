//! What the lifecycle engine reads and answers: the pods and nodes it
//! observes, the job's phase and status, its configuration, and the actions
//! it returns.

use crate::backoff::{BackoffConfig, SlotBackoff};
use crate::elastic::{self, Scale};
use crate::env::EnvOptions;
use crate::expand::{expand, ExpandOptions, Expansion, PodPlan};
use crate::extras::JobExtras;
use crate::fault::config::{DeviceRef, FaultConfig, NodeLossConfig};
use crate::placement::PodPlacement;
use k8s_openapi::api::core::v1::ConfigMap;
use ringleader_api::kinds::PodGroup;
use ringleader_api::model::Job;
use ringleader_api::Resource;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Phase of a pod as observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PodPhase {
    /// Created, not running yet (unscheduled or starting).
    Pending,
    /// Running.
    Running,
    /// Exited 0.
    Succeeded,
    /// Exited non-zero, or was evicted.
    Failed,
    /// Its node stopped reporting.
    Unknown,
}

impl PodPhase {
    /// Pending, Running or Unknown: it may still hold devices.
    pub fn is_live(self) -> bool {
        matches!(self, PodPhase::Pending | PodPhase::Running | PodPhase::Unknown)
    }
}

/// One pod of the job as observed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservedPod {
    /// Pod name.
    pub name: String,
    /// Its slot (`<pod_prefix>-<index>`).
    pub slot: String,
    /// Role.
    pub role: String,
    /// Index within the role.
    pub index: u32,
    /// Slot incarnation it was created for.
    pub generation: u32,
    /// Job incarnation it was created for.
    pub job_version: u32,
    /// Phase.
    pub phase: PodPhase,
    /// Exit code of the failed container, if any.
    pub exit_code: Option<i32>,
    /// Evicted (a `PodEvicted` event rather than `PodFailed`).
    pub evicted: bool,
    /// Failed because its node was lost (status reason `NodeLost`).
    pub node_lost: bool,
    /// When the pod entered its phase.
    pub phase_since: u64,
    /// A delete has been issued and the pod is terminating.
    pub deleting: bool,
    /// Node, once bound.
    pub node: Option<String>,
    /// Devices it holds.
    pub devices: Vec<u32>,
    /// Full placement (addresses, device IPs), once known.
    pub placement: Option<PodPlacement>,
}

impl ObservedPod {
    /// A just-created, unscheduled pod for `plan`.
    pub fn created(plan: &PodPlan, job_version: u32, now: u64) -> ObservedPod {
        ObservedPod {
            name: plan.name.clone(),
            slot: plan.slot.clone(),
            role: plan.role.clone(),
            index: plan.index,
            generation: plan.generation,
            job_version,
            phase: PodPhase::Pending,
            exit_code: None,
            evicted: false,
            node_lost: false,
            phase_since: now,
            deleting: false,
            node: None,
            devices: Vec::new(),
            placement: None,
        }
    }
}

/// A node as observed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ObservedNode {
    /// Node name.
    pub name: String,
    /// Reporting (not NotReady).
    pub ready: bool,
    /// Unhealthy chips.
    pub unhealthy_devices: BTreeSet<u32>,
    /// Chips whose network is unhealthy.
    pub network_unhealthy_devices: BTreeSet<u32>,
    /// Devices this job could be given here: healthy (and, for a job of
    /// several pods, with a healthy network), not isolated, and free or
    /// held by the job itself. A device another job's pod holds is not
    /// usable, whether that pod runs or is bound and waiting for its release.
    pub usable_devices: u32,
    /// Last heartbeat (seconds since the epoch); `None`: never heard from.
    pub last_heartbeat: Option<u64>,
}

/// What the controller sees of the cluster for one job.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Observed {
    /// The job's pods.
    pub pods: Vec<ObservedPod>,
    /// Nodes (those the job's pods run on at least; all for elastic jobs).
    pub nodes: Vec<ObservedNode>,
}

/// Job phase (Volcano's set; the other kinds' views derive from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub enum Phase {
    /// Waiting for minAvailable pods.
    #[default]
    Pending,
    /// Running.
    Running,
    /// Deleting the previous incarnation before starting over.
    Restarting,
    /// Stopping leftover pods before Completed.
    Completing,
    /// Succeeded.
    Completed,
    /// Stopping pods before Aborted.
    Aborting,
    /// Stopped by a policy.
    Aborted,
    /// Stopping pods before Terminated.
    Terminating,
    /// Stopped by a policy.
    Terminated,
    /// Failed.
    Failed,
}

impl Phase {
    /// Completed, Failed, Aborted or Terminated.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Completed | Phase::Failed | Phase::Aborted | Phase::Terminated)
    }

    /// The Volcano spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Restarting => "Restarting",
            Phase::Completing => "Completing",
            Phase::Completed => "Completed",
            Phase::Aborting => "Aborting",
            Phase::Aborted => "Aborted",
            Phase::Terminating => "Terminating",
            Phase::Terminated => "Terminated",
            Phase::Failed => "Failed",
        }
    }
}

/// A Kubeflow-style condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Condition {
    /// `Created`, `Running`, `Restarting`, `Succeeded`, `Failed`.
    pub kind: String,
    /// True or False.
    pub status: bool,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// Seconds since the epoch.
    pub last_transition: u64,
}

/// Pods of one role by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ReplicaStatus {
    /// Pending (or Unknown).
    pub pending: u32,
    /// Running.
    pub running: u32,
    /// Succeeded.
    pub succeeded: u32,
    /// Failed.
    pub failed: u32,
}

impl ReplicaStatus {
    /// Pending + running (Kubeflow `active`).
    pub fn active(&self) -> u32 {
        self.pending + self.running
    }
}

/// The controller's record of a job: everything it needs to carry from one
/// reconcile to the next.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct JobStatus {
    /// Phase.
    pub phase: Phase,
    /// Reason of the last transition.
    pub reason: String,
    /// Message of the last transition.
    pub message: String,
    /// First reconcile (`None`: not seen yet — platform state `creating`).
    pub created_at: Option<u64>,
    /// When the job first ran.
    pub start_time: Option<u64>,
    /// When it finished.
    pub completion_time: Option<u64>,
    /// Last phase change.
    pub last_transition: u64,
    /// Restarts counted against backoffLimit / maxRetry.
    pub retries: u32,
    /// Job incarnation (+1 per job-level restart or reschedule).
    pub version: u32,
    /// Incarnation per slot (absent: 0).
    pub generations: BTreeMap<String, u32>,
    /// Elastic size, when different from the job's.
    pub scale: Option<Scale>,
    /// Condition history (Kubeflow style).
    pub conditions: Vec<Condition>,
    /// Pods per role by state.
    pub replica_statuses: BTreeMap<String, ReplicaStatus>,
    /// Devices isolated for faults (never given to the job's pods while listed).
    pub isolated: BTreeSet<DeviceRef>,
    /// First time a timed policy's condition was seen, by key.
    pub timers: BTreeMap<String, u64>,
    /// Pods deleted gracefully for a fault, with the time of the delete.
    pub fault_deletes: BTreeMap<String, u64>,
    /// What the last `hccl.json` written was (its digest, not the table).
    #[serde(default, deserialize_with = "RankTableMark::deserialize_either")]
    pub rank_table: Option<RankTableMark>,
    /// Restart back-off (CrashLoopBackOff) per slot.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backoff: BTreeMap<String, SlotBackoff>,
    /// Deployment: the `pod-template-hash` rolled out (its pods are of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
}

/// The last `hccl.json` the controller wrote, as the job's status keeps it:
/// enough to notice a change, not the table itself (about 600 bytes a pod,
/// so a 2,500-pod table alone would pass etcd's 1.5 MiB request limit; the
/// table lives in the `rings-config-<job>` ConfigMap).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RankTableMark {
    /// SHA-256 of the JSON text, lowercase hex.
    pub sha256: String,
    /// Bytes of the JSON text.
    pub bytes: u64,
    /// Versions written so far (the ConfigMap's `version`).
    pub version: u64,
}

impl RankTableMark {
    /// The mark of `content` as version `version`.
    pub fn of(content: &str, version: u64) -> RankTableMark {
        let digest = ring::digest::digest(&ring::digest::SHA256, content.as_bytes());
        let sha256 = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        RankTableMark { sha256, bytes: content.len() as u64, version }
    }

    /// Whether `content` is the table this mark describes.
    pub fn describes(&self, content: &str) -> bool {
        self.bytes == content.len() as u64 && RankTableMark::of(content, self.version) == *self
    }

    /// Reads the mark, or the `[table, version]` pair statuses written
    /// before the mark held (so a running job keeps its version count
    /// across an upgrade instead of losing its whole status).
    fn deserialize_either<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RankTableMark>, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            Mark(RankTableMark),
            Table(String, u64),
        }
        Ok(match <Option<Either> as serde::Deserialize>::deserialize(d)? {
            Some(Either::Mark(m)) => Some(m),
            Some(Either::Table(content, version)) => Some(RankTableMark::of(&content, version)),
            None => None,
        })
    }
}

/// Settings of the controller.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// Fault handling.
    pub fault: FaultConfig,
    /// Grow an elastic job back when capacity returns.
    pub elastic_grow: bool,
    /// How static env is computed for the pods it creates.
    pub env: EnvOptions,
    /// Restart back-off after failures.
    pub backoff: BackoffConfig,
    /// When pods on a NotReady node are given up for lost.
    pub node_loss: NodeLossConfig,
    /// Cluster seed the SSH key pair of each job needing one is derived
    /// from (see [`crate::ssh`]); `None`: no SSH files.
    pub ssh_seed: Option<[u8; 32]>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            fault: FaultConfig::default(),
            elastic_grow: true,
            env: EnvOptions::default(),
            backoff: BackoffConfig::default(),
            node_loss: NodeLossConfig::default(),
            ssh_seed: None,
        }
    }
}

/// A job with its record.
#[derive(Debug, Clone)]
pub struct JobState {
    /// The job as submitted.
    pub job: Job,
    /// Kind-specific fields.
    pub extras: JobExtras,
    /// Controller settings.
    pub config: ControllerConfig,
    /// The last written status.
    pub status: JobStatus,
}

/// How a pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DeleteMode {
    /// With the pod's grace period.
    Graceful,
    /// At once (grace period 0).
    Force,
}

/// What the caller should do.
#[derive(Debug, Clone)]
pub enum Action {
    /// Create or update the PodGroup.
    ApplyPodGroup(Box<PodGroup>),
    /// Create a pod (its template carries the static env).
    CreatePod(Box<PodPlan>),
    /// Delete a pod.
    DeletePod {
        /// Pod name.
        name: String,
        /// Graceful or forced.
        mode: DeleteMode,
        /// Why.
        reason: String,
    },
    /// Write the job's status (and keep it as [`JobState::status`]).
    WriteStatus(Box<JobStatus>),
    /// Create or update a ConfigMap (`rings-config-<job>`).
    WriteConfigMap(Box<ConfigMap>),
    /// The TTL after finishing ran out: delete the job and what it owns.
    DeleteJob,
    /// Reconcile again after this many seconds even without events.
    RequeueAfter(u64),
    /// A failed pod's slot waits before its replacement is created: show it
    /// as CrashLoopBackOff. The pod stays until `until`.
    BackOff {
        /// The failed pod.
        pod: String,
        /// Seconds of this back-off.
        delay: u64,
        /// When the replacement may be created.
        until: u64,
        /// Restarts of the slot after failures in this back-off run (the
        /// pod's `restartCount`, as the kubelet counts a crash-looping container's).
        restarts: u32,
    },
    /// The pod's node has been NotReady beyond the toleration: mark the pod
    /// Failed with reason `NodeLost` (its agent can no longer say anything).
    MarkPodLost {
        /// Pod name.
        pod: String,
        /// The lost node.
        node: String,
    },
}

impl JobState {
    /// A job not reconciled yet.
    pub fn new(job: Job, extras: JobExtras) -> JobState {
        JobState { job, extras, config: ControllerConfig::default(), status: JobStatus::default() }
    }

    /// A job not reconciled yet, from a typed object; `None` for non-job kinds.
    pub fn from_resource(resource: &Resource) -> Option<JobState> {
        Some(JobState::new(Job::from_resource(resource)?, JobExtras::from_resource(resource)))
    }

    /// Keeps the status of the last `WriteStatus` among `actions`.
    pub fn apply(&mut self, actions: &[Action]) {
        for a in actions {
            if let Action::WriteStatus(s) = a {
                self.status = (**s).clone();
            }
        }
    }

    /// The job at its current elastic size.
    pub fn effective_job(&self) -> Job {
        effective_job(&self.job, &self.status)
    }

    /// PodGroup and pods of the current incarnation.
    pub fn expansion(&self) -> Expansion {
        expansion(&self.job, &self.extras, &self.status)
    }
}

pub(super) fn effective_job(job: &Job, st: &JobStatus) -> Job {
    match st.scale {
        Some(scale) => elastic::resized(job, scale),
        None => job.clone(),
    }
}

pub(super) fn expansion(job: &Job, extras: &JobExtras, st: &JobStatus) -> Expansion {
    let job = effective_job(job, st);
    let opts =
        ExpandOptions { replicas: BTreeMap::new(), generations: st.generations.clone(), job_version: st.version };
    expand(&job, extras, &opts)
}
