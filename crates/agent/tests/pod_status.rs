//! What a pod and its node read as once the agent ran it: the status a
//! Kubernetes client decodes (k8s-openapi's `Pod`), and the log's line
//! stamps. A real store, a real process; waits poll with a deadline.

use k8s_openapi::api::core::v1::Pod;
use ringleader_agent::{AgentConfig, Runtime, VirtualNode};
use ringleader_store::{ObjectKey, Store};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", "ns", name)
}

async fn wait_for(store: &Store, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(p)) = store.get(&key(name)) {
            if f(&p.object) {
                return Ok(p.object);
            }
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out waiting for {name} to be {what}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn condition(p: &Pod, kind: &str) -> Option<(String, Option<String>)> {
    let c = p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)?;
    Some((c.status.clone(), c.reason.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pod_decodes_as_a_kubernetes_pod_with_complete_status() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let mut cfg = AgentConfig::new(dir.path().join("data"), VirtualNode::numbered("n", "hgx-h100-8", 1, 1))
        .with_runtime(Runtime::Process)
        .with_heartbeat_interval(Duration::from_millis(100));
    cfg.flush_interval = Duration::from_millis(10);
    let agent = ringleader_agent::start(store.clone(), cfg).await?;
    store.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": {
            "ringleader.io/start": "true", "ringleader.io/scheduled-at": "2026-01-01T00:00:00Z"}},
        "spec": {"nodeName": "n-0", "containers": [{"name": "main", "image": "train:1",
            "command": ["/bin/sh", "-c", "echo first; sleep 0.3; echo second"]}]},
        "status": {"phase": "Pending"},
    }))?;

    let running = wait_for(&store, "p", "Running", |p| p["status"]["phase"] == "Running").await?;
    let pod: Pod = serde_json::from_value(running)?;
    let status = pod.status.clone().unwrap_or_default();
    let c = status.container_statuses.clone().unwrap_or_default();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].image.as_str(), c[0].image_id.as_str()), ("train:1", "process://train:1"));
    assert!(c[0].ready && c[0].started == Some(true) && c[0].restart_count == 0);
    assert!(c[0].state.as_ref().and_then(|s| s.running.as_ref()).is_some());
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
    assert_eq!(condition(&pod, "PodScheduled").map(|c| c.0).as_deref(), Some("True"));
    assert_eq!(condition(&pod, "Initialized").map(|c| c.0).as_deref(), Some("True"));
    assert_eq!(condition(&pod, "ContainersReady").map(|c| c.0).as_deref(), Some("True"));
    assert_eq!(condition(&pod, "Ready").map(|c| c.0).as_deref(), Some("True"));

    let done = wait_for(&store, "p", "Succeeded", |p| p["status"]["phase"] == "Succeeded").await?;
    let pod: Pod = serde_json::from_value(done.clone())?;
    let c = pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
    let term = c[0].state.as_ref().and_then(|s| s.terminated.clone()).unwrap_or_default();
    assert_eq!((term.exit_code, term.reason.as_deref()), (0, Some("Completed")));
    assert!(!c[0].ready);
    assert_eq!(condition(&pod, "Ready"), Some(("False".into(), Some("PodCompleted".into()))));

    // Every log line has its stamp beside the log.
    let sandbox = dir.path().join("data/nodes/n-0/pods/ns_p");
    assert_eq!(std::fs::read_to_string(sandbox.join("log"))?, "first\nsecond\n");
    let stamps: Vec<String> = std::fs::read_to_string(sandbox.join("log.times"))?.lines().map(str::to_string).collect();
    assert_eq!(stamps.len(), 2);
    let times: Vec<f64> = stamps.iter().filter_map(|s| ringleader_api::time::parse_rfc3339(s)).collect();
    assert_eq!(times.len(), 2);
    // The second line was written after a sleep: its stamp is the later one.
    assert!(times[1] > times[0], "{stamps:?}");

    // The node carries what the core v1 Node view shows.
    let node = store.get(&ObjectKey::new("ringleader.io/v1alpha1", "Node", "", "n-0"))?.map(|s| s.object);
    let info = node.map(|n| n["status"]["nodeInfo"].clone()).unwrap_or_default();
    assert!(info["kubeletVersion"].as_str().is_some_and(|v| v.starts_with('v')), "{info}");
    assert!(info["containerRuntimeVersion"].as_str().is_some_and(|v| v.starts_with("process://")), "{info}");
    agent.stop().await?;
    Ok(())
}
