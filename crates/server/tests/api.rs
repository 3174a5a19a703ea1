//! The HTTP API end to end: auth, the object verbs, body formats, Status
//! errors, validation, bulk apply, graceful pod deletion.

mod common;

use common::{pod, TestResult, TestServer};
use reqwest::Method;
use ringleader_client::ClientError;
use ringleader_registry::resources::{self, NODES, PODS};
use ringleader_server::ApplyAction;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_is_required_except_for_probes() -> TestResult {
    let s = TestServer::start().await?;
    let http = reqwest::Client::new();
    let healthz = http.get(format!("{}/healthz", s.url)).send().await?;
    assert_eq!(healthz.status(), 200);
    assert_eq!(http.get(format!("{}/readyz", s.url)).send().await?.status(), 200);

    let none = http.get(format!("{}/api/v1/pods", s.url)).send().await?;
    assert_eq!(none.status(), 401);
    let status: Value = none.json().await?;
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Unauthorized");
    assert_eq!(status["code"], 401);

    let wrong = http.get(format!("{}/api/v1/pods", s.url)).bearer_auth("0123").send().await?;
    assert_eq!(wrong.status(), 401);
    let wrong_metrics = http.get(format!("{}/metrics", s.url)).bearer_auth(format!("{}x", s.token)).send().await?;
    assert_eq!(wrong_metrics.status(), 401);

    assert_eq!(s.raw(Method::GET, "/api/v1/pods").send().await?.status(), 200);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.dir.path().join("token"))?.permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_list_update_patch_delete() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    let created = c.create(PODS, "team", &pod("a", json!({"app": "x", "tier": "web"}))).await?;
    assert_eq!(created["metadata"]["namespace"], "team");
    let rv1 = created["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
    c.create(PODS, "team", &pod("b", json!({"app": "x", "tier": "db"}))).await?;
    c.create(PODS, "other", &pod("c", json!({"app": "y"}))).await?;

    let again = c.create(PODS, "team", &pod("a", json!({}))).await;
    assert!(matches!(&again, Err(e) if e.reason() == Some("AlreadyExists") && e.code() == Some(409)), "{again:?}");

    let got = c.get(PODS, "team", "a").await?;
    assert_eq!(got["metadata"]["labels"]["tier"], "web");
    let missing = c.get(PODS, "team", "zzz").await;
    assert!(matches!(&missing, Err(e) if e.is_not_found()), "{missing:?}");

    let names = |l: &ringleader_client::ObjectList| -> Vec<String> {
        l.items.iter().filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string)).collect()
    };
    assert_eq!(names(&c.list(PODS, Some("team"), None).await?), ["a", "b"]);
    assert_eq!(names(&c.list(PODS, None, None).await?), ["c", "a", "b"]);
    assert_eq!(names(&c.list(PODS, None, Some("app=x,tier!=web")).await?), ["b"]);
    assert_eq!(names(&c.list(PODS, None, Some("tier=db")).await?), ["b"]);
    assert_eq!(names(&c.list(PODS, None, Some("app")).await?).len(), 3);
    assert!(names(&c.list(PODS, None, Some("app=z")).await?).is_empty());
    assert_eq!(names(&c.list(PODS, None, Some("app in (x,y),tier notin (web)")).await?), ["c", "b"]);
    let bad_selector = c.list(PODS, None, Some("app in x")).await;
    assert!(matches!(&bad_selector, Err(e) if e.code() == Some(400)), "{bad_selector:?}");

    // A stale resourceVersion conflicts; the current one updates.
    let mut stale = got.clone();
    c.patch_merge(PODS, "team", "a", &json!({"metadata": {"labels": {"touched": "yes"}}})).await?;
    stale["metadata"]["labels"]["tier"] = json!("edge");
    let conflict = c.update(PODS, "team", &stale).await;
    assert!(matches!(&conflict, Err(e) if e.reason() == Some("Conflict") && e.code() == Some(409)), "{conflict:?}");
    let mut fresh = c.get(PODS, "team", "a").await?;
    assert_eq!(fresh["metadata"]["labels"]["touched"], "yes");
    assert_ne!(fresh["metadata"]["resourceVersion"].as_str(), Some(rv1.as_str()));
    fresh["metadata"]["labels"]["tier"] = json!("edge");
    let updated = c.update(PODS, "team", &fresh).await?;
    assert_eq!(updated["metadata"]["labels"]["tier"], "edge");

    // Status is written through /status; a write of the main resource
    // leaves it as stored, whatever its body says.
    c.patch_merge_status(PODS, "team", "b", &json!({"status": {"phase": "Running"}})).await?;
    let ignored = c.patch_merge(PODS, "team", "b", &json!({"status": {"phase": "Failed"}})).await?;
    assert_eq!(ignored["status"]["phase"], "Running");
    let mut b = c.get(PODS, "team", "b").await?;
    if let Some(m) = b.as_object_mut() {
        m.remove("status");
    }
    b["metadata"]["labels"]["tier"] = json!("cache");
    let replaced = c.update(PODS, "team", &b).await?;
    assert_eq!(
        (replaced["status"]["phase"].as_str(), replaced["metadata"]["labels"]["tier"].as_str()),
        (Some("Running"), Some("cache"))
    );

    // Merge patch with a stale version as precondition.
    let stale_patch = json!({"metadata": {"resourceVersion": rv1, "labels": {"x": "1"}}});
    let r = c.patch_merge(PODS, "team", "a", &stale_patch).await;
    assert!(matches!(&r, Err(e) if e.reason() == Some("Conflict")), "{r:?}");
    let patched = c.patch_merge(PODS, "team", "a", &json!({"metadata": {"labels": {"tier": null}}})).await?;
    assert!(patched["metadata"]["labels"].get("tier").is_none());

    // An unstarted pod is removed at once.
    c.delete(PODS, "team", "a", None).await?;
    assert!(matches!(c.get(PODS, "team", "a").await, Err(e) if e.is_not_found()));
    let gone = c.delete(PODS, "team", "a", None).await;
    assert!(matches!(&gone, Err(e) if e.is_not_found()), "{gone:?}");

    // Cluster-scoped objects live at /apis/<group>/<version>/<plural>/<name>.
    let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
        "metadata": {"name": "n1", "namespace": "ignored"}, "spec": {"profile": "hgx-a100-8"}});
    let n = c.create(NODES, "", &node).await?;
    assert!(n["metadata"].get("namespace").is_none());
    let raw = s.raw(Method::GET, "/apis/ringleader.io/v1alpha1/nodes/n1").send().await?;
    assert_eq!(raw.status(), 200);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_bodies_and_yaml_output() -> TestResult {
    let s = TestServer::start().await?;
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n";
    let r = s
        .raw(Method::POST, "/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/yaml")
        .body(body)
        .send()
        .await?;
    assert_eq!(r.status(), 201);
    let out = s.raw(Method::GET, "/api/v1/namespaces/default/configmaps/cfg?output=yaml").send().await?;
    assert_eq!(out.status(), 200);
    let text = out.text().await?;
    assert!(text.contains("kind: ConfigMap") && text.contains("k: v"), "{text}");
    let accept = s
        .raw(Method::GET, "/api/v1/namespaces/default/configmaps/cfg")
        .header("Accept", "application/yaml")
        .send()
        .await?
        .text()
        .await?;
    assert!(accept.starts_with("apiVersion: v1"), "{accept}");

    // PUT with YAML, and the path's namespace must agree with the body's.
    let put = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\ndata:\n  k: w\n";
    let r = s
        .raw(Method::PUT, "/api/v1/namespaces/default/configmaps/cfg")
        .header("Content-Type", "application/yaml")
        .body(put)
        .send()
        .await?;
    assert_eq!(r.status(), 200);
    let mismatch = put.replace("namespace: default", "namespace: prod");
    let r = s
        .raw(Method::PUT, "/api/v1/namespaces/default/configmaps/cfg")
        .header("Content-Type", "application/yaml")
        .body(mismatch)
        .send()
        .await?;
    assert_eq!(r.status(), 400);
    let status: Value = r.json().await?;
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.namespace");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_are_400_and_the_server_keeps_serving() -> TestResult {
    let s = TestServer::start().await?;
    let cases: &[(&str, &str)] = &[
        ("application/json", "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n \"metadata\": {\"name\": }"),
        ("application/yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n"),
        ("application/json", "[1, 2, 3]"),
        ("application/json", ""),
        ("application/yaml", "\u{0}\u{1}binary: {"),
        ("application/json", "{\"metadata\": {\"name\": 7}}"),
        ("application/json", "{\"metadata\": \"nope\"}"),
    ];
    for (ct, body) in cases {
        let r = s
            .raw(Method::POST, "/api/v1/namespaces/default/pods")
            .header("Content-Type", *ct)
            .body(body.to_string())
            .send()
            .await?;
        assert_eq!(r.status(), 400, "{ct} {body:?}");
        let status: Value = r.json().await?;
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "BadRequest");
        assert!(status["details"]["causes"][0]["field"].is_string(), "{status}");
    }
    let r = s
        .raw(Method::POST, "/api/v1/namespaces/default/pods")
        .header("Content-Type", "application/json")
        .body("{\"metadata\": {\"name\": }}")
        .send()
        .await?;
    let status: Value = r.json().await?;
    assert!(status["message"].as_str().unwrap_or_default().contains("line 1"), "{status}");

    let bad_patch = s
        .raw(Method::PATCH, "/api/v1/namespaces/default/pods/x")
        .header("Content-Type", "application/merge-patch+json")
        .body("{oops")
        .send()
        .await?;
    assert_eq!(bad_patch.status(), 400);
    let bad_apply = s
        .raw(Method::POST, "/apis/ringleader.io/v1alpha1/apply")
        .header("Content-Type", "application/yaml")
        .body("a: 1\n---\nb: [1, 2\n")
        .send()
        .await?;
    assert_eq!(bad_apply.status(), 400);
    let status: Value = bad_apply.json().await?;
    assert!(status["message"].as_str().unwrap_or_default().contains("document 1"), "{status}");

    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let deep_yaml = format!("a: {}{}", "[".repeat(20_000), "]".repeat(20_000));
    for (ct, body) in [("application/json", deep.as_str()), ("application/yaml", deep_yaml.as_str())] {
        let r =
            s.raw(Method::POST, "/api/v1/namespaces/default/pods").header("Content-Type", ct).body(body.to_string());
        assert_eq!(r.send().await?.status(), 400, "{ct}");
    }
    let r = s.raw(Method::POST, "/apis/ringleader.io/v1alpha1/apply").body(deep_yaml.clone()).send().await?;
    assert_eq!(r.status(), 400);

    for path in ["/api/v1/widgets", "/apis/x/y/z", "/nope", "/api/v1/pods/p"] {
        let r = s.raw(Method::GET, path).send().await?;
        assert_eq!(r.status(), 404, "{path}");
        let status: Value = r.json().await?;
        assert_eq!(status["reason"], "NotFound");
    }
    let r = s.raw(Method::DELETE, "/api/v1/namespaces/default/pods").send().await?;
    assert_eq!(r.status(), 405);

    // Still serving.
    s.client.create(PODS, "default", &pod("after", json!({}))).await?;
    assert_eq!(s.client.get(PODS, "default", "after").await?["metadata"]["name"], "after");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_jobs_are_422_with_field_paths() -> TestResult {
    let s = TestServer::start().await?;
    let ascend = resources::find("acjob").ok_or("no acjob")?;
    let text = include_str!("fixtures/invalid-acjob.yaml");
    let r = s
        .raw(Method::POST, "/apis/mindxdl.gitee.com/v1/namespaces/default/ascendjobs")
        .header("Content-Type", "application/yaml")
        .body(text)
        .send()
        .await?;
    assert_eq!(r.status(), 422);
    let status: Value = r.json().await?;
    assert_eq!(status["reason"], "Invalid");
    let fields: Vec<&str> =
        status["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str()).collect();
    assert!(fields.contains(&"metadata.labels.framework"), "{status}");
    assert!(s.client.list(ascend, None, None).await?.items.is_empty());

    // The same document made valid is accepted; a patch that breaks it is not.
    let good: Value = serde_yaml_ng::from_str(&text.replace("framework: caffe", "framework: pytorch"))?;
    s.client.create(ascend, "default", &good).await?;
    let r =
        s.client.patch_merge(ascend, "default", "bad", &json!({"metadata": {"labels": {"framework": "caffe"}}})).await;
    assert!(matches!(&r, Err(ClientError::Status { code: 422, .. })), "{r:?}");
    // Status writes of the manager are not held to the spec rules.
    let r = s.client.patch_merge_status(ascend, "default", "bad", &json!({"status": {"phase": "Running"}})).await?;
    assert_eq!(r["status"]["phase"], "Running");
    Ok(())
}

const GOOD: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 1
---
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
  labels:
    app: hello
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["echo", "hi"]
"#;

const BAD: &str = r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: bad
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.4.0
    Worker:
      replicas: -1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.4.0
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_apply_is_all_or_nothing() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    let batch_job = resources::find("jobs.batch").ok_or("no batch job")?;
    let queues = resources::find("queues").ok_or("no queues")?;

    let mixed = format!("{GOOD}\n---\n{BAD}");
    let r = c.apply_documents_from("job.yaml", &mixed).await;
    let Err(ClientError::Status { code, message, status, .. }) = r else { return Err(format!("{r:?}").into()) };
    assert_eq!(code, 422);
    assert!(
        message.contains("job.yaml[2] PyTorchJob/default/bad: spec.pytorchReplicaSpecs.Worker.replicas"),
        "{message}"
    );
    assert!(message.contains("nothing was applied"), "{message}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.pytorchReplicaSpecs.Worker.replicas");
    assert!(c.list(queues, None, None).await?.items.is_empty());
    assert!(c.list(batch_job, None, None).await?.items.is_empty());

    let first = c.apply_documents(GOOD).await?;
    let summary: Vec<(String, String, ApplyAction)> =
        first.iter().map(|r| (r.kind.clone(), r.namespace.clone(), r.action)).collect();
    assert_eq!(
        summary,
        [("Queue".into(), String::new(), ApplyAction::Created), ("Job".into(), "default".into(), ApplyAction::Created)]
    );
    // Status written by the manager survives a re-apply.
    c.patch_merge_status(batch_job, "default", "hello", &json!({"status": {"active": 1}})).await?;
    let again = c.apply_documents(GOOD).await?;
    assert!(again.iter().all(|r| r.action == ApplyAction::Unchanged), "{again:?}");
    let changed = c.apply_documents(&GOOD.replace("weight: 1", "weight: 3")).await?;
    assert_eq!(changed[0].action, ApplyAction::Configured);
    assert_eq!(changed[1].action, ApplyAction::Unchanged);
    assert_eq!(c.get(queues, "", "research").await?["spec"]["weight"], 3);
    assert_eq!(c.get(batch_job, "default", "hello").await?["status"]["active"], 1);

    let unknown = c.apply_documents("apiVersion: v9\nkind: Widget\nmetadata:\n  name: w\n").await;
    assert!(matches!(&unknown, Err(e) if e.code() == Some(422)), "{unknown:?}");
    let empty = c.apply_documents("---\n").await;
    assert!(matches!(&empty, Err(e) if e.code() == Some(400)), "{empty:?}");

    // `apply -n`: documents without a namespace go there; another namespace is an error.
    let applied = c.apply_documents_with("job.yaml", Some("team-new"), GOOD).await?;
    assert_eq!((applied[1].namespace.as_str(), applied[1].action), ("team-new", ApplyAction::Created));
    assert_eq!(applied[0].namespace, "");
    // The namespace did not exist: the apply made it, and says so last.
    assert_eq!(
        (applied[2].kind.as_str(), applied[2].name.as_str(), applied[2].action),
        ("Namespace", "team-new", ApplyAction::Created)
    );
    let elsewhere = GOOD.replace("name: hello\n", "name: hello\n  namespace: prod\n");
    let r = c.apply_documents_with("job.yaml", Some("team-new"), &elsewhere).await;
    assert!(matches!(&r, Err(e) if e.code() == Some(422) && e.to_string().contains("metadata.namespace")), "{r:?}");

    // Single-object server-side apply creates, then replaces.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
    let cms = resources::find("cm").ok_or("no cm")?;
    c.apply(cms, "default", &cm).await?;
    let cm2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "2"}});
    assert_eq!(c.apply(cms, "default", &cm2).await?["data"]["a"], "2");
    Ok(())
}

