//! The manager's `v1 Event`s over a real store, pass by pass: what a bound
//! gang, an unschedulable job, a preemption and a failed pod leave behind,
//! that a repeated condition is one event whose count grows slowly rather
//! than a write per pass, and that events expire.

mod common;

use common::{loaded, node, one_pod_job, open, NOW};
use ringleader_manager::{events, pass, run, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).expect("example");
    serde_yaml_ng::from_str(&text).expect("yaml")
}

/// One pass over a cache freshly loaded from the store (a manager restart).
fn run_pass(store: &Store, now: f64) {
    pass(store, &mut loaded(store), &ManagerConfig::default(), &mut HashMap::new(), now).expect("pass");
}

fn list(store: &Store, api: &str, kind: &str) -> Vec<Value> {
    store.list(&Selector::kind(api, kind)).expect("list").0.into_iter().map(|s| s.object).collect()
}

fn events(store: &Store) -> Vec<Value> {
    list(store, "v1", "Event")
}

fn with_reason<'a>(events: &'a [Value], reason: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["reason"] == reason).collect()
}

fn set_pod(store: &Store, name: &str, patch: Value) {
    store.patch(&ObjectKey::new("v1", "Pod", "default", name), &patch, None).expect("patch pod");
}

#[test]
fn a_bound_gang_gets_scheduled_events_naming_its_pods_and_nodes() {
    let (_dir, store) = open();
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(node("h100-2", "127.0.1.6", NOW)).expect("node");
    store.create(yaml("examples/demo/pytorchjob-h100.yaml")).expect("job");
    run_pass(&store, NOW);

    let all = events(&store);
    let pods = list(&store, "v1", "Pod");
    assert_eq!(pods.len(), 2);
    let scheduled = with_reason(&all, "Scheduled");
    assert_eq!(scheduled.len(), 2, "{all:#?}");
    for pod in &pods {
        let name = pod["metadata"]["name"].as_str().expect("name");
        let node = pod["spec"]["nodeName"].as_str().expect("bound");
        let e = scheduled.iter().find(|e| e["involvedObject"]["name"] == name).expect("event of the pod");
        assert_eq!(
            e["involvedObject"],
            json!({"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": "default",
                   "uid": pod["metadata"]["uid"]})
        );
        assert_eq!(e["message"], format!("Successfully assigned default/{name} to {node} (devices 0,1,2,3,4,5,6,7)"));
        assert_eq!((e["type"].as_str(), e["count"].as_u64()), (Some("Normal"), Some(1)));
        assert_eq!(e["source"]["component"], "ringleader-scheduler");
        assert!(e["metadata"]["name"].as_str().expect("name").starts_with(&format!("{name}.")));
        assert_eq!(e["metadata"]["namespace"], "default");
        assert_eq!(e["lastTimestamp"], "2026-11-23T10:00:00Z");
    }

    // The job controller's side: the job was created and made its pods.
    let job = &list(&store, "kubeflow.org/v1", "PyTorchJob")[0];
    let created = with_reason(&all, "SuccessfulCreatePod");
    let mut made: Vec<&str> = created.iter().filter_map(|e| e["message"].as_str()).collect();
    made.sort_unstable();
    assert_eq!(made, ["Created pod: demo-pytorch-master-0", "Created pod: demo-pytorch-worker-0"]);
    for e in created.iter().chain(with_reason(&all, "PyTorchJobCreated").iter()) {
        assert_eq!(e["involvedObject"]["uid"], job["metadata"]["uid"]);
        assert_eq!(e["involvedObject"]["kind"], "PyTorchJob");
        assert_eq!(e["source"]["component"], "ringleader-controller");
    }
    assert_eq!(with_reason(&all, "PyTorchJobCreated").len(), 1);
    assert!(with_reason(&all, "FailedScheduling").is_empty());

    // Running once the agents say so, Succeeded once the pods exit 0.
    for p in &pods {
        set_pod(&store, p["metadata"]["name"].as_str().expect("name"), json!({"status": {"phase": "Running"}}));
    }
    run_pass(&store, NOW + 2.0);
    assert_eq!(with_reason(&events(&store), "PyTorchJobRunning").len(), 1);
    for p in &pods {
        let patch = json!({"status": {"phase": "Succeeded", "containerStatuses": [{"name": "c",
            "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-23T10:00:05Z"}}}]}});
        set_pod(&store, p["metadata"]["name"].as_str().expect("name"), patch);
    }
    run_pass(&store, NOW + 5.0);
    let done = events(&store);
    assert_eq!(with_reason(&done, "PyTorchJobSucceeded").len(), 1, "{done:#?}");
    assert_eq!(with_reason(&done, "Scheduled").len(), 2, "nothing bound twice");
}

