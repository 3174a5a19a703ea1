//! The platform kinds (`platform.ringleader.io`) over a real server and
//! store: a round trip of each verb, validation errors at their fields,
//! an audit record with the user for each write, delete guards on resource
//! groups and storage mounts, read-only audit records, and a workspace
//! member's 403 in another workspace's namespace.

mod common;

use common::{call, TestResult, TestServer};
use reqwest::Method;
use ringleader_auth::identity;
use serde_json::{json, Value};

const P: &str = "/apis/platform.ringleader.io/v1alpha1";

fn token(s: &TestServer, user: &str) -> Result<String, String> {
    identity::issue(s.dir.path(), user, &[], "2025-01-01T00:00:00Z")
}

async fn bind_edit(s: &TestServer, ns: &str, user: &str) -> TestResult {
    let b = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": format!("{user}-edit"), "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
    let (code, body) = call(s, &s.token, Method::POST, &path, Some(&b)).await;
    assert_eq!(code, 201, "{body}");
    Ok(())
}

fn training_job(name: &str) -> Value {
    json!({
        "apiVersion": "platform.ringleader.io/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {"queue": "train-a2", "image": "reg/torch:2.3", "framework": "PyTorchDDP",
            "command": "torchrun train.py", "roles": [{"name": "Worker", "count": 2, "resources": {"npu": 8}}],
            "mounts": [{"dataset": "wiki-zh"}]},
    })
}

fn jobs(ns: &str) -> String {
    format!("{P}/namespaces/{ns}/trainingjobs")
}

