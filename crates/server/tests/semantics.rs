//! API semantics stock clients rely on, over a real server and store:
//! dryRun, limit/continue paging with selectors and writes between pages,
//! Kubernetes' Status wording, 413, JSON / strategic merge / merge patches,
//! and watches (selector leave/enter, bookmarks, timeoutSeconds).
//!
//! The server here is the crate's router on plain HTTP over loopback with a
//! short bookmark period (tests/plain); transport is other tests' concern.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Long enough for any single step on a loaded CI machine; only a bound.
const WAIT: Duration = Duration::from_secs(20);

mod plain;

struct Server(plain::PlainServer);

impl Server {
    async fn start() -> Result<Server, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Server(plain::PlainServer::start().await?))
    }

    fn req(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.0.http.request(method, format!("{}{path}", self.0.url)).bearer_auth(&self.0.token)
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Value)>,
    ) -> Result<(StatusCode, Value), reqwest::Error> {
        let mut r = self.req(method, path);
        if let Some((ct, b)) = body {
            r = r.header("content-type", ct).body(b.to_string());
        }
        let resp = r.send().await?;
        let code = resp.status();
        let value = resp.json::<Value>().await.unwrap_or(Value::Null);
        Ok((code, value))
    }

    async fn create_pod(
        &self,
        ns: &str,
        name: &str,
        labels: Value,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let (code, v) = self
            .call(Method::POST, &format!("/api/v1/namespaces/{ns}/pods"), Some(("application/json", pod(name, labels))))
            .await?;
        if code != StatusCode::CREATED {
            return Err(format!("create {ns}/{name}: {code} {v}").into());
        }
        Ok(v)
    }
}

fn pod(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [
            {"name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]}
        ]},
    })
}

fn pytorchjob(name: &str, workers: i64) -> Value {
    let replica = |n: i64| json!({"replicas": n, "template": {"spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.4.0"}]}}});
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    })
}

fn rv(v: &Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_validates_answers_and_writes_nothing() -> TestResult {
    let s = Server::start().await?;
    let (_, list) = s.call(Method::GET, "/api/v1/pods", None).await?;
    let before = rv(&list);
    let (code, v) = s
        .call(Method::POST, "/api/v1/namespaces/d/pods?dryRun=All", Some(("application/json", pod("p", json!({})))))
        .await?;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    assert_eq!(v["metadata"]["namespace"], "d");
    assert_eq!(v["metadata"]["uid"].as_str().map(str::len), Some(36), "{v}");
    assert!(v["metadata"].get("resourceVersion").is_none(), "{v}");
    let (code, _) = s.call(Method::GET, "/api/v1/namespaces/d/pods/p", None).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);

    let real = s.create_pod("d", "p", json!({"a": "1"})).await?;
    let (_, list) = s.call(Method::GET, "/api/v1/pods", None).await?;
    let after_create = rv(&list);
    assert_ne!(after_create, before);
    // PATCH, PUT and DELETE as dry runs answer the result and change nothing.
    let (code, v) = s
        .call(
            Method::PATCH,
            "/api/v1/namespaces/d/pods/p?dryRun=All",
            Some(("application/merge-patch+json", json!({"metadata": {"labels": {"a": "2"}}}))),
        )
        .await?;
    assert_eq!((code, v["metadata"]["labels"]["a"].as_str()), (StatusCode::OK, Some("2")), "{v}");
    assert_eq!(rv(&v), rv(&real));
    let mut replaced = real.clone();
    replaced["metadata"]["labels"]["a"] = json!("3");
    let (code, v) =
        s.call(Method::PUT, "/api/v1/namespaces/d/pods/p?dryRun=All", Some(("application/json", replaced))).await?;
    assert_eq!((code, v["metadata"]["labels"]["a"].as_str()), (StatusCode::OK, Some("3")), "{v}");
    let (code, v) = s.call(Method::DELETE, "/api/v1/namespaces/d/pods/p?dryRun=All", None).await?;
    assert_eq!((code, v["metadata"]["name"].as_str()), (StatusCode::OK, Some("p")), "{v}");
    let (code, v) = s
        .call(
            Method::DELETE,
            "/api/v1/namespaces/d/pods/p",
            Some(("application/json", json!({"kind": "DeleteOptions", "dryRun": ["All"]}))),
        )
        .await?;
    assert_eq!(code, StatusCode::OK, "{v}");
    let (_, now) = s.call(Method::GET, "/api/v1/namespaces/d/pods/p", None).await?;
    assert_eq!(now, real, "dry runs changed the stored pod");
    let (_, list) = s.call(Method::GET, "/api/v1/pods", None).await?;
    assert_eq!(rv(&list), after_create, "a dry run took a resource version");

    // Validation still runs; an unknown dryRun value is refused as kube-apiserver does.
    let (code, v) = s
        .call(
            Method::POST,
            "/apis/kubeflow.org/v1/namespaces/d/pytorchjobs?dryRun=All",
            Some(("application/json", pytorchjob("bad", -1))),
        )
        .await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    let (code, v) = s
        .call(Method::POST, "/api/v1/namespaces/d/pods?dryRun=Some", Some(("application/json", pod("q", json!({})))))
        .await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        v["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\""
    );
    let (code, _) = s.call(Method::GET, "/api/v1/namespaces/d/pods/q", None).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    Ok(())
}

