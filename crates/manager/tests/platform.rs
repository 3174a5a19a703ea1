//! The platform controller over a real store: a resource group labels its
//! nodes, a queue's quota becomes its capability, a workspace gets its
//! RoleBindings and queue, and a Run instantiates its TrainingJob as a
//! PyTorchJob (valid, dataset mounted at /data, confined to the group)
//! whose state and pods it follows; stopping it deletes the job and frees
//! the pods while the Run is kept, `stopped`. Passes are driven one by one
//! (agent writes made by hand), and once by the manager's own loop.

mod common;

use common::{loaded, open, NOW};
use ringleader_manager::platform::{API, GROUP_LABEL, RUN_LABEL};
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;

fn node(name: &str, address: &str, pool: &str, beat: f64) -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": name, "labels": {"pool": pool}},
           "spec": {"profile": "hgx-h100-8", "address": address},
           "status": {"ready": true, "lastHeartbeat": beat}})
}

/// The platform objects of the scenario, as an admin and a member create them.
fn setup(store: &Store, beat: f64) {
    for (n, a, pool) in
        [("h100-1", "127.0.1.5", "train"), ("h100-2", "127.0.1.6", "train"), ("h100-3", "127.0.1.7", "dev")]
    {
        store.create(node(n, a, pool, beat)).expect("node");
    }
    let objects = [
        json!({"apiVersion": API, "kind": "ResourceGroup", "metadata": {"name": "g1"},
               "spec": {"displayName": "训练组", "accelerator": "NVIDIA", "policies": ["Gang"],
                        "nodes": {"selector": {"matchLabels": {"pool": "train"}}}}}),
        json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"},
               "spec": {"weight": 1, "resourceGroup": "g1",
                        "quota": {"instanceSpec": {"gpu": 8, "cpu": "16", "memory": "64Gi"}, "instanceCount": 2}}}),
        json!({"apiVersion": API, "kind": "Workspace", "metadata": {"name": "team-a"},
               "spec": {"resourceGroup": "g1", "queues": ["q1"],
                        "members": [{"user": "alice", "role": "admin"}, {"user": "bob", "role": "member"}]}}),
        json!({"apiVersion": API, "kind": "Dataset", "metadata": {"name": "mnist", "namespace": "team-a"},
               "spec": {"type": "image", "visibility": "workspace", "source": {"path": "/srv/datasets/mnist"}}}),
        json!({"apiVersion": API, "kind": "TrainingJob", "metadata": {"name": "train", "namespace": "team-a"},
               "spec": {"queue": "q1", "image": "pytorch/pytorch:2.4", "framework": "PyTorchDDP",
                        "command": "python train.py --epochs 1", "env": [{"name": "LR", "value": "0.1"}],
                        "roles": [{"name": "Master", "count": 1, "resources": {"gpu": 8}},
                                  {"name": "Worker", "count": 1, "resources": {"gpu": 8}}],
                        "mounts": [{"dataset": "mnist"}], "visibility": "workspace"}}),
    ];
    for o in objects {
        store.create(o).expect("create");
    }
    let tj = get(store, API, "TrainingJob", "team-a", "train").expect("training job");
    store
        .create(json!({"apiVersion": API, "kind": "Run",
                       "metadata": {"name": "train-r1", "namespace": "team-a",
                                    "ownerReferences": [{"apiVersion": API, "kind": "TrainingJob", "name": "train",
                                                         "uid": tj["metadata"]["uid"], "controller": true}]},
                       "spec": {"trainingJob": "train"}}))
        .expect("run");
}

fn get(store: &Store, api: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    store.get(&ObjectKey::new(api, kind, ns, name)).expect("get").map(|s| s.object)
}

fn run_pass(store: &Store, now: f64) {
    let mut cache = loaded(store);
    pass(store, &mut cache, &ManagerConfig::default(), &mut HashMap::new(), now).expect("pass");
}

fn run_pods(store: &Store) -> Vec<Value> {
    let (list, _) = store.list(&Selector::kind("v1", "Pod")).expect("list");
    list.into_iter().map(|s| s.object).filter(|p| p["metadata"]["labels"][RUN_LABEL] == "train-r1").collect()
}

