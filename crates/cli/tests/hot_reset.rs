//! Hot reset under `ringleader up --hot-reset-secs`: a chip fault
//! (`ringleader node fault`) under a `fault-scheduling: force` job moves the
//! job off the chip's HCCS ring; the idle ring is then reset as a whole
//! (its four chips out of service meanwhile) and healthy again afterwards,
//! while the ring the job moved to is left alone.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

/// A one-pod Volcano job holding 4 Ascend 910 chips (one HCCS ring) until killed.
const JOB: &str = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: ring\n  namespace: default\n  labels: {ring-controller.atlas: ascend-910, fault-scheduling: force}\nspec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: t\n    replicas: 1\n    template:\n      metadata:\n        labels: {ring-controller.atlas: ascend-910}\n      spec:\n        containers:\n        - name: t\n          image: x\n          command: [\"/bin/sh\", \"-c\", \"sleep 600\"]\n          resources:\n            requests: {huawei.com/Ascend910: 4}\n            limits: {huawei.com/Ascend910: 4}\n";

fn devices(p: &Plane) -> Option<Vec<u32>> {
    let pod = p.get("pods", "ring-t-0")?;
    if pod["status"]["phase"] != "Running" || pod["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    let list = pod["metadata"]["annotations"]["ringleader.io/devices"].as_str()?;
    Some(list.split(',').filter_map(|d| d.trim().parse().ok()).collect())
}

fn injected(p: &Plane) -> Value {
    p.get("nodes", "a-1").map(|n| n["spec"]["injectedFaults"]["unhealthy"].clone()).unwrap_or(Value::Null)
}

#[test]
fn an_idle_faulty_ring_is_reset_whole_and_comes_back_healthy() {
    let p = Plane::start(&cluster_yaml(135, &[("a-1", "atlas-800-910")]), &["--hot-reset-secs", "3"]);
    p.apply(JOB).expect("apply");
    p.wait_for(30, "the job's pod running", |p| devices(p).is_some());
    let first = devices(&p).expect("devices");
    assert_eq!(first.len(), 4);
    let ring: Vec<u32> = if first[0] < 4 { vec![0, 1, 2, 3] } else { vec![4, 5, 6, 7] };
    assert_eq!(first, ring, "4 chips take one whole ring");
    let chip = ring[1].to_string();
    p.ctl(&["node", "fault", "a-1", "--device", &chip, "--kind", "unhealthy"]);

    // The job moves to the other ring, and the faulty ring, idle now, is reset whole.
    p.wait_for(60, "the job on the other ring", |p| devices(p).is_some_and(|d| d != ring));
    p.wait_for(30, "the ring reset in progress", |p| injected(p) == serde_json::json!(ring));
    let node = p.get("nodes", "a-1").expect("node");
    let progress: serde_json::Map<String, Value> =
        serde_json::from_str(node["metadata"]["annotations"]["ringleader.io/hot-reset"].as_str().expect("annotation"))
            .expect("json");
    let reset: Vec<u32> = progress.keys().filter_map(|k| k.parse().ok()).collect();
    assert_eq!(reset, ring, "the whole ring is reset together");
    let moved = devices(&p).expect("the job still runs");
    assert!(moved.iter().all(|d| !ring.contains(d)), "{moved:?}");

    // After the reset every chip is healthy again, as reported by the agent.
    p.wait_for(30, "the reset finished", |p| {
        p.get("nodes", "a-1").is_some_and(|n| {
            n["metadata"]["annotations"].get("ringleader.io/hot-reset").is_none()
                && n["spec"]["injectedFaults"]["unhealthy"] == serde_json::json!([])
                && n["status"]["unhealthyDevices"].as_array().is_none_or(|a| a.is_empty())
        })
    });
    assert_eq!(devices(&p), Some(moved), "the running job was not touched");
}
