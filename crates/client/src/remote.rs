//! The cluster as a standalone agent sees it: the API server, over HTTPS
//! with the agent's kubeconfig, behind the same [`Cluster`] calls the
//! in-process agent makes on the embedded store. Lists and watches are the
//! API's; a watch that breaks resumes from its last version, and ends (so
//! the agent starts over with a fresh list) only when the server no longer
//! has that version.

use crate::client::{Client, ClientError};
use futures_util::StreamExt;
use ringleader_registry::resources;
use ringleader_registry::ResourceType;
use ringleader_store::Cluster;
use ringleader_store::{Event, EventType, ObjectKey, Op, Selector, StoreError, Stored, Watch};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The API server as the agent's cluster.
pub struct RemoteCluster {
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl RemoteCluster {
    /// Calls go through `client`; watches run on `runtime`.
    pub fn new(client: Client, runtime: tokio::runtime::Handle) -> RemoteCluster {
        RemoteCluster { client, runtime }
    }

    /// Runs `f` to completion from a blocking call: the agent calls from
    /// blocking threads, and once from its loop on a worker thread (a
    /// ConfigMap read as a pod starts), which `block_in_place` hands off.
    fn block<T, F: Future<Output = Result<T, ClientError>>>(&self, f: F) -> Result<T, StoreError> {
        let timed = async { tokio::time::timeout(CALL_TIMEOUT, f).await };
        match tokio::task::block_in_place(|| self.runtime.block_on(timed)) {
            Ok(result) => result.map_err(|e| error(None, e)),
            // A cut link drops packets silently: without a limit a call would hang for minutes.
            Err(_) => Err(StoreError::Io(format!("no answer from the API server within {} s", CALL_TIMEOUT.as_secs()))),
        }
    }
}

fn resource(api_version: &str, kind: &str) -> Result<&'static ResourceType, StoreError> {
    if api_version == "v1" && kind == "Node" {
        // The agent's nodes are ringleader's; the core view is read-only.
        return Ok(resources::NODES);
    }
    resources::by_kind(api_version, kind)
        .ok_or_else(|| StoreError::Invalid(format!("{api_version} {kind}: not a resource the API server serves")))
}

fn error(key: Option<&ObjectKey>, e: ClientError) -> StoreError {
    let key = || key.cloned().unwrap_or_else(|| ObjectKey::new("", "", "", ""));
    match &e {
        ClientError::Status { reason, .. } if reason == "NotFound" => StoreError::NotFound(key()),
        ClientError::Status { reason, .. } if reason == "AlreadyExists" => StoreError::AlreadyExists(key()),
        ClientError::Status { reason, .. } if reason == "Conflict" => {
            StoreError::Conflict { key: key(), expected: 0, actual: 0 }
        }
        ClientError::Status { code: 410, .. } => StoreError::Expired { requested: 0, oldest: 0 },
        // Io is "the cluster could not be reached": the agent holds its writes and retries.
        ClientError::Http { .. } | ClientError::Status { code: 503, .. } => StoreError::Io(e.to_string()),
        _ => StoreError::Invalid(e.to_string()),
    }
}

/// `e` naming `key` where it names an object.
fn with_key(e: StoreError, key: &ObjectKey) -> StoreError {
    match e {
        StoreError::NotFound(_) => StoreError::NotFound(key.clone()),
        StoreError::AlreadyExists(_) => StoreError::AlreadyExists(key.clone()),
        StoreError::Conflict { expected, actual, .. } => StoreError::Conflict { key: key.clone(), expected, actual },
        e => e,
    }
}

/// An object as the store would hand it out.
fn stored(object: Value) -> Result<Stored, StoreError> {
    let key = ObjectKey::of(&object)?;
    let resource_version = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Invalid(format!("{key}: the server sent no metadata.resourceVersion")))?;
    Ok(Stored { key, resource_version, object })
}

/// Longest wait for one API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// A watch silent this long is restarted from its last version (a cut link
/// leaves a dead connection that reports nothing).
const WATCH_SILENCE: Duration = Duration::from_secs(90);

