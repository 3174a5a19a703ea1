//! `meta.k8s.io/v1 Table` answers (`Accept: application/json;as=Table;…`):
//! the columns kube-apiserver prints for the core and batch kinds, the
//! printer columns the upstream CRDs declare for the job kinds, and
//! ringleader's own columns for its Nodes. Every cell is computed from the
//! object and a `now` passed in, so a row is a pure function of its input and
//! the CLI can print the same rows for watch events.

use ringleader_api::time::parse_rfc3339;
use ringleader_registry::resources::ResourceType;
use serde_json::{json, Map, Value};
const AGE: Column = col("Age", "string", "Time since the object's creationTimestamp.", 0);
// CRDs print their `.metadata.creationTimestamp` column with type `date`.
const CRD_AGE: Column = col("AGE", "date", "", 0);

/// Which object each row carries (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default, what kubectl reads namespaces from).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// From the `includeObject` query parameter (absent: [`IncludeObject::Metadata`]).
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, String> {
        match value {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!("includeObject: {other:?} is not one of None, Metadata, Object")),
        }
    }
}

mod cells;
mod platform;

use cells::{age, at, col, s, text_or, NAME};
pub use cells::{human_duration, since, Column};

/// The columns of a resource type, in order.
pub fn columns(rt: &ResourceType) -> Vec<Column> {
    if rt.platform() || rt.kind == "CheckRun" {
        if let Some(columns) = platform::columns(rt.kind) {
            return columns;
        }
    }
    match (rt.api_version, rt.kind) {
        ("v1", "Pod") => vec![
            NAME,
            col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
            col("Status", "string", "The aggregate status of the containers in this pod.", 0),
            col(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last \
                 container in this pod has restarted.",
                0,
            ),
            AGE,
            col("IP", "string", "IP address assigned to the pod.", 1),
            col("Node", "string", "Name of the node assigned to the pod.", 1),
            col("Nominated Node", "string", "Name of the node the pod is nominated to run on.", 1),
            col("Readiness Gates", "string", "The readiness gates of the pod that are met.", 1),
        ],
        ("v1", "Node") => vec![
            NAME,
            col("Status", "string", "The status of the node.", 0),
            col("Roles", "string", "The roles of the node.", 0),
            AGE,
            col("Version", "string", "Kubelet Version reported by the node.", 0),
            col("Internal-IP", "string", "List of internal IPs for the node.", 1),
            col("External-IP", "string", "List of external IPs for the node.", 1),
            col("OS-Image", "string", "OS Image reported by the node from /etc/os-release.", 1),
            col("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r'.", 1),
            col("Container-Runtime", "string", "Container Runtime Version reported by the node.", 1),
        ],
        ("v1", "Event") => vec![
            col("Last Seen", "string", "Time since the event was last observed.", 0),
            col("Type", "string", "Type of this event (Normal, Warning).", 0),
            col("Reason", "string", "Why the action was taken.", 0),
            col("Object", "string", "The object this event is about.", 0),
            col("Subobject", "string", "The field path of the involved object.", 1),
            col("Source", "string", "The component reporting this event.", 1),
            col("Message", "string", "A human-readable description of the status of this operation.", 0),
            col("First Seen", "string", "Time since the event was first observed.", 1),
            col("Count", "string", "The number of times this event has occurred.", 1),
            col("Name", "string", "Name of the event.", 1),
        ],
        ("v1", "ConfigMap") => vec![NAME, col("Data", "integer", "Number of keys in data and binaryData.", 0), AGE],
        ("v1", "Namespace") => vec![NAME, col("Status", "string", "The status of the namespace", 0), AGE],
        ("policy/v1", "PodDisruptionBudget") => vec![
            NAME,
            col("Min Available", "string", "The minimum number of pods that must be available.", 0),
            col("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", 0),
            col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time.", 0),
            AGE,
        ],
        ("v1", "Service") => vec![
            NAME,
            col("Type", "string", "The type of the service.", 0),
            col("Cluster-IP", "string", "The cluster IP address of the service.", 0),
            col("External-IP", "string", "The external IP address of the service.", 0),
            col("Port(s)", "string", "The ports the service listens on.", 0),
            AGE,
            col("Selector", "string", "The label selector of the service.", 1),
        ],
        ("v1", "Endpoints") => {
            vec![NAME, col("Endpoints", "string", "Endpoints of the service (ready addresses and ports).", 0), AGE]
        }
        ("discovery.k8s.io/v1", "EndpointSlice") => vec![
            NAME,
            col("AddressType", "string", "The type of address held by the EndpointSlice.", 0),
            col("Ports", "string", "Ports of the EndpointSlice.", 0),
            col("Endpoints", "string", "Addresses of the endpoints of the EndpointSlice.", 0),
            AGE,
        ],
        ("v1", "ServiceAccount") => {
            vec![NAME, col("Secrets", "string", "Number of secrets referenced by the service account.", 0), AGE]
        }
        ("v1", "Secret") => vec![
            NAME,
            col("Type", "string", "The type of the secret.", 0),
            col("Data", "integer", "Number of keys in data.", 0),
            AGE,
        ],
        ("apps/v1", "Deployment") => vec![
            NAME,
            col("Ready", "string", "Number of the pod with ready state.", 0),
            col("Up-to-date", "integer", "Pods targeted by this deployment that have the desired template spec.", 0),
            col("Available", "integer", "Total number of available pods (ready for at least minReadySeconds).", 0),
            AGE,
            col("Containers", "string", "Names of each container in the template.", 1),
            col("Images", "string", "Images referenced by each container in the template.", 1),
            col("Selector", "string", "Label selector for pods.", 1),
        ],
        ("apps/v1", "ReplicaSet") => vec![
            NAME,
            col("Desired", "integer", "Number of desired pods.", 0),
            col("Current", "integer", "Number of actual replicas.", 0),
            col("Ready", "integer", "Number of ready replicas.", 0),
            AGE,
            col("Containers", "string", "Names of each container in the template.", 1),
            col("Images", "string", "Images referenced by each container in the template.", 1),
            col("Selector", "string", "Label selector for pods.", 1),
        ],
        ("batch/v1", "Job") => vec![
            NAME,
            col("Status", "string", "Status of the job.", 0),
            col("Completions", "string", "Succeeded pods of the completions the job asks for.", 0),
            col("Duration", "string", "Time required to complete the job.", 0),
            AGE,
            col("Containers", "string", "Names of each container in the template.", 1),
            col("Images", "string", "Images referenced by each container in the template.", 1),
            col("Selector", "string", "Label selector for pods.", 1),
        ],
        ("scheduling.k8s.io/v1", "PriorityClass") => vec![
            NAME,
            col("Value", "integer", "The integer value of this priority class.", 0),
            col("Global-Default", "boolean", "Whether this priority class is the default for pods without one.", 0),
            AGE,
            col("PreemptionPolicy", "string", "The policy for preempting pods with lower priority.", 0),
        ],
        ("batch.volcano.sh/v1alpha1", "Job") => vec![
            NAME,
            col("STATUS", "string", "", 0),
            col("minAvailable", "integer", "", 0),
            col("RUNNINGS", "integer", "", 0),
            CRD_AGE,
            col("QUEUE", "string", "", 1),
        ],
        ("scheduling.volcano.sh/v1beta1", "PodGroup") => vec![
            NAME,
            col("STATUS", "string", "", 0),
            col("minMember", "integer", "", 0),
            col("RUNNINGS", "integer", "", 0),
            CRD_AGE,
            col("QUEUE", "string", "", 1),
        ],
        ("scheduling.volcano.sh/v1beta1", "Queue") => {
            vec![NAME, col("PARENT", "string", "The parent queue of this queue", 0)]
        }
        ("ringleader.io/v1alpha1", "Node") => vec![
            NAME,
            col("Status", "string", "Ready, NotReady (no heartbeat), Stopped (spec.stopped) or Unknown.", 0),
            col("Profile", "string", "The hardware profile of the node.", 0),
            col("Address", "string", "The address pods of the node get.", 0),
            AGE,
            col("Unhealthy", "string", "Devices reported unhealthy.", 1),
            col("Network-Unhealthy", "string", "Devices whose network is reported unhealthy.", 1),
        ],
        // The training-operator CRDs (and the ascend-operator's, built on
        // them) print the type of the last condition as State; the
        // mpi-operator's v2beta1 CRD declares no columns.
        (_, "PyTorchJob" | "TFJob" | "AscendJob") => {
            vec![NAME, col("State", "string", "", 0), col("Age", "date", "", 0)]
        }
        // A CRD declaring no columns prints its age.
        _ => vec![NAME, col("Age", "date", "", 0)],
    }
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    at(v, pointer).and_then(Value::as_i64)
}

