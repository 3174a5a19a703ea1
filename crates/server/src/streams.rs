//! `exec`, `attach` and `portforward` of pods that run as CRI containers:
//! the server asks the runtime for a streaming URL (CRI `Exec`, `Attach`,
//! `PortForward`), as kubelet does, and joins the client's upgraded
//! connection to the runtime's streaming server byte for byte, so whatever
//! the two agree on (WebSocket `v5.channel.k8s.io` and older, or SPDY/3.1
//! with kubectl's fallback) is what is spoken. `kubectl cp` is `exec` of
//! `tar`. Pods the process runtime runs are refused with a Status that
//! says so ([`crate::runtime_gaps`]).

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
fn values(query: &str, key: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
        .collect()
}

fn flag(query: &str, key: &str) -> bool {
    values(query, key).iter().any(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

/// The pod's running container in the CRI runtime: `(container id, sandbox id)`.
async fn container_of(
    state: &ServerState,
    cri: &mut Cri,
    ns: &str,
    name: &str,
    sub: &str,
    asked: Option<&str>,
) -> Result<String, ApiError> {
    let key = ObjectKey::new("v1", "Pod", ns, name);
    let k = key.clone();
    let Some(pod) = state.blocking(move |s| s.get(&k)).await? else {
        return Err(ringleader_store::StoreError::NotFound(key).into());
    };
    let pod = pod.object;
    let first = pod.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or_default();
    if let Some(c) = asked.filter(|c| !c.is_empty() && *c != first) {
        return Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}")));
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    if phase != "Running" {
        return Err(ApiError::bad_request(
            format!("cannot {sub} into a container in a completed pod; current phase is {phase}").replace(
                "cannot exec into a container in a completed pod",
                "cannot exec into a container in a completed pod",
            ),
        ));
    }
    let id = pod.pointer("/status/containerStatuses/0/containerID").and_then(Value::as_str).unwrap_or_default();
    let Some(id) = id.strip_prefix("containerd://").filter(|i| !i.is_empty()) else {
        return Err(crate::runtime_gaps::refusal(&Method::POST, &format!("/api/v1/namespaces/{ns}/pods/{name}/{sub}"))
            .unwrap_or_else(|| ApiError::bad_request(format!("pod {name} runs no container"))));
    };
    if sub == "portforward" {
        let filter = v1::ContainerFilter { id: id.to_string(), ..Default::default() };
        let list = cri
            .runtime
            .list_containers(v1::ListContainersRequest { filter: Some(filter) })
            .await
            .map_err(|e| ApiError::internal(format!("the container runtime: {}", e.message())))?
            .into_inner()
            .containers;
        return list
            .into_iter()
            .next()
            .map(|c| c.pod_sandbox_id)
            .ok_or_else(|| ApiError::internal(format!("container {id} of pod {name} is gone from the runtime")));
    }
    Ok(id.to_string())
}

/// Serves one streaming request (already authenticated and authorized).
pub async fn serve(state: &ServerState, mut request: Request, ns: &str, name: &str, sub: &str) -> Response {
    // Owned copies: the request body is not `Sync`, so no borrow of it may
    // live across an await.
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let query = request.uri().query().unwrap_or_default().to_string();
    match url_for(state, (&method, &path, &query), ns, name, sub).await {
        Ok(url) => join(&mut request, &url).await.unwrap_or_else(IntoResponse::into_response),
        Err(e) => e.into_response(),
    }
}

/// The runtime's streaming URL for this request.
async fn url_for(
    state: &ServerState,
    (method, path, query): (&Method, &str, &str),
    ns: &str,
    name: &str,
    sub: &str,
) -> Result<String, ApiError> {
    let Some(endpoint) = state.cri_endpoint() else {
        return Err(crate::runtime_gaps::refusal(method, path)
            .unwrap_or_else(|| ApiError::bad_request("no container runtime streams here")));
    };
    let (mut cri, _) = Cri::connect(endpoint, Duration::from_secs(5))
        .await
        .map_err(|e| ApiError::internal(format!("the container runtime: {e}")))?;
    let asked = values(query, "container").into_iter().next();
    let id = container_of(state, &mut cri, ns, name, sub, asked.as_deref()).await?;
    let (stdin, tty) = (flag(query, "stdin"), flag(query, "tty"));
    // kubectl asks for stdout and stderr unless told otherwise; a TTY merges them.
    let stdout = values(query, "stdout").is_empty() || flag(query, "stdout");
    let stderr = !tty && (values(query, "stderr").is_empty() || flag(query, "stderr"));
    let failed = |e: tonic::Status| ApiError::internal(format!("the container runtime: {}", e.message()));
    let url = match sub {
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
    };
    Ok(url)
}

/// Headers that carry the protocol negotiation through to the runtime.
fn forwarded(headers: &HeaderMap) -> impl Iterator<Item = (&header::HeaderName, &HeaderValue)> {
    headers.iter().filter(|(name, _)| {
        let n = name.as_str();
        matches!(n, "connection" | "upgrade" | "x-stream-protocol-version")
            || n.starts_with("sec-websocket-")
            || n == "origin"
    })
}

/// Sends the client's upgrade request to the runtime's `url` and, once
/// both sides have switched protocols, copies bytes both ways until
/// either closes.
async fn join(request: &mut Request, url: &str) -> Result<Response, ApiError> {
    let method = request.method().clone();
    let headers: Vec<(header::HeaderName, HeaderValue)> =
        forwarded(request.headers()).map(|(n, v)| (n.clone(), v.clone())).collect();
    // Taken before any await, for the same reason as in `serve`.
    let client_side = hyper::upgrade::on(request);
    let uri: axum::http::Uri =
        url.parse().map_err(|e| ApiError::internal(format!("the runtime's streaming URL {url:?}: {e}")))?;
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    let unreachable =
        |e: &dyn std::fmt::Display| ApiError::internal(format!("the runtime's streaming server {url}: {e}"));
    let tcp = tokio::net::TcpStream::connect(&authority).await.map_err(|e| unreachable(&e))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| unreachable(&e))?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "streaming connection to the runtime ended");
        }
    });
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut upstream = hyper::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        upstream = upstream.header(name, value);
    }
    let upstream = upstream
        .header(header::HOST, authority.as_str())
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| unreachable(&e))?;
    let mut answer = sender.send_request(upstream).await.map_err(|e| unreachable(&e))?;
    if answer.status() != StatusCode::SWITCHING_PROTOCOLS {
        // Not upgraded (a protocol the runtime does not speak): its answer
        // goes back as it is, so the client can fall back (kubectl: SPDY).
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
    let runtime_side = hyper::upgrade::on(&mut answer);
    tokio::spawn(async move {
        let (client, runtime) = match (client_side.await, runtime_side.await) {
            (Ok(c), Ok(r)) => (c, r),
            (Err(e), _) | (_, Err(e)) => {
                tracing::debug!(error = %e, "a streaming upgrade did not complete");
                return;
            }
        };
        let (mut client, mut runtime) = (TokioIo::new(client), TokioIo::new(runtime));
        let _ = tokio::io::copy_bidirectional(&mut client, &mut runtime).await;
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
