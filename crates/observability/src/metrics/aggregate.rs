//! The store-derived gauges, kept up to date one change at a time.
//!
//! Each object's share of the figures (its phase, queue, held devices …) is
//! remembered; a change subtracts the old share and adds the new one. A
//! scrape then costs the number of series (nodes × devices, queues, kinds),
//! never the number of pods: 50,000 pods are summed once, on the first list,
//! and not again.

use super::objects::{DEVICES_ANNOTATION, QUEUE_KEY};
use crate::history;
use ringleader_api::time::parse_rfc3339;
use ringleader_store::{EventType, ObjectKey};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const POD: (&str, &str) = ("v1", "Pod");
const NODE: (&str, &str) = ("ringleader.io/v1alpha1", "Node");
const QUEUE: (&str, &str) = ("scheduling.volcano.sh/v1beta1", "Queue");
/// Queue of a pod or job that names none (Volcano's default queue).
const DEFAULT_QUEUE: &str = "default";
/// Resource of held devices when neither the pod's limits nor the node's
/// profile names one.
const UNKNOWN: &str = "unknown";

/// One pod's share of the figures.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PodShare {
    namespace: String,
    phase: String,
    /// `Some(reason)` while the pod waits to run: `Unschedulable` (or the
    /// scheduler's reason), `Scheduled` (bound, not started) or `Waiting`.
    pending: Option<String>,
    queue: String,
    /// Node and devices it holds (empty when it holds none).
    node: String,
    devices: Vec<String>,
    /// Extended resource its devices count against.
    resource: String,
    /// The job that controls it (its controller owner reference).
    owner: Option<ObjectKey>,
    /// CPU (nanocores) and memory (bytes) its agent last sampled, while running.
    usage: Option<(u64, u64)>,
}

/// One node's devices and state.
#[derive(Debug, Clone, PartialEq, Default)]
struct NodeShare {
    /// `spec`, to reparse the hardware only when it changes (heartbeats
    /// rewrite the status every few seconds).
    spec: Value,
    resource: String,
    model: String,
    devices: Vec<String>,
    unhealthy: BTreeSet<String>,
    /// `true`, `false` or `unknown`, as kube-state-metrics writes Ready.
    ready: &'static str,
    /// CPU (nanocores) and memory (bytes) of its pods, as its agent sums them.
    usage: Option<(u64, u64)>,
    /// Figures of its detected devices (`status.deviceTelemetry`).
    telemetry: Vec<DeviceTelemetry>,
}

/// One device's figures as its agent read them; `None` where the tool
/// could not read one (left out of the metrics, never shown as 0).
#[derive(Debug, Clone, PartialEq, Default)]
struct DeviceTelemetry {
    device: String,
    utilization_ratio: Option<f64>,
    memory_used_bytes: Option<f64>,
    memory_total_bytes: Option<f64>,
    temperature_celsius: Option<f64>,
    power_watts: Option<f64>,
}

/// Most device entries read from one node (an agent's list is cut there,
/// so one node cannot flood the scrape).
const MAX_TELEMETRY_DEVICES: usize = 64;

/// The node's `status.deviceTelemetry`, for the devices its hardware has
/// (any ID when the hardware is unknown); malformed entries and figures are
/// skipped.
fn device_telemetry(node: &Value, devices: &[String]) -> Vec<DeviceTelemetry> {
    let Some(entries) = node.pointer("/status/deviceTelemetry").and_then(Value::as_array) else { return Vec::new() };
    let figure = |e: &Value, k: &str, max: f64| {
        e.get(k).and_then(Value::as_f64).filter(|v| v.is_finite() && *v >= 0.0 && *v <= max)
    };
    let mut out: Vec<DeviceTelemetry> = Vec::new();
    for e in entries.iter().take(MAX_TELEMETRY_DEVICES) {
        let Some(id) = e.get("id").and_then(Value::as_u64) else { continue };
        let device = id.to_string();
        if (!devices.is_empty() && !devices.contains(&device)) || out.iter().any(|t| t.device == device) {
            continue;
        }
        out.push(DeviceTelemetry {
            utilization_ratio: figure(e, "utilizationPercent", 100.0).map(|p| p / 100.0),
            memory_used_bytes: figure(e, "memoryUsedBytes", f64::MAX),
            memory_total_bytes: figure(e, "memoryTotalBytes", f64::MAX),
            temperature_celsius: e.get("temperatureC").and_then(Value::as_f64).filter(|v| v.is_finite()),
            power_watts: figure(e, "powerW", f64::MAX),
            device,
        });
    }
    out
}

/// One queue's settings.
#[derive(Debug, Clone, PartialEq, Default)]
struct QueueShare {
    weight: Option<f64>,
    deserved: BTreeMap<String, f64>,
    capability: BTreeMap<String, f64>,
}

/// One job's share.
#[derive(Debug, Clone, PartialEq)]
struct JobShare {
    kind: String,
    group: String,
    phase: String,
    started: bool,
    /// The queue it names (its pods are counted there).
    queue: Option<String>,
}

