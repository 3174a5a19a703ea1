//! Pod logs: the file the agent named in the pod's `ringleader.io/log-path`
//! annotation, whole, its last lines, or followed until the pod finishes (or
//! is deleted) and everything written has been sent.

use crate::routes::stream_body;
use crate::status::ApiError;
use crate::ServerState;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use ringleader_store::{ObjectKey, StoreError};
use serde_json::Value;
use std::convert::Infallible;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// Annotation the agent writes with the pod's log file.
pub const LOG_PATH_ANNOTATION: &str = "ringleader.io/log-path";
/// How often a followed log is polled for new bytes.
const POLL: Duration = Duration::from_millis(100);
/// Largest chunk sent at once.
const CHUNK: usize = 64 << 10;

fn pod_key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", ns, name)
}

fn finished(pod: &Value) -> bool {
    matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"))
}

/// Byte offset where the last `lines` lines of `data` begin.
fn tail_offset(data: &[u8], lines: u64) -> usize {
    if lines == 0 {
        return data.len();
    }
    // A final newline ends the last line rather than starting an empty one.
    let end = if data.last() == Some(&b'\n') { data.len() - 1 } else { data.len() };
    let mut seen = 0;
    for i in (0..end).rev() {
        if data[i] == b'\n' {
            seen += 1;
            if seen == lines {
                return i + 1;
            }
        }
    }
    0
}

async fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata().await?.len();
    // A truncated file (log rotated) is read again from its start.
    let offset = if len < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(offset)).await?;
    let mut buf = Vec::new();
    file.take(CHUNK as u64).read_to_end(&mut buf).await?;
    Ok(buf)
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log`.
pub async fn serve(
    state: &ServerState,
    ns: &str,
    name: &str,
    follow: bool,
    tail: Option<u64>,
) -> Result<Response, ApiError> {
    let key = pod_key(ns, name);
    let k = key.clone();
    let Some(pod) = state.blocking(move |s| s.get(&k)).await? else {
        return Err(StoreError::NotFound(key).into());
    };
    let pointer = format!("/metadata/annotations/{}", LOG_PATH_ANNOTATION.replace('/', "~1"));
    let Some(path) = pod.object.pointer(&pointer).and_then(Value::as_str).map(PathBuf::from) else {
        return Err(ApiError::bad_request(format!(
            "pod {ns}/{name} has no log yet: it has not been started on a node (no {LOG_PATH_ANNOTATION} annotation)"
        ))
        .with_object("Pod", name));
    };
    let data = match tokio::fs::read(&path).await {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(ApiError::internal(format!("cannot read {}: {e}", path.display()))),
    };
    let start = tail.map(|n| tail_offset(&data, n)).unwrap_or(0);
    let head = Bytes::copy_from_slice(&data[start..]);
    let headers = [(CONTENT_TYPE, "text/plain; charset=utf-8")];
    if !follow {
        return Ok((headers, head).into_response());
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    let offset = data.len() as u64;
    let mut closing = state.closing.clone();
    let state = state.clone();
    tokio::spawn(async move {
        if !head.is_empty() && tx.send(head).await.is_err() {
            return;
        }
        let mut offset = offset;
        let mut last_round = false;
        loop {
            let chunk = match read_from(&path, offset).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(path = %path.display(), "log follow stopped: {e}");
                    return;
                }
            };
            if !chunk.is_empty() {
                offset += chunk.len() as u64;
                if tx.send(Bytes::from(chunk)).await.is_err() {
                    return;
                }
                continue;
            }
            if last_round || *closing.borrow() {
                return;
            }
            let k = key.clone();
            match state.blocking(move |s| s.get(&k)).await {
                // Gone or finished: one more read drains what the process wrote last.
                Ok(None) => last_round = true,
                Ok(Some(p)) if finished(&p.object) => last_round = true,
                Ok(Some(_)) => {}
                Err(_) => return,
            }
            if !last_round {
                tokio::select! {
                    () = tokio::time::sleep(POLL) => {}
                    _ = closing.changed() => return,
                    () = tx.closed() => return,
                }
            }
        }
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((Ok::<_, Infallible>(chunk), rx))
    });
    Ok((headers, stream_body(body)).into_response())
}

#[cfg(test)]
mod tests {
    use super::tail_offset;

    #[test]
    fn tail_counts_lines_from_the_end() {
        let d = b"a\nb\nc\n";
        assert_eq!(&d[tail_offset(d, 2)..], b"b\nc\n");
        assert_eq!(&d[tail_offset(d, 10)..], b"a\nb\nc\n");
        assert_eq!(&d[tail_offset(d, 0)..], b"");
        let d = b"a\nb\nc";
        assert_eq!(&d[tail_offset(d, 1)..], b"c");
    }
}