/// How long a broken watch waits before resuming (doubling up to the most).
const RESUME_FIRST: Duration = Duration::from_millis(200);
const RESUME_MOST: Duration = Duration::from_secs(5);

impl Cluster for RemoteCluster {
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        let res = resource(&key.api_version, &key.kind)?;
        match self.block(self.client.get(res, &key.namespace, &key.name)) {
            Ok(object) => stored(object).map(Some),
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(with_key(e, key)),
        }
    }

    fn create(&self, object: Value) -> Result<Stored, StoreError> {
        let key = ObjectKey::of(&object)?;
        let res = resource(&key.api_version, &key.kind)?;
        let created = self.block(self.client.create(res, &key.namespace, &object)).map_err(|e| with_key(e, &key))?;
        stored(created)
    }

    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        let res = resource(&key.api_version, &key.kind)?;
        let mut patch = patch.clone();
        if let Some(v) = expected {
            // A resourceVersion in a merge patch is a precondition, as in Kubernetes.
            if let Some(meta) = patch.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| json!({}))) {
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("resourceVersion".into(), json!(v.to_string()));
                }
            }
        }
        // `status` goes through the status subresource (a write of the main
        // resource leaves it as it was); the rest, if any, first, with the
        // precondition, and the status then pinned to what that wrote.
        let status = patch.as_object_mut().and_then(|o| o.remove("status"));
        let mut out = None;
        if !precondition_only(&patch) || status.is_none() {
            let written = self
                .block(self.client.patch_merge(res, &key.namespace, &key.name, &patch))
                .map_err(|e| with_key(e, key))?;
            out = Some(written);
        }
        if let Some(status) = status {
            let mut status_patch = json!({ "status": status });
            let pinned = match &out {
                Some(written) => written.pointer("/metadata/resourceVersion").cloned(),
                None => patch.pointer("/metadata/resourceVersion").cloned(),
            };
            if let Some(v) = pinned {
                status_patch["metadata"] = json!({ "resourceVersion": v });
            }
            let written = self
                .block(self.client.patch_merge_status(res, &key.namespace, &key.name, &status_patch))
                .map_err(|e| with_key(e, key))?;
            out = Some(written);
        }
        match out {
            Some(object) => stored(object),
            None => Err(StoreError::Invalid("an empty patch".into())),
        }
    }

    fn batch(&self, ops: Vec<Op>) -> Result<(), StoreError> {
        for op in ops {
            match op {
                Op::Create(object) => {
                    self.create(object)?;
                }
                Op::Patch { key, patch, expected } => {
                    self.patch(&key, &patch, expected)?;
                }
                Op::Delete { key, expected } => {
                    let res = resource(&key.api_version, &key.kind)?;
                    self.block(self.client.delete_now(res, &key.namespace, &key.name, expected))
                        .map_err(|e| with_key(e, &key))?;
                }
                Op::Update(_) | Op::Apply(_) => {
                    return Err(StoreError::Invalid("the agent neither replaces nor applies objects".into()))
                }
            }
        }
        Ok(())
    }

    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError> {
        let (Some(v), Some(k)) = (&selector.api_version, &selector.kind) else {
            return Err(StoreError::Invalid("the agent lists one kind at a time".into()));
        };
        let res = resource(v, k)?;
        let list = self.block(self.client.list(res, selector.namespace.as_deref(), None))?;
        let items = list.items.into_iter().map(stored).collect::<Result<Vec<_>, _>>()?;
        Ok((items, list.resource_version))
    }

    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        let (Some(v), Some(k)) = (&selector.api_version, &selector.kind) else {
            return Err(StoreError::Invalid("the agent watches one kind at a time".into()));
        };
        let res = resource(v, k)?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let client = self.client.clone();
        let namespace = selector.namespace.clone();
        self.runtime.spawn(follow(client, res, namespace, from, tx));
        Ok(Watch { events: rx })
    }
}

/// Whether a patch holds nothing but its precondition
/// (`metadata.resourceVersion`): there is nothing to write but status.
fn precondition_only(patch: &Value) -> bool {
    let Some(top) = patch.as_object() else { return true };
    let meta_only_version = |m: &Value| m.as_object().is_some_and(|m| m.keys().all(|k| k == "resourceVersion"));
    top.iter().all(|(k, v)| k == "metadata" && meta_only_version(v))
}

