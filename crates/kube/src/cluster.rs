//! kube-apiserver behind the calls the manager and the agent make on the
//! embedded store ([`ringleader_store::Backend`]), through kube-rs. Reads
//! and writes are translated by [`crate::translate`]; lists and watches are
//! the API's, one stream per kind merged into one [`Watch`]. A watch that
//! breaks resumes from its last version; when the server no longer has that
//! version (410 Gone) every stream of the watch ends, and the caller lists
//! again.

use crate::kinds::{self, Kind};
use crate::translate::{self, Write};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::WatchEvent;
use ringleader_store::{Backend, Event, EventType, ObjectKey, Op, Selector, StoreError, Stored, Watch};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest wait for one API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Writes of one batch in flight at once, by default (kube-apiserver's
/// `--max-mutating-requests-inflight` is 200 by default).
pub const PARALLEL_WRITES: usize = 32;
/// Server-side timeout of one watch request (it is then resumed).
const WATCH_SECONDS: u32 = 290;
/// A watch silent this long is resumed (a dead connection reports nothing).
const WATCH_SILENCE: Duration = Duration::from_secs(330);
const RESUME_FIRST: Duration = Duration::from_millis(200);
const RESUME_MOST: Duration = Duration::from_secs(5);

/// kube-apiserver as the cluster's state.
#[derive(Clone)]
pub struct KubeCluster {
    client: kube::Client,
    runtime: tokio::runtime::Handle,
    scheduler: Arc<str>,
    pod_fields: Option<Arc<str>>,
    parallel: usize,
    version: Arc<AtomicU64>,
    /// The resourceVersion each kind was last listed at: a watch of that
    /// kind starts there (versions are etcd's, shared by all kinds, but each
    /// list is consistent only with itself).
    listed: Arc<Mutex<HashMap<(String, String), u64>>>,
    /// MindCluster's device-info ConfigMaps seen so far, by node: they
    /// describe the nodes no ringleader agent registered.
    device_info: Arc<Mutex<HashMap<String, ConfigMap>>>,
}

impl KubeCluster {
    /// Calls go through `client`; watches run on `runtime`. Pods the
    /// manager creates name `scheduler` as their scheduler; lists and
    /// watches of pods cover only those with `spec.schedulerName=scheduler`.
    pub fn new(client: kube::Client, runtime: tokio::runtime::Handle, scheduler: &str) -> KubeCluster {
        KubeCluster {
            client,
            runtime,
            scheduler: scheduler.into(),
            pod_fields: Some(format!("spec.schedulerName={scheduler}").into()),
            parallel: PARALLEL_WRITES,
            version: Arc::default(),
            listed: Arc::default(),
            device_info: Arc::default(),
        }
    }

    /// At most `n` (at least 1) writes of a batch in flight at once.
    pub fn with_parallel_writes(mut self, n: usize) -> KubeCluster {
        self.parallel = n.max(1);
        self
    }

    /// The client, for calls beyond the store's (CRDs, leases).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// Runs `f` to completion from a blocking call (the manager's pass and
    /// the agent's writer call from worker or blocking threads).
    fn block<T, F: Future<Output = Result<T, StoreError>>>(&self, f: F) -> Result<T, StoreError> {
        self.block_untimed(timed(f))
    }

    /// [`Self::block`] without a bound of its own: a batch bounds each of
    /// its calls instead (5,000 binds take longer than one call may).
    fn block_untimed<T, F: Future<Output = Result<T, StoreError>>>(&self, f: F) -> Result<T, StoreError> {
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::block_in_place(|| self.runtime.block_on(f)),
            Err(_) => self.runtime.block_on(f),
        }
    }

    fn seen(&self, v: u64) {
        self.version.fetch_max(v, Ordering::AcqRel);
    }

    async fn call(&self, method: http::Method, url: String, body: Option<(Value, &str)>) -> Result<Value, StoreError> {
        let mut builder = http::Request::builder().method(method).uri(url);
        let bytes = match body {
            Some((v, content_type)) => {
                builder = builder.header(http::header::CONTENT_TYPE, content_type);
                serde_json::to_vec(&v).map_err(|e| StoreError::Invalid(e.to_string()))?
            }
            None => Vec::new(),
        };
        let request = builder.body(bytes).map_err(|e| StoreError::Invalid(e.to_string()))?;
        self.client.request::<Value>(request).await.map_err(error)
    }

    /// A stored object of `kind` from a server answer.
    fn stored(&self, kind: &Kind, object: Value) -> Result<Stored, StoreError> {
        let object = if kind.is_node() {
            let known: Vec<ConfigMap> =
                self.device_info.lock().map(|d| d.values().cloned().collect()).unwrap_or_default();
            translate::from_kube(kind, object, &known)
        } else {
            translate::from_kube(kind, object, &[])
        };
        let key = ObjectKey::of(&object)?;
        let resource_version = version_of(&object)
            .ok_or_else(|| StoreError::Invalid(format!("{key}: kube-apiserver sent no metadata.resourceVersion")))?;
        self.seen(resource_version);
        Ok(Stored { key, resource_version, object })
    }

    async fn get_async(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        let kind = kinds::kind(&key.api_version, &key.kind)?;
        match self.call(http::Method::GET, kind.object(&key.namespace, &key.name, None), None).await {
            Ok(o) => self.stored(&kind, o).map(Some),
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(with_key(e, key)),
        }
    }

    async fn create_async(&self, object: Value) -> Result<Stored, StoreError> {
        let key = ObjectKey::of(&object)?;
        let kind = kinds::kind(&key.api_version, &key.kind)?;
        let object = translate::for_create(&kind, object, &self.scheduler);
        let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
        let out = self
            .call(http::Method::POST, kind.collection(Some(&ns)), Some((object, JSON)))
            .await
            .map_err(|e| with_key(e, &key))?;
        self.stored(&kind, out)
    }

    async fn patch_async(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        let kind = kinds::kind(&key.api_version, &key.kind)?;
        if kind.is_node() {
            return self.patch_node(&kind, key, patch, expected).await;
        }
        let job_state = if kind.typed_status() && patch.pointer("/status/ringleader").is_some() {
            self.get_async(key).await?.and_then(|s| s.object.pointer("/status/ringleader").cloned())
        } else {
            None
        };
        let write = translate::split_patch(&kind, patch, job_state.as_ref())
            .map_err(|why| StoreError::Invalid(format!("{key}: {why}")))?;
        self.carry_out(&kind, key, write, expected).await
    }

    async fn carry_out(
        &self,
        kind: &Kind,
        key: &ObjectKey,
        write: Write,
        expected: Option<u64>,
    ) -> Result<Stored, StoreError> {
        let url = kind.object(&key.namespace, &key.name, None);
        let mut last = None;
        let mut precondition = expected;
        if let Some(mut main) = write.main {
            if let Some(v) = precondition.take() {
                main["metadata"]["resourceVersion"] = json!(v.to_string());
            }
            last = Some(
                self.call(http::Method::PATCH, url.clone(), Some((main, MERGE))).await.map_err(|e| with_key(e, key))?,
            );
        }
        let bound = write.bind.is_some();
        if let Some(node) = write.bind {
            if let Some(v) = precondition.take() {
                // A binding has no precondition of its own: read the pod first.
                let current = self.get_async(key).await?.ok_or_else(|| StoreError::NotFound(key.clone()))?;
                if current.resource_version != v {
                    return Err(StoreError::Conflict {
                        key: key.clone(),
                        expected: v,
                        actual: current.resource_version,
                    });
                }
            }
            let mut binding = json!({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": key.name, "namespace": key.namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            });
            if let Some(annotations) = write.bind_annotations {
                binding["metadata"]["annotations"] = Value::Object(annotations);
            }
            self.call(
                http::Method::POST,
                kind.object(&key.namespace, &key.name, Some("binding")),
                Some((binding, JSON)),
            )
            .await
            .map_err(|e| with_key(e, key))?;
            last = None;
        }
        // A binding sets `PodScheduled: True` itself: a status write saying
        // only that is one write per pod of a gang for nothing.
        let scheduled_only = |s: &Value| {
            s.as_object().is_some_and(|o| o.len() == 1)
                && s.get("conditions").and_then(Value::as_array).is_some_and(|c| {
                    c.len() == 1
                        && c[0].get("type") == Some(&json!("PodScheduled"))
                        && c[0].get("status") == Some(&json!("True"))
                })
        };
        let status = write.status.filter(|s| !(bound && scheduled_only(s)));
        if let Some(status) = status {
            let mut body = json!({"status": status});
            if let Some(v) = precondition.take() {
                body["metadata"] = json!({"resourceVersion": v.to_string()});
            }
            last = Some(
                self.call(
                    http::Method::PATCH,
                    kind.object(&key.namespace, &key.name, Some("status")),
                    Some((body, MERGE)),
                )
                .await
                .map_err(|e| with_key(e, key))?,
            );
        }
        if let Some(grace) = write.delete {
            let mut options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace});
            if let Some(v) = precondition.take() {
                options["preconditions"] = json!({"resourceVersion": v.to_string()});
            }
            match self.call(http::Method::DELETE, url.clone(), Some((options, JSON))).await {
                // Graceful: the object stays, marked, until its agent ends it.
                Ok(o) if o.get("kind").and_then(Value::as_str) != Some("Status") => last = Some(o),
                Ok(_) | Err(StoreError::NotFound(_)) => last = None,
                Err(e) => return Err(with_key(e, key)),
            }
        }
        let object = match last {
            Some(o) => o,
            None => match self.call(http::Method::GET, url, None).await {
                Ok(o) => o,
                // Deleted at once: answer its last known state.
                Err(StoreError::NotFound(_)) => {
                    return Ok(Stored {
                        key: key.clone(),
                        resource_version: self.version.load(Ordering::Acquire),
                        object: json!({"apiVersion": key.api_version, "kind": key.kind,
                            "metadata": {"name": key.name, "namespace": key.namespace}}),
                    })
                }
                Err(e) => return Err(with_key(e, key)),
            },
        };
        self.stored(kind, object)
    }

    /// A Node's patch: heartbeats straight to the Ready condition; anything
    /// else applied to ringleader's view of the current Node, then written
    /// back as the difference.
    async fn patch_node(
        &self,
        kind: &Kind,
        key: &ObjectKey,
        patch: &Value,
        expected: Option<u64>,
    ) -> Result<Stored, StoreError> {
        let status_url = kind.object("", &key.name, Some("status"));
        if let (Some(at), None) = (translate::heartbeat(patch), expected) {
            let out = self
                .call(http::Method::PATCH, status_url, Some((translate::heartbeat_status(true, at), STRATEGIC)))
                .await
                .map_err(|e| with_key(e, key))?;
            return self.stored(kind, out);
        }
        let current =
            self.call(http::Method::GET, kind.object("", &key.name, None), None).await.map_err(|e| with_key(e, key))?;
        let current_version = version_of(&current).unwrap_or(0);
        if let Some(v) = expected.filter(|v| *v != current_version) {
            return Err(StoreError::Conflict { key: key.clone(), expected: v, actual: current_version });
        }
        let known: Vec<ConfigMap> = self.device_info.lock().map(|d| d.values().cloned().collect()).unwrap_or_default();
        let mut view = translate::node_from_kube(&current, &known);
        if translate::is_foreign_node(&view) {
            match translate::foreign_node_write(patch) {
                // What a user asked of ringleader (a ResourceGroup's label).
                Ok(Some(labels)) => {
                    let mut body = labels;
                    body["metadata"]["resourceVersion"] = json!(current_version.to_string());
                    let out = self
                        .call(http::Method::PATCH, kind.object("", &key.name, None), Some((body, MERGE)))
                        .await
                        .map_err(|e| with_key(e, key))?;
                    return self.stored(kind, out);
                }
                Ok(None) => {}
                Err(why) => return Err(StoreError::Invalid(format!("{key}: {why}"))),
            }
        }
        json_patch::merge(&mut view, patch);
        let wanted = translate::node_to_kube(&view);
        let (main, status) = translate::node_diff(&current, &wanted);
        let mut last = None;
        if let Some(mut main) = main {
            main["metadata"]["resourceVersion"] = json!(current_version.to_string());
            last = Some(
                self.call(http::Method::PATCH, kind.object("", &key.name, None), Some((main, MERGE)))
                    .await
                    .map_err(|e| with_key(e, key))?,
            );
        }
        if let Some(status) = status {
            last = Some(
                self.call(http::Method::PATCH, status_url, Some((status, STRATEGIC)))
                    .await
                    .map_err(|e| with_key(e, key))?,
            );
        }
        self.stored(kind, last.unwrap_or(current))
    }

    async fn delete_async(&self, key: &ObjectKey, expected: Option<u64>) -> Result<Stored, StoreError> {
        let kind = kinds::kind(&key.api_version, &key.kind)?;
        // ringleader's delete removes the object now; a graceful one is a patch.
        let mut options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
            "propagationPolicy": "Background"});
        if let Some(v) = expected {
            options["preconditions"] = json!({"resourceVersion": v.to_string()});
        }
        let out = self
            .call(http::Method::DELETE, kind.object(&key.namespace, &key.name, None), Some((options, JSON)))
            .await
            .map_err(|e| with_key(e, key))?;
        if out.get("kind").and_then(Value::as_str) == Some("Status") {
            return Ok(Stored {
                key: key.clone(),
                resource_version: self.version.load(Ordering::Acquire),
                object: json!({"apiVersion": key.api_version, "kind": key.kind,
                    "metadata": {"name": key.name, "namespace": key.namespace}}),
            });
        }
        self.stored(&kind, out)
    }

    /// Create, or merge the object into the one there (what ringleader's
    /// apply means for the objects the manager owns).
    async fn apply_async(&self, object: Value) -> Result<Stored, StoreError> {
        match self.create_async(object.clone()).await {
            Err(StoreError::AlreadyExists(key)) => {
                let mut patch = object;
                if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                    for f in ["resourceVersion", "uid", "creationTimestamp", "name", "namespace"] {
                        meta.remove(f);
                    }
                }
                self.patch_async(&key, &patch, None).await
            }
            other => other,
        }
    }

    async fn op(&self, op: Op) -> Result<Arc<Stored>, StoreError> {
        let out = match op {
            Op::Create(o) => self.create_async(o).await,
            Op::Apply(o) | Op::Update(o) => self.apply_async(o).await,
            Op::Patch { key, patch, expected } => self.patch_async(&key, &patch, expected).await,
            Op::Delete { key, expected } => self.delete_async(&key, expected).await,
        };
        out.map(Arc::new)
    }

    /// Keeps a MindCluster device-info ConfigMap (or forgets a deleted one);
    /// returns the node it describes.
    fn note_device_info(&self, cm: &Stored, deleted: bool) -> Option<String> {
        use ringleader_scheduler::k8s_node::{DEVICE_INFO_NAMESPACE, DEVICE_INFO_PREFIX};
        if cm.key.kind != "ConfigMap" || cm.key.namespace != DEVICE_INFO_NAMESPACE {
            return None;
        }
        let node = cm.key.name.strip_prefix(DEVICE_INFO_PREFIX)?.to_string();
        let mut known = self.device_info.lock().ok()?;
        if deleted {
            known.remove(&node);
        } else if let Ok(typed) = serde_json::from_value::<ConfigMap>(cm.object.clone()) {
            known.insert(node.clone(), typed);
        }
        Some(node)
    }

    async fn list_kind(&self, kind: &Kind, namespace: Option<&str>) -> Result<(Vec<Stored>, u64), StoreError> {
        let mut url = format!("{}?limit=500", kind.collection(namespace));
        if let (Some(fields), "Pod") = (&self.pod_fields, kind.kind) {
            url.push_str(&format!("&fieldSelector={fields}"));
        }
        let mut items = Vec::new();
        let mut cont: Option<String> = None;
        loop {
            let page_url = match &cont {
                Some(c) => format!("{url}&continue={c}"),
                None => url.clone(),
            };
            let mut page = match self.call(http::Method::GET, page_url, None).await {
                // A CRD this cluster does not have: nothing of that kind.
                Err(StoreError::NotFound(_)) => return Ok((Vec::new(), 0)),
                other => other?,
            };
            let page_items = match page.get_mut("items") {
                Some(Value::Array(list)) => std::mem::take(list),
                _ => Vec::new(),
            };
            for item in page_items {
                let stored = self.stored(kind, item)?;
                self.note_device_info(&stored, false);
                items.push(stored);
            }
            let version =
                page.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
            match page.pointer("/metadata/continue").and_then(Value::as_str).filter(|c| !c.is_empty()) {
                Some(c) => cont = Some(c.to_string()),
                None => {
                    let version = version.unwrap_or(0);
                    self.seen(version);
                    return Ok((items, version));
                }
            }
        }
    }
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

