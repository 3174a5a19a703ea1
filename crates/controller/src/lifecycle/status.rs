//! The status each kind reports, derived from the one [`JobStatus`]:
//! Volcano `status.state.phase` with counters, Kubeflow (and acjob)
//! conditions with `replicaStatuses`, and the platform's run states.

use super::{JobStatus, Phase};
use ringleader_api::model::{Job, JobKind};
use serde_json::{json, Value};

/// RFC 3339 (UTC) of seconds since the epoch.
pub fn rfc3339(secs: u64) -> String {
    ringleader_api::time::rfc3339(secs as f64)
}

/// Volcano Job status: `state {phase, reason, message, lastTransitionTime}`,
/// pod counters, `retryCount`, `version`, `taskStatusCount`.
pub fn volcano(job: &Job, st: &JobStatus) -> Value {
    let sum = |f: fn(&super::ReplicaStatus) -> u32| st.replica_statuses.values().map(f).sum::<u32>();
    let tasks: serde_json::Map<String, Value> = st
        .replica_statuses
        .iter()
        .map(|(role, r)| {
            let mut phase = serde_json::Map::new();
            for (k, v) in
                [("Pending", r.pending), ("Running", r.running), ("Succeeded", r.succeeded), ("Failed", r.failed)]
            {
                if v > 0 {
                    phase.insert(k.to_string(), json!(v));
                }
            }
            (role.clone(), json!({ "phase": phase }))
        })
        .collect();
    json!({
        "state": {
            "phase": st.phase.as_str(),
            "reason": st.reason,
            "message": st.message,
            "lastTransitionTime": rfc3339(st.last_transition),
        },
        "minAvailable": job.scheduling.min_available,
        "pending": sum(|r| r.pending),
        "running": sum(|r| r.running),
        "succeeded": sum(|r| r.succeeded),
        "failed": sum(|r| r.failed),
        "retryCount": st.retries,
        "version": st.version,
        "taskStatusCount": tasks,
    })
}

fn kind_prefix(kind: JobKind) -> &'static str {
    match kind {
        JobKind::PyTorchJob => "PyTorchJob",
        JobKind::TfJob => "TFJob",
        JobKind::MpiJob => "MPIJob",
        JobKind::AscendJob => "AscendJob",
        JobKind::VolcanoJob => "Job",
        JobKind::Deployment => "Deployment",
        JobKind::BatchJob => "Job",
    }
}

/// Kubeflow (and acjob) status: conditions with reason `<Kind><Type>`,
/// message and `lastTransitionTime`; `replicaStatuses {active, succeeded,
/// failed}` per replica type; start and completion times.
pub fn kubeflow(job: &Job, st: &JobStatus) -> Value {
    let conditions: Vec<Value> = st
        .conditions
        .iter()
        .map(|c| {
            json!({
                "type": c.kind,
                "status": if c.status { "True" } else { "False" },
                "reason": format!("{}{}", kind_prefix(job.kind), c.kind),
                "message": c.message,
                "lastUpdateTime": rfc3339(c.last_transition),
                "lastTransitionTime": rfc3339(c.last_transition),
            })
        })
        .collect();
    let replicas: serde_json::Map<String, Value> = st
        .replica_statuses
        .iter()
        .map(|(role, r)| (role.clone(), json!({"active": r.active(), "succeeded": r.succeeded, "failed": r.failed})))
        .collect();
    let mut v = json!({ "conditions": conditions, "replicaStatuses": replicas });
    if let Some(t) = st.start_time {
        v["startTime"] = json!(rfc3339(t));
    }
    if let Some(t) = st.completion_time {
        v["completionTime"] = json!(rfc3339(t));
    }
    v
}

/// The status object of the job's own kind.
pub fn for_kind(job: &Job, st: &JobStatus) -> Value {
    match job.kind {
        JobKind::VolcanoJob => volcano(job, st),
        JobKind::Deployment => deployment(job, st),
        JobKind::BatchJob => batch_job(job, st),
        _ => kubeflow(job, st),
    }
}

