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

pub mod aggregate;
pub mod http;
pub mod process;

use crate::history::{Config as HistoryConfig, History};
use aggregate::Aggregate;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use ringleader_store::{Selector, Store, StoreError};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

/// `Content-Type` of the exposition (the Prometheus text format, which
/// `promtool check metrics` reads).
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds (seconds) of the scheduling-latency histogram buckets.
pub const LATENCY_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];
/// Upper bounds (seconds) of API request latency (kube-apiserver's, shortened).
const REQUEST_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// Upper bounds (seconds) of a job's submission-to-running time.
const JOB_START_BUCKETS: &[f64] = &[0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];
/// kube-scheduler's profile label: ringleader has one scheduler profile.
const PROFILE: &str = "ringleader";

/// Annotation holding the device IDs a pod was bound to.
pub const DEVICES_ANNOTATION: &str = "ringleader.io/devices";
/// Label or annotation naming a pod's queue.
pub const QUEUE_KEY: &str = "volcano.sh/queue-name";

type Labels2 = [(&'static str, String); 2];
type Labels3 = [(&'static str, String); 3];
type Labels4 = [(&'static str, String); 4];
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS.iter().copied())
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS.iter().copied())
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
    attempts: Family<Labels2, Counter>,
    pod_latency: Histogram,
    attempt_duration: HistogramFamily<Labels2>,
    victims: Histogram,
    preemption_attempts: Counter,
    requests: Family<Labels4, Counter>,
    request_duration: HistogramFamily<Labels3>,
    watches: Family<Labels3, Gauge>,
    job_start: Histogram,
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
        Metrics::build(PathBuf::from("/proc"), config)
    }

    fn build(proc_dir: PathBuf, history: HistoryConfig) -> Metrics {
        let mut registry = Registry::default();
        let attempts = Family::<Labels2, Counter>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Pods the scheduler tried to place, by result (scheduled, unschedulable) and profile",
            attempts.clone(),
        );
        let pod_latency = latency_histogram();
        registry.register(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "Seconds from a pod's creation to its binding to a node, over every attempt",
            pod_latency.clone(),
        );
        let attempt_duration: HistogramFamily<Labels2> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Seconds one scheduling session took (every waiting gang at once), by result and profile",
            attempt_duration.clone(),
        );
        let victims = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        registry.register(
            "scheduler_preemption_victims",
            "Pods evicted (preempted or reclaimed) per scheduling session that evicted any",
            victims.clone(),
        );
        let preemption_attempts = Counter::default();
        registry.register(
            "scheduler_preemption_attempts",
            "Scheduling sessions that evicted pods",
            preemption_attempts.clone(),
        );
        let requests = Family::<Labels4, Counter>::default();
        registry.register(
            "apiserver_request",
            "API requests by verb, API group, resource and HTTP status code",
            requests.clone(),
        );
        let request_duration: HistogramFamily<Labels3> = Family::new_with_constructor(request_histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Seconds to answer an API request (to its headers; watches are left out), by verb, group and resource",
            request_duration.clone(),
        );
        let watches = Family::<Labels3, Gauge>::default();
        registry.register(
            "apiserver_longrunning_requests",
            "Watch streams open now, by group and resource",
            watches.clone(),
        );
        let job_start = Histogram::new(JOB_START_BUCKETS.iter().copied());
        registry.register(
            "ringleader_job_start_duration_seconds",
            "Seconds from a job's submission to its first run (the job controller's start time), once per job",
            job_start.clone(),
        );
        let aggregate = Arc::new(Mutex::new(Aggregate::default()));
        let store_version = Arc::new(AtomicU64::new(0));
        registry.register_collector(Box::new(Figures {
            aggregate: aggregate.clone(),
            store_version: store_version.clone(),
            proc_dir,
        }));
        Metrics {
            inner: Arc::new(Inner {
                registry,
                aggregate,
                store_version,
                following: AtomicBool::new(false),
                attempts,
                pod_latency,
                attempt_duration,
                victims,
                preemption_attempts,
                requests,
                request_duration,
                watches,
                job_start,
                history: Arc::new(Mutex::new(History::new(history))),
            }),
        }
    }

    /// Records the time from a pod's creation to its binding.
    pub fn observe_scheduling_latency(&self, secs: f64) {
        if secs.is_finite() && secs >= 0.0 {
            self.inner.pod_latency.observe(secs);
        }
    }

    /// Records one scheduling session: pods bound, pods left unschedulable,
    /// pods evicted, and the seconds it took.
    pub fn observe_schedule(&self, bound: usize, unschedulable: usize, evicted: usize, secs: f64) {
        let i = &self.inner;
        let labels = |result: &str| [("result", result.to_string()), ("profile", PROFILE.to_string())];
        if bound > 0 {
            i.attempts.get_or_create(&labels("scheduled")).inc_by(bound as u64);
        }
        if unschedulable > 0 {
            i.attempts.get_or_create(&labels("unschedulable")).inc_by(unschedulable as u64);
        }
        if secs.is_finite() && secs >= 0.0 {
            let result = if bound > 0 { "scheduled" } else { "unschedulable" };
            i.attempt_duration.get_or_create(&labels(result)).observe(secs);
        }
        if evicted > 0 {
            i.preemption_attempts.inc();
            i.victims.observe(evicted as f64);
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
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.inner.registry)
            .map_err(|_| StoreError::Io("encoding the metrics failed".into()))?;
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
                        inner.job_start.observe(secs);
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
}

impl Collector for Figures {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let families = lock(&self.aggregate).families();
        for (name, help, series) in &families {
            if series.is_empty() {
                continue;
            }
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, value) in series {
                metric.encode_family(labels)?.encode_gauge(value)?;
            }
        }
        let version = self.store_version.load(Ordering::Acquire);
        encoder
            .encode_descriptor(
                "ringleader_store_resource_version",
                "The store's version: the resourceVersion of its last write",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&(version as f64))?;
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

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str()
}

/// A node's hardware profile, from whichever description it carries.
pub fn node_profile(node: &Value) -> Option<std::borrow::Cow<'static, ringleader_topology::Profile>> {
    use ringleader_topology::parse::{npu_smi, nvidia_smi};
    use std::borrow::Cow;
    if let Some(name) = str_at(node, &["spec", "profile"]) {
        return ringleader_topology::builtin(name).map(Cow::Borrowed);
    }
    if let Some(text) = str_at(node, &["spec", "topologyText"]) {
        let name = str_at(node, &["metadata", "name"]).unwrap_or_default();
        return nvidia_smi::profile_from_topo(name, text, Default::default(), "NVIDIA GPU").ok().map(Cow::Owned);
    }
    if let Some(text) = str_at(node, &["spec", "npuSmiText"]) {
        return npu_smi::parse_info(text).and_then(|i| npu_smi::profile_from_info(&i)).ok().map(|(p, _)| Cow::Owned(p));
    }
    None
}

/// A node's device count from its hardware description.
pub fn node_device_total(node: &Value) -> Option<usize> {
    if let Some(n) = node.pointer("/status/capacity/devices").and_then(Value::as_u64) {
        return usize::try_from(n).ok();
    }
    node_profile(node).map(|p| p.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_store::{EventType, ObjectKey};
    use serde_json::json;

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
        let labels = http::classify(&axum::http::Method::GET, "/api/v1/namespaces/ns/pods", None);
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