/// `f`, or an I/O error once [`CALL_TIMEOUT`] has passed.
async fn timed<T, F: Future<Output = Result<T, StoreError>>>(f: F) -> Result<T, StoreError> {
    tokio::time::timeout(CALL_TIMEOUT, f).await.unwrap_or_else(|_| {
        Err(StoreError::Io(format!("no answer from kube-apiserver within {} s", CALL_TIMEOUT.as_secs())))
    })
}

fn version_of(object: &Value) -> Option<u64> {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok())
}

fn error(e: kube::Error) -> StoreError {
    let none = || ObjectKey::new("", "", "", "");
    match &e {
        kube::Error::Api(s) => match (s.code, s.reason.as_str()) {
            (404, _) => StoreError::NotFound(none()),
            (409, "AlreadyExists") => StoreError::AlreadyExists(none()),
            (409, _) => StoreError::Conflict { key: none(), expected: 0, actual: 0 },
            (410, _) => StoreError::Expired { requested: 0, oldest: 0 },
            (429 | 500 | 503 | 504, _) => StoreError::Io(format!("kube-apiserver: {}", s.message)),
            _ => StoreError::Invalid(format!("kube-apiserver: {} ({} {})", s.message, s.code, s.reason)),
        },
        _ => StoreError::Io(format!("kube-apiserver: {e}")),
    }
}

