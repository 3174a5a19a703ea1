//! `backfill`: places jobs that ask for no devices (Volcano's best-effort
//! tasks: launchers, controllers) wherever their selectors and the session's
//! reservations allow. They take nothing a queue counts, so only the queue's
//! state (known, Open) is checked.

use crate::session::{Session, Status};

/// Runs the action.
pub fn run(ss: &mut Session) {
    for j in 0..ss.jobs.len() {
        let job = &ss.jobs[j];
        if !job.waiting() || !job.best_effort {
            continue;
        }
        ss.jobs[j].tried = true;
        let queue = ss.jobs[j].queue.clone();
        if !ss.queues.by_name.contains_key(&queue) {
            ss.jobs[j].reason = Some(format!("queue {queue} not found"));
            continue;
        }
        if let Some(closed) = ss.queues.closed(&queue) {
            ss.jobs[j].reason = Some(format!("queue {closed} is Closed"));
            continue;
        }
        ss.jobs[j].status = Status::Inqueue;
        ss.allocate(j);
    }
}
