//! Pod logs (`GET …/pods/{name}/log`) with kubelet's options: `container`,
//! `previous`, `sinceSeconds`/`sinceTime`, `timestamps`, `tailLines`,
//! `limitBytes`, `follow` (until the pod finishes or is deleted and
//! everything written has been sent).
//!
//! The file read is derived from the data dir, the pod's node, namespace and
//! name (`<data-dir>/nodes/<node>/pods/<ns>_<pod>/log`, the agent's sandbox).
//! The `ringleader.io/log-path` annotation is user-writable: it is only
//! consulted when the server was not told the data dir, and only when it
//! is that same sandbox path. Line stamps come from the agent's `log.times`
//! beside the log.

use crate::encode::stream_body;
use crate::ServerState;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use ringleader_api::time::parse_rfc3339;
use ringleader_registry::status::ApiError;
use ringleader_store::{ObjectKey, StoreError};
use serde_json::Value;
use std::convert::Infallible;
use std::io::SeekFrom;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// Annotation the agent writes with the pod's log file.
pub const LOG_PATH_ANNOTATION: &str = "ringleader.io/log-path";
/// Annotation naming the container `kubectl logs` reads when none is given.
pub const DEFAULT_CONTAINER_ANNOTATION: &str = "kubectl.kubernetes.io/default-container";
/// Suffix of the agent's file of line stamps beside a log.
const TIMES_SUFFIX: &str = ".times";
/// Suffix of the previous run's log beside a pod's (the agent's name for it).
const PREVIOUS_SUFFIX: &str = ".previous";
/// How often a followed log is polled for new bytes.
const POLL: Duration = Duration::from_millis(100);
/// Largest chunk sent at once.
const CHUNK: usize = 64 << 10;

fn pod_key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", ns, name)
}

pub(crate) fn finished(pod: &Value) -> bool {
    matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"))
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The container whose log is asked for, checked as kube-apiserver does.
fn container_of(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let names: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|c| c.iter().map(|c| s(c, "/name")).collect())
        .unwrap_or_default();
    if let Some(c) = asked {
        if !names.contains(&c) {
            return Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}")));
        }
        return Ok(c.to_string());
    }
    match names.as_slice() {
        [] => Err(ApiError::bad_request(format!("pod {name} does not have a container"))),
        [one] => Ok(one.to_string()),
        many => {
            let pointer = format!("/metadata/annotations/{}", DEFAULT_CONTAINER_ANNOTATION.replace('/', "~1"));
            match pod.pointer(&pointer).and_then(Value::as_str) {
                Some(d) if many.contains(&d) => Ok(d.to_string()),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    many.join(" ")
                ))),
            }
        }
    }
}

fn plain_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

/// The tail every pod log path has: `nodes/<node>/pods/<ns>_<pod>/log`
/// (the agent's sandbox layout).
fn sandbox_tail(node: &str, ns: &str, pod: &str) -> Option<[String; 5]> {
    let ns = if ns.is_empty() { "default" } else { ns };
    if !(plain_name(node) && plain_name(ns) && plain_name(pod)) {
        return None;
    }
    Some(["nodes".into(), node.into(), "pods".into(), format!("{ns}_{pod}"), "log".into()])
}

fn ends_with(path: &Path, tail: &[String; 5]) -> bool {
    let parts: Vec<&std::ffi::OsStr> = path.components().map(Component::as_os_str).collect();
    parts.len() > tail.len() && parts[parts.len() - tail.len()..].iter().zip(tail).all(|(a, b)| *a == b.as_str())
}

/// A pod's log in the sandboxes under `data_dir`, or why its names cannot
/// name one.
pub(crate) fn sandbox_log(data_dir: &Path, node: &str, ns: &str, pod: &str) -> Result<PathBuf, ApiError> {
    let Some(tail) = sandbox_tail(node, ns, pod) else {
        return Err(ApiError::bad_request(format!(
            "pod {pod} has no log: spec.nodeName {node:?} and the pod's name cannot name a sandbox"
        )));
    };
    Ok(tail.iter().fold(data_dir.to_path_buf(), |p, part| p.join(part)))
}

