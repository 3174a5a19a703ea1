//! `exec`, `attach` and `portforward` of pods that run as CRI containers:
//! the server asks the runtime for a streaming URL (CRI `Exec`, `Attach`,
//! `PortForward`), as kubelet does, and joins the client's upgraded
//! connection to the runtime's streaming server byte for byte, so whatever
//! the two agree on (WebSocket `v5.channel.k8s.io` and older, or SPDY/3.1
//! with kubectl's fallback) is what is spoken. `kubectl cp` is `exec` of
//! `tar`. Pods the process runtime runs are refused with a Status that
//! says so ([`crate::runtime_gaps`]). Pods of a standalone agent are
//! reached through the agent's endpoint (`/exec/{ns}/{pod}/{container}`,
//! `/attach/…`, `/portForward/{ns}/{pod}`, as a kubelet serves them), which
//! does the same against its own runtime.

use crate::ServerState;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use ringleader_cri::{v1, Cri};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::Value;
use std::time::Duration;

/// The subresources served here.
pub const SUBRESOURCES: [&str; 3] = ["exec", "attach", "portforward"];

/// `(namespace, pod, subresource)` of a streaming request's path.
pub fn target(path: &str) -> Option<(String, String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods", name, sub] = segs.as_slice() else { return None };
    (!ns.is_empty() && !name.is_empty() && SUBRESOURCES.contains(sub))
        .then(|| (ns.to_string(), name.to_string(), sub.to_string()))
}

/// The query's values of `key`, in order (`command` repeats).
pub(crate) fn values(query: &str, key: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
        .collect()
}

