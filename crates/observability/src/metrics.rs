//! `/metrics` in the Prometheus text format (0.0.4), encoded by the
//! `prometheus-client` crate. Three sources feed it:
//! - events pushed in by the controller manager and the HTTP layer
//!   (scheduling attempts and latency, preemptions, API requests), as
//!   counters and histograms;
//! - the store, followed by a watch in a thread of its own ([`aggregate`]),
//!   which keeps the gauges (pending pods, queues, devices, nodes, jobs)
//!   up to date one change at a time, so a scrape never lists the store;
//! - `/proc/self` ([`process`]) and the build, read at scrape time.
//!
//! Names follow kube-scheduler, kube-apiserver, kube-state-metrics and
//! Volcano where those have one; `docs/metrics.md` lists every family.
//! The manager's families ([`manager`]) are also what a standalone
//! Kubernetes-mode manager serves ([`Metrics::for_manager`], [`endpoint`]);
//! the API server's ([`http`]) are registered under `up` only.

pub mod aggregate;
pub mod api;
mod manager;
pub mod objects;
pub mod process;

use crate::history::{Config as HistoryConfig, History};
use aggregate::Aggregate;
use api::ApiFamilies;
use manager::ManagerFamilies;
pub use objects::{node_device_total, node_profile, DEVICES_ANNOTATION, QUEUE_KEY};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use ringleader_store::{Event, Selector, Store, StoreError, Stored};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

pub use manager::LATENCY_BUCKETS;
/// `Content-Type` of the exposition (the Prometheus text format, which
/// `promtool check metrics` reads).
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Which process exposes the figures, and so which families it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `ringleader up`: the manager's families and the API server's
    /// (requests, watches, stored objects, the store's version).
    ApiServer,
    /// A standalone manager (Kubernetes mode): the manager's families and
    /// its leader election; kube-apiserver exposes the API's own.
    Manager,
}

