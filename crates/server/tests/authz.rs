//! Identities and authorization over a real server and store: users made
//! with `identity::issue` and bound to the built-in roles (view, edit, admin
//! in one namespace; cluster-admin cluster-wide) get exactly what
//! Kubernetes would give them, refusals are worded as kube-apiserver words
//! them, a pod created already bound (the scheduler bypass of issue 12) is
//! refused to everyone but the scheduler, node agents write only their own
//! objects' status, escalation through RBAC objects is refused, and
//! `kubectl auth can-i`'s SelfSubjectAccessReview answers.

mod common;

use common::{call, pod, TestResult, TestServer};
use reqwest::Method;
use ringleader_auth::identity::{self, NODES_GROUP, SCHEDULER_USER};
use serde_json::{json, Value};

fn token(s: &TestServer, user: &str, groups: &[&str]) -> Result<String, String> {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    identity::issue(s.dir.path(), user, &groups, "2025-01-01T00:00:00Z")
}

fn role_binding(ns: &str, name: &str, role_kind: &str, role: &str, subject_kind: &str, subject: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind, "name": subject}],
    })
}

const RB: &str = "/apis/rbac.authorization.k8s.io/v1";

fn pods(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/pods")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_roles_give_what_kubernetes_gives() -> TestResult {
    let s = TestServer::start().await?;
    let admin = s.token.clone();
    let (alice, bob, carol, dave) = (
        token(&s, "alice", &[])?,
        token(&s, "bob", &["team-a-devs"])?,
        token(&s, "carol", &[])?,
        token(&s, "dave", &[])?,
    );
    for (name, role, kind, subject) in [
        ("alice-view", "view", "User", "alice"),
        ("devs-edit", "edit", "Group", "team-a-devs"),
        ("carol-admin", "admin", "User", "carol"),
    ] {
        let b = role_binding("team-a", name, "ClusterRole", role, kind, subject);
        let (code, body) =
            call(&s, &admin, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&b)).await;
        assert_eq!(code, 201, "{body}");
    }
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "dave-cluster-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "User", "name": "dave"}]});
    assert_eq!(call(&s, &admin, Method::POST, &format!("{RB}/clusterrolebindings"), Some(&crb)).await.0, 201);

    // view: reads its namespace, nothing else.
    assert_eq!(call(&s, &alice, Method::GET, &pods("team-a"), None).await.0, 200);
    let (code, body) = call(&s, &alice, Method::GET, &pods("team-b"), None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b""#
    );
    assert_eq!((body["reason"].as_str(), body["code"].as_u64()), (Some("Forbidden"), Some(403)));
    assert_eq!(body["details"]["kind"], "pods");
    let (code, body) = call(&s, &alice, Method::POST, &pods("team-a"), Some(&pod("p", json!({})))).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "team-a""#
    );
    let (code, body) = call(&s, &alice, Method::GET, "/apis/kubeflow.org/v1/pytorchjobs", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"pytorchjobs.kubeflow.org is forbidden: User "alice" cannot list resource "pytorchjobs" in API group "kubeflow.org" at the cluster scope"#
    );
    let (code, body) = call(&s, &alice, Method::GET, "/metrics", None).await;
    assert_eq!((code, body["message"].as_str()), (403, Some(r#"forbidden: User "alice" cannot get path "/metrics""#)));
    // Discovery and OpenAPI are every authenticated user's.
    for path in ["/api", "/api/v1", "/apis", "/apis/kubeflow.org/v1", "/version", "/openapi/v3"] {
        assert_eq!(call(&s, &alice, Method::GET, path, None).await.0, 200, "{path}");
    }

    // edit (through a group): writes workloads in its namespace, not RBAC.
    let (code, body) = call(&s, &bob, Method::POST, &pods("team-a"), Some(&pod("p", json!({})))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(call(&s, &alice, Method::GET, &format!("{}/p", pods("team-a")), None).await.0, 200);
    let b = role_binding("team-a", "sneaky", "ClusterRole", "admin", "User", "bob");
    let (code, body) = call(&s, &bob, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&b)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(call(&s, &bob, Method::DELETE, &format!("{}/p", pods("team-b")), None).await.0, 403);

    // admin: manages bindings in its namespace, but grants only what it holds.
    let b = role_binding("team-a", "erin-edit", "ClusterRole", "edit", "User", "erin");
    assert_eq!(call(&s, &carol, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&b)).await.0, 201);
    let b = role_binding("team-a", "erin-root", "ClusterRole", "cluster-admin", "User", "erin");
    let (code, body) = call(&s, &carol, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&b)).await;
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("not currently held"), "{body}");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "nodes-writer", "namespace": "team-a"},
        "rules": [{"apiGroups": ["ringleader.io"], "resources": ["nodes"], "verbs": ["*"]}]});
    let (code, body) = call(&s, &carol, Method::POST, &format!("{RB}/namespaces/team-a/roles"), Some(&role)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(call(&s, &carol, Method::GET, &format!("{RB}/clusterrolebindings"), None).await.0, 403);

    // cluster-admin: anything, anywhere.
    assert_eq!(call(&s, &dave, Method::GET, &pods("team-b"), None).await.0, 200);
    assert_eq!(call(&s, &dave, Method::GET, "/apis/ringleader.io/v1alpha1/nodes", None).await.0, 200);
    assert_eq!(call(&s, &dave, Method::GET, "/metrics", None).await.0, 200);

    // A binding's role cannot be swapped, and a malformed one is refused.
    let path = format!("{RB}/namespaces/team-a/rolebindings/alice-view");
    let (code, body) =
        call(&s, &admin, Method::PATCH, &path, Some(&json!({"roleRef": {"name": "cluster-admin"}}))).await;
    assert_eq!(code, 422, "{body}");
    let bad = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"},
        "rules": [{"apiGroups": [""], "resources": ["pods"]}]});
    let (code, body) = call(&s, &admin, Method::POST, &format!("{RB}/clusterroles"), Some(&bad)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "rules[0].verbs");

    // Unknown tokens are 401, never 403.
    assert_eq!(call(&s, "not-a-token", Method::GET, &pods("team-a"), None).await.0, 401);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_scheduler_binds_pods() -> TestResult {
    let s = TestServer::start().await?;
    let admin = s.token.clone();
    let scheduler = token(&s, SCHEDULER_USER, &[])?;
    let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"profile": "hgx-a100-8"}});
    assert_eq!(call(&s, &admin, Method::POST, "/apis/ringleader.io/v1alpha1/nodes", Some(&node)).await.0, 201);
    let mut bypass = pod("bypass", json!({}));
    bypass["spec"]["nodeName"] = json!("n1");
    bypass["metadata"]["annotations"] = json!({"ringleader.io/devices": "0"});

    // The issue's bypass, with the only token there was: refused, nothing stored.
    for dry in ["", "?dryRun=All"] {
        let (code, body) = call(&s, &admin, Method::POST, &format!("{}{dry}", pods("default")), Some(&bypass)).await;
        assert_eq!(code, 403, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(r#"pods "bypass" is forbidden: User "ringleader-admin" cannot create resource "pods""#),
            "{message}"
        );
        assert!(message.contains("spec.nodeName") && message.contains(SCHEDULER_USER), "{message}");
        let fields: Vec<&str> =
            body["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str()).collect();
        assert_eq!(fields, ["spec.nodeName", "metadata.annotations[\"ringleader.io/devices\"]"]);
    }
    let mut ascend = pod("ascend", json!({}));
    ascend["metadata"]["annotations"] = json!({"huawei.com/Ascend910": "Ascend910-0"});
    let (code, body) = call(&s, &admin, Method::POST, &pods("default"), Some(&ascend)).await;
    assert_eq!(code, 403, "{body}");
    // Through the bulk apply too.
    let doc = serde_json::to_string(&bypass)?;
    let (code, body) =
        call(&s, &admin, Method::POST, "/apis/ringleader.io/v1alpha1/apply", Some(&serde_json::from_str(&doc)?)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(call(&s, &admin, Method::GET, &format!("{}/bypass", pods("default")), None).await.0, 404);

    // The scheduler binds; others may then relabel the pod but not move it.
    let (code, body) = call(&s, &scheduler, Method::POST, &pods("default"), Some(&bypass)).await;
    assert_eq!(code, 201, "{body}");
    let path = format!("{}/bypass", pods("default"));
    let relabel = json!({"metadata": {"labels": {"team": "a"}}});
    assert_eq!(call(&s, &admin, Method::PATCH, &path, Some(&relabel)).await.0, 200);
    let (code, body) = call(
        &s,
        &admin,
        Method::PATCH,
        &path,
        Some(&json!({"metadata": {"annotations": {"ringleader.io/devices": "1"}}})),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.annotations[\"ringleader.io/devices\"]");
    let unbind = json!({"spec": {"nodeName": null}, "metadata": {"annotations": {"ringleader.io/devices": null}}});
    let (code, body) = call(&s, &admin, Method::PATCH, &path, Some(&unbind)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.nodeName");
    // A PUT of the pod as read back (nodeName unchanged) is fine.
    let (_, current) = call(&s, &admin, Method::GET, &path, None).await;
    let (code, body) = call(&s, &admin, Method::PUT, &path, Some(&current)).await;
    assert_eq!(code, 200, "{body}");
    let (_, current) = call(&s, &admin, Method::GET, &path, None).await;
    assert_eq!(current["metadata"]["annotations"]["ringleader.io/devices"], "0");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_agents_write_only_their_own_status() -> TestResult {
    let s = TestServer::start().await?;
    let scheduler = token(&s, SCHEDULER_USER, &[])?;
    let agent = token(&s, "system:node:n1", &[NODES_GROUP])?;
    let nodes = "/apis/ringleader.io/v1alpha1/nodes";
    for name in ["n1", "n2"] {
        let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": name},
            "spec": {"profile": "hgx-a100-8"}});
        let (code, body) = call(&s, &scheduler, Method::POST, nodes, Some(&node)).await;
        assert_eq!(code, 201, "{body}");
        let mut p = pod(&format!("on-{name}"), json!({}));
        p["spec"]["nodeName"] = json!(name);
        assert_eq!(call(&s, &scheduler, Method::POST, &pods("default"), Some(&p)).await.0, 201);
    }
    let status = json!({"status": {"phase": "Running"}});
    let own = format!("{}/on-n1", pods("default"));
    let (code, body) = call(&s, &agent, Method::PATCH, &own, Some(&status)).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&s, &agent, Method::PATCH, &format!("{}/on-n2", pods("default")), Some(&status)).await;
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("only pods bound to it"), "{body}");
    let (code, body) =
        call(&s, &agent, Method::PATCH, &own, Some(&json!({"spec": {"activeDeadlineSeconds": 5}}))).await;
    assert_eq!(code, 403, "{body}");
    // The CPU and memory samples `kubectl top pods` reads are the agent's to write; other annotations are not.
    let usage = json!({"metadata": {"annotations": {
        "ringleader.io/usage-cpu-nanos": "5", "ringleader.io/usage-memory-bytes": "4096",
        "ringleader.io/usage-at": "100.000", "ringleader.io/usage-prev-cpu-nanos": "0",
        "ringleader.io/usage-prev-at": "99.000"}}});
    let (code, body) = call(&s, &agent, Method::PATCH, &own, Some(&usage)).await;
    assert_eq!(code, 200, "{body}");
    let other = json!({"metadata": {"annotations": {"team": "x"}}});
    assert_eq!(call(&s, &agent, Method::PATCH, &own, Some(&other)).await.0, 403);
    assert_eq!(
        call(&s, &agent, Method::PATCH, &format!("{nodes}/n1"), Some(&json!({"status": {"ready": true}}))).await.0,
        200
    );
    assert_eq!(
        call(&s, &agent, Method::PATCH, &format!("{nodes}/n1"), Some(&json!({"spec": {"stopped": true}}))).await.0,
        403
    );
    assert_eq!(
        call(&s, &agent, Method::PATCH, &format!("{nodes}/n2"), Some(&json!({"status": {"ready": false}}))).await.0,
        403
    );
    assert_eq!(call(&s, &agent, Method::POST, &pods("default"), Some(&pod("mine", json!({})))).await.0, 403);
    assert_eq!(call(&s, &agent, Method::GET, &pods("default"), None).await.0, 200);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_subject_access_reviews_answer_can_i() -> TestResult {
    let s = TestServer::start().await?;
    let alice = token(&s, "alice", &[])?;
    let b = role_binding("team-a", "alice-edit", "ClusterRole", "edit", "User", "alice");
    assert_eq!(
        call(&s, &s.token, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&b)).await.0,
        201
    );
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let review = |attrs: Value| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attrs});
    let ask = |who: String, attrs: Value| {
        let s = &s;
        let body = review(attrs);
        async move { call(s, &who, Method::POST, path, Some(&body)).await }
    };
    let (code, body) = ask(
        alice.clone(),
        json!({"resourceAttributes": {"namespace": "team-a", "verb": "create", "resource": "pods"}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true);
    assert_eq!(body["kind"], "SelfSubjectAccessReview");
    let (_, body) = ask(
        alice.clone(),
        json!({"resourceAttributes": {"namespace": "team-b", "verb": "create", "resource": "pods"}}),
    )
    .await;
    assert_eq!(body["status"]["allowed"], false);
    let (_, body) = ask(
        alice.clone(),
        json!({"resourceAttributes": {"namespace": "team-a", "verb": "create", "group": "rbac.authorization.k8s.io", "resource": "rolebindings"}}),
    )
    .await;
    assert_eq!(body["status"]["allowed"], false);
    let (_, body) = ask(alice.clone(), json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}})).await;
    assert_eq!(body["status"]["allowed"], false);
    let (_, body) = ask(s.token.clone(), json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}})).await;
    assert_eq!(body["status"]["allowed"], true);
    let (code, body) = ask(alice.clone(), json!({})).await;
    assert_eq!(code, 400, "{body}");

    // Discovery lists it, so kubectl finds it.
    let (_, list) = call(&s, &alice, Method::GET, "/apis/authorization.k8s.io/v1", None).await;
    let names: Vec<&str> =
        list["resources"].as_array().into_iter().flatten().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "{list}");
    Ok(())
}

