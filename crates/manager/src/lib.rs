//! The controller manager of ringleader: the job controller, the scheduler
//! and the node lifecycle run as one watch-driven loop over the store. It
//! owns no logic of its own beyond wiring: the pure `controller` and
//! `scheduler` crates decide, this crate observes (a cache fed by the
//! store's watch, rebuilt from a list at start, so a restart resumes where
//! the store stands) and writes their decisions back as store batches.
//! Who writes which field is in `docs/control-plane.md`.

pub mod cache;
pub mod events;
pub mod hot_reset;
pub mod invalid;
pub mod jobs;
pub mod mindie;
pub mod nodes;
pub mod platform;
pub mod pods;
pub mod ports;
pub mod schedule;

use cache::Cache;
use ringleader_controller::lifecycle::ControllerConfig;
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_store::{Backend, Selector, StoreError};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// Why the manager stopped.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A bug or an impossible state, described.
    #[error("{0}")]
    Internal(String),
}

/// Receives each pod's creation-to-binding latency (seconds).
pub type LatencyObserver = Arc<dyn Fn(f64) + Send + Sync>;

/// Receives each scheduling session: pods bound, pods left unschedulable,
/// pods evicted, and the session's wall time (the API server's metrics).
pub type ScheduleObserver = Arc<dyn Fn(&schedule::Pass, Duration) + Send + Sync>;

/// Called after every wake-up of the loop (a pass or not): the liveness
/// signal health checks read (see `ringleader_server::health`).
pub type Heartbeat = Arc<dyn Fn() + Send + Sync>;