/// Every store-derived figure, and what each object contributed to it.
#[derive(Debug, Default)]
pub struct Aggregate {
    pods: HashMap<ObjectKey, PodShare>,
    nodes: BTreeMap<String, NodeShare>,
    queues: BTreeMap<String, QueueShare>,
    jobs: HashMap<ObjectKey, JobShare>,
    /// Objects per `(apiVersion, kind)`.
    objects: BTreeMap<(String, String), u64>,
    pods_by_phase: BTreeMap<(String, String), u64>,
    pending: BTreeMap<(String, String), u64>,
    /// Devices held per (queue, resource).
    queue_allocated: BTreeMap<(String, String), u64>,
    /// Pods holding each (node, device): a count, as fractional (vNPU)
    /// pods may share one.
    held: BTreeMap<(String, String), u32>,
    jobs_by_phase: BTreeMap<(String, String, String), u64>,
    /// Pods per phase ([`history::names::JOB_PHASES`] order) of each job.
    job_pods: HashMap<ObjectKey, [u64; 4]>,
    /// Whether the first list has been loaded: job starts seen before it
    /// are history, not observations.
    loaded: bool,
}

/// A family's series: labels and value.
pub type Series = Vec<(Vec<(&'static str, String)>, f64)>;

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn add<K: Ord>(map: &mut BTreeMap<K, u64>, key: K, n: u64) {
    *map.entry(key).or_default() += n;
}

fn sub<K: Ord>(map: &mut BTreeMap<K, u64>, key: K, n: u64) {
    if let Some(v) = map.get_mut(&key) {
        *v = v.saturating_sub(n);
        if *v == 0 {
            map.remove(&key);
        }
    }
}

/// The queue an object names itself: Volcano's label or annotation, or
/// `spec.queue`; `None` when it names none.
fn named_queue(object: &Value) -> Option<String> {
    str_at(object, &format!("/metadata/labels/{}", QUEUE_KEY.replace('/', "~1")))
        .or_else(|| str_at(object, &format!("/metadata/annotations/{}", QUEUE_KEY.replace('/', "~1"))))
        .or_else(|| str_at(object, "/spec/queue"))
        .filter(|q| !q.is_empty())
        .map(str::to_string)
}

/// A job's queue: as [`named_queue`], else the training operators'
/// `spec.runPolicy.schedulingPolicy.queue` or the annotation the Volcano
/// plugin reads (the pods of such jobs carry no queue of their own).
fn job_queue(job: &Value) -> Option<String> {
    named_queue(job)
        .or_else(|| str_at(job, "/spec/runPolicy/schedulingPolicy/queue").map(str::to_string))
        .or_else(|| str_at(job, "/metadata/annotations/scheduling.volcano.sh~1queue-name").map(str::to_string))
        .filter(|q| !q.is_empty())
}

/// The extended resource (a name with a `/`) a pod's containers ask for.
fn pod_resource(pod: &Value) -> Option<String> {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array)?;
    containers.iter().find_map(|c| {
        ["limits", "requests"].iter().find_map(|section| {
            c.pointer(&format!("/resources/{section}"))
                .and_then(Value::as_object)
                .and_then(|m| m.keys().find(|k| k.contains('/')).cloned())
        })
    })
}

/// A pod's share; its queue is its own, else its job's (`jobs`), else `default`.
fn pod_share(pod: &Value, nodes: &BTreeMap<String, NodeShare>, jobs: &HashMap<ObjectKey, JobShare>) -> PodShare {
    let phase = str_at(pod, "/status/phase").unwrap_or("Pending").to_string();
    let node = str_at(pod, "/spec/nodeName").unwrap_or_default().to_string();
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null());
    let finished = matches!(phase.as_str(), "Succeeded" | "Failed");
    let pending = (phase == "Pending" && !deleting).then(|| {
        if !node.is_empty() {
            return "Scheduled".to_string();
        }
        let scheduled = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled")));
        match scheduled {
            Some(c) if c.get("status").and_then(Value::as_str) == Some("False") => {
                c.get("reason").and_then(Value::as_str).unwrap_or("Unschedulable").to_string()
            }
            _ => "Waiting".to_string(),
        }
    });
    let devices: Vec<String> = if finished || node.is_empty() {
        Vec::new()
    } else {
        let text = str_at(pod, &format!("/metadata/annotations/{}", DEVICES_ANNOTATION.replace('/', "~1")));
        let set: BTreeSet<&str> =
            text.unwrap_or_default().split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
        set.into_iter().map(str::to_string).collect()
    };
    let resource = pod_resource(pod)
        .or_else(|| nodes.get(&node).map(|n| n.resource.clone()).filter(|r| !r.is_empty()))
        .unwrap_or_else(|| UNKNOWN.to_string());
    let namespace = str_at(pod, "/metadata/namespace").unwrap_or("default").to_string();
    let owner = owner_of(pod, &namespace);
    let queue = named_queue(pod)
        .or_else(|| owner.as_ref().and_then(|o| jobs.get(o)?.queue.clone()))
        .unwrap_or_else(|| DEFAULT_QUEUE.to_string());
    PodShare {
        owner,
        usage: crate::resource_metrics::pod_usage(pod),
        namespace,
        phase,
        pending,
        queue,
        node,
        devices,
        resource,
    }
}

