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
/// `status.reason` of a pod whose node was lost (Kubernetes' wording).
pub const NODE_LOST: &str = "NodeLost";
/// `state.waiting.reason` of a container waiting to be restarted after a failure.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";

/// Seconds as Go prints a `time.Duration` (`10s`, `1m20s`, `5m0s`), as the
/// kubelet's back-off messages show them.
pub fn go_duration(secs: u64) -> String {
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

fn container_statuses(pod: &Value) -> Vec<Value> {
    let listed = at(pod, &["status", "containerStatuses"]).and_then(Value::as_array).filter(|l| !l.is_empty());
    match listed {
        Some(l) => l.clone(),
        None => {
            let spec = at(pod, &["spec", "containers"]).and_then(Value::as_array);
            spec.into_iter()
                .flatten()
                .map(|c| {
                    json!({"name": c.get("name"), "image": c.get("image"), "ready": false, "restartCount": 0,
                           "started": false, "state": {"waiting": {"reason": "ContainerCreating"}}})
                })
                .collect()
        }
    }
}

/// A failed pod shown in back-off.
#[derive(Debug, Clone, PartialEq)]
pub struct BackOffShown {
    /// The status merge patch.
    pub patch: Value,
    /// The container's waiting message.
    pub message: String,
    /// The container that failed.
    pub container: String,
    /// The pod as the kubelet names it: `<name>_<namespace>(<uid>)`.
    pub pod: String,
}

/// The status patch showing a failed pod as the kubelet shows a container
/// in back-off (its container waiting with reason `CrashLoopBackOff`, the
/// failure kept as `lastState`, `restartCount` the slot's restarts after
/// failures) with the kubelet's waiting message:
/// `back-off 20s restarting failed container=pytorch pod=pt-worker-0_default(<uid>)`.
pub fn crash_loop_back_off(pod: &Value, delay: u64, restarts: u32) -> BackOffShown {
    let name = str_at(pod, &["metadata", "name"]).unwrap_or_default();
    let namespace = str_at(pod, &["metadata", "namespace"]).unwrap_or_default();
    let uid = str_at(pod, &["metadata", "uid"]).unwrap_or_default();
    let mut statuses = container_statuses(pod);
    // The agent runs the first container: it is the one that failed.
    let container = at(pod, &["spec", "containers"])
        .and_then(|c| c.get(0)?.get("name")?.as_str())
        .or_else(|| statuses.first().and_then(|c| c.get("name")?.as_str()))
        .unwrap_or("")
        .to_string();
    let who = format!("{name}_{namespace}({uid})");
    let message = format!("back-off {} restarting failed container={container} pod={who}", go_duration(delay));
    if let Some(first) = statuses.iter_mut().find(|c| c.get("name").and_then(Value::as_str) == Some(&container)) {
        if let Some(obj) = first.as_object_mut() {
            let ended = obj.get("state").and_then(|s| s.get("terminated")).cloned();
            if let Some(t) = ended {
                obj.insert("lastState".into(), json!({"terminated": t}));
            }
            obj.insert("state".into(), json!({"waiting": {"reason": CRASH_LOOP_BACK_OFF, "message": message}}));
            obj.insert("ready".into(), json!(false));
            obj.insert("started".into(), json!(false));
            obj.insert("restartCount".into(), json!(restarts));
        }
    }
    BackOffShown { patch: json!({"status": {"containerStatuses": statuses}}), message, container, pod: who }
}

/// The status patch of a pod given up with its node, as Kubernetes' node
/// lifecycle controller writes it (phase Failed, reason `NodeLost`, not
/// Ready), and its message.
pub fn node_lost(pod: &Value, node: &str, now: f64) -> (Value, String) {
    let name = str_at(pod, &["metadata", "name"]).unwrap_or_default();
    let message = format!("Node {node} which was running pod {name} is unresponsive");
    let stamp = ringleader_api::time::rfc3339(now);
    let mut conditions: Vec<Value> =
        at(pod, &["status", "conditions"]).and_then(Value::as_array).cloned().unwrap_or_default();
    for kind in ["Ready", "ContainersReady"] {
        let unready = json!({"type": kind, "status": "False", "reason": NODE_LOST, "lastTransitionTime": stamp});
        match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)) {
            Some(c) => *c = unready,
            None => conditions.push(unready),
        }
    }
    let mut statuses: Vec<Value> =
        at(pod, &["status", "containerStatuses"]).and_then(Value::as_array).cloned().unwrap_or_default();
    for c in statuses.iter_mut().filter_map(Value::as_object_mut) {
        c.insert("ready".into(), json!(false));
    }
    let patch = json!({"status": {"phase": "Failed", "reason": NODE_LOST, "message": message,
                                  "conditions": conditions, "containerStatuses": statuses}});
    (patch, message)
}

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