/// The bulk apply (`ringleader apply`, the console) refuses unknown fields
/// unless told otherwise, as kubectl's `--validate=strict` default does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_apply_refuses_unknown_fields_unless_told_otherwise() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    let batch_job = resources::find("jobs.batch").ok_or("no batch job")?;
    let typo = GOOD.replace("command:", "comand:");
    assert_ne!(typo, GOOD, "GOOD has a command to misspell");
    let r = c.apply_documents_from("job.yaml", &typo).await;
    let Err(ClientError::Status { code, message, status, .. }) = r else { return Err(format!("{r:?}").into()) };
    assert_eq!(code, 422);
    assert!(message.contains("job.yaml[1] Job/default/hello: spec.template.spec.containers[0].comand"), "{message}");
    assert!(message.contains("unknown field"), "{message}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.template.spec.containers[0].comand");
    assert!(c.list(batch_job, None, None).await?.items.is_empty(), "nothing applied");

    let (applied, warnings) = c.apply_documents_validated("job.yaml", None, &typo, Some("Warn")).await?;
    assert_eq!(applied.len(), 2);
    assert_eq!(warnings, ["job.yaml[1] Job/default/hello: unknown field \"spec.template.spec.containers[0].comand\""]);
    let (_, quiet) = c.apply_documents_validated("job.yaml", None, &typo, Some("Ignore")).await?;
    assert!(quiet.is_empty(), "{quiet:?}");
    let bad = c.apply_documents_validated("job.yaml", None, GOOD, Some("Loose")).await;
    assert!(matches!(&bad, Err(e) if e.code() == Some(400) && e.to_string().contains("fieldValidation")), "{bad:?}");
    Ok(())
}

