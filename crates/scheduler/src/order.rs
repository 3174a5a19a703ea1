//! The order jobs are tried in: VIP jobs first; then queues as the plugins
//! order them (proportion: furthest below its deserved share first); then
//! jobs as the plugins order them, tier by tier (priority: higher first;
//! DRF: smaller namespace share first); then submission order.
//!
//! DRF's user is the job's namespace: a pending gang holds nothing, so its
//! own share says nothing, while its namespace's share is what max-min
//! fairness evens out (Volcano's hierarchical DRF by namespace).

use crate::plugins::Shares;
use crate::session::Session;
use std::cmp::Ordering;

/// How job `a` compares to job `b`: `Less` means `a` goes first.
pub(crate) fn compare(ss: &Session, shares: &Shares, a: usize, b: usize) -> Ordering {
    let (ja, jb) = (&ss.jobs[a], &ss.jobs[b]);
    let mut order = jb.is_vip.cmp(&ja.is_vip);
    if ja.queue != jb.queue {
        for p in &ss.plugins {
            order = order.then_with(|| p.order_queues(shares, &ja.queue, &jb.queue));
        }
    }
    for p in &ss.plugins {
        order = order.then_with(|| p.order_jobs(ss, shares, a, b));
    }
    order.then(ja.order.cmp(&jb.order))
}