/// Handle through which other components of the process record metrics.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    aggregate: Arc<Mutex<Aggregate>>,
    store_version: Arc<AtomicU64>,
    following: AtomicBool,
    manager: ManagerFamilies,
    /// `None` in a standalone manager.
    api: Option<ApiFamilies>,
    /// Charts' history, sampled from `aggregate` by the follower thread.
    history: Arc<Mutex<History>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// An empty set of metrics; the store's figures appear once [`Metrics::follow`] runs.
    pub fn new() -> Metrics {
        Metrics::with_history(HistoryConfig::default())
    }

    /// [`Metrics::new`] with the history sampled and bounded as `config` says.
    pub fn with_history(config: HistoryConfig) -> Metrics {
        Metrics::build(PathBuf::from("/proc"), config, Scope::ApiServer)
    }

    /// The figures of a standalone controller manager (Kubernetes mode):
    /// the manager's families, `leader_election_master_status`, the gauges
    /// kept from the objects it is handed ([`Metrics::load_objects`],
    /// [`Metrics::apply_event`]), `process_*` and build info; none of the
    /// API server's. Its history is never sampled.
    pub fn for_manager() -> Metrics {
        Metrics::build(PathBuf::from("/proc"), HistoryConfig::default(), Scope::Manager)
    }

    fn build(proc_dir: PathBuf, history: HistoryConfig, scope: Scope) -> Metrics {
        let mut registry = Registry::default();
        let manager = ManagerFamilies::register(&mut registry, scope == Scope::Manager);
        let api = (scope == Scope::ApiServer).then(|| ApiFamilies::register(&mut registry));
        let aggregate = Arc::new(Mutex::new(Aggregate::default()));
        let store_version = Arc::new(AtomicU64::new(0));
        registry.register_collector(Box::new(Figures {
            aggregate: aggregate.clone(),
            store_version: store_version.clone(),
            proc_dir,
            scope,
        }));
        Metrics {
            inner: Arc::new(Inner {
                registry,
                aggregate,
                store_version,
                following: AtomicBool::new(false),
                manager,
                api,
                history: Arc::new(Mutex::new(History::new(history))),
            }),
        }
    }

    /// Records the time from a pod's creation to its binding.
    pub fn observe_scheduling_latency(&self, secs: f64) {
        self.inner.manager.observe_scheduling_latency(secs);
    }

    /// Records one scheduling session: pods bound, pods left unschedulable,
    /// pods evicted, and the seconds it took.
    pub fn observe_schedule(&self, bound: usize, unschedulable: usize, evicted: usize, secs: f64) {
        self.inner.manager.observe_schedule(bound, unschedulable, evicted, secs);
    }

    /// Sets whether this replica leads the Lease `name` (a standalone
    /// manager's election; a no-op under `up`, which elects none).
    pub fn set_leader(&self, name: &str, leading: bool) {
        self.inner.manager.set_leader(name, leading);
    }

    /// Resets the store-derived gauges to the objects of a list, for a
    /// process that follows objects itself (the standalone manager hands on
    /// its own list and watch, so the API server is not listed twice).
    /// [`Metrics::follow`] is then a no-op: the figures would count twice.
    pub fn load_objects(&self, objects: &[Stored]) {
        self.inner.following.store(true, Ordering::Release);
        lock(&self.inner.aggregate).load(objects.iter().map(|s| (&s.key, &s.object)));
    }

    /// Applies one change of the watch that follows [`Metrics::load_objects`]'s list.
    pub fn apply_event(&self, event: &Event) {
        let started = lock(&self.inner.aggregate).apply(event.kind, &event.object.key, &event.object.object);
        if let Some(secs) = started {
            self.inner.manager.job_start.observe(secs);
        }
    }

    /// Starts following the store (once per handle): a first list, then its
    /// watch, applied to the gauges in a thread of its own. The thread ends
    /// when the store is closed or every clone of this handle is dropped.
    pub fn follow(&self, store: &Store) {
        if self.inner.following.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let store = store.clone();
        let spawned = std::thread::Builder::new().name("metrics".into()).spawn(move || follow(weak, store));
        if let Err(e) = spawned {
            tracing::warn!("metrics: cannot start the store follower: {e}; store gauges stay empty");
            self.inner.following.store(false, Ordering::Release);
        }
    }

    /// Runs `f` over the history (held locked meanwhile: keep it short).
    pub fn with_history_read<T>(&self, f: impl FnOnce(&History) -> T) -> T {
        f(&lock(&self.inner.history))
    }

    /// The whole exposition. Its cost is the number of series, not of
    /// stored objects: nothing here reads the store but its version.
    pub fn render(&self, store: &Store) -> Result<String, StoreError> {
        self.inner.store_version.store(store.version(), Ordering::Release);
        self.encode().map_err(|_| StoreError::Io("encoding the metrics failed".into()))
    }

    /// The whole exposition as it stands (the store's version as last
    /// rendered or followed): what a process without a store serves.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.inner.registry)?;
        Ok(out)
    }
}

/// Lists, then applies the watch's events until the store closes or the
/// handle is gone. The store clone is dropped once the watch is open, so
/// this thread never keeps a store's files open on its own.
fn follow(weak: Weak<Inner>, store: Store) {
    let mut opened = None;
    // A watch from the list's own version expires only if history is pruned
    // in between: a few tries, then give up with a warning.
    for _ in 0..3 {
        let Ok((objects, version)) = store.list(&Selector::all()) else { break };
        if let Ok(watch) = store.watch(&Selector::all(), version) {
            opened = Some((objects, version, watch));
            break;
        }
    }
    drop(store);
    let Some((objects, version, mut watch)) = opened else {
        tracing::warn!("metrics: cannot list and watch the store; store gauges stay empty");
        return;
    };
    match weak.upgrade() {
        Some(inner) => {
            lock(&inner.aggregate).load(objects.iter().map(|s| (&s.key, &s.object)));
            inner.store_version.store(version, Ordering::Release);
        }
        None => return,
    }
    drop(objects);
    loop {
        match watch.recv_timeout(Duration::from_secs(1)) {
            Ok(first) => {
                let Some(inner) = weak.upgrade() else { return };
                let mut agg = lock(&inner.aggregate);
                let mut next = Some(first);
                while let Some(event) = next {
                    if let Some(secs) = agg.apply(event.kind, &event.object.key, &event.object.object) {
                        inner.manager.job_start.observe(secs);
                    }
                    next = watch.try_next();
                }
            }
            Err(RecvTimeoutError::Timeout) if weak.strong_count() > 0 => {}
            Err(_) => return,
        }
        if let Some(inner) = weak.upgrade() {
            sample_history(&inner);
        }
    }
}