fn or_none(x: &str) -> String {
    if x.is_empty() {
        "<none>".into()
    } else {
        x.to_string()
    }
}

/// Up to three items joined as kubectl's printers join them, `+ N more...`
/// after; `empty` when there are none.
fn at_most_three(items: &[String], empty: &str) -> String {
    match items.len() {
        0 => empty.to_string(),
        1..=3 => items.join(","),
        n => format!("{} + {} more...", items[..3].join(","), n - 3),
    }
}

/// A Service's row: ports as `port/protocol`, the selector as `k=v` pairs.
fn service_cells(v: &Value, now: f64) -> Vec<Value> {
    let ports: Vec<String> = at(v, "/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) => format!("{port}:{node}/{protocol}"),
                None => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let selector: Vec<String> = at(v, "/spec/selector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, x)| format!("{k}={}", x.as_str().unwrap_or_default()))
        .collect();
    let external: Vec<&str> =
        at(v, "/spec/externalIPs").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    vec![
        json!(s(v, "/metadata/name")),
        json!(text_or_default(s(v, "/spec/type"), "ClusterIP")),
        json!(or_none(s(v, "/spec/clusterIP"))),
        json!(or_none(&external.join(","))),
        json!(or_none(&ports.join(","))),
        age(v, now),
        json!(or_none(&selector.join(","))),
    ]
}

fn text_or_default<'a>(x: &'a str, default: &'a str) -> &'a str {
    if x.is_empty() {
        default
    } else {
        x
    }
}

/// The cells of one object's row, in the order of [`columns`].
pub fn cells(rt: &ResourceType, v: &Value, now: f64) -> Vec<Value> {
    if rt.platform() || rt.kind == "CheckRun" {
        if let Some(cells) = platform::cells(rt.kind, v, now) {
            return cells;
        }
    }
    let name = json!(s(v, "/metadata/name"));
    match (rt.api_version, rt.kind) {
        ("v1", "Pod") => pod_cells(v, now),
        ("v1", "Node") => node_cells(v, now),
        ("v1", "Event") => event_cells(v, now),
        ("v1", "ConfigMap") => {
            let count = |p: &str| at(v, p).and_then(Value::as_object).map_or(0, Map::len);
            vec![name, json!(count("/data") + count("/binaryData")), age(v, now)]
        }
        ("v1", "Namespace") => vec![name, json!(s(v, "/status/phase")), age(v, now)],
        ("policy/v1", "PodDisruptionBudget") => {
            let shown = |p: &str| match at(v, p) {
                Some(Value::Number(n)) => json!(n.to_string()),
                Some(Value::String(t)) => json!(t),
                _ => json!("N/A"),
            };
            let allowed = at(v, "/status/disruptionsAllowed").and_then(Value::as_u64).unwrap_or(0);
            vec![name, shown("/spec/minAvailable"), shown("/spec/maxUnavailable"), json!(allowed), age(v, now)]
        }
        ("v1", "Service") => service_cells(v, now),
        ("v1", "Endpoints") => {
            let mut shown = Vec::new();
            for subset in at(v, "/subsets").and_then(Value::as_array).into_iter().flatten() {
                let list = |k: &str| subset.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
                for a in list("addresses") {
                    let ip = a.get("ip").and_then(Value::as_str).unwrap_or_default();
                    let ports = list("ports");
                    if ports.is_empty() {
                        shown.push(ip.to_string());
                    }
                    for p in ports {
                        shown.push(format!("{ip}:{}", p.get("port").and_then(Value::as_i64).unwrap_or(0)));
                    }
                }
            }
            vec![name, json!(at_most_three(&shown, "<none>")), age(v, now)]
        }
        ("discovery.k8s.io/v1", "EndpointSlice") => {
            let list = |p: &str| at(v, p).and_then(Value::as_array).cloned().unwrap_or_default();
            let ports: Vec<String> = list("/ports")
                .iter()
                .map(|p| p.get("port").and_then(Value::as_i64).map_or_else(|| "<unset>".to_string(), |n| n.to_string()))
                .collect();
            let addresses: Vec<String> = list("/endpoints")
                .iter()
                .flat_map(|e| e.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default())
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            vec![
                name,
                json!(s(v, "/addressType")),
                json!(at_most_three(&ports, "<unset>")),
                json!(at_most_three(&addresses, "<unset>")),
                age(v, now),
            ]
        }
        ("v1", "ServiceAccount") => {
            let secrets = at(v, "/secrets").and_then(Value::as_array).map_or(0, Vec::len);
            vec![name, json!(secrets), age(v, now)]
        }
        ("v1", "Secret") => {
            let keys = at(v, "/data").and_then(Value::as_object).map_or(0, Map::len);
            let kind = at(v, "/type").and_then(Value::as_str).unwrap_or("Opaque");
            vec![name, json!(kind), json!(keys), age(v, now)]
        }
        ("apps/v1", "Deployment") => {
            // ringleader's controller counts running pods (Ready while they
            // run) instead of writing the replica fields.
            let running = replica_count(v, "running");
            let n = |p: &str| int(v, p).unwrap_or(running);
            let desired = int(v, "/spec/replicas").unwrap_or(1);
            let mut r = vec![
                name,
                json!(format!("{}/{desired}", n("/status/readyReplicas"))),
                json!(n("/status/updatedReplicas")),
                json!(n("/status/availableReplicas")),
                age(v, now),
            ];
            r.extend(template_cells(v));
            r
        }
        ("apps/v1", "ReplicaSet") => {
            let n = |p: &str| int(v, p).unwrap_or(0);
            let mut r = vec![
                name,
                json!(int(v, "/spec/replicas").unwrap_or(1)),
                json!(n("/status/replicas")),
                json!(n("/status/readyReplicas")),
                age(v, now),
            ];
            r.extend(template_cells(v));
            r
        }
        ("batch/v1", "Job") => batch_job_cells(v, now),
        ("scheduling.k8s.io/v1", "PriorityClass") => vec![
            name,
            json!(int(v, "/value").unwrap_or(0)),
            json!(v.get("globalDefault").and_then(Value::as_bool).unwrap_or(false)),
            age(v, now),
            json!(match s(v, "/preemptionPolicy") {
                "" => "PreemptLowerPriority",
                p => p,
            }),
        ],
        ("batch.volcano.sh/v1alpha1", "Job") => vec![
            name,
            text_or(s(v, "/status/state/phase"), ringleader_phase(v)),
            at(v, "/status/minAvailable").or_else(|| at(v, "/spec/minAvailable")).cloned().unwrap_or(Value::Null),
            at(v, "/status/running").cloned().unwrap_or(Value::Null),
            age(v, now),
            text_or(s(v, "/spec/queue"), None),
        ],
        ("scheduling.volcano.sh/v1beta1", "PodGroup") => vec![
            name,
            text_or(s(v, "/status/phase"), None),
            at(v, "/spec/minMember").cloned().unwrap_or(Value::Null),
            at(v, "/status/running").cloned().unwrap_or(Value::Null),
            age(v, now),
            text_or(s(v, "/spec/queue"), None),
        ],
        ("scheduling.volcano.sh/v1beta1", "Queue") => vec![name, text_or(s(v, "/spec/parent"), None)],
        ("ringleader.io/v1alpha1", "Node") => {
            let status = match at(v, "/status/ready").and_then(Value::as_bool) {
                Some(false) => "NotReady",
                _ if at(v, "/spec/stopped").and_then(Value::as_bool) == Some(true) => "Stopped",
                Some(true) => "Ready",
                None => "Unknown",
            };
            let list = |p: &str| {
                let ids: Vec<String> = v
                    .pointer(p)
                    .and_then(Value::as_array)
                    .map_or(Vec::new(), |a| a.iter().map(|x| x.to_string()).collect());
                if ids.is_empty() {
                    "<none>".to_string()
                } else {
                    ids.join(",")
                }
            };
            vec![
                name,
                json!(status),
                json!(or_none(s(v, "/spec/profile"))),
                json!(or_none(s(v, "/spec/address"))),
                age(v, now),
                json!(list("/status/unhealthyDevices")),
                json!(list("/status/networkUnhealthyDevices")),
            ]
        }
        (_, "PyTorchJob" | "TFJob" | "AscendJob") => {
            let last = v
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.last())
                .and_then(|c| c.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![name, text_or(last, ringleader_phase(v)), age(v, now)]
        }
        _ => vec![name, age(v, now)],
    }
}

/// ringleader's own phase of a job (`status.ringleader.phase`), shown where
/// the upstream status field is not written.
fn ringleader_phase(v: &Value) -> Option<&str> {
    at(v, "/status/ringleader/phase").and_then(Value::as_str).filter(|p| !p.is_empty())
}

/// Pods of a job in one state (`running`, `succeeded` …) summed over its
/// roles, from the counts ringleader's controller keeps.
fn replica_count(v: &Value, state: &str) -> i64 {
    ["/status/ringleader/replicaStatuses", "/status/ringleader/replica_statuses"]
        .iter()
        .find_map(|p| at(v, p).and_then(Value::as_object))
        .map_or(0, |roles| roles.values().filter_map(|r| r.get(state).and_then(Value::as_i64)).sum())
}

fn template_cells(v: &Value) -> [Value; 3] {
    let containers = at(v, "/spec/template/spec/containers").and_then(Value::as_array);
    let join = |field: &str| {
        containers.map_or(String::new(), |c| {
            c.iter().map(|c| c.get(field).and_then(Value::as_str).unwrap_or("")).collect::<Vec<_>>().join(",")
        })
    };
    let selector = v
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(","))
        .unwrap_or_default();
    [json!(join("name")), json!(join("image")), json!(or_none(&selector))]
}

fn condition_true(v: &Value, kind: &str) -> bool {
    at(v, "/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| s(c, "/type") == kind && s(c, "/status") == "True"))
}

fn batch_job_cells(v: &Value, now: f64) -> Vec<Value> {
    let status = if condition_true(v, "Failed") {
        "Failed"
    } else if condition_true(v, "Complete") || condition_true(v, "Succeeded") {
        "Complete"
    } else if condition_true(v, "Suspended") {
        "Suspended"
    } else if at(v, "/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else {
        // ringleader's controller writes its own phase rather than conditions.
        match ringleader_phase(v) {
            Some("Completed") => "Complete",
            Some("Failed" | "Aborted") => "Failed",
            _ => "Running",
        }
    };
    let succeeded = int(v, "/status/succeeded").unwrap_or_else(|| replica_count(v, "succeeded"));
    let completions = match (int(v, "/spec/completions"), int(v, "/spec/parallelism")) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    };
    let duration = match (parse_rfc3339(s(v, "/status/startTime")), parse_rfc3339(s(v, "/status/completionTime"))) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now - start),
        (Some(start), Some(end)) => human_duration(end - start),
    };
    let mut r = vec![json!(s(v, "/metadata/name")), json!(status), json!(completions), json!(duration), age(v, now)];
    r.extend(template_cells(v));
    r
}

