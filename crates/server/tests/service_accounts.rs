//! ServiceAccounts and their tokens over HTTP: a token from the
//! `serviceaccounts/token` subresource authenticates as the account, RBAC
//! bindings to the account decide what it may do, and the token stops
//! working once it expires or its account or bound pod is gone.

mod common;

use common::{call, TestResult, TestServer};
use reqwest::Method;
use ringleader_auth::sa_token::{Claims, ObjectRef};
use serde_json::{json, Value};

const SA_PATH: &str = "/api/v1/namespaces/team-a/serviceaccounts";

async fn token_for(s: &TestServer, account: &str, spec: Value) -> Result<(u16, Value), String> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    Ok(call(s, &s.token, Method::POST, &format!("{SA_PATH}/{account}/token"), Some(&body)).await)
}

fn token_of(answer: &Value) -> String {
    answer.pointer("/status/token").and_then(Value::as_str).unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_service_account_token_acts_as_its_account_until_it_or_its_pod_is_gone() -> TestResult {
    let s = TestServer::start().await?;
    let admin = s.token.clone();
    let (code, robot) = call(&s, &admin, Method::POST, SA_PATH, Some(&json!({"metadata": {"name": "robot"}}))).await;
    assert_eq!(code, 201, "{robot}");

    // kube-apiserver's bounds on the life of a token.
    let (code, short) = token_for(&s, "robot", json!({"expirationSeconds": 10})).await?;
    assert_eq!(code, 422, "{short}");
    assert_eq!(
        short["message"],
        "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: Invalid value: 10: may not specify a duration less than 10 minutes"
    );
    let (code, missing) = token_for(&s, "ghost", json!({})).await?;
    assert_eq!(code, 404, "{missing}");

    let (code, answer) = token_for(&s, "robot", json!({})).await?;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    let expires = answer["status"]["expirationTimestamp"].as_str().and_then(ringleader_api::time::parse_rfc3339);
    let life = expires.unwrap_or_default() - ringleader_api::time::now();
    assert!((3500.0..=3601.0).contains(&life), "expires in {life}s");
    let token = token_of(&answer);

    // Who it is, as `kubectl auth whoami` asks.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, me) =
        call(&s, &token, Method::POST, "/apis/authentication.k8s.io/v1/selfsubjectreviews", Some(&review)).await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(me["status"]["userInfo"]["username"], "system:serviceaccount:team-a:robot");
    let groups = me["status"]["userInfo"]["groups"].to_string();
    assert!(
        groups.contains("\"system:serviceaccounts\"")
            && groups.contains("\"system:serviceaccounts:team-a\"")
            && groups.contains("system:authenticated"),
        "{groups}"
    );

    // Nothing bound yet: authenticated, not allowed.
    let (code, refused) = call(&s, &token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await;
    assert_eq!(code, 403, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("User \"system:serviceaccount:team-a:robot\" cannot list resource \"pods\""),
        "{refused}"
    );

    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "robot-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "team-a"}]});
    let (code, b) = call(
        &s,
        &admin,
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings",
        Some(&binding),
    )
    .await;
    assert_eq!(code, 201, "{b}");
    let (code, list) = call(&s, &token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await;
    assert_eq!(code, 200, "{list}");
    let (code, _) = call(&s, &token, Method::GET, "/api/v1/namespaces/team-b/pods", None).await;
    assert_eq!(code, 403, "view is bound in team-a only");

    // Pods run as `default` unless they name an account, which must exist.
    let mut pod = common::pod("runner", json!({}));
    pod["spec"]["serviceAccountName"] = json!("robot");
    let (code, created) = call(&s, &admin, Method::POST, "/api/v1/namespaces/team-a/pods", Some(&pod)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["serviceAccount"], "robot");
    let (code, plain) =
        call(&s, &admin, Method::POST, "/api/v1/namespaces/team-a/pods", Some(&common::pod("plain", json!({})))).await;
    assert_eq!((code, plain["spec"]["serviceAccountName"].as_str()), (201, Some("default")), "{plain}");
    let mut ghost = common::pod("haunted", json!({}));
    ghost["spec"]["serviceAccountName"] = json!("ghost");
    let (code, e) = call(&s, &admin, Method::POST, "/api/v1/namespaces/team-a/pods", Some(&ghost)).await;
    assert_eq!(code, 403, "{e}");
    assert_eq!(e["message"], "pods \"haunted\" is forbidden: error looking up service account team-a/ghost: serviceaccount \"ghost\" not found");

    // A token bound to the pod dies with it.
    let bind = |name: &str| json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": name}});
    let (code, e) = token_for(&s, "robot", bind("plain")).await?;
    assert_eq!(code, 400, "plain runs as default: {e}");
    let (code, bound) = token_for(&s, "robot", bind("runner")).await?;
    assert_eq!(code, 201, "{bound}");
    let pod_token = token_of(&bound);
    assert_eq!(call(&s, &pod_token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 200);
    let (code, gone) =
        call(&s, &admin, Method::DELETE, "/api/v1/namespaces/team-a/pods/runner?gracePeriodSeconds=0", None).await;
    assert_eq!(code, 200, "{gone}");
    let (code, e) = call(&s, &pod_token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await;
    assert_eq!((code, e["message"].as_str()), (401, Some("Unauthorized")), "the pod is gone: {e}");

    // Another audience's token is not the API's; an expired one is no one's.
    let (_, vault) = token_for(&s, "robot", json!({"audiences": ["vault"]})).await?;
    assert_eq!(call(&s, &token_of(&vault), Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 401);
    let uid = robot["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let signer = s.state.sa_signer().ok_or("no signer")?;
    let an_hour_ago = ringleader_api::time::now() as i64 - 3600;
    let account = ObjectRef { name: "robot".into(), uid };
    let old = signer.mint(&Claims::new("team-a", account.clone(), &[], an_hour_ago, 600, None, None))?;
    assert_eq!(call(&s, &old, Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 401, "expired");
    let fresh = signer.mint(&Claims::new("team-a", account, &[], an_hour_ago, 7200, None, None))?;
    assert_eq!(
        call(&s, &fresh, Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0,
        200,
        "same key, not expired"
    );

    // The account deleted, then made again: a new uid, the old tokens dead.
    let (code, _) = call(&s, &admin, Method::DELETE, &format!("{SA_PATH}/robot"), None).await;
    assert_eq!(code, 200);
    assert_eq!(call(&s, &token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 401);
    let (code, _) = call(&s, &admin, Method::POST, SA_PATH, Some(&json!({"metadata": {"name": "robot"}}))).await;
    assert_eq!(code, 201);
    assert_eq!(call(&s, &token, Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 401, "uid mismatch");
    let (_, again) = token_for(&s, "robot", json!({})).await?;
    assert_eq!(call(&s, &token_of(&again), Method::GET, "/api/v1/namespaces/team-a/pods", None).await.0, 200);
    Ok(())
}

#[tokio::test]
async fn service_accounts_list_with_kubectls_columns() -> TestResult {
    let s = TestServer::start().await?;
    let (code, _) = call(
        &s,
        &s.token,
        Method::POST,
        SA_PATH,
        Some(&json!({"metadata": {"name": "robot"}, "secrets": [{"name": "x"}]})),
    )
    .await;
    assert_eq!(code, 201);
    let table = s
        .raw(Method::GET, SA_PATH)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await?
        .json::<Value>()
        .await?;
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|d| d["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec!["Name", "Secrets", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "robot");
    assert_eq!(table["rows"][0]["cells"][1], 1);
    Ok(())
}
