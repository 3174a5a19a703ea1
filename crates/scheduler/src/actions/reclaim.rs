//! `reclaim`: across queues, a waiting gang whose queue stays within its
//! deserved share (and capability) evicts whole gangs of other queues that
//! the plugins let it (proportion: the queue is reclaimable and uses more
//! than it deserves, and keeps its guarantee; priority: the victim is not of
//! higher priority) — never a VIP job — the fewest that make it fit.

use crate::admission::{admit, Amount};
use crate::plugins::Evict;
use crate::resources::Resources;
use crate::session::{Session, Status};
use crate::victims::{choose, note, votes};

/// Runs the action.
pub fn run(ss: &mut Session) {
    // Only running gangs can be victims; without any there is nothing to do.
    if !ss.jobs.iter().any(|v| v.status == Status::Running && !v.is_vip) {
        return;
    }
    let mut seen = vec![false; ss.jobs.len()];
    while let Some(j) =
        ss.next_job(|job| job.waiting() && !job.best_effort && !seen.get(job.order).copied().unwrap_or(true))
    {
        seen[ss.jobs[j].order] = true;
        let queue = ss.jobs[j].queue.clone();
        if ss.queues.closed(&queue).is_some() || !ss.queues.by_name.contains_key(&queue) {
            continue;
        }
        let candidates: Vec<usize> = ss
            .jobs
            .iter()
            .enumerate()
            .filter(|(v, job)| {
                job.status == Status::Running && !job.is_vip && job.queue != queue && votes(ss, j, *v, Evict::Reclaim)
            })
            .map(|(v, _)| v)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let allowed = |set: &[usize]| {
            admit(ss, j, set, Amount::Full, &Resources::default()).is_ok()
                && ss.plugins.iter().all(|p| p.allow_victims(ss, set, Evict::Reclaim))
        };
        match choose(ss, j, candidates, &allowed) {
            Some(c) => {
                let why = format!("reclaimed for queue {queue} by {}", ss.jobs[j].key);
                ss.commit(j, c.statement, c.placements, &why);
            }
            None => note(ss, j, "reclaim: no gangs of queues over their deserved share to evict would make room"),
        }
    }
}
