//! Elastic shrink and grow over a real store, with the agent's writes made
//! by hand: a 2 × 8-chip elastic job loses a chip while the only spare node
//! is held by another job. It must shrink to the node it still has (never
//! sit with one pod bound but unreleased, holding chips, beside a pending
//! peer), and grow back once the spare node frees.

mod common;

use common::{loaded, open, NOW};
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;

fn node(name: &str, address: &str) -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": name, "labels": {"host-arch": "huawei-arm", "accelerator-type": "module"}},
           "spec": {"profile": "atlas-800-910", "address": address},
           "status": {"ready": true, "lastHeartbeat": NOW}})
}

/// A vcjob of `replicas` × 8 chips; elastic down to `min_replicas` when given.
fn vcjob(name: &str, replicas: u32, min_replicas: Option<u32>) -> Value {
    let mut labels = json!({"ring-controller.atlas": "ascend-910"});
    let mut annotations = json!({});
    let mut max_retry = 3;
    if let Some(min) = min_replicas {
        labels["fault-scheduling"] = json!("grace");
        labels["elastic-scheduling"] = json!("on");
        annotations["minReplicas"] = json!(min.to_string());
        max_retry = 0;
    }
    json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": name, "namespace": "default", "labels": labels, "annotations": annotations},
           "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default", "maxRetry": max_retry,
                    "tasks": [{"name": "worker", "replicas": replicas,
                        "template": {"metadata": {"labels": {"ring-controller.atlas": "ascend-910"}},
                            "spec": {"restartPolicy": "Never",
                                "nodeSelector": {"accelerator-type": "module"},
                                "containers": [{"name": "c", "image": "i", "command": ["true"],
                                    "resources": {"requests": {"huawei.com/Ascend910": 8},
                                                  "limits": {"huawei.com/Ascend910": 8}}}]}}}]}})
}

fn pods(store: &Store) -> Vec<Value> {
    store.list(&Selector::kind("v1", "Pod")).expect("list").0.into_iter().map(|s| s.object).collect()
}

fn pod_key(pod: &Value) -> ObjectKey {
    ObjectKey::new("v1", "Pod", "default", pod["metadata"]["name"].as_str().unwrap_or_default())
}

fn owner(pod: &Value) -> &str {
    pod["metadata"]["ownerReferences"][0]["name"].as_str().unwrap_or_default()
}

fn live(pod: &Value) -> bool {
    matches!(pod["status"]["phase"].as_str(), Some("Pending" | "Running") | None)
}

fn started(pod: &Value) -> bool {
    pod["metadata"]["annotations"]["ringleader.io/start"] == "true"
}

fn node_of(pod: &Value) -> Option<&str> {
    pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
}

/// The agents: a pod marked for deletion goes, a released pod runs.
fn agents(store: &Store) {
    for p in pods(store) {
        if p["metadata"]["deletionTimestamp"].is_string() {
            store.delete(&pod_key(&p), None).expect("delete pod");
        } else if started(&p) && p["status"]["phase"] != "Running" && live(&p) {
            store.patch(&pod_key(&p), &json!({"status": {"phase": "Running"}}), None).expect("run pod");
        }
    }
}

/// The live pods of `job`: (name, node, released).
fn job_pods(store: &Store, job: &str) -> Vec<(String, Option<String>, bool)> {
    let mut out: Vec<_> = pods(store)
        .iter()
        .filter(|p| owner(p) == job && live(p) && !p["metadata"]["deletionTimestamp"].is_string())
        .map(|p| {
            let name = p["metadata"]["name"].as_str().unwrap_or_default().to_string();
            (name, node_of(p).map(str::to_string), started(p))
        })
        .collect();
    out.sort();
    out
}

/// A job never waits with a bound, unreleased pod beside an unbound peer.
fn assert_no_half_gang(store: &Store, job: &str, step: u32) {
    let pods = job_pods(store, job);
    let held = pods.iter().any(|(_, node, started)| node.is_some() && !started);
    let unbound = pods.iter().any(|(_, node, _)| node.is_none());
    assert!(!(held && unbound), "step {step}: {job} holds chips for a gang that cannot start: {pods:?}");
}

/// Passes (each followed by the agents' answers) until the store stops
/// changing, checking the gang invariant after each.
fn settle(store: &Store, config: &ManagerConfig, now: &mut f64, job: &str) {
    let mut last = None;
    for step in 0..40u32 {
        pass(store, &mut loaded(store), config, &mut HashMap::new(), *now).expect("pass");
        assert_no_half_gang(store, job, step);
        agents(store);
        let seen = pods(store);
        if last.as_ref() == Some(&seen) {
            return;
        }
        last = Some(seen);
        *now += 1.0;
    }
}

#[test]
fn elastic_job_shrinks_past_a_busy_spare_node_and_grows_back_when_it_frees() {
    shrink_and_grow(json!({"status": {"unhealthyDevices": [3]}}));
}

#[test]
fn a_chip_network_fault_shrinks_the_job_the_same_way() {
    shrink_and_grow(json!({"status": {"networkUnhealthyDevices": [3]}}));
}