/// The pod's log file: under the data dir when the server knows it; else the
/// agent's annotation, only when it is that same sandbox path (no `..`, no
/// symbolic link leading elsewhere).
fn log_path(data_dir: Option<&Path>, pod: &Value, ns: &str, name: &str) -> Result<PathBuf, ApiError> {
    let node = s(pod, "/spec/nodeName");
    let Some(tail) = sandbox_tail(node, ns, name) else {
        return Err(ApiError::bad_request(format!(
            "pod {name} has no log: spec.nodeName {node:?} and the pod's name cannot name a sandbox"
        )));
    };
    if let Some(dir) = data_dir {
        return Ok(tail.iter().fold(dir.to_path_buf(), |p, part| p.join(part)));
    }
    let pointer = format!("/metadata/annotations/{}", LOG_PATH_ANNOTATION.replace('/', "~1"));
    let path = PathBuf::from(s(pod, &pointer));
    let lexical_ok = !path.as_os_str().is_empty()
        && path.components().all(|c| matches!(c, Component::RootDir | Component::CurDir | Component::Normal(_)))
        && ends_with(&path, &tail);
    let resolved_ok = match std::fs::canonicalize(&path) {
        Ok(real) => {
            ends_with(&real, &tail)
                && real.parent() == path.parent().and_then(|p| std::fs::canonicalize(p).ok()).as_deref()
        }
        Err(_) => true,
    };
    if lexical_ok && resolved_ok {
        Ok(path)
    } else {
        Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "pod {name}: annotation {LOG_PATH_ANNOTATION} {:?} is not the pod's sandbox log (…/{})",
                path.display(),
                tail.join("/")
            ),
        ))
    }
}

/// The stamps file beside a log.
fn times_of(log: &Path) -> PathBuf {
    let mut name = log.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(TIMES_SUFFIX);
    log.with_file_name(name)
}

/// A log's bytes split into lines (each with its `\n`, the last maybe
/// without), paired with the stamp of each line when the agent wrote one.
fn lines<'a>(data: &'a [u8], stamps: &'a str) -> Vec<(&'a [u8], Option<&'a str>)> {
    let mut stamps = stamps.lines();
    data.split_inclusive(|b| *b == b'\n').map(|line| (line, stamps.next())).collect()
}

/// The part of a log a request selects: since → tail → timestamps →
/// limitBytes, in kubelet's order.
fn render(data: &[u8], stamps: &str, opts: &LogOptions) -> Vec<u8> {
    let mut selected = lines(data, stamps);
    if let Some(since) = opts.since {
        // A line without a stamp cannot be placed in time; it is kept.
        selected.retain(|(_, stamp)| stamp.and_then(parse_rfc3339).is_none_or(|t| t >= since));
    }
    if let Some(n) = opts.tail_lines {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let skip = selected.len().saturating_sub(n);
        selected.drain(..skip);
    }
    let mut out = Vec::new();
    for (line, stamp) in selected {
        if opts.timestamps {
            if let Some(t) = stamp {
                out.extend_from_slice(t.as_bytes());
                out.push(b' ');
            }
        }
        out.extend_from_slice(line);
    }
    if let Some(limit) = opts.limit_bytes {
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    out
}

async fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata().await?.len();
    // A truncated file (the pod started over) is read again from its start.
    let offset = if len < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(offset)).await?;
    let mut buf = Vec::new();
    file.take(CHUNK as u64).read_to_end(&mut buf).await?;
    Ok(buf)
}

async fn read_all(path: &Path) -> Result<Vec<u8>, ApiError> {
    match tokio::fs::read(path).await {
        Ok(d) => Ok(d),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(ApiError::internal(format!("cannot read {}: {e}", path.display()))),
    }
}

/// What a followed stream still owes: new bytes of the log, stamped when
/// asked, until `limitBytes` is spent.
struct Follower {
    log: PathBuf,
    times: PathBuf,
    offset: u64,
    times_offset: u64,
    pending_stamps: std::collections::VecDeque<String>,
    line_start: bool,
    timestamps: bool,
    left: Option<u64>,
}

