//! Fixtures the manager's store-level tests share: a temporary store, a
//! cache loaded from it, H100 nodes and a one-pod PyTorchJob.

#![allow(dead_code)]

use ringleader_manager::cache::Cache;
use ringleader_store::{Selector, Store};
use serde_json::{json, Value};

/// A fixed "now" (Unix seconds) the tests step from.
pub const NOW: f64 = 1_795_428_000.0;

/// A ready HGX H100 node last heard from at `heartbeat`.
pub fn node(name: &str, address: &str, heartbeat: f64) -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": name, "labels": {"gpu-model": "h100"}},
           "spec": {"profile": "hgx-h100-8", "address": address},
           "status": {"ready": true, "lastHeartbeat": heartbeat}})
}

/// A one-pod PyTorchJob asking for a whole H100 node.
pub fn one_pod_job(name: &str, priority_class: Option<&str>, restart: &str) -> Value {
    let mut sched = json!({"minAvailable": 1, "queue": "default"});
    if let Some(pc) = priority_class {
        sched["priorityClass"] = json!(pc);
    }
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"runPolicy": {"schedulingPolicy": sched},
                    "pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": restart,
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": "x", "command": ["true"],
                            "resources": {"requests": {"nvidia.com/gpu": 8}, "limits": {"nvidia.com/gpu": 8}}}]}}}}}})
}

pub fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    (dir, store)
}

pub fn loaded(store: &Store) -> Cache {
    let mut cache = Cache::default();
    cache.load(store.list(&Selector::all()).expect("list").0);
    cache
}
