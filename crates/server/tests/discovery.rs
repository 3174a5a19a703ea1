//! What stock kubectl reads before it acts: `/version`, discovery (legacy
//! and aggregated), the OpenAPI v3 index and group-version documents, the
//! v2 document, and server-side field validation (`fieldValidation`).

mod common;

use common::{pod, TestResult, TestServer};
use reqwest::header::{ACCEPT, CONTENT_TYPE, WARNING};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeSet;

async fn get_json(s: &TestServer, path: &str) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let r = s.raw(Method::GET, path).send().await?;
    assert_eq!(r.status(), 200, "{path}");
    Ok(r.json().await?)
}

fn resource<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["resources"].as_array().and_then(|rs| rs.iter().find(|r| r["name"] == name)).unwrap_or(&Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_legacy_discovery() -> TestResult {
    let s = TestServer::start().await?;
    // Discovery needs the token like everything else.
    let anonymous = reqwest::get(format!("{}/apis", s.url)).await?;
    assert_eq!(anonymous.status(), 401);

    let v = get_json(&s, "/version").await?;
    assert!(v["gitVersion"].as_str().unwrap_or("").starts_with("v1."), "{v}");
    for field in ["major", "minor", "gitCommit", "buildDate", "goVersion", "compiler", "platform"] {
        assert!(v[field].is_string(), "{field}: {v}");
    }

    let api = get_json(&s, "/api").await?;
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], json!(["v1"]));

    let core = get_json(&s, "/api/v1").await?;
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    let pods = resource(&core, "pods");
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(pods["verbs"], json!(["create", "delete", "get", "list", "patch", "update", "watch"]));
    assert_eq!(resource(&core, "pods/log")["verbs"], json!(["get"]));
    assert_eq!(resource(&core, "pods/status")["verbs"], json!(["get", "patch", "update"]));
    // The core Node view: cluster-scoped; patches and updates, no create or delete.
    let nodes = resource(&core, "nodes");
    assert_eq!(nodes["kind"], "Node");
    assert_eq!(nodes["namespaced"], false);
    assert_eq!(nodes["verbs"], json!(["get", "list", "watch", "patch", "update"]));
    assert_eq!(resource(&core, "events")["shortNames"], json!(["ev"]));
    assert!(resource(&core, "configmaps")["categories"].is_null());

    let groups = get_json(&s, "/apis").await?;
    assert_eq!(groups["kind"], "APIGroupList");
    let names: Vec<&str> =
        groups["groups"].as_array().into_iter().flatten().filter_map(|g| g["name"].as_str()).collect();
    let mut expected: BTreeSet<&str> =
        ringleader_server::RESOURCES.iter().map(|r| r.group).filter(|g| !g.is_empty()).collect();
    // SelfSubjectAccessReviews (`kubectl auth can-i`) and resource metrics
    // (`kubectl top`) are answered, not stored.
    expected.insert("authorization.k8s.io");
    expected.insert("authentication.k8s.io");
    expected.insert("metrics.k8s.io");
    assert_eq!(names.iter().copied().collect::<BTreeSet<_>>(), expected);
    let kubeflow = groups["groups"].as_array().and_then(|g| g.iter().find(|g| g["name"] == "kubeflow.org"));
    let kubeflow = kubeflow.cloned().unwrap_or_default();
    assert_eq!(kubeflow["preferredVersion"], json!({"groupVersion": "kubeflow.org/v1", "version": "v1"}));
    assert_eq!(kubeflow["versions"].as_array().map(Vec::len), Some(2));

    let kf = get_json(&s, "/apis/kubeflow.org/v1").await?;
    assert_eq!(kf["groupVersion"], "kubeflow.org/v1");
    let pj = resource(&kf, "pytorchjobs");
    assert_eq!(pj["kind"], "PyTorchJob");
    assert_eq!(pj["categories"], json!(["all"]));
    assert!(pj["shortNames"].as_array().is_some_and(|s| s.contains(&json!("pj"))), "{pj}");
    let vc = get_json(&s, "/apis/batch.volcano.sh/v1alpha1").await?;
    assert_eq!(resource(&vc, "jobs")["shortNames"], json!(["vcjob", "vj"]));
    let rl = get_json(&s, "/apis/ringleader.io/v1alpha1").await?;
    assert_eq!(resource(&rl, "nodes")["namespaced"], false);
    assert_eq!(resource(&rl, "nodes")["verbs"].as_array().map(Vec::len), Some(7));
    let queues = get_json(&s, "/apis/scheduling.volcano.sh/v1beta1").await?;
    assert_eq!(resource(&queues, "queues")["namespaced"], false);
    assert_eq!(resource(&queues, "podgroups")["namespaced"], true);

    let missing = s.raw(Method::GET, "/apis/example.com/v1").send().await?;
    assert_eq!(missing.status(), 404);
    let status: Value = missing.json().await?;
    assert_eq!(status["kind"], "Status");
    assert_eq!(s.raw(Method::GET, "/apis/kubeflow.org/v9").send().await?.status(), 404);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_when_asked() -> TestResult {
    let s = TestServer::start().await?;
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                  application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    for path in ["/api", "/apis"] {
        let r = s.raw(Method::GET, path).header(ACCEPT, accept).send().await?;
        assert_eq!(r.status(), 200);
        let ct = r.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert_eq!(ct, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
        let body: Value = r.json().await?;
        assert_eq!(body["kind"], "APIGroupDiscoveryList");
        assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2");
        if path == "/api" {
            let v1 = &body["items"][0]["versions"][0];
            assert_eq!(v1["version"], "v1");
            let pods = v1["resources"].as_array().and_then(|r| r.iter().find(|r| r["resource"] == "pods"));
            let pods = pods.cloned().unwrap_or_default();
            assert_eq!(pods["scope"], "Namespaced");
            assert_eq!(pods["responseKind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
            let subs: Vec<&str> = pods["subresources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["subresource"].as_str())
                .collect();
            assert_eq!(subs, ["status", "log", "exec", "attach", "portforward", "eviction"]);
            let eviction =
                pods["subresources"].as_array().and_then(|s| s.iter().find(|s| s["subresource"] == "eviction"));
            assert_eq!(
                eviction.map(|e| e["responseKind"].clone()),
                Some(json!({"group": "policy", "version": "v1", "kind": "Eviction"}))
            );
        } else {
            let kubeflow =
                body["items"].as_array().and_then(|i| i.iter().find(|g| g["metadata"]["name"] == "kubeflow.org"));
            let versions: Vec<Value> =
                kubeflow.map(|g| g["versions"].as_array().cloned().unwrap_or_default()).unwrap_or_default();
            assert_eq!(
                versions.iter().map(|v| v["version"].clone()).collect::<Vec<_>>(),
                [json!("v1"), json!("v2beta1")]
            );
        }
    }
    // Plain JSON still gets the legacy list.
    let plain = s.raw(Method::GET, "/apis").header(ACCEPT, "application/json").send().await?;
    let body: Value = plain.json().await?;
    assert_eq!(body["kind"], "APIGroupList");
    Ok(())
}

/// Every `$ref` of `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                out.push(r.to_string());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(l) => l.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Follows a schema through `$ref` and single `allOf` wrappers.
fn deref<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..8 {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/components/schemas/");
            s = &doc["components"]["schemas"][name];
        } else if let Some(first) = s.get("allOf").and_then(|a| a.get(0)) {
            s = first;
        } else {
            break;
        }
    }
    s
}

fn top<'a>(doc: &'a Value, group: &str, kind: &str) -> &'a Value {
    let schemas = doc["components"]["schemas"].as_object();
    schemas
        .and_then(|m| {
            m.values().find(|s| {
                s["x-kubernetes-group-version-kind"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|g| g["group"] == group && g["kind"] == kind))
            })
        })
        .unwrap_or(&Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_v3_index_and_group_version_documents() -> TestResult {
    let s = TestServer::start().await?;
    let index = get_json(&s, "/openapi/v3").await?;
    let paths = index["paths"].as_object().cloned().unwrap_or_default();
    for key in ["api/v1", "apis/kubeflow.org/v1", "apis/kubeflow.org/v2beta1", "apis/batch.volcano.sh/v1alpha1"] {
        let url = paths.get(key).and_then(|p| p["serverRelativeURL"].as_str()).unwrap_or("");
        assert!(url.starts_with(&format!("/openapi/v3/{key}?hash=")), "{key}: {url}");
    }
    for (key, entry) in &paths {
        let url = entry["serverRelativeURL"].as_str().unwrap_or("");
        let doc = get_json(&s, url).await?;
        assert_eq!(doc["openapi"], "3.0.0", "{key}");
        let mut all = Vec::new();
        refs(&doc, &mut all);
        for r in all {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or("");
            assert!(doc["components"]["schemas"][name].is_object(), "{key}: {r} does not resolve");
        }
        // Every PATCH names its kind and takes fieldValidation, which is how
        // kubectl apply knows to leave validation to the server.
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            if let Some(patch) = item.get("patch") {
                assert!(patch["x-kubernetes-group-version-kind"]["kind"].is_string(), "{path}");
                let params: Vec<&str> =
                    patch["parameters"].as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
                assert!(params.contains(&"fieldValidation") && params.contains(&"dryRun"), "{path}: {params:?}");
            }
        }
    }

    let kf = get_json(&s, "/openapi/v3/apis/kubeflow.org/v1").await?;
    let pj = top(&kf, "kubeflow.org", "PyTorchJob");
    for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
        assert!(pj["properties"][field].is_object(), "{field}");
    }
    let spec = deref(&kf, &pj["properties"]["spec"]);
    let replica_specs = &spec["properties"]["pytorchReplicaSpecs"];
    assert!(replica_specs.is_object(), "{spec}");
    let replica = deref(&kf, &replica_specs["additionalProperties"]);
    assert!(replica["properties"]["replicas"].is_object());
    assert!(replica["description"].as_str().is_some_and(|d| d.contains("replica type")), "{replica}");
    let item = &kf["paths"]["/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/{name}"];
    assert_eq!(item["get"]["x-kubernetes-group-version-kind"]["kind"], "PyTorchJob");
    assert!(item["put"].is_object() && item["delete"].is_object());
    assert!(kf["paths"]["/apis/kubeflow.org/v1/pytorchjobs"]["get"].is_object());
    assert!(top(&kf, "kubeflow.org", "MPIJob").is_null(), "MPIJob is in v2beta1");

    let core = get_json(&s, "/openapi/v3/api/v1").await?;
    let pod = top(&core, "", "Pod");
    let pod_spec = deref(&core, &pod["properties"]["spec"]);
    let container = deref(&core, &pod_spec["properties"]["containers"]["items"]);
    assert!(container["properties"]["image"].is_object());
    assert!(container["properties"]["resources"].is_object());
    assert!(core["paths"]["/api/v1/nodes"]["get"].is_object());
    assert!(core["paths"]["/api/v1/nodes/{name}"].get("put").is_none());
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"].is_object());

    let missing = s.raw(Method::GET, "/openapi/v3/apis/example.com/v1").send().await?;
    assert_eq!(missing.status(), 404);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_v2_is_json_or_not_acceptable() -> TestResult {
    let s = TestServer::start().await?;
    let doc = get_json(&s, "/openapi/v2").await?;
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().cloned().unwrap_or_default();
    assert!(definitions.contains_key("io.k8s.api.core.v1.Pod"));
    assert!(definitions.contains_key("org.kubeflow.v1.PyTorchJob"));
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let name = r.strip_prefix("#/definitions/").unwrap_or_else(|| panic!("{r}"));
        assert!(definitions.contains_key(name), "{r}");
    }
    let patch = &doc["paths"]["/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/{name}"]["patch"];
    assert!(patch["parameters"].as_array().is_some_and(|p| p.iter().any(|p| p["in"] == "body")));

    let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let r = s.raw(Method::GET, "/openapi/v2").header(ACCEPT, proto).send().await?;
    assert_eq!(r.status(), 406);
    let status: Value = r.json().await?;
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotAcceptable");
    let both = s.raw(Method::GET, "/openapi/v2").header(ACCEPT, format!("{proto}, application/json")).send().await?;
    assert_eq!(both.status(), 200);
    Ok(())
}

