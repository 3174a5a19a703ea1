//! Rendezvous ports over a real store: jobs whose pods share one node are
//! released with distinct ports, each pod's `ringleader.io/ports` is where
//! its env says it listens, and a finished job's port goes to the next.

mod common;

use common::{loaded, node, open, NOW};
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

fn run_pass(store: &Store, now: f64) {
    let mut cache = loaded(store);
    pass(store, &mut cache, &ManagerConfig::default(), &mut HashMap::new(), now).expect("pass");
}

fn pods(store: &Store) -> BTreeMap<String, Value> {
    let sel = Selector::kind("v1", "Pod");
    store
        .list(&sel)
        .expect("list")
        .0
        .into_iter()
        .map(|s| (s.object["metadata"]["name"].as_str().unwrap_or_default().to_string(), s.object))
        .collect()
}

fn env(pod: &Value, name: &str) -> Option<String> {
    pod["spec"]["containers"][0]["env"].as_array()?.iter().find(|e| e["name"] == name)?["value"]
        .as_str()
        .map(Into::into)
}

fn ports(pod: &Value) -> &str {
    pod["metadata"]["annotations"]["ringleader.io/ports"].as_str().unwrap_or("(none)")
}

fn role(replicas: u32, port: Option<(&str, u16)>) -> Value {
    let mut c = json!({"name": "c", "image": "x", "command": ["true"],
                       "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}});
    if let Some((name, p)) = port {
        c["ports"] = json!([{"name": name, "containerPort": p}]);
    }
    json!({"replicas": replicas, "restartPolicy": "Never", "template": {"spec": {"containers": [c]}}})
}

fn pytorch(name: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": "default"},
           "spec": {"pytorchReplicaSpecs": {"Master": role(1, None), "Worker": role(1, None)}}})
}

fn finish(store: &Store, name: &str) {
    let key = ObjectKey::new("v1", "Pod", "default", name);
    let patch = json!({"status": {"phase": "Succeeded", "containerStatuses": [{"name": "c",
        "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T10:00:00Z"}}}]}});
    store.patch(&key, &patch, None).expect("patch");
}

#[test]
fn pods_sharing_a_node_get_distinct_ports_and_a_finished_jobs_port_is_reused() {
    let (_dir, store) = open();
    store.create(node("h100-1", "127.0.1.9", NOW)).expect("node");
    let tf = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf", "namespace": "default"},
                    "spec": {"tfReplicaSpecs": {"Chief": role(1, Some(("tfjob-port", 2222))),
                                                "Worker": role(2, Some(("tfjob-port", 2222)))}}});
    store.create(tf).expect("tfjob");
    store.create(pytorch("pa")).expect("pa");
    store.create(pytorch("pb")).expect("pb");
    run_pass(&store, NOW);

    let all = pods(&store);
    assert_eq!(all.len(), 7, "{:?}", all.keys());
    for p in all.values() {
        assert_eq!(p["spec"]["nodeName"], "h100-1");
        assert_eq!(p["metadata"]["annotations"]["ringleader.io/start"], "true");
    }
    // TFJob: every pod's own TF_CONFIG entry is the port it holds, all distinct.
    let mut tf_ports = Vec::new();
    for name in ["tf-chief-0", "tf-worker-0", "tf-worker-1"] {
        let p = &all[name];
        let config: Value = serde_json::from_str(&env(p, "TF_CONFIG").expect("TF_CONFIG")).expect("json");
        let own = &config["cluster"][config["task"]["type"].as_str().expect("type")]
            [config["task"]["index"].as_u64().expect("index") as usize];
        assert_eq!(own.as_str(), Some(format!("127.0.1.9:{}", ports(p)).as_str()), "{name}: {config}");
        tf_ports.push(ports(p).to_string());
    }
    // PyTorchJobs: the masters hold different ports, and every pod of a job names its master's.
    let mut masters = Vec::new();
    for job in ["pa", "pb"] {
        let master = ports(&all[&format!("{job}-master-0")]).to_string();
        assert_eq!(ports(&all[&format!("{job}-worker-0")]), "", "workers listen on nothing");
        for pod in [format!("{job}-master-0"), format!("{job}-worker-0")] {
            assert_eq!(env(&all[&pod], "MASTER_PORT").as_deref(), Some(master.as_str()), "{pod}");
            assert_eq!(env(&all[&pod], "MASTER_ADDR").as_deref(), Some("127.0.1.9"), "{pod}");
        }
        masters.push(master);
    }
    // Jobs are reconciled in key order (PyTorchJobs before TFJobs): exact ports.
    assert_eq!(masters, ["23456", "28000"]);
    assert_eq!(tf_ports, ["2222", "28001", "28002"]);

    // pa ends; its port is free for the next job, pb's is still held.
    finish(&store, "pa-master-0");
    finish(&store, "pa-worker-0");
    run_pass(&store, NOW + 1.0);
    store.create(pytorch("pc")).expect("pc");
    run_pass(&store, NOW + 2.0);
    let all = pods(&store);
    assert_eq!(ports(&all["pc-master-0"]), "23456");
    assert_eq!(env(&all["pc-worker-0"], "MASTER_PORT").as_deref(), Some("23456"));
}
