//! What kubectl and client libraries are shown: Table answers for list, get
//! and watch, the core v1 Node view of ringleader.io Nodes, and pod logs with
//! kubelet's options, over a real HTTP server on loopback.

use ringleader_client::Token;
use ringleader_observability::Metrics;
use ringleader_server::{router, ServerState};
use ringleader_store::{Options, Store};
use serde_json::{json, Value};
use std::path::PathBuf;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

struct Server {
    url: String,
    token: String,
    store: Store,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Result<Server, Box<dyn std::error::Error + Send + Sync>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open_with(&dir.path().join("store"), Options::default())?;
        let token = Token::load_or_create(dir.path())?;
        let data = dir.path().join("data");
        let state = ServerState::new(store.clone(), token.clone(), Metrics::new()).with_data_dir(&data);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, router(state)).await });
        Ok(Server { url, token: token.as_str().to_string(), store, data, _dir: dir })
    }

    fn get(&self, path: &str, accept: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().get(format!("{}{path}", self.url)).bearer_auth(&self.token).header("Accept", accept)
    }

    async fn json(&self, path: &str, accept: &str) -> Result<(u16, Value), Box<dyn std::error::Error + Send + Sync>> {
        let r = self.get(path, accept).send().await?;
        let code = r.status().as_u16();
        Ok((code, r.json().await?))
    }

    async fn text(&self, path: &str) -> Result<(u16, String), Box<dyn std::error::Error + Send + Sync>> {
        let r = self.get(path, "*/*").send().await?;
        let code = r.status().as_u16();
        Ok((code, r.text().await?))
    }
}

fn pod(name: &str, phase: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": phase, "podIP": "127.0.1.1", "containerStatuses": [{
            "name": "main", "image": "busybox", "imageID": "process://busybox", "ready": phase == "Running",
            "restartCount": 0,
            "state": if phase == "Running" { json!({"running": {}}) }
                     else { json!({"terminated": {"exitCode": 0, "reason": "Completed"}}) },
        }]},
    })
}

#[tokio::test]
async fn lists_and_gets_answer_tables_when_asked() -> TestResult {
    let s = Server::start().await?;
    s.store.create(pod("a", "Running"))?;
    s.store.create(pod("b", "Succeeded"))?;
    let (code, t) = s.json("/api/v1/namespaces/default/pods", TABLE).await?;
    assert_eq!(code, 200, "{t}");
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    let columns: Vec<&str> =
        t["columnDefinitions"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(columns[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert!(t["metadata"]["resourceVersion"].as_str().is_some_and(|v| !v.is_empty()));
    let rows = t["rows"].as_array().cloned().unwrap_or_default();
    let cells: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["cells"][0].as_str().unwrap_or(""),
                r["cells"][1].as_str().unwrap_or(""),
                r["cells"][2].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(cells, [("a", "1/1", "Running"), ("b", "0/1", "Completed")]);
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(rows[0]["object"]["metadata"]["namespace"], "default");

    // Paging carries over: a page of one names where the next begins.
    let (_, page) = s.json("/api/v1/namespaces/default/pods?limit=1", TABLE).await?;
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(1));
    let next = page["metadata"]["continue"].as_str().unwrap_or_default().to_string();
    assert!(!next.is_empty(), "{}", page["metadata"]);
    let (_, rest) = s.json(&format!("/api/v1/namespaces/default/pods?limit=1&continue={next}"), TABLE).await?;
    assert_eq!(rest["rows"][0]["cells"][0], "b");

    let (_, t) = s.json("/api/v1/namespaces/default/pods?includeObject=Object", TABLE).await?;
    assert_eq!(t["rows"][0]["object"]["kind"], "Pod");
    let (_, t) = s.json("/api/v1/namespaces/default/pods?includeObject=None", TABLE).await?;
    assert!(t["rows"][0].get("object").is_none());
    let (code, e) = s.json("/api/v1/namespaces/default/pods?includeObject=All", TABLE).await?;
    assert_eq!((code, e["kind"].as_str()), (400, Some("Status")));

    let (_, t) = s.json("/api/v1/namespaces/default/pods/b", TABLE).await?;
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(1));
    // Plain JSON is still the default.
    let (_, p) = s.json("/api/v1/namespaces/default/pods/b", "application/json").await?;
    assert_eq!(p["kind"], "Pod");
    Ok(())
}

#[tokio::test]
async fn watch_events_carry_one_row_tables() -> TestResult {
    let s = Server::start().await?;
    s.store.create(pod("a", "Running"))?;
    let text = s.get("/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1", TABLE).send().await?.text().await?;
    let events: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["type"], "ADDED");
    let t = &events[0]["object"];
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["rows"][0]["cells"][0], "a");
    assert_eq!(t["rows"][0]["cells"][2], "Running");
    Ok(())
}

fn node(name: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": "a"}},
        "spec": {"profile": "hgx-h100-8", "address": "127.0.1.1"},
        "status": {"ready": ready, "lastHeartbeat": 1_767_225_600.0, "unhealthyDevices": [1]},
    })
}

