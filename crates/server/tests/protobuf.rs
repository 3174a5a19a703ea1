//! Kubernetes' protobuf on the wire, over a real server and store: a body
//! in `application/vnd.kubernetes.protobuf` is stored as its JSON, answered
//! in protobuf when asked (and in JSON for a custom resource), and a bad
//! body is refused as kube-apiserver refuses it — truncated 400, a kind
//! that has no protobuf message 415, a kind other than the path's 400 —
//! with nothing stored.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

mod plain;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bodies_in_and_out_and_bad_ones_refused() -> TestResult {
    let s = plain::PlainServer::start().await?;
    let req = |m: Method, path: &str| s.http.request(m, format!("{}{path}", s.url)).bearer_auth(&s.token);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb", "namespace": "default"},
                    "data": {"a": "1"}});
    let body = ringleader_protobuf::encode(&cm)?;

    // In: stored as its JSON; out: protobuf when Accept names it first.
    let r = req(Method::POST, "/api/v1/namespaces/default/configmaps")
        .header("content-type", PROTOBUF)
        .header("accept", format!("{PROTOBUF}, */*"))
        .body(body.clone())
        .send()
        .await?;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.headers().get("content-type").and_then(|v| v.to_str().ok()), Some(PROTOBUF));
    let created = ringleader_protobuf::decode(&r.bytes().await?)?;
    assert_eq!((created["data"]["a"].as_str(), created["kind"].as_str()), (Some("1"), Some("ConfigMap")));
    let json: Value = req(Method::GET, "/api/v1/namespaces/default/configmaps/pb").send().await?.json().await?;
    assert_eq!(json["data"], json!({"a": "1"}));
    assert!(json["metadata"]["uid"].is_string());
    // A list in protobuf names its items' type once.
    let r = req(Method::GET, "/api/v1/namespaces/default/configmaps").header("accept", PROTOBUF).send().await?;
    let list = ringleader_protobuf::decode(&r.bytes().await?)?;
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "pb");

    // A custom resource is answered in JSON, as kube-apiserver does.
    let r = req(Method::GET, "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs")
        .header("accept", format!("{PROTOBUF}, */*"))
        .send()
        .await?;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json")));

    // Bad bodies: truncated, not enveloped, a kind with no protobuf message,
    // a kind other than the path's.
    let wrong_kind = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pod-or-not"}});
    let cases = [
        (
            "/api/v1/namespaces/default/configmaps",
            body[..body.len() - 3].to_vec(),
            StatusCode::BAD_REQUEST,
            "truncated",
        ),
        ("/api/v1/namespaces/default/configmaps", b"{\"a\": 1}".to_vec(), StatusCode::BAD_REQUEST, "missing the k8s"),
        (
            "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs",
            envelope("kubeflow.org/v1", "PyTorchJob"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "no protobuf message for kubeflow.org/v1 PyTorchJob",
        ),
        (
            "/api/v1/namespaces/default/pods",
            ringleader_protobuf::encode(&wrong_kind)?,
            StatusCode::BAD_REQUEST,
            "does not match the resource of the path",
        ),
    ];
    for (path, bytes, code, needle) in cases {
        let r = req(Method::POST, path).header("content-type", PROTOBUF).body(bytes).send().await?;
        let status = r.status();
        let text = r.text().await?;
        assert_eq!(status, code, "{path}: {text}");
        assert!(text.contains(needle), "{path}: {needle:?} in {text}");
    }
    let pods: Value = req(Method::GET, "/api/v1/namespaces/default/pods").send().await?.json().await?;
    assert_eq!(pods["items"], json!([]), "nothing stored");
    let cms: Value = req(Method::GET, "/api/v1/namespaces/default/configmaps").send().await?.json().await?;
    assert_eq!(cms["items"].as_array().map(Vec::len), Some(1), "only the good ConfigMap");
    Ok(())
}

/// An empty object of `api_version`/`kind` in the `k8s\0` + Unknown
/// envelope, written out by hand (the codec writes only kinds it knows).
fn envelope(api_version: &str, kind: &str) -> Vec<u8> {
    let field = |n: u8, bytes: &[u8]| {
        let mut out = vec![(n << 3) | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    };
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(3, b""), field(4, b"")].concat()
}