fn with_key(e: StoreError, key: &ObjectKey) -> StoreError {
    match e {
        StoreError::NotFound(_) => StoreError::NotFound(key.clone()),
        StoreError::AlreadyExists(_) => StoreError::AlreadyExists(key.clone()),
        StoreError::Conflict { expected, actual, .. } => StoreError::Conflict { key: key.clone(), expected, actual },
        StoreError::Invalid(why) => StoreError::Invalid(format!("{key}: {why}")),
        e => e,
    }
}

/// The kinds a selector covers.
fn selected(selector: &Selector) -> Result<Vec<Kind>, StoreError> {
    match (&selector.api_version, &selector.kind) {
        (Some(v), Some(k)) => Ok(vec![kinds::kind(v, k)?]),
        _ => kinds::MANAGED
            .iter()
            .map(|(v, k)| kinds::kind(v, k))
            .filter(|k| {
                k.as_ref().map_or(true, |k| {
                    selector.matches(&ObjectKey::new(k.api_version, k.kind, "", "x")) || selector.namespace.is_some()
                })
            })
            .collect(),
    }
}

impl Backend for KubeCluster {
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        self.block(self.get_async(key))
    }

    fn create(&self, object: Value) -> Result<Stored, StoreError> {
        self.block(self.create_async(object))
    }

    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        self.block(self.patch_async(key, patch, expected))
    }

    /// Writes run in waves: consecutive ops on distinct objects at once (up
    /// to [`KubeCluster::with_parallel_writes`]), an op on an object already in the wave
    /// after it. The first failure is returned; the writes before it stand.
    fn batch(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, StoreError> {
        self.block_untimed(async {
            let mut out = Vec::with_capacity(ops.len());
            let mut wave: Vec<Op> = Vec::new();
            let mut keys = std::collections::HashSet::new();
            let mut ops = ops.into_iter().peekable();
            while ops.peek().is_some() || !wave.is_empty() {
                let next_key = ops.peek().map(op_key);
                let flush = match &next_key {
                    None => true,
                    Some(k) => k.as_ref().is_some_and(|k| keys.contains(k)),
                };
                if flush {
                    let results: Vec<Result<Arc<Stored>, StoreError>> = futures_util::stream::iter(wave.drain(..))
                        .map(|op| timed(self.op(op)))
                        .buffered(self.parallel)
                        .collect()
                        .await;
                    for r in results {
                        out.push(r?);
                    }
                    keys.clear();
                    continue;
                }
                if let Some(op) = ops.next() {
                    if let Some(k) = op_key(&op) {
                        keys.insert(k);
                    }
                    wave.push(op);
                }
            }
            Ok(out)
        })
    }

    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError> {
        let kinds = selected(selector)?;
        self.block(async {
            // One kind after another, in the order `selected` gives: a Node is
            // modelled as it is read, from the MindCluster device info (its
            // broken chips) its ConfigMap gave before it.
            let mut all = Vec::new();
            let mut top = 0;
            for kind in &kinds {
                let (items, version) = self.list_kind(kind, selector.namespace.as_deref()).await?;
                if let Ok(mut listed) = self.listed.lock() {
                    listed.insert((kind.api_version.to_string(), kind.kind.to_string()), version);
                }
                top = top.max(version);
                all.extend(items);
            }
            Ok((all, top))
        })
    }

    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        let kinds = selected(selector)?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (expired_tx, expired_rx) = tokio::sync::watch::channel(false);
        let expired_tx = Arc::new(expired_tx);
        for kind in kinds {
            let start = self
                .listed
                .lock()
                .ok()
                .and_then(|l| l.get(&(kind.api_version.to_string(), kind.kind.to_string())).copied())
                .filter(|v| *v <= from)
                .unwrap_or(from);
            let mut url = format!(
                "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}",
                kind.collection(selector.namespace.as_deref())
            );
            if let (Some(fields), "Pod") = (&self.pod_fields, kind.kind) {
                url.push_str(&format!("&fieldSelector={fields}"));
            }
            let follower = Follower {
                cluster: self.clone(),
                kind,
                url,
                tx: tx.clone(),
                expired: (expired_tx.clone(), expired_rx.clone()),
            };
            self.runtime.spawn(follower.run(start));
        }
        Ok(Watch { events: rx })
    }

    fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