fn pytorchjob(name: &str, master: Value) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": master}}})
}

fn replica(extra: Value) -> Value {
    let mut r = json!({"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
        {"name": "pytorch", "image": "pytorch:2", "command": ["python", "train.py"]}]}}});
    if let (Some(m), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    r
}

fn warnings(r: &reqwest::Response) -> Vec<String> {
    r.headers().get_all(WARNING).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect()
}

const PJ: &str = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_on_create() -> TestResult {
    let s = TestServer::start().await?;
    let bad = pytorchjob("a", replica(json!({"replica": 2})));

    let strict = s.raw(Method::POST, &format!("{PJ}?fieldValidation=Strict")).json(&bad).send().await?;
    assert_eq!(strict.status(), 400);
    let status: Value = strict.json().await?;
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "PyTorchJob in version \"v1\" cannot be handled as a PyTorchJob: strict decoding error: \
         unknown field \"spec.pytorchReplicaSpecs.Master.replica\""
    );

    // Several fields, in a YAML body.
    let yaml = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: y\n  labelz: {}\nspec:\n  \
                pytorchReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        spec:\n          \
                containers:\n          - name: c\n            image: x\n            imagee: y\n";
    let r = s
        .raw(Method::POST, &format!("{PJ}?fieldValidation=Strict"))
        .header(CONTENT_TYPE, "application/yaml")
        .body(yaml)
        .send()
        .await?;
    assert_eq!(r.status(), 400);
    let status: Value = r.json().await?;
    assert!(
        status["message"].as_str().is_some_and(|m| m.ends_with(
            "strict decoding error: unknown field \"metadata.labelz\", \
             unknown field \"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].imagee\""
        )),
        "{status}"
    );

    // Warn is the default: created, with one Warning header per field.
    let warned = s.raw(Method::POST, PJ).json(&bad).send().await?;
    assert_eq!(warned.status(), 201);
    assert_eq!(warnings(&warned), ["299 - \"unknown field \\\"spec.pytorchReplicaSpecs.Master.replica\\\"\""]);

    let ignored = s
        .raw(Method::POST, &format!("{PJ}?fieldValidation=Ignore"))
        .json(&pytorchjob("b", replica(json!({"replica": 2}))))
        .send()
        .await?;
    assert_eq!(ignored.status(), 201);
    assert!(warnings(&ignored).is_empty());

    let clean = s
        .raw(Method::POST, &format!("{PJ}?fieldValidation=Strict"))
        .json(&pytorchjob("c", replica(json!({}))))
        .send()
        .await?;
    assert_eq!(clean.status(), 201);
    assert!(warnings(&clean).is_empty());

    let nonsense = s
        .raw(Method::POST, &format!("{PJ}?fieldValidation=Loud"))
        .json(&pytorchjob("d", replica(json!({}))))
        .send()
        .await?;
    assert_eq!(nonsense.status(), 400);
    let status: Value = nonsense.json().await?;
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains("fieldValidation") && message.contains("\"Strict\"") && message.contains("\"Loud\""),
        "{message}"
    );

    // PUT of what the server answered (status, managed metadata) is clean.
    let mut got: Value = s.raw(Method::GET, &format!("{PJ}/c")).send().await?.json().await?;
    got["status"] = json!({"conditions": [{"type": "Created", "status": "True"}], "replicaStatuses": {"Master": {}}});
    let put = s.raw(Method::PUT, &format!("{PJ}/c?fieldValidation=Strict")).json(&got).send().await?;
    assert_eq!(put.status(), 200, "{:?}", put.text().await);
    got["spec"]["runPolicy"] = json!({"cleanPodPolicyy": "All"});
    let put = s.raw(Method::PUT, &format!("{PJ}/c?fieldValidation=Strict")).json(&got).send().await?;
    assert_eq!(put.status(), 400);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_on_patch() -> TestResult {
    let s = TestServer::start().await?;
    let created = s.raw(Method::POST, PJ).json(&pytorchjob("p", replica(json!({})))).send().await?;
    assert_eq!(created.status(), 201);
    let merge = |query: &str, body: Value| {
        s.raw(Method::PATCH, &format!("{PJ}/p{query}"))
            .header(CONTENT_TYPE, "application/merge-patch+json")
            .body(body.to_string())
    };
    let bad = json!({"spec": {"pytorchReplicaSpecs": {"Master": {"replica": 3}}}});
    let r = merge("?fieldValidation=Strict", bad.clone()).send().await?;
    assert_eq!(r.status(), 400);
    let status: Value = r.json().await?;
    assert!(status["message"]
        .as_str()
        .is_some_and(|m| m.contains("unknown field \"spec.pytorchReplicaSpecs.Master.replica\"")));

    let r = merge("", bad).send().await?;
    assert_eq!(r.status(), 200);
    assert_eq!(warnings(&r).len(), 1);
    // The field is stored now; a later strict patch is not blamed for it.
    let r = merge("?fieldValidation=Strict", json!({"metadata": {"labels": {"a": "b"}}})).send().await?;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);

    let json_patch = s
        .raw(Method::PATCH, &format!("{PJ}/p?fieldValidation=Strict&dryRun=All"))
        .header(CONTENT_TYPE, "application/json-patch+json")
        .body(json!([{"op": "add", "path": "/spec/bogus", "value": 1}]).to_string())
        .send()
        .await?;
    assert_eq!(json_patch.status(), 400);

    // Strategic merge patch of a built-in kind, and server-side apply.
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(s.raw(Method::POST, pods).json(&pod("q", json!({}))).send().await?.status(), 201);
    let smp = s
        .raw(Method::PATCH, &format!("{pods}/q?fieldValidation=Strict"))
        .header(CONTENT_TYPE, "application/strategic-merge-patch+json")
        .body(json!({"spec": {"containers": [{"name": "main", "imagePullPolicyy": "Always"}]}}).to_string())
        .send()
        .await?;
    assert_eq!(smp.status(), 400);
    let apply = s
        .raw(Method::PATCH, &format!("{PJ}/p?fieldValidation=Strict&fieldManager=kubectl"))
        .header(CONTENT_TYPE, "application/apply-patch+yaml")
        .body(pytorchjob("p", replica(json!({"replicaz": 1}))).to_string())
        .send()
        .await?;
    assert_eq!(apply.status(), 400);
    Ok(())
}