fn run_status(store: &Store) -> Value {
    get(store, API, "Run", "team-a", "train-r1").expect("run")["status"].clone()
}

#[test]
fn a_workspace_runs_a_training_job_and_stops_it() {
    let (_dir, store) = open();
    setup(&store, NOW);
    run_pass(&store, NOW);

    // Workspace: RoleBindings in its namespace, queue bound, ready.
    let admins = get(&store, "rbac.authorization.k8s.io/v1", "RoleBinding", "team-a", "platform:workspace-admins")
        .expect("admins binding");
    assert_eq!(admins["roleRef"]["name"], "admin");
    assert_eq!(admins["subjects"][0]["name"], "alice");
    let members = get(&store, "rbac.authorization.k8s.io/v1", "RoleBinding", "team-a", "platform:workspace-members")
        .expect("members binding");
    assert_eq!(
        (members["roleRef"]["name"].as_str(), members["subjects"][0]["name"].as_str()),
        (Some("edit"), Some("bob"))
    );
    let ws = get(&store, API, "Workspace", "", "team-a").expect("workspace");
    assert_eq!(ws["status"]["state"], "ready", "{}", ws["status"]);
    // Its admins may edit it, by name (write_count.rs: once written, no pass rewrites it).
    let editors =
        get(&store, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "platform:workspace-editor:team-a")
            .expect("editors binding");
    assert_eq!(
        editors["subjects"],
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}])
    );

    // Resource group: its selected nodes labelled, the other not.
    for (n, member) in [("h100-1", true), ("h100-2", true), ("h100-3", false)] {
        let labels = &get(&store, "ringleader.io/v1alpha1", "Node", "", n).expect("node")["metadata"]["labels"];
        assert_eq!(labels.get(GROUP_LABEL).is_some(), member, "{n}: {labels}");
    }

    // Queue: capability from the quota, bound to the workspace.
    let q = get(&store, "scheduling.volcano.sh/v1beta1", "Queue", "", "q1").expect("queue");
    assert_eq!(q["spec"]["capability"], json!({"nvidia.com/gpu": 16, "cpu": "32", "memory": "128Gi"}));
    assert_eq!(q["spec"]["workspace"], "team-a");

    // The framework job: valid, queued on q1, dataset at /data, confined to g1.
    let job = get(&store, "kubeflow.org/v1", "PyTorchJob", "team-a", "train-r1").expect("framework job");
    let typed = ringleader_api::Resource::from_value(&job).expect("typed");
    assert!(ringleader_api::validate(&typed).is_empty(), "{:?}", ringleader_api::validate(&typed));
    let pod_spec = &job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"];
    assert_eq!(pod_spec["volumes"][0]["hostPath"]["path"], "/srv/datasets/mnist");
    assert_eq!(pod_spec["containers"][0]["volumeMounts"][0]["mountPath"], "/data");
    assert_eq!(pod_spec["nodeSelector"][GROUP_LABEL], "g1");

    // The job controller made and the scheduler bound its pods, on the group's nodes only.
    let pods = run_pods(&store);
    assert_eq!(pods.len(), 2, "master and worker");
    let mut on: Vec<&str> = pods.iter().filter_map(|p| p["spec"]["nodeName"].as_str()).collect();
    on.sort();
    assert_eq!(on, ["h100-1", "h100-2"]);

    // The agent starts them.
    for (i, p) in pods.iter().enumerate() {
        let name = p["metadata"]["name"].as_str().expect("name");
        let patch = json!({"metadata": {"annotations": {"ringleader.io/log-path": format!("/logs/{name}")}},
                           "status": {"phase": "Running", "podIP": format!("127.0.1.{}", 5 + i), "hostIP": "h",
                                      "startTime": "2026-11-23T10:00:00Z"}});
        store.patch(&ObjectKey::new("v1", "Pod", "team-a", name), &patch, None).expect("patch");
    }
    run_pass(&store, NOW + 5.0);
    run_pass(&store, NOW + 6.0);
    let st = run_status(&store);
    assert_eq!(st["state"], "running", "{st:#}");
    assert_eq!(st["job"], json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train-r1"}));
    let listed = st["pods"].as_array().expect("pods");
    assert_eq!(listed.len(), 2);
    assert!(listed
        .iter()
        .all(|p| p["phase"] == "Running" && p["log"].as_str().is_some_and(|l| l.starts_with("/logs/"))));
    assert!(listed.iter().any(|p| p["role"] == "Master"));
    let states: Vec<&str> =
        st["timeline"].as_array().expect("timeline").iter().filter_map(|t| t["state"].as_str()).collect();
    assert_eq!(states.first(), Some(&"creating"));
    assert_eq!(states.last(), Some(&"running"));
    let tj = get(&store, API, "TrainingJob", "team-a", "train").expect("tj");
    assert_eq!(tj["status"], json!({"runs": 1, "lastRun": "train-r1"}));

    // Stop: the job goes, its pods are handed to their agent, the Run stays.
    store
        .patch(&ObjectKey::new(API, "Run", "team-a", "train-r1"), &json!({"spec": {"stop": true}}), None)
        .expect("stop");
    run_pass(&store, NOW + 10.0);
    assert!(get(&store, "kubeflow.org/v1", "PyTorchJob", "team-a", "train-r1").is_none(), "job deleted");
    run_pass(&store, NOW + 11.0);
    assert_eq!(run_status(&store)["state"], "stopping");
    let pods = run_pods(&store);
    assert_eq!(pods.len(), 2);
    for p in &pods {
        assert!(p["metadata"]["deletionTimestamp"].is_string(), "handed to the agent: {}", p["metadata"]);
        // The agent stops it and deletes the object.
        store
            .delete(&ObjectKey::new("v1", "Pod", "team-a", p["metadata"]["name"].as_str().expect("name")), None)
            .expect("delete");
    }
    run_pass(&store, NOW + 12.0);
    let st = run_status(&store);
    assert_eq!(st["state"], "stopped", "{st:#}");
    // The status reads as the API's typed Run status.
    let typed: ringleader_api::kinds::platform::RunStatus = serde_json::from_value(st.clone()).expect("typed status");
    assert_eq!((typed.pods.len(), typed.state.as_str()), (2, "stopped"));
    assert_eq!(st["pods"].as_array().map(Vec::len), Some(2), "the record of its pods is kept");
    assert_eq!(st["timeline"].as_array().and_then(|t| t.last()).map(|t| &t["state"]), Some(&json!("stopped")));
    // Nothing more to do: another pass writes nothing.
    let before = store.version();
    run_pass(&store, NOW + 13.0);
    assert_eq!(store.version(), before, "a settled platform writes nothing");
}