/// A gang bigger than [`events::MAX_SIMILAR`] pods: its first pods get a
/// `Scheduled` Event each, the rest one Event on the job, so a 5,000-pod
/// gang's binding is not 5,000 more writes.
#[test]
fn a_big_gang_gets_one_scheduled_event_beyond_its_first_pods() {
    let (_dir, store) = open();
    for i in 0..14 {
        store.create(node(&format!("g{i:02}"), &format!("127.0.1.{}", i + 10), NOW)).expect("node");
    }
    let mut job = one_pod_job("wide", None, "OnFailure");
    job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = json!(14);
    job["spec"]["pytorchReplicaSpecs"]["Worker"] = job["spec"]["pytorchReplicaSpecs"]["Master"].clone();
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = json!(13);
    store.create(job).expect("job");
    run_pass(&store, NOW);
    let pods = list(&store, "v1", "Pod");
    assert_eq!(pods.iter().filter(|p| p["spec"]["nodeName"].is_string()).count(), 14, "all bound");
    let all = events(&store);
    let scheduled = with_reason(&all, "Scheduled");
    let on_pods = scheduled.iter().filter(|e| e["involvedObject"]["kind"] == "Pod").count();
    assert_eq!(on_pods, events::MAX_SIMILAR, "{scheduled:#?}");
    let on_job: Vec<&&Value> = scheduled.iter().filter(|e| e["involvedObject"]["kind"] == "PyTorchJob").collect();
    assert_eq!(on_job.len(), 1, "{scheduled:#?}");
    assert_eq!(
        on_job[0]["message"],
        format!(
            "Successfully assigned 4 more pods of default/wide to 4 nodes (the first {} have an Event each)",
            events::MAX_SIMILAR
        )
    );
}

/// The explanation the scheduler wrote into the PodGroup.
fn podgroup_message(store: &Store, name: &str) -> String {
    let pg = store
        .get(&ObjectKey::new("scheduling.volcano.sh/v1beta1", "PodGroup", "default", name))
        .expect("get")
        .expect("podgroup");
    pg.object["status"]["conditions"][0]["message"].as_str().expect("message").to_string()
}

#[test]
fn an_unschedulable_job_gets_one_failed_scheduling_event_and_the_manager_goes_quiet() {
    let (_dir, store) = open();
    // One 8-GPU node for a gang of two 8-GPU pods.
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(yaml("examples/demo/pytorchjob-h100.yaml")).expect("job");

    // As `run` does: one cache, kept up to date by the manager's own writes.
    let config = ManagerConfig::default();
    let mut cache = loaded(&store);
    let mut timers = HashMap::new();
    let mut versions = Vec::new();
    for i in 0..=20 {
        pass(&store, &mut cache, &config, &mut timers, NOW + f64::from(i) * 0.5).expect("pass");
        versions.push(store.version());
    }
    // The second pass counts the pods the first one created into the job's
    // status; from then on, passes over an unchanged cluster write nothing.
    let settled = versions[1];
    assert!(versions[1..].iter().all(|v| *v == settled), "{versions:?}");
    // A restarted manager (a cache loaded from the store) does not repeat it either.
    run_pass(&store, NOW + 11.0);
    assert_eq!(store.version(), settled);

    let why = podgroup_message(&store, "demo-pytorch");
    let all = events(&store);
    let failed = with_reason(&all, "FailedScheduling");
    assert_eq!(failed.len(), 1, "{all:#?}");
    let e = failed[0];
    assert_eq!(e["message"], why.as_str());
    assert_eq!((e["type"].as_str(), e["count"].as_u64()), (Some("Warning"), Some(1)));
    assert_eq!(e["involvedObject"]["kind"], "PyTorchJob");
    assert_eq!(e["involvedObject"]["name"], "demo-pytorch");
    let unschedulable = with_reason(&all, "Unschedulable");
    assert_eq!(unschedulable.len(), 1);
    assert_eq!(unschedulable[0]["involvedObject"]["kind"], "PodGroup");
    assert_eq!(unschedulable[0]["message"], why.as_str());

    // Still pending a while later: the same events, counted again.
    pass(&store, &mut cache, &config, &mut timers, NOW + events::REPEAT_AFTER + 1.0).expect("pass");
    let later = events(&store);
    let failed = with_reason(&later, "FailedScheduling");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["count"], 2);
    assert_eq!(failed[0]["firstTimestamp"], "2026-11-23T10:00:00Z");
    assert_eq!(failed[0]["lastTimestamp"], "2026-11-23T10:01:01Z");
    assert_eq!(with_reason(&later, "Unschedulable")[0]["count"], 2);
    assert_eq!(later.len(), all.len(), "no new event objects");
    let bumped = store.version();
    pass(&store, &mut cache, &config, &mut timers, NOW + events::REPEAT_AFTER + 2.0).expect("pass");
    assert_eq!(store.version(), bumped);
}

