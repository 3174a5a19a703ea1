//! `/metrics` in the Prometheus text format. Scheduling latency is pushed in
//! by the controller manager through a [`Metrics`] handle; the gauges
//! (pending pods, devices allocated per node and queue) are computed from the
//! store at scrape time, so they can never drift from what is stored.

use ringleader_store::{Selector, Store, StoreError};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// Upper bounds (seconds) of the scheduling-latency histogram buckets.
pub const LATENCY_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

/// Annotation holding the device IDs a pod was bound to.
pub const DEVICES_ANNOTATION: &str = "ringleader.io/devices";
/// Label or annotation naming a pod's queue.
pub const QUEUE_KEY: &str = "volcano.sh/queue-name";

#[derive(Default)]
struct Histogram {
    /// Per bucket, not cumulative; the last slot is `+Inf`.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Handle through which other components of the process record metrics.
#[derive(Clone, Default)]
pub struct Metrics {
    latency: Arc<Mutex<Histogram>>,
}

impl Metrics {
    /// An empty set of metrics.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Records the time from a pod's creation to its binding.
    pub fn observe_scheduling_latency(&self, secs: f64) {
        if !secs.is_finite() || secs < 0.0 {
            return;
        }
        let mut h = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        if h.counts.is_empty() {
            h.counts = vec![0; LATENCY_BUCKETS.len() + 1];
        }
        let slot = LATENCY_BUCKETS.iter().position(|b| secs <= *b).unwrap_or(LATENCY_BUCKETS.len());
        h.counts[slot] += 1;
        h.sum += secs;
        h.count += 1;
    }

    /// The whole exposition: the histogram and the store-derived gauges.
    pub fn render(&self, store: &Store) -> Result<String, StoreError> {
        let mut out = String::new();
        self.render_histogram(&mut out);
        let (pods, _) = store.list(&Selector::kind("v1", "Pod"))?;
        let (nodes, _) = store.list(&Selector::kind("ringleader.io/v1alpha1", "Node"))?;
        let pods: Vec<&Value> = pods.iter().map(|s| &s.object).collect();
        let nodes: Vec<&Value> = nodes.iter().map(|s| &s.object).collect();
        render_gauges(&mut out, &pods, &nodes);
        Ok(out)
    }

