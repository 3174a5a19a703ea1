//! Watch, logs, metrics, OpenAPI and shutdown with open streams.

mod common;

use common::{pod, TestResult, TestServer};
use futures_util::StreamExt;
use reqwest::Method;
use ringleader_client::WatchEvent;
use ringleader_registry::resources::{NODES, PODS};
use ringleader_store::Options;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

async fn next_event<S>(stream: &mut S) -> Result<WatchEvent, Box<dyn std::error::Error + Send + Sync>>
where
    S: futures_util::Stream<Item = Result<WatchEvent, ringleader_client::ClientError>> + Unpin,
{
    match tokio::time::timeout(WAIT, stream.next()).await? {
        Some(event) => Ok(event?),
        None => Err("watch ended".into()),
    }
}

fn summary(e: &WatchEvent) -> (String, String) {
    (e.event_type.clone(), e.object["metadata"]["name"].as_str().unwrap_or_default().to_string())
}

/// Where the agent keeps the log of pod `default/runner` on node `n1` (the
/// server reads only a log path of that shape).
fn sandbox_log(dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let sandbox = dir.join("data/nodes/n1/pods/default_runner");
    std::fs::create_dir_all(&sandbox)?;
    Ok(sandbox.join("log"))
}

/// A pod the agent started on `n1`.
fn running_pod(name: &str) -> serde_json::Value {
    let mut p = pod(name, json!({}));
    p["spec"]["nodeName"] = json!("n1");
    p["status"] = json!({"phase": "Running", "containerStatuses": [{"name": "main", "image": "busybox",
        "imageID": "process://busybox", "ready": true, "restartCount": 0, "state": {"running": {}}}]});
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_changes_and_resumes() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    c.create(PODS, "default", &pod("old", json!({}))).await?;
    let list = c.list(PODS, Some("default"), None).await?;

    // No version: the current objects first, as ADDED.
    let mut from_now = c.watch(PODS, Some("default"), None).await?;
    assert_eq!(summary(&next_event(&mut from_now).await?), ("ADDED".into(), "old".into()));

    let mut w = c.watch(PODS, Some("default"), Some(list.resource_version)).await?;
    c.create(PODS, "default", &pod("p", json!({}))).await?;
    c.create(PODS, "elsewhere", &pod("q", json!({}))).await?;
    c.patch_merge_status(PODS, "default", "p", &json!({"status": {"phase": "Running"}})).await?;
    c.delete(PODS, "default", "p", None).await?;

    let added = next_event(&mut w).await?;
    assert_eq!(summary(&added), ("ADDED".into(), "p".into()));
    let modified = next_event(&mut w).await?;
    assert_eq!(summary(&modified), ("MODIFIED".into(), "p".into()));
    assert_eq!(modified.object["status"]["phase"], "Running");
    let deleted = next_event(&mut w).await?;
    assert_eq!(summary(&deleted), ("DELETED".into(), "p".into()));
    let (a, m, d) = (added.resource_version(), modified.resource_version(), deleted.resource_version());
    assert!(a < m && m < d, "{a:?} {m:?} {d:?}");
    assert_eq!(summary(&next_event(&mut from_now).await?), ("ADDED".into(), "p".into()));

    // Resuming from the ADDED event's version replays what came after it.
    let mut resumed = c.watch(PODS, Some("default"), added.resource_version()).await?;
    assert_eq!(summary(&next_event(&mut resumed).await?), ("MODIFIED".into(), "p".into()));
    assert_eq!(summary(&next_event(&mut resumed).await?), ("DELETED".into(), "p".into()));

    // All namespaces, with a label selector, over raw HTTP.
    let r = s
        .raw(
            Method::GET,
            &format!("/api/v1/pods?watch=true&resourceVersion={}&labelSelector=app%3Dz", list.resource_version),
        )
        .send()
        .await?;
    assert_eq!(r.status(), 200);
    c.create(PODS, "ns2", &pod("z", json!({"app": "z"}))).await?;
    let mut body = r.bytes_stream();
    let mut text = Vec::new();
    while !text.ends_with(b"\n") {
        match tokio::time::timeout(WAIT, body.next()).await? {
            Some(chunk) => text.extend_from_slice(&chunk?),
            None => break,
        }
    }
    let line: Value = serde_json::from_slice(&text)?;
    assert_eq!(line["type"], "ADDED");
    assert_eq!(line["object"]["metadata"]["name"], "z");
    assert_eq!(line["object"]["metadata"]["namespace"], "ns2");

    // timeoutSeconds ends a watch.
    let r = s.raw(Method::GET, "/apis/ringleader.io/v1alpha1/nodes?watch=1&timeoutSeconds=1").send().await?;
    let all = tokio::time::timeout(WAIT, r.bytes()).await??;
    assert!(all.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_version_is_410() -> TestResult {
    let s = TestServer::start_with(Options { history: 5 }).await?;
    for i in 0..40 {
        s.client.create(PODS, "default", &pod(&format!("p{i}"), json!({}))).await?;
    }
    // As kube-apiserver: the stream opens and its only event is an ERROR
    // with the 410 Expired Status; nothing of the history is replayed.
    let r = s.raw(Method::GET, "/api/v1/pods?watch=true&resourceVersion=1").send().await?;
    assert_eq!(r.status().as_u16(), 200);
    let body = tokio::time::timeout(WAIT, r.text()).await??;
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 1, "{body}");
    let event: Value = serde_json::from_str(lines[0])?;
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["kind"], "Status");
    assert_eq!((event["object"]["code"].as_u64(), event["object"]["reason"].as_str()), (Some(410), Some("Expired")));
    let mut w = s.client.watch(PODS, None, Some(1)).await?;
    let first = tokio::time::timeout(WAIT, w.next()).await?;
    let Some(Err(e)) = first else { return Err(format!("watch from 1 should have expired: {first:?}").into()) };
    assert_eq!(e.code(), Some(410));
    assert_eq!(e.reason(), Some("Expired"));
    // A version still kept is replayed as before.
    let list = s.client.list(PODS, None, None).await?;
    let mut w = s.client.watch(PODS, None, Some(list.resource_version)).await?;
    s.client.create(PODS, "default", &pod("after", json!({}))).await?;
    let next = tokio::time::timeout(WAIT, w.next()).await?;
    let Some(Ok(event)) = next else { return Err(format!("no event after the list: {next:?}").into()) };
    assert_eq!(event.object["metadata"]["name"], "after");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_whole_tail_and_follow() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    let log = sandbox_log(s.dir.path())?;
    std::fs::write(&log, "one\ntwo\n")?;
    let mut p = running_pod("runner");
    p["metadata"]["annotations"] = json!({"ringleader.io/log-path": log.display().to_string()});
    s.scheduler()?.create(PODS, "default", &p).await?;
    c.create(PODS, "default", &pod("unstarted", json!({}))).await?;

    let collect = |stream: Vec<bytes::Bytes>| stream.concat();
    let all: Vec<_> = c.logs("default", "runner", false, None).await?.collect::<Vec<_>>().await;
    let all: Result<Vec<_>, _> = all.into_iter().collect();
    assert_eq!(collect(all?), b"one\ntwo\n");
    let tail: Result<Vec<_>, _> =
        c.logs("default", "runner", false, Some(1)).await?.collect::<Vec<_>>().await.into_iter().collect();
    assert_eq!(collect(tail?), b"two\n");

    let no_log = c.logs("default", "unstarted", false, None).await;
    assert!(matches!(&no_log, Err(e) if e.code() == Some(400)), "{:?}", no_log.err());
    let missing = c.logs("default", "nobody", false, None).await;
    assert!(matches!(&missing, Err(e) if e.is_not_found()), "{:?}", missing.err());

    let mut follow = c.logs("default", "runner", true, Some(1)).await?;
    let mut got = Vec::new();
    let first = tokio::time::timeout(WAIT, follow.next()).await?.ok_or("ended early")??;
    got.extend_from_slice(&first);
    assert_eq!(got, b"two\n");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log)?;
        f.write_all(b"three\n")?;
    }
    let mut reached = false;
    while !reached {
        let chunk = tokio::time::timeout(WAIT, follow.next()).await?.ok_or("ended early")??;
        got.extend_from_slice(&chunk);
        reached = got.ends_with(b"three\n");
    }
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log)?;
        f.write_all(b"last words\n")?;
    }
    c.patch_merge_status(PODS, "default", "runner", &json!({"status": {"phase": "Succeeded"}})).await?;
    // The stream drains what was written and then ends.
    while let Some(chunk) = tokio::time::timeout(WAIT, follow.next()).await? {
        got.extend_from_slice(&chunk?);
    }
    assert_eq!(got, b"two\nthree\nlast words\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_openapi() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    s.state.metrics().observe_scheduling_latency(0.02);
    s.state.metrics().observe_scheduling_latency(3.0);
    c.create(
        NODES,
        "",
        &json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"profile": "hgx-a100-8"}}),
    )
    .await?;
    let mut bound = pod("bound", json!({"volcano.sh/queue-name": "research"}));
    bound["metadata"]["annotations"] = json!({"ringleader.io/devices": "0,1,2"});
    bound["spec"]["nodeName"] = json!("n1");
    bound["status"]["phase"] = json!("Running");
    s.scheduler()?.create(PODS, "team", &bound).await?;
    c.create(PODS, "team", &pod("waiting", json!({}))).await?;

    let want = [
        "# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket{le=\"0.025\"} 1",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket{le=\"+Inf\"} 2",
        "scheduler_pod_scheduling_sli_duration_seconds_count 2",
        "scheduler_pending_pods{queue=\"default\",reason=\"Waiting\"} 1.0",
        "ringleader_pods{namespace=\"team\",phase=\"Running\"} 1.0",
        "ringleader_device_allocated{node=\"n1\",device=\"2\",resource=\"nvidia.com/gpu\",model=\"A100-SXM4\"} 1.0",
        "ringleader_device_allocated{node=\"n1\",device=\"3\",resource=\"nvidia.com/gpu\",model=\"A100-SXM4\"} 0.0",
        "volcano_queue_allocated_scalar_resources{queue_name=\"research\",resource=\"nvidia.com/gpu\"} 3.0",
    ];
    // The gauges follow the store's watch: a bounded wait for them to catch up.
    let mut text = String::new();
    for _ in 0..100 {
        text = c.metrics_text().await?;
        if want.iter().all(|line| text.lines().any(|l| l == *line)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for line in want {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }

    let index = c.openapi("").await?;
    assert!(index["paths"]["api/v1"]["serverRelativeURL"].is_string(), "{index}");
    let core = c.openapi("api/v1").await?;
    assert_eq!(core["openapi"], "3.0.0");
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"].is_object());
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"].is_object());
    let volcano = c.openapi("apis/scheduling.volcano.sh/v1beta1").await?;
    assert!(volcano["paths"]["/apis/scheduling.volcano.sh/v1beta1/queues/{name}"]["get"].is_object());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_streams() -> TestResult {
    let mut s = TestServer::start().await?;
    let log = sandbox_log(s.dir.path())?;
    std::fs::write(&log, "x\n")?;
    let mut p = running_pod("runner");
    p["metadata"]["annotations"] = json!({"ringleader.io/log-path": log.display().to_string()});
    s.scheduler()?.create(PODS, "default", &p).await?;
    let mut w = s.client.watch(PODS, None, None).await?;
    let mut l = s.client.logs("default", "runner", true, None).await?;
    assert!(tokio::time::timeout(WAIT, w.next()).await?.is_some());
    assert!(tokio::time::timeout(WAIT, l.next()).await?.is_some());
    s.stop();
    let handle = s.handle.take().ok_or("no handle")?;
    tokio::time::timeout(WAIT, handle).await???;
    while let Some(item) = tokio::time::timeout(WAIT, w.next()).await? {
        let _ = item;
    }
    Ok(())
}
