//! The whole control plane SIGKILLed in the middle of a 1,000-pod
//! submission and started again on the same data directory: every job the
//! API acknowledged is there, no device is ever held by two live pods, and
//! every job completes.

mod common;

use common::{cluster_yaml, Plane};
use std::collections::{BTreeSet, HashMap};

fn burst(i: usize) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: burst-{i}, namespace: default}}\nspec:\n  minAvailable: 10\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: worker\n    replicas: 10\n    template:\n      metadata: {{annotations: {{ringleader.io/duration: \"0.3\"}}}}\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: w\n          image: x\n          resources: {{requests: {{nvidia.com/gpu: 1}}, limits: {{nvidia.com/gpu: 1}}}}\n"
    )
}

/// Panics if two live pods hold the same device of the same node.
fn assert_no_double_allocation(p: &Plane) {
    let mut held: HashMap<(String, String), String> = HashMap::new();
    for pod in p.list("pods") {
        let phase = pod["status"]["phase"].as_str().unwrap_or("Pending");
        if matches!(phase, "Succeeded" | "Failed") {
            continue;
        }
        let Some(node) = pod["spec"]["nodeName"].as_str() else { continue };
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let devices = pod["metadata"]["annotations"]["ringleader.io/devices"].as_str().unwrap_or("");
        for d in devices.split(',').filter(|d| !d.is_empty()) {
            if let Some(other) = held.insert((node.to_string(), d.to_string()), name.clone()) {
                panic!("device {d} of {node} held by both {other} and {name}");
            }
        }
    }
}

#[test]
fn sigkill_during_a_1000_pod_submission_loses_nothing_acknowledged() {
    let nodes: Vec<(String, &str)> = (0..16).map(|i| (format!("g-{i}"), "pcie-4090-8")).collect();
    let refs: Vec<(&str, &str)> = nodes.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    let mut p = Plane::start(&cluster_yaml(21, &refs), &["--runtime", "simulated"]);
    let mut acknowledged = BTreeSet::new();
    let mut i = 0;
    while i < 100 {
        if i == 40 && p.child.is_some() {
            p.kill();
            // A submission while the server is down is not acknowledged.
            assert!(p.apply(&burst(i)).is_err());
            p.spawn();
        }
        if p.apply(&burst(i)).is_ok() {
            acknowledged.insert(format!("burst-{i}"));
        }
        if i % 10 == 0 {
            assert_no_double_allocation(&p);
        }
        i += 1;
    }
    assert_eq!(acknowledged.len(), 100);
    let present: BTreeSet<String> =
        p.list("vcjob").iter().filter_map(|j| j["metadata"]["name"].as_str().map(str::to_string)).collect();
    assert!(acknowledged.is_subset(&present), "missing: {:?}", acknowledged.difference(&present).collect::<Vec<_>>());
    p.wait_for(120, "all 100 jobs (1,000 pods) Completed", |p| {
        assert_no_double_allocation(p);
        acknowledged.iter().all(|j| p.phase("vcjob", j) == "Completed")
    });
}
