//! The agent against a real store in a temporary directory, with real
//! processes. Every wait polls with a deadline; nothing sleeps blindly.

mod common;

use common::wait_within as wait_for;

use ringleader_agent::{node_object, AgentConfig, AgentHandle, Runtime, VirtualNode};
use ringleader_store::{ObjectKey, Op, Store};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const NS: &str = "ns";

fn open() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    (dir, store)
}

fn config(dir: &TempDir, nodes: usize, runtime: Runtime) -> AgentConfig {
    let mut c = AgentConfig::new(dir.path().join("data"), VirtualNode::numbered("n", "hgx-h100-8", nodes, 1))
        .with_runtime(runtime)
        .with_heartbeat_interval(Duration::from_millis(100));
    c.flush_interval = Duration::from_millis(10);
    c
}

async fn start(store: &Store, cfg: AgentConfig) -> AgentHandle {
    ringleader_agent::start(store.clone(), cfg).await.unwrap()
}

fn pod_key(name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", NS, name)
}

fn node_key(name: &str) -> ObjectKey {
    ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name)
}

/// A pod bound to `node` and released to start, running `command`.
fn pod(name: &str, node: &str, command: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": NS, "annotations": { "ringleader.io/start": "true" } },
        "spec": { "nodeName": node, "containers": [{ "name": "main", "command": command }] },
        "status": { "phase": "Pending" },
    })
}

fn get(store: &Store, key: &ObjectKey) -> Option<Value> {
    store.get(key).unwrap().map(|s| s.object)
}

async fn wait_phase(store: &Store, name: &str, phase: &str) -> Value {
    wait_for(&format!("{name} to be {phase}"), Duration::from_secs(15), || {
        get(store, &pod_key(name)).filter(|p| p["status"]["phase"] == phase)
    })
    .await
}

fn terminated(p: &Value) -> &Value {
    &p["status"]["containerStatuses"][0]["state"]["terminated"]
}

fn log_of(p: &Value) -> String {
    let path = p["metadata"]["annotations"]["ringleader.io/log-path"].as_str().unwrap();
    std::fs::read_to_string(path).unwrap()
}