/// One round of history samples when one is due. The figures are taken
/// under the aggregate's lock, then recorded under the history's, so a
/// reader of the history never waits on the aggregate.
fn sample_history(inner: &Inner) {
    let Some(t) = lock(&inner.history).due(ringleader_api::time::now()) else { return };
    let figures = lock(&inner.aggregate).history_figures();
    let mut history = lock(&inner.history);
    let dropped = history.dropped();
    history.record(t, figures);
    if history.dropped() > dropped && dropped == 0 {
        tracing::warn!(
            "history: more series than --history-series ({}) in one round; the rest are not kept",
            history.config().max_series
        );
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The families computed at scrape time: the store gauges, the store
/// version, `process_*` and build info.
#[derive(Debug)]
struct Figures {
    aggregate: Arc<Mutex<Aggregate>>,
    store_version: Arc<AtomicU64>,
    proc_dir: PathBuf,
    scope: Scope,
}

impl Collector for Figures {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let api_server = self.scope == Scope::ApiServer;
        let families = lock(&self.aggregate).families();
        for (name, help, series) in &families {
            // On a Kubernetes cluster kube-apiserver has the stored objects
            // and kube-state-metrics the `kube_*` node figures: a manager's
            // copy would be counted twice by whatever sums them.
            let theirs = name.starts_with("apiserver_") || name.starts_with("kube_");
            if series.is_empty() || (!api_server && theirs) {
                continue;
            }
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, value) in series {
                metric.encode_family(labels)?.encode_gauge(value)?;
            }
        }
        if api_server {
            let version = self.store_version.load(Ordering::Acquire);
            encoder
                .encode_descriptor(
                    "ringleader_store_resource_version",
                    "The store's version: the resourceVersion of its last write",
                    None,
                    MetricType::Gauge,
                )?
                .encode_gauge(&(version as f64))?;
        }
        for (name, help, counter, value) in process::figures(&self.proc_dir) {
            let kind = if counter { MetricType::Counter } else { MetricType::Gauge };
            let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
            if counter {
                metric.encode_counter::<NoLabelSet, f64, f64>(&value, None)?;
            } else {
                metric.encode_gauge(&value)?;
            }
        }
        encoder
            .encode_descriptor("ringleader_build_info", "Always 1; the version of this build", None, MetricType::Gauge)?
            .encode_family(&[("version", env!("CARGO_PKG_VERSION"))])?
            .encode_gauge(&1i64)?;
        Ok(())
    }
}

impl Metrics {
    /// Counts and times one answered API request (the API server's
    /// families only; other processes have none).
    pub fn observe_request(&self, labels: &api::RequestLabels, code: u16, secs: f64) {
        if let Some(api) = &self.inner.api {
            api.observe(labels, code, secs);
        }
    }