fn node_share(node: &Value, previous: Option<&NodeShare>) -> NodeShare {
    let spec = node.get("spec").cloned().unwrap_or(Value::Null);
    let (resource, model, devices) = match previous {
        Some(p) if p.spec == spec => (p.resource.clone(), p.model.clone(), p.devices.clone()),
        _ => match super::objects::node_profile(node) {
            Some(p) => (p.resource_name.clone(), p.chip.clone(), p.devices.iter().map(|d| d.id.to_string()).collect()),
            None => (String::new(), String::new(), Vec::new()),
        },
    };
    let mut unhealthy = BTreeSet::new();
    for field in ["/status/unhealthyDevices", "/status/networkUnhealthyDevices"] {
        if let Some(ids) = node.pointer(field).and_then(Value::as_array) {
            unhealthy.extend(ids.iter().filter_map(Value::as_u64).map(|d| d.to_string()));
        }
    }
    let stopped = node.pointer("/spec/stopped").and_then(Value::as_bool) == Some(true);
    let ready = match node.pointer("/status/ready").and_then(Value::as_bool) {
        _ if stopped => "false",
        Some(true) => "true",
        Some(false) | None => "unknown",
    };
    let usage = crate::resource_metrics::node_usage(node);
    let telemetry = device_telemetry(node, &devices);
    NodeShare { spec, resource, model, devices, unhealthy, ready, usage, telemetry }
}

impl NodeShare {
    /// Device figures that stand for now: only while the node is Ready (a
    /// stopped or silent agent's last figures are not current).
    fn current_telemetry(&self) -> &[DeviceTelemetry] {
        if self.ready == "true" {
            &self.telemetry
        } else {
            &[]
        }
    }

    /// `node`, `device`, `resource`, `model` of one of its devices.
    fn device_labels(&self, name: &str, device: &str) -> Vec<(&'static str, String)> {
        let or_unknown = |s: &str| if s.is_empty() { UNKNOWN.to_string() } else { s.to_string() };
        vec![
            ("node", name.to_string()),
            ("device", device.to_string()),
            ("resource", or_unknown(&self.resource)),
            ("model", or_unknown(&self.model)),
        ]
    }
}

/// The key of a pod's controlling owner (jobs live in the pod's namespace).
fn owner_of(pod: &Value, namespace: &str) -> Option<ObjectKey> {
    let refs = pod.pointer("/metadata/ownerReferences")?.as_array()?;
    let owner = refs.iter().find(|r| r.get("controller").and_then(Value::as_bool).unwrap_or(true))?;
    let s = |k: &str| owner.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
    Some(ObjectKey::new(s("apiVersion")?, s("kind")?, namespace, s("name")?))
}

/// A quantity as a number: integers and decimals; `m` (milli) and the
/// binary/decimal suffixes of Kubernetes quantities.
fn quantity(v: &Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let s = v.as_str()?.trim();
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (suffix, factor) in suffixes {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<f64>().ok().filter(|n| n.is_finite()).map(|n| n * factor);
        }
    }
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

fn resource_map(v: Option<&Value>) -> BTreeMap<String, f64> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), quantity(v)?))).collect())
        .unwrap_or_default()
}

fn queue_share(queue: &Value) -> QueueShare {
    QueueShare {
        weight: queue.pointer("/spec/weight").and_then(quantity),
        deserved: resource_map(queue.pointer("/spec/deserved")),
        capability: resource_map(queue.pointer("/spec/capability")),
    }
}

fn job_share(key: &ObjectKey, job: &Value) -> Option<JobShare> {
    let rt = ringleader_registry::resources::by_kind(&key.api_version, &key.kind).filter(|rt| rt.job)?;
    let status = job.pointer("/status/ringleader");
    Some(JobShare {
        kind: rt.kind.to_string(),
        group: rt.group.to_string(),
        phase: status.and_then(|s| s.get("phase")).and_then(Value::as_str).unwrap_or("Pending").to_string(),
        started: status.and_then(|s| s.get("start_time")).is_some_and(|t| !t.is_null()),
        queue: job_queue(job),
    })
}

/// Seconds from a job's creation to its first run, read from the object.
fn start_duration(job: &Value) -> Option<f64> {
    let created = str_at(job, "/metadata/creationTimestamp").and_then(parse_rfc3339)?;
    let started = job.pointer("/status/ringleader/start_time").and_then(Value::as_f64)?;
    Some((started - created).max(0.0))
}