async fn page_through(
    s: &Server,
    path: &str,
    limit: usize,
) -> Result<(Vec<String>, usize), Box<dyn std::error::Error + Send + Sync>> {
    let mut names = Vec::new();
    let mut token = String::new();
    let sep = if path.contains('?') { '&' } else { '?' };
    for pages in 1..=100 {
        let (code, v) = s.call(Method::GET, &format!("{path}{sep}limit={limit}&continue={token}"), None).await?;
        if code != StatusCode::OK {
            return Err(format!("{code} {v}").into());
        }
        let items = v["items"].as_array().ok_or("no items")?;
        assert!(items.len() <= limit);
        names.extend(items.iter().map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap_or(""),
                i["metadata"]["name"].as_str().unwrap_or("")
            )
        }));
        match v["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_string(),
            _ => return Ok((names, pages)),
        }
    }
    Err("more than 100 pages".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_and_continue_page_with_selectors() -> TestResult {
    let s = Server::start().await?;
    for ns in ["x", "y"] {
        for i in 0..12 {
            s.create_pod(
                ns,
                &format!("p{i:02}"),
                json!({"tier": if i % 3 == 0 { "db" } else { "web" }, "n": i.to_string()}),
            )
            .await?;
        }
    }
    let (code, first) = s.call(Method::GET, "/api/v1/pods?limit=5", None).await?;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(first["items"].as_array().map(Vec::len), Some(5));
    assert_eq!(first["metadata"]["remainingItemCount"], 19);
    assert!(first["metadata"]["continue"].as_str().is_some_and(|t| !t.is_empty()));

    let (all, pages) = page_through(&s, "/api/v1/pods", 5).await?;
    assert_eq!((all.len(), pages), (24, 5));
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, all, "pages are in key order without repeats");

    let (db, _) = page_through(&s, "/api/v1/pods?labelSelector=tier%20in%20(db)", 3).await?;
    assert_eq!(db, ["x/p00", "x/p03", "x/p06", "x/p09", "y/p00", "y/p03", "y/p06", "y/p09"]);
    let (web_y, _) =
        page_through(&s, "/api/v1/namespaces/y/pods?labelSelector=tier!%3Ddb,n%20notin%20(1,2)", 4).await?;
    assert_eq!(web_y.len(), 6, "{web_y:?}");

    // Writes between pages: behind the cursor unseen, ahead of it seen; the
    // list version stays the first page's.
    let (_, p1) = s.call(Method::GET, "/api/v1/namespaces/x/pods?limit=6", None).await?;
    let token = p1["metadata"]["continue"].as_str().ok_or("no continue")?.to_string();
    s.create_pod("x", "a-early", json!({})).await?;
    s.create_pod("x", "z-late", json!({})).await?;
    let (code, p2) =
        s.call(Method::GET, &format!("/api/v1/namespaces/x/pods?limit=100&continue={token}"), None).await?;
    assert_eq!(code, StatusCode::OK, "{p2}");
    let names: Vec<&str> =
        p2["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["p06", "p07", "p08", "p09", "p10", "p11", "z-late"]);
    assert_eq!(rv(&p2), rv(&p1));
    assert!(p2["metadata"].get("continue").is_none());

    // A token is checked; a token of another resource is refused.
    let (code, v) = s.call(Method::GET, "/api/v1/pods?limit=5&continue=garbage!", None).await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::BAD_REQUEST, Some("BadRequest")), "{v}");
    let (code, _) = s.call(Method::GET, &format!("/api/v1/configmaps?limit=5&continue={token}"), None).await?;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, v) = s.call(Method::GET, "/api/v1/pods?labelSelector=tier%20in%20db", None).await?;
    assert_eq!((code, v["message"].as_str()), (StatusCode::BAD_REQUEST, Some("found 'db', expected: '('")), "{v}");
    let (code, _) = s.call(Method::GET, "/api/v1/pods?resourceVersion=999999&resourceVersionMatch=Exact", None).await?;
    assert_eq!(code, StatusCode::GONE);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_errors_are_worded_as_kube_apiserver() -> TestResult {
    let s = Server::start().await?;
    let (code, v) = s.call(Method::GET, "/api/v1/namespaces/d/pods/x", None).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(v["message"], "pods \"x\" not found");
    assert_eq!(v["details"], json!({"name": "x", "kind": "pods"}));
    let (_, v) = s.call(Method::GET, "/apis/kubeflow.org/v1/namespaces/d/pytorchjobs/j", None).await?;
    assert_eq!(v["message"], "pytorchjobs.kubeflow.org \"j\" not found");

    let created = s.create_pod("d", "x", json!({})).await?;
    let (code, v) =
        s.call(Method::POST, "/api/v1/namespaces/d/pods", Some(("application/json", pod("x", json!({}))))).await?;
    assert_eq!(
        (code, v["reason"].as_str(), v["message"].as_str()),
        (StatusCode::CONFLICT, Some("AlreadyExists"), Some("pods \"x\" already exists"))
    );

    let mut stale = created.clone();
    s.call(
        Method::PATCH,
        "/api/v1/namespaces/d/pods/x",
        Some(("application/merge-patch+json", json!({"metadata": {"labels": {"v": "2"}}}))),
    )
    .await?;
    stale["metadata"]["labels"] = json!({"v": "stale"});
    let (code, v) = s.call(Method::PUT, "/api/v1/namespaces/d/pods/x", Some(("application/json", stale))).await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::CONFLICT, Some("Conflict")));
    assert_eq!(
        v["message"],
        "Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let (code, v) = s
        .call(
            Method::POST,
            "/apis/kubeflow.org/v1/namespaces/d/pytorchjobs",
            Some(("application/json", pytorchjob("bad", -1))),
        )
        .await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "PyTorchJob.kubeflow.org \"bad\" is invalid: spec.pytorchReplicaSpecs.Worker.replicas: Invalid value: -1"
        ),
        "{message}"
    );
    assert_eq!(v["details"]["causes"][0]["field"], "spec.pytorchReplicaSpecs.Worker.replicas");

    let (code, v) = s.call(Method::POST, "/api/v1/namespaces/d/pods/x", Some(("application/json", json!({})))).await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::METHOD_NOT_ALLOWED, Some("MethodNotAllowed")));

    let big = vec![b' '; (64 << 20) + 1];
    let resp = s
        .req(Method::POST, "/api/v1/namespaces/d/pods")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await?;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = resp.json().await?;
    assert_eq!(v["reason"], "RequestEntityTooLarge");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_strategic_and_merge_patches() -> TestResult {
    let s = Server::start().await?;
    s.create_pod("d", "p", json!({"a": "1"})).await?;
    let path = "/api/v1/namespaces/d/pods/p";
    let (code, v) = s
        .call(
            Method::PATCH,
            path,
            Some((
                "application/json-patch+json",
                json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:2"},
                       {"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
            )),
        )
        .await?;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["spec"]["containers"][0]["image"], "busybox:2");
    assert_eq!(v["metadata"]["labels"], json!({"a": "1", "b": "2"}));

    let (code, v) = s
        .call(
            Method::PATCH,
            path,
            Some((
                "application/strategic-merge-patch+json",
                json!({"spec": {"containers": [
                    {"name": "main", "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 80, "name": "http"}]},
                    {"name": "side", "image": "nginx"}
                ]}}),
            )),
        )
        .await?;
    assert_eq!(code, StatusCode::OK, "{v}");
    let containers = &v["spec"]["containers"];
    assert_eq!(containers[0]["image"], "busybox:2");
    assert_eq!(containers[0]["env"], json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]));
    assert_eq!(containers[0]["ports"], json!([{"containerPort": 80, "name": "http"}]));
    assert_eq!(containers[1], json!({"name": "side", "image": "nginx"}));
    let (_, v) = s
        .call(
            Method::PATCH,
            path,
            Some((
                "application/strategic-merge-patch+json",
                json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}),
            )),
        )
        .await?;
    assert_eq!(v["spec"]["containers"].as_array().map(Vec::len), Some(1));

    // A failed test op, a stale version and unknown types are refused.
    let (code, _) = s
        .call(
            Method::PATCH,
            path,
            Some(("application/json-patch+json", json!([{"op": "test", "path": "/metadata/labels/a", "value": "9"}]))),
        )
        .await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    let (code, v) = s
        .call(
            Method::PATCH,
            path,
            Some(("application/merge-patch+json", json!({"metadata": {"resourceVersion": "1", "labels": {"c": "3"}}}))),
        )
        .await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::CONFLICT, Some("Conflict")), "{v}");
    let (code, v) = s.call(Method::PATCH, path, Some(("text/plain", json!({})))).await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("UnsupportedMediaType")));

    // Custom resources: no strategic merge patch (415), merge and JSON patches validated.
    let jobs = "/apis/kubeflow.org/v1/namespaces/d/pytorchjobs";
    let (code, _) = s.call(Method::POST, jobs, Some(("application/json", pytorchjob("j", 2)))).await?;
    assert_eq!(code, StatusCode::CREATED);
    let (code, v) = s
        .call(
            Method::PATCH,
            &format!("{jobs}/j"),
            Some(("application/strategic-merge-patch+json", json!({"metadata": {"labels": {"x": "1"}}}))),
        )
        .await?;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(!v["message"].as_str().unwrap_or_default().contains("strategic"), "{v}");
    let (code, v) = s
        .call(
            Method::PATCH,
            &format!("{jobs}/j"),
            Some((
                "application/merge-patch+json",
                json!({"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4}}}}),
            )),
        )
        .await?;
    assert_eq!((code, v["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"].as_i64()), (StatusCode::OK, Some(4)));
    let (code, v) = s
        .call(
            Method::PATCH,
            &format!("{jobs}/j"),
            Some((
                "application/json-patch+json",
                json!([{"op": "replace", "path": "/spec/pytorchReplicaSpecs/Worker/replicas", "value": -3}]),
            )),
        )
        .await?;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    Ok(())
}

/// Reads watch lines until `n` have come (bounded by [`WAIT`] each).
async fn lines(
    resp: &mut reqwest::Response,
    buf: &mut Vec<u8>,
    n: usize,
) -> Result<Vec<Value>, Box<dyn std::error::Error + Send + Sync>> {
    let mut out = Vec::new();
    while out.len() < n {
        if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line)?);
            continue;
        }
        match tokio::time::timeout(WAIT, resp.chunk()).await?? {
            Some(chunk) => buf.extend_from_slice(&chunk),
            None => return Err(format!("stream ended after {} lines: {out:?}", out.len()).into()),
        }
    }
    Ok(out)
}