fn pgid_of(p: &Value) -> i32 {
    p["metadata"]["annotations"]["ringleader.io/pid"].as_str().unwrap().parse().unwrap()
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

fn delete_gracefully(store: &Store, name: &str, grace: u32) {
    let patch =
        json!({ "metadata": { "deletionTimestamp": "2030-01-01T00:00:00Z", "deletionGracePeriodSeconds": grace } });
    store.patch(&pod_key(name), &patch, None).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_code_and_log_are_reported() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    store.create(pod("p", "n-0", json!(["echo hello; exit 3"]))).unwrap();
    let p = wait_phase(&store, "p", "Failed").await;
    assert_eq!(terminated(&p)["exitCode"], 3);
    assert_eq!(terminated(&p)["reason"], "Error");
    assert!(terminated(&p)["finishedAt"].is_string());
    assert_eq!(p["status"]["podIP"], "127.0.1.1");
    assert_eq!(p["status"]["hostIP"], "127.0.1.1");
    assert!(p["status"]["startTime"].is_string());
    assert!(log_of(&p).contains("hello"));
    assert!(log_of(&p).ends_with('\n'));
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_and_files_point_into_the_sandbox() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let mut p = pod("p", "n-0", json!(["/bin/sh", "-c"]));
    p["spec"]["containers"][0]["args"] = json!([
        r#"echo "table=$RANK_TABLE_FILE"; cat "$RANK_TABLE_FILE"; echo; echo "ip=$RINGLEADER_POD_IP pod=$RINGLEADER_POD ns=$RINGLEADER_NAMESPACE node=$RINGLEADER_NODE home=$HOME"; echo "x=$X""#
    ]);
    p["spec"]["containers"][0]["env"] = json!([
        { "name": "RANK_TABLE_FILE", "value": "/user/serverid/devindex/config/hccl.json" },
        { "name": "X", "value": "$(RINGLEADER_UNSET)-y" },
    ]);
    let files = json!({ "/user/serverid/devindex/config/hccl.json": "{\"status\":\"completed\"}" });
    p["metadata"]["annotations"]["ringleader.io/files"] = json!(files.to_string());
    store.create(p).unwrap();
    let p = wait_phase(&store, "p", "Succeeded").await;
    assert_eq!(terminated(&p)["exitCode"], 0);
    let log = log_of(&p);
    let sandbox = dir.path().join("data/nodes/n-0/pods/ns_p");
    let table = sandbox.join("user/serverid/devindex/config/hccl.json");
    assert!(log.contains(&format!("table={}", table.display())), "{log}");
    assert!(log.contains("{\"status\":\"completed\"}"), "{log}");
    assert!(log.contains(&format!("ip=127.0.1.1 pod=p ns=ns node=n-0 home={}", sandbox.display())), "{log}");
    assert!(log.contains("x=$(RINGLEADER_UNSET)-y"), "{log}");
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_from_configmaps_are_mounted_and_a_missing_one_stops_the_start() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    store
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "rings-config-j", "namespace": NS},
                       "data": {"hccl.json": "{\"status\":\"completed\",\"server_count\":\"2\"}"}}))
        .unwrap();
    let mounted = |name: &str, source: &str| {
        let mut p = pod(name, "n-0", json!(["/bin/sh", "-c"]));
        p["spec"]["containers"][0]["args"] = json!([r#"cat "$RANK_TABLE_FILE""#]);
        p["spec"]["containers"][0]["env"] =
            json!([{ "name": "RANK_TABLE_FILE", "value": "/user/serverid/devindex/config/hccl.json" }]);
        let from = json!({ "/user/serverid/devindex/config/hccl.json": source });
        p["metadata"]["annotations"]["ringleader.io/config-files"] = json!(from.to_string());
        p
    };
    store.create(mounted("p", "rings-config-j/hccl.json")).unwrap();
    let p = wait_phase(&store, "p", "Succeeded").await;
    assert_eq!(log_of(&p), "{\"status\":\"completed\",\"server_count\":\"2\"}");

    for (name, source, says) in [
        ("gone", "rings-config-nope/hccl.json", "configmap ns/rings-config-nope not found"),
        ("nokey", "rings-config-j/other.json", "has no key \"other.json\""),
    ] {
        store.create(mounted(name, source)).unwrap();
        let p = wait_phase(&store, name, "Failed").await;
        assert_eq!(p["status"]["reason"], "CreateContainerConfigError");
        let message = p["status"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message}");
    }
    store.create(mounted("bad", "no-slash")).unwrap();
    let p = wait_phase(&store, "bad", "Failed").await;
    assert_eq!(p["status"]["reason"], "InvalidPod");
    assert!(p["status"]["message"].as_str().unwrap_or_default().contains("ringleader.io/config-files"));
    agent.stop().await.unwrap();
}

/// A completed `hccl.json` of `servers` pods of 8 chips (about 600 bytes a
/// pod, as the controller renders it), tagged with `round`.
fn large_table(servers: usize, round: u32) -> String {
    let server = |i: usize| {
        let devices: Vec<Value> = (0..8)
            .map(|d| {
                json!({"device_id": d.to_string(), "device_ip": format!("192.168.{}.{}", i % 250, 100 + d),
                            "rank_id": (i * 8 + d).to_string()})
            })
            .collect();
        json!({"server_id": format!("10.{}.{}.{}", round, i / 250, i % 250), "host_ip": format!("10.0.{}.{}", i / 250, i % 250),
               "container_ip": format!("10.0.{}.{}", i / 250, i % 250), "device": devices})
    };
    let list: Vec<Value> = (0..servers).map(server).collect();
    json!({"status": "completed", "version": "1.0", "server_count": servers.to_string(), "server_list": list})
        .to_string()
}

/// `rings-config-big` holding `table` as the controller writes it (packed when large).
fn packed_config_map(table: &str) -> Value {
    let (mut data, mut binary) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    ringleader_api::configmap_file::put(&mut data, &mut binary, "hccl.json", table).unwrap();
    let cm = k8s_openapi::api::core::v1::ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("rings-config-big".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        data: Some(data),
        binary_data: (!binary.is_empty()).then_some(binary),
        ..Default::default()
    };
    let mut v = serde_json::to_value(cm).unwrap();
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("ConfigMap");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packed_rank_table_reaches_the_sandbox_whole_and_follows_its_configmap() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let (first, second) = (large_table(2_000, 1), large_table(2_000, 2));
    assert!(first.len() > ringleader_api::configmap_file::PACK_ABOVE, "{} bytes", first.len());
    let cm = packed_config_map(&first);
    assert!(cm["binaryData"]["hccl.json.gz"].is_string(), "packed");
    store.create(cm).unwrap();
    // Runs until the table is the second one, then reports its size.
    let mut p = pod("p", "n-0", json!(["/bin/sh", "-c"]));
    p["spec"]["containers"][0]["args"] = json!([
        r#"wc -c < "$RANK_TABLE_FILE"; while ! grep -q '"server_id":"10.2.' "$RANK_TABLE_FILE"; do sleep 0.05; done; wc -c < "$RANK_TABLE_FILE""#
    ]);
    p["spec"]["containers"][0]["env"] =
        json!([{ "name": "RANK_TABLE_FILE", "value": "/user/serverid/devindex/config/hccl.json" }]);
    let from = json!({ "/user/serverid/devindex/config/hccl.json": "rings-config-big/hccl.json" });
    p["metadata"]["annotations"]["ringleader.io/config-files"] = json!(from.to_string());
    store.create(p).unwrap();
    let running = wait_phase(&store, "p", "Running").await;
    let at = dir.path().join("data/nodes/n-0/pods/ns_p/user/serverid/devindex/config/hccl.json");
    assert_eq!(std::fs::read_to_string(&at).unwrap(), first, "unpacked whole at start");
    wait_for("the pod to read its table", Duration::from_secs(10), || {
        log_of(&running).starts_with(&first.len().to_string()).then_some(())
    })
    .await;

    store.apply(packed_config_map(&second)).unwrap();
    let done = wait_phase(&store, "p", "Succeeded").await;
    assert_eq!(std::fs::read_to_string(&at).unwrap(), second, "rewritten, unpacked, on the ConfigMap's change");
    assert_eq!(log_of(&done), format!("{}\n{}\n", first.len(), second.len()));

    // A packed key that is not gzip stops the start, naming it.
    let mut bad = packed_config_map(&first);
    bad["metadata"]["name"] = json!("rings-config-bad");
    bad["binaryData"]["hccl.json.gz"] = json!("bm90IGd6aXA="); // "not gzip"
    store.create(bad).unwrap();
    let mut q = pod("q", "n-0", json!(["true"]));
    let from = json!({ "/user/serverid/devindex/config/hccl.json": "rings-config-bad/hccl.json" });
    q["metadata"]["annotations"]["ringleader.io/config-files"] = json!(from.to_string());
    store.create(q).unwrap();
    let q = wait_phase(&store, "q", "Failed").await;
    assert_eq!(q["status"]["reason"], "CreateContainerConfigError");
    let message = q["status"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("configmap ns/rings-config-bad binaryData[\"hccl.json.gz\"]: not gzip"), "{message}");
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_file_resolves_the_mpi_hostfile_names() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 2, Runtime::Process)).await;
    // The worker is bound to the other node but not started: it still has a name.
    let mut worker = pod("pi-worker-0", "n-1", json!(["sleep 30"]));
    worker["metadata"]["annotations"] = json!({});
    worker["spec"]["hostname"] = json!("pi-worker-0");
    worker["spec"]["subdomain"] = json!("pi");
    store.create(worker).unwrap();
    let mut launcher = pod(
        "pi-launcher",
        "n-0",
        json!([r#"grep -w 'pi-worker-0.pi.ns.svc' "$RINGLEADER_HOSTS" && grep -w 'pi-worker-0' "$RINGLEADER_HOSTS""#]),
    );
    launcher["spec"]["hostname"] = json!("pi-launcher");
    launcher["spec"]["subdomain"] = json!("pi");
    store.create(launcher).unwrap();
    let p = wait_phase(&store, "pi-launcher", "Succeeded").await;
    let log = log_of(&p);
    assert!(log.lines().all(|l| l.starts_with("127.0.1.2\t")), "{log}");
    assert!(log.contains("pi-worker-0.pi.ns.svc.cluster.local"), "{log}");
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_sends_sigterm_then_removes_the_object() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let script = r#"trap 'echo term > "$HOME/marker"; exit 0' TERM; echo ready; while true; do sleep 0.05; done"#;
    store.create(pod("p", "n-0", json!([script]))).unwrap();
    let p = wait_phase(&store, "p", "Running").await;
    wait_for("the trap to be set", Duration::from_secs(10), || log_of(&p).contains("ready").then_some(())).await;
    delete_gracefully(&store, "p", 10);
    wait_for("the pod object to go", Duration::from_secs(10), || get(&store, &pod_key("p")).is_none().then_some(()))
        .await;
    let marker = dir.path().join("data/nodes/n-0/pods/ns_p/marker");
    assert_eq!(std::fs::read_to_string(marker).unwrap(), "term\n");
    assert!(!group_alive(pgid_of(&p)));
    agent.stop().await.unwrap();
}

/// A pod bound to devices another running pod of the node holds is refused
/// (a bind that went around the scheduler), naming the devices and the
/// holder; so is a device annotation that is not device IDs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_on_held_devices_is_refused() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let with_devices = |name: &str, devices: &str| {
        let mut p = pod(name, "n-0", json!(["echo ready; while true; do sleep 0.05; done"]));
        p["metadata"]["annotations"]["ringleader.io/devices"] = json!(devices);
        p
    };
    store.create(with_devices("holder", "0,1")).unwrap();
    let holder = wait_phase(&store, "holder", "Running").await;
    store.create(with_devices("intruder", "1,2")).unwrap();
    let refused = wait_phase(&store, "intruder", "Failed").await;
    let t = terminated(&refused);
    assert_eq!(t["reason"], "DeviceConflict", "{refused}");
    let message = t["message"].as_str().unwrap_or("");
    assert!(message.contains("device(s) 1 of node n-0") && message.contains("ns/holder"), "{message}");
    assert!(refused["metadata"]["annotations"].get("ringleader.io/pid").is_none(), "no process was started");
    store.create(with_devices("garbled", "0,x")).unwrap();
    let garbled = wait_phase(&store, "garbled", "Failed").await;
    assert_eq!(terminated(&garbled)["reason"], "InvalidDevices");
    // Disjoint devices start as usual, and the holder was never disturbed.
    store.create(with_devices("neighbour", "2,3")).unwrap();
    wait_phase(&store, "neighbour", "Running").await;
    assert!(group_alive(pgid_of(&holder)));
    agent.stop().await.unwrap();
}