async fn as_(s: &TestServer, token: &str, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> (u16, Value) {
    let method = if body.is_some() { Method::POST } else { Method::GET };
    let mut r = reqwest::Client::new().request(method, format!("{}{path}", s.url)).bearer_auth(token);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.header("content-type", "application/json").body(b.to_string());
    }
    match r.send().await {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
        Err(e) => (0, json!(e.to_string())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_is_authorized_and_reviews_answer_for_whom_it_acts() -> TestResult {
    let s = TestServer::start().await?;
    let (admin, bob) = (s.token.clone(), token(&s, "bob", &[])?);
    let binding = role_binding("team-a", "alice-view", "ClusterRole", "view", "User", "alice");
    assert_eq!(
        call(&s, &admin, Method::POST, &format!("{RB}/namespaces/team-a/rolebindings"), Some(&binding)).await.0,
        201
    );
    let alice = [("Impersonate-User", "alice")];

    // The admin acting as alice gets alice's answers, not its own.
    assert_eq!(as_(&s, &admin, &pods("team-a"), &alice, None).await.0, 200);
    let (code, body) = as_(&s, &admin, &pods("team-b"), &alice, None).await;
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains(r#"User "alice" cannot list"#), "{body}");
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let with_group = [
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "ops"),
        ("Impersonate-Uid", "u-1"),
        ("Impersonate-Extra-Scopes", "read"),
    ];
    let (code, body) =
        as_(&s, &admin, "/apis/authentication.k8s.io/v1/selfsubjectreviews", &with_group, Some(&review)).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "alice");
    assert_eq!(body["status"]["userInfo"]["groups"], json!(["ops", "system:authenticated"]));

    // Bob may not: refused as kube-apiserver words it, whatever he asks.
    let (code, body) = as_(&s, &bob, &pods("team-a"), &alice, None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    let (code, body) = as_(&s, &admin, &pods("team-a"), &[("Impersonate-Group", "ops")], None).await;
    assert_eq!(code, 400, "a group without a user: {body}");

    // Allowed users only, by name: the uid and extras need their own grant.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "imp"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]}]});
    assert_eq!(call(&s, &admin, Method::POST, &format!("{RB}/clusterroles"), Some(&role)).await.0, 201);
    let b = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "imp"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "imp"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]});
    assert_eq!(call(&s, &admin, Method::POST, &format!("{RB}/clusterrolebindings"), Some(&b)).await.0, 201);
    assert_eq!(as_(&s, &bob, &pods("team-a"), &alice, None).await.0, 200);
    let (code, body) = as_(&s, &bob, &pods("team-a"), &[("Impersonate-User", "carol")], None).await;
    assert_eq!(code, 403, "{body}");
    let (code, body) =
        as_(&s, &bob, &pods("team-a"), &[("Impersonate-User", "alice"), ("Impersonate-Uid", "u-1")], None).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains(r#"cannot impersonate resource "uids" in API group "authentication.k8s.io""#),
        "{body}"
    );

    // What alice may do in team-a, and nothing in team-b.
    let rules = |ns: &str| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": ns}});
    let path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let (code, body) = as_(&s, &bob, path, &alice, Some(&rules("team-a"))).await;
    assert_eq!(code, 201, "{body}");
    let listed = |body: &Value, resource: &str| {
        body["status"]["resourceRules"].as_array().into_iter().flatten().any(|r| {
            r["resources"].as_array().into_iter().flatten().any(|x| x == resource)
                && r["verbs"] == json!(["get", "list", "watch"])
        })
    };
    assert!(listed(&body, "pods") && listed(&body, "pods/log"), "{body}");
    assert_eq!(body["status"]["incomplete"], false);
    let (_, body) = as_(&s, &bob, path, &alice, Some(&rules("team-b"))).await;
    assert!(!listed(&body, "pods"), "{body}");
    let (code, body) = as_(&s, &admin, path, &[], Some(&json!({"kind": "Pod"}))).await;
    assert_eq!(code, 400, "{body}");
    Ok(())
}