#[test]
fn the_running_manager_reaches_a_quiet_state_with_a_pending_job() {
    let (_dir, store) = open();
    let now = ringleader_api::time::now();
    store.create(node("h100-1", "127.0.1.5", now)).expect("node");
    store.create(yaml("examples/demo/pytorchjob-h100.yaml")).expect("job");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let manager = rt.spawn(run(store.clone(), ManagerConfig::default(), rx));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while with_reason(&events(&store), "FailedScheduling").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no FailedScheduling event");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Several resyncs (500 ms) later, with the manager's own writes and
    // events echoed back through its watch, nothing more is written.
    std::thread::sleep(Duration::from_millis(1500));
    let settled = store.version();
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(store.version(), settled, "{:#?}", events(&store));
    // The status counts the pods the manager itself created after computing it:
    // the echo of its own creates brought one more reconcile.
    let key = ringleader_store::ObjectKey::new("kubeflow.org/v1", "PyTorchJob", "default", "demo-pytorch");
    let job = store.get(&key).expect("read").expect("job");
    let replicas = &job.object["status"]["ringleader"]["replica_statuses"];
    let pending: u64 = ["Master", "Worker"].iter().filter_map(|r| replicas[r]["pending"].as_u64()).sum();
    assert_eq!(pending, 2, "{replicas:#?}");
    tx.send(true).expect("shutdown");
    rt.block_on(manager).expect("join").expect("manager");
}

#[test]
fn a_preempted_pod_gets_an_event_naming_the_preemptor() {
    let (_dir, store) = open();
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    for (name, value) in [("low", 10), ("high", 1000)] {
        store
            .create(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value}))
            .expect("priority class");
    }
    store.create(one_pod_job("low-job", Some("low"), "Never")).expect("job");
    run_pass(&store, NOW);
    set_pod(&store, "low-job-master-0", json!({"status": {"phase": "Running"}}));
    store.create(one_pod_job("high-job", Some("high"), "Never")).expect("job");
    run_pass(&store, NOW + 1.0);
    run_pass(&store, NOW + 2.0);

    let all = events(&store);
    let preempted = with_reason(&all, "Preempted");
    assert_eq!(preempted.len(), 1, "{all:#?}");
    let e = preempted[0];
    assert_eq!(e["involvedObject"]["name"], "low-job-master-0");
    assert_eq!(e["type"], "Warning");
    let message = e["message"].as_str().expect("message");
    assert!(message.contains("default/high-job") && message.contains("h100-1"), "{message}");
}

#[test]
fn a_failed_pod_restarts_the_job_with_events() {
    let (_dir, store) = open();
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(one_pod_job("flaky", None, "OnFailure")).expect("job");
    run_pass(&store, NOW);
    set_pod(&store, "flaky-master-0", json!({"status": {"phase": "Running"}}));
    run_pass(&store, NOW + 1.0);
    let patch = json!({"status": {"phase": "Failed", "containerStatuses": [{"name": "c",
        "state": {"terminated": {"exitCode": 137, "finishedAt": "2026-11-23T10:00:02Z"}}}]}});
    set_pod(&store, "flaky-master-0", patch);
    // The restart waits out its 10 s back-off.
    for i in 2..16 {
        run_pass(&store, NOW + f64::from(i));
    }
    let all = events(&store);
    let reasons: Vec<&str> = all.iter().filter_map(|e| e["reason"].as_str()).collect();
    let restarting = with_reason(&all, "PyTorchJobRestarting");
    assert!(!restarting.is_empty(), "{reasons:?}");
    assert_eq!(restarting[0]["type"], "Warning");
    assert!(
        restarting[0]["message"].as_str().is_some_and(|m| m.contains("flaky-master-0") && m.contains("137")),
        "{:#?}",
        restarting[0]
    );
    let deleted = with_reason(&all, "SuccessfulDeletePod");
    assert!(
        deleted.iter().any(|e| e["message"].as_str().is_some_and(|m| m.starts_with("Deleted pod: flaky-master-0"))),
        "{reasons:?}"
    );
}

#[test]
fn events_expire_after_the_ttl_in_one_sweep() {
    let (_dir, store) = open();
    store.create(node("h100-1", "127.0.1.5", NOW)).expect("node");
    store.create(yaml("examples/demo/pytorchjob-h100.yaml")).expect("job");
    run_pass(&store, NOW);
    // The unschedulable condition is seen again later: its events stay fresh.
    run_pass(&store, NOW + 100.0);
    let before = events(&store);
    assert!(before.len() >= 4, "{before:#?}");
    let ttl = 3600.0;

    let mut cache = loaded(&store);
    assert_eq!(events::expire(&store, &mut cache, ttl, NOW + ttl).expect("expire"), 0);
    let version = store.version();
    let n = events::expire(&store, &mut cache, ttl, NOW + ttl + 1.0).expect("expire");
    let left = events(&store);
    assert_eq!(n, before.len() - left.len());
    assert_eq!(store.version(), version + n as u64, "one delete each, nothing else");
    let mut kept: Vec<&str> = left.iter().filter_map(|e| e["reason"].as_str()).collect();
    kept.sort_unstable();
    assert_eq!(kept, ["FailedScheduling", "Unschedulable"], "the ones last seen at +100 s");
    assert_eq!(events::expire(&store, &mut cache, ttl, NOW + 100.0 + ttl + 1.0).expect("expire"), 2);
    assert!(events(&store).is_empty());
}