#[test]
fn a_run_on_a_missing_queue_fails_and_a_locked_queue_keeps_it_queued() {
    let (_dir, store) = open();
    setup(&store, NOW);
    store
        .patch(
            &ObjectKey::new("scheduling.volcano.sh/v1beta1", "Queue", "", "q1"),
            &json!({"status": {"state": "Closed"}}),
            None,
        )
        .expect("lock");
    run_pass(&store, NOW);
    run_pass(&store, NOW + 1.0);
    let st = run_status(&store);
    assert_eq!(st["state"], "queued", "{st:#}");
    assert_eq!(st["message"], "queue q1 is locked: no new job is scheduled from it");
    assert!(run_pods(&store).iter().all(|p| p["spec"]["nodeName"].is_null()), "nothing bound from a Closed queue");

    store
        .patch(&ObjectKey::new(API, "TrainingJob", "team-a", "train"), &json!({"spec": {"queue": "nope"}}), None)
        .expect("edit");
    store
        .create(json!({"apiVersion": API, "kind": "Run", "metadata": {"name": "train-r2", "namespace": "team-a"},
                       "spec": {"trainingJob": "train"}}))
        .expect("run");
    run_pass(&store, NOW + 2.0);
    let st = get(&store, API, "Run", "team-a", "train-r2").expect("run")["status"].clone();
    assert_eq!((st["state"].as_str(), st["message"].as_str()), (Some("failed"), Some("queue nope not found")));
}