/// The pod's STATUS as kubectl computes it (`printPod`).
pub fn pod_status(v: &Value) -> String {
    let mut reason = match (s(v, "/status/reason"), s(v, "/status/phase")) {
        ("", "") => "Pending".to_string(),
        ("", phase) => phase.to_string(),
        (r, _) => r.to_string(),
    };
    let statuses = at(v, "/status/containerStatuses").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut has_running = false;
    for c in statuses.iter().rev() {
        let waiting = s(c, "/state/waiting/reason");
        let terminated = at(c, "/state/terminated");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if let Some(t) = terminated {
            reason = match (s(t, "/reason"), int(t, "/signal"), int(t, "/exitCode")) {
                ("", Some(sig), _) if sig != 0 => format!("Signal:{sig}"),
                ("", _, code) => format!("ExitCode:{}", code.unwrap_or(0)),
                (r, _, _) => r.to_string(),
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true) && at(c, "/state/running").is_some() {
            has_running = true;
        }
    }
    if reason == "Completed" && has_running {
        reason = if condition_true(v, "Ready") { "Running".into() } else { "NotReady".into() };
    }
    // A pod that succeeded without container statuses still reads as kubectl users expect.
    if reason == "Succeeded" {
        reason = "Completed".into();
    }
    if at(v, "/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        reason = if s(v, "/status/reason") == "NodeLost" { "Unknown".into() } else { "Terminating".into() };
    }
    reason
}

fn pod_cells(v: &Value, now: f64) -> Vec<Value> {
    let statuses = at(v, "/status/containerStatuses").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let total = at(v, "/spec/containers").and_then(Value::as_array).map_or(statuses.len(), Vec::len);
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true) && at(c, "/state/running").is_some())
        .count();
    let restarts: i64 = statuses.iter().filter_map(|c| int(c, "/restartCount")).sum();
    let last_restart = statuses
        .iter()
        .filter_map(|c| parse_rfc3339(s(c, "/lastState/terminated/finishedAt")))
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
    let restarts = match last_restart {
        Some(t) => format!("{restarts} ({} ago)", human_duration(now - t)),
        None => restarts.to_string(),
    };
    let gates = at(v, "/spec/readinessGates").and_then(Value::as_array).map_or(0, Vec::len);
    let gates = if gates == 0 {
        "<none>".to_string()
    } else {
        let met = v
            .pointer("/spec/readinessGates")
            .and_then(Value::as_array)
            .map_or(0, |g| g.iter().filter(|g| condition_true(v, s(g, "/conditionType"))).count());
        format!("{met}/{gates}")
    };
    vec![
        json!(s(v, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(pod_status(v)),
        json!(restarts),
        age(v, now),
        json!(or_none(s(v, "/status/podIP"))),
        json!(or_none(s(v, "/spec/nodeName"))),
        json!(or_none(s(v, "/status/nominatedNodeName"))),
        json!(gates),
    ]
}

fn node_cells(v: &Value, now: f64) -> Vec<Value> {
    let conditions = at(v, "/status/conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let ready = conditions.iter().find(|c| s(c, "/type") == "Ready");
    let mut status = match ready.map(|c| s(c, "/status")) {
        Some("True") => "Ready".to_string(),
        Some("False") => "NotReady".to_string(),
        _ => "Unknown".to_string(),
    };
    if at(v, "/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let labels = at(v, "/metadata/labels").and_then(Value::as_object);
    let mut roles: Vec<String> = labels
        .map(|l| {
            l.iter()
                .filter_map(|(k, val)| {
                    if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                        Some(role.to_string())
                    } else if k == "kubernetes.io/role" {
                        val.as_str().map(str::to_string)
                    } else {
                        None
                    }
                })
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.join(",") };
    let address = |kind: &str| {
        at(v, "/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|a| s(a, "/type") == kind))
            .map_or("<none>".to_string(), |a| or_none(s(a, "/address")))
    };
    vec![
        json!(s(v, "/metadata/name")),
        json!(status),
        json!(roles),
        age(v, now),
        json!(s(v, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_none(s(v, "/status/nodeInfo/osImage"))),
        json!(or_none(s(v, "/status/nodeInfo/kernelVersion"))),
        json!(or_none(s(v, "/status/nodeInfo/containerRuntimeVersion"))),
    ]
}

fn event_cells(v: &Value, now: f64) -> Vec<Value> {
    let first = match s(v, "/firstTimestamp") {
        "" => since(s(v, "/eventTime"), now),
        t => since(t, now),
    };
    let mut count = int(v, "/count").unwrap_or(0);
    let last = if at(v, "/series").is_some_and(|x| !x.is_null()) {
        count = int(v, "/series/count").unwrap_or(count);
        since(s(v, "/series/lastObservedTime"), now)
    } else {
        match s(v, "/lastTimestamp") {
            "" => first.clone(),
            t => since(t, now),
        }
    };
    if count == 0 {
        count = 1;
    }
    let kind = s(v, "/involvedObject/kind").to_ascii_lowercase();
    let target = match s(v, "/involvedObject/name") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let source = match (s(v, "/source/component"), s(v, "/source/host")) {
        ("", _) => {
            let (controller, instance) = (s(v, "/reportingComponent"), s(v, "/reportingInstance"));
            match (controller, instance) {
                ("", _) => String::new(),
                (c, "") => c.to_string(),
                (c, i) => format!("{c}, {i}"),
            }
        }
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    vec![
        json!(last),
        json!(s(v, "/type")),
        json!(s(v, "/reason")),
        json!(target),
        json!(s(v, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(v, "/message").trim()),
        json!(first),
        json!(count),
        json!(s(v, "/metadata/name")),
    ]
}

/// The `meta.k8s.io` version a client's `Accept` header asks a Table in, if any.
pub fn requested_version(accept: &str) -> Option<&'static str> {
    let mut found = None;
    for part in accept.split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        let has = |p: &str| params.iter().any(|x| x.eq_ignore_ascii_case(p));
        if has("as=Table") && has("g=meta.k8s.io") {
            if has("v=v1") {
                return Some("v1");
            }
            if has("v=v1beta1") {
                found = Some("v1beta1");
            }
        }
    }
    found
}

/// The row's `object` per `include`, taken out of `v`.
fn row_object(mut v: Value, include: IncludeObject, version: &str) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(v),
        IncludeObject::Metadata => Some(json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": v.get_mut("metadata").map(Value::take).unwrap_or_else(|| json!({})),
        })),
    }
}

/// One row: its cells and, per `include`, its object.
pub fn row(rt: &ResourceType, v: Value, include: IncludeObject, version: &str, now: f64) -> Value {
    let mut r = Map::new();
    r.insert("cells".into(), Value::Array(cells(rt, &v, now)));
    if let Some(o) = row_object(v, include, version) {
        r.insert("object".into(), o);
    }
    Value::Object(r)
}

/// A Table of `objects` with the list metadata `list_meta`
/// (`resourceVersion`, `continue`), in `meta.k8s.io/{version}`.
pub fn table_for(
    rt: &ResourceType,
    objects: Vec<Value>,
    list_meta: Value,
    include: IncludeObject,
    version: &str,
    now: f64,
) -> Value {
    let defs: Vec<Value> = columns(rt)
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "type": c.kind, "format": c.format,
                "description": c.description, "priority": c.priority,
            })
        })
        .collect();
    let rows: Vec<Value> = objects.into_iter().map(|o| row(rt, o, include, version, now)).collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// The resource type of an object's `apiVersion`/`kind` (the core v1 Node
