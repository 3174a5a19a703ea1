//! `?watch=true`: newline-delimited `{"type":"ADDED","object":{...}}` lines,
//! as a Kubernetes watch. Without a resourceVersion the current objects come
//! first as ADDED, then changes after the version of that list, so a client
//! sees every change exactly once. Under a label or field selector an object
//! that stops matching is sent as `DELETED` (its new state) and one that
//! starts matching as `ADDED`, as kube-apiserver does. With
//! `allowWatchBookmarks=true` the stream carries `BOOKMARK` events: one
//! after the initial events when `sendInitialEvents=true` (annotated
//! `k8s.io/initial-events-end`), and then one per bookmark period.

use crate::encode::{stream_body, OutputFormat};
use crate::storage::store_selector;
use crate::table::IncludeObject;
use crate::ServerState;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use ringleader_registry::resources::ResourceType;
use ringleader_registry::selector::ObjectSelector;
use ringleader_registry::status::ApiError;
use ringleader_store::{Event, EventType, ObjectKey, Store, Stored};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// The watch parameters of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `resourceVersion` (0 and absent: start with the current objects).
    pub from: Option<u64>,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks=true`.
    pub bookmarks: bool,
    /// `sendInitialEvents`: `Some(true)` lists first even after a version.
    pub initial_events: Option<bool>,
}

impl Options {
    /// Reads the watch parameters of a query.
    pub fn parse(query: &HashMap<String, String>) -> Result<Options, ApiError> {
        let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let number = |k: &str| -> Result<Option<u64>, ApiError> {
            get(k)
                .map(|v| {
                    v.parse::<u64>().map_err(|_| ApiError::bad_field(k, format!("{v:?} is not a non-negative integer")))
                })
                .transpose()
        };
        let flag = |k: &str| -> Result<Option<bool>, ApiError> {
            match get(k) {
                None => Ok(None),
                Some("true" | "1") => Ok(Some(true)),
                Some("false" | "0") => Ok(Some(false)),
                Some(v) => Err(ApiError::bad_field(k, format!("{v:?} is not a boolean (true or false)"))),
            }
        };
        Ok(Options {
            from: get("resourceVersion").map(crate::paging::parse_version).transpose()?.filter(|v| *v > 0),
            timeout: number("timeoutSeconds")?.map(Duration::from_secs),
            bookmarks: flag("allowWatchBookmarks")?.unwrap_or(false),
            initial_events: flag("sendInitialEvents")?,
        })
    }
}

/// How a stream shows its objects: through a projection (the v1 Node view
/// of ringleader.io Nodes) and/or as one-row Tables (`kubectl get -w`).
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// Applied to every object before selectors and rendering.
    pub project: Option<fn(&Value) -> Value>,
    /// The Table version and object inclusion, when a Table was asked for.
    pub table: Option<(&'static str, IncludeObject)>,
    /// The type the projection shows (named in bookmarks).
    pub shown_as: Option<&'static ResourceType>,
    /// Events as Kubernetes' protobuf frames (`;stream=watch`), for a kind
    /// that has a protobuf message; else JSON lines.
    pub protobuf: bool,
}

impl View {
    /// The view a response format asks for (Tables only; YAML is not streamed).
    pub fn of(format: OutputFormat) -> View {
        match format {
            OutputFormat::Table { version, include } => {
                View { table: Some((version, include.unwrap_or_default())), ..View::default() }
            }
            OutputFormat::Protobuf => View { protobuf: true, ..View::default() },
            _ => View::default(),
        }
    }

    fn matches(&self, selector: &ObjectSelector, object: &Value) -> bool {
        match self.project {
            Some(p) => selector.matches(&p(object)),
            None => selector.matches(object),
        }
    }
}

/// One line of the stream (a frame, in protobuf).
fn line(kind: &str, stored: &Stored, view: &View) -> Bytes {
    if view.protobuf {
        let mut object = view.project.map_or_else(|| stored.object.clone(), |p| p(&stored.object));
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(stored.resource_version.to_string()));
        }
        return frame(kind, &object);
    }
    if view.project.is_some() || view.table.is_some() {
        let mut object = view.project.map_or_else(|| stored.object.clone(), |p| p(&stored.object));
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(stored.resource_version.to_string()));
        }
        if let Some((version, include)) = view.table {
            object = crate::table::render(object, include, version, ringleader_api::time::now());
        }
        let text = serde_json::to_string(&object).unwrap_or_else(|_| "null".to_string());
        return Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{text}}}\n"));
    }
    let version = stored.resource_version.to_string();
    let current = stored.object.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    let text = if current == Some(version.as_str()) {
        // The usual case: written without copying the object.
        serde_json::to_string(&stored.object)
    } else {
        // A deletion's version may not be in the last stored state.
        let mut object = stored.object.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(version));
        }
        serde_json::to_string(&object)
    };
    let text = text.unwrap_or_else(|_| "null".to_string());
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{text}}}\n"))
}

/// One protobuf frame. An object that does not fit its Kubernetes type
/// (which the store should never hold) becomes an `ERROR` event naming
/// why, so the client lists again rather than missing it silently.
fn frame(kind: &str, object: &Value) -> Bytes {
    match ringleader_protobuf::encode_watch_frame(kind, object) {
        Ok(frame) => Bytes::from(frame),
        Err(e) => {
            tracing::warn!("a watch event cannot be sent in protobuf: {e}");
            let status = ApiError::internal(format!("a watch event cannot be sent in protobuf: {e}")).to_status();
            Bytes::from(ringleader_protobuf::encode_watch_frame("ERROR", &status).unwrap_or_default())
        }
    }
}

/// A `BOOKMARK` line: the kind and a resourceVersion only.
fn bookmark(rt: &ResourceType, version: u64, initial_end: bool, protobuf: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": version.to_string(), "creationTimestamp": null});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata});
    if protobuf {
        return frame("BOOKMARK", &object);
    }
    Bytes::from(format!("{{\"type\":\"BOOKMARK\",\"object\":{object}}}\n"))
}

struct WatchStream {
    rt: &'static ResourceType,
    store: Store,
    initial: VecDeque<Bytes>,
    events: UnboundedReceiver<Event>,
    selector: ObjectSelector,
    /// Under a selector: the objects the client holds as matching, so that
    /// leaving and entering the selection are sent as DELETED and ADDED.
    matching: Option<HashSet<ObjectKey>>,
    /// The newest version this stream is known to be complete up to.
    version: u64,
    bookmark_every: Option<Duration>,
    next_bookmark: Option<Instant>,
    closing: tokio::sync::watch::Receiver<bool>,
    deadline: Option<Instant>,
    view: View,
    /// What the caller may not see ([`crate::visibility`]): left out as a
    /// selector leaves out what it does not match.
    hidden: Option<crate::visibility::Hidden>,
}

impl WatchStream {
    /// The line an event becomes for this client, if any.
    fn translate(&mut self, event: &Event) -> Option<Bytes> {
        self.version = self.version.max(event.object.resource_version);
        let Some(matching) = &mut self.matching else {
            return Some(line(event.kind.as_str(), &event.object, &self.view));
        };
        let key = &event.object.key;
        let object = &event.object.object;
        let now = self.view.matches(&self.selector, object) && !self.hidden.as_ref().is_some_and(|h| h.hides(object));
        let was = matching.contains(key);
        let kind = match (event.kind, was, now) {
            (EventType::Deleted, true, _) | (EventType::Deleted, false, true) => {
                matching.remove(key);
                EventType::Deleted
            }
            (EventType::Deleted, false, false) => return None,
            (_, true, true) => EventType::Modified,
            (_, false, true) => {
                matching.insert(key.clone());
                EventType::Added
            }
            (_, true, false) => {
                matching.remove(key);
                EventType::Deleted
            }
            (_, false, false) => return None,
        };
        Some(line(kind.as_str(), &event.object, &self.view))
    }

    /// A periodic bookmark, once every event up to its version was sent:
    /// the store's version is read first, so an event at or below it has
    /// already been published to this stream's channel.
    fn due_bookmark(&mut self) -> Result<Bytes, Event> {
        let version = self.store.version();
        match self.events.try_recv() {
            Ok(event) => Err(event),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                self.version = self.version.max(version);
                Ok(bookmark(self.view.shown_as.unwrap_or(self.rt), self.version, false, self.view.protobuf))
            }
        }
    }

    async fn next(&mut self) -> Option<Bytes> {
        if let Some(l) = self.initial.pop_front() {
            return Some(l);
        }
        loop {
            if *self.closing.borrow() {
                return None;
            }
            let (until, tick) = (self.deadline, self.next_bookmark);
            let deadline = async move {
                match until {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let bookmark_due = async move {
                match tick {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.events.recv() => {
                    if let Some(l) = self.translate(&event?) {
                        return Some(l);
                    }
                }
                changed = self.closing.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                () = deadline => return None,
                () = bookmark_due => {
                    self.next_bookmark = self.bookmark_every.map(|p| Instant::now() + p);
                    match self.due_bookmark() {
                        Ok(l) => return Some(l),
                        Err(event) => {
                            // Send what is pending first; the bookmark waits for the next period.
                            if let Some(l) = self.translate(&event) {
                                return Some(l);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A watch from a version older than the history kept, as kube-apiserver's
/// watch cache answers it: the stream opens (200) and its one event is an
/// `ERROR` carrying the 410 `Expired` Status, which tells informers to list
/// again; nothing is replayed.
fn expired(e: &ApiError, protobuf: bool) -> Response {
    if protobuf {
        return ([(CONTENT_TYPE, ringleader_protobuf::WATCH_MEDIA_TYPE)], frame("ERROR", &e.to_status()))
            .into_response();
    }
    let line = format!("{{\"type\":\"ERROR\",\"object\":{}}}\n", e.to_status());
    ([(CONTENT_TYPE, "application/json")], line).into_response()
}

/// Starts a watch showing the objects through `view`; a version already
/// pruned from the history gets [`expired`].
pub async fn serve_as(
    state: &ServerState,
    rt: &'static ResourceType,
    ns: Option<String>,
    selector: ObjectSelector,
    hidden: Option<crate::visibility::Hidden>,
    options: Options,
    mut view: View,
) -> Result<Response, ApiError> {
    // Custom resources are watched in JSON, as on Kubernetes.
    let shown = view.shown_as.unwrap_or(rt);
    view.protobuf &= ringleader_protobuf::supports(shown.api_version, shown.kind);
    let sel = store_selector(rt, ns.as_deref());
    let list_first = options.initial_events.unwrap_or(options.from.is_none());
    let from = options.from;
    let started = state
        .blocking(move |s| {
            if list_first {
                let (items, version) = s.list(&sel)?;
                return Ok((items, version, s.watch(&sel, version)?));
            }
            let version = from.unwrap_or_else(|| s.version());
            Ok((Vec::new(), version, s.watch(&sel, version)?))
        })
        .await;
    let (initial, start, watch) = match started {
        Ok(started) => started,
        Err(e) if e.reason == "Expired" => return Ok(expired(&e, view.protobuf)),
        Err(e) => return Err(e),
    };
    let shown = |o: &Value| view.matches(&selector, o) && !hidden.as_ref().is_some_and(|h| h.hides(o));
    let initial: Vec<Stored> = initial.into_iter().filter(|s| shown(&s.object)).collect();
    let matching = (!selector.is_empty() || hidden.is_some())
        .then(|| initial.iter().map(|s| s.key.clone()).collect::<HashSet<_>>());
    let mut lines: VecDeque<Bytes> = initial.iter().map(|s| line(EventType::Added.as_str(), s, &view)).collect();
    if options.bookmarks && options.initial_events == Some(true) {
        lines.push_back(bookmark(view.shown_as.unwrap_or(rt), start, true, view.protobuf));
    }
    let bookmark_every = options.bookmarks.then(|| state.bookmark_period());
    let protobuf = view.protobuf;
    let stream = WatchStream {
        rt,
        store: state.store().clone(),
        initial: lines,
        events: watch.events,
        selector,
        matching,
        version: start,
        bookmark_every,
        next_bookmark: bookmark_every.map(|p| Instant::now() + p),
        closing: state.closing.clone(),
        deadline: options.timeout.map(|t| Instant::now() + t),
        view,
        hidden,
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        let next = s.next().await?;
        Some((Ok::<_, Infallible>(next), s))
    });
    let content_type = if protobuf { ringleader_protobuf::WATCH_MEDIA_TYPE } else { "application/json" };
    Ok(([(CONTENT_TYPE, content_type)], stream_body(body)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let q: HashMap<String, String> =
            [("resourceVersion", "0"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "5")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let o = Options::parse(&q).unwrap_or_default();
        assert_eq!(
            o,
            Options { from: None, timeout: Some(Duration::from_secs(5)), bookmarks: true, initial_events: None }
        );
        let bad: HashMap<String, String> = [("sendInitialEvents".to_string(), "yes".to_string())].into();
        assert!(Options::parse(&bad).is_err());
    }

    #[test]
    fn bookmarks_carry_only_kind_and_version() -> Result<(), serde_json::Error> {
        let b: Value = serde_json::from_slice(&bookmark(ringleader_registry::resources::PODS, 12, true, false))?;
        assert_eq!(b["type"], "BOOKMARK");
        assert_eq!(b["object"]["kind"], "Pod");
        assert_eq!(b["object"]["apiVersion"], "v1");
        assert_eq!(b["object"]["metadata"]["resourceVersion"], "12");
        assert_eq!(b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
        Ok(())
    }
}