/// The scenario, with the fault `fault` patched into B's status.
fn shrink_and_grow(fault: Value) {
    let (_dir, store) = open();
    let config = ManagerConfig::default();
    let mut now = NOW;
    store.create(node("a800-a", "127.0.2.1")).expect("node");
    store.create(node("a800-b", "127.0.2.2")).expect("node");
    store.create(vcjob("el", 2, Some(1))).expect("elastic job");
    settle(&store, &config, &mut now, "el");
    let before = job_pods(&store, "el");
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before.iter().all(|(_, node, started)| node.is_some() && *started), "{before:?}");

    // The spare node comes, and another job takes all of it.
    store.create(node("a800-c", "127.0.2.3")).expect("node");
    store.create(vcjob("other", 1, None)).expect("other job");
    settle(&store, &config, &mut now, "other");
    let other = job_pods(&store, "other");
    assert_eq!(other, [("other-worker-0".to_string(), Some("a800-c".to_string()), true)]);

    // A chip of B breaks.
    let b = ObjectKey::new("ringleader.io/v1alpha1", "Node", "", "a800-b");
    store.patch(&b, &fault, None).expect("fault");
    settle(&store, &config, &mut now, "el");
    let shrunk = job_pods(&store, "el");
    assert_eq!(shrunk.len(), 1, "no node fits a second pod: the job runs on A alone: {shrunk:?}");
    assert_eq!(shrunk[0].1.as_deref(), Some("a800-a"), "{shrunk:?}");
    assert!(shrunk[0].2, "the shrunk job was released: {shrunk:?}");

    // The other job ends: C frees and the job grows back to 2 pods.
    for p in pods(&store).iter().filter(|p| owner(p) == "other") {
        let patch = json!({"status": {"phase": "Succeeded", "containerStatuses": [{"name": "c",
            "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T10:00:00Z"}}}]}});
        store.patch(&pod_key(p), &patch, None).expect("finish");
    }
    settle(&store, &config, &mut now, "el");
    let grown = job_pods(&store, "el");
    assert_eq!(grown.len(), 2, "{grown:?}");
    let nodes: Vec<Option<&str>> = grown.iter().map(|(_, n, _)| n.as_deref()).collect();
    assert_eq!(nodes, [Some("a800-a"), Some("a800-c")], "B still has a broken chip: {grown:?}");
    assert!(grown.iter().all(|(_, _, started)| *started), "{grown:?}");
}

/// Nodes A and B, the elastic job `el` (2 × 8 chips, down to `min_replicas`)
/// running on them.
fn running_on_a_and_b(store: &Store, config: &ManagerConfig, now: &mut f64, min_replicas: u32) {
    store.create(node("a800-a", "127.0.2.1")).expect("node");
    store.create(node("a800-b", "127.0.2.2")).expect("node");
    store.create(vcjob("el", 2, Some(min_replicas))).expect("elastic job");
    settle(store, config, now, "el");
    let pods = job_pods(store, "el");
    let nodes: Vec<Option<&str>> = pods.iter().map(|(_, n, _)| n.as_deref()).collect();
    assert_eq!(nodes, [Some("a800-a"), Some("a800-b")], "{pods:?}");
}

fn break_chip_of_b(store: &Store) {
    let b = ObjectKey::new("ringleader.io/v1alpha1", "Node", "", "a800-b");
    store.patch(&b, &json!({"status": {"unhealthyDevices": [3]}}), None).expect("fault");
}

fn finish_job(store: &Store, job: &str) {
    for p in pods(store).iter().filter(|p| owner(p) == job) {
        let patch = json!({"status": {"phase": "Succeeded", "containerStatuses": [{"name": "c",
            "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T10:00:00Z"}}}]}});
        store.patch(&pod_key(p), &patch, None).expect("finish");
    }
}

#[test]
fn the_spare_node_taken_while_the_job_restarts_shrinks_it_to_what_is_left() {
    let (_dir, store) = open();
    let config = ManagerConfig::default();
    let mut now = NOW;
    running_on_a_and_b(&store, &config, &mut now, 1);
    // C is free when the chip breaks, so the job restarts at full size; the
    // other job, submitted at that moment, takes C first.
    store.create(node("a800-c", "127.0.2.3")).expect("node");
    break_chip_of_b(&store);
    store.create(vcjob("other", 1, None)).expect("other job");
    settle(&store, &config, &mut now, "el");
    let other = job_pods(&store, "other");
    assert_eq!(other, [("other-worker-0".to_string(), Some("a800-c".to_string()), true)]);
    let shrunk = job_pods(&store, "el");
    assert_eq!(shrunk, [("el-worker-0".to_string(), Some("a800-a".to_string()), true)], "shrunk to what is left");
}

#[test]
fn a_job_that_may_not_shrink_waits_holding_nothing_and_starts_when_the_spare_frees() {
    let (_dir, store) = open();
    let config = ManagerConfig::default();
    let mut now = NOW;
    running_on_a_and_b(&store, &config, &mut now, 2);
    store.create(node("a800-c", "127.0.2.3")).expect("node");
    store.create(vcjob("other", 1, None)).expect("other job");
    settle(&store, &config, &mut now, "other");
    break_chip_of_b(&store);
    settle(&store, &config, &mut now, "el");
    let waiting = job_pods(&store, "el");
    assert_eq!(waiting.len(), 2, "{waiting:?}");
    assert!(waiting.iter().all(|(_, node, _)| node.is_none()), "minReplicas 2: Pending, holding nothing: {waiting:?}");

    finish_job(&store, "other");
    settle(&store, &config, &mut now, "el");
    let running = job_pods(&store, "el");
    let nodes: Vec<Option<&str>> = running.iter().map(|(_, n, _)| n.as_deref()).collect();
    assert_eq!(nodes, [Some("a800-a"), Some("a800-c")], "{running:?}");
    assert!(running.iter().all(|(_, _, started)| *started), "{running:?}");
}