/// The audit records as (user, verb, resource, namespace, name), oldest first.
async fn audit(s: &TestServer) -> Vec<(String, String, String, String, String)> {
    let (code, list) = call(s, &s.token, Method::GET, &format!("{P}/auditrecords"), None).await;
    assert_eq!(code, 200, "{list}");
    let mut items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
    items.sort_by_key(|i| i["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse::<u64>().ok()));
    let f = |i: &Value, k: &str| i["spec"][k].as_str().unwrap_or_default().to_string();
    items.iter().map(|i| (f(i, "user"), f(i, "verb"), f(i, "resource"), f(i, "namespace"), f(i, "name"))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_training_job_round_trips_and_every_write_is_audited_with_its_user() -> TestResult {
    let s = TestServer::start().await?;
    bind_edit(&s, "ws-a", "alice").await?;
    let alice = token(&s, "alice")?;

    let (code, created) = call(&s, &alice, Method::POST, &jobs("ws-a"), Some(&training_job("gpt"))).await;
    assert_eq!(code, 201, "{created}");
    let (code, got) = call(&s, &alice, Method::GET, &format!("{}/gpt", jobs("ws-a")), None).await;
    assert_eq!(code, 200);
    assert_eq!(got["spec"]["framework"], "PyTorchDDP");
    assert_eq!(got["spec"]["mounts"][0]["dataset"], "wiki-zh");

    // Replace (edit the command), then a merge patch (the description).
    let mut edited = got.clone();
    edited["spec"]["command"] = json!("python train.py --epochs 2");
    let (code, body) = call(&s, &alice, Method::PUT, &format!("{}/gpt", jobs("ws-a")), Some(&edited)).await;
    assert_eq!(code, 200, "{body}");
    let patch = json!({"spec": {"description": "两轮"}});
    let (code, body) = call(&s, &alice, Method::PATCH, &format!("{}/gpt", jobs("ws-a")), Some(&patch)).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["command"], "python train.py --epochs 2");

    // A run, then its stop.
    let run = json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "Run",
        "metadata": {"name": "gpt-r1"}, "spec": {"trainingJob": "gpt"}});
    let runs = format!("{P}/namespaces/ws-a/runs");
    assert_eq!(call(&s, &alice, Method::POST, &runs, Some(&run)).await.0, 201);
    // The controller's status write is bookkeeping: not audited.
    let status = json!({"status": {"state": "running", "pods": []}});
    assert_eq!(call(&s, &s.token, Method::PATCH, &format!("{runs}/gpt-r1"), Some(&status)).await.0, 200);
    let stop = json!({"spec": {"stop": true}});
    assert_eq!(call(&s, &alice, Method::PATCH, &format!("{runs}/gpt-r1"), Some(&stop)).await.0, 200);

    // The Table has the platform's columns.
    let table = reqwest::Client::new()
        .get(format!("{}{}", s.url, jobs("ws-a")))
        .bearer_auth(&alice)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await?
        .json::<Value>()
        .await?;
    let headers: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map_or(Vec::new(), |c| c.iter().filter_map(|c| c["name"].as_str()).collect());
    assert_eq!(
        headers,
        [
            "Name",
            "FRAMEWORK",
            "QUEUE",
            "RUNS",
            "LAST-RUN",
            "AGE",
            "IMAGE",
            "VISIBILITY",
            "CATEGORY",
            "PROJECT",
            "EST-RUN-TIME"
        ]
    );
    assert_eq!(table["rows"][0]["cells"][1], "PyTorchDDP");

    assert_eq!(call(&s, &alice, Method::DELETE, &format!("{}/gpt", jobs("ws-a")), None).await.0, 200);
    assert_eq!(call(&s, &alice, Method::GET, &format!("{}/gpt", jobs("ws-a")), None).await.0, 404);

    let tj = "platform.ringleader.io/TrainingJob".to_string();
    let rn = "platform.ringleader.io/Run".to_string();
    let at = |user: &str, verb: &str, resource: &String, name: &str| {
        (user.to_string(), verb.to_string(), resource.clone(), "ws-a".to_string(), name.to_string())
    };
    assert_eq!(
        audit(&s).await,
        vec![
            at("alice", "create", &tj, "gpt"),
            at("alice", "update", &tj, "gpt"),
            at("alice", "patch", &tj, "gpt"),
            at("alice", "run", &rn, "gpt-r1"),
            at("alice", "stop", &rn, "gpt-r1"),
            at("alice", "delete", &tj, "gpt"),
        ]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_platform_objects_are_refused_at_their_fields() -> TestResult {
    let s = TestServer::start().await?;
    let mut bad = training_job("a-name-longer-than-20");
    bad["spec"]["framework"] = json!("Caffe");
    bad["spec"]["command"] = json!("./train.sh");
    bad["spec"]["mounts"] = json!([{"dataset": "d", "path": "data"}]);
    let (code, body) = call(&s, &s.token, Method::POST, &jobs("ws-a"), Some(&bad)).await;
    assert_eq!(code, 422, "{body}");
    let mut fields: Vec<&str> = body["details"]["causes"]
        .as_array()
        .map_or(Vec::new(), |c| c.iter().filter_map(|c| c["field"].as_str()).collect());
    fields.sort();
    assert_eq!(fields, ["metadata.name", "spec.command", "spec.framework", "spec.mounts[0].path"], "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("allowed: PyTorchDDP, PyTorchDeepSpeed, TensorFlowPS, MPI, MindSpore"), "{message}");

    let script = json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "Script",
        "metadata": {"name": "s"}, "spec": {"content": "true", "timeoutSeconds": 60}});
    let (code, body) = call(&s, &s.token, Method::POST, &format!("{P}/scripts"), Some(&script)).await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "spec.timeoutSeconds", "{body}");

    let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
        "spec": {"resourceGroup": "rg", "quota": {"instanceSpec": {"npu": 8}, "instanceCount": 0}}});
    let (code, body) =
        call(&s, &s.token, Method::POST, "/apis/scheduling.volcano.sh/v1beta1/queues", Some(&queue)).await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "spec.quota.instanceCount", "{body}");
    assert!(audit(&s).await.is_empty(), "refused writes leave no record");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_holds_at_most_ten_resource_groups() -> TestResult {
    let s = TestServer::start().await?;
    let rg = |name: &str| {
        json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "ResourceGroup",
               "metadata": {"name": name}, "spec": {"accelerator": "NVIDIA"}})
    };
    for i in 0..10 {
        let (code, body) =
            call(&s, &s.token, Method::POST, &format!("{P}/resourcegroups"), Some(&rg(&format!("g{i}")))).await;
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = call(&s, &s.token, Method::POST, &format!("{P}/resourcegroups"), Some(&rg("g10"))).await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("exceeded quota") && message.contains("limited: count/resourcegroups=10"), "{message}");
    // An existing group is still edited, and a deleted one makes room.
    let patch = json!({"spec": {"description": "edited"}});
    assert_eq!(call(&s, &s.token, Method::PATCH, &format!("{P}/resourcegroups/g3"), Some(&patch)).await.0, 200);
    assert_eq!(call(&s, &s.token, Method::DELETE, &format!("{P}/resourcegroups/g0"), None).await.0, 200);
    assert_eq!(call(&s, &s.token, Method::POST, &format!("{P}/resourcegroups"), Some(&rg("g10"))).await.0, 201);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_and_mounts_are_deleted_only_when_emptied() -> TestResult {
    let s = TestServer::start().await?;
    let admin = s.token.clone();
    let rg = json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "ResourceGroup",
        "metadata": {"name": "pool"}, "spec": {"accelerator": "Ascend", "nodes": {"names": ["a2-1"]}},
        "status": {"state": "running", "nodes": ["a2-1"]}});
    assert_eq!(call(&s, &admin, Method::POST, &format!("{P}/resourcegroups"), Some(&rg)).await.0, 201);
    let (code, body) = call(&s, &admin, Method::DELETE, &format!("{P}/resourcegroups/pool"), None).await;
    assert_eq!(code, 409, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("ResourceGroup \"pool\"") && message.contains("a2-1"), "{message}");
    // The user empties the spec; the controller's status follows through /status.
    let emptied = json!({"spec": {"nodes": {"names": []}}});
    assert_eq!(call(&s, &admin, Method::PATCH, &format!("{P}/resourcegroups/pool"), Some(&emptied)).await.0, 200);
    let status = json!({"status": {"nodes": []}});
    assert_eq!(call(&s, &admin, Method::PATCH, &format!("{P}/resourcegroups/pool/status"), Some(&status)).await.0, 200);
    assert_eq!(call(&s, &admin, Method::DELETE, &format!("{P}/resourcegroups/pool"), None).await.0, 200);

    let sm = json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "StorageMount",
        "metadata": {"name": "pfs"}, "spec": {"nodeDirectory": "/mnt/pfs", "nodes": ["n1", "n2"]},
        "status": {"nodes": [{"node": "n1", "state": "unmounted"}, {"node": "n2", "state": "mounted"}]}});
    assert_eq!(call(&s, &admin, Method::POST, &format!("{P}/storagemounts"), Some(&sm)).await.0, 201);
    let (code, body) = call(&s, &admin, Method::DELETE, &format!("{P}/storagemounts/pfs"), None).await;
    assert_eq!(code, 409, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("still mounted on n2"), "{body}");
    let unmount = json!({"spec": {"mounted": false}});
    assert_eq!(call(&s, &admin, Method::PATCH, &format!("{P}/storagemounts/pfs"), Some(&unmount)).await.0, 200);
    let unmounted =
        json!({"status": {"nodes": [{"node": "n1", "state": "unmounted"}, {"node": "n2", "state": "unmounted"}]}});
    let status = format!("{P}/storagemounts/pfs/status");
    assert_eq!(call(&s, &admin, Method::PATCH, &status, Some(&unmounted)).await.0, 200);
    assert_eq!(call(&s, &admin, Method::DELETE, &format!("{P}/storagemounts/pfs"), None).await.0, 200);

    let verbs: Vec<String> = audit(&s).await.into_iter().map(|r| format!("{} {}", r.1, r.4)).collect();
    assert_eq!(verbs, ["create pool", "patch pool", "delete pool", "create pfs", "patch pfs", "delete pfs"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_records_are_read_only_and_workspaces_are_fenced() -> TestResult {
    let s = TestServer::start().await?;
    bind_edit(&s, "ws-a", "alice").await?;
    let alice = token(&s, "alice")?;
    let bob = token(&s, "bob")?;
    bind_edit(&s, "ws-b", "bob").await?;
    assert_eq!(call(&s, &bob, Method::POST, &jobs("ws-b"), Some(&training_job("theirs"))).await.0, 201);

    // alice is a member of ws-a only.
    assert_eq!(call(&s, &alice, Method::GET, &jobs("ws-a"), None).await.0, 200);
    for (method, path, body) in [
        (Method::GET, jobs("ws-b"), None),
        (Method::GET, format!("{}/theirs", jobs("ws-b")), None),
        (Method::POST, jobs("ws-b"), Some(training_job("mine"))),
        (Method::DELETE, format!("{}/theirs", jobs("ws-b")), None),
        (Method::GET, format!("{P}/namespaces/ws-b/runs"), None),
        (Method::GET, format!("{P}/auditrecords"), None),
    ] {
        let (code, answer) = call(&s, &alice, method.clone(), &path, body.as_ref()).await;
        assert_eq!(code, 403, "{method} {path}: {answer}");
    }

    // Nobody writes audit records through the API, the admin included.
    let forged = json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "AuditRecord",
        "metadata": {"name": "forged"}, "spec": {"user": "x", "verb": "create", "resource": "Run",
        "name": "x", "time": "2025-01-01T00:00:00Z"}});
    let (code, body) = call(&s, &s.token, Method::POST, &format!("{P}/auditrecords"), Some(&forged)).await;
    assert_eq!(code, 405, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("read-only"), "{body}");
    assert_eq!(call(&s, &alice, Method::POST, &format!("{P}/auditrecords"), Some(&forged)).await.0, 403);
    let records = audit(&s).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let name = {
        let (_, list) = call(&s, &s.token, Method::GET, &format!("{P}/auditrecords"), None).await;
        list["items"][0]["metadata"]["name"].as_str().unwrap_or_default().to_string()
    };
    let one = format!("{P}/auditrecords/{name}");
    assert_eq!(call(&s, &s.token, Method::DELETE, &one, None).await.0, 405);
    assert_eq!(call(&s, &s.token, Method::PATCH, &one, Some(&json!({"spec": {"user": "x"}}))).await.0, 405);
    assert_eq!(records[0].0, "bob");

    // Discovery says so, and lists every platform kind.
    let (code, d) = call(&s, &s.token, Method::GET, P, None).await;
    assert_eq!(code, 200);
    let resources = d["resources"].as_array().cloned().unwrap_or_default();
    let find = |plural: &str| resources.iter().find(|r| r["name"] == plural).cloned().unwrap_or(Value::Null);
    for plural in [
        "resourcegroups",
        "workspaces",
        "trainingjobs",
        "runs",
        "datasets",
        "images",
        "storagemounts",
        "scripts",
        "scriptruns",
        "auditrecords",
    ] {
        assert!(!find(plural).is_null(), "{plural} missing from discovery: {d}");
    }
    assert_eq!(find("auditrecords")["verbs"], json!(["get", "list", "watch"]));
    assert_eq!(find("trainingjobs")["namespaced"], true);
    assert_eq!(find("workspaces")["namespaced"], false);
    Ok(())
}