impl Follower {
    /// The next piece to send (empty: nothing new yet).
    async fn next(&mut self) -> std::io::Result<Vec<u8>> {
        let chunk = read_from(&self.log, self.offset).await?;
        if chunk.is_empty() {
            return Ok(chunk);
        }
        self.offset += chunk.len() as u64;
        let mut out = Vec::with_capacity(chunk.len());
        if self.timestamps {
            let new = read_from(&self.times, self.times_offset).await?;
            self.times_offset += new.len() as u64;
            // Stamps are written before their lines, whole lines at a time.
            self.pending_stamps.extend(String::from_utf8_lossy(&new).lines().map(str::to_string));
            for b in &chunk {
                if self.line_start {
                    if let Some(t) = self.pending_stamps.pop_front() {
                        out.extend_from_slice(t.as_bytes());
                        out.push(b' ');
                    }
                }
                out.push(*b);
                self.line_start = *b == b'\n';
            }
        } else {
            out = chunk;
        }
        if let Some(left) = &mut self.left {
            let keep = usize::try_from(*left).unwrap_or(usize::MAX).min(out.len());
            out.truncate(keep);
            *left -= keep as u64;
        }
        Ok(out)
    }

    fn spent(&self) -> bool {
        self.left == Some(0)
    }
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log`.
pub async fn serve(state: &ServerState, ns: &str, name: &str, opts: LogOptions) -> Result<Response, ApiError> {
    let key = pod_key(ns, name);
    let k = key.clone();
    let Some(pod) = state.blocking(move |s| s.get(&k)).await? else {
        return match kept(state, ns, name, opts).await? {
            Some(answer) => Ok(answer),
            None => Err(StoreError::NotFound(key).into()),
        };
    };
    let pod = pod.object;
    let container = container_of(&pod, name, opts.container.as_deref())?;
    let first = s(&pod, "/spec/containers/0/name");
    let status = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| s(c, "/name") == container));
    // A failed run waiting out its restart back-off (CrashLoopBackOff) keeps
    // its log: kubelet serves the last terminated run then, with or without
    // `previous`, as here.
    let last_run = status.and_then(|c| c.pointer("/lastState/terminated")).is_some_and(Value::is_object);
    // The previous run's log is there whatever this run is doing.
    let waiting =
        status.map(|c| s(c, "/state/waiting/reason")).filter(|r| !r.is_empty() && !last_run && !opts.previous);
    let never_started = s(&pod, "/spec/nodeName").is_empty() || status.is_none();
    if container != first || waiting.is_some() || (never_started && !finished(&pod)) {
        let reason = waiting.unwrap_or("ContainerCreating");
        return Err(ApiError::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: {reason}"
        )));
    }
    let node = s(&pod, "/spec/nodeName").to_string();
    if let Some(endpoint) = agent_endpoint(state, &node).await? {
        let opts = LogOptions { container: Some(container), ..opts };
        return proxy(state, &endpoint, ns, name, &opts).await;
    }
    let mut opts = opts;
    let path = run_log(log_path(state.data_dir(), &pod, ns, name)?, &pod, &container, name, &mut opts)?;
    let closing = state.closing.clone();
    let state = state.clone();
    let done = move || {
        let state = state.clone();
        let key = key.clone();
        async move {
            match state.blocking(move |s| s.get(&key)).await {
                Ok(None) => Some(true),
                Ok(Some(p)) => Some(finished(&p.object)),
                Err(_) => None,
            }
        }
    };
    serve_file(path, &opts, done, closing).await
}

/// The node a platform Run's record (`status.pods[].node`) says the deleted
/// pod `ns/name` ran on: a run's pods go when it is stopped or its job
/// deleted, and the seeds keep the logs of finished and stopped runs.
async fn kept_on(state: &ServerState, ns: &str, name: &str) -> Result<Option<String>, ApiError> {
    let selector = ringleader_store::Selector::kind("platform.ringleader.io/v1alpha1", "Run").in_namespace(ns);
    let (runs, _) = state.blocking(move |s| s.list(&selector)).await?;
    let node = runs.iter().find_map(|r| {
        let pods = r.object.pointer("/status/pods").and_then(Value::as_array)?;
        let entry = pods.iter().find(|p| s(p, "/name") == name)?;
        Some(s(entry, "/node").to_string()).filter(|n| !n.is_empty())
    });
    Ok(node)
}

/// The log of a deleted pod of a platform Run, as its agent kept it in the
/// pod's sandbox (the agent caps a log's size as it writes it, so what is
/// kept is bounded); `None` when no Run lists the pod or nothing was kept.
/// Never followed: the pod has ended.
async fn kept(state: &ServerState, ns: &str, name: &str, opts: LogOptions) -> Result<Option<Response>, ApiError> {
    let Some(node) = kept_on(state, ns, name).await? else { return Ok(None) };
    let opts = LogOptions { follow: false, previous: false, ..opts };
    if let Some(dir) = state.data_dir() {
        let Some(tail) = sandbox_tail(&node, ns, name) else { return Ok(None) };
        let path = tail.iter().fold(dir.to_path_buf(), |p, part| p.join(part));
        if !path.is_file() {
            return Ok(None);
        }
        let answer = serve_file(path, &opts, || async { Some(true) }, state.closing.clone()).await?;
        return Ok(Some(answer));
    }
    match agent_endpoint(state, &node).await? {
        Some(endpoint) => proxy(state, &endpoint, ns, name, &opts).await.map(Some),
        None => Ok(None),
    }
}

/// The log file of the run `opts` asks for, given the pod's current `log`.
/// A failed run waiting out its restart back-off (CrashLoopBackOff) is
/// served with or without `previous`, as kubelet does; otherwise a restart
/// here is a new pod of the same name, and `previous` is the run of the pod
/// before it, kept beside the log by the agent (never followed: it ended).
pub(crate) fn run_log(
    log: PathBuf,
    pod: &Value,
    container: &str,
    name: &str,
    opts: &mut LogOptions,
) -> Result<PathBuf, ApiError> {
    let in_back_off = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| s(c, "/name") == container))
        .and_then(|c| c.pointer("/lastState/terminated"))
        .is_some_and(Value::is_object);
    if !opts.previous || in_back_off {
        return Ok(log);
    }
    let mut previous = log.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    previous.push(PREVIOUS_SUFFIX);
    let previous = log.with_file_name(previous);
    if !previous.is_file() {
        return Err(ApiError::bad_request(format!(
            "previous terminated container {container:?} in pod {name:?} not found"
        )));
    }
    opts.follow = false;
    Ok(previous)
}

/// Serves a log file with `opts`; a followed one until `done` says the pod
/// finished or is gone (`None`: it cannot tell, the stream ends) and one
/// last read found nothing new, or until `closing` turns true.
pub async fn serve_file<F, Fut>(
    path: PathBuf,
    opts: &LogOptions,
    mut done: F,
    mut closing: tokio::sync::watch::Receiver<bool>,
) -> Result<Response, ApiError>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<bool>> + Send,
{
    let times = times_of(&path);
    let data = read_all(&path).await?;
    let stamps = String::from_utf8_lossy(&read_all(&times).await?).into_owned();
    let head = render(&data, &stamps, opts);
    let headers = [(CONTENT_TYPE, "text/plain; charset=utf-8")];
    if !opts.follow || opts.limit_bytes.is_some_and(|l| head.len() as u64 >= l) {
        return Ok((headers, Bytes::from(head)).into_response());
    }
    let mut follower = Follower {
        times_offset: stamps.len() as u64,
        pending_stamps: stamps.lines().skip(lines(&data, "").len()).map(str::to_string).collect(),
        log: path,
        times,
        offset: data.len() as u64,
        line_start: data.last().is_none_or(|b| *b == b'\n'),
        timestamps: opts.timestamps,
        left: opts.limit_bytes.map(|l| l - head.len() as u64),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        if !head.is_empty() && tx.send(Bytes::from(head)).await.is_err() {
            return;
        }
        let mut last_round = false;
        loop {
            let chunk = match follower.next().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(path = %follower.log.display(), "log follow stopped: {e}");
                    return;
                }
            };
            if !chunk.is_empty() {
                if tx.send(Bytes::from(chunk)).await.is_err() || follower.spent() {
                    return;
                }
                continue;
            }
            if last_round || *closing.borrow() {
                return;
            }
            match done().await {
                // Gone or finished: one more read drains what the process wrote last.
                Some(true) => last_round = true,
                Some(false) => {}
                None => return,
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

mod options;
pub(crate) mod proxy;
pub use options::LogOptions;
use proxy::{agent_endpoint, proxy};

#[cfg(test)]
mod tests;