/// The manager's own watch-driven loop: the Run's job is reconciled on its
/// own events (it has an owner), and a stop frees its pods without a full resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_loop_runs_and_stops_a_run() {
    let (_dir, store) = open();
    setup(&store, ringleader_api::time::now() + 3600.0);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let loop_store = store.clone();
    let manager = tokio::spawn(async move { ringleader_manager::run(loop_store, ManagerConfig::default(), rx).await });

    let wait = |what: &'static str, ok: &dyn Fn(&Store) -> bool| {
        for _ in 0..100 {
            if ok(&store) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("timed out waiting for {what}");
    };
    wait("two bound pods", &|s| {
        let p = run_pods(s);
        p.len() == 2 && p.iter().all(|p| p["metadata"]["annotations"]["ringleader.io/start"] == "true")
    });
    store
        .patch(&ObjectKey::new(API, "Run", "team-a", "train-r1"), &json!({"spec": {"stop": true}}), None)
        .expect("stop");
    wait("pods handed to the agent", &|s| run_pods(s).iter().all(|p| p["metadata"]["deletionTimestamp"].is_string()));
    for p in run_pods(&store) {
        store
            .delete(&ObjectKey::new("v1", "Pod", "team-a", p["metadata"]["name"].as_str().expect("name")), None)
            .expect("delete");
    }
    wait("the run stopped", &|s| run_status(s)["state"] == "stopped");
    assert!(get(&store, "kubeflow.org/v1", "PyTorchJob", "team-a", "train-r1").is_none());
    tx.send(true).expect("shutdown");
    manager.await.expect("join").expect("manager");
}

#[test]
fn a_script_runs_on_its_node_and_storage_is_mounted_where_ready() {
    let (dir, store) = open();
    setup(&store, NOW);
    store
        .create(json!({"apiVersion": API, "kind": "Script", "metadata": {"name": "disk"},
                       "spec": {"content": "df -h /", "timeoutSeconds": 600}}))
        .expect("script");
    store
        .create(json!({"apiVersion": API, "kind": "ScriptRun", "metadata": {"name": "disk-1"},
                       "spec": {"script": "disk", "nodes": ["h100-3"]}}))
        .expect("script run");
    store
        .create(json!({"apiVersion": API, "kind": "StorageMount", "metadata": {"name": "shared"},
                       "spec": {"nodeDirectory": "/mnt/shared", "nodes": ["h100-1", "h100-9"], "mounted": true}}))
        .expect("storage");
    run_pass(&store, NOW);
    let sm = get(&store, API, "StorageMount", "", "shared").expect("storage");
    assert_eq!(
        sm["status"]["nodes"],
        json!([{"node": "h100-1", "state": "mounted"}, {"node": "h100-9", "state": "unmounted"}])
    );
    let (pods, _) = store.list(&Selector::kind("v1", "Pod")).expect("list");
    let pod = pods
        .into_iter()
        .map(|s| s.object)
        .find(|p| p["metadata"]["namespace"] == "platform-system")
        .expect("the script's pod");
    assert_eq!(pod["spec"]["nodeName"], "h100-3", "pinned by kubernetes.io/hostname");
    let log = dir.path().join("script.log");
    std::fs::write(&log, "Filesystem Size\n/dev/root 100G\n").expect("log");
    let patch = json!({"metadata": {"annotations": {"ringleader.io/log-path": log.to_str().expect("utf-8")}},
                       "status": {"phase": "Succeeded", "containerStatuses": [{"name": "script",
                           "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T10:00:05Z"}}}]}});
    let key = ObjectKey::new("v1", "Pod", "platform-system", pod["metadata"]["name"].as_str().expect("name"));
    store.patch(&key, &patch, None).expect("finish");
    run_pass(&store, NOW + 5.0);
    let st = get(&store, API, "ScriptRun", "", "disk-1").expect("script run")["status"].clone();
    assert_eq!(st["state"], "succeeded", "{st:#}");
    assert_eq!(
        st["nodes"],
        json!([{"node": "h100-3", "state": "succeeded", "exitCode": 0, "output": "Filesystem Size\n/dev/root 100G\n"}])
    );
    let typed: ringleader_api::kinds::platform::ScriptRunStatus = serde_json::from_value(st).expect("typed status");
    assert_eq!(typed.nodes[0].exit_code, Some(0));
}
