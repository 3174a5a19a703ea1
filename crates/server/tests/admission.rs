//! Validation on write for every kind, over a real server and store: each
//! poison object of issue 12 is refused with the status code and reason
//! kube-apiserver would answer, a message naming the field, the value and the
//! rule, and nothing stored (dry runs and patches are checked the same way);
//! duplicate keys follow `fieldValidation`; a YAML alias bomb is refused
//! before it is expanded.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

mod plain;

struct Server(plain::PlainServer);

/// One answer: code, headers' warnings and the body.
struct Answer {
    code: StatusCode,
    warnings: Vec<String>,
    body: Value,
}

impl Server {
    async fn start() -> Result<Server, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Server(plain::PlainServer::start().await?))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Result<Answer, reqwest::Error> {
        let resp = self
            .0
            .http
            .request(method, format!("{}{path}", self.0.url))
            .bearer_auth(&self.0.token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await?;
        let code = resp.status();
        let warnings =
            resp.headers().get_all("warning").iter().map(|v| v.to_str().unwrap_or_default().to_string()).collect();
        let body = resp.json::<Value>().await.unwrap_or(Value::Null);
        Ok(Answer { code, warnings, body })
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Answer, reqwest::Error> {
        self.send(Method::POST, path, "application/json", body.to_string()).await
    }

    async fn items(&self, path: &str) -> Result<Vec<Value>, reqwest::Error> {
        let a = self.send(Method::GET, path, "application/json", "").await?;
        Ok(a.body["items"].as_array().cloned().unwrap_or_default())
    }
}

/// A refusal: `code`, `reason`, and a cause on `field` whose message has
/// every one of `words`.
fn refused(a: &Answer, code: StatusCode, reason: &str, field: &str, words: &[&str]) {
    assert_eq!((a.code, a.body["reason"].as_str()), (code, Some(reason)), "{}", a.body);
    let causes = a.body["details"]["causes"].as_array().cloned().unwrap_or_default();
    let cause = causes.iter().find(|c| c["field"] == field);
    let Some(cause) = cause else { panic!("no cause on {field}: {}", a.body) };
    let message = cause["message"].as_str().unwrap_or_default();
    let whole = a.body["message"].as_str().unwrap_or_default();
    for w in words {
        assert!(message.contains(w) && whole.contains(w), "{w:?} missing from {message:?} / {whole:?}");
    }
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";
const NODES: &str = "/apis/ringleader.io/v1alpha1/nodes";
const QUEUES: &str = "/apis/scheduling.volcano.sh/v1beta1/queues";
const EVENTS: &str = "/api/v1/namespaces/default/events";
const PODGROUPS: &str = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups";

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn container(limits: Value) -> Value {
    json!({"containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits, "requests": limits}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_are_refused_for_every_kind() -> TestResult {
    let s = Server::start().await?;
    let long = "a".repeat(300);
    let names: [(&str, &str); 5] = [
        ("a/b", "\"a/b\""),
        ("../etc", "\"../etc\""),
        ("a\0b", "\"a\\u0000b\""),
        ("a\nb", "\"a\\nb\""),
        (&long, "(300 characters)"),
    ];
    let kinds = [
        (CONFIGMAPS, json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}})),
        (PODS, pod("x", json!({}))),
        (NODES, json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "spec": {"profile": "hgx-a100-8"}})),
        (QUEUES, json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "spec": {"weight": 1}})),
        (EVENTS, json!({"apiVersion": "v1", "kind": "Event", "reason": "R", "message": "m"})),
        (
            PODGROUPS,
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "spec": {"minMember": 1}}),
        ),
    ];
    for (path, base) in &kinds {
        for (name, quoted) in &names {
            let mut body = base.clone();
            body["metadata"] = json!({"name": name});
            let a = s.post(path, &body).await?;
            refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.name", &[quoted, "DNS-1123 subdomain"]);
            // Dry runs are checked as real writes.
            let a = s.post(&format!("{path}?dryRun=All"), &body).await?;
            assert_eq!(a.code, StatusCode::UNPROCESSABLE_ENTITY, "{path} {name:?} dry run: {}", a.body);
        }
        assert!(s.items(path).await?.is_empty(), "{path} stored a bad name");
    }

    // Namespaces are DNS-1123 labels.
    let a = s.post("/api/v1/namespaces/a.b/configmaps", &json!({"metadata": {"name": "ok"}})).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.namespace", &["\"a.b\"", "DNS-1123 label"]);
    let a = s.post(CONFIGMAPS, &json!({"metadata": {"name": "ok", "namespace": "Bad_NS"}})).await?;
    assert_eq!(a.code, StatusCode::BAD_REQUEST, "path and body namespaces differ: {}", a.body);

    // Label keys and values, annotation keys and their total size.
    let a = s.post(CONFIGMAPS, &json!({"metadata": {"name": "l", "labels": {"a/b/c": "v"}}})).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "metadata.labels[\"a/b/c\"]",
        &["\"a/b/c\"", "qualified name"],
    );
    let a = s.post(CONFIGMAPS, &json!({"metadata": {"name": "l", "labels": {"app": "x".repeat(64)}}})).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.labels.app", &["\"xxxxxxxx", "at most 63"]);
    let a = s.post(CONFIGMAPS, &json!({"metadata": {"name": "l", "annotations": {"bad key": "v"}}})).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "metadata.annotations[\"bad key\"]",
        &["\"bad key\"", "qualified name"],
    );
    let a =
        s.post(CONFIGMAPS, &json!({"metadata": {"name": "l", "annotations": {"a": "x".repeat(300 << 10)}}})).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "metadata.annotations",
        &["307201 bytes", "262144 bytes (256 KiB)"],
    );
    assert!(s.items(CONFIGMAPS).await?.is_empty());
    assert!(s.items("/api/v1/namespaces/a.b/configmaps").await?.is_empty());

    // Good names still go in, and a patch cannot bring a bad label.
    let a = s
        .post(CONFIGMAPS, &json!({"metadata": {"name": "rings-config.v1", "labels": {"volcano.sh/job": "j_1.x"}}}))
        .await?;
    assert_eq!(a.code, StatusCode::CREATED, "{}", a.body);
    let patch = json!({"metadata": {"labels": {"-bad": "v"}}}).to_string();
    let a =
        s.send(Method::PATCH, &format!("{CONFIGMAPS}/rings-config.v1"), "application/merge-patch+json", patch).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "metadata.labels[\"-bad\"]",
        &["\"-bad\"", "qualified name"],
    );
    let stored = s.items(CONFIGMAPS).await?;
    assert_eq!(stored.len(), 1);
    assert!(stored[0]["metadata"]["labels"].get("-bad").is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_need_known_hardware_and_device_ids() -> TestResult {
    let s = Server::start().await?;
    let node = |spec: Value| json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"}, "spec": spec});
    let a = s.post(NODES, &node(json!({"profile": "no-such-profile"}))).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "spec.profile",
        &["\"no-such-profile\"", "unknown profile", "hgx-a100-8", "atlas-800t-a2"],
    );
    let a = s
        .post(NODES, &json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"}}))
        .await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.profile", &["needs a spec", "hgx-a100-8"]);
    let a = s.post(NODES, &node(json!({"profile": "hgx-a100-8", "topologyText": "GPU0 X"}))).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.profile", &["exactly one of"]);
    let a = s.post(NODES, &node(json!({"profile": "hgx-a100-8", "injectedFaults": {"unhealthy": [99]}}))).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "spec.injectedFaults.unhealthy[0]",
        &["99", "device IDs: 0, 1"],
    );
    let mut bad_status = node(json!({"profile": "hgx-a100-8"}));
    bad_status["status"] = json!({"allocatedDevices": [8]});
    let a = s.post(NODES, &bad_status).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "status.allocatedDevices[0]", &["8", "no such device"]);
    let a =
        s.post(NODES, &node(json!({"profile": "hgx-a100-8", "address": "a b", "network": {"tor": "tor 1"}}))).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.address", &["\"a b\"", "IP address"]);
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.network.tor", &["\"tor 1\""]);
    let a = s
        .post(NODES, &node(json!({"profile": "hgx-a100-8", "address": "127.0.1.1", "network": {"tor": "tor-1"}})))
        .await?;
    assert_eq!(a.code, StatusCode::CREATED, "{}", a.body);

    // A patch may not make a good Node bad.
    let patch = json!({"spec": {"profile": "no-such-profile"}}).to_string();
    let a = s.send(Method::PATCH, &format!("{NODES}/n1"), "application/merge-patch+json", patch).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.profile", &["no-such-profile"]);
    let stored = s.items(NODES).await?;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["spec"]["profile"], "hgx-a100-8");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_are_in_range_in_every_pod_spec() -> TestResult {
    let s = Server::start().await?;
    // `1e9` as YAML writes it.
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      limits: {nvidia.com/gpu: 1e9}\n";
    let a = s.send(Method::POST, PODS, "application/yaml", yaml).await?;
    let field = "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]";
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["1000000000", "whole numbers from 0 to 1024"]);
    for bad in [json!(-1), json!(1.5), json!("0.5"), json!(1025), json!(1_000_000_000u64)] {
        let a = s.post(PODS, &pod("g", container(json!({"nvidia.com/gpu": bad})))).await?;
        refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["0 to 1024"]);
    }
    let a = s.post(PODS, &pod("g", container(json!({"cpu": "-2"})))).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "spec.containers[0].resources.limits.cpu",
        &["\"-2\"", "non-negative"],
    );
    let mut deadline = pod("d", container(json!({})));
    deadline["spec"]["activeDeadlineSeconds"] = json!(-1);
    let a = s.post(PODS, &deadline).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.activeDeadlineSeconds", &["-1", "at least 1"]);
    assert!(s.items(PODS).await?.is_empty());

    // Templates of other kinds.
    let template = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x",
        "resources": {"limits": {"nvidia.com/gpu": 1e9}, "requests": {"nvidia.com/gpu": 1e9}}}]}});
    let batch = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"backoffLimit": -1, "template": template}});
    let a = s.post("/apis/batch/v1/namespaces/default/jobs", &batch).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.backoffLimit", &["-1"]);
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "spec.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]",
        &["1024"],
    );
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": -1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    let a = s.post("/apis/apps/v1/namespaces/default/deployments", &deploy).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.replicas", &["-1"]);
    let pytorch = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
        "spec": {"runPolicy": {"activeDeadlineSeconds": -1}, "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template}}}});
    let a = s.post("/apis/kubeflow.org/v1/namespaces/default/pytorchjobs", &pytorch).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.runPolicy.activeDeadlineSeconds", &["-1"]);
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]",
        &["1024"],
    );
    let vcjob = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
        "spec": {"minAvailable": -1, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}});
    let a = s.post("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", &vcjob).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.minAvailable", &["-1"]);
    let group = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}, "spec": {"minMember": -3}});
    let a = s.post(PODGROUPS, &group).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "spec.minMember", &["-3"]);
    for path in ["/apis/batch/v1/jobs", "/apis/apps/v1/deployments", "/apis/kubeflow.org/v1/pytorchjobs", PODGROUPS] {
        assert!(s.items(path).await?.is_empty(), "{path}");
    }

    // A PUT is checked as a create.
    let a = s.post(PODS, &pod("ok", container(json!({"nvidia.com/gpu": 2})))).await?;
    assert_eq!(a.code, StatusCode::CREATED, "{}", a.body);
    let mut replaced = pod("ok", container(json!({"nvidia.com/gpu": 2000})));
    replaced["metadata"]["namespace"] = json!("default");
    let a = s.send(Method::PUT, &format!("{PODS}/ok"), "application/json", replaced.to_string()).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["2000"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_devices_must_be_on_the_node() -> TestResult {
    let mut s = Server::start().await?;
    // Bound pods are the scheduler's to write (crates/server/tests/authz.rs).
    s.0.token = s.0.token_for(ringleader_auth::identity::SCHEDULER_USER, &[])?;
    let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"profile": "hgx-a100-8"}});
    assert_eq!(s.post(NODES, &node).await?.code, StatusCode::CREATED);
    let bound = |name: &str, node: &str, devices: &str| {
        let mut p = pod(name, json!({"nodeName": node, "containers": [{"name": "c", "image": "x"}]}));
        p["metadata"]["annotations"] = json!({"ringleader.io/devices": devices});
        p
    };
    let field = "metadata.annotations[\"ringleader.io/devices\"]";
    let a = s.post(PODS, &bound("p", "n1", "99")).await?;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        field,
        &["\"99\"", "device 99 is not on Node \"n1\"", "device IDs: 0, 1, 2"],
    );
    let a = s.post(PODS, &bound("p", "n1", "0,x")).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["\"x\" is not a device ID"]);
    let a = s.post(PODS, &bound("p", "n1", "1,1")).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["named twice"]);
    let a = s.post(PODS, &bound("p", "nowhere", "0")).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["names no Node"]);
    let a = s.post(&format!("{PODS}?dryRun=All"), &bound("p", "n1", "8")).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["device 8"]);
    assert!(s.items(PODS).await?.is_empty());

    let a = s.post(PODS, &bound("p", "n1", "0,7")).await?;
    assert_eq!(a.code, StatusCode::CREATED, "{}", a.body);
    let patch = json!({"metadata": {"annotations": {"ringleader.io/devices": "0,99"}}}).to_string();
    let a = s.send(Method::PATCH, &format!("{PODS}/p"), "application/merge-patch+json", patch).await?;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "Invalid", field, &["device 99"]);
    let stored = s.items(PODS).await?;
    assert_eq!(stored[0]["metadata"]["annotations"]["ringleader.io/devices"], "0,7");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_over_one_and_a_half_mib_are_too_large() -> TestResult {
    let s = Server::start().await?;
    let big = json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(1_600_000)}});
    let a = s.post(CONFIGMAPS, &big).await?;
    assert_eq!((a.code, a.body["reason"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("RequestEntityTooLarge")));
    let message = a.body["message"].as_str().unwrap_or_default();
    assert!(message.contains("ConfigMap \"big\"") && message.contains("1572864"), "{message}");
    // The same through the bulk apply.
    let doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x".repeat(1_600_000)}});
    let a = s.send(Method::POST, "/apis/ringleader.io/v1alpha1/apply", "application/json", doc.to_string()).await?;
    assert_eq!(a.code, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.body);
    // Just under the limit goes in.
    let fits = json!({"metadata": {"name": "fits"}, "data": {"k": "x".repeat(1_500_000)}});
    assert_eq!(s.post(CONFIGMAPS, &fits).await?.code, StatusCode::CREATED);
    let names: Vec<Value> = s.items(CONFIGMAPS).await?.iter().map(|o| o["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("fits")]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_keys_follow_field_validation() -> TestResult {
    let s = Server::start().await?;
    let json_body = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d1", "name": "d1"}, "data": {"k": "a", "k": "b"}}"#;
    let a =
        s.send(Method::POST, &format!("{CONFIGMAPS}?fieldValidation=Strict"), "application/json", json_body).await?;
    assert_eq!((a.code, a.body["reason"].as_str()), (StatusCode::BAD_REQUEST, Some("BadRequest")));
    let message = a.body["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with("strict decoding error: duplicate field \"metadata.name\", duplicate field \"data.k\""),
        "{message}"
    );
    let yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d1\ndata:\n  k: a\n  k: b\n";
    let a =
        s.send(Method::POST, &format!("{CONFIGMAPS}?fieldValidation=Strict"), "application/yaml", yaml_body).await?;
    assert_eq!(a.code, StatusCode::BAD_REQUEST);
    assert!(a.body["message"].as_str().unwrap_or_default().contains("duplicate field \"data.k\""), "{}", a.body);
    assert!(s.items(CONFIGMAPS).await?.is_empty());

    // Warn (the default): stored, last value wins, one Warning per key.
    let a = s.send(Method::POST, CONFIGMAPS, "application/json", json_body).await?;
    assert_eq!(a.code, StatusCode::CREATED, "{}", a.body);
    assert_eq!(
        a.warnings,
        ["299 - \"duplicate field \\\"metadata.name\\\"\"", "299 - \"duplicate field \\\"data.k\\\"\""]
    );
    assert_eq!(a.body["data"]["k"], "b");
    // Ignore: stored, nothing said.
    let a = s
        .send(
            Method::POST,
            &format!("{CONFIGMAPS}?fieldValidation=Ignore"),
            "application/yaml",
            yaml_body.replace("d1", "d2"),
        )
        .await?;
    assert_eq!((a.code, a.warnings.len()), (StatusCode::CREATED, 0), "{}", a.body);
    // Patches too.
    let a = s
        .send(
            Method::PATCH,
            &format!("{CONFIGMAPS}/d2?fieldValidation=Strict"),
            "application/merge-patch+json",
            r#"{"data": {"x": "1", "x": "2"}}"#,
        )
        .await?;
    assert_eq!(a.code, StatusCode::BAD_REQUEST);
    assert!(a.body["message"].as_str().unwrap_or_default().contains("duplicate field \"data.x\""), "{}", a.body);
    Ok(())
}

/// Peak resident memory of this process (which serves the requests too).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yaml_alias_bomb_is_refused_before_it_is_expanded() -> TestResult {
    let s = Server::start().await?;
    // 5,000 aliases of one 100 KB string: about 150 KB sent, 500 MB decoded.
    let mut bomb =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nbig: &s {}\ndata:\n", "a".repeat(100_000));
    for i in 0..5000 {
        bomb.push_str(&format!("  k{i}: *s\n"));
    }
    let before = peak_rss_kib();
    let started = Instant::now();
    for path in
        [CONFIGMAPS.to_string(), format!("{CONFIGMAPS}?dryRun=All"), "/apis/ringleader.io/v1alpha1/apply".to_string()]
    {
        let a = s.send(Method::POST, &path, "application/yaml", bomb.clone()).await?;
        assert_eq!(a.code, StatusCode::BAD_REQUEST, "{path}: {}", a.body);
        let message = a.body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("YAML aliases would expand the body past the limit of")
                && message.contains("10 times its size + 1 MiB"),
            "{message}"
        );
    }
    let took = started.elapsed();
    let grew_mib = peak_rss_kib().saturating_sub(before) / 1024;
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(grew_mib < 300, "peak RSS grew by {grew_mib} MiB");
    assert!(s.items(CONFIGMAPS).await?.is_empty());
    // A few aliases are fine.
    let small = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: few}\ndata:\n  a: &v hello\n  b: *v\n";
    let a = s.send(Method::POST, CONFIGMAPS, "application/yaml", small).await?;
    assert_eq!((a.code, &a.body["data"]["b"]), (StatusCode::CREATED, &json!("hello")), "{}", a.body);
    Ok(())
}