/// What the manager's cache takes in, handed on as it arrives.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// The objects of a list: at start, or when a watch could not resume
    /// (everything seen before is to be forgotten).
    Listed(&'a [ringleader_store::Stored]),
    /// One change of the watch that follows the list.
    Changed(&'a ringleader_store::Event),
}

/// Sees what the cache sees, so figures kept from objects (the metrics of a
/// standalone manager) need no list or watch of their own on the API server.
/// Called on the loop's task: it must be quick and never block.
pub type ObjectObserver = Arc<dyn Fn(Observed<'_>) + Send + Sync>;

/// Settings of the manager.
#[derive(Clone)]
pub struct ManagerConfig {
    /// A node whose agent has not heartbeaten for this long is NotReady.
    pub heartbeat_timeout: Duration,
    /// Longest wait between passes when nothing happens (timers, retries).
    pub resync: Duration,
    /// Scheduler actions and plugins.
    pub scheduler: SchedulerConf,
    /// Job controller settings (fault grace period, env options).
    pub controller: ControllerConfig,
    /// Called with scheduling latencies (the API server's histogram).
    pub observe_latency: Option<LatencyObserver>,
    /// Called after each scheduling session that had pods to place.
    pub observe_schedule: Option<ScheduleObserver>,
    /// Events last seen longer ago than this are deleted (Kubernetes: 1 h).
    pub event_ttl: Duration,
    /// Pods on a node NotReady this long are marked Failed (`NodeLost`)
    /// and their jobs' policies applied (Kubernetes' not-ready toleration: 300 s).
    pub node_lost_toleration: Duration,
    /// Told the loop is alive, after every wake-up.
    pub heartbeat: Option<Heartbeat>,
    /// Told of every list and watch event the cache applies.
    pub observe_objects: Option<ObjectObserver>,
    /// Seconds a hot reset of a faulty chip's ring takes; `None`: no hot
    /// reset (see [`hot_reset`]).
    pub hot_reset_secs: Option<u64>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        let mut controller = ControllerConfig::default();
        // Virtual nodes have no cluster DNS: peers are reached by address.
        controller.env.use_addresses = true;
        ManagerConfig {
            heartbeat_timeout: Duration::from_secs(40),
            resync: Duration::from_millis(500),
            scheduler: SchedulerConf::default().without("drf"),
            controller,
            observe_latency: None,
            observe_schedule: None,
            event_ttl: Duration::from_secs(3600),
            node_lost_toleration: Duration::from_secs(300),
            heartbeat: None,
            observe_objects: None,
            hot_reset_secs: None,
        }
    }
}

/// Runs until `shutdown` turns true.
pub async fn run<B: Backend>(
    store: B,
    config: ManagerConfig,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ManagerError> {
    let mut cache = Cache::default();
    let (objects, version) = store.list(&Selector::all())?;
    if let Some(observe) = &config.observe_objects {
        observe(Observed::Listed(&objects));
    }
    cache.load(objects);
    let mut watch = store.watch(&Selector::all(), version)?;
    let mut timers: HashMap<String, f64> = HashMap::new();
    // Everything is dirty at start: the cache was just rebuilt.
    let mut dirty = Dirty::All;
    let mut next_expiry = 0.0;
    loop {
        let mut changed = matches!(dirty, Dirty::All);
        tokio::select! {
            event = watch.events.recv() => {
                let Some(event) = event else { return Ok(()) };
                let observe = |event: &ringleader_store::Event| {
                    if let Some(observe) = &config.observe_objects {
                        observe(Observed::Changed(event));
                    }
                };
                observe(&event);
                changed |= note(&mut cache, &mut dirty, &event);
                while let Ok(event) = watch.events.try_recv() {
                    observe(&event);
                    changed |= note(&mut cache, &mut dirty, &event);
                }
            }
            _ = tokio::time::sleep(config.resync) => {}
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() {
            return Ok(());
        }
        let now = ringleader_api::time::now();
        for (uid, _) in timers.iter().filter(|(_, &t)| t <= now) {
            dirty.add(uid);
            changed = true;
        }
        // Node lifecycle is checked on every wake-up: it is one pass over nodes.
        if nodes::mark_not_ready(&store, &mut cache, config.heartbeat_timeout.as_secs_f64(), now)? {
            dirty = Dirty::All;
            changed = true;
        }
        if let Some(secs) = config.hot_reset_secs {
            if hot_reset::pass(&store, &mut cache, secs, now)? {
                dirty = Dirty::All;
                changed = true;
            }
        }
        if changed {
            let todo = std::mem::replace(&mut dirty, Dirty::Some(BTreeSet::new()));
            pass_dirty(&store, &mut cache, &config, &mut timers, now, &todo)?;
        }
        if now >= next_expiry {
            events::expire(&store, &mut cache, config.event_ttl.as_secs_f64(), now)?;
            next_expiry = now + events::EXPIRY_INTERVAL;
        }
        if let Some(beat) = &config.heartbeat {
            beat();
        }
    }
}

/// Which jobs a pass must reconcile: those whose object or owned objects
/// changed, or all of them after a node changed (faults concern everyone).
#[derive(Debug, Clone)]
pub enum Dirty {
    /// Every job.
    All,
    /// Jobs by uid.
    Some(BTreeSet<String>),
}

impl Dirty {
    fn add(&mut self, uid: &str) {
        if let Dirty::Some(set) = self {
            set.insert(uid.to_string());
        }
    }

    pub(crate) fn contains(&self, uid: &str) -> bool {
        match self {
            Dirty::All => true,
            Dirty::Some(set) => set.contains(uid),
        }
    }
}

/// Applies an event and marks what it makes dirty.
fn note(cache: &mut Cache, dirty: &mut Dirty, event: &ringleader_store::Event) -> bool {
    let object = &event.object.object;
    match event.object.key.kind.as_str() {
        // A heartbeat alone changes nothing a job or the scheduler sees; with
        // every agent beating, treating it as a node change would reconcile
        // every job every few seconds.
        "Node" if cache.get(&event.object.key).is_some_and(|old| heartbeat_only(&old.object, object)) => {
            cache.apply(event);
            return false;
        }
        "Node" => *dirty = Dirty::All,
        // Events describe work, they never call for any: one that made its
        // object dirty could be answered by another event, without end.
        "Event" => {
            cache.apply(event);
            return false;
        }
        _ => {
            let own = object.pointer("/metadata/uid").and_then(Value::as_str);
            let owner = pods::owner_uid(object);
            // An owned job (a platform Run's framework job) is reconciled on
            // its own events; an owned object that goes away may have owned
            // others in turn, whom the sweep below must then collect.
            let key = &event.object.key;
            let is_job = ringleader_api::kinds::JOB_KINDS.iter().any(|(a, k)| *a == key.api_version && *k == key.kind);
            if let (Some(_), Some(own)) = (owner, own) {
                if is_job || event.kind == ringleader_store::EventType::Deleted {
                    dirty.add(own);
                }
            }
            let uid = owner.or(own);
            if let Some(uid) = uid {
                dirty.add(uid);
                cache.apply(event);
                // Even the echo of the manager's own write (the cache has it
                // already) calls for one more reconcile of its job: the status
                // it wrote was computed before those pods existed. That next
                // reconcile writes nothing new, so the echoes stop.
                return true;
            }
        }
    }
    cache.apply(event).is_some()
}

/// Whether two states of a Node differ at most in `status.lastHeartbeat`
/// (and the resourceVersion that change brought).
fn heartbeat_only(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else { return false };
    let same_except = |a: Option<&Value>, b: Option<&Value>, skip: &str| match (a, b) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            a.len() - usize::from(a.contains_key(skip)) == b.len() - usize::from(b.contains_key(skip))
                && a.iter().all(|(k, v)| k == skip || b.get(k) == Some(v))
        }
        (a, b) => a == b,
    };
    old.len() == new.len()
        && old.iter().all(|(k, v)| match k.as_str() {
            "status" => same_except(Some(v), new.get(k), "lastHeartbeat"),
            "metadata" => same_except(Some(v), new.get(k), "resourceVersion"),
            _ => new.get(k) == Some(v),
        })
}

/// One pass: jobs, then scheduling, then jobs again when something was
/// bound (so a gang is released to its agents in the same pass).
pub fn pass(
    store: &dyn Backend,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
) -> Result<(), ManagerError> {
    pass_dirty(store, cache, config, timers, now, &Dirty::All)
}

/// [`pass`] reconciling only the dirty jobs (the scheduler always sees all).
///
/// An object that cannot be modelled (see [`invalid`]) is skipped for the
/// pass and marked; only a failing store ends it.
pub fn pass_dirty(
    store: &dyn Backend,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
    dirty: &Dirty,
) -> Result<(), ManagerError> {
    // Before the job controller: a Run's new framework job is then in the
    // cache for this very pass.
    platform::pass(store, cache, now)?;
    let mut findings = invalid::Findings::default();
    invalid::check_cluster(cache, &mut findings);
    // Nodes are read once a pass: neither the job controller nor the
    // scheduler writes them.
    let views = jobs::node_views(cache);
    reconcile_all(store, cache, config, timers, now, dirty, &views, &mut findings)?;
    let all = jobs::jobs(cache, config);
    let by_owner = jobs::pods_by_owner(cache);
    let started = std::time::Instant::now();
    let result = schedule::schedule(store, cache, &all, &by_owner, &views, &config.scheduler, now, &findings)?;
    if let Some(observe) = config.observe_schedule.as_ref().filter(|_| result.sessions > 0) {
        observe(&result, started.elapsed());
    }
    if let Some(observe) = &config.observe_latency {
        for l in &result.latencies {
            observe(*l);
        }
    }
    // After the bindings (the table lists them), before the releases (a
    // MindIE controller is released only once its table exists).
    mindie::publish(store, cache, &all, &by_owner, &views)?;
    if result.bound > 0 || result.evicted > 0 {
        let touched = Dirty::Some(result.jobs.iter().cloned().collect());
        reconcile_all(store, cache, config, timers, now, &touched, &views, &mut findings)?;
    }
    invalid::write(store, cache, &findings, now)
}

#[allow(clippy::too_many_arguments)]
fn reconcile_all(
    store: &dyn Backend,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
    dirty: &Dirty,
    views: &[jobs::NodeView],
    findings: &mut invalid::Findings,
) -> Result<(), ManagerError> {
    let all = jobs::jobs(cache, config);
    let by_owner = jobs::pods_by_owner(cache);
    let held = jobs::held_devices(cache);
    invalid::check_jobs(cache, &all, dirty, findings);
    // A job skipped because it does not parse still owns its pods.
    let mut live: BTreeSet<String> = invalid::invalid_uids(cache, findings).into_iter().collect();
    // Platform objects own what the platform controller made for them.
    live.extend(platform::owner_uids(cache));
    for job in &all {
        live.insert(job.uid().to_string());
        if !dirty.contains(job.uid()) {
            continue;
        }
        timers.remove(job.uid());
        let pods = by_owner.get(job.uid()).map(Vec::as_slice).unwrap_or_default();
        invalid::check_pods(pods.iter(), findings);
        match jobs::reconcile_job(store, cache, job, pods, views, &held, now) {
            Ok(Some(at)) => {
                timers.insert(job.uid().to_string(), at);
            }
            Ok(None) => {}
            Err(ManagerError::Store(e)) => return Err(ManagerError::Store(e)),
            // Anything else is about this job alone: the others go on.
            Err(ManagerError::Internal(why)) => findings.skip(&job.stored.key, format!("reconcile: {why}")),
        }
    }
    timers.retain(|uid, _| live.contains(uid));
    // Orphans appear only where an owner went away: a deleted job (its uid is
    // dirty and no longer live) or an object written for one just deleted
    // (its owner's uid is dirty). Sweeping only then spares a pass over every
    // object on each pass.
    let owner_gone = match dirty {
        Dirty::All => true,
        Dirty::Some(set) => set.iter().any(|uid| !live.contains(uid)),
    };
    if !owner_gone {
        return Ok(());
    }
    jobs::collect_garbage(store, cache, &live, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(beat: f64, rv: &str, ready: bool) -> serde_json::Value {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
               "metadata": {"name": "n", "resourceVersion": rv},
               "spec": {"profile": "hgx-h100-8"},
               "status": {"ready": ready, "lastHeartbeat": beat, "unhealthyDevices": []}})
    }

    #[test]
    fn only_a_heartbeat_is_told_apart_from_a_node_change() {
        assert!(heartbeat_only(&node(1.0, "5", true), &node(2.0, "9", true)));
        assert!(!heartbeat_only(&node(1.0, "5", true), &node(2.0, "9", false)), "readiness changed");
        let mut faulty = node(2.0, "9", true);
        faulty["status"]["unhealthyDevices"] = json!([3]);
        assert!(!heartbeat_only(&node(1.0, "5", true), &faulty), "a device broke");
        let mut stopped = node(1.0, "9", true);
        stopped["spec"]["stopped"] = json!(true);
        assert!(!heartbeat_only(&node(1.0, "5", true), &stopped), "spec changed");
        let mut first = node(1.0, "5", true);
        if let Some(s) = first["status"].as_object_mut() {
            s.remove("lastHeartbeat");
        }
        assert!(heartbeat_only(&first, &node(2.0, "9", true)), "a first heartbeat is still only a heartbeat");
        let mut relabelled = node(2.0, "9", true);
        relabelled["metadata"]["labels"] = json!({"gpu-model": "h100"});
        assert!(!heartbeat_only(&node(1.0, "5", true), &relabelled), "labels changed");
    }
}
