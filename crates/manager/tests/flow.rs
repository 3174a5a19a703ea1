//! The manager over a real store, driven pass by pass with the agent's
//! writes made by hand: a job's pods are created, bound as a gang to exact
//! devices, released with their rendezvous env and files, and the job
//! finishes from the pods' exit codes.

use ringleader_manager::cache::Cache;
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;

fn node(name: &str, profile: &str, address: &str, now: f64) -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": name, "labels": {"host-arch": "huawei-arm", "gpu-model": "h100"}},
           "spec": {"profile": profile, "address": address},
           "status": {"ready": true, "lastHeartbeat": now}})
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).expect("example");
    serde_yaml_ng::from_str(&text).expect("yaml")
}

fn run_pass(store: &Store, now: f64) {
    let mut cache = Cache::default();
    let (objects, _) = store.list(&Selector::all()).expect("list");
    cache.load(objects);
    pass(store, &mut cache, &ManagerConfig::default(), &mut HashMap::new(), now).expect("pass");
}

fn pods(store: &Store) -> Vec<Value> {
    let sel = Selector::kind("v1", "Pod");
    store.list(&sel).expect("list").0.into_iter().map(|s| s.object).collect()
}

fn env_of(pod: &Value) -> HashMap<String, String> {
    pod["spec"]["containers"][0]["env"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["value"].as_str().unwrap_or("").to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn finish(store: &Store, pod: &Value, code: i64) {
    let key = ObjectKey::new("v1", "Pod", "default", pod["metadata"]["name"].as_str().expect("name"));
    let phase = if code == 0 { "Succeeded" } else { "Failed" };
    let patch = json!({"status": {"phase": phase, "containerStatuses": [{"name": "c",
        "state": {"terminated": {"exitCode": code, "finishedAt": "2026-11-23T10:00:00Z"}}}]}});
    store.patch(&key, &patch, None).expect("patch");
}

#[test]
fn pytorch_gang_is_bound_released_and_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let now = 1_795_428_000.0;
    store.create(node("h100-1", "hgx-h100-8", "127.0.1.5", now)).expect("node");
    store.create(node("h100-2", "hgx-h100-8", "127.0.1.6", now)).expect("node");
    store.create(yaml("examples/demo/pytorchjob-h100.yaml")).expect("job");

    run_pass(&store, now);
    let pods = pods(&store);
    assert_eq!(pods.len(), 2, "master and worker created");
    let mut nodes: Vec<&str> = pods.iter().map(|p| p["spec"]["nodeName"].as_str().expect("bound")).collect();
    nodes.sort();
    assert_eq!(nodes, ["h100-1", "h100-2"], "8 GPUs each: one pod per node");
    let master = pods.iter().find(|p| p["metadata"]["name"] == "demo-pytorch-master-0").expect("master");
    let master_addr = if master["spec"]["nodeName"] == "h100-1" { "127.0.1.5" } else { "127.0.1.6" };
    for p in &pods {
        assert_eq!(p["metadata"]["annotations"]["ringleader.io/start"], "true");
        assert_eq!(p["metadata"]["annotations"]["ringleader.io/devices"], "0,1,2,3,4,5,6,7");
        let env = env_of(p);
        assert_eq!(env.get("MASTER_ADDR").map(String::as_str), Some(master_addr), "{env:?}");
        assert_eq!(env.get("WORLD_SIZE").map(String::as_str), Some("2"));
    }
    assert_eq!(env_of(master).get("RANK").map(String::as_str), Some("0"));

    for p in &pods {
        finish(&store, p, 0);
    }
    run_pass(&store, now + 5.0);
    let job = store
        .get(&ObjectKey::new("kubeflow.org/v1", "PyTorchJob", "default", "demo-pytorch"))
        .expect("get")
        .expect("job");
    assert_eq!(job.object["status"]["ringleader"]["phase"], "Completed", "{}", job.object["status"]);
}

#[test]
fn ascend_gang_gets_a_completed_rank_table_with_the_chosen_chips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let now = 1_795_428_000.0;
    store.create(node("a800-1", "atlas-800-910", "127.0.1.1", now)).expect("node");
    store.create(node("a800-2", "atlas-800-910", "127.0.1.2", now)).expect("node");
    store.create(yaml("examples/demo/ascendjob-910.yaml")).expect("job");
    run_pass(&store, now);
    let pods = pods(&store);
    assert_eq!(pods.len(), 2);
    // One copy of the table, in the ConfigMap; each pod names it instead of carrying it.
    let cm = store
        .get(&ObjectKey::new("v1", "ConfigMap", "default", "rings-config-demo-ascend"))
        .expect("get")
        .expect("rings-config ConfigMap");
    let table: Value = serde_json::from_str(cm.object["data"]["hccl.json"].as_str().expect("hccl.json")).expect("json");
    for p in &pods {
        let files: HashMap<String, String> =
            serde_json::from_str(p["metadata"]["annotations"]["ringleader.io/files"].as_str().expect("files"))
                .expect("json");
        assert!(!files.contains_key("/user/serverid/devindex/config/hccl.json"), "no per-pod copy");
        let from: HashMap<String, String> =
            serde_json::from_str(p["metadata"]["annotations"]["ringleader.io/config-files"].as_str().expect("config"))
                .expect("json");
        assert_eq!(from["/user/serverid/devindex/config/hccl.json"], "rings-config-demo-ascend/hccl.json");
        assert_eq!(table["status"], "completed");
        let ranks: usize = table["server_list"]
            .as_array()
            .expect("servers")
            .iter()
            .map(|s| s["device"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(ranks, 16);
        assert_eq!(
            env_of(p).get("RANK_TABLE_FILE").map(String::as_str),
            Some("/user/serverid/devindex/config/hccl.json")
        );
        assert_eq!(
            p["metadata"]["annotations"]["huawei.com/Ascend910"].as_str().map(|s| s.split(',').count()),
            Some(8)
        );
    }
}

#[test]
fn a_large_rank_table_is_packed_in_its_config_map_not_copied_into_each_pod() {
    use ringleader_api::configmap_file;
    use ringleader_store::Op;
    const PODS: usize = 1_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let now = 1_795_428_000.0;
    let nodes: Vec<Op> = (0..PODS)
        .map(|i| {
            let address = format!("127.1.{}.{}", i / 250, 1 + i % 250);
            Op::Create(node(&format!("a800-{i}"), "atlas-800-910", &address, now))
        })
        .collect();
    store.batch(nodes).expect("nodes");
    let mut job = yaml("examples/demo/ascendjob-910.yaml");
    job["spec"]["replicaSpecs"]["Worker"]["replicas"] = json!(PODS - 1);
    job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = json!(PODS);
    store.create(job).expect("job");
    run_pass(&store, now);

    let pods = pods(&store);
    assert_eq!(pods.len(), PODS);
    let cm_key = ObjectKey::new("v1", "ConfigMap", "default", "rings-config-demo-ascend");
    let cm = store.get(&cm_key).expect("get").expect("rings-config ConfigMap");
    let shown = cm.object["data"]["hccl.json"].as_str().unwrap_or_default();
    assert!(configmap_file::is_placeholder(shown), "{shown}");
    let text = configmap_file::read(&cm.object, "hccl.json").expect("unpacks").expect("present");
    assert!(text.len() > configmap_file::PACK_ABOVE, "{} bytes", text.len());
    let table: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(table["status"], "completed");
    assert_eq!(table["server_list"].as_array().map_or(0, Vec::len), PODS);
    for p in &pods {
        let a = &p["metadata"]["annotations"];
        assert_eq!(a["ringleader.io/start"], "true", "released");
        let files = a["ringleader.io/files"].as_str().unwrap_or_default();
        assert!(!files.contains("hccl.json"), "no per-pod copy");
        let from = a["ringleader.io/config-files"].as_str().unwrap_or_default();
        assert!(from.contains("rings-config-demo-ascend/hccl.json"), "{from}");
    }
    // The job's status marks the table; it does not hold it.
    let job_key = ObjectKey::new("mindxdl.gitee.com/v1", "AscendJob", "default", "demo-ascend");
    let job = store.get(&job_key).expect("get").expect("job");
    let mark = &job.object["status"]["ringleader"]["rank_table"];
    assert_eq!(mark["bytes"].as_u64(), Some(text.len() as u64), "{mark}");
    assert_eq!(mark["sha256"].as_str().map(str::len), Some(64));
    let status_bytes = serde_json::to_vec(&job.object["status"]).map_or(usize::MAX, |v| v.len());
    assert!(status_bytes < 16 * 1024, "status is {status_bytes} bytes");

    // A pod still to be released while the ConfigMap does not hold the
    // table (edited by hand here): no 600 KB copy into the pod; it waits,
    // and a Warning says why.
    let stale = json!({"data": {"hccl.json": r#"{"status":"initializing"}"#}, "binaryData": null});
    store.patch(&cm_key, &stale, None).expect("stale ConfigMap");
    let held = ObjectKey::new("v1", "Pod", "default", "demo-ascend-worker-7");
    let unreleased = json!({"metadata": {"annotations": {"ringleader.io/start": null, "ringleader.io/files": null}}});
    store.patch(&held, &unreleased, None).expect("unreleased pod");
    run_pass(&store, now + 1.0);
    let pod = store.get(&held).expect("get").expect("pod");
    assert!(pod.object["metadata"]["annotations"].get("ringleader.io/start").is_none(), "not released");
    assert!(pod.object["metadata"]["annotations"].get("ringleader.io/files").is_none(), "no copy");
    let events = store.list(&Selector::kind("v1", "Event")).expect("list").0;
    let warning =
        events.iter().find(|e| e.object["reason"] == "RankTableNotShared").expect("a RankTableNotShared Event");
    assert_eq!(warning.object["type"], "Warning");
    let message = warning.object["message"].as_str().unwrap_or_default();
    assert!(message.contains("rings-config-demo-ascend") && message.contains("not copied"), "{message}");
}
