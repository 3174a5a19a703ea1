//! The HTTPS endpoint a standalone agent serves (`ringleader agent`), in the
//! manner of the kubelet's: `GET /containerLogs/{namespace}/{pod}/{container}`
//! with the log options of [`crate::logs`], read from the agent's own
//! sandboxes. Every request is authorized by the API server: the caller's
//! bearer token asks it, through a SelfSubjectAccessReview, whether it may
//! `get pods/log` of that pod (the API server's proxy identity may; a
//! tenant may for its own namespaces; a pod on the host with no token may
//! not), through [`ringleader_auth::delegated`].
//!
//! Served with [`client_ca_tls`], the endpoint also takes a TLS client
//! certificate signed by a given CA as the API server itself: that is how
//! kube-apiserver reaches a kubelet (its `--kubelet-client-certificate`, no
//! bearer token), so `kubectl logs` through a real kube-apiserver reaches a
//! ringleader agent. Callers without a certificate still use a token.

use crate::logs::{self, LogOptions};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::Router;
use axum_server::tls::TlsInfo;
use ringleader_auth::delegated::{bearer, unauthorized, Delegated};
use ringleader_client::{Client, TlsError, TlsFiles};
use ringleader_registry::resources::PODS;
use ringleader_registry::status::ApiError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
struct Endpoint {
    api: Client,
    data_dir: Arc<PathBuf>,
    nodes: Arc<Vec<String>>,
    authz: Delegated,
    closing: tokio::sync::watch::Receiver<bool>,
    /// The agent's CRI runtime, which `exec`, `attach` and `portForward` stream from.
    cri: Option<Arc<String>>,
}

/// The routes of the endpoint: logs of pods bound to `nodes`, from the
/// sandboxes under `data_dir`, authorized through `api`.
pub fn router(
    api: Client,
    data_dir: PathBuf,
    nodes: Vec<String>,
    closing: tokio::sync::watch::Receiver<bool>,
) -> Router {
    router_with_cri(api, data_dir, nodes, closing, None)
}

