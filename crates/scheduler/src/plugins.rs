//! The plugins a configuration enables. Each is a small type that implements
//! only the extension points it needs — order queues, order jobs, admit a
//! job into its queue, vote on a victim, check a victim set — instead of
//! Volcano's forty registration hooks. Tiers keep their meaning for order:
//! the first plugin, in tier order, with an opinion decides.
//!
//! | plugin | order queues | order jobs | admit | victims |
//! |---|---|---|---|---|
//! | `priority` | | higher priority first | | preempt: strictly lower; reclaim: not higher |
//! | `gang` | | | | (victims are whole gangs; placement is all-or-nothing) |
//! | `drf` | | smaller namespace dominant share first | | |
//! | `proportion`, `capacity` | furthest below deserved first | | deserved share | reclaim: queue reclaimable and over deserved; keeps guarantees |
//!
//! `predicates`, `nodeorder` and `network-topology-aware` are the placement
//! code's ([`crate::place`]); `conformance`, `overcommit` and `binpack` are
//! accepted and do nothing here. Queue existence, state and capability are
//! checked whatever the configuration ([`crate::admission`]).

use crate::conf::SchedulerConf;
use crate::resources::{format_milli, Resources};
use crate::session::Session;
use crate::session::{Amount, Evict, Plugin, Shares};
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt::Debug;

impl Shares {
    /// The shares as the session stands.
    pub(crate) fn of(ss: &Session) -> Shares {
        let queue = ss
            .queues
            .by_name
            .keys()
            .map(|q| {
                let deserved = ss.deserved.get(q).cloned().unwrap_or_default();
                (q.clone(), ss.usage_under(q, &[]).dominant_share(&deserved))
            })
            .collect();
        let namespace =
            ss.namespaces.iter().map(|n| (n.clone(), ss.namespace_usage(n).dominant_share(&ss.total))).collect();
        Shares { queue, namespace }
    }
}

/// `priority`: PriorityClass values order jobs and bound who may be evicted.
#[derive(Debug)]
struct Priority;

impl Plugin for Priority {
    fn order_jobs(&self, ss: &Session, _: &Shares, a: usize, b: usize) -> Ordering {
        ss.jobs[b].priority.cmp(&ss.jobs[a].priority)
    }

    fn may_evict(&self, ss: &Session, j: usize, victim: usize, why: Evict) -> Option<bool> {
        let (p, v) = (ss.jobs[j].priority, ss.jobs[victim].priority);
        Some(match why {
            Evict::Preempt => v < p,
            // Reclaim restores queue shares; it may take equals, never betters.
            Evict::Reclaim => v <= p,
        })
    }
}

/// `gang`: all-or-nothing placement and whole-gang victims are the
/// mechanism itself; the plugin carries the `reservation` argument.
#[derive(Debug)]
struct Gang;

impl Plugin for Gang {}

/// `drf`: inside a queue, the namespace with the smallest dominant share goes first.
#[derive(Debug)]
struct Drf;

impl Plugin for Drf {
    fn orders_by_namespace(&self) -> bool {
        true
    }

    fn order_jobs(&self, ss: &Session, shares: &Shares, a: usize, b: usize) -> Ordering {
        let (ja, jb) = (&ss.jobs[a], &ss.jobs[b]);
        if ja.queue != jb.queue || ja.namespace == jb.namespace {
            return Ordering::Equal;
        }
        let share = |n: &str| shares.namespace.get(n).copied().unwrap_or(0.0);
        share(&ja.namespace).total_cmp(&share(&jb.namespace))
    }
}

/// `proportion` / `capacity`: deserved shares between queues.
#[derive(Debug)]
struct Proportion;

impl Plugin for Proportion {
    fn order_queues(&self, shares: &Shares, a: &str, b: &str) -> Ordering {
        let share = |q: &str| shares.queue.get(q).copied().unwrap_or(0.0);
        share(a).total_cmp(&share(b))
    }

