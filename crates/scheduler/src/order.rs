//! The order jobs are tried in: VIP jobs first; then queues as the plugins
//! order them (proportion: furthest below its deserved share first); then
//! jobs as the plugins order them, tier by tier (priority: higher first;
//! DRF: smaller namespace share first); then submission order.
//!
//! DRF's user is the job's namespace: a pending gang holds nothing, so its
//! own share says nothing, while its namespace's share is what max-min
//! fairness evens out (Volcano's hierarchical DRF by namespace).

use crate::session::Shares;
use crate::session::{JobCursor, JobInfo, Session};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

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

impl Session {
    /// Index of the first job, in scheduling order, that `want` accepts.
    ///
    /// `want` must stay false for a job once it is false within the loop of
    /// one cursor (every caller marks jobs seen, and no action makes a job
    /// wait again): the cursor skips such jobs for good.
    pub(crate) fn next_job(&self, cursor: &mut JobCursor, want: impl Fn(&JobInfo) -> bool) -> Option<usize> {
        let shares = Shares::of(self);
        if self.scan_jobs {
            return self.scan(&shares, &want);
        }
        let mut heads = Vec::with_capacity(cursor.buckets.len());
        for (jobs, pos) in &mut cursor.buckets {
            while jobs.get(*pos).is_some_and(|&i| !want(&self.jobs[i])) {
                *pos += 1;
            }
            heads.extend(jobs.get(*pos).copied());
        }
        if !self.ordered_by_key(&shares, &heads) {
            return self.scan(&shares, &want);
        }
        heads.into_iter().reduce(|b, i| if crate::order::compare(self, &shares, b, i).is_le() { b } else { i })
    }

    /// The scan's answer: the best job in a pass over every job, ties to the earlier.
    fn scan(&self, shares: &Shares, want: &impl Fn(&JobInfo) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, j) in self.jobs.iter().enumerate() {
            if !want(j) {
                continue;
            }
            best = match best {
                Some(b) if crate::order::compare(self, shares, b, i).is_le() => Some(b),
                _ => Some(i),
            };
        }
        best
    }

    /// Whether the job order is a total order over the buckets of `heads`,
    /// so the best head is the scan's answer whatever the order of the pass.
    /// It is unless a plugin orders by namespace inside a queue (DRF) while
    /// two queues of equal VIP standing tie on queue order: then DRF can
    /// order `a` before `c` in one queue while a job `b` of the other queue
    /// sits between them by priority or submission order, a cycle the scan
    /// settles by its pass order alone.
    fn ordered_by_key(&self, shares: &Shares, heads: &[usize]) -> bool {
        if !self.plugins.iter().any(|p| p.orders_by_namespace()) {
            return true;
        }
        let mut namespace_of: BTreeMap<&str, &str> = BTreeMap::new();
        let mut mixed = false;
        for j in heads.iter().map(|&h| &self.jobs[h]) {
            mixed |= *namespace_of.entry(&j.queue).or_insert(&j.namespace) != j.namespace.as_str();
        }
        if !mixed {
            return true;
        }
        let queues: BTreeSet<(bool, &str)> =
            heads.iter().map(|&h| (self.jobs[h].is_vip, self.jobs[h].queue.as_str())).collect();
        let queues: Vec<(bool, &str)> = queues.into_iter().collect();
        for (k, (vip, a)) in queues.iter().enumerate() {
            for (other_vip, b) in &queues[k + 1..] {
                let order =
                    self.plugins.iter().fold(Ordering::Equal, |o, p| o.then_with(|| p.order_queues(shares, a, b)));
                if vip == other_vip && order == Ordering::Equal {
                    return false;
                }
            }
        }
        true
    }
}
