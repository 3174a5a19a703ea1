//! The `scale` subresource over HTTP, as `kubectl scale` and an autoscaler
//! use it: GET / PUT / merge and JSON patches of an `autoscaling/v1 Scale`
//! on a Deployment, a resourceVersion precondition that no longer holds
//! (409), replicas out of range (422 naming `spec.replicas`), discovery, the
//! `edit` role, and `metadata.generation` following the spec.

mod common;

use common::{call, TestResult, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "busybox", "command": ["sleep", "60"]}]}}}})
}

#[tokio::test]
async fn a_deployment_scales_through_its_scale_subresource() -> TestResult {
    let s = TestServer::start().await?;
    let t = s.token.clone();
    let (code, created) = call(&s, &t, Method::POST, DEPLOY, Some(&deployment())).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1, "{created}");
    let scale_path = format!("{DEPLOY}/web/scale");

    let (code, scale) = call(&s, &t, Method::GET, &scale_path, None).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!((scale["kind"].as_str(), scale["apiVersion"].as_str()), (Some("Scale"), Some("autoscaling/v1")));
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"]["selector"], "app=web");

    // PUT, as `kubectl scale --current-replicas` does after reading the Scale.
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(3);
    let (code, out) = call(&s, &t, Method::PUT, &scale_path, Some(&put)).await;
    assert_eq!((code, &out["spec"]["replicas"]), (200, &json!(3)), "{out}");
    let (_, d) = call(&s, &t, Method::GET, &format!("{DEPLOY}/web"), None).await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2, "a spec change is a new generation");

    // The same PUT again: its resourceVersion is stale now.
    let (code, out) = call(&s, &t, Method::PUT, &scale_path, Some(&put)).await;
    assert_eq!((code, out["reason"].as_str()), (409, Some("Conflict")), "{out}");

    // A merge patch (`kubectl scale` without preconditions) and a JSON patch.
    let (code, out) = call(&s, &t, Method::PATCH, &scale_path, Some(&json!({"spec": {"replicas": 2}}))).await;
    assert_eq!((code, &out["spec"]["replicas"]), (200, &json!(2)), "{out}");
    let json_patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]);
    let r = s
        .raw(Method::PATCH, &scale_path)
        .header("content-type", "application/json-patch+json")
        .body(json_patch.to_string())
        .send()
        .await?;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await?["spec"]["replicas"], 4);

    // Out of range: 422 naming the field, nothing written.
    let (code, out) = call(&s, &t, Method::PATCH, &scale_path, Some(&json!({"spec": {"replicas": -1}}))).await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(out["details"]["causes"][0]["field"], "spec.replicas", "{out}");
    assert!(out["message"].as_str().is_some_and(|m| m.contains("must be greater than or equal to 0")), "{out}");
    let (_, d) = call(&s, &t, Method::GET, &format!("{DEPLOY}/web"), None).await;
    assert_eq!(d["spec"]["replicas"], 4);

    // Not every kind has one; a missing object is a 404.
    let (code, _) = call(&s, &t, Method::GET, "/api/v1/namespaces/default/configmaps/x/scale", None).await;
    assert_eq!(code, 404);
    let (code, _) = call(&s, &t, Method::GET, &format!("{DEPLOY}/nope/scale"), None).await;
    assert_eq!(code, 404);

    // Discovery lists it as autoscaling/v1 Scale.
    let (_, apps) = call(&s, &t, Method::GET, "/apis/apps/v1", None).await;
    let listed =
        apps["resources"].as_array().and_then(|r| r.iter().find(|r| r["name"] == "deployments/scale")).cloned();
    let listed = listed.unwrap_or_default();
    assert_eq!(
        (listed["group"].as_str(), listed["version"].as_str(), listed["kind"].as_str()),
        (Some("autoscaling"), Some("v1"), Some("Scale")),
        "{apps}"
    );
    assert!(apps["resources"].as_array().is_some_and(|r| r.iter().any(|r| r["name"] == "replicasets/scale")));

    // A user with `edit` in the namespace may scale.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dev-edit"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]});
    let (code, out) = call(
        &s,
        &t,
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        Some(&binding),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let dev = ringleader_auth::identity::issue(s.dir.path(), "dev", &[], "2025-01-01T00:00:00Z")?;
    let (code, out) = call(&s, &dev, Method::PATCH, &scale_path, Some(&json!({"spec": {"replicas": 1}}))).await;
    assert_eq!(code, 200, "{out}");
    let nobody = ringleader_auth::identity::issue(s.dir.path(), "nobody", &[], "2025-01-01T00:00:00Z")?;
    let (code, _) = call(&s, &nobody, Method::PATCH, &scale_path, Some(&json!({"spec": {"replicas": 1}}))).await;
    assert_eq!(code, 403);
    Ok(())
}

#[tokio::test]
async fn a_bare_replica_set_is_refused() -> TestResult {
    let s = TestServer::start().await?;
    let t = s.token.clone();
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bare"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, out) = call(&s, &t, Method::POST, "/apis/apps/v1/namespaces/default/replicasets", Some(&rs)).await;
    assert_eq!(code, 405, "{out}");
    assert!(out["message"].as_str().is_some_and(|m| m.contains("create a Deployment")), "{out}");
    let (code, list) = call(&s, &t, Method::GET, "/apis/apps/v1/namespaces/default/replicasets", None).await;
    assert_eq!((code, list["items"].as_array().map(Vec::len)), (200, Some(0)));
    Ok(())
}
