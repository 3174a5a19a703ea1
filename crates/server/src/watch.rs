//! `?watch=true`: newline-delimited `{"type":"ADDED","object":{...}}` lines,
//! as a Kubernetes watch. Without a resourceVersion the current objects come
//! first as ADDED, then changes after the version of that list, so a client
//! sees every change exactly once.

use crate::resources::ResourceType;
use crate::routes::{store_selector, stream_body};
use crate::selector::ObjectSelector;
use crate::status::ApiError;
use crate::ServerState;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use ringleader_store::{Event, EventType, Stored};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// One line of the stream.
fn line(kind: &str, stored: &Stored) -> Bytes {
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

struct WatchStream {
    initial: VecDeque<Bytes>,
    events: UnboundedReceiver<Event>,
    selector: ObjectSelector,
    closing: tokio::sync::watch::Receiver<bool>,
    deadline: Option<Instant>,
}

impl WatchStream {
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(l) = self.initial.pop_front() {
            return Some(l);
        }
        loop {
            if *self.closing.borrow() {
                return None;
            }
            let until = self.deadline;
            let deadline = async move {
                match until {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.events.recv() => {
                    let event = event?;
                    if self.selector.matches(&event.object.object) {
                        return Some(line(event.kind.as_str(), &event.object));
                    }
                }
                changed = self.closing.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                () = deadline => return None,
            }
        }
    }
}

/// Starts a watch; `Expired` (410) is answered before any streaming starts.
pub async fn serve(
    state: &ServerState,
    rt: &'static ResourceType,
    ns: Option<String>,
    selector: ObjectSelector,
    from: Option<u64>,
    timeout: Option<Duration>,
) -> Result<Response, ApiError> {
    let sel = store_selector(rt, ns.as_deref());
    let (initial, watch) = state
        .blocking(move |s| match from {
            Some(version) => Ok((Vec::new(), s.watch(&sel, version)?)),
            None => {
                let (items, version) = s.list(&sel)?;
                Ok((items, s.watch(&sel, version)?))
            }
        })
        .await?;
    let initial = initial
        .into_iter()
        .filter(|s| selector.matches(&s.object))
        .map(|s| line(EventType::Added.as_str(), &s))
        .collect();
    let stream = WatchStream {
        initial,
        events: watch.events,
        selector,
        closing: state.closing.clone(),
        deadline: timeout.map(|t| Instant::now() + t),
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        let next = s.next().await?;
        Some((Ok::<_, Infallible>(next), s))
    });
    Ok(([(CONTENT_TYPE, "application/json")], stream_body(body)).into_response())
}
