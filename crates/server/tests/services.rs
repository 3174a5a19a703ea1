//! Services as kube-apiserver serves them, over a real server and store:
//! the `kubernetes` Service present from the start, cluster IPs allocated
//! from 10.96.0.0/12 (unique, a requested free one honoured, a taken or
//! outside one refused), immutable once set, headless ones, the types
//! refused, and `kubectl get svc`'s columns.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

mod plain;

struct Server(plain::PlainServer);

impl Server {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Value)>,
    ) -> Result<(StatusCode, Value), reqwest::Error> {
        let mut r = self.0.http.request(method, format!("{}{path}", self.0.url)).bearer_auth(&self.0.token);
        if let Some((ct, b)) = body {
            r = r.header("content-type", ct).body(b.to_string());
        }
        let resp = r.send().await?;
        let code = resp.status();
        Ok((code, resp.json::<Value>().await.unwrap_or(Value::Null)))
    }

    async fn create(&self, svc: Value) -> Result<(StatusCode, Value), reqwest::Error> {
        self.call(Method::POST, "/api/v1/namespaces/d/services", Some(("application/json", svc))).await
    }
}

fn svc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn web(name: &str) -> Value {
    svc(name, json!({"selector": {"app": name}, "ports": [{"port": 80}]}))
}

fn in_range(ip: &str) -> bool {
    ip.parse::<Ipv4Addr>().is_ok_and(|ip| {
        let o = ip.octets();
        o[0] == 10 && (96..112).contains(&o[1])
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_service_names_the_api_server_from_the_start() -> TestResult {
    let s = Server(plain::PlainServer::start().await?);
    let port: u16 = s.0.url.rsplit(':').next().unwrap_or_default().trim_end_matches('/').parse()?;
    let (code, k) = s.call(Method::GET, "/api/v1/namespaces/default/services/kubernetes", None).await?;
    assert_eq!(code, StatusCode::OK, "{k}");
    assert_eq!(k["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(k["spec"]["ports"][0], json!({"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}));
    let (_, ep) = s.call(Method::GET, "/api/v1/namespaces/default/endpoints/kubernetes", None).await?;
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port);
    let (_, slice) =
        s.call(Method::GET, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", None).await?;
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
    assert_eq!(slice["metadata"]["labels"]["kubernetes.io/service-name"], "kubernetes");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_get_defaults_and_unique_cluster_ips() -> TestResult {
    let s = Server(plain::PlainServer::start().await?);
    let (code, v) = s.create(web("web")).await?;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let ip = v["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
    assert!(in_range(&ip) && ip != "10.96.0.1", "{ip}");
    assert_eq!(v["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(v["spec"]["type"], "ClusterIP");
    assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(v["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(v["spec"]["sessionAffinity"], "None");
    assert_eq!(v["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(v["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));

    // Created at once, each gets its own.
    let creates = (0..16).map(|i| s.create(web(&format!("w{i}"))));
    let mut ips = BTreeSet::from([ip, "10.96.0.1".to_string()]);
    for r in futures_util::future::join_all(creates).await {
        let (code, v) = r?;
        assert_eq!(code, StatusCode::CREATED, "{v}");
        let ip = v["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
        assert!(in_range(&ip) && ips.insert(ip.clone()), "{ip} allocated twice or outside the range");
    }
    let (_, list) = s.call(Method::GET, "/api/v1/services", None).await?;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(18), "the kubernetes Service and 17");

    let (code, h) = s.create(svc("peers", json!({"clusterIP": "None", "selector": {"app": "x"}}))).await?;
    assert_eq!(code, StatusCode::CREATED, "{h}");
    assert_eq!((h["spec"]["clusterIP"].as_str(), &h["spec"]["clusterIPs"]), (Some("None"), &json!(["None"])));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_cluster_ip_is_honoured_when_free_and_never_changes() -> TestResult {
    let s = Server(plain::PlainServer::start().await?);
    let (code, v) = s.create(svc("a", json!({"clusterIP": "10.96.1.1", "ports": [{"port": 80}]}))).await?;
    assert_eq!((code, v["spec"]["clusterIP"].as_str()), (StatusCode::CREATED, Some("10.96.1.1")), "{v}");

    let (code, v) = s.create(svc("b", json!({"clusterIP": "10.96.1.1", "ports": [{"port": 80}]}))).await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        v["message"],
        "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.1.1\"}: failed to allocate IP 10.96.1.1: provided IP is already allocated"
    );
    let (code, v) = s.create(svc("b", json!({"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}))).await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        v["message"],
        "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.0.0.1\"}: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
    );
    let (code, v) = s.create(svc("b", json!({"clusterIP": "ten", "ports": [{"port": 80}]}))).await?;
    assert_eq!(
        (code, v["details"]["causes"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("spec.clusterIPs[0]"))
    );

    // A replace without the IP keeps it; one changing it is refused, as is a patch.
    let (_, current) = s.call(Method::GET, "/api/v1/namespaces/d/services/a", None).await?;
    let mut replaced = current.clone();
    replaced["spec"].as_object_mut().map(|m| (m.remove("clusterIP"), m.remove("clusterIPs")));
    replaced["metadata"]["labels"] = json!({"v": "2"});
    let (code, v) =
        s.call(Method::PUT, "/api/v1/namespaces/d/services/a", Some(("application/json", replaced))).await?;
    assert_eq!((code, v["spec"]["clusterIP"].as_str()), (StatusCode::OK, Some("10.96.1.1")), "{v}");
    let mut moved = v.clone();
    moved["spec"]["clusterIP"] = json!("10.96.1.2");
    let (code, v) = s.call(Method::PUT, "/api/v1/namespaces/d/services/a", Some(("application/json", moved))).await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        v["message"],
        "Service \"a\" is invalid: spec.clusterIP: Invalid value: \"10.96.1.2\": field is immutable"
    );
    let patch = json!({"spec": {"clusterIP": "10.96.1.3"}});
    let (code, _) =
        s.call(Method::PATCH, "/api/v1/namespaces/d/services/a", Some(("application/merge-patch+json", patch))).await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);

    // kubectl apply's strategic merge adds a port by its number.
    let patch =
        json!({"spec": {"$setElementOrder/ports": [{"port": 80}, {"port": 81}], "ports": [{"name": "b", "port": 81}]}});
    let (code, v) = s
        .call(Method::PATCH, "/api/v1/namespaces/d/services/a", Some(("application/strategic-merge-patch+json", patch)))
        .await?;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["spec"]["ports"].as_array().map(Vec::len), Some(2), "{v}");

    // Deleted, its IP is free again.
    let (code, _) = s.call(Method::DELETE, "/api/v1/namespaces/d/services/a", None).await?;
    assert_eq!(code, StatusCode::OK);
    let (code, v) = s.create(svc("a", json!({"clusterIP": "10.96.1.1", "ports": [{"port": 80}]}))).await?;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unserved_types_are_refused_and_get_svc_prints_kubectls_columns() -> TestResult {
    let s = Server(plain::PlainServer::start().await?);
    for t in ["NodePort", "LoadBalancer", "ExternalName"] {
        let (code, v) = s.create(svc("n", json!({"type": t, "ports": [{"port": 80}]}))).await?;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{t}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "Service \"n\" is invalid: spec.type: Invalid value: \"{t}\": supported values: \"ClusterIP\""
            )),
            "{message}"
        );
    }
    s.create(svc(
        "web",
        json!({"clusterIP": "10.96.2.2", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}),
    ))
    .await?;
    let resp =
        s.0.http
            .get(format!("{}/api/v1/namespaces/d/services", s.0.url))
            .bearer_auth(&s.0.token)
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .send()
            .await?;
    let table: Value = resp.json().await?;
    let names: Vec<&str> =
        table["columnDefinitions"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
    let cells = table["rows"][0]["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        cells.get(..5),
        Some(&[json!("web"), json!("ClusterIP"), json!("10.96.2.2"), json!("<none>"), json!("80/TCP")][..])
    );
    assert_eq!(cells.get(6), Some(&json!("app=web")));
    Ok(())
}
