//! Poison objects written straight into the store (as an older version or a
//! direct store write could leave them; the API server refuses them): a
//! Node with an unknown profile, a Node with no spec, a job whose spec does
//! not parse and a pod whose controller annotation does not. The running
//! manager skips each with a `FailedValidation` Warning Event and a `Valid`
//! condition False, once; a valid job is still scheduled; the loop keeps
//! beating; a repaired Node is modelled again.

use ringleader_manager::{invalid, run, ManagerConfig};
use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;
type TestResult = Result<(), Error>;
/// A `FailedValidation` event: involved object's name, count, message.
type Failed = (String, u64, String);

fn node(name: &str, spec: Option<Value>, heartbeat: f64) -> Value {
    let mut n = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
                       "metadata": {"name": name, "labels": {"gpu-model": "h100"}},
                       "status": {"ready": true, "lastHeartbeat": heartbeat}});
    if let Some(spec) = spec {
        n["spec"] = spec;
    }
    n
}

/// A one-pod PyTorchJob asking for a whole H100 node.
fn job(name: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 1, "queue": "default"}},
                    "pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "Never",
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": "x", "command": ["true"],
                            "resources": {"requests": {"nvidia.com/gpu": 8}, "limits": {"nvidia.com/gpu": 8}}}]}}}}}})
}

fn node_key(name: &str) -> ObjectKey {
    ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name)
}

fn get(store: &Store, key: &ObjectKey) -> Result<Value, Error> {
    Ok(store.get(key)?.ok_or_else(|| format!("{key} is gone"))?.object)
}

/// The object's `Valid` condition.
fn valid(object: &Value) -> Option<Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == invalid::CONDITION).cloned()
}

/// The `FailedValidation` Warning events.
fn failed_validation(store: &Store) -> Result<Vec<Failed>, Error> {
    let (events, _) = store.list(&Selector::kind("v1", "Event"))?;
    Ok(events
        .into_iter()
        .map(|e| e.object)
        .filter(|e| e["reason"] == invalid::REASON && e["type"] == "Warning")
        .map(|e| {
            let name = e["involvedObject"]["name"].as_str().unwrap_or_default().to_string();
            (name, e["count"].as_u64().unwrap_or(0), e["message"].as_str().unwrap_or_default().to_string())
        })
        .collect())
}