/// [`router`], and when the agent's pods are containers of the CRI runtime
/// at `cri`, kubelet's streaming routes for them: `/exec/{ns}/{pod}/{container}`,
/// `/attach/{ns}/{pod}/{container}`, `/portForward/{ns}/{pod}`, authorized
/// as `create pods/exec` (`/attach`, `/portforward`) by the API server.
pub fn router_with_cri(
    api: Client,
    data_dir: PathBuf,
    nodes: Vec<String>,
    closing: tokio::sync::watch::Receiver<bool>,
    cri: Option<String>,
) -> Router {
    let authz = Delegated::new(api.clone());
    let cri = cri.map(Arc::new);
    let state = Endpoint { api, data_dir: Arc::new(data_dir), nodes: Arc::new(nodes), authz, closing, cri };
    Router::new()
        .route("/containerLogs/{namespace}/{pod}/{container}", get(container_logs))
        .route("/exec/{namespace}/{pod}/{container}", container_stream("exec"))
        .route("/attach/{namespace}/{pod}/{container}", container_stream("attach"))
        .route("/portForward/{namespace}/{pod}", get(port_forward).post(port_forward))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

/// A TLS configuration serving `tls`'s certificate that asks callers for a
/// client certificate and accepts one signed by a CA in the PEM file
/// `client_ca` (kube-apiserver's `--client-ca-file` or whichever CA signed its
/// `--kubelet-client-certificate`). Whoever holds such a certificate is
/// taken as the API server and may read the log of any pod bound to the
/// agent's nodes, as a kubelet does for its own API server. A caller without
/// a certificate is served as before (bearer token); a certificate from any
/// other CA fails the handshake.
pub fn client_ca_tls(tls: &TlsFiles, client_ca: &Path) -> Result<rustls::ServerConfig, TlsError> {
    let refused = |message: String| TlsError { path: client_ca.to_path_buf(), message };
    let pem = std::fs::read(client_ca).map_err(|e| refused(format!("cannot read the client CA: {e}")))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| refused(format!("not a PEM certificate: {e}")))?;
        roots.add(cert).map_err(|e| refused(format!("not a usable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(refused("holds no PEM certificate (a CA certificate is expected)".to_string()));
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        ringleader_client::tls::provider(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| refused(format!("not a usable client CA: {e}")))?;
    tls.server_config_verifying(verifier)
}

/// Serves `router` over TLS on `listener` until `shutdown`. A client
/// certificate that `tls` verified in the handshake (only a configuration
/// from [`client_ca_tls`] asks for one) authorizes its holder as the API
/// server.
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
    // Pods reach this port too: a slow or numerous client is bounded as on the API's.
    let server = crate::serve::bounded_tls_server(listener, tls, crate::conn_limits::ConnLimits::default(), handle);
    let served = server.serve(router.into_make_service()).await;
    signal.abort();
    served
}

/// Whether the holder of `token` may read the log of `ns/pod`, as the API
/// server says.
async fn allowed(ep: &Endpoint, token: &str, ns: &str, pod: &str) -> Result<bool, ApiError> {
    let attributes = json!({"resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods", "subresource": "log", "name": pod}});
    ep.authz.allows(token, attributes).await
}

async fn container_logs(
    State(ep): State<Endpoint>,
    UrlPath((ns, pod, container)): UrlPath<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    tls: Option<Extension<Arc<TlsInfo>>>,
) -> Response {
    // rustls keeps a peer certificate only once the verifier accepted it.
    let api_server = tls.is_some_and(|Extension(info)| !info.peer_certificates.is_empty());
    match logs_of(&ep, &ns, &pod, &container, &query, &headers, api_server).await {
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
    api_server: bool,
) -> Result<Response, ApiError> {
    if !api_server && !allowed(ep, &bearer(headers).ok_or_else(unauthorized)?, ns, pod).await? {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "Forbidden",
            format!("the caller may not get pods/log of {ns}/{pod}"),
        ));
    }
    let mut opts = LogOptions::parse(query, ringleader_api::time::now())?;
    let object = bound_pod(ep, ns, pod, Some(container)).await?;
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    let path = logs::run_log(logs::sandbox_log(&ep.data_dir, node, ns, pod)?, &object, container, pod, &mut opts)?;
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

type Tls = Option<Extension<Arc<TlsInfo>>>;

/// The route of `/exec` or `/attach` (`sub`) of a container.
fn container_stream(sub: &'static str) -> axum::routing::MethodRouter<Endpoint> {
    let handler = move |State(ep): State<Endpoint>,
                        UrlPath((ns, pod, container)): UrlPath<(String, String, String)>,
                        tls: Tls,
                        request: axum::extract::Request| async move {
        stream(&ep, request, tls, (&ns, &pod, Some(&container)), sub).await
    };
    get(handler).post(handler)
}

async fn port_forward(
    State(ep): State<Endpoint>,
    UrlPath((ns, pod)): UrlPath<(String, String)>,
    tls: Tls,
    request: axum::extract::Request,
) -> Response {
    stream(&ep, request, tls, (&ns, &pod, None), "portforward").await
}

/// The pod `ns/pod` from the API, refused unless it is bound to a node
/// this agent serves and `container` (when given) is its container.
async fn bound_pod(ep: &Endpoint, ns: &str, pod: &str, container: Option<&str>) -> Result<Value, ApiError> {
    let object = ep.api.get(PODS, ns, pod).await.map_err(|e| match e {
        ringleader_client::ClientError::Status { code: 404, .. } => {
            ApiError::new(axum::http::StatusCode::NOT_FOUND, "NotFound", format!("pods {pod:?} not found"))
        }
        e => ApiError::internal(e.to_string()),
    })?;
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if !ep.nodes.iter().any(|n| n == node) {
        return Err(ApiError::bad_request(format!("pod {ns}/{pod} is not bound to a node this agent serves")));
    }
    let first = object.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or_default();
    if let Some(c) = container.filter(|c| *c != first) {
        return Err(ApiError::bad_request(format!("container {c:?} is not valid for pod {pod:?}")));
    }
    Ok(object)
}

/// One streaming request to a pod this agent runs as a container.
async fn stream(
    ep: &Endpoint,
    mut request: axum::extract::Request,
    tls: Tls,
    (ns, pod, container): (&str, &str, Option<&str>),
    sub: &str,
) -> Response {
    let api_server = tls.is_some_and(|Extension(info)| !info.peer_certificates.is_empty());
    let token = bearer(request.headers());
    let query = request.uri().query().unwrap_or_default().to_string();
    let url = async {
        if !api_server {
            let token = token.ok_or_else(unauthorized)?;
            let attributes = json!({"resourceAttributes": {"namespace": ns, "verb": "create", "resource": "pods", "subresource": sub, "name": pod}});
            if !ep.authz.allows(&token, attributes).await? {
                return Err(ApiError::new(
                    axum::http::StatusCode::FORBIDDEN,
                    "Forbidden",
                    format!("the caller may not create pods/{sub} of {ns}/{pod}"),
                ));
            }
        }
        let Some(cri) = ep.cri.as_deref() else {
            return Err(ApiError::bad_request(format!("this agent runs no container runtime: pods/{sub} is not served")));
        };
        let object = bound_pod(ep, ns, pod, container).await?;
        crate::streams::stream_url(cri, &object, pod, sub, &query).await
    }
    .await;
    match url {
        Ok(url) => crate::streams::join_url(&mut request, &url).await.unwrap_or_else(IntoResponse::into_response),
        Err(e) => e.into_response(),
    }
}
