//! The manager's loop: the cache fed by the store's watch, and on each
//! wake-up the passes of node lifecycle, platform, job controller and scheduler.

use crate::cache::Cache;
use crate::config::{ManagerConfig, Observed};
use crate::dirty::{note, Dirty};
use crate::error::ManagerError;
use crate::{
    deployments, disruption, endpoints, events, hot_reset, invalid, jobs, mindie, namespaces, nodes, platform,
    schedule, service_accounts, taints,
};
use ringleader_store::{Backend, Selector};
use std::collections::{BTreeSet, HashMap};

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
/// An object that cannot be modelled (see [`crate::invalid`]) is skipped for the
/// pass and marked; only a failing store ends it.
pub fn pass_dirty(
    store: &dyn Backend,
    cache: &mut Cache,
    config: &ManagerConfig,
    timers: &mut HashMap<String, f64>,
    now: f64,
    dirty: &Dirty,
) -> Result<(), ManagerError> {
    // First: what a terminating namespace holds is deleted before the job
    // controller would act on it.
    namespaces::finalize(store, cache, now)?;
    // Before the job controller: the pods it makes run as their namespace's `default`.
    service_accounts::ensure(store, cache)?;
    // Pods a NoExecute taint sends away go before the scheduler places more.
    taints::evict(store, cache, now)?;
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
    // Last: ReplicaSets and budgets count the pods as this pass left them.
    deployments::pass(store, cache, timers, now)?;
    disruption::pass(store, cache)?;
    // Endpoints name pods as this pass left them, too.
    endpoints::pass(store, cache, dirty)?;
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
    // Services own their EndpointSlices.
    let services = cache.of_kind(ringleader_api::kinds::service::API_VERSION, ringleader_api::kinds::service::KIND);
    live.extend(services.filter_map(|s| s.object.pointer("/metadata/uid")?.as_str().map(str::to_string)));
    let mut todo = Vec::new();
    for job in &all {
        live.insert(job.uid().to_string());
        if !dirty.contains(job.uid()) {
            continue;
        }
        timers.remove(job.uid());
        let pods = by_owner.get(job.uid()).map(Vec::as_slice).unwrap_or_default();
        invalid::check_pods(pods.iter(), findings);
        todo.push((job, pods));
    }
    for ((job, _), result) in todo.iter().zip(jobs::reconcile_jobs(store, cache, &todo, views, &held, now)?) {
        match result {
            Ok(Some(at)) => {
                timers.insert(job.uid().to_string(), at);
            }
            Ok(None) => {}
            // A failure that is about this job alone: the others went on.
            Err(why) => findings.skip(&job.stored.key, format!("reconcile: {why}")),
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