/// The node lifecycle ended the pod (NodeLost) while its processes still
/// ran here: the agent kills them and leaves the control plane's verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_ended_by_the_control_plane_is_killed_and_its_verdict_kept() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    store.create(pod("p", "n-0", json!(["echo ready; while true; do sleep 0.05; done"]))).unwrap();
    let p = wait_phase(&store, "p", "Running").await;
    let pgid = pgid_of(&p);
    let verdict = json!({ "status": { "phase": "Failed", "reason": "NodeLost", "message": "node n-0 lost" } });
    store.patch(&pod_key("p"), &verdict, None).unwrap();
    wait_for("the group to die", Duration::from_secs(10), || (!group_alive(pgid)).then_some(())).await;
    // Give a stray status write time to land, then check none did.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = get(&store, &pod_key("p")).unwrap();
    assert_eq!(after["status"]["phase"], "Failed");
    assert_eq!(after["status"]["reason"], "NodeLost");
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ignored_means_sigkill_after_the_grace_period() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let script = "trap '' TERM; echo ready; while true; do sleep 0.05; done";
    store.create(pod("p", "n-0", json!([script]))).unwrap();
    let p = wait_phase(&store, "p", "Running").await;
    wait_for("the trap to be set", Duration::from_secs(10), || log_of(&p).contains("ready").then_some(())).await;
    let pgid = pgid_of(&p);
    let t0 = Instant::now();
    delete_gracefully(&store, "p", 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(group_alive(pgid), "SIGTERM is ignored, so the process is still there");
    assert!(get(&store, &pod_key("p")).is_some());
    wait_for("the pod object to go", Duration::from_secs(10), || get(&store, &pod_key("p")).is_none().then_some(()))
        .await;
    assert!(t0.elapsed() >= Duration::from_millis(950), "deleted after {:?}", t0.elapsed());
    wait_for("the group to die", Duration::from_secs(5), || (!group_alive(pgid)).then_some(())).await;
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_started_and_malformed_pods() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let mut idle = pod("idle", "n-0", json!(["sleep 30"]));
    idle["metadata"]["annotations"] = json!({});
    store.create(idle).unwrap();
    delete_gracefully(&store, "idle", 30);
    wait_for("the unstarted pod to go", Duration::from_secs(10), || {
        get(&store, &pod_key("idle")).is_none().then_some(())
    })
    .await;

    let mut bad = pod("bad", "n-0", json!(["true"]));
    bad["spec"]["containers"] = json!([]);
    store.create(bad).unwrap();
    let p = wait_phase(&store, "bad", "Failed").await;
    assert_eq!(p["status"]["reason"], "InvalidPod");
    assert!(p["status"]["message"].as_str().unwrap().contains("spec.containers"));

    let missing = pod("missing", "n-0", json!(["/no/such/program", "x"]));
    store.create(missing).unwrap();
    let p = wait_phase(&store, "missing", "Failed").await;
    assert_eq!(p["status"]["reason"], "StartError");

    let other = pod("elsewhere", "n-9", json!(["true"]));
    store.create(other).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(&store, &pod_key("elsewhere")).unwrap()["status"]["phase"], "Pending");
    agent.stop().await.unwrap();
}

