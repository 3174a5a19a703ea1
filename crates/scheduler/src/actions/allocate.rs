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
        // A `kill` VIP job's victims give back their share of the queue too:
        // it must not wait behind the very jobs it evicts.
        let victims = kill_victims(ss, j);
        if let Err(why) = admit(ss, j, &victims, Amount::Full, &Resources::default()) {
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

/// The jobs a `kill` VIP job `j` evicts: every non-VIP running job with a
/// pod on its nodes (none for any other job).
pub(crate) fn kill_victims(ss: &Session, j: usize) -> Vec<usize> {
    if ss.jobs[j].vip.as_ref().map(|v| v.mode) != Some(VipMode::Kill) {
        return Vec::new();
    }
    let nodes = ss.gate(j).only_nodes();
    ss.jobs
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            v.status == Status::Running
                && !v.is_vip
                && v.running.as_ref().is_some_and(|r| r.pods.iter().any(|p| nodes.contains(&p.node)))
        })
        .map(|(i, _)| i)
        .collect()
}

/// A VIP `kill` job: evict its victims ([`kill_victims`]) and place it on
/// its nodes, in one statement.
fn kill(ss: &mut Session, j: usize) {
    let victims = kill_victims(ss, j);
    match ss.try_with(j, &victims) {
        Ok((st, placements)) => ss.commit(j, st, placements, "killed by VIP job"),
        Err(why) => ss.jobs[j].reason = Some(why),
    }
}
