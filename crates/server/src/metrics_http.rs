//! The API server's request metrics middleware: every request counted and
//! timed by [`ringleader_observability::metrics::api`], and each watch
//! stream counted while its body is open.

use crate::ServerState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use ringleader_observability::metrics::api::classify;
use std::time::Instant;

/// The middleware: outermost, so refused requests (401, 403) count too.
pub async fn track(State(state): State<ServerState>, request: Request, next: Next) -> Response {
    let labels = classify(request.method(), request.uri().path(), request.uri().query());
    let started = Instant::now();
    let response = next.run(request).await;
    let metrics = state.metrics();
    metrics.observe_request(&labels, response.status().as_u16(), started.elapsed().as_secs_f64());
    if labels.verb != "WATCH" || !response.status().is_success() {
        return response;
    }
    // The guard lives in the body stream: dropped when the stream ends or
    // the client goes away.
    let guard = metrics.open_watch(&labels);
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _ = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