impl Aggregate {
    /// Loads the objects of a first list (or a relist: the figures are reset).
    pub fn load<'a>(&mut self, objects: impl IntoIterator<Item = (&'a ObjectKey, &'a Value)>) {
        *self = Aggregate::default();
        let objects: Vec<_> = objects.into_iter().collect();
        // Nodes first: a pod's resource falls back to its node's; pods
        // last: one without a queue of its own counts in its job's.
        let (nodes, rest): (Vec<_>, Vec<_>) =
            objects.into_iter().partition(|(k, _)| (k.api_version.as_str(), k.kind.as_str()) == NODE);
        let (pods, rest): (Vec<_>, Vec<_>) =
            rest.into_iter().partition(|(k, _)| (k.api_version.as_str(), k.kind.as_str()) == POD);
        for (key, object) in nodes.into_iter().chain(rest).chain(pods) {
            self.apply(EventType::Added, key, object);
        }
        self.loaded = true;
    }

    /// Applies one change; returns the job's start duration (seconds) when
    /// this change is the job's first run.
    pub fn apply(&mut self, kind: EventType, key: &ObjectKey, object: &Value) -> Option<f64> {
        let type_key = (key.api_version.clone(), key.kind.clone());
        match kind {
            EventType::Added => add(&mut self.objects, type_key, 1),
            EventType::Deleted => sub(&mut self.objects, type_key, 1),
            EventType::Modified => {}
        }
        let deleted = kind == EventType::Deleted;
        match (key.api_version.as_str(), key.kind.as_str()) {
            POD => {
                if let Some(old) = self.pods.remove(key) {
                    self.pod_delta(&old, false);
                }
                if !deleted {
                    let share = pod_share(object, &self.nodes, &self.jobs);
                    self.pod_delta(&share, true);
                    self.pods.insert(key.clone(), share);
                }
                None
            }
            NODE => {
                if deleted {
                    self.nodes.remove(&key.name);
                } else {
                    let share = node_share(object, self.nodes.get(&key.name));
                    self.nodes.insert(key.name.clone(), share);
                }
                None
            }
            QUEUE => {
                if deleted {
                    self.queues.remove(&key.name);
                } else {
                    self.queues.insert(key.name.clone(), queue_share(object));
                }
                None
            }
            _ => self.job_change(key, object, deleted),
        }
    }

    fn job_change(&mut self, key: &ObjectKey, object: &Value, deleted: bool) -> Option<f64> {
        let old = self.jobs.remove(key);
        if let Some(o) = &old {
            sub(&mut self.jobs_by_phase, (o.kind.clone(), o.group.clone(), o.phase.clone()), 1);
        }
        if deleted {
            return None;
        }
        let share = job_share(key, object)?;
        add(&mut self.jobs_by_phase, (share.kind.clone(), share.group.clone(), share.phase.clone()), 1);
        let first_run = self.loaded && share.started && !old.is_some_and(|o| o.started);
        self.jobs.insert(key.clone(), share);
        if first_run {
            start_duration(object)
        } else {
            None
        }
    }

    fn pod_delta(&mut self, share: &PodShare, plus: bool) {
        let n = share.devices.len() as u64;
        let op = if plus { add } else { sub };
        op(&mut self.pods_by_phase, (share.namespace.clone(), share.phase.clone()), 1);
        if let Some(reason) = &share.pending {
            op(&mut self.pending, (share.queue.clone(), reason.clone()), 1);
        }
        if n > 0 {
            op(&mut self.queue_allocated, (share.queue.clone(), share.resource.clone()), n);
        }
        if let (Some(owner), Some(i)) =
            (&share.owner, history::names::JOB_PHASES.iter().position(|p| *p == share.phase))
        {
            let counts = self.job_pods.entry(owner.clone()).or_default();
            counts[i] = if plus { counts[i] + 1 } else { counts[i].saturating_sub(1) };
            if counts.iter().all(|c| *c == 0) {
                self.job_pods.remove(owner);
            }
        }
        for d in &share.devices {
            let key = (share.node.clone(), d.clone());
            if plus {
                *self.held.entry(key).or_default() += 1;
            } else if let Some(c) = self.held.get_mut(&key) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    self.held.remove(&key);
                }
            }
        }
    }

    /// One round of history samples: `(series name, value)` for every node,
    /// running pod with a usage sample, job and queue (see
    /// [`history::names`]). Costs one pass over pods, nodes, jobs and queues
    /// in memory; the store is not read.
    pub fn history_figures(&self) -> Vec<(String, f64)> {
        use history::names;
        let mut out = Vec::new();
        let mut held_per_node: BTreeMap<&str, u64> = BTreeMap::new();
        for (node, _) in self.held.keys() {
            *held_per_node.entry(node.as_str()).or_default() += 1;
        }
        let mut resources: BTreeSet<&str> = BTreeSet::new();
        for (name, node) in &self.nodes {
            let resource = if node.resource.is_empty() { UNKNOWN } else { node.resource.as_str() };
            if !node.resource.is_empty() {
                resources.insert(resource);
            }
            let held = held_per_node.get(name.as_str()).copied().unwrap_or(0);
            out.push((names::node(name, &format!("devices-allocated/{resource}")), held as f64));
            out.push((names::node(name, &format!("devices-total/{resource}")), node.devices.len() as f64));
            out.push((names::node(name, "ready"), if node.ready == "true" { 1.0 } else { 0.0 }));
            if let Some((nanocores, bytes)) = node.usage {
                out.push((names::node(name, "cpu"), nanocores as f64 / 1e9));
                out.push((names::node(name, "memory"), bytes as f64));
            }
            for t in node.current_telemetry() {
                let figures = [t.utilization_ratio, t.memory_used_bytes, t.temperature_celsius, t.power_watts];
                for ((figure, _), value) in names::DEVICE_FIGURES.iter().zip(figures) {
                    if let Some(v) = value {
                        out.push((names::device(name, &t.device, figure), v));
                    }
                }
            }
        }
        for (key, pod) in &self.pods {
            if let Some((nanocores, bytes)) = pod.usage {
                out.push((names::pod(&key.namespace, &key.name, "cpu"), nanocores as f64 / 1e9));
                out.push((names::pod(&key.namespace, &key.name, "memory"), bytes as f64));
            }
        }
        for key in self.jobs.keys() {
            let Some(rt) = ringleader_registry::resources::by_kind(&key.api_version, &key.kind) else { continue };
            let counts = self.job_pods.get(key).copied().unwrap_or_default();
            for (phase, n) in names::JOB_PHASES.iter().zip(counts) {
                out.push((names::job(&key.namespace, &rt.qualified(), &key.name, phase), n as f64));
            }
        }
        resources.extend(self.queue_allocated.keys().map(|(_, r)| r.as_str()));
        for queue in self.queues.keys() {
            for resource in &resources {
                let n = self.queue_allocated.get(&(queue.clone(), resource.to_string())).copied().unwrap_or(0);
                out.push((names::queue(queue, resource), n as f64));
            }
        }
        out
    }

    /// Every gauge family: `(name, help, series)`, in a fixed order.
    pub fn families(&self) -> Vec<(&'static str, &'static str, Series)> {
        let mut out = Vec::new();
        out.push((
            "scheduler_pending_pods",
            "Pods waiting to run, by Volcano queue and reason (Unschedulable: the scheduler found no place; Scheduled: bound, not started; Waiting: not yet tried).",
            self.pending
                .iter()
                .map(|((q, r), n)| (vec![("queue", q.clone()), ("reason", r.clone())], *n as f64))
                .collect(),
        ));
        out.push((
            "ringleader_pods",
            "Pods by namespace and phase.",
            self.pods_by_phase
                .iter()
                .map(|((ns, p), n)| (vec![("namespace", ns.clone()), ("phase", p.clone())], *n as f64))
                .collect(),
        ));
        out.push((
            "ringleader_jobs",
            "Jobs by kind, API group and phase (the job controller's phase).",
            self.jobs_by_phase
                .iter()
                .map(|((k, g, p), n)| {
                    (vec![("kind", k.clone()), ("group", g.clone()), ("phase", p.clone())], *n as f64)
                })
                .collect(),
        ));
        out.extend(self.queue_families());
        out.extend(self.node_families());
        out.extend(self.telemetry_families());
        out.push((
            "apiserver_storage_objects",
            "Objects stored, by resource.",
            self.objects
                .iter()
                .map(|((api_version, kind), n)| {
                    let resource = ringleader_registry::resources::by_kind(api_version, kind)
                        .map(|rt| rt.qualified())
                        .unwrap_or_else(|| format!("{kind}.{api_version}"));
                    (vec![("resource", resource)], *n as f64)
                })
                .collect(),
        ));
        out
    }

    fn queue_families(&self) -> Vec<(&'static str, &'static str, Series)> {
        let scalar = |pick: fn(&QueueShare) -> &BTreeMap<String, f64>| -> Series {
            self.queues
                .iter()
                .flat_map(|(q, share)| {
                    pick(share)
                        .iter()
                        .filter(|(r, _)| r.contains('/'))
                        .map(move |(r, v)| (vec![("queue_name", q.clone()), ("resource", r.clone())], *v))
                })
                .collect()
        };
        vec![
            (
                "volcano_queue_allocated_scalar_resources",
                "Devices held by live pods of the queue, by extended resource.",
                self.queue_allocated
                    .iter()
                    .map(|((q, r), n)| (vec![("queue_name", q.clone()), ("resource", r.clone())], *n as f64))
                    .collect(),
            ),
            (
                "volcano_queue_deserved_scalar_resources",
                "The queue's spec.deserved, extended resources only.",
                scalar(|s| &s.deserved),
            ),
            (
                "volcano_queue_capability_scalar_resources",
                "The queue's spec.capability (its ceiling), extended resources only.",
                scalar(|s| &s.capability),
            ),
            (
                "volcano_queue_weight",
                "The queue's spec.weight.",
                self.queues.iter().filter_map(|(q, s)| Some((vec![("queue_name", q.clone())], s.weight?))).collect(),
            ),
        ]
    }

    /// The device telemetry gauges (DCGM exporter's figures under
    /// ringleader's names; docs/metrics.md gives the DCGM equivalents).
    fn telemetry_families(&self) -> Vec<(&'static str, &'static str, Series)> {
        type Pick = fn(&DeviceTelemetry) -> Option<f64>;
        let families: [(&'static str, &'static str, Pick); 5] = [
            (
                "ringleader_device_utilization_ratio",
                "Busy fraction of the device over its tool's last sample period (GPU utilisation; AI-core use on Ascend), 0-1.",
                |t| t.utilization_ratio,
            ),
            ("ringleader_device_memory_used_bytes", "Device memory in use (HBM on Ascend training chips).", |t| {
                t.memory_used_bytes
            }),
            ("ringleader_device_memory_total_bytes", "Device memory.", |t| t.memory_total_bytes),
            ("ringleader_device_temperature_celsius", "Device temperature.", |t| t.temperature_celsius),
            ("ringleader_device_power_watts", "Device power draw.", |t| t.power_watts),
        ];
        families
            .into_iter()
            .map(|(family, help, pick)| {
                let mut series = Series::new();
                for (name, node) in &self.nodes {
                    for t in node.current_telemetry() {
                        if let Some(v) = pick(t) {
                            series.push((node.device_labels(name, &t.device), v));
                        }
                    }
                }
                (family, help, series)
            })
            .collect()
    }

    fn node_families(&self) -> Vec<(&'static str, &'static str, Series)> {
        let mut allocated = Series::new();
        let mut healthy = Series::new();
        let mut ready = Series::new();
        let empty = NodeShare::default();
        let nodes: BTreeSet<&String> = self.nodes.keys().chain(self.held.keys().map(|(n, _)| n)).collect();
        for name in nodes {
            let node = self.nodes.get(name).unwrap_or(&empty);
            let held: BTreeSet<&String> = self
                .held
                .range((name.clone(), String::new())..)
                .take_while(|((n, _), _)| n == name)
                .map(|((_, d), _)| d)
                .collect();
            let devices: BTreeSet<&String> = node.devices.iter().chain(held.iter().copied()).collect();
            let resource = if node.resource.is_empty() { UNKNOWN.to_string() } else { node.resource.clone() };
            let model = if node.model.is_empty() { UNKNOWN.to_string() } else { node.model.clone() };
            for d in devices {
                let labels = vec![
                    ("node", name.clone()),
                    ("device", d.clone()),
                    ("resource", resource.clone()),
                    ("model", model.clone()),
                ];
                allocated.push((labels.clone(), if held.contains(d) { 1.0 } else { 0.0 }));
                if self.nodes.contains_key(name) {
                    healthy.push((labels, if node.unhealthy.contains(d) { 0.0 } else { 1.0 }));
                }
            }
            if self.nodes.contains_key(name) {
                for status in ["true", "false", "unknown"] {
                    ready.push((
                        vec![
                            ("node", name.clone()),
                            ("condition", "Ready".to_string()),
                            ("status", status.to_string()),
                        ],
                        if node.ready == status { 1.0 } else { 0.0 },
                    ));
                }
            }
        }
        vec![
            ("ringleader_device_allocated", "1 while a live pod holds the device, else 0.", allocated),
            ("ringleader_device_healthy", "1 unless the node reports the device (or its network) unhealthy.", healthy),
            ("kube_node_status_condition", "The node's Ready condition, one series per status.", ready),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, devs: &str, phase: &str, queue: Option<&str>) -> (ObjectKey, Value) {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "annotations": {DEVICES_ANNOTATION: devs}},
            "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            "status": {"phase": phase}});
        if let Some(q) = queue {
            p["metadata"]["labels"] = json!({QUEUE_KEY: q});
        }
        (ObjectKey::of(&p).expect("key"), p)
    }

    fn find(families: &[(&str, &str, Series)], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let (_, _, series) = families.iter().find(|(n, _, _)| *n == name)?;
        series
            .iter()
            .find(|(l, _)| labels.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v)))
            .map(|(_, v)| *v)
    }

    #[test]
    fn a_pod_without_a_queue_counts_in_its_jobs_queue() {
        let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "tj-r1", "namespace": "ns", "uid": "u1"},
            "spec": {"runPolicy": {"schedulingPolicy": {"queue": "train-a2"}}}});
        let queue =
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "train-a2"}});
        let (key, mut p) = pod("tj-r1-master-0", "n1", "0,1", "Running", None);
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "tj-r1", "uid": "u1", "controller": true}]);
        let (stray_key, stray) = pod("stray", "n1", "2", "Running", None);
        // Listed before its job: the load still finds the job's queue.
        let objects = [
            (key.clone(), p.clone()),
            (stray_key, stray),
            (ObjectKey::of(&job).expect("key"), job.clone()),
            (ObjectKey::of(&queue).expect("key"), queue),
        ];
        let mut agg = Aggregate::default();
        agg.load(objects.iter().map(|(k, v)| (k, v)));
        let gpu = "nvidia.com/gpu";
        let f = agg.families();
        let allocated =
            |q: &str| find(&f, "volcano_queue_allocated_scalar_resources", &[("queue_name", q), ("resource", gpu)]);
        assert_eq!((allocated("train-a2"), allocated("default")), (Some(2.0), Some(1.0)));
        let history = agg.history_figures();
        assert!(history.contains(&("queue/train-a2/devices-allocated/nvidia.com/gpu".to_string(), 2.0)), "{history:?}");

        // Live: the pod leaves, and its devices leave the job's queue.
        agg.apply(EventType::Deleted, &key, &p);
        let f = agg.families();
        assert_eq!(
            find(&f, "volcano_queue_allocated_scalar_resources", &[("queue_name", "train-a2"), ("resource", gpu)]),
            None
        );
    }

    #[test]
    fn figures_follow_changes_without_relisting() {
        let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true, "unhealthyDevices": [7]}});
        let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
            "spec": {"weight": 3, "capability": {"nvidia.com/gpu": 16, "cpu": "4"}, "deserved": {"nvidia.com/gpu": "8"}}});
        let waiting = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "ns"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
        let pods = [
            pod("a", "n1", "0,1", "Running", Some("research")),
            pod("b", "n1", "2", "Running", None),
            pod("c", "n1", "3", "Succeeded", None),
        ];
        let mut objects: Vec<(ObjectKey, Value)> = pods.to_vec();
        for o in [node, queue, waiting] {
            objects.push((ObjectKey::of(&o).expect("key"), o));
        }
        let mut agg = Aggregate::default();
        agg.load(objects.iter().map(|(k, v)| (k, v)));
        let f = agg.families();
        let gpu = "nvidia.com/gpu";
        assert_eq!(find(&f, "scheduler_pending_pods", &[("queue", "default"), ("reason", "Unschedulable")]), Some(1.0));
        assert_eq!(find(&f, "ringleader_pods", &[("phase", "Running")]), Some(2.0));
        assert_eq!(
            find(&f, "volcano_queue_allocated_scalar_resources", &[("queue_name", "research"), ("resource", gpu)]),
            Some(2.0)
        );
        assert_eq!(
            find(&f, "volcano_queue_allocated_scalar_resources", &[("queue_name", "default"), ("resource", gpu)]),
            Some(1.0)
        );
        assert_eq!(find(&f, "volcano_queue_capability_scalar_resources", &[("resource", gpu)]), Some(16.0));
        assert_eq!(find(&f, "volcano_queue_capability_scalar_resources", &[("resource", "cpu")]), None);
        assert_eq!(find(&f, "volcano_queue_deserved_scalar_resources", &[("resource", gpu)]), Some(8.0));
        assert_eq!(find(&f, "volcano_queue_weight", &[("queue_name", "research")]), Some(3.0));
        fn dev(d: &str) -> [(&str, &str); 3] {
            [("node", "n1"), ("device", d), ("resource", "nvidia.com/gpu")]
        }
        assert_eq!(find(&f, "ringleader_device_allocated", &dev("1")), Some(1.0));
        assert_eq!(find(&f, "ringleader_device_allocated", &dev("3")), Some(0.0));
        assert_eq!(find(&f, "ringleader_device_healthy", &dev("7")), Some(0.0));
        assert_eq!(find(&f, "ringleader_device_healthy", &dev("6")), Some(1.0));
        let (_, _, devices) = f.iter().find(|(n, _, _)| *n == "ringleader_device_allocated").expect("family");
        assert_eq!(devices.len(), 8);
        assert_eq!(find(&f, "kube_node_status_condition", &[("node", "n1"), ("status", "true")]), Some(1.0));
        assert_eq!(find(&f, "apiserver_storage_objects", &[("resource", "pods")]), Some(4.0));

        // Pod a finishes, b is deleted: their devices go back.
        let (ka, mut a) = pods[0].clone();
        a["status"]["phase"] = json!("Succeeded");
        agg.apply(EventType::Modified, &ka, &a);
        let (kb, b) = pods[1].clone();
        agg.apply(EventType::Deleted, &kb, &b);
        let f = agg.families();
        assert_eq!(find(&f, "volcano_queue_allocated_scalar_resources", &[("queue_name", "research")]), None);
        assert_eq!(find(&f, "ringleader_device_allocated", &dev("1")), Some(0.0));
        assert_eq!(find(&f, "ringleader_pods", &[("phase", "Running")]), None);
        assert_eq!(find(&f, "apiserver_storage_objects", &[("resource", "pods")]), Some(3.0));
    }

    #[test]
    fn a_job_start_is_observed_once_and_not_for_history() {
        let job = |started: Option<u64>| {
            let mut j = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": "j", "namespace": "ns", "creationTimestamp": "2023-11-14T22:13:20Z"},
                "status": {"ringleader": {"phase": "Pending"}}});
            if let Some(t) = started {
                j["status"]["ringleader"] = json!({"phase": "Running", "start_time": t});
            }
            j
        };
        let old = job(Some(1_700_000_000));
        let key = ObjectKey::of(&old).expect("key");
        let mut agg = Aggregate::default();
        agg.load([(&key, &old)]);
        assert_eq!(agg.apply(EventType::Modified, &key, &old), None, "started before the list: history");

        let mut agg = Aggregate::default();
        agg.load(std::iter::empty());
        assert_eq!(agg.apply(EventType::Added, &key, &job(None)), None);
        assert_eq!(agg.apply(EventType::Modified, &key, &job(Some(1_700_000_012))), Some(12.0));
        assert_eq!(agg.apply(EventType::Modified, &key, &job(Some(1_700_000_012))), None, "once per job");
        let f = agg.families();
        assert_eq!(
            find(&f, "ringleader_jobs", &[("kind", "Job"), ("group", "batch.volcano.sh"), ("phase", "Running")]),
            Some(1.0)
        );
    }

    #[test]
    fn history_figures_cover_nodes_pods_jobs_and_queues() {
        let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true, "usage":
            {"cpuNanos": 4_000_000_000u64, "memoryBytes": 1024, "at": 20.0, "prevCpuNanos": 2_000_000_000u64, "prevAt": 10.0}}});
        let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "j", "namespace": "ns"}, "status": {"ringleader": {"phase": "Running"}}});
        let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "default"}, "spec": {"weight": 1}});
        let (ka, mut a) = pod("a", "n1", "0,1", "Running", None);
        a["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j", "controller": true}]);
        a["metadata"]["annotations"]["ringleader.io/usage-cpu-nanos"] = json!("3000000000");
        a["metadata"]["annotations"]["ringleader.io/usage-memory-bytes"] = json!("52428800");
        a["metadata"]["annotations"]["ringleader.io/usage-at"] = json!("1764100010");
        a["metadata"]["annotations"]["ringleader.io/usage-prev-cpu-nanos"] = json!("1000000000");
        a["metadata"]["annotations"]["ringleader.io/usage-prev-at"] = json!("1764100000");
        let mut objects = vec![(ka.clone(), a.clone())];
        for o in [node, job, queue] {
            objects.push((ObjectKey::of(&o).expect("key"), o));
        }
        let mut agg = Aggregate::default();
        agg.load(objects.iter().map(|(k, v)| (k, v)));
        let figures: BTreeMap<String, f64> = agg.history_figures().into_iter().collect();
        let at = |name: &str| figures.get(name).copied();
        assert_eq!(at("node/n1/devices-allocated/nvidia.com/gpu"), Some(2.0));
        assert_eq!(at("node/n1/devices-total/nvidia.com/gpu"), Some(8.0));
        assert_eq!(at("node/n1/ready"), Some(1.0));
        assert_eq!(at("node/n1/cpu"), Some(0.2));
        assert_eq!(at("node/n1/memory"), Some(1024.0));
        assert_eq!(at("pod/ns/a/cpu"), Some(0.2));
        assert_eq!(at("pod/ns/a/memory"), Some(52_428_800.0));
        assert_eq!(at("job/ns/pytorchjobs.kubeflow.org/j/pods-Running"), Some(1.0));
        assert_eq!(at("job/ns/pytorchjobs.kubeflow.org/j/pods-Pending"), Some(0.0));
        assert_eq!(at("queue/default/devices-allocated/nvidia.com/gpu"), Some(2.0));
        for name in figures.keys() {
            assert!(history::names::parse(name).is_ok(), "{name}");
        }

        // The pod finishes: no usage, the job counts it Succeeded, devices go back.
        a["status"]["phase"] = json!("Succeeded");
        agg.apply(EventType::Modified, &ka, &a);
        let figures: BTreeMap<String, f64> = agg.history_figures().into_iter().collect();
        assert_eq!(figures.get("pod/ns/a/cpu"), None);
        assert_eq!(figures.get("job/ns/pytorchjobs.kubeflow.org/j/pods-Running"), Some(&0.0));
        assert_eq!(figures.get("job/ns/pytorchjobs.kubeflow.org/j/pods-Succeeded"), Some(&1.0));
        assert_eq!(figures.get("queue/default/devices-allocated/nvidia.com/gpu"), Some(&0.0));
        assert_eq!(figures.get("node/n1/devices-allocated/nvidia.com/gpu"), Some(&0.0));
    }

    #[test]
    fn device_telemetry_is_exported_for_ready_nodes_only() {
        let mut node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "g1"},
            "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true, "deviceTelemetry": [
                {"id": 0, "utilizationPercent": 37.0, "memoryUsedBytes": 1_073_741_824u64,
                 "memoryTotalBytes": 85_520_809_984u64, "temperatureC": 34.0, "powerW": 71.23, "at": 1.0},
                {"id": 1, "utilizationPercent": 0.0, "at": 1.0},
                {"id": 1, "utilizationPercent": 99.0, "at": 1.0},
                {"id": 9, "utilizationPercent": 50.0, "at": 1.0},
                {"id": 2, "utilizationPercent": 250.0, "powerW": -1.0, "temperatureC": "hot", "at": 1.0},
                {"utilizationPercent": 10.0}]}});
        let key = ObjectKey::of(&node).expect("key");
        let mut agg = Aggregate::default();
        agg.load([(&key, &node)]);
        let f = agg.families();
        let gpu0 = [("node", "g1"), ("device", "0"), ("resource", "nvidia.com/gpu")];
        assert_eq!(find(&f, "ringleader_device_utilization_ratio", &gpu0), Some(0.37));
        assert_eq!(find(&f, "ringleader_device_memory_used_bytes", &gpu0), Some(1_073_741_824.0));
        assert_eq!(find(&f, "ringleader_device_memory_total_bytes", &gpu0), Some(85_520_809_984.0));
        assert_eq!(find(&f, "ringleader_device_temperature_celsius", &gpu0), Some(34.0));
        assert_eq!(find(&f, "ringleader_device_power_watts", &gpu0), Some(71.23));
        let (_, _, util) = f.iter().find(|(n, _, _)| *n == "ringleader_device_utilization_ratio").expect("family");
        let devices: Vec<&str> =
            util.iter().filter_map(|(l, _)| l.iter().find(|(k, _)| *k == "device").map(|(_, v)| v.as_str())).collect();
        assert_eq!(devices, ["0", "1"], "first entry per ID, IDs the node has, figures in range");
        assert_eq!(find(&f, "ringleader_device_utilization_ratio", &[("device", "1")]), Some(0.0), "a real zero");
        assert_eq!(find(&f, "ringleader_device_power_watts", &[("device", "1")]), None, "absent, not zero");
        let model = util[0].0.iter().find(|(k, _)| *k == "model").map(|(_, v)| v.clone());
        assert!(model.is_some_and(|m| m.contains("H100")));

        let figures: BTreeMap<String, f64> = agg.history_figures().into_iter().collect();
        assert_eq!(figures.get("node/g1/device/0/utilization"), Some(&0.37));
        assert_eq!(figures.get("node/g1/device/0/memory"), Some(&1_073_741_824.0));
        assert_eq!(figures.get("node/g1/device/0/temperature"), Some(&34.0));
        assert_eq!(figures.get("node/g1/device/0/power"), Some(&71.23));
        assert_eq!(figures.get("node/g1/device/1/power"), None);
        for name in figures.keys() {
            assert!(history::names::parse(name).is_ok(), "{name}");
        }

        // The agent goes silent: its last figures are no longer current.
        node["status"]["ready"] = json!(false);
        agg.apply(EventType::Modified, &key, &node);
        let f = agg.families();
        assert_eq!(find(&f, "ringleader_device_utilization_ratio", &gpu0), None);
        assert!(!agg.history_figures().iter().any(|(n, _)| n.contains("/device/")));
        // A node without telemetry (virtual devices) has allocation and health only.
        let virtual_node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "v1"},
            "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true}});
        let vkey = ObjectKey::of(&virtual_node).expect("key");
        agg.apply(EventType::Added, &vkey, &virtual_node);
        let f = agg.families();
        assert_eq!(find(&f, "ringleader_device_healthy", &[("node", "v1"), ("device", "0")]), Some(1.0));
        assert_eq!(find(&f, "ringleader_device_temperature_celsius", &[("node", "v1")]), None);
    }

    #[test]
    fn quantities_parse_or_are_left_out() {
        assert_eq!(quantity(&json!("500m")), Some(0.5));
        assert_eq!(quantity(&json!("2Gi")), Some(2.0 * 1024f64.powi(3)));
        assert_eq!(quantity(&json!(4)), Some(4.0));
        assert_eq!(quantity(&json!("lots")), None);
        assert_eq!(quantity(&json!("NaN")), None);
    }
}
