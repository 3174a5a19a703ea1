//! The figures of `metrics.k8s.io/v1beta1` (what metrics-server serves, so
//! `kubectl top pods|nodes` works): a pod's or node's CPU rate and memory
//! from the agent's last two samples (pod annotations, `status.usage` of the
//! ringleader Node), as `PodMetrics` / `NodeMetrics` objects and as the
//! plain figures the history samples. The API server serves them.

use ringleader_api::time::{now_rfc3339, rfc3339};
use ringleader_registry::resources::ResourceType;
use serde_json::{json, Value};

/// The API group.
pub const GROUP: &str = ringleader_registry::resources::METRICS_GROUP;
/// Its one version.
pub const VERSION: &str = "v1beta1";
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";
/// What metrics-server allows on both resources.
pub const VERBS: &[&str] = &["get", "list"];

/// Pod annotations the agent writes (see `ringleader_agent::usage`).
const CPU_NANOS: &str = "ringleader.io/usage-cpu-nanos";
const MEMORY_BYTES: &str = "ringleader.io/usage-memory-bytes";
const AT: &str = "ringleader.io/usage-at";
const PREV_CPU_NANOS: &str = "ringleader.io/usage-prev-cpu-nanos";
const PREV_AT: &str = "ringleader.io/usage-prev-at";
/// All of them: a node agent may write these on the pods bound to it.
pub const USAGE_ANNOTATIONS: &[&str] = &[CPU_NANOS, MEMORY_BYTES, AT, PREV_CPU_NANOS, PREV_AT];

/// `NodeMetrics`.
pub static NODE_METRICS: ResourceType = ResourceType {
    kind: "NodeMetrics",
    group: GROUP,
    version: VERSION,
    api_version: API_VERSION,
    plural: "nodes",
    singular: "",
    short_names: &[],
    namespaced: false,
    job: false,
};

/// `PodMetrics`.
pub static POD_METRICS: ResourceType = ResourceType {
    kind: "PodMetrics",
    group: GROUP,
    version: VERSION,
    api_version: API_VERSION,
    plural: "pods",
    singular: "",
    short_names: &[],
    namespaced: true,
    job: false,
};

/// One sample and the one before it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    cpu_nanos: u64,
    memory_bytes: u64,
    at: f64,
    prev_cpu_nanos: u64,
    prev_at: f64,
}

impl Sample {
    /// CPU in nanocores over the window, and the window in seconds
    /// (`None` for a window that is not forward in time).
    fn rate(&self) -> Option<(u64, f64)> {
        let window = self.at - self.prev_at;
        if !window.is_finite() || window <= 0.0 {
            return None;
        }
        let used = self.cpu_nanos.saturating_sub(self.prev_cpu_nanos) as f64;
        Some(((used / window).round() as u64, window))
    }

    /// `timestamp`, `window` and `usage` of a metrics object.
    fn fields(&self) -> Option<(Value, Value, Value)> {
        let (nanocores, window) = self.rate()?;
        let usage = json!({"cpu": format!("{nanocores}n"), "memory": self.memory_bytes.to_string()});
        Some((json!(rfc3339(self.at)), json!(format!("{window:.3}s")), usage))
    }
}

fn pod_sample(pod: &Value) -> Option<Sample> {
    let a = pod.pointer("/metadata/annotations")?;
    let s = |k: &str| a.get(k).and_then(Value::as_str).map(str::trim);
    Some(Sample {
        cpu_nanos: s(CPU_NANOS)?.parse().ok()?,
        memory_bytes: s(MEMORY_BYTES)?.parse().ok()?,
        at: s(AT)?.parse().ok()?,
        prev_cpu_nanos: s(PREV_CPU_NANOS)?.parse().ok()?,
        prev_at: s(PREV_AT)?.parse().ok()?,
    })
}

fn node_sample(node: &Value) -> Option<Sample> {
    let u = node.pointer("/status/usage")?;
    Some(Sample {
        cpu_nanos: u.get("cpuNanos")?.as_u64()?,
        memory_bytes: u.get("memoryBytes")?.as_u64()?,
        at: u.get("at")?.as_f64()?,
        prev_cpu_nanos: u.get("prevCpuNanos")?.as_u64()?,
        prev_at: u.get("prevAt")?.as_f64()?,
    })
}

