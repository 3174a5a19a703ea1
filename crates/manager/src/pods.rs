//! Pods as store objects: the object the manager creates from a
//! [`PodPlan`], and what the job controller and scheduler read back from
//! one (see `docs/control-plane.md` for who writes which field).

use crate::cache::{annotation, at, str_at};
use ringleader_api::time::parse_rfc3339;
use ringleader_controller::lifecycle::{ObservedPod, PodPhase};
use ringleader_controller::PodPlan;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Device IDs the scheduler bound the pod to.
pub const DEVICES: &str = "ringleader.io/devices";
/// Set by the job controller once the pod's env and files are complete.
pub const START: &str = "ringleader.io/start";
/// Pod-visible path → content of the files the agent writes in the sandbox.
pub const FILES: &str = "ringleader.io/files";
/// Files the agent takes from ConfigMaps of the pod's namespace, as a
/// ConfigMap volume mount would: JSON, pod path → `<configmap>/<key>`.
/// The rank table goes this way: one copy in `rings-config-<job>` instead of
/// one per pod (a 5,000-pod job's table is megabytes).
pub const CONFIG_FILES: &str = "ringleader.io/config-files";
/// The job controller's identity of the pod (slot, role, index, generation, version).
pub const PLAN: &str = "ringleader.io/plan";
/// Set on pods the scheduler evicted.
pub const EVICTED: &str = "ringleader.io/evicted";

/// The identity the job controller gave a pod.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlanRef {
    /// Slot (`<job>-<role>-<index>`).
    pub slot: String,
    /// Role.
    pub role: String,
    /// Index in the role.
    pub index: u32,
    /// Incarnation of the slot.
    pub generation: u32,
    /// Job version it was created for.
    pub job_version: u32,
}

/// The pod object for a plan: template spec (static env already in), the
/// controller's labels and annotations, an owner reference to the job.
pub fn pod_object(plan: &PodPlan, namespace: &str, owner: &Value, job_version: u32) -> Value {
    let mut annotations = plan.annotations();
    let plan_ref = PlanRef {
        slot: plan.slot.clone(),
        role: plan.role.clone(),
        index: plan.index,
        generation: plan.generation,
        job_version,
    };
    annotations.insert(PLAN.to_string(), serde_json::to_string(&plan_ref).unwrap_or_default());
    let mut spec =
        plan.template.spec.as_ref().map(|s| serde_json::to_value(s).unwrap_or(Value::Null)).unwrap_or(json!({}));
    if let (Some(h), Some(obj)) = (&plan.hostname, spec.as_object_mut()) {
        obj.insert("hostname".into(), json!(h));
    }
    if let (Some(s), Some(obj)) = (&plan.subdomain, spec.as_object_mut()) {
        obj.insert("subdomain".into(), json!(s));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": plan.name,
            "namespace": namespace,
            "labels": plan.labels(),
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": owner.get("apiVersion"),
                "kind": owner.get("kind"),
                "name": str_at(owner, &["metadata", "name"]),
                "uid": str_at(owner, &["metadata", "uid"]),
                "controller": true,
            }],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    })
}

/// The uid of the controlling owner.
pub fn owner_uid(pod: &Value) -> Option<&str> {
    let refs = at(pod, &["metadata", "ownerReferences"])?.as_array()?;
    refs.iter().find(|r| r.get("controller").and_then(Value::as_bool).unwrap_or(true))?.get("uid")?.as_str()
}

/// Node the pod is bound to.
pub fn node_of(pod: &Value) -> Option<&str> {
    str_at(pod, &["spec", "nodeName"]).filter(|n| !n.is_empty())
}

/// Bound device IDs.
pub fn devices_of(pod: &Value) -> Vec<u32> {
    annotation(pod, DEVICES).map(|s| s.split(',').filter_map(|d| d.trim().parse().ok()).collect()).unwrap_or_default()
}

/// `status.phase`.
pub fn phase_of(pod: &Value) -> PodPhase {
    match str_at(pod, &["status", "phase"]) {
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        _ => PodPhase::Pending,
    }
}

/// Whether deletion has been asked for.
pub fn deleting(pod: &Value) -> bool {
    at(pod, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

/// Whether the agent may run it.
pub fn started(pod: &Value) -> bool {
    annotation(pod, START) == Some("true")
}

/// Exit code of the first terminated container.
pub fn exit_code(pod: &Value) -> Option<i32> {
    let statuses = at(pod, &["status", "containerStatuses"])?.as_array()?;
    statuses.iter().find_map(|c| c.get("state")?.get("terminated")?.get("exitCode")?.as_i64()).map(|c| c as i32)
}

/// When the pod entered its current phase (Unix seconds).
pub fn phase_since(pod: &Value) -> f64 {
    let stamp = |path: &[&str]| str_at(pod, path).and_then(parse_rfc3339);
    let terminated = at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find_map(|c| c.get("state")?.get("terminated")?.get("finishedAt")?.as_str()))
        .and_then(parse_rfc3339);
    match phase_of(pod) {
        PodPhase::Succeeded | PodPhase::Failed => terminated,
        PodPhase::Running => stamp(&["status", "startTime"]),
        _ => None,
    }
    .or_else(|| stamp(&["metadata", "creationTimestamp"]))
    .unwrap_or(0.0)
}

/// The controller's observation of a pod object; `None` for pods it did not create.
pub fn observe(pod: &Value) -> Option<ObservedPod> {
    let plan: PlanRef = serde_json::from_str(annotation(pod, PLAN)?).ok()?;
    Some(ObservedPod {
        name: str_at(pod, &["metadata", "name"])?.to_string(),
        slot: plan.slot,
        role: plan.role,
        index: plan.index,
        generation: plan.generation,
        job_version: plan.job_version,
        phase: phase_of(pod),
        exit_code: exit_code(pod),
        evicted: annotation(pod, EVICTED) == Some("true"),
        phase_since: phase_since(pod) as u64,
        deleting: deleting(pod),
        node: node_of(pod).map(str::to_string),
        devices: devices_of(pod),
        placement: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_agent_and_scheduler_write() {
        let pod = json!({
            "metadata": {"name": "j-worker-0", "creationTimestamp": "2026-11-23T10:00:00Z",
                "annotations": {PLAN: r#"{"slot":"j-worker-0","role":"Worker","index":0,"generation":1,"jobVersion":2}"#,
                                DEVICES: "0,3", START: "true"}},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Failed", "containerStatuses": [{"state": {"terminated":
                {"exitCode": 137, "finishedAt": "2026-11-23T10:01:00Z"}}}]}
        });
        let o = observe(&pod).expect("observed");
        assert_eq!((o.generation, o.job_version, o.index), (1, 2, 0));
        assert_eq!(o.devices, vec![0, 3]);
        assert_eq!(o.exit_code, Some(137));
        assert_eq!(o.phase, PodPhase::Failed);
        assert_eq!(o.phase_since, 1_795_428_060);
        assert!(started(&pod) && !deleting(&pod));
        assert!(observe(&json!({"metadata": {"name": "other"}})).is_none());
    }
}
