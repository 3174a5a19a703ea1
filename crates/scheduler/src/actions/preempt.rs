//! `preempt`: inside one queue, a waiting gang evicts whole running gangs
//! the plugins let it (priority: strictly lower priority) — the fewest that
//! make it fit ([`crate::victims`]), never a VIP job — and takes their place
//! in the same statement. The queue's capability is checked with the victims
//! gone. Without a plugin that votes for victims (priority), nothing is evicted.

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
        let (queue, priority) = (ss.jobs[j].queue.clone(), ss.jobs[j].priority);
        if ss.queues.closed(&queue).is_some() || !ss.queues.by_name.contains_key(&queue) {
            continue;
        }
        let candidates: Vec<usize> = ss
            .jobs
            .iter()
            .enumerate()
            .filter(|(v, job)| {
                job.status == Status::Running && !job.is_vip && job.queue == queue && votes(ss, j, *v, Evict::Preempt)
            })
            .map(|(v, _)| v)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let allowed = |set: &[usize]| {
            admit(ss, j, set, Amount::Full, &Resources::default()).is_ok()
                && ss.plugins.iter().all(|p| p.allow_victims(ss, set, Evict::Preempt))
        };
        match choose(ss, j, candidates, &allowed) {
            Some(c) => {
                let why = format!("preempted by {} (priority {priority})", ss.jobs[j].key);
                ss.commit(j, c.statement, c.placements, &why);
            }
            None => note(ss, j, &format!("preempt: no lower-priority gangs of queue {queue} to evict would make room")),
        }
    }
}
