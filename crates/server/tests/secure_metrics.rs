//! The standalone manager's secure `/metrics` (`ringleader manager
//! --metrics-secure`): HTTPS on loopback, each scrape authorized by the API
//! server for the caller's own token (`get` on the non-resource URL
//! `/metrics`). Here the API server is ringleader's own, with its RBAC: the
//! admin scrapes; a user does once a ClusterRole like kube's
//! `system:monitoring` is bound to it; no token or a forged one is 401.

mod common;

use common::{call, get_as as scrape, TestResult, TestServer};
use reqwest::Method;
use ringleader_auth::delegated::Delegated;
use ringleader_auth::identity;
use ringleader_client::{tls, TlsFiles};
use ringleader_observability::Metrics;
use ringleader_server::metrics_endpoint as endpoint;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_callers_the_api_server_allows_scrape_the_secure_endpoint() -> TestResult {
    let api = TestServer::start().await?;
    let certs = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let bound = listener.local_addr()?;
    let files = TlsFiles::load_or_create(certs.path(), &tls::server_names(bound, None, &[]))?;
    let metrics = Metrics::for_manager();
    metrics.observe_schedule(3, 0, 0, 0.01);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(endpoint::serve_secure(
        listener,
        metrics,
        Arc::new(files.server_config()?),
        Delegated::new(api.client.clone()),
        async move {
            let _ = stopped.await;
        },
    ));
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(files.ca_pem.as_bytes())?)
        .timeout(Duration::from_secs(10))
        .build()?;
    let url = format!("https://{bound}/metrics");

    let (code, text) = scrape(&https, &url, Some(&api.token)).await?;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"ringleader\"} 3\n"));
    assert_eq!(scrape(&https, &url, None).await?.0, 401);
    assert_eq!(scrape(&https, &url, Some("not-a-token")).await?.0, 401);

    let groups: Vec<String> = Vec::new();
    let prometheus = identity::issue(api.dir.path(), "prometheus", &groups, "2025-01-01T00:00:00Z")?;
    let (code, body) = scrape(&https, &url, Some(&prometheus)).await?;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("/metrics"), "the refusal says what is missing: {body}");
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "monitoring"}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus-monitoring"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "monitoring"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "prometheus"}]});
    let (code, body) = call(&api, &api.token, Method::POST, &format!("{rbac}/clusterroles"), Some(&role)).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) =
        call(&api, &api.token, Method::POST, &format!("{rbac}/clusterrolebindings"), Some(&binding)).await;
    assert_eq!(code, 201, "{body}");
    // A refusal is not remembered: the new binding counts at once.
    assert_eq!(scrape(&https, &url, Some(&prometheus)).await?.0, 200);
    // Plain HTTP to the TLS port gets no metrics.
    let plain = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    assert!(scrape(&plain, &format!("http://{bound}/metrics"), Some(&api.token)).await.map_or(true, |(c, _)| c != 200));

    let _ = stop.send(());
    let ended = tokio::time::timeout(Duration::from_secs(5), serving).await;
    assert!(ended.is_ok_and(|r| r.is_ok_and(|r| r.is_ok())), "stops when told");
    Ok(())
}