fn op_key(op: &Op) -> Option<ObjectKey> {
    match op {
        Op::Create(o) | Op::Apply(o) | Op::Update(o) => ObjectKey::of(o).ok(),
        Op::Patch { key, .. } | Op::Delete { key, .. } => Some(key.clone()),
    }
}

/// One kind's stream of a watch.
struct Follower {
    cluster: KubeCluster,
    kind: Kind,
    url: String,
    tx: tokio::sync::mpsc::UnboundedSender<Event>,
    expired: (Arc<tokio::sync::watch::Sender<bool>>, tokio::sync::watch::Receiver<bool>),
}

impl Follower {
    async fn run(mut self, mut from: u64) {
        let mut wait = RESUME_FIRST;
        loop {
            if self.tx.is_closed() || *self.expired.1.borrow() {
                return;
            }
            match self.stream(&mut from, &mut wait).await {
                Ok(()) => {}
                Err(StoreError::Expired { .. }) => {
                    // Every stream of this watch ends: the caller lists again.
                    self.expired.0.send_replace(true);
                    return;
                }
                Err(e) => tracing::warn!(error = %e, kind = self.kind.kind, "watch broke; resuming"),
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.tx.closed() => return,
                _ = self.expired.1.changed() => return,
            }
            wait = (wait * 2).min(RESUME_MOST);
        }
    }

