//! One scheduling cycle over a snapshot (Volcano's session): open a session
//! on a copy of the cluster with the running workloads' devices taken, run
//! the configured actions in order (`enqueue → allocate → backfill →
//! preempt → reclaim`), and close it into decisions — bindings, evictions
//! (each naming the job that caused it) and, for every job left pending, why.
//!
//! Nothing outside the session changes; time comes in as `now`.
//!
//! ```text
//! Snapshot ──open──► Session ──actions──► Outcome {bindings, evictions, pending, phases}
//! ```
//!
//! A gang is tried inside a [`Statement`]: evictions and its placement are
//! made on a copy of the cluster and either committed together or dropped.

mod state;

pub(crate) use state::{Amount, Evict, JobCursor, JobInfo, Plugin, Reservation, Shares, Status};
pub use state::{Eviction, Outcome, PodGroupPhase, Session, Snapshot, Statement};

use crate::cluster::Cluster;
use crate::conf::SchedulerConf;
use crate::{actions, plugins};

/// Runs one session with this configuration: the whole cycle in one call.
pub fn run(snapshot: Snapshot, conf: &SchedulerConf, now: u64) -> Outcome {
    run_session(Session::open(snapshot, conf, now, plugins::from_conf(conf)), conf)
}

/// [`run`] for tests: the outcome, the device state the session ends with,
/// and whether its node groups still agree with that state. `per_node` runs
/// the session the way sessions ran before node groups and job buckets —
/// every job placed node by node, the next job found by a scan of every
/// job — the reference the fast path must agree with, decision for decision.
#[doc(hidden)]
pub fn run_traced(snapshot: Snapshot, conf: &SchedulerConf, now: u64, per_node: bool) -> (Outcome, Cluster, bool) {
    let mut session = Session::open(snapshot, conf, now, plugins::from_conf(conf));
    if per_node {
        session.groups = None;
        session.scan_jobs = true;
    }
    run_actions(&mut session, conf);
    let agree = session.groups.as_ref().is_none_or(|g| g.agrees(&session.cluster));
    let cluster = std::mem::take(&mut session.cluster);
    (session.close(), cluster, agree)
}

fn run_session(mut session: Session, conf: &SchedulerConf) -> Outcome {
    run_actions(&mut session, conf);
    session.close()
}

fn run_actions(session: &mut Session, conf: &SchedulerConf) {
    for action in conf.actions() {
        match action {
            "enqueue" => actions::enqueue::run(session),
            "allocate" => actions::allocate::run(session),
            "backfill" => actions::backfill::run(session),
            "preempt" => actions::preempt::run(session),
            "reclaim" => actions::reclaim::run(session),
            _ => {}
        }
    }
}
