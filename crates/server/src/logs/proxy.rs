//! Logs of pods a standalone agent runs: the agent writes its HTTPS
//! endpoint and the CA of its serving certificate into its Node's
//! `status.agentEndpoint`; the API server asks it for the log with its own
//! identity (`system:ringleader:apiserver`, which may only read logs),
//! trusting that CA alone, and streams the answer through — as
//! kube-apiserver proxies `…/log` to the kubelet.

use super::options::LogOptions;
use crate::encode::stream_body;
use crate::ServerState;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use ringleader_registry::resources::NODES;
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::Value;

/// Where a node's agent serves logs.
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) ca_pem: String,
}

/// The endpoint of the agent serving `node`, if it is a standalone one.
pub(crate) async fn agent_endpoint(state: &ServerState, node: &str) -> Result<Option<Endpoint>, ApiError> {
    if node.is_empty() {
        return Ok(None);
    }
    let key = ObjectKey::new(NODES.api_version, NODES.kind, "", node);
    let Some(n) = state.blocking(move |s| s.get(&key)).await? else { return Ok(None) };
    let field = |f: &str| {
        n.object.pointer(&format!("/status/agentEndpoint/{f}")).and_then(Value::as_str).unwrap_or_default().to_string()
    };
    let (url, ca_pem) = (field("url"), field("caPem"));
    if url.is_empty() || ca_pem.is_empty() {
        return Ok(None);
    }
    Ok(Some(Endpoint { url, ca_pem }))
}

fn unreachable(url: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("Get {url:?}: {why}"))
}

/// Streams the agent's answer for pod `ns/name` (the container is in `opts`).
pub(super) async fn proxy(
    state: &ServerState,
    endpoint: &Endpoint,
    ns: &str,
    name: &str,
    opts: &LogOptions,
) -> Result<Response, ApiError> {
    let container = opts.container.as_deref().unwrap_or_default();
    let url = format!(
        "{}/containerLogs/{}/{}/{}?{}",
        endpoint.url.trim_end_matches('/'),
        ringleader_client::encode(ns),
        ringleader_client::encode(name),
        ringleader_client::encode(container),
        opts.to_query()
    );
    let certs = reqwest::Certificate::from_pem_bundle(endpoint.ca_pem.as_bytes())
        .map_err(|e| unreachable(&url, format!("the agent's status.agentEndpoint.caPem: {e}")))?;
    let mut builder = reqwest::Client::builder().use_rustls_tls().tls_built_in_root_certs(false);
    for cert in certs {
        builder = builder.add_root_certificate(cert);
    }
    let client = builder.build().map_err(|e| unreachable(&url, e))?;
    let response =
        client.get(&url).bearer_auth(state.proxy_token().as_str()).send().await.map_err(|e| unreachable(&url, e))?;
    let code = response.status();
    if !code.is_success() {
        let text = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| text.trim().to_string());
        let code = StatusCode::from_u16(code.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let reason = if code == StatusCode::BAD_REQUEST { "BadRequest" } else { "InternalError" };
        return Err(ApiError::new(code, reason, format!("from the agent of the pod's node: {message}")));
    }
    let mut closing = state.closing.clone();
    let body = response.bytes_stream().take_until(async move {
        let _ = closing.wait_for(|c| *c).await;
    });
    // A broken transfer ends the stream where it broke, as a file read would.
    let body = body
        .take_while(|chunk| std::future::ready(chunk.is_ok()))
        .filter_map(|chunk| std::future::ready(chunk.ok().map(Ok)));
    Ok(([(CONTENT_TYPE, "text/plain; charset=utf-8")], stream_body(body)).into_response())
}
