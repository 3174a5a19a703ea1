//! The controller manager of ringleader: the job controller, the scheduler
//! and the node lifecycle run as one watch-driven loop over the store. It
//! owns no logic of its own beyond wiring: the pure `controller` and
//! `scheduler` crates decide, this crate observes (a cache fed by the
//! store's watch, rebuilt from a list at start, so a restart resumes where
//! the store stands) and writes their decisions back as store batches.
//! Who writes which field is in `docs/control-plane.md`.

pub mod cache;
pub mod jobs;
pub mod nodes;
pub mod pods;
pub mod schedule;
pub mod time;

use cache::Cache;
use ringleader_controller::lifecycle::ControllerConfig;
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_store::{Selector, Store, StoreError};
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
        }
    }
}

/// Runs until `shutdown` turns true.
pub async fn run(
    store: Store,
    config: ManagerConfig,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ManagerError> {
    let mut cache = Cache::default();
    let (objects, version) = store.list(&Selector::all())?;
    cache.load(objects);
    let mut watch = store.watch(&Selector::all(), version)?;
    let mut timers: HashMap<String, f64> = HashMap::new();
    loop {
        let mut changed = false;
        tokio::select! {
            event = watch.events.recv() => {
                let Some(event) = event else { return Ok(()) };
                changed |= cache.apply(&event).is_some();
                while let Ok(event) = watch.events.try_recv() {
                    changed |= cache.apply(&event).is_some();
                }
            }
            _ = tokio::time::sleep(config.resync) => {}
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() {
            return Ok(());
        }
        let now = time::now();
        let due = timers.values().any(|&t| t <= now);
        // Node lifecycle is checked on every wake-up: it is one pass over nodes.
        changed |= nodes::mark_not_ready(&store, &mut cache, config.heartbeat_timeout.as_secs_f64(), now)?;
        if changed || due {
            pass(&store, &mut cache, &config, &mut timers, now)?;
        }
    }
}

/// One pass: jobs, then scheduling, then jobs again when something was
/// bound (so a gang is released to its agents in the same pass).
pub fn pass(
    store: &Store,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
) -> Result<(), ManagerError> {
    reconcile_all(store, cache, config, timers, now)?;
    let all = jobs::jobs(cache, config);
    let by_owner = jobs::pods_by_owner(cache);
    let views = jobs::node_views(cache);
    let result = schedule::schedule(store, cache, &all, &by_owner, &views, &config.scheduler, now)?;
    if let Some(observe) = &config.observe_latency {
        for l in &result.latencies {
            observe(*l);
        }
    }
    if result.bound > 0 || result.evicted > 0 {
        reconcile_all(store, cache, config, timers, now)?;
    }
    Ok(())
}

fn reconcile_all(
    store: &Store,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
) -> Result<(), ManagerError> {
    let all = jobs::jobs(cache, config);
    let by_owner = jobs::pods_by_owner(cache);
    let views = jobs::node_views(cache);
    let mut live = BTreeSet::new();
    timers.clear();
    for job in &all {
        live.insert(job.uid().to_string());
        let pods = by_owner.get(job.uid()).map(Vec::as_slice).unwrap_or_default();
        if let Some(at) = jobs::reconcile_job(store, cache, job, pods, &views, now)? {
            timers.insert(job.uid().to_string(), at);
        }
    }
    jobs::collect_garbage(store, cache, &live, now)
}