    fn render_histogram(&self, out: &mut String) {
        let h = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let name = "ringleader_scheduling_latency_seconds";
        let _ = writeln!(out, "# HELP {name} Time from a pod's creation to its binding to a node.");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0u64;
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            cumulative += h.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum {}", h.sum);
        let _ = writeln!(out, "{name}_count {}", h.count);
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str()
}

fn phase(pod: &Value) -> &str {
    str_at(pod, &["status", "phase"]).unwrap_or("Pending")
}

/// Device IDs a pod holds (none until bound, none once finished).
fn held_devices(pod: &Value) -> BTreeSet<String> {
    if matches!(phase(pod), "Succeeded" | "Failed") {
        return BTreeSet::new();
    }
    str_at(pod, &["metadata", "annotations", DEVICES_ANNOTATION])
        .map(|s| s.split(',').map(str::trim).filter(|d| !d.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

/// A node's device count from its hardware description.
pub fn node_device_total(node: &Value) -> Option<usize> {
    use ringleader_topology::parse::{npu_smi, nvidia_smi};
    if let Some(n) = node.pointer("/status/capacity/devices").and_then(Value::as_u64) {
        return usize::try_from(n).ok();
    }
    if let Some(name) = str_at(node, &["spec", "profile"]) {
        return ringleader_topology::builtin(name).map(|p| p.len());
    }
    if let Some(text) = str_at(node, &["spec", "topologyText"]) {
        let name = str_at(node, &["metadata", "name"]).unwrap_or_default();
        return nvidia_smi::profile_from_topo(name, text, Default::default(), "NVIDIA GPU").ok().map(|p| p.len());
    }
    if let Some(text) = str_at(node, &["spec", "npuSmiText"]) {
        return npu_smi::parse_info(text).and_then(|i| npu_smi::profile_from_info(&i)).ok().map(|(p, _)| p.len());
    }
    None
}

fn escape(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn render_gauges(out: &mut String, pods: &[&Value], nodes: &[&Value]) {
    let mut pending: BTreeMap<&str, u64> = BTreeMap::new();
    let mut per_node: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut per_queue: BTreeMap<&str, u64> = BTreeMap::new();
    for pod in pods {
        let ns = str_at(pod, &["metadata", "namespace"]).unwrap_or("default");
        if phase(pod) == "Pending" {
            *pending.entry(ns).or_default() += 1;
        }
        let Some(node) = str_at(pod, &["spec", "nodeName"]).filter(|n| !n.is_empty()) else { continue };
        let devices = held_devices(pod);
        let queue = str_at(pod, &["metadata", "labels", QUEUE_KEY])
            .or_else(|| str_at(pod, &["metadata", "annotations", QUEUE_KEY]))
            .unwrap_or("default");
        *per_queue.entry(queue).or_default() += devices.len() as u64;
        per_node.entry(node).or_default().extend(devices);
    }
    let mut totals: BTreeMap<&str, Option<usize>> = BTreeMap::new();
    for node in nodes {
        if let Some(name) = str_at(node, &["metadata", "name"]) {
            totals.insert(name, node_device_total(node));
            per_node.entry(name).or_default();
        }
    }

    let _ = writeln!(out, "# HELP ringleader_pending_pods Pods in phase Pending, per namespace.");
    let _ = writeln!(out, "# TYPE ringleader_pending_pods gauge");
    for (ns, n) in &pending {
        let _ = writeln!(out, "ringleader_pending_pods{{namespace=\"{}\"}} {n}", escape(ns));
    }
    let _ = writeln!(out, "# HELP ringleader_node_devices_allocated Devices held by live pods bound to the node.");
    let _ = writeln!(out, "# TYPE ringleader_node_devices_allocated gauge");
    for (node, devices) in &per_node {
        let _ = writeln!(out, "ringleader_node_devices_allocated{{node=\"{}\"}} {}", escape(node), devices.len());
    }
    let _ = writeln!(out, "# HELP ringleader_node_devices_total Devices of the node's hardware profile.");
    let _ = writeln!(out, "# TYPE ringleader_node_devices_total gauge");
    for (node, total) in &totals {
        if let Some(total) = total {
            let _ = writeln!(out, "ringleader_node_devices_total{{node=\"{}\"}} {total}", escape(node));
        }
    }
    let _ = writeln!(out, "# HELP ringleader_queue_devices_allocated Devices held by live pods of the queue.");
    let _ = writeln!(out, "# TYPE ringleader_queue_devices_allocated gauge");
    for (queue, n) in &per_queue {
        let _ = writeln!(out, "ringleader_queue_devices_allocated{{queue=\"{}\"}} {n}", escape(queue));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::new();
        m.observe_scheduling_latency(0.003);
        m.observe_scheduling_latency(2.0);
        m.observe_scheduling_latency(5000.0);
        m.observe_scheduling_latency(f64::NAN);
        let mut out = String::new();
        m.render_histogram(&mut out);
        assert!(out.contains("ringleader_scheduling_latency_seconds_bucket{le=\"0.001\"} 0\n"), "{out}");
        assert!(out.contains("ringleader_scheduling_latency_seconds_bucket{le=\"0.005\"} 1\n"), "{out}");
        assert!(out.contains("ringleader_scheduling_latency_seconds_bucket{le=\"2.5\"} 2\n"), "{out}");
        assert!(out.contains("ringleader_scheduling_latency_seconds_bucket{le=\"600\"} 2\n"), "{out}");
        assert!(out.contains("ringleader_scheduling_latency_seconds_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("ringleader_scheduling_latency_seconds_count 3\n"), "{out}");
    }

    #[test]
    fn gauges_count_live_bound_devices() {
        let pod = |name: &str, node: &str, devs: &str, phase: &str, queue: Option<&str>| {
            let mut p = json!({"metadata": {"name": name, "namespace": "ns", "annotations": {DEVICES_ANNOTATION: devs}},
                "spec": {"nodeName": node}, "status": {"phase": phase}});
            if let Some(q) = queue {
                p["metadata"]["labels"] = json!({QUEUE_KEY: q});
            }
            p
        };
        let pods = [
            pod("a", "n1", "0,1", "Running", Some("research")),
            pod("b", "n1", "2", "Running", None),
            pod("c", "n1", "3", "Succeeded", None),
            json!({"metadata": {"name": "d", "namespace": "ns"}, "status": {"phase": "Pending"}}),
        ];
        let nodes = [
            json!({"metadata": {"name": "n1"}, "spec": {"profile": "no-such-profile"}}),
            json!({"metadata": {"name": "n2"}, "status": {"capacity": {"devices": 8}}}),
        ];
        let mut out = String::new();
        render_gauges(&mut out, &pods.iter().collect::<Vec<_>>(), &nodes.iter().collect::<Vec<_>>());
        assert!(out.contains("ringleader_pending_pods{namespace=\"ns\"} 1\n"), "{out}");
        assert!(out.contains("ringleader_node_devices_allocated{node=\"n1\"} 3\n"), "{out}");
        assert!(out.contains("ringleader_node_devices_allocated{node=\"n2\"} 0\n"), "{out}");
        assert!(out.contains("ringleader_node_devices_total{node=\"n2\"} 8\n"), "{out}");
        assert!(out.contains("ringleader_queue_devices_allocated{queue=\"research\"} 2\n"), "{out}");
        assert!(out.contains("ringleader_queue_devices_allocated{queue=\"default\"} 1\n"), "{out}");
    }
}