fn metadata(object: &Value, with_namespace: bool) -> Value {
    let mut m = json!({
        "name": object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "creationTimestamp": now_rfc3339(),
    });
    if with_namespace {
        m["namespace"] = object.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    }
    if let Some(labels) = object.pointer("/metadata/labels") {
        m["labels"] = labels.clone();
    }
    m
}

/// The PodMetrics of a running pod with a sample; the process runtime runs
/// a pod as one process group, so its usage is its first container's.
pub fn pod_metrics(pod: &Value) -> Option<Value> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let (timestamp, window, usage) = pod_sample(pod)?.fields()?;
    let container = pod
        .pointer("/spec/containers/0/name")
        .or_else(|| pod.pointer("/metadata/name"))
        .cloned()
        .unwrap_or(Value::Null);
    Some(json!({
        "kind": "PodMetrics", "apiVersion": API_VERSION,
        "metadata": metadata(pod, true),
        "timestamp": timestamp, "window": window,
        "containers": [{"name": container, "usage": usage}],
    }))
}

/// A running pod's CPU (nanocores over the last window) and memory
/// (bytes), as [`pod_metrics`] reports them; the history samples these.
pub fn pod_usage(pod: &Value) -> Option<(u64, u64)> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let sample = pod_sample(pod)?;
    Some((sample.rate()?.0, sample.memory_bytes))
}

/// A node's CPU (nanocores) and memory (bytes), as [`node_metrics`] reports them.
pub fn node_usage(node: &Value) -> Option<(u64, u64)> {
    let sample = node_sample(node)?;
    Some((sample.rate()?.0, sample.memory_bytes))
}

/// The NodeMetrics of a node whose agent reports usage.
pub fn node_metrics(node: &Value) -> Option<Value> {
    let (timestamp, window, usage) = node_sample(node)?.fields()?;
    Some(json!({
        "kind": "NodeMetrics", "apiVersion": API_VERSION,
        "metadata": metadata(node, false),
        "timestamp": timestamp, "window": window, "usage": usage,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(phase: &str, annotations: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "team", "labels": {"app": "x"}, "annotations": annotations},
            "spec": {"containers": [{"name": "main"}]}, "status": {"phase": phase}})
    }

    fn sampled() -> Value {
        json!({CPU_NANOS: "3000000000", MEMORY_BYTES: "52428800", AT: "1764100010.000",
            PREV_CPU_NANOS: "1000000000", PREV_AT: "1764100000.000"})
    }

    #[test]
    fn a_pod_rate_is_cpu_used_between_two_samples() {
        let m = pod_metrics(&pod("Running", sampled())).expect("metrics");
        assert_eq!(m["kind"], "PodMetrics");
        assert_eq!(m["metadata"]["namespace"], "team");
        assert_eq!(m["window"], "10.000s");
        assert_eq!(m["containers"][0]["name"], "main");
        assert_eq!(m["containers"][0]["usage"], json!({"cpu": "200000000n", "memory": "52428800"}));
        let decoded: Result<k8s_openapi::apimachinery::pkg::api::resource::Quantity, _> =
            serde_json::from_value(m["containers"][0]["usage"]["cpu"].clone());
        assert!(decoded.is_ok());
    }

    #[test]
    fn pods_without_a_sample_or_not_running_report_nothing() {
        assert!(pod_metrics(&pod("Running", json!({}))).is_none());
        assert!(pod_metrics(&pod("Succeeded", sampled())).is_none());
        let mut backwards = sampled();
        backwards[PREV_AT] = json!("1764100020");
        assert!(pod_metrics(&pod("Running", backwards)).is_none());
        let mut garbage = sampled();
        garbage[CPU_NANOS] = json!("lots");
        assert!(pod_metrics(&pod("Running", garbage)).is_none());
    }

    #[test]
    fn nodes_report_their_status_usage() {
        let n = json!({"metadata": {"name": "n1"}, "status": {"usage":
            {"cpuNanos": 500, "memoryBytes": 1024, "at": 20.0, "prevCpuNanos": 0, "prevAt": 10.0}}});
        let m = node_metrics(&n).expect("metrics");
        assert_eq!(m["usage"], json!({"cpu": "50n", "memory": "1024"}));
        assert!(m["metadata"].get("namespace").is_none());
        assert!(node_metrics(&json!({"metadata": {"name": "sim"}, "status": {}})).is_none());
    }
}
