//! `policy/v1 PodDisruptionBudget`s, as Kubernetes' disruption controller
//! and eviction subresource read them: which pods a budget selects, which
//! count as healthy, and how many may be disrupted now. The manager writes
//! the result into the budget's `status`; the API server checks it again,
//! on the pods as they are, before it carries out an eviction.

use serde_json::{json, Value};

/// `apiVersion` of a PodDisruptionBudget.
pub const API_VERSION: &str = "policy/v1";
/// `kind` of a PodDisruptionBudget.
pub const KIND: &str = "PodDisruptionBudget";

/// A budget worked out over the pods it selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Pods the budget selects.
    pub expected: u64,
    /// Of those, pods running and ready.
    pub current_healthy: u64,
    /// Healthy pods the budget asks to keep.
    pub desired_healthy: u64,
    /// Healthy pods that may go now.
    pub disruptions_allowed: u64,
}

/// Whether budget `pdb` selects `pod`: the same namespace, and its
/// `spec.selector` matches the pod's labels (an empty selector selects
/// every pod of the namespace, as in `policy/v1`; none selects none).
pub fn selects(pdb: &Value, pod: &Value) -> bool {
    let ns = |v: &Value| v.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
    if ns(pdb) != ns(pod) {
        return false;
    }
    let Some(selector) = pdb.pointer("/spec/selector").filter(|s| s.is_object()) else { return false };
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    if match_labels.into_iter().flatten().any(|(k, v)| label(k) != v.as_str()) {
        return false;
    }
    selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> =
            e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

/// Whether a pod counts as healthy: running, not being deleted, and Ready
/// (or without a Ready condition yet, as a pod a process runtime runs).
pub fn healthy(pod: &Value) -> bool {
    let running = pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running");
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready")))
        .is_none_or(|c| c.get("status").and_then(Value::as_str) == Some("True"));
    running && !deleting && ready
}

/// An int-or-percent of `total`, rounded up (as Kubernetes scales both
/// `minAvailable` and `maxUnavailable`); `None` when it is neither.
fn scaled(v: &Value, total: u64) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => match s.strip_suffix('%') {
            Some(p) => p.parse::<u64>().ok().map(|p| (total * p).div_ceil(100)),
            None => s.parse().ok(),
        },
        _ => None,
    }
}

/// The budget `pdb` sets over `pods` (those it selects).
pub fn budget(pdb: &Value, pods: &[&Value]) -> Budget {
    let expected = pods.len() as u64;
    let current_healthy = pods.iter().filter(|p| healthy(p)).count() as u64;
    let desired_healthy = match (pdb.pointer("/spec/minAvailable"), pdb.pointer("/spec/maxUnavailable")) {
        (Some(min), _) if !min.is_null() => scaled(min, expected).unwrap_or(expected),
        (_, Some(max)) if !max.is_null() => expected.saturating_sub(scaled(max, expected).unwrap_or(0)),
        _ => expected,
    };
    Budget {
        expected,
        current_healthy,
        desired_healthy,
        disruptions_allowed: current_healthy.saturating_sub(desired_healthy),
    }
}

/// The `status` the disruption controller writes for `b`.
pub fn status(b: &Budget, observed_generation: Option<&Value>) -> Value {
    let mut s = json!({
        "expectedPods": b.expected,
        "currentHealthy": b.current_healthy,
        "desiredHealthy": b.desired_healthy,
        "disruptionsAllowed": b.disruptions_allowed,
    });
    if let Some(g) = observed_generation.filter(|g| g.is_number()) {
        s["observedGeneration"] = g.clone();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, app: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default", "labels": {"app": app}}, "status": {"phase": phase}})
    }

    #[test]
    fn a_budget_counts_the_healthy_pods_it_selects() {
        let pdb = json!({"metadata": {"name": "b", "namespace": "default"},
                         "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}});
        let pods = [
            pod("a", "web", "Running"),
            pod("b", "web", "Running"),
            pod("c", "web", "Pending"),
            pod("d", "db", "Running"),
        ];
        let chosen: Vec<&Value> = pods.iter().filter(|p| selects(&pdb, p)).collect();
        assert_eq!(chosen.len(), 3);
        let b = budget(&pdb, &chosen);
        assert_eq!(b, Budget { expected: 3, current_healthy: 2, desired_healthy: 2, disruptions_allowed: 0 });
        // maxUnavailable as a percentage, rounded up: 34% of 3 is 2.
        let pct = json!({"metadata": {"namespace": "default"}, "spec": {"maxUnavailable": "34%", "selector": {}}});
        let all: Vec<&Value> = pods.iter().filter(|p| selects(&pct, p)).collect();
        assert_eq!(all.len(), 4, "an empty selector selects the namespace's pods");
        let b = budget(&pct, &all);
        assert_eq!((b.desired_healthy, b.disruptions_allowed), (2, 1));
        assert_eq!(status(&b, Some(&json!(3)))["observedGeneration"], 3);
        // Other namespaces, expressions, and a budget with no selector.
        let mut other = pods[0].clone();
        other["metadata"]["namespace"] = json!("x");
        assert!(!selects(&pdb, &other));
        let expr = json!({"metadata": {"namespace": "default"}, "spec": {"selector": {"matchExpressions": [
            {"key": "app", "operator": "NotIn", "values": ["db"]}]}}});
        assert!(selects(&expr, &pods[0]) && !selects(&expr, &pods[3]));
        assert!(!selects(&json!({"metadata": {"namespace": "default"}, "spec": {}}), &pods[0]));
        let mut not_ready = pods[0].clone();
        not_ready["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        assert!(!healthy(&not_ready) && healthy(&pods[0]));
    }
}
