//! The `PodScheduled` condition the manager's scheduler writes on pods, as
//! kube-scheduler does: True when bound, False with reason `Unschedulable`
//! and the scheduler's explanation while the job waits — written once, not
//! on every pass.

use ringleader_manager::cache::Cache;
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;

const NOW: f64 = 1_795_428_000.0;

fn node(name: &str, address: &str) -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": name, "labels": {"gpu-model": "h100"}},
           "spec": {"profile": "hgx-h100-8", "address": address},
           "status": {"ready": true, "lastHeartbeat": NOW}})
}

fn setup(nodes: &[(&str, &str)]) -> Result<(tempfile::TempDir, Store), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    for (n, a) in nodes {
        store.create(node(n, a))?;
    }
    let text =
        std::fs::read_to_string(format!("{}/../../examples/demo/pytorchjob-h100.yaml", env!("CARGO_MANIFEST_DIR")))?;
    store.create(serde_yaml_ng::from_str(&text)?)?;
    Ok((dir, store))
}

fn run_pass(store: &Store, now: f64) -> Result<(), Box<dyn std::error::Error>> {
    let mut cache = Cache::default();
    cache.load(store.list(&Selector::all())?.0);
    pass(store, &mut cache, &ManagerConfig::default(), &mut HashMap::new(), now)?;
    Ok(())
}

fn scheduled_conditions(store: &Store) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let pods = store.list(&Selector::kind("v1", "Pod"))?.0;
    Ok(pods
        .into_iter()
        .map(|p| {
            p.object["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled").cloned())
                .unwrap_or(Value::Null)
        })
        .collect())
}

#[test]
fn bound_pods_are_scheduled() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, store) = setup(&[("h100-1", "127.0.1.5"), ("h100-2", "127.0.1.6")])?;
    run_pass(&store, NOW)?;
    let conditions = scheduled_conditions(&store)?;
    assert_eq!(conditions.len(), 2);
    for c in &conditions {
        assert_eq!(c["status"], "True", "{c}");
        assert_eq!(c["lastTransitionTime"], "2026-11-23T10:00:00Z");
    }
    Ok(())
}

#[test]
fn waiting_pods_say_why_once() -> Result<(), Box<dyn std::error::Error>> {
    // One 8-GPU node for a gang of two 8-GPU pods.
    let (_dir, store) = setup(&[("h100-1", "127.0.1.5")])?;
    run_pass(&store, NOW)?;
    run_pass(&store, NOW + 1.0)?;
    let conditions = scheduled_conditions(&store)?;
    assert_eq!(conditions.len(), 2);
    for c in &conditions {
        assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("False"), Some("Unschedulable")), "{c}");
        assert!(c["message"].as_str().is_some_and(|m| !m.is_empty()), "{c}");
    }
    // An unchanged explanation is not written again.
    let settled = store.version();
    run_pass(&store, NOW + 2.0)?;
    assert_eq!(scheduled_conditions(&store)?, conditions);
    assert_eq!(store.version(), settled);
    Ok(())
}

fn bare_pod(name: &str, gpus: u32) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-11-23T09:00:00Z"},
           "spec": {"restartPolicy": "Always",
                    "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "60"],
                                    "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
           "status": {"phase": "Pending"}})
}

fn pod(store: &Store, name: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let key = ringleader_store::ObjectKey::new("v1", "Pod", "default", name);
    Ok(store.get(&key)?.ok_or("pod gone")?.object)
}

#[test]
fn a_pod_no_job_owns_is_placed_as_a_gang_of_one_with_its_devices() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    store.create(node("h100-1", "127.0.1.5"))?;
    store.create(bare_pod("kc-run", 2))?;
    run_pass(&store, NOW)?;
    let p = pod(&store, "kc-run")?;
    assert_eq!(p["spec"]["nodeName"], "h100-1", "{p}");
    let devices = p["metadata"]["annotations"]["ringleader.io/devices"].as_str().unwrap_or_default();
    assert_eq!(devices.split(',').count(), 2, "two GPUs: {p}");
    // Nothing else releases a gang of one: it starts once bound.
    assert_eq!(p["metadata"]["annotations"]["ringleader.io/start"], "true");
    let scheduled = scheduled_conditions(&store)?;
    assert_eq!(scheduled[0]["status"], "True");

    // A second bare pod takes the other six GPUs, not the two held.
    store.create(bare_pod("kc-run-2", 6))?;
    run_pass(&store, NOW + 1.0)?;
    let q = pod(&store, "kc-run-2")?;
    let theirs: Vec<&str> =
        q["metadata"]["annotations"]["ringleader.io/devices"].as_str().unwrap_or("").split(',').collect();
    assert_eq!(theirs.len(), 6, "{q}");
    assert!(theirs.iter().all(|d| !devices.split(',').any(|m| m == *d)), "{devices} vs {theirs:?}");
    Ok(())
}

#[test]
fn a_pod_no_job_owns_that_cannot_fit_is_told_why_once() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    store.create(node("h100-1", "127.0.1.5"))?;
    store.create(bare_pod("too-big", 16))?;
    run_pass(&store, NOW)?;
    let p = pod(&store, "too-big")?;
    assert!(p["spec"]["nodeName"].is_null(), "{p}");
    let c = &scheduled_conditions(&store)?[0];
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("False"), Some("Unschedulable")), "{c}");
    let events = store.list(&Selector::kind("v1", "Event"))?.0;
    let failed: Vec<_> = events.iter().filter(|e| e.object["reason"] == "FailedScheduling").collect();
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0].object["involvedObject"]["name"], "too-big");
    let settled = store.version();
    run_pass(&store, NOW + 1.0)?;
    assert_eq!(store.version(), settled, "an unchanged explanation is not written again");
    Ok(())
}
