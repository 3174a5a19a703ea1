//! Server-side apply and managedFields over HTTP, as kubectl and client-go
//! use them: conflicts between managers, forcing, removal of what a
//! manager stopped applying, and updates taking ownership.

mod common;

use common::TestServer;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use reqwest::Method;
use serde_json::{json, Value};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec})
}

fn full(replicas: u32, extra_label: bool) -> Value {
    let mut labels = json!({"app": "web"});
    if extra_label {
        labels["tier"] = json!("front");
    }
    deployment(json!({"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}))
}

async fn apply(s: &TestServer, query: &str, body: &Value) -> Result<(u16, Value), reqwest::Error> {
    let r = s
        .raw(Method::PATCH, &format!("{DEPLOY}/web?{query}"))
        .header(CONTENT_TYPE, "application/apply-patch+yaml")
        .body(body.to_string())
        .send()
        .await?;
    Ok((r.status().as_u16(), r.json().await?))
}

fn managers(o: &Value) -> Vec<(String, String)> {
    o["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| (e["manager"].as_str().unwrap_or("").into(), e["operation"].as_str().unwrap_or("").into()))
                .collect()
        })
        .unwrap_or_default()
}

fn fields_of<'a>(o: &'a Value, manager: &str) -> &'a Value {
    o["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager))
        .map_or(&Value::Null, |e| &e["fieldsV1"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managers_conflict_force_and_prune() -> TestResult {
    let s = TestServer::start().await?;

    // An apply names its manager.
    let (code, out) = apply(&s, "", &full(2, true)).await?;
    assert_eq!(code, 422, "{out}");
    assert!(out["message"].as_str().unwrap_or("").contains("fieldManager: Required value"), "{out}");

    // A applies (creating the object), B's different replicas conflict.
    let (code, out) = apply(&s, "fieldManager=a", &full(2, true)).await?;
    assert_eq!(code, 201, "{out}");
    assert_eq!(managers(&out), [("a".to_string(), "Apply".to_string())]);
    assert_eq!(fields_of(&out, "a")["f:spec"]["f:replicas"], json!({}));
    let (code, out) = apply(&s, "fieldManager=b", &deployment(json!({"replicas": 3}))).await?;
    assert_eq!(code, 409, "{out}");
    assert_eq!(out["reason"], "Conflict");
    assert_eq!(out["message"], "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
    assert_eq!(
        out["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".spec.replicas"}])
    );
    // Forced, B takes the field.
    let (code, out) = apply(&s, "fieldManager=b&force=true", &deployment(json!({"replicas": 3}))).await?;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(fields_of(&out, "b"), &json!({"f:spec": {"f:replicas": {}}}));
    assert!(fields_of(&out, "a")["f:spec"].get("f:replicas").is_none(), "{out}");

    // A stops applying a label it applied: it is removed; replicas, now B's, stays.
    let mut without = full(2, false);
    without["spec"].as_object_mut().ok_or("spec")?.remove("replicas");
    let (code, out) = apply(&s, "fieldManager=a", &without).await?;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["spec"]["template"]["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(out["spec"]["replicas"], 3);

    // An edit (an Update by kubectl-edit) takes replicas from B.
    let r = s
        .raw(Method::PATCH, &format!("{DEPLOY}/web?fieldManager=kubectl-edit"))
        .header(CONTENT_TYPE, "application/merge-patch+json")
        .body(json!({"spec": {"replicas": 5}}).to_string())
        .send()
        .await?;
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await?;
    assert!(managers(&out).contains(&("kubectl-edit".to_string(), "Update".to_string())), "{out}");
    assert!(!managers(&out).iter().any(|(m, _)| m == "b"), "{out}");
    let (code, out) = apply(&s, "fieldManager=b", &deployment(json!({"replicas": 3}))).await?;
    assert_eq!(code, 409, "{out}");
    assert_eq!(
        out["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas"
    );

    // Reads carry the managers; applying the same again changes nothing.
    let got: Value = s.raw(Method::GET, &format!("{DEPLOY}/web")).send().await?.json().await?;
    assert_eq!(managers(&got).len(), 2, "{got}");
    let (code, again) = apply(&s, "fieldManager=a", &without).await?;
    assert_eq!(code, 200);
    assert_eq!(again["metadata"]["resourceVersion"], got["metadata"]["resourceVersion"]);

    // Dry runs answer without writing.
    let (code, dry) = apply(&s, "fieldManager=c&force=true&dryRun=All", &deployment(json!({"replicas": 9}))).await?;
    assert_eq!((code, &dry["spec"]["replicas"]), (200, &json!(9)));
    let got: Value = s.raw(Method::GET, &format!("{DEPLOY}/web")).send().await?.json().await?;
    assert_eq!(got["spec"]["replicas"], 5);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_record_their_manager() -> TestResult {
    let s = TestServer::start().await?;
    // Without fieldManager the manager is the user agent's program.
    let r = s
        .raw(Method::POST, DEPLOY)
        .header(USER_AGENT, "kubectl/v1.32.0 (linux/amd64) kubernetes/abc")
        .json(&full(1, false))
        .send()
        .await?;
    assert_eq!(r.status(), 201);
    let out: Value = r.json().await?;
    assert_eq!(managers(&out), [("kubectl".to_string(), "Update".to_string())]);
    assert_eq!(fields_of(&out, "kubectl")["f:spec"]["f:replicas"], json!({}));

    // Garbage managedFields from a client are not stored; [] resets them.
    let mut put = out.clone();
    put["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Steal", "fieldsV1": 1}]);
    let r = s.raw(Method::PUT, &format!("{DEPLOY}/web?fieldManager=editor")).json(&put).send().await?;
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await?;
    assert_eq!(managers(&out), [("kubectl".to_string(), "Update".to_string())]);
    let r = s
        .raw(Method::PATCH, &format!("{DEPLOY}/web"))
        .header(CONTENT_TYPE, "application/merge-patch+json")
        .body(json!({"metadata": {"managedFields": []}}).to_string())
        .send()
        .await?;
    let out: Value = r.json().await?;
    assert!(out["metadata"].get("managedFields").is_none(), "{out}");

    // force is an apply's option only; a manager's name is bounded.
    let r = s
        .raw(Method::PATCH, &format!("{DEPLOY}/web?force=true"))
        .header(CONTENT_TYPE, "application/merge-patch+json")
        .body("{}")
        .send()
        .await?;
    assert_eq!(r.status(), 422);
    let long = "m".repeat(129);
    let r = s.raw(Method::PUT, &format!("{DEPLOY}/web?fieldManager={long}")).json(&full(1, false)).send().await?;
    assert_eq!(r.status(), 422);

    // `ringleader apply` records its writes too.
    s.client.apply_documents("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bulk}\ndata: {a: \"1\"}\n").await?;
    let got: Value = s.raw(Method::GET, "/api/v1/namespaces/default/configmaps/bulk").send().await?.json().await?;
    assert_eq!(managers(&got), [("ringleader-apply".to_string(), "Update".to_string())]);
    assert_eq!(fields_of(&got, "ringleader-apply"), &json!({"f:data": {".": {}, "f:a": {}}}));
    Ok(())
}