pub(crate) fn flag(query: &str, key: &str) -> bool {
    values(query, key).iter().any(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

/// The runtime's id a stream of `pod` goes to: its container's, or for
/// `portforward` its sandbox's; refused as kubelet refuses.
async fn runtime_id(
    cri: &mut Cri,
    pod: &Value,
    name: &str,
    sub: &str,
    asked: Option<&str>,
) -> Result<String, ApiError> {
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let first = pod.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or_default();
    if let Some(c) = asked.filter(|c| !c.is_empty() && *c != first) {
        return Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}")));
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    if phase != "Running" {
        return Err(ApiError::bad_request(format!(
            "cannot {sub} into a container in a completed pod; current phase is {phase}"
        )));
    }
    let id = pod.pointer("/status/containerStatuses/0/containerID").and_then(Value::as_str).unwrap_or_default();
    let Some(id) = id.strip_prefix("containerd://").filter(|i| !i.is_empty()) else {
        return Err(crate::runtime_gaps::refusal(&Method::POST, &format!("/api/v1/namespaces/{ns}/pods/{name}/{sub}"))
            .unwrap_or_else(|| ApiError::bad_request(format!("pod {name} runs no container"))));
    };
    if sub != "portforward" {
        return Ok(id.to_string());
    }
    let filter = v1::ContainerFilter { id: id.to_string(), ..Default::default() };
    let list = cri
        .runtime
        .list_containers(v1::ListContainersRequest { filter: Some(filter) })
        .await
        .map_err(|e| ApiError::internal(format!("the container runtime: {}", e.message())))?
        .into_inner()
        .containers;
    list.into_iter()
        .next()
        .map(|c| c.pod_sandbox_id)
        .ok_or_else(|| ApiError::internal(format!("container {id} of pod {name} is gone from the runtime")))
}

/// The CRI runtime's streaming URL for `sub` (`exec`, `attach`,
/// `portforward`) of `pod` with the request's `query`, as kubelet asks for it.
pub async fn stream_url(endpoint: &str, pod: &Value, name: &str, sub: &str, query: &str) -> Result<String, ApiError> {
    let (mut cri, _) = Cri::connect(endpoint, Duration::from_secs(5))
        .await
        .map_err(|e| ApiError::internal(format!("the container runtime: {e}")))?;
    let asked = values(query, "container").into_iter().next();
    let id = runtime_id(&mut cri, pod, name, sub, asked.as_deref()).await?;
    let (stdin, tty) = (flag(query, "stdin"), flag(query, "tty"));
    // kubectl asks for stdout and stderr unless told otherwise; a TTY merges them.
    let stdout = values(query, "stdout").is_empty() || flag(query, "stdout");
    let stderr = !tty && (values(query, "stderr").is_empty() || flag(query, "stderr"));
    let failed = |e: tonic::Status| ApiError::internal(format!("the container runtime: {}", e.message()));
    Ok(match sub {
        "exec" => {
            let cmd = values(query, "command");
            if cmd.is_empty() {
                return Err(ApiError::bad_request("you must specify at least one command for the container"));
            }
            let req = v1::ExecRequest { container_id: id, cmd, tty, stdin, stdout, stderr };
            cri.runtime.exec(req).await.map_err(failed)?.into_inner().url
        }
        "attach" => {
            let req = v1::AttachRequest { container_id: id, stdin, tty, stdout, stderr };
            cri.runtime.attach(req).await.map_err(failed)?.into_inner().url
        }
        _ => {
            let port = values(query, "ports").iter().filter_map(|p| p.parse::<i32>().ok()).collect();
            let req = v1::PortForwardRequest { pod_sandbox_id: id, port };
            cri.runtime.port_forward(req).await.map_err(failed)?.into_inner().url
        }
    })
}

/// Serves one streaming request of the API (already authenticated and
/// authorized): pods of a standalone agent through that agent's endpoint,
/// the embedded agent's from the runtime here.
pub async fn serve(state: &ServerState, mut request: Request, ns: &str, name: &str, sub: &str) -> Response {
    // Owned copies: the request body is not `Sync`, so no borrow of it may
    // live across an await.
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let query = request.uri().query().unwrap_or_default().to_string();
    let key = ObjectKey::new("v1", "Pod", ns, name);
    let k = key.clone();
    let pod = match state.blocking(move |s| s.get(&k)).await {
        Ok(Some(p)) => p.object,
        Ok(None) => return ApiError::from(ringleader_store::StoreError::NotFound(key)).into_response(),
        Err(e) => return e.into_response(),
    };
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_string();
    let agent = match crate::logs::proxy::agent_endpoint(state, &node).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let answer = match (agent, state.cri_endpoint()) {
        (Some(agent), _) => {
            // As kube-apiserver reaches a kubelet: `/exec/{ns}/{pod}/{container}`.
            let container = values(&query, "container").into_iter().next().unwrap_or_else(|| {
                pod.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or_default().to_string()
            });
            let enc = ringleader_client::encode;
            let path = match sub {
                "portforward" => format!("/portForward/{}/{}", enc(ns), enc(name)),
                _ => format!("/{sub}/{}/{}/{}", enc(ns), enc(name), enc(&container)),
            };
            to_agent(&mut request, &agent, &format!("{path}?{query}"), state.proxy_token().as_str()).await
        }
        (None, Some(endpoint)) => match stream_url(endpoint, &pod, name, sub, &query).await {
            Ok(url) => join_url(&mut request, &url).await,
            Err(e) => Err(e),
        },
        (None, None) => Err(crate::runtime_gaps::refusal(&method, &path)
            .unwrap_or_else(|| ApiError::bad_request("no container runtime streams here"))),
    };
    answer.unwrap_or_else(IntoResponse::into_response)
}

/// Joins the client to the runtime's streaming server at `url` (plain HTTP).
pub async fn join_url(request: &mut Request, url: &str) -> Result<Response, ApiError> {
    let uri: axum::http::Uri =
        url.parse().map_err(|e| ApiError::internal(format!("the runtime's streaming URL {url:?}: {e}")))?;
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let client_side = hyper::upgrade::on(&mut *request);
    let headers = forwarded(request.headers());
    let method = request.method().clone();
    let tcp = tokio::net::TcpStream::connect(&authority)
        .await
        .map_err(|e| ApiError::internal(format!("the runtime's streaming server {url}: {e}")))?;
    join(client_side, method, headers, tcp, &authority, &path, None).await
}

/// Joins the client to the agent serving the pod, over TLS trusting the
/// agent's CA alone, as the API server's proxy identity.
async fn to_agent(
    request: &mut Request,
    agent: &crate::logs::proxy::Endpoint,
    path: &str,
    token: &str,
) -> Result<Response, ApiError> {
    use rustls::pki_types::pem::PemObject;
    let unreachable = |e: &dyn std::fmt::Display| ApiError::internal(format!("the agent at {}: {e}", agent.url));
    let uri: axum::http::Uri = agent.url.parse().map_err(|e| unreachable(&e))?;
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_string();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(agent.ca_pem.as_bytes()) {
        roots.add(cert.map_err(|e| unreachable(&e))?).map_err(|e| unreachable(&e))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(ringleader_client::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| unreachable(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server_name = rustls::pki_types::ServerName::try_from(host).map_err(|e| unreachable(&e))?;
    let client_side = hyper::upgrade::on(&mut *request);
    let headers = forwarded(request.headers());
    let method = request.method().clone();
    let tcp = tokio::net::TcpStream::connect(&authority).await.map_err(|e| unreachable(&e))?;
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| unreachable(&e))?;
    join(client_side, method, headers, tls, &authority, path, Some(token)).await
}

/// Headers that carry the protocol negotiation through to the runtime.
fn forwarded(headers: &HeaderMap) -> Vec<(header::HeaderName, HeaderValue)> {
    headers
        .iter()
        .filter(|(name, _)| {
            let n = name.as_str();
            matches!(n, "connection" | "upgrade" | "x-stream-protocol-version" | "origin")
                || n.starts_with("sec-websocket-")
        })
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect()
}

/// Sends the client's upgrade request over `io` and, once both sides have
/// switched protocols, copies bytes both ways until either closes. A
/// refusal (a protocol the other side does not speak) goes back as it came,
/// so the client can fall back (kubectl: SPDY).
async fn join<IO>(
    client_side: hyper::upgrade::OnUpgrade,
    method: Method,
    headers: Vec<(header::HeaderName, HeaderValue)>,
    io: IO,
    authority: &str,
    path: &str,
    token: Option<&str>,
) -> Result<Response, ApiError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let unreachable = |e: &dyn std::fmt::Display| ApiError::internal(format!("streaming through {authority}: {e}"));
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| unreachable(&e))?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "a streaming connection ended");
        }
    });
    let mut upstream = hyper::Request::builder().method(method).uri(path).header(header::HOST, authority);
    for (name, value) in headers {
        upstream = upstream.header(name, value);
    }
    if let Some(t) = token {
        upstream = upstream.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let upstream = upstream.body(http_body_util::Empty::<bytes::Bytes>::new()).map_err(|e| unreachable(&e))?;
    let mut answer = sender.send_request(upstream).await.map_err(|e| unreachable(&e))?;
    if answer.status() != StatusCode::SWITCHING_PROTOCOLS {
        let status = answer.status();
        let headers = answer.headers().clone();
        let body = http_body_util::BodyExt::collect(answer.into_body()).await.map(|b| b.to_bytes()).unwrap_or_default();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        return Ok(response);
    }
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in answer.headers() {
        response.headers_mut().append(name, value.clone());
    }
    let other_side = hyper::upgrade::on(&mut answer);
    tokio::spawn(async move {
        let (client, other) = match (client_side.await, other_side.await) {
            (Ok(c), Ok(o)) => (c, o),
            (Err(e), _) | (_, Err(e)) => {
                tracing::debug!(error = %e, "a streaming upgrade did not complete");
                return;
            }
        };
        let (mut client, mut other) = (TokioIo::new(client), TokioIo::new(other));
        let _ = tokio::io::copy_bidirectional(&mut client, &mut other).await;
    });
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_paths_and_queries_parse() {
        assert_eq!(target("/api/v1/namespaces/ns/pods/p-0/exec"), Some(("ns".into(), "p-0".into(), "exec".into())));
        assert_eq!(target("/api/v1/namespaces/ns/pods/p-0/log"), None);
        assert_eq!(target("/api/v1/namespaces//pods/p/exec"), None);
        let q = "command=sh&command=-c&command=echo+hi%3B+exit+3&stdin=true&tty=false&container=main";
        assert_eq!(values(q, "command"), vec!["sh", "-c", "echo hi; exit 3"]);
        assert!(flag(q, "stdin") && !flag(q, "tty"));
        assert_eq!(values(q, "container"), vec!["main"]);
    }
}