    /// A guard counting one open watch stream until it is dropped.
    pub fn open_watch(&self, labels: &api::RequestLabels) -> api::WatchGuard {
        api::WatchGuard::open(self.inner.api.as_ref(), labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_store::{EventType, ObjectKey};
    use serde_json::{json, Value};

    /// The value of the first sample line starting with `prefix`.
    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
    }

    #[test]
    fn pushed_figures_are_encoded_with_their_types() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let m = Metrics::new();
        m.observe_scheduling_latency(0.003);
        m.observe_scheduling_latency(2.0);
        m.observe_scheduling_latency(f64::NAN);
        m.observe_schedule(3, 2, 0, 0.01);
        m.observe_schedule(0, 2, 4, 0.02);
        let labels = api::classify(&axum::http::Method::GET, "/api/v1/namespaces/ns/pods", None);
        m.observe_request(&labels, 200, 0.004);
        let text = m.render(&store).expect("render");
        assert!(text.contains("# TYPE scheduler_schedule_attempts_total counter\n"), "{text}");
        assert_eq!(
            sample(&text, "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"ringleader\"}"),
            Some(3.0)
        );
        assert_eq!(sample(&text, "scheduler_schedule_attempts_total{result=\"unschedulable\""), Some(4.0));
        assert_eq!(sample(&text, "scheduler_pod_scheduling_sli_duration_seconds_bucket{le=\"0.005\"}"), Some(1.0));
        assert_eq!(sample(&text, "scheduler_pod_scheduling_sli_duration_seconds_count"), Some(2.0));
        assert_eq!(sample(&text, "scheduler_preemption_victims_sum"), Some(4.0));
        assert_eq!(sample(&text, "scheduler_preemption_attempts_total"), Some(1.0));
        assert_eq!(
            sample(&text, "apiserver_request_total{verb=\"LIST\",group=\"\",resource=\"pods\",code=\"200\"}"),
            Some(1.0)
        );
        assert_eq!(sample(&text, "ringleader_build_info{version=\""), Some(1.0));
        assert!(text.contains("# TYPE ringleader_store_resource_version gauge\n"), "{text}");
        if std::path::Path::new("/proc/self/stat").exists() {
            assert!(sample(&text, "process_resident_memory_bytes").is_some_and(|v| v > 0.0), "{text}");
            assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"), "{text}");
        }
        assert!(!text.contains("_total gauge"), "no gauge ends in _total: {text}");
    }