#[tokio::test]
async fn core_nodes_are_a_read_only_view() -> TestResult {
    let s = Server::start().await?;
    s.store.create(node("n1", true))?;
    s.store.create(node("n2", false))?;
    let (code, list) = s.json("/api/v1/nodes", "application/json").await?;
    assert_eq!(code, 200, "{list}");
    let typed: k8s_openapi::List<k8s_openapi::api::core::v1::Node> = serde_json::from_value(list.clone())?;
    assert_eq!(typed.items.len(), 2);
    let n1 = &typed.items[0];
    let cap = n1.status.as_ref().and_then(|s| s.capacity.clone()).unwrap_or_default();
    let alloc = n1.status.as_ref().and_then(|s| s.allocatable.clone()).unwrap_or_default();
    let gpus = |m: &std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        m.get("nvidia.com/gpu").map(|q| q.0.clone())
    };
    assert_eq!((gpus(&cap), gpus(&alloc)), (Some("8".to_string()), Some("7".to_string())));

    let (_, one) = s.json("/api/v1/nodes/n2", "application/json").await?;
    assert_eq!(one["kind"], "Node");
    assert_eq!(one["status"]["conditions"][0]["status"], "Unknown");
    let (code, e) = s.json("/api/v1/nodes/n9", "application/json").await?;
    assert_eq!((code, e["message"].as_str()), (404, Some("nodes \"n9\" not found")));

    let (_, t) = s.json("/api/v1/nodes", TABLE).await?;
    assert_eq!(t["columnDefinitions"][1]["name"], "Status");
    assert_eq!(t["rows"][0]["cells"][1], "Ready");
    assert_eq!(t["rows"][1]["cells"][1], "Unknown");

    let (_, sel) = s.json("/api/v1/nodes?labelSelector=kubernetes.io/hostname%3Dn2", "application/json").await?;
    assert_eq!(sel["items"].as_array().map(Vec::len), Some(1));

    let w = s.get("/api/v1/nodes?watch=true&timeoutSeconds=1", "application/json").send().await?.text().await?;
    let first: Value = serde_json::from_str(w.lines().next().unwrap_or("{}"))?;
    assert_eq!((first["object"]["apiVersion"].as_str(), first["object"]["kind"].as_str()), (Some("v1"), Some("Node")));

    let r = reqwest::Client::new().delete(format!("{}/api/v1/nodes/n1", s.url)).bearer_auth(&s.token).send().await?;
    assert_eq!(r.status().as_u16(), 405);
    let e: Value = r.json().await?;
    assert!(e["message"].as_str().is_some_and(|m| m.contains("ringleader.io/v1alpha1")), "{e}");
    Ok(())
}

#[tokio::test]
async fn logs_are_read_from_the_sandbox_with_kubelets_options() -> TestResult {
    let s = Server::start().await?;
    let mut p = pod("a", "Running");
    // The annotation is user-writable: it must not pick the file.
    p["metadata"]["annotations"] = json!({"ringleader.io/log-path": "/etc/passwd"});
    s.store.create(p)?;
    let sandbox = s.data.join("nodes/n1/pods/default_a");
    std::fs::create_dir_all(&sandbox)?;
    std::fs::write(sandbox.join("log"), "one\ntwo\nthree\n")?;
    std::fs::write(sandbox.join("log.times"), "2026-01-01T00:00:01Z\n2026-01-01T00:00:02.5Z\n2026-01-01T00:00:03Z\n")?;
    let base = "/api/v1/namespaces/default/pods/a/log";
    assert_eq!(s.text(base).await?, (200, "one\ntwo\nthree\n".to_string()));
    assert_eq!(s.text(&format!("{base}?tailLines=1&timestamps=true")).await?.1, "2026-01-01T00:00:03Z three\n");
    assert_eq!(s.text(&format!("{base}?sinceTime=2026-01-01T00:00:02Z")).await?.1, "two\nthree\n");
    assert_eq!(s.text(&format!("{base}?limitBytes=5")).await?.1, "one\nt");
    assert_eq!(s.text(&format!("{base}?container=main")).await?.1, "one\ntwo\nthree\n");

    let (code, body) = s.text(&format!("{base}?container=x")).await?;
    assert_eq!(code, 400);
    assert!(body.contains("container x is not valid for pod a"), "{body}");
    let (code, body) = s.text(&format!("{base}?previous=true")).await?;
    assert_eq!(code, 400);
    assert!(body.contains(r#"previous terminated container \"main\" in pod \"a\" not found"#), "{body}");
    let (code, _) = s.text(&format!("{base}?sinceSeconds=0")).await?;
    assert_eq!(code, 400);

    // In restart back-off the failed run's log is served, `previous` too.
    let backoff = json!({"status": {"containerStatuses": [{
        "name": "main", "ready": false, "restartCount": 1, "image": "", "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container=main"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
    }]}});
    let key = ringleader_store::ObjectKey::new("v1", "Pod", "default", "a");
    s.store.patch(&key, &backoff, None)?;
    assert_eq!(s.text(base).await?, (200, "one\ntwo\nthree\n".to_string()));
    assert_eq!(s.text(&format!("{base}?previous=true&tailLines=1")).await?, (200, "three\n".to_string()));
    let waiting = json!({"status": {"containerStatuses": [{
        "name": "main", "ready": false, "restartCount": 0, "image": "", "imageID": "",
        "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {},
    }]}});
    s.store.patch(&key, &waiting, None)?;
    let (code, body) = s.text(base).await?;
    assert_eq!(code, 400);
    assert!(body.contains("is waiting to start: ContainerCreating"), "{body}");
    let done = json!({"status": {"containerStatuses": [{
        "name": "main", "ready": false, "restartCount": 0, "image": "", "imageID": "",
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}, "lastState": {},
    }]}});
    s.store.patch(&key, &done, None)?;

    // Follow of a finished pod sends what is there and ends.
    s.store.patch(
        &ringleader_store::ObjectKey::new("v1", "Pod", "default", "a"),
        &json!({"status": {"phase": "Succeeded"}}),
        None,
    )?;
    assert_eq!(
        s.text(&format!("{base}?follow=true&timestamps=true&tailLines=2")).await?.1,
        "2026-01-01T00:00:02.5Z two\n2026-01-01T00:00:03Z three\n"
    );
    Ok(())
}