/// Every example the project ships applies under the strict default: none
/// uses a field the served schemas lack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_has_only_known_fields() -> TestResult {
    let s = TestServer::start().await?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("platform"), root.join("demo")] {
        for e in std::fs::read_dir(&dir)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "yaml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    let mut unknown = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f)?;
        let source = f.display().to_string();
        // Other refusals (an example may need nodes or queues of its own)
        // are not this test's business; an unknown field is named in any.
        if let Err(e) = s.client.apply_documents_from(&source, &text).await {
            if e.to_string().contains("unknown field") {
                unknown.push(e.to_string());
            }
        }
    }
    assert!(unknown.is_empty(), "{unknown:#?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_pods_are_marked_for_the_agent() -> TestResult {
    let s = TestServer::start().await?;
    let c = &s.client;
    let node = |name: &str, ready: bool| {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": name},
            "spec": {"profile": "hgx-a100-8"}, "status": {"ready": ready}})
    };
    c.create(NODES, "", &node("up", true)).await?;
    c.create(NODES, "", &node("down", false)).await?;
    let started = |name: &str, node: &str, grace: Option<u64>| {
        let mut p = pod(name, json!({}));
        p["metadata"]["annotations"] = json!({"ringleader.io/start": "true"});
        p["spec"]["nodeName"] = json!(node);
        if let Some(g) = grace {
            p["spec"]["terminationGracePeriodSeconds"] = json!(g);
        }
        p
    };
    // Bound pods are the scheduler's to create.
    let scheduler = s.scheduler()?;
    scheduler.create(PODS, "default", &started("p1", "up", Some(7))).await?;
    scheduler.create(PODS, "default", &started("p2", "up", None)).await?;
    scheduler.create(PODS, "default", &started("p3", "down", None)).await?;
    scheduler.create(PODS, "default", &started("p4", "up", None)).await?;

    let marked = c.delete(PODS, "default", "p1", None).await?;
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 7);
    let ts = marked["metadata"]["deletionTimestamp"].as_str().unwrap_or_default().to_string();
    assert!(ts.ends_with('Z') && ts.len() == 20, "{ts}");
    assert!(c.get(PODS, "default", "p1").await.is_ok());
    // Deleting again may shorten the grace period, never lengthen it.
    let again = c.delete(PODS, "default", "p1", Some(2)).await?;
    assert_eq!(again["metadata"]["deletionGracePeriodSeconds"], 2);
    assert_eq!(again["metadata"]["deletionTimestamp"], json!(ts));

    let p2 = c.delete(PODS, "default", "p2", None).await?;
    assert_eq!(p2["metadata"]["deletionGracePeriodSeconds"], 30);
    // On a NotReady node nothing would finish it: removed at once.
    c.delete(PODS, "default", "p3", Some(0)).await?;
    assert!(matches!(c.get(PODS, "default", "p3").await, Err(e) if e.is_not_found()));
    // Grace 0 on a live node: the agent kills it at once, still through the mark.
    let p4 = c.delete(PODS, "default", "p4", Some(0)).await?;
    assert_eq!(p4["metadata"]["deletionGracePeriodSeconds"], 0);
    let uid = p4["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    // The agent's final delete names the pod it stopped: a stale version or another uid is a conflict.
    let final_delete = |body: serde_json::Value| {
        s.raw(reqwest::Method::DELETE, "/api/v1/namespaces/default/pods/p4?gracePeriodSeconds=0").json(&body).send()
    };
    let stale = final_delete(json!({"preconditions": {"resourceVersion": "1"}})).await?;
    assert_eq!(stale.status().as_u16(), 409);
    let other = final_delete(json!({"preconditions": {"uid": "someone-else"}})).await?;
    assert_eq!(other.status().as_u16(), 409);
    assert!(c.get(PODS, "default", "p4").await.is_ok(), "still there after refused deletes");
    let done =
        final_delete(json!({"preconditions": {"uid": uid, "resourceVersion": p4["metadata"]["resourceVersion"]}}))
            .await?;
    assert_eq!(done.status().as_u16(), 200);
    assert!(matches!(c.get(PODS, "default", "p4").await, Err(e) if e.is_not_found()));
    Ok(())
}
