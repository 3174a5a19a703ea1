//! The HTTPS endpoint a standalone agent serves (`ringleader agent`), in the
//! manner of the kubelet's: `GET /containerLogs/{namespace}/{pod}/{container}`
//! with the log options of [`crate::logs`], read from the agent's own
//! sandboxes. Every request is authorized by the API server: the caller's
//! bearer token asks it, through a SelfSubjectAccessReview, whether it may
//! `get pods/log` of that pod (the API server's proxy identity may; a
//! tenant may for its own namespaces; a pod on the host with no token may
//! not). Answers are cached for a short while.

use crate::logs::{self, LogOptions};
use crate::resources::PODS;
use crate::status::ApiError;
use crate::Client;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an allowed (token, pod) pair is not asked again.
const ALLOWED_FOR: Duration = Duration::from_secs(30);
/// Most cached answers (the cache starts over beyond).
const MOST_CACHED: usize = 4096;

/// Allowed (token digest, namespace, pod) triples and when they were allowed.
type Allowed = HashMap<(String, String, String), Instant>;

#[derive(Clone)]
struct Endpoint {
    api: Client,
    data_dir: Arc<PathBuf>,
    nodes: Arc<Vec<String>>,
    allowed: Arc<Mutex<Allowed>>,
    closing: tokio::sync::watch::Receiver<bool>,
}

/// The routes of the endpoint: logs of pods bound to `nodes`, from the
/// sandboxes under `data_dir`, authorized through `api`.
pub fn router(
    api: Client,
    data_dir: PathBuf,
    nodes: Vec<String>,
    closing: tokio::sync::watch::Receiver<bool>,
) -> Router {
    let state =
        Endpoint { api, data_dir: Arc::new(data_dir), nodes: Arc::new(nodes), allowed: Arc::default(), closing };
    Router::new()
        .route("/containerLogs/{namespace}/{pod}/{container}", get(container_logs))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

/// Serves `router` over TLS on `listener` until `shutdown`.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future + Send + 'static,
) -> std::io::Result<()> {
    let handle = axum_server::Handle::<std::net::SocketAddr>::new();
    let stopper = handle.clone();
    let signal = tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(Some(Duration::from_secs(1)));
    });
    let served = axum_server::Server::from_listener(listener)
        .acceptor(crate::tls_acceptor(tls))
        .handle(handle)
        .serve(router.into_make_service())
        .await;
    signal.abort();
    served
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "))?.trim();
    (!token.is_empty()).then(|| token.to_string())
}

fn unauthorized() -> ApiError {
    ApiError::new(axum::http::StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
}

/// Whether the holder of `token` may read the log of `ns/pod`, as the API
/// server says.
async fn allowed(ep: &Endpoint, token: &str, ns: &str, pod: &str) -> Result<bool, ApiError> {
    let key = (crate::identity::digest(token), ns.to_string(), pod.to_string());
    if let Ok(cache) = ep.allowed.lock() {
        if cache.get(&key).is_some_and(|at| at.elapsed() < ALLOWED_FOR) {
            return Ok(true);
        }
    }
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods", "subresource": "log", "name": pod}},
    });
    let url = format!("{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ep.api.base());
    let response = ep.api.http().post(&url).bearer_auth(token).json(&review).send().await.map_err(|e| {
        ApiError::internal(format!("cannot ask the API server whether the caller may read the log: {e}"))
    })?;
    if response.status().as_u16() == 401 {
        return Err(unauthorized());
    }
    let answer: Value = response
        .json()
        .await
        .map_err(|e| ApiError::internal(format!("the API server's access review could not be read: {e}")))?;
    let ok = answer.pointer("/status/allowed").and_then(Value::as_bool) == Some(true);
    if ok {
        if let Ok(mut cache) = ep.allowed.lock() {
            if cache.len() >= MOST_CACHED {
                cache.clear();
            }
            cache.insert(key, Instant::now());
        }
    }
    Ok(ok)
}

async fn container_logs(
    State(ep): State<Endpoint>,
    UrlPath((ns, pod, container)): UrlPath<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    match logs_of(&ep, &ns, &pod, &container, &query, &headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn logs_of(
    ep: &Endpoint,
    ns: &str,
    pod: &str,
    container: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let token = bearer(headers).ok_or_else(unauthorized)?;
    if !allowed(ep, &token, ns, pod).await? {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "Forbidden",
            format!("the caller may not get pods/log of {ns}/{pod}"),
        ));
    }
    let opts = LogOptions::parse(query, ringleader_api::time::now())?;
    let object = ep.api.get(PODS, ns, pod).await.map_err(|e| match e {
        crate::ClientError::Status { code: 404, .. } => {
            ApiError::new(axum::http::StatusCode::NOT_FOUND, "NotFound", format!("pods {pod:?} not found"))
        }
        e => ApiError::internal(e.to_string()),
    })?;
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if !ep.nodes.iter().any(|n| n == node) {
        return Err(ApiError::bad_request(format!("pod {ns}/{pod} is not bound to a node this agent serves")));
    }
    let first = object.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or_default();
    if container != first {
        return Err(ApiError::bad_request(format!("container {container:?} is not valid for pod {pod:?}")));
    }
    let path = logs::sandbox_log(&ep.data_dir, node, ns, pod)?;
    let (api, ns2, pod2) = (ep.api.clone(), ns.to_string(), pod.to_string());
    let done = move || {
        let (api, ns, pod) = (api.clone(), ns2.clone(), pod2.clone());
        async move {
            match api.get(PODS, &ns, &pod).await {
                Ok(p) => Some(logs::finished(&p)),
                Err(e) if e.is_not_found() => Some(true),
                Err(_) => None,
            }
        }
    };
    logs::serve_file(path, &opts, done, ep.closing.clone()).await
}
