//! `allocate`: places admitted gangs in scheduling order, each whole or not
//! at all, checking its queue's capability and deserved share first. VIP
//! jobs go first: a `kill` VIP job evicts every non-VIP job on its nodes in
//! the same statement that places it; a `wait` VIP job that does not fit
//! reserves its nodes. The first ordinary gang that does not fit gets a
//! reservation ([`crate::reserve`]). Jobs that ask for no devices are left
//! to `backfill`.

use crate::admission::admit;
use crate::reserve::reserve_for;
use crate::resources::Resources;
use crate::session::Amount;
use crate::session::{Reservation, Session, Status};
use crate::vip::VipMode;

/// Runs the action.
pub fn run(ss: &mut Session) {
    let enqueued = ss.conf.runs("enqueue");
    let mut seen = vec![false; ss.jobs.len()];
    let mut cursor = ss.job_cursor();
    while let Some(j) = ss.next_job(&mut cursor, |job| {
        job.waiting()
            && !job.best_effort
            && (job.status == Status::Inqueue || !enqueued)
            && !seen.get(job.order).copied().unwrap_or(true)
    }) {
        seen[ss.jobs[j].order] = true;
        ss.jobs[j].tried = true;
        if let Err(why) = admit(ss, j, &[], Amount::Full, &Resources::default()) {
            ss.jobs[j].reason = Some(why);
            continue;
        }
        ss.jobs[j].status = Status::Inqueue;
        let vip = ss.jobs[j].vip.clone();
        match vip.map(|v| v.mode) {
            Some(VipMode::Kill) => kill(ss, j),
            Some(VipMode::Wait) => {
                if !ss.allocate(j) {
                    let nodes = ss.gate(j).only_nodes();
                    ss.reservations.push(Reservation { job: j, nodes, vip: true });
                    if let Some(r) = ss.jobs[j].reason.as_mut() {
                        *r = format!("VIP job waits for its nodes to free up; {r}");
                    }
                }
            }
            None => {
                if !ss.allocate(j) {
                    reserve_for(ss, j);
                }
            }
        }
    }
}

/// A VIP `kill` job: evict every non-VIP running job with a pod on its
/// nodes, and place it there, in one statement.
fn kill(ss: &mut Session, j: usize) {
    let nodes = ss.gate(j).only_nodes();
    let victims: Vec<usize> = ss
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            v.status == Status::Running
                && !v.is_vip
                && v.running.as_ref().is_some_and(|r| r.pods.iter().any(|p| nodes.contains(&p.node)))
        })
        .map(|(i, _)| i)
        .collect();
    match ss.try_with(j, &victims) {
        Ok((st, placements)) => ss.commit(j, st, placements, "killed by VIP job"),
        Err(why) => ss.jobs[j].reason = Some(why),
    }
}
