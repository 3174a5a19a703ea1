//! A plain-HTTP listener serving only `GET /metrics`, for a process that
//! runs no API server: the Kubernetes-mode manager exposes its figures the
//! way kube-scheduler and Volcano's scheduler expose theirs. It has no
//! authentication of its own, so it binds to loopback unless told otherwise
//! and belongs behind the cluster's usual scrape path (docs/kubernetes.md).

use super::{Metrics, CONTENT_TYPE};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
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

/// Serves `GET /metrics` (and nothing else) on `listener` until `stop`
/// completes. One exposition is encoded at a time, off the async workers:
/// scrapers arriving together wait rather than multiply the work.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let (metrics, gate) = (metrics.clone(), one_at_a_time.clone());
            async move {
                let _turn = gate.lock().await;
                match tokio::task::spawn_blocking(move || metrics.encode()).await {
                    Ok(Ok(text)) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
                    _ => error("encoding the metrics failed"),
                }
            }
        }),
    );
    axum::serve(listener, app).with_graceful_shutdown(stop).await
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
