//! Restart back-off and node loss over a real store, with the agent's
//! writes (pod phases, node heartbeats) made by hand: a crashing replica
//! waits 10 s, 20 s, 40 s … before it is replaced, shown as
//! CrashLoopBackOff with a `BackOff` event; a pod whose node stops
//! heartbeating is marked `NodeLost` once the toleration ends, its devices
//! freed, and the job's restart policy decides (rescheduled or failed).

mod common;

use common::{loaded, node, one_pod_job, open, NOW};
use ringleader_manager::{nodes, pass, run, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One pass over a cache freshly loaded from the store: every pass is a
/// manager restart, so whatever the back-off remembers lives in the store.
fn run_pass(store: &Store, config: &ManagerConfig, now: f64) {
    pass(store, &mut loaded(store), config, &mut HashMap::new(), now).expect("pass");
}

fn pod_key(name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", "default", name)
}

fn pod(store: &Store, name: &str) -> Option<Value> {
    store.get(&pod_key(name)).expect("get pod").map(|p| p.object)
}

fn set_pod(store: &Store, name: &str, patch: Value) {
    store.patch(&pod_key(name), &patch, None).expect("patch pod");
}

fn events(store: &Store, reason: &str) -> Vec<Value> {
    let all = store.list(&Selector::kind("v1", "Event")).expect("list").0;
    all.into_iter().map(|s| s.object).filter(|e| e["reason"] == reason).collect()
}

fn job_status(store: &Store, name: &str) -> Value {
    let key = ObjectKey::new("kubeflow.org/v1", "PyTorchJob", "default", name);
    store.get(&key).expect("get job").map(|j| j.object["status"].clone()).unwrap_or(Value::Null)
}

fn uid(pod: &Value) -> String {
    pod["metadata"]["uid"].as_str().unwrap_or_default().to_string()
}

fn live(pod: &Value) -> bool {
    matches!(pod["status"]["phase"].as_str(), Some("Pending" | "Running") | None)
}

#[test]
fn restart_delays_grow_ten_twenty_forty_and_show_as_crash_loop_back_off() {
    let (_dir, store) = open();
    let config = ManagerConfig::default();
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(one_pod_job("flaky", None, "OnFailure")).expect("job");
    run_pass(&store, &config, NOW);
    run_pass(&store, &config, NOW);
    set_pod(&store, "flaky-master-0", json!({"status": {"phase": "Running"}}));

    let mut now = NOW + 1.0;
    let mut waited = Vec::new();
    for (round, shown) in ["10s", "20s", "40s", "1m20s"].iter().enumerate() {
        let failed = pod(&store, "flaky-master-0").expect("pod");
        assert_eq!(failed["metadata"]["annotations"]["ringleader.io/start"], "true", "round {round}: released");
        let failed_uid = uid(&failed);
        set_pod(
            &store,
            "flaky-master-0",
            json!({"status": {"phase": "Failed", "containerStatuses": [{"name": "pytorch", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-23T10:00:02Z"}}}]}}),
        );
        let failed_at = now;
        // A second at a time, two passes each (the second answers the first's
        // echo, as the running manager does), until the slot has a new pod.
        let mut replaced_after = None;
        for step in 0..400u32 {
            now = failed_at + f64::from(step);
            run_pass(&store, &config, now);
            run_pass(&store, &config, now);
            let current = pod(&store, "flaky-master-0");
            match current {
                Some(p) if uid(&p) != failed_uid => {
                    replaced_after = Some(step);
                    break;
                }
                Some(p) => {
                    let state = &p["status"]["containerStatuses"][0];
                    assert_eq!(state["state"]["waiting"]["reason"], "CrashLoopBackOff", "round {round}: {p:#}");
                    let message = format!(
                        "back-off {shown} restarting failed container=pytorch pod=flaky-master-0_default({failed_uid})"
                    );
                    assert_eq!(state["state"]["waiting"]["message"], message.as_str());
                    assert_eq!(state["lastState"]["terminated"]["exitCode"], 1, "the failure stays visible");
                    assert_eq!(state["restartCount"], round + 1, "round {round}: the slot's restarts");
                }
                None => {}
            }
        }
        waited.push(replaced_after.expect("the pod was replaced"));
        let new = pod(&store, "flaky-master-0").expect("replacement");
        assert!(new["spec"]["nodeName"].as_str().is_some(), "the replacement was scheduled");
        now += 1.0;
        set_pod(&store, "flaky-master-0", json!({"status": {"phase": "Running"}}));
        run_pass(&store, &config, now);
        now += 2.0;
    }
    assert_eq!(waited, [10, 20, 40, 80], "each restart of the replica waits twice as long");

    let backoffs = events(&store, "BackOff");
    assert_eq!(backoffs.len(), 4, "one per failed pod: {backoffs:#?}");
    for e in &backoffs {
        assert_eq!(e["type"], "Warning");
        assert_eq!(e["involvedObject"]["kind"], "Pod");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Back-off restarting failed container pytorch in pod flaky-master-0_default("),
            "{message}"
        );
    }
    let status = job_status(&store, "flaky");
    assert_eq!(status["ringleader"]["backoff"]["flaky-master-0"]["delay"], 80, "{status:#}");
    assert_eq!(status["ringleader"]["retries"], 4);
}

#[test]
fn a_never_restarting_job_fails_within_the_toleration_and_frees_its_devices() {
    let (_dir, store) = open();
    let config = ManagerConfig {
        heartbeat_timeout: Duration::from_secs(2),
        node_lost_toleration: Duration::from_secs(5),
        ..ManagerConfig::default()
    };
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(one_pod_job("once", None, "Never")).expect("job");
    run_pass(&store, &config, NOW);
    run_pass(&store, &config, NOW);
    set_pod(&store, "once-master-0", json!({"status": {"phase": "Running"}}));
    run_pass(&store, &config, NOW);

    // The node's last heartbeat was at NOW: NotReady after 2 s, lost after 2 + 5 s.
    let mut cache = loaded(&store);
    assert!(nodes::mark_not_ready(&store, &mut cache, 2.0, NOW + 3.0).expect("node lifecycle"));
    run_pass(&store, &config, NOW + 6.0);
    let p = pod(&store, "once-master-0").expect("pod");
    assert_eq!(p["status"]["phase"], "Running", "within the toleration nothing happens");
    run_pass(&store, &config, NOW + 7.0);
    run_pass(&store, &config, NOW + 7.0);
    let p = pod(&store, "once-master-0").expect("pod");
    assert_eq!((p["status"]["phase"].as_str(), p["status"]["reason"].as_str()), (Some("Failed"), Some("NodeLost")));
    assert_eq!(p["status"]["message"], "Node h100-1 which was running pod once-master-0 is unresponsive");
    let ready = p["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Ready")).cloned();
    assert_eq!(ready.map(|r| r["status"].clone()), Some(json!("False")));
    let status = job_status(&store, "once");
    assert_eq!(status["ringleader"]["phase"], "Failed", "restartPolicy Never: the job fails");
    assert!(
        status["ringleader"]["message"].as_str().is_some_and(|m| m.contains("lost with node h100-1")),
        "{status:#}"
    );
    assert_eq!(events(&store, "NodeLost").len(), 1);
    let pods = store.list(&Selector::kind("v1", "Pod")).expect("list").0;
    assert!(pods.iter().all(|p| !live(&p.object)), "no live pod holds the node's devices");
}

/// Heartbeats for the nodes in `alive`, and Running for pods released on
/// them: what agents would write.
fn agents(store: &Store, alive: &[&str]) {
    let now = ringleader_api::time::now();
    for name in alive {
        let key = ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name);
        let _ = store.patch(&key, &json!({"status": {"ready": true, "lastHeartbeat": now}}), None);
    }
    for p in store.list(&Selector::kind("v1", "Pod")).expect("list").0 {
        let o = &p.object;
        let on = o["spec"]["nodeName"].as_str().unwrap_or_default();
        let released = o["metadata"]["annotations"]["ringleader.io/start"] == "true";
        if released && o["status"]["phase"] == "Pending" && alive.contains(&on) {
            let _ = store.patch(&p.key, &json!({"status": {"phase": "Running"}}), None);
        }
    }
}

#[test]
fn the_running_manager_reschedules_a_pod_off_a_node_that_stopped_heartbeating() {
    let (_dir, store) = open();
    let start = ringleader_api::time::now();
    store.create(node("h100-1", "127.0.1.5", start)).expect("node");
    store.create(node("h100-2", "127.0.1.6", start)).expect("node");
    store.create(one_pod_job("steady", None, "OnFailure")).expect("job");
    let config = ManagerConfig {
        heartbeat_timeout: Duration::from_secs(1),
        node_lost_toleration: Duration::from_secs(2),
        resync: Duration::from_millis(100),
        ..ManagerConfig::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let manager = rt.spawn(run(store.clone(), config, rx));

    let nodes = ["h100-1", "h100-2"];
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = loop {
        agents(&store, &nodes);
        if let Some(p) = pod(&store, "steady-master-0").filter(|p| p["status"]["phase"] == "Running") {
            break p;
        }
        assert!(Instant::now() < deadline, "the job never ran");
        std::thread::sleep(Duration::from_millis(100));
    };
    let dead = first["spec"]["nodeName"].as_str().expect("bound").to_string();
    let alive: Vec<&str> = nodes.iter().copied().filter(|n| *n != dead).collect();

    // The node goes silent: NotReady after 1 s, lost 2 s later (the clock
    // counts in whole seconds); the pod moves to the node that still beats.
    let silent = Instant::now();
    let deadline = silent + Duration::from_secs(15);
    let moved = loop {
        agents(&store, &alive);
        let now = pod(&store, "steady-master-0");
        if let Some(p) = now.filter(|p| uid(p) != uid(&first) && p["status"]["phase"] == "Running") {
            break p;
        }
        assert!(Instant::now() < deadline, "not rescheduled: {:#?}", pod(&store, "steady-master-0"));
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = silent.elapsed();
    assert_eq!(moved["spec"]["nodeName"], alive[0]);
    assert!(took >= Duration::from_secs(2), "not before the toleration: {took:?}");
    assert!(took < Duration::from_secs(8), "soon after it: {took:?}");
    let pods = store.list(&Selector::kind("v1", "Pod")).expect("list").0;
    assert!(
        pods.iter().all(|p| !(live(&p.object) && p.object["spec"]["nodeName"] == dead.as_str())),
        "nothing holds the lost node's devices"
    );
    let lost = events(&store, "NodeLost");
    assert_eq!(lost.len(), 1, "{lost:#?}");
    assert_eq!(lost[0]["involvedObject"]["uid"], uid(&first).as_str());
    assert!(events(&store, "BackOff").is_empty(), "a lost node is not a crash: no back-off");
    let status = job_status(&store, "steady");
    assert_eq!(status["ringleader"]["phase"], "Running", "{status:#}");

    tx.send(true).expect("shutdown");
    rt.block_on(manager).expect("join").expect("manager");
}
