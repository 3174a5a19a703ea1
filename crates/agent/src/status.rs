//! The pod status merge patches the agent writes. Container statuses are a
//! list, which a merge patch replaces whole, so each patch carries the full
//! entry.

use ringleader_api::time::rfc3339;
use serde_json::{json, Map, Value};

/// How a container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// Exit code; `128 + N` for a death by signal N.
    pub code: i32,
    /// `Completed`, `Error`, or the agent's reason (`AgentRestarted`, `StartError` …).
    pub reason: String,
    /// Human-readable detail.
    pub message: Option<String>,
}

impl Exit {
    /// From a wait status: an exit code or a terminating signal.
    pub fn from_wait(code: Option<i32>, signal: Option<i32>) -> Exit {
        match (code, signal) {
            (Some(0), _) => Exit { code: 0, reason: "Completed".into(), message: None },
            (Some(c), _) => Exit { code: c, reason: "Error".into(), message: None },
            (None, Some(s)) => Exit {
                code: 128 + s,
                reason: "Error".into(),
                message: Some(format!("terminated by signal {s} ({})", signal_name(s))),
            },
            (None, None) => Exit { code: 128, reason: "Unknown".into(), message: Some("no exit status".into()) },
        }
    }

    /// An ending the agent decides (the process never ran or was lost).
    pub fn agent(code: i32, reason: &str, message: impl Into<String>) -> Exit {
        Exit { code, reason: reason.into(), message: Some(message.into()) }
    }

    /// `Succeeded` for exit 0, else `Failed`.
    pub fn phase(&self) -> &'static str {
        if self.code == 0 {
            "Succeeded"
        } else {
            "Failed"
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// What the status patches say about a pod's containers: name and image of
/// each, how the runtime names an image it ran, when the pod was bound, and
/// its QoS class. The agent runs the first container only; the others are
/// reported waiting, so `kubectl` shows them as not ready.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Containers {
    /// `(name, image)` of each container, in spec order.
    pub containers: Vec<(String, String)>,
    /// The runtime, as the scheme of `imageID` (`process`, `simulated`).
    pub runtime: &'static str,
    /// When the scheduler bound the pod (`ringleader.io/scheduled-at`).
    pub scheduled_at: Option<String>,
    /// `status.qosClass`.
    pub qos: &'static str,
    /// The first container's `terminationMessagePath` (Kubernetes' default
    /// when unset).
    pub termination_path: String,
    /// Its `terminationMessagePolicy` is `FallbackToLogsOnError`.
    pub fallback_to_logs: bool,
}

/// Annotation the manager writes when it binds a pod.
pub const SCHEDULED_AT: &str = "ringleader.io/scheduled-at";
/// Kubernetes' default `terminationMessagePath`.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// Reason of the containers the agent does not run.
pub const NOT_RUN: &str = "NotRunByAgent";

impl Containers {
    /// Read from a pod object, for `runtime`.
    pub fn of(pod: &Value, runtime: &'static str) -> Containers {
        let specs = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut containers: Vec<(String, String)> = specs
            .iter()
            .map(|c| {
                let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
                (text("name"), text("image"))
            })
            .collect();
        if containers.is_empty() {
            containers.push(("main".into(), String::new()));
        }
        let scheduled_at = pod
            .pointer(&format!("/metadata/annotations/{}", SCHEDULED_AT.replace('/', "~1")))
            .and_then(Value::as_str)
            .map(str::to_string);
        let first = specs.first();
        let termination_path = first
            .and_then(|c| c.get("terminationMessagePath")?.as_str())
            .filter(|p| !p.is_empty())
            .unwrap_or(DEFAULT_TERMINATION_MESSAGE_PATH)
            .to_string();
        let fallback_to_logs = first
            .and_then(|c| c.get("terminationMessagePolicy")?.as_str())
            .is_some_and(|p| p == "FallbackToLogsOnError");
        Containers { containers, runtime, scheduled_at, qos: qos_class(&specs), termination_path, fallback_to_logs }
    }

    /// The first container's name (the one the agent runs).
    pub fn first(&self) -> &str {
        self.containers.first().map_or("main", |c| c.0.as_str())
    }

    fn image_id(&self, image: &str) -> String {
        // No registry is involved: the image is named as the pod gave it,
        // under the scheme of the runtime that ran it.
        format!("{}://{}", self.runtime, if image.is_empty() { "none" } else { image })
    }

    /// Statuses of every container: the first in `state`, the others waiting.
    fn statuses(&self, ready: bool, started: bool, state: Value) -> Value {
        let list: Vec<Value> = self
            .containers
            .iter()
            .enumerate()
            .map(|(i, (name, image))| {
                if i == 0 {
                    json!({"name": name, "image": image, "imageID": self.image_id(image), "ready": ready,
                           "started": started, "restartCount": 0, "state": state})
                } else {
                    json!({"name": name, "image": image, "imageID": "", "ready": false, "started": false,
                           "restartCount": 0, "state": {"waiting": {"reason": NOT_RUN,
                           "message": "the ringleader agent runs only the first container of a pod"}}})
                }
            })
            .collect();
        json!(list)
    }