    fn admit(
        &self,
        ss: &Session,
        j: usize,
        victims: &[usize],
        amount: Amount,
        extra: &Resources,
    ) -> Result<(), String> {
        if amount != Amount::Full {
            return Ok(());
        }
        let job = &ss.jobs[j];
        let q = job.queue.as_str();
        let deserved = ss.deserved.get(q).cloned().unwrap_or_default();
        let used = ss.usage_under(q, victims).plus(extra);
        match Resources::exceeds(&used, &job.request, &share_limit(ss, q)) {
            None => Ok(()),
            Some(r) => Err(format!(
                "queue {q} over deserved share: {r} requested {}, used {} of deserved {}",
                format_milli(job.request.get(&r)),
                format_milli(used.get(&r)),
                format_milli(deserved.get(&r))
            )),
        }
    }

    fn may_evict(&self, ss: &Session, _j: usize, victim: usize, why: Evict) -> Option<bool> {
        if why != Evict::Reclaim {
            return None;
        }
        let q = ss.jobs[victim].queue.as_str();
        let reclaimable = ss.queues.by_name.get(q).is_some_and(|info| info.reclaimable);
        Some(reclaimable && over_deserved(ss, q))
    }

    fn allow_victims(&self, ss: &Session, set: &[usize], why: Evict) -> bool {
        why != Evict::Reclaim || keeps_guarantees(ss, set)
    }
}

/// How far a queue may go: everything no other queue deserves. When other
/// queues ask for their shares this is the queue's own deserved share; when
/// it is alone it is the whole cluster, and a full cluster is explained by
/// its nodes, not by the queue.
fn share_limit(ss: &Session, queue: &str) -> Resources {
    let mut limit = Resources::default();
    // Other leaf queues: parents only sum their leaves.
    let others: Vec<&Resources> =
        ss.deserved.iter().filter(|(q, _)| q.as_str() != queue && !ss.queues.has_children(q)).map(|(_, d)| d).collect();
    for (r, total) in &ss.total.0 {
        let others: u64 = others.iter().map(|d| d.get(r)).sum();
        if others > 0 {
            limit.0.insert(r.clone(), total.saturating_sub(others));
        }
    }
    limit
}

/// Whether the queue holds more than it deserves of some resource.
fn over_deserved(ss: &Session, queue: &str) -> bool {
    let deserved = ss.deserved.get(queue).cloned().unwrap_or_default();
    ss.usage_under(queue, &[]).0.iter().any(|(r, u)| deserved.0.get(r).is_some_and(|d| u > d))
}

/// Whether every victim's queue keeps its guarantee once the set is gone
/// (a queue already below it only keeps what it has).
fn keeps_guarantees(ss: &Session, set: &[usize]) -> bool {
    let queues: BTreeSet<&str> = set.iter().map(|v| ss.jobs[*v].queue.as_str()).collect();
    queues.into_iter().all(|q| {
        let Some(info) = ss.queues.by_name.get(q) else { return true };
        let (after, now) = (ss.usage_under(q, set), ss.usage_under(q, &[]));
        info.guarantee.0.iter().all(|(r, g)| after.get(r) >= *g || now.get(r) < *g)
    })
}

/// The plugins of a configuration, in tier order.
pub(crate) fn from_conf(conf: &SchedulerConf) -> Vec<Box<dyn Plugin>> {
    let mut out: Vec<Box<dyn Plugin>> = Vec::new();
    let mut proportion = false;
    for p in conf.tiers.iter().flat_map(|t| &t.plugins) {
        match p.name.as_str() {
            "priority" => out.push(Box::new(Priority)),
            "gang" => out.push(Box::new(Gang)),
            "drf" => out.push(Box::new(Drf)),
            // The two queue plugins are one here: a queue's stated `deserved` is
            // capacity's rule, water-filling by weight proportion's.
            "proportion" | "capacity" if !proportion => {
                proportion = true;
                out.push(Box::new(Proportion));
            }
            _ => {}
        }
    }
    out
}