fn summary(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sends_deleted_when_an_object_leaves_the_selector() -> TestResult {
    let s = Server::start().await?;
    s.create_pod("d", "in", json!({"app": "web"})).await?;
    s.create_pod("d", "out", json!({"app": "db"})).await?;
    let mut w =
        s.req(Method::GET, "/api/v1/namespaces/d/pods?watch=true&labelSelector=app%20in%20(web)").send().await?;
    let mut buf = Vec::new();
    assert_eq!(summary(&lines(&mut w, &mut buf, 1).await?), [("ADDED".into(), "in".into())]);
    let patch = |name: &str, app: &str| {
        let (name, app) = (name.to_string(), app.to_string());
        let s = &s;
        async move {
            s.call(
                Method::PATCH,
                &format!("/api/v1/namespaces/d/pods/{name}"),
                Some(("application/merge-patch+json", json!({"metadata": {"labels": {"app": app}}}))),
            )
            .await
        }
    };
    patch("in", "db").await?; // leaves: DELETED with its new state
    patch("out", "web").await?; // enters: ADDED
    patch("out", "web2").await?; // leaves again
    patch("in", "db2").await?; // was out, stays out: nothing
    s.call(Method::DELETE, "/api/v1/namespaces/d/pods/in", None).await?; // out of the selection: nothing
    s.create_pod("d", "new", json!({"app": "web"})).await?;
    let got = lines(&mut w, &mut buf, 4).await?;
    assert_eq!(
        summary(&got),
        [
            ("DELETED".into(), "in".into()),
            ("ADDED".into(), "out".into()),
            ("DELETED".into(), "out".into()),
            ("ADDED".into(), "new".into())
        ]
    );
    assert_eq!(got[0]["object"]["metadata"]["labels"]["app"], "db", "DELETED carries the new state");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_bookmarks_initial_events_end_and_timeout() -> TestResult {
    let s = Server::start().await?;
    s.create_pod("d", "a", json!({})).await?;
    s.create_pod("d", "b", json!({})).await?;
    let mut w = s
        .req(
            Method::GET,
            "/api/v1/namespaces/d/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5",
        )
        .send()
        .await?;
    let mut buf = Vec::new();
    let first = lines(&mut w, &mut buf, 3).await?;
    assert_eq!(summary(&first)[..2], [("ADDED".into(), "a".into()), ("ADDED".into(), "b".into())]);
    assert_eq!(first[2]["type"], "BOOKMARK");
    assert_eq!(first[2]["object"]["kind"], "Pod");
    assert_eq!(first[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    let list_rv: u64 = first[2]["object"]["metadata"]["resourceVersion"].as_str().unwrap_or("").parse()?;
    let created = s.create_pod("d", "c", json!({})).await?;
    let c_rv: u64 = rv(&created).parse()?;
    assert!(c_rv > list_rv);
    // Periodic bookmarks (period 300 ms): any before the change are behind
    // it, the first after it is at or past it.
    let mut seen_c = false;
    let mut after_c = None;
    for _ in 0..50 {
        let e = lines(&mut w, &mut buf, 1).await?.remove(0);
        let version: u64 = e["object"]["metadata"]["resourceVersion"].as_str().unwrap_or("").parse()?;
        match (e["type"].as_str(), seen_c) {
            (Some("ADDED"), false) => {
                assert_eq!(e["object"]["metadata"]["name"], "c");
                seen_c = true;
            }
            (Some("BOOKMARK"), false) => assert!(version < c_rv, "bookmark {version} sent before event {c_rv}"),
            (Some("BOOKMARK"), true) => {
                assert!(e["object"].get("spec").is_none());
                after_c = Some(version);
                break;
            }
            other => return Err(format!("unexpected {other:?}: {e}").into()),
        }
    }
    assert!(after_c.is_some_and(|v| v >= c_rv), "{after_c:?}");
    // timeoutSeconds=5 ends the stream.
    let rest = tokio::time::timeout(WAIT, async {
        let mut n = 0;
        while let Ok(Some(_)) = w.chunk().await {
            n += 1;
            if n > 1000 {
                break;
            }
        }
        n
    })
    .await?;
    assert!(rest <= 1000, "the stream did not end");

    // Without allowWatchBookmarks no bookmark is sent.
    let mut plain = s.req(Method::GET, "/api/v1/namespaces/d/pods?watch=true&timeoutSeconds=1").send().await?;
    let mut buf = Vec::new();
    let initial = lines(&mut plain, &mut buf, 3).await?;
    assert!(initial.iter().all(|e| e["type"] == "ADDED"));
    let tail = tokio::time::timeout(WAIT, plain.bytes()).await??;
    assert!(buf.is_empty() && tail.is_empty(), "unexpected lines after the initial ones: {tail:?}");
    Ok(())
}