/// A batch/v1 Job's status as the Job controller writes it: `active`,
/// `ready`, `succeeded`, `failed`, and once it ended the conditions
/// `kubectl wait --for=condition=Complete|Failed` and `describe` read
/// (`SuccessCriteriaMet` + `Complete`, or `FailureTarget` + `Failed`);
/// `completionTime` only for a Job that completed. The per-role counts stay
/// under `replicaStatuses`, which ringleader's own readers use.
pub fn batch_job(job: &Job, st: &JobStatus) -> Value {
    let mut v = kubeflow(job, st);
    let sum = |f: fn(&super::ReplicaStatus) -> u32| st.replica_statuses.values().map(f).sum::<u32>();
    v["active"] = json!(sum(|r| r.pending + r.running));
    v["ready"] = json!(sum(|r| r.running));
    v["succeeded"] = json!(sum(|r| r.succeeded));
    v["failed"] = json!(sum(|r| r.failed));
    let at = rfc3339(st.last_transition);
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "reason": reason, "message": message,
               "lastProbeTime": at, "lastTransitionTime": at})
    };
    let conditions = match st.phase {
        Phase::Completed => {
            let message = "Reached expected number of succeeded pods";
            vec![
                condition("SuccessCriteriaMet", "CompletionsReached", message),
                condition("Complete", "CompletionsReached", message),
            ]
        }
        Phase::Failed | Phase::Aborted | Phase::Terminated => {
            let reason = if st.reason.is_empty() { "BackoffLimitExceeded" } else { st.reason.as_str() };
            let message =
                if st.message.is_empty() { "Job has reached the specified backoff limit" } else { st.message.as_str() };
            vec![condition("FailureTarget", reason, message), condition("Failed", reason, message)]
        }
        _ => Vec::new(),
    };
    v["conditions"] = json!(conditions);
    if st.phase != Phase::Completed {
        if let Some(o) = v.as_object_mut() {
            o.remove("completionTime");
        }
    }
    v
}

/// A Deployment's status: the conditions of [`kubeflow`] plus the replica
/// counters kubectl's READY / UP-TO-DATE / AVAILABLE columns read (a pod
/// is ready and available while it runs; every pod is of the current
/// template, as ringleader replaces pods rather than rolling them).
pub fn deployment(job: &Job, st: &JobStatus) -> Value {
    let mut v = kubeflow(job, st);
    let (live, running) =
        st.replica_statuses.values().fold((0, 0), |(l, r), s| (l + s.pending + s.running, r + s.running));
    v["replicas"] = json!(live);
    v["updatedReplicas"] = json!(live);
    v["readyReplicas"] = json!(running);
    v["availableReplicas"] = json!(running);
    v
}

/// Run states of the training platform (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Submitted, not seen by the controller yet.
    Creating,
    /// Seen; no pod exists yet.
    Created,
    /// Pods wait for resources.
    Queued,
    /// Running.
    Running,
    /// Succeeded.
    Succeeded,
    /// At least one pod failed and the job ended.
    Failed,
    /// Being stopped.
    Stopping,
    /// Stopped by the user or a policy.
    Stopped,
    /// Running but recovering from a fault or restarting pods.
    Abnormal,
}

/// The platform run state of a job.
pub fn run_state(st: &JobStatus) -> RunState {
    if st.created_at.is_none() {
        return RunState::Creating;
    }
    let pods: u32 = st.replica_statuses.values().map(|r| r.pending + r.running + r.succeeded + r.failed).sum();
    match st.phase {
        Phase::Pending if pods == 0 => RunState::Created,
        Phase::Pending => RunState::Queued,
        Phase::Running if st.reason == "PodRescheduling" || st.reason == "RestartPod" || st.reason == "RestartTask" => {
            RunState::Abnormal
        }
        Phase::Running => RunState::Running,
        Phase::Restarting => RunState::Abnormal,
        Phase::Completing | Phase::Completed => RunState::Succeeded,
        Phase::Failed | Phase::Aborted => RunState::Failed,
        Phase::Aborting | Phase::Terminating => RunState::Stopping,
        Phase::Terminated => RunState::Stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn rfc3339_of_epoch_seconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