/// Feeds `tx` with the events after `from` until the agent drops it or the
/// server says `from` has expired (410 Gone: the agent must list again).
async fn follow(
    client: Client,
    res: &'static ResourceType,
    namespace: Option<String>,
    mut from: u64,
    tx: tokio::sync::mpsc::UnboundedSender<Event>,
) {
    let mut wait = RESUME_FIRST;
    loop {
        if tx.is_closed() {
            return;
        }
        match client.watch(res, namespace.as_deref(), Some(from)).await {
            Ok(mut stream) => {
                while let Ok(Some(item)) = tokio::time::timeout(WATCH_SILENCE, stream.next()).await {
                    let event = match item {
                        Ok(event) => event,
                        Err(ClientError::Status { code: 410, .. }) => return,
                        Err(e) => {
                            tracing::warn!(error = %e, resource = res.plural, "watch broke; resuming");
                            break;
                        }
                    };
                    let kind = match event.event_type.as_str() {
                        "ADDED" => EventType::Added,
                        "MODIFIED" => EventType::Modified,
                        "DELETED" => EventType::Deleted,
                        _ => continue,
                    };
                    let Some(version) = event.resource_version() else { continue };
                    let Ok(object) = stored(event.object) else { continue };
                    from = from.max(version);
                    wait = RESUME_FIRST;
                    if tx.send(Event { kind, object: Arc::new(object) }).is_err() {
                        return;
                    }
                }
            }
            Err(ClientError::Status { code: 410, .. }) => return,
            Err(e) => tracing::warn!(error = %e, resource = res.plural, "cannot watch; retrying"),
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = tx.closed() => return,
        }
        wait = (wait * 2).min(RESUME_MOST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> ClientError {
        ClientError::Status { code, reason: reason.into(), message: "m".into(), status: Value::Null }
    }

    #[test]
    fn api_answers_become_the_store_errors_the_writer_acts_on() {
        let key = ObjectKey::new("v1", "Pod", "default", "p");
        assert!(matches!(error(Some(&key), status(404, "NotFound")), StoreError::NotFound(k) if k == key));
        assert!(matches!(error(Some(&key), status(409, "AlreadyExists")), StoreError::AlreadyExists(_)));
        assert!(matches!(error(Some(&key), status(409, "Conflict")), StoreError::Conflict { .. }));
        assert!(matches!(error(None, status(410, "Expired")), StoreError::Expired { .. }));
        // Unreachable (held and retried) only when the server is not there to answer.
        assert!(matches!(error(None, status(503, "ServiceUnavailable")), StoreError::Io(_)));
        assert!(matches!(error(None, status(403, "Forbidden")), StoreError::Invalid(_)));
        assert!(matches!(error(None, status(422, "Invalid")), StoreError::Invalid(_)));
        assert!(
            matches!(with_key(StoreError::NotFound(ObjectKey::new("", "", "", "")), &key), StoreError::NotFound(k) if k == key)
        );
    }

    #[test]
    fn objects_need_their_resource_version() {
        let ok = stored(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a", "resourceVersion": "42"}}));
        let s = ok.expect("stored");
        assert_eq!((s.resource_version, s.key.name.as_str(), s.key.namespace.as_str()), (42, "p", "a"));
        let e =
            stored(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"}}));
        assert!(e.is_err_and(|e| e.to_string().contains("resourceVersion")));
    }

    #[test]
    fn the_agent_s_kinds_map_to_served_resources() {
        assert_eq!(resource("v1", "Pod").map(|r| r.plural).ok(), Some("pods"));
        assert_eq!(
            resource("ringleader.io/v1alpha1", "Node").map(|r| r.api_version).ok(),
            Some("ringleader.io/v1alpha1")
        );
        assert_eq!(resource("v1", "Node").map(|r| r.api_version).ok(), Some("ringleader.io/v1alpha1"));
        assert!(resource("v9", "Nope").is_err_and(|e| e.to_string().contains("v9 Nope")));
    }
}