    #[test]
    fn the_store_is_followed_not_listed_per_scrape() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        store
            .create(json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
                "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true}}))
            .expect("node");
        let m = Metrics::new();
        m.follow(&store);
        m.follow(&store);
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
            "annotations": {DEVICES_ANNOTATION: "0,1"}}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        store.create(pod).expect("pod");
        let want = "ringleader_device_allocated{node=\"n1\",device=\"1\",resource=\"nvidia.com/gpu\"";
        let mut text = String::new();
        // Bounded wait for the follower thread to apply the pod's event.
        for _ in 0..200 {
            text = m.render(&store).expect("render");
            if sample(&text, want) == Some(1.0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(sample(&text, want), Some(1.0), "{text}");
        assert_eq!(sample(&text, "ringleader_store_resource_version"), Some(store.version() as f64));
        assert_eq!(
            sample(&text, "kube_node_status_condition{node=\"n1\",condition=\"Ready\",status=\"true\"}"),
            Some(1.0)
        );
    }

    #[test]
    fn a_standalone_manager_exposes_its_families_and_none_of_the_api_server_s() {
        let m = Metrics::for_manager();
        m.set_leader("ringleader-manager", false);
        let text = m.encode().expect("encode");
        assert_eq!(sample(&text, "leader_election_master_status{name=\"ringleader-manager\"}"), Some(0.0));
        m.set_leader("ringleader-manager", true);
        m.observe_schedule(2, 1, 1, 0.01);
        m.observe_scheduling_latency(0.2);
        // The objects as the manager's own list and watch hand them on.
        let stored = |object: Value| Stored { key: ObjectKey::of(&object).expect("key"), resource_version: 1, object };
        let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "research"}, "spec": {"weight": 2}});
        let waiting = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "ns",
            "labels": {QUEUE_KEY: "research"}},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable"}]}});
        let job = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"state": {"phase": "Pending"}}});
        let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true}});
        m.load_objects(&[stored(node), stored(queue), stored(waiting), stored(job.clone())]);
        let mut started = job;
        started["status"]["ringleader"] = json!({"start_time": 1_704_067_203.0});
        m.apply_event(&ringleader_store::Event { kind: EventType::Modified, object: Arc::new(stored(started)) });
        let text = m.encode().expect("encode");
        assert_eq!(sample(&text, "leader_election_master_status{name=\"ringleader-manager\"}"), Some(1.0));
        assert_eq!(
            sample(&text, "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"ringleader\"}"),
            Some(2.0)
        );
        assert_eq!(sample(&text, "scheduler_preemption_attempts_total"), Some(1.0));
        assert_eq!(sample(&text, "scheduler_pod_scheduling_sli_duration_seconds_count"), Some(1.0));
        assert_eq!(sample(&text, "scheduler_pending_pods{queue=\"research\",reason=\"Unschedulable\"}"), Some(1.0));
        assert_eq!(sample(&text, "volcano_queue_weight{queue_name=\"research\"}"), Some(2.0));
        assert_eq!(sample(&text, "ringleader_job_start_duration_seconds_sum"), Some(3.0));
        assert_eq!(sample(&text, "ringleader_build_info{version=\""), Some(1.0));
        let device = "ringleader_device_allocated{node=\"n1\",device=\"0\",resource=\"nvidia.com/gpu\"";
        assert_eq!(sample(&text, device), Some(0.0), "{text}");
        for not_here in ["apiserver_", "ringleader_store_resource_version", "kube_node_status_condition"] {
            assert!(!text.contains(not_here), "no {not_here} in a standalone manager's exposition:\n{text}");
        }
        // A relist starts the gauges over; a later `follow` would count twice, so it is refused.
        m.load_objects(&[]);
        assert_eq!(sample(&m.encode().expect("encode"), "scheduler_pending_pods{"), None);
        assert!(m.inner.following.load(Ordering::Acquire));
        // `up`'s exposition has no election.
        assert!(!Metrics::new().encode().expect("encode").contains("leader_election"));
    }

    /// Not a timed assertion: prints what one scrape costs over a store
    /// state of 50,000 pods on 6,250 nodes (figure in BENCHMARKS.md).
    #[test]
    #[ignore]
    fn scrape_at_50000_pods() {
        let m = Metrics::new();
        let nodes = 6_250;
        let mut objects = Vec::new();
        for n in 0..nodes {
            objects.push(
                json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": format!("n{n}")},
                "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true}}),
            );
        }
        for p in 0..50_000 {
            let node = p % nodes;
            objects.push(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p{p}"), "namespace": "ns", "labels": {QUEUE_KEY: format!("q{}", p % 10)},
                    "annotations": {DEVICES_ANNOTATION: format!("{}", p / nodes)}},
                "spec": {"nodeName": format!("n{node}")}, "status": {"phase": "Running"}}));
        }
        let keyed: Vec<(ObjectKey, Value)> =
            objects.into_iter().map(|o| (ObjectKey::of(&o).expect("key"), o)).collect();
        let started = std::time::Instant::now();
        lock(&m.inner.aggregate).load(keyed.iter().map(|(k, v)| (k, v)));
        let load = started.elapsed();
        let (key, mut pod) = keyed[nodes].clone();
        let started = std::time::Instant::now();
        for i in 0..1000 {
            pod["status"]["phase"] = json!(if i % 2 == 0 { "Succeeded" } else { "Running" });
            lock(&m.inner.aggregate).apply(EventType::Modified, &key, &pod);
        }
        let per_event = started.elapsed() / 1000;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let mut best = Duration::MAX;
        let mut bytes = 0;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            bytes = m.render(&store).expect("render").len();
            best = best.min(started.elapsed());
        }
        println!(
            "50000 pods, {nodes} nodes: first load {load:?}, one pod event {per_event:?}, scrape {best:?} (best of 5), {bytes} bytes"
        );
    }
}