/// The bundled examples, and objects shaped as the server's own components
/// write them, declare every field they carry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundled_examples_and_server_written_objects_have_no_unknown_fields() -> TestResult {
    let s = TestServer::start().await?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let docs = ringleader_api::document::load_all(&[root.clone(), root.join("demo")])?;
    assert!(docs.len() >= 20, "{}", docs.len());
    let mut objects: Vec<(String, Value)> =
        docs.into_iter().map(|d| (format!("{}[{}]", d.source, d.index), d.value)).collect();
    // What the agent and the manager write.
    objects.push((
        "agent node".into(),
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}},
            "spec": {"profile": "hgx-h100", "network": {"tor": "t1"}, "address": "127.0.1.1", "stopped": true,
                "injectedFaults": {"unhealthy": [1], "network": []}},
            "status": {"unhealthyDevices": [], "networkUnhealthyDevices": [], "ready": true, "lastHeartbeat": 1.5,
                "allocatedDevices": [0], "nodeInfo": {"machineID": "m", "kubeletVersion": "v0.1.0", "architecture": "amd64"}}}),
    ));
    objects.push((
        "manager event".into(),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e.1"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "namespace": "default"},
            "reason": "Scheduled", "message": "m", "type": "Normal", "count": 1,
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z",
            "source": {"component": "ringleader"}, "reportingComponent": "ringleader", "reportingInstance": "ringleader"}),
    ));
    objects.push((
        "controller deployment status".into(),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}},
            "status": {"replicas": 1, "conditions": [{"type": "Running", "status": "True"}],
                "replicaStatuses": {"Worker": {"active": 1}}, "ringleader": {"state": "Running"}}}),
    ));
    let mut running = pod("r", json!({"training.kubeflow.org/job-name": "j"}));
    running["metadata"]["annotations"] = json!({"ringleader.io/start": "true"});
    running["spec"]["nodeName"] = json!("n1");
    running["status"] = json!({"phase": "Running", "podIP": "127.0.1.1", "podIPs": [{"ip": "127.0.1.1"}],
        "hostIP": "127.0.1.1", "hostIPs": [{"ip": "127.0.1.1"}], "startTime": "2024-01-01T00:00:00Z", "qosClass": "BestEffort",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
        "containerStatuses": [{"name": "main", "ready": true, "started": true, "restartCount": 0, "image": "busybox",
            "imageID": "", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]});
    objects.push(("agent pod".into(), running));

    // The agent pod is bound: only the scheduler may send that.
    let scheduler = ringleader_auth::identity::issue(
        s.dir.path(),
        ringleader_auth::identity::SCHEDULER_USER,
        &[],
        "2025-01-01T00:00:00Z",
    )?;
    let mut problems = Vec::new();
    for (source, object) in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or("");
        let kind = object["kind"].as_str().unwrap_or("");
        let Some(rt) = ringleader_registry::resources::by_kind(api_version, kind) else {
            problems.push(format!("{source}: no resource for {api_version} {kind}"));
            continue;
        };
        let ns = object["metadata"]["namespace"].as_str().unwrap_or("default");
        let path = format!("{}?dryRun=All&fieldValidation=Strict", rt.collection_path(Some(ns)));
        let request = if source == "agent pod" {
            reqwest::Client::new().post(format!("{}{path}", s.url)).bearer_auth(&scheduler)
        } else {
            s.raw(Method::POST, &path)
        };
        let r = request.json(&object).send().await?;
        let code = r.status();
        let text = r.text().await?;
        if text.contains("strict decoding error") {
            problems.push(format!("{source}: {text}"));
        } else if code != 201 {
            // Not about fields (e.g. a job validation rule): say so, but the
            // check itself ran first and passed.
            eprintln!("{source}: {code}: {text}");
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}
