//! `enqueue`: moves PodGroups from Pending to Inqueue when their queue can
//! take the gang's minimum (minAvailable pods) on top of what it runs and
//! what it already let in this session. Refused jobs stay Pending with the
//! queue's reason (unknown, Closed, over capability).

use crate::admission::admit;
use crate::resources::Resources;
use crate::session::Amount;
use crate::session::{Session, Status};
use std::collections::BTreeMap;

/// Runs the action.
pub fn run(ss: &mut Session) {
    let mut admitted: BTreeMap<String, Resources> = BTreeMap::new();
    let mut seen = vec![false; ss.jobs.len()];
    let mut cursor = ss.job_cursor();
    while let Some(j) =
        ss.next_job(&mut cursor, |job| job.waiting() && job.status == Status::Pending && !seen_of(&seen, job.order))
    {
        seen[ss.jobs[j].order] = true;
        // Jobs let in but not yet placed count against every queue above them too.
        let queue = ss.jobs[j].queue.clone();
        let mut extra = Resources::default();
        for (q, r) in &admitted {
            if ss.queues.is_under(q, &queue) || ss.queues.is_under(&queue, q) {
                extra.add(r);
            }
        }
        let victims = super::allocate::kill_victims(ss, j);
        match admit(ss, j, &victims, Amount::Minimum, &extra) {
            Ok(()) => {
                ss.jobs[j].status = Status::Inqueue;
                ss.jobs[j].reason = None;
                admitted.entry(queue).or_default().add(&ss.jobs[j].min_request);
            }
            Err(why) => ss.jobs[j].reason = Some(why),
        }
    }
}

fn seen_of(seen: &[bool], order: usize) -> bool {
    seen.get(order).copied().unwrap_or(true)
}