    async fn stream(&mut self, from: &mut u64, wait: &mut Duration) -> Result<(), StoreError> {
        let url = format!("{}&resourceVersion={from}", self.url);
        let request = http::Request::get(url).body(Vec::new()).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let stream = self.cluster.client.request_events::<Value>(request).await.map_err(error)?;
        let mut stream = std::pin::pin!(stream);
        loop {
            let item = tokio::select! {
                item = tokio::time::timeout(WATCH_SILENCE, stream.next()) => item,
                _ = self.expired.1.changed() => return Ok(()),
            };
            let event = match item {
                Err(_) | Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => return Err(error(e)),
                Ok(Some(Ok(event))) => event,
            };
            let (kind, object) = match event {
                WatchEvent::Added(o) => (EventType::Added, o),
                WatchEvent::Modified(o) => (EventType::Modified, o),
                WatchEvent::Deleted(o) => (EventType::Deleted, o),
                WatchEvent::Bookmark(b) => {
                    if let Ok(v) = b.metadata.resource_version.parse::<u64>() {
                        *from = (*from).max(v);
                    }
                    continue;
                }
                WatchEvent::Error(s) if s.code == 410 => {
                    return Err(StoreError::Expired { requested: *from, oldest: 0 })
                }
                WatchEvent::Error(s) => return Err(StoreError::Io(format!("watch: {} ({})", s.message, s.code))),
            };
            let Ok(stored) = self.cluster.stored(&self.kind, object) else { continue };
            *from = (*from).max(stored.resource_version);
            *wait = RESUME_FIRST;
            let described = self.cluster.note_device_info(&stored, kind == EventType::Deleted);
            if self.tx.send(Event { kind, object: Arc::new(stored) }).is_err() {
                return Ok(());
            }
            // A device plugin reported on a node's chips: the node, read
            // again with it, changes for whoever follows nodes.
            if let Some(node) = described {
                let key = ObjectKey::new(kinds::RINGLEADER_NODE.0, kinds::RINGLEADER_NODE.1, "", &node);
                if let Ok(Some(n)) = self.cluster.get_async(&key).await {
                    let _ = self.tx.send(Event { kind: EventType::Modified, object: Arc::new(n) });
                }
            }
        }
    }
}