fn heartbeat(store: &Store, node: &str) -> Option<f64> {
    get(store, &node_key(node))?["status"]["lastHeartbeat"].as_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_node_kills_its_processes_and_its_heartbeat() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 2, Runtime::Process)).await;
    assert_eq!(get(&store, &node_key("n-0")).unwrap()["status"]["ready"], true);
    store.create(pod("p", "n-0", json!(["sleep 30"]))).unwrap();
    let p = wait_phase(&store, "p", "Running").await;
    let pgid = pgid_of(&p);
    assert!(group_alive(pgid));

    store.patch(&node_key("n-0"), &json!({ "spec": { "stopped": true } }), None).unwrap();
    wait_for("the process to die", Duration::from_secs(10), || (!group_alive(pgid)).then_some(())).await;
    // Let any heartbeat already queued land, then watch n-0 stay silent while n-1 goes on.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let (b0, b1) = (heartbeat(&store, "n-0").unwrap(), heartbeat(&store, "n-1").unwrap());
    wait_for("n-1 to heartbeat twice", Duration::from_secs(10), || {
        (heartbeat(&store, "n-1").unwrap() > b1 + 0.15).then_some(())
    })
    .await;
    assert_eq!(heartbeat(&store, "n-0").unwrap(), b0);
    assert_eq!(get(&store, &pod_key("p")).unwrap()["status"]["phase"], "Running", "the machine is gone: no report");

    // A pod released while the node is off waits for it.
    store.create(pod("later", "n-0", json!(["echo later"]))).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(&store, &pod_key("later")).unwrap()["status"]["phase"], "Pending");

    store.patch(&node_key("n-0"), &json!({ "spec": { "stopped": false } }), None).unwrap();
    wait_for("n-0 to heartbeat again", Duration::from_secs(10), || {
        (heartbeat(&store, "n-0").unwrap() > b0).then_some(())
    })
    .await;
    let p = wait_phase(&store, "p", "Failed").await;
    assert_eq!(terminated(&p)["exitCode"], 137);
    assert_eq!(terminated(&p)["reason"], "NodeStopped");
    wait_phase(&store, "later", "Succeeded").await;
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_are_reported_and_registration_keeps_cli_fields() {
    let (dir, store) = open();
    // n-1 exists already, stopped, with an old profile: registration updates
    // the agent's fields and keeps the CLI's.
    let mut old = node_object(&VirtualNode::new("n-1", "pcie-4090-8", "127.0.9.9"));
    old["spec"]["stopped"] = json!(true);
    old["spec"]["injectedFaults"] = json!({ "unhealthy": [4] });
    store.create(old).unwrap();
    let agent = start(&store, config(&dir, 2, Runtime::Process)).await;
    let n1 = get(&store, &node_key("n-1")).unwrap();
    assert_eq!(n1["spec"]["profile"], "hgx-h100-8");
    assert_eq!(n1["spec"]["address"], "127.0.1.2");
    assert_eq!(n1["spec"]["stopped"], true);
    assert_eq!(n1["spec"]["injectedFaults"]["unhealthy"], json!([4]));
    assert!(n1["status"].get("ready").is_none(), "a stopped node does not heartbeat");

    let faults = json!({ "spec": { "injectedFaults": { "unhealthy": [1], "network": [3, 2] } } });
    store.patch(&node_key("n-0"), &faults, None).unwrap();
    wait_for("faults in n-0's status", Duration::from_secs(10), || {
        let n = get(&store, &node_key("n-0"))?;
        (n["status"]["unhealthyDevices"] == json!([1]) && n["status"]["networkUnhealthyDevices"] == json!([2, 3]))
            .then_some(())
    })
    .await;
    let recover = json!({ "spec": { "injectedFaults": { "unhealthy": [], "network": [3] } } });
    store.patch(&node_key("n-0"), &recover, None).unwrap();
    wait_for("recovery in n-0's status", Duration::from_secs(10), || {
        let n = get(&store, &node_key("n-0"))?;
        (n["status"]["unhealthyDevices"] == json!([]) && n["status"]["networkUnhealthyDevices"] == json!([3]))
            .then_some(())
    })
    .await;

    store.patch(&node_key("n-1"), &json!({ "spec": { "stopped": false } }), None).unwrap();
    wait_for("n-1 ready with its fault", Duration::from_secs(10), || {
        let n = get(&store, &node_key("n-1"))?;
        (n["status"]["ready"] == true && n["status"]["unhealthyDevices"] == json!([4])).then_some(())
    })
    .await;
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_runtime_runs_thousands_of_pods_in_batches() {
    let (dir, store) = open();
    let agent = start(&store, config(&dir, 8, Runtime::Simulated)).await;
    let n = 2000;
    let ops: Vec<Op> = (0..n)
        .map(|i| {
            let mut p = pod(&format!("sim-{i}"), &format!("n-{}", i % 8), json!(["train"]));
            p["metadata"]["annotations"]["ringleader.io/duration"] = json!(format!("{}", 0.2 + (i % 5) as f64 * 0.1));
            Op::Create(p)
        })
        .collect();
    let before = agent.stats();
    let sel = ringleader_store::Selector::kind("v1", "Pod");
    // Follow the store's events instead of listing 2,000 pods over and over.
    let mut events = store.watch(&sel, store.version()).unwrap();
    let t0 = Instant::now();
    store.batch(ops).unwrap();
    let mut done = std::collections::HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while done.len() < n {
        let ev = tokio::time::timeout_at(deadline, events.next()).await;
        let ev = ev.expect("timed out waiting for the simulated pods").expect("watch ended");
        if ev.object.object["status"]["phase"] == "Succeeded" {
            done.insert(ev.object.key.name.clone());
        }
    }
    let elapsed = t0.elapsed();
    assert!(elapsed >= Duration::from_millis(200));
    let (pods, _) = store.list(&sel).unwrap();
    for p in &pods {
        let t = terminated(&p.object);
        assert_eq!(t["exitCode"], 0);
        assert_eq!(t["reason"], "Completed");
        assert!(p.object["status"]["startTime"].is_string());
    }
    // The counters move just after the commit the watch already showed.
    let stats = wait_for("the writer's counters", Duration::from_secs(10), || {
        let s = agent.stats();
        (s.writes - before.writes >= 2 * n as u64).then_some(s)
    })
    .await;
    let writes = stats.writes - before.writes;
    let batches = stats.batches - before.batches;
    eprintln!("{n} simulated pods: {writes} writes in {batches} transactions, all done {elapsed:?} after creation");
    assert!(batches * 20 < writes, "pod writes must be batched: {batches} batches for {writes} writes");
    assert_eq!(stats.failures, 0);

    // A pod without a duration runs until deleted, and deletion is immediate.
    store.create(pod("forever", "n-0", json!(["x"]))).unwrap();
    wait_phase(&store, "forever", "Running").await;
    delete_gracefully(&store, "forever", 30);
    wait_for("the simulated pod to go", Duration::from_secs(10), || {
        get(&store, &pod_key("forever")).is_none().then_some(())
    })
    .await;
    agent.stop().await.unwrap();
}

fn running_pod(name: &str, started: &str, annotations: Value) -> Value {
    let mut p = pod(name, "n-0", json!(["sleep 30"]));
    p["metadata"]["annotations"] = annotations;
    p["metadata"]["annotations"]["ringleader.io/start"] = json!("true");
    p["status"] = json!({ "phase": "Running", "startTime": started, "podIP": "127.0.1.1", "hostIP": "127.0.1.1" });
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_fails_orphaned_process_pods_and_kills_leftovers() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let (dir, store) = open();
    // What a crashed agent leaves: a pod Running, its process group alive.
    let mut leftover = std::process::Command::new("/bin/sh")
        .args(["-c", "sleep 30"])
        .env("RINGLEADER_POD", "orphan")
        .env("RINGLEADER_NAMESPACE", NS)
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leftover.id().to_string();
    store.create(running_pod("orphan", "2030-01-01T00:00:00Z", json!({ "ringleader.io/pid": pgid }))).unwrap();
    let agent = start(&store, config(&dir, 1, Runtime::Process)).await;
    let p = wait_phase(&store, "orphan", "Failed").await;
    assert_eq!(terminated(&p)["exitCode"], 137);
    assert_eq!(terminated(&p)["reason"], "AgentRestarted");
    assert_eq!(p["status"]["reason"], "AgentRestarted");
    let status = leftover.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_adopts_simulated_pods() {
    let (dir, store) = open();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let started = ringleader_api::time::rfc3339(now - 1.0);
    store.create(running_pod("adopted", &started, json!({ "ringleader.io/duration": "2.5" }))).unwrap();
    store.create(running_pod("endless", &started, json!({}))).unwrap();
    store
        .create(running_pod(
            "overdue",
            &ringleader_api::time::rfc3339(now - 100.0),
            json!({ "ringleader.io/duration": "1" }),
        ))
        .unwrap();
    let agent = start(&store, config(&dir, 1, Runtime::Simulated)).await;
    let p = wait_phase(&store, "overdue", "Succeeded").await;
    assert_eq!(terminated(&p)["exitCode"], 0);
    assert_eq!(get(&store, &pod_key("adopted")).unwrap()["status"]["phase"], "Running");
    let p = wait_phase(&store, "adopted", "Succeeded").await;
    assert_eq!(p["status"]["startTime"], json!(started), "adopted, not restarted");
    assert_eq!(get(&store, &pod_key("endless")).unwrap()["status"]["phase"], "Running");
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_stops_on_shutdown_and_kills_its_processes() {
    let (dir, store) = open();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let cfg = config(&dir, 1, Runtime::Process);
    let s = store.clone();
    let task = tokio::spawn(async move { ringleader_agent::run(s, cfg, rx).await });
    wait_for("registration", Duration::from_secs(10), || get(&store, &node_key("n-0"))).await;
    store.create(pod("p", "n-0", json!(["sleep 30"]))).unwrap();
    let p = wait_phase(&store, "p", "Running").await;
    tx.send(true).unwrap();
    task.await.unwrap().unwrap();
    let pgid = pgid_of(&p);
    let stat = std::fs::read_to_string(format!("/proc/{pgid}/stat")).unwrap_or_default();
    wait_for(&format!("the pod's process to die: {stat}"), Duration::from_secs(5), || {
        (!group_alive(pgid)).then_some(())
    })
    .await;
}