/// view included even before it has a row of its own).
fn type_of(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    ringleader_registry::resources::by_kind(api_version, kind)
        .or_else(|| (api_version, kind).eq(&("v1", "Node")).then_some(&ringleader_registry::node_view::CORE_NODES))
}

/// `value` (an object or a `…List`) as a Table; anything else (a `Status`)
/// unchanged. Takes the value so that rows move their objects rather than
/// copy them.
pub fn render(mut value: Value, include: IncludeObject, version: &str, now: f64) -> Value {
    let (api_version, kind) = (s(&value, "/apiVersion").to_string(), s(&value, "/kind").to_string());
    if let (Some(item_kind), Some(items)) =
        (kind.strip_suffix("List"), value.get_mut("items").and_then(Value::as_array_mut))
    {
        if let Some(rt) = type_of(&api_version, item_kind) {
            let items = std::mem::take(items);
            let mut meta = Map::new();
            for field in ["resourceVersion", "continue", "remainingItemCount"] {
                if let Some(x) = at(&value, &format!("/metadata/{field}")).filter(|x| !x.is_null()) {
                    meta.insert(field.to_string(), x.clone());
                }
            }
            return table_for(rt, items, Value::Object(meta), include, version, now);
        }
    }
    match type_of(&api_version, &kind) {
        Some(rt) => {
            let meta = match at(&value, "/metadata/resourceVersion") {
                Some(rv) => json!({ "resourceVersion": rv }),
                None => json!({}),
            };
            table_for(rt, vec![value], meta, include, version, now)
        }
        None => value,
    }
}

#[cfg(test)]
mod tests;