/// Polls `f` every 20 ms for up to 20 s.
async fn wait_for(what: &str, mut f: impl FnMut() -> Result<bool, Error>) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f()? {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_objects_are_skipped_and_marked_while_a_valid_job_is_scheduled() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    let now = ringleader_api::time::now();
    store.create(node("good", Some(json!({"profile": "hgx-h100-8", "address": "127.0.9.1"})), now))?;
    store.create(node("bad-profile", Some(json!({"profile": "no-such-profile"})), now))?;
    store.create(node("no-spec", None, now))?;
    let mut broken = job("broken");
    broken["spec"]["pytorchReplicaSpecs"] = json!("oops");
    let broken = store.create(broken)?;
    let valid_job = store.create(job("valid"))?;
    let stray = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "valid-stray", "namespace": "default",
                     "annotations": {"ringleader.io/plan": "{not json"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "valid",
                                          "uid": valid_job.object["metadata"]["uid"], "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Pending"}});
    let stray = store.create(stray)?;

    let beats = Arc::new(AtomicU64::new(0));
    let counter = beats.clone();
    let config = ManagerConfig {
        resync: Duration::from_millis(50),
        heartbeat_timeout: Duration::from_secs(3600),
        heartbeat: Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })),
        ..ManagerConfig::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let manager = tokio::spawn(run(store.clone(), config, stopped));

    // The valid job's pod is bound to the only valid node.
    let pod_key = ObjectKey::new("v1", "Pod", "default", "valid-master-0");
    wait_for("the valid job's pod to be bound", || {
        Ok(store.get(&pod_key)?.is_some_and(|p| p.object["spec"]["nodeName"] == "good"))
    })
    .await?;
    wait_for("every poison object to be marked", || {
        let marked = [node_key("bad-profile"), node_key("no-spec"), broken.key.clone(), stray.key.clone()]
            .iter()
            .map(|k| get(&store, k).map(|o| valid(&o).is_some_and(|c| c["status"] == "False")))
            .collect::<Result<Vec<bool>, _>>()?;
        Ok(marked.iter().all(|m| *m))
    })
    .await?;

    let bad = valid(&get(&store, &node_key("bad-profile"))?).ok_or("no condition")?;
    assert_eq!(bad["reason"], invalid::REASON);
    let message = bad["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("spec.profile: no-such-profile: unknown profile; built-in profiles: "), "{message}");
    let no_spec = valid(&get(&store, &node_key("no-spec"))?).ok_or("no condition")?;
    assert!(no_spec["message"].as_str().is_some_and(|m| m.contains("exactly one of spec.profile")), "{no_spec}");
    let job_condition = valid(&get(&store, &broken.key)?).ok_or("no condition")?;
    assert!(job_condition["message"].as_str().is_some_and(|m| m.contains("pytorchReplicaSpecs")), "{job_condition}");
    let pod_condition = valid(&get(&store, &stray.key)?).ok_or("no condition")?;
    assert!(pod_condition["message"].as_str().is_some_and(|m| m.contains("ringleader.io/plan")), "{pod_condition}");
    // The broken job's uid is not taken for gone: nothing of it is collected,
    // and the valid node keeps no condition it does not need.
    assert!(valid(&get(&store, &node_key("good"))?).is_none());

    let events = failed_validation(&store)?;
    let mut about: Vec<&str> = events.iter().map(|(n, _, _)| n.as_str()).collect();
    about.sort_unstable();
    assert_eq!(about, ["bad-profile", "broken", "no-spec", "valid-stray"], "{events:?}");
    assert!(events.iter().all(|(_, count, _)| *count == 1), "{events:?}");
    assert!(
        events.iter().all(|(_, _, m)| m.ends_with("(the manager skips this object until it is fixed)")),
        "{events:?}"
    );

    // More passes (a node change makes every job dirty) write nothing new about them.
    let settled = get(&store, &node_key("bad-profile"))?["metadata"]["resourceVersion"].clone();
    for i in 0..3 {
        store.patch(&node_key("good"), &json!({"metadata": {"labels": {"touched": i.to_string()}}}), None)?;
        let before = beats.load(Ordering::Relaxed);
        wait_for("a pass after the change", || Ok(beats.load(Ordering::Relaxed) > before + 1)).await?;
    }
    assert_eq!(get(&store, &node_key("bad-profile"))?["metadata"]["resourceVersion"], settled);
    assert!(failed_validation(&store)?.iter().all(|(_, count, _)| *count == 1));
    assert!(!manager.is_finished(), "the manager is still running");

    // A repaired node is modelled again: its condition turns True.
    store.patch(&node_key("bad-profile"), &json!({"spec": {"profile": "hgx-h100-8"}}), None)?;
    wait_for("the repaired node's condition to turn True", || {
        Ok(valid(&get(&store, &node_key("bad-profile"))?).is_some_and(|c| c["status"] == "True"))
    })
    .await?;

    stop.send(true)?;
    manager.await??;
    Ok(())
}

#[tokio::test]
async fn a_manager_starting_over_a_poisoned_store_keeps_running() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    store.create(node("bad-profile", Some(json!({"profile": "no-such-profile"})), ringleader_api::time::now()))?;
    store.create(job("waiting"))?;
    let beats = Arc::new(AtomicU64::new(0));
    let counter = beats.clone();
    let config = ManagerConfig {
        resync: Duration::from_millis(20),
        heartbeat: Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })),
        ..ManagerConfig::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let manager = tokio::spawn(run(store.clone(), config, stopped));
    // Pods are created, found unschedulable (no valid node), and the loop goes on.
    let pod_key = ObjectKey::new("v1", "Pod", "default", "waiting-master-0");
    wait_for("the job's pod to be found unschedulable", || {
        Ok(store.get(&pod_key)?.is_some_and(|p| {
            p.object.pointer("/status/conditions/0/reason").and_then(Value::as_str) == Some("Unschedulable")
        }))
    })
    .await?;
    wait_for("several heartbeats", || Ok(beats.load(Ordering::Relaxed) >= 5)).await?;
    assert!(!manager.is_finished(), "the manager is still running");
    stop.send(true)?;
    manager.await??;
    Ok(())
}
