//! A listener serving only `GET /metrics`, for a process that runs no API
//! server: the Kubernetes-mode manager exposes its figures the way
//! kube-scheduler and Volcano's scheduler expose theirs. Two forms:
//! [`serve`], plain HTTP with no authentication (so bound to loopback
//! unless told otherwise), and [`serve_secure`], HTTPS where each scrape's
//! bearer token must be allowed `get` on the non-resource URL `/metrics` by
//! the API server (kube-scheduler's secure port and controller-runtime's
//! `WithAuthenticationAndAuthorization` work the same way; the ClusterRole
//! that grants it is kube's `system:monitoring`). docs/kubernetes.md.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use ringleader_auth::delegated::{bearer, unauthorized, Delegated};
use ringleader_observability::metrics::{Metrics, CONTENT_TYPE};
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// Reads a bind address as kube-scheduler's and controller-runtime's flags
/// take it: `IP:PORT` (`[::1]:PORT` for IPv6), `:PORT` for every IPv4
/// interface, or `0` / empty for none (`Ok(None)`: serving is off). Port 0
/// picks a free port. The error says what was wrong and what is allowed;
/// the caller adds the flag's name.
pub fn parse_bind_address(value: &str) -> Result<Option<SocketAddr>, String> {
    let value = value.trim();
    if value.is_empty() || value == "0" {
        return Ok(None);
    }
    const ALLOWED: &str =
        "want IP:PORT (127.0.0.1:10251, [::1]:10251), :PORT for every interface, or 0 or empty to disable";
    if let Some(port) = value.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| format!("{value:?}: port {port:?} is not 0-65535; {ALLOWED}"))?;
        return Ok(Some(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))));
    }
    value.parse::<SocketAddr>().map(Some).map_err(|_| format!("{value:?} is not an address; {ALLOWED}"))
}

/// Serves `GET /metrics` (and nothing else) over plain HTTP on `listener`
/// until `stop` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, None)).with_graceful_shutdown(stop).await
}

/// Serves `GET /metrics` over TLS (`tls`) on `listener` until `stop`, to
/// callers whose bearer token `authz`'s API server allows `get /metrics`:
/// no token or one it refuses is 401, a token without the right 403.
pub async fn serve_secure(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    tls: Arc<rustls::ServerConfig>,
    authz: Delegated,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    crate::kubelet::serve_tls(listener, router(metrics, Some(authz)), tls, stop).await
}

/// One exposition is encoded at a time, off the async workers: scrapers
/// arriving together wait rather than multiply the work.
fn router(metrics: Metrics, authz: Option<Delegated>) -> Router {
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    Router::new().route(
        "/metrics",
        get(move |headers: HeaderMap| {
            let (metrics, gate, authz) = (metrics.clone(), one_at_a_time.clone(), authz.clone());
            async move {
                if let Some(authz) = authz {
                    if let Err(refused) = may_scrape(&authz, &headers).await {
                        return refused;
                    }
                }
                let _turn = gate.lock().await;
                match tokio::task::spawn_blocking(move || metrics.encode()).await {
                    Ok(Ok(text)) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
                    _ => error("encoding the metrics failed"),
                }
            }
        }),
    )
}

/// `Ok` when the request's token may `get /metrics`; else the answer to send.
async fn may_scrape(authz: &Delegated, headers: &HeaderMap) -> Result<(), Response> {
    let token = bearer(headers).ok_or_else(|| unauthorized().into_response())?;
    let attributes = serde_json::json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}});
    match authz.allows(&token, attributes).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(ringleader_registry::status::ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "the caller may not get the non-resource URL /metrics (grant it as kube's ClusterRole system:monitoring does)",
        )
        .into_response()),
        Err(e) => Err(e.into_response()),
    }
}

fn error(message: &str) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{message}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_read_as_the_flags_of_kube_components() {
        assert_eq!(parse_bind_address(""), Ok(None));
        assert_eq!(parse_bind_address("0"), Ok(None));
        assert_eq!(parse_bind_address("127.0.0.1:10251"), Ok(Some(SocketAddr::from(([127, 0, 0, 1], 10251)))));
        assert_eq!(parse_bind_address(":8080"), Ok(Some(SocketAddr::from(([0, 0, 0, 0], 8080)))));
        assert!(parse_bind_address("[::1]:0").is_ok_and(|a| a.is_some_and(|a| a.is_ipv6() && a.port() == 0)));
        for bad in ["localhost", "127.0.0.1", "127.0.0.1:70000", ":x", "1.2.3:4"] {
            let err = parse_bind_address(bad).expect_err(bad);
            assert!(err.contains(&format!("{bad:?}")) && err.contains("IP:PORT"), "{bad}: {err}");
        }
    }

    #[tokio::test]
    async fn only_get_metrics_is_served() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let metrics = Metrics::for_manager();
        metrics.observe_schedule(2, 0, 0, 0.01);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, metrics, async move {
            let _ = rx.await;
        }));
        let client = reqwest::Client::new();
        let response = client.get(format!("http://{addr}/metrics")).send().await.expect("scrape");
        assert_eq!(response.status(), 200);
        let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(kind.starts_with("text/plain") && kind.contains("version=0.0.4"), "{kind}");
        let text = response.text().await.expect("body");
        assert!(text.contains("scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"ringleader\"} 2\n"));
        let other = client.get(format!("http://{addr}/api/v1/pods")).send().await.expect("other path");
        assert_eq!(other.status(), 404);
        let post = client.post(format!("http://{addr}/metrics")).send().await.expect("post");
        assert_eq!(post.status(), 405);
        let _ = tx.send(());
        let stopped = tokio::time::timeout(std::time::Duration::from_secs(5), server).await;
        assert!(stopped.is_ok_and(|r| r.is_ok_and(|r| r.is_ok())), "stops when told");
    }
}