    /// The four pod conditions: scheduled and initialized from the binding
    /// on; ready and containers-ready as `ready` says, since `at`.
    fn conditions(&self, ready: bool, at: &str, reason: Option<&str>) -> Value {
        let scheduled = self.scheduled_at.clone().unwrap_or_else(|| at.to_string());
        let every_ready = ready && self.containers.len() == 1;
        let state = |ok: bool| if ok { "True" } else { "False" };
        let mut ready_c = json!({"type": "Ready", "status": state(every_ready), "lastTransitionTime": at});
        let mut containers_c =
            json!({"type": "ContainersReady", "status": state(every_ready), "lastTransitionTime": at});
        let why = match reason {
            Some(r) => Some(r.to_string()),
            None if !every_ready => Some("ContainersNotReady".to_string()),
            None => None,
        };
        if let Some(r) = why {
            ready_c["reason"] = json!(r);
            containers_c["reason"] = json!(r);
        }
        json!([
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled},
            {"type": "Initialized", "status": "True", "lastTransitionTime": scheduled},
            containers_c,
            ready_c,
        ])
    }
}

/// Kubernetes' QoS class from the cpu and memory of the containers.
pub fn qos_class(containers: &[Value]) -> &'static str {
    let get = |c: &Value, kind: &str, r: &str| {
        c.pointer(&format!("/resources/{kind}/{r}")).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in containers {
        for r in ["cpu", "memory"] {
            let (req, lim) = (get(c, "requests", r), get(c, "limits", r));
            any |= req.is_some() || lim.is_some();
            // A request left out defaults to the limit.
            guaranteed &= lim.is_some() && (req.is_none() || req == lim);
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Running since `started` on a node of address `address`, with extra annotations.
pub fn running(containers: &Containers, address: &str, started: f64, annotations: &[(&str, String)]) -> Value {
    let at = rfc3339(started);
    let mut patch = json!({
        "status": {
            "phase": "Running",
            "hostIP": address,
            "hostIPs": [{"ip": address}],
            "podIP": address,
            "podIPs": [{"ip": address}],
            "startTime": at,
            "qosClass": containers.qos,
            "conditions": containers.conditions(true, &at, None),
            "containerStatuses": containers.statuses(true, true, json!({ "running": { "startedAt": at } })),
        }
    });
    if !annotations.is_empty() {
        let a: Map<String, Value> = annotations.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        patch["metadata"] = json!({ "annotations": a });
    }
    patch
}

/// Terminated at `finished` after running since `started` (`None`: it
/// never ran, so the patch also sets the addresses and start time).
pub fn terminated(containers: &Containers, address: &str, started: Option<f64>, finished: f64, exit: &Exit) -> Value {
    let mut term = json!({ "exitCode": exit.code, "reason": exit.reason, "finishedAt": rfc3339(finished) });
    term["startedAt"] = json!(rfc3339(started.unwrap_or(finished)));
    if let Some(m) = &exit.message {
        term["message"] = json!(m);
    }
    let at = rfc3339(finished);
    let mut status = json!({
        "phase": exit.phase(),
        "qosClass": containers.qos,
        "conditions": containers.conditions(false, &at, Some("PodCompleted")),
        "containerStatuses": containers.statuses(false, false, json!({ "terminated": term })),
    });
    if started.is_none() {
        status["startTime"] = json!(rfc3339(finished));
        if !address.is_empty() {
            status["hostIP"] = json!(address);
            status["hostIPs"] = json!([{"ip": address}]);
            status["podIP"] = json!(address);
            status["podIPs"] = json!([{"ip": address}]);
        }
    }
    if exit.code != 0 && !matches!(exit.reason.as_str(), "Error" | "Completed" | "OOMKilled") {
        // The agent's own reasons are pod-level facts too (`kubectl get` shows them).
        status["reason"] = json!(exit.reason);
        if let Some(m) = &exit.message {
            status["message"] = json!(m);
        }
    }
    json!({ "status": status })
}

/// Waiting to start (`Pending`): an image pull failing or backing off,
/// with kubelet's reason and message.
pub fn waiting(containers: &Containers, address: &str, at: f64, reason: &str, message: &str) -> Value {
    let at = rfc3339(at);
    json!({
        "status": {
            "phase": "Pending",
            "hostIP": address,
            "hostIPs": [{"ip": address}],
            "startTime": at,
            "qosClass": containers.qos,
            "conditions": containers.conditions(false, &at, None),
            "containerStatuses": containers.statuses(false, false,
                json!({"waiting": {"reason": reason, "message": message}})),
        }
    })
}

/// Names the first container's runtime IDs in a status patch
/// (`containerID`, `imageID`), as kubelet reports a container it ran.
pub fn with_runtime_ids(mut patch: Value, runtime: &str, container_id: &str, image_ref: &str) -> Value {
    if let Some(first) = patch.pointer_mut("/status/containerStatuses/0") {
        first["containerID"] = json!(format!("{runtime}://{container_id}"));
        if !image_ref.is_empty() {
            first["imageID"] = json!(image_ref);
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_map_to_codes_and_phases() {
        assert_eq!(Exit::from_wait(Some(0), None).phase(), "Succeeded");
        let e = Exit::from_wait(Some(3), None);
        assert_eq!((e.code, e.reason.as_str(), e.phase()), (3, "Error", "Failed"));
        let k = Exit::from_wait(None, Some(9));
        assert_eq!(k.code, 137);
        assert!(k.message.unwrap().contains("SIGKILL"));
        assert_eq!(Exit::from_wait(None, Some(15)).code, 143);
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "annotations": {SCHEDULED_AT: "1970-01-01T00:00:00Z"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                     "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]},
        })
    }

    fn merged(patch: &Value) -> Value {
        let mut p = pod();
        json_merge(&mut p, patch);
        p
    }

    fn json_merge(target: &mut Value, patch: &Value) {
        match (target, patch) {
            (Value::Object(t), Value::Object(p)) => {
                for (k, v) in p {
                    json_merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (t, p) => *t = p.clone(),
        }
    }

    fn decode(v: &Value) -> k8s_openapi::api::core::v1::Pod {
        match serde_json::from_value(v.clone()) {
            Ok(p) => p,
            Err(e) => panic!("not a k8s-openapi Pod: {e}\n{v:#}"),
        }
    }

    #[test]
    fn patches_carry_the_contract_fields() {
        let cs = Containers::of(&pod(), "process");
        assert_eq!(cs.qos, "Guaranteed");
        let r = running(&cs, "127.0.1.1", 0.0, &[("ringleader.io/pid", "42".into())]);
        assert_eq!(r["status"]["phase"], "Running");
        assert_eq!(r["status"]["podIP"], "127.0.1.1");
        assert_eq!(r["status"]["containerStatuses"][0]["state"]["running"]["startedAt"], "1970-01-01T00:00:00Z");
        assert_eq!(r["metadata"]["annotations"]["ringleader.io/pid"], "42");
        assert!(running(&cs, "a", 0.0, &[]).get("metadata").is_none());

        let t = terminated(&cs, "a", Some(0.0), 5.0, &Exit::from_wait(Some(3), None));
        let term = &t["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!((term["exitCode"].as_i64(), term["reason"].as_str()), (Some(3), Some("Error")));
        assert_eq!(term["finishedAt"], "1970-01-01T00:00:05Z");
        assert_eq!(t["status"]["phase"], "Failed");
        assert!(t["status"].get("podIP").is_none() && t["status"].get("reason").is_none());

        let a = terminated(&cs, "a", None, 5.0, &Exit::agent(137, "AgentRestarted", "gone"));
        assert_eq!(a["status"]["reason"], "AgentRestarted");
        assert_eq!(a["status"]["podIP"], "a");
    }

    #[test]
    fn running_pods_decode_with_complete_status() {
        let cs = Containers::of(&pod(), "process");
        let p = decode(&merged(&running(&cs, "127.0.1.1", 10.0, &[])));
        let status = p.status.unwrap_or_default();
        assert_eq!(status.qos_class.as_deref(), Some("Guaranteed"));
        let c = &status.container_statuses.unwrap_or_default()[0];
        assert_eq!(
            (c.name.as_str(), c.image.as_str(), c.image_id.as_str()),
            ("c", "busybox:1.36", "process://busybox:1.36")
        );
        assert!(c.ready && c.started == Some(true) && c.restart_count == 0);
        let conditions = status.conditions.unwrap_or_default();
        let kinds: Vec<(&str, &str)> = conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect();
        assert_eq!(
            kinds,
            [("PodScheduled", "True"), ("Initialized", "True"), ("ContainersReady", "True"), ("Ready", "True")]
        );
        assert!(conditions[3].last_transition_time.is_some());
    }

    #[test]
    fn finished_pods_are_not_ready_and_extra_containers_wait() {
        let mut two = pod();
        two["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
        let cs = Containers::of(&two, "simulated");
        assert_eq!(cs.qos, "BestEffort");
        let done = merged(&terminated(&cs, "127.0.1.1", Some(1.0), 4.0, &Exit::from_wait(Some(0), None)));
        let p = decode(&done);
        let status = p.status.unwrap_or_default();
        let statuses = status.container_statuses.unwrap_or_default();
        assert_eq!(statuses.len(), 2);
        assert_eq!(statuses[0].image_id, "simulated://x");
        let waiting = statuses[1].state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.clone());
        assert_eq!(waiting.as_deref(), Some(NOT_RUN));
        let ready = status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Ready");
        assert_eq!(ready.map(|c| (c.status, c.reason)), Some(("False".into(), Some("PodCompleted".into()))));
    }

    #[test]
    fn qos_follows_cpu_and_memory() {
        let c = |r: Value| vec![json!({"name": "c", "resources": r})];
        assert_eq!(qos_class(&c(json!({"limits": {"nvidia.com/gpu": 1}}))), "BestEffort");
        assert_eq!(qos_class(&c(json!({"requests": {"cpu": "1"}}))), "Burstable");
        assert_eq!(
            qos_class(&c(json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&c(json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}))),
            "Burstable"
        );
    }
}