/// The uid of the job (or other object) that owns it: its controller's,
/// but for a pod a Deployment's ReplicaSet controls, the Deployment's (the
/// job the job controller runs; `crate::deployments` adds that reference).
pub fn owner_uid(pod: &Value) -> Option<&str> {
    let refs = at(pod, &["metadata", "ownerReferences"])?.as_array()?;
    let controller = refs.iter().find(|r| r.get("controller").and_then(Value::as_bool).unwrap_or(true))?;
    if controller.get("kind").and_then(Value::as_str) == Some("ReplicaSet") {
        let deployment = refs.iter().find(|r| r.get("kind").and_then(Value::as_str) == Some("Deployment"));
        if let Some(uid) = deployment.and_then(|r| r.get("uid")?.as_str()) {
            return Some(uid);
        }
    }
    controller.get("uid")?.as_str()
}

/// The uid of the controlling owner itself (`controller: true`).
pub fn controller_uid(object: &Value) -> Option<&str> {
    let refs = at(object, &["metadata", "ownerReferences"])?.as_array()?;
    refs.iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?.get("uid")?.as_str()
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

/// The first container's last termination: `state.terminated`, or
/// `lastState.terminated` once it waits in CrashLoopBackOff.
fn terminated(pod: &Value) -> Option<&Value> {
    let statuses = at(pod, &["status", "containerStatuses"])?.as_array()?;
    statuses
        .iter()
        .find_map(|c| c.get("state")?.get("terminated"))
        .or_else(|| statuses.iter().find_map(|c| c.get("lastState")?.get("terminated").filter(|t| t.is_object())))
}

/// Exit code of the first terminated container.
pub fn exit_code(pod: &Value) -> Option<i32> {
    terminated(pod)?.get("exitCode")?.as_i64().map(|c| c as i32)
}

/// When the pod entered its current phase (Unix seconds).
pub fn phase_since(pod: &Value) -> f64 {
    let stamp = |path: &[&str]| str_at(pod, path).and_then(parse_rfc3339);
    let finished = terminated(pod).and_then(|t| t.get("finishedAt")?.as_str()).and_then(parse_rfc3339);
    // A pod that ended without a container ending (its node was lost) ended
    // when it stopped being Ready.
    let unready = || {
        let conditions = at(pod, &["status", "conditions"])?.as_array()?;
        let ready = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?;
        parse_rfc3339(ready.get("lastTransitionTime")?.as_str()?)
    };
    match phase_of(pod) {
        PodPhase::Succeeded | PodPhase::Failed => finished.or_else(unready),
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
        node_lost: str_at(pod, &["status", "reason"]) == Some(NODE_LOST),
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

    #[test]
    fn a_failed_pod_in_back_off_reads_as_the_kubelet_shows_it() {
        assert_eq!(
            [10, 20, 80, 300, 3_700].map(go_duration),
            ["10s", "20s", "1m20s", "5m0s", "1h1m40s"].map(String::from)
        );
        let mut pod = json!({
            "metadata": {"name": "pt-worker-0", "namespace": "default", "uid": "u-1",
                "annotations": {PLAN: r#"{"slot":"pt-worker-0","role":"Worker","index":0,"generation":0,"jobVersion":0}"#}},
            "spec": {"nodeName": "n1", "containers": [{"name": "pytorch"}, {"name": "sidecar"}]},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "pytorch", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 3, "finishedAt": "2026-11-23T10:01:00Z"}}},
                {"name": "sidecar", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "NotRunByAgent"}}}]}
        });
        let shown = crash_loop_back_off(&pod, 20, 2);
        assert_eq!(shown.message, "back-off 20s restarting failed container=pytorch pod=pt-worker-0_default(u-1)");
        assert_eq!((shown.container.as_str(), shown.pod.as_str()), ("pytorch", "pt-worker-0_default(u-1)"));
        let statuses = &shown.patch["status"]["containerStatuses"];
        assert_eq!(statuses[0]["state"]["waiting"]["reason"], CRASH_LOOP_BACK_OFF);
        assert_eq!(statuses[0]["lastState"]["terminated"]["exitCode"], 3);
        assert_eq!(statuses[0]["restartCount"], 2, "the slot's restarts, as the kubelet counts them");
        assert_eq!(statuses[1]["restartCount"], 0);
        assert_eq!(statuses[1]["state"]["waiting"]["reason"], "NotRunByAgent", "other containers untouched");
        pod["status"]["containerStatuses"] = statuses.clone();
        let o = observe(&pod).expect("observed");
        assert_eq!((o.exit_code, o.phase_since), (Some(3), 1_795_428_060), "the failure is still read");

        let (patch, message) = node_lost(&pod, "n1", 1_795_428_100.0);
        assert_eq!(message, "Node n1 which was running pod pt-worker-0 is unresponsive");
        assert_eq!(
            (patch["status"]["phase"].as_str(), patch["status"]["reason"].as_str()),
            (Some("Failed"), Some(NODE_LOST))
        );
        let conditions = patch["status"]["conditions"].as_array().expect("conditions");
        assert!(conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "False"));
        let mut lost = json!({"metadata": pod["metadata"].clone(), "spec": {"nodeName": "n1"}});
        lost["status"] = patch["status"].clone();
        lost["status"]["containerStatuses"] = json!([]);
        let o = observe(&lost).expect("observed");
        assert!(o.node_lost && o.phase == PodPhase::Failed);
        assert_eq!(o.phase_since, 1_795_428_100, "it ended when it stopped being Ready");
    }
}
