//! Choosing whom to evict for a waiting gang (preempt and reclaim): whole
//! gangs only, the fewest of them, then the lowest priorities, then the
//! fewest devices. Each candidate set is checked by placing the gang on a
//! copy of the cluster with the set's devices released — nothing is evicted
//! unless the gang then fits.
//!
//! Up to [`EXACT_LIMIT`] relevant candidates every set is tried by size, so
//! the answer is a minimum; beyond that, candidates are added lowest
//! priority first (largest first within a priority) until the gang fits and
//! then dropped again, highest priority first, while it still fits (a set no
//! victim can leave, not always the smallest).

use crate::admission::admit;
use crate::place::PodPlacement;
use crate::predicates::serves;
use crate::resources::Resources;
use crate::session::Amount;
use crate::session::Evict;
use crate::session::{Session, Statement, Status};

/// Most candidates searched exhaustively.
pub const EXACT_LIMIT: usize = 10;

/// A chosen victim set with the statement that evicts it and places the gang.
pub(crate) struct Choice {
    pub victims: Vec<usize>,
    pub statement: Statement,
    pub placements: Vec<PodPlacement>,
}

/// The best victim set for job `j` among `candidates`, where `allowed`
/// says whether a set satisfies the action's queue rules.
pub(crate) fn choose(
    ss: &Session,
    j: usize,
    candidates: Vec<usize>,
    allowed: &dyn Fn(&[usize]) -> bool,
) -> Option<Choice> {
    let mut candidates = relevant(ss, j, candidates);
    candidates.sort_by_key(|v| (ss.jobs[*v].priority, devices(ss, *v), ss.jobs[*v].order));
    let greedy_order = || {
        // Largest first within a priority: fewer victims free the same room.
        let mut c = candidates.clone();
        c.sort_by_key(|v| (ss.jobs[*v].priority, std::cmp::Reverse(devices(ss, *v)), ss.jobs[*v].order));
        c
    };
    let attempt = |set: &[usize]| -> Option<Choice> {
        if !allowed(set) {
            return None;
        }
        let (statement, placements) = ss.try_with(j, set).ok()?;
        Some(Choice { victims: set.to_vec(), statement, placements })
    };
    if candidates.len() <= EXACT_LIMIT {
        for size in 1..=candidates.len() {
            let mut best: Option<(Key, Choice)> = None;
            for set in combinations(&candidates, size) {
                let key = key(ss, &set);
                if best.as_ref().is_some_and(|(b, _)| *b <= key) {
                    continue;
                }
                if let Some(choice) = attempt(&set) {
                    best = Some((key, choice));
                }
            }
            if let Some((_, choice)) = best {
                return Some(choice);
            }
        }
        return None;
    }
    let candidates = greedy_order();
    let mut set: Vec<usize> = Vec::new();
    let mut found = None;
    for v in &candidates {
        set.push(*v);
        if let Some(c) = attempt(&set) {
            found = Some(c);
            break;
        }
    }
    let mut found = found?;
    for v in candidates.iter().rev() {
        if !found.victims.contains(v) {
            continue;
        }
        let smaller: Vec<usize> = found.victims.iter().copied().filter(|x| x != v).collect();
        if smaller.is_empty() {
            continue;
        }
        if let Some(c) = attempt(&smaller) {
            found = c;
        }
    }
    Some(found)
}

/// Adds what a later step found (a reservation, a failed preemption) to
/// job `j`'s explanation: a sentence after a node explanation, else after `; `.
pub(crate) fn note(ss: &mut Session, j: usize, what: &str) {
    let reason = &mut ss.jobs[j].reason;
    *reason = Some(match reason.take() {
        Some(r) if r.ends_with('.') => {
            let mut chars = what.chars();
            let first = chars.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
            format!("{r} {first}{}.", chars.as_str())
        }
        Some(r) => format!("{r}; {what}"),
        None => what.to_string(),
    });
}

/// Whether the plugins let job `j` evict `victim`: at least one votes for
/// it and none against.
pub(crate) fn votes(ss: &Session, j: usize, victim: usize, why: Evict) -> bool {
    let votes: Vec<bool> = ss.plugins.iter().filter_map(|p| p.may_evict(ss, j, victim, why)).collect();
    !votes.is_empty() && votes.iter().all(|v| *v)
}

/// Order of victim sets of one size: lowest top priority, then lowest
/// priorities in all, then fewest devices.
type Key = (i32, i64, u64);

fn key(ss: &Session, set: &[usize]) -> Key {
    let top = set.iter().map(|v| ss.jobs[*v].priority).max().unwrap_or(i32::MIN);
    let sum = set.iter().map(|v| i64::from(ss.jobs[*v].priority)).sum();
    let devices = set.iter().map(|v| devices(ss, *v)).sum();
    (top, sum, devices)
}

fn devices(ss: &Session, v: usize) -> u64 {
    ss.jobs[v].request.0.values().sum()
}

/// Candidates with a pod on a node the gang could use at all (one that
/// serves its devices and that its gate lets it onto).
fn relevant(ss: &Session, j: usize, candidates: Vec<usize>) -> Vec<usize> {
    let Some(spec) = ss.jobs[j].spec.as_ref() else { return Vec::new() };
    let gate = ss.gate(j);
    let usable = |n: usize| {
        let Some(node) = ss.cluster.nodes.get(n) else { return false };
        gate.check(n).is_ok() && spec.roles.iter().filter_map(|r| r.device.as_ref()).any(|d| serves(node, d).is_ok())
    };
    candidates
        .into_iter()
        .filter(|v| ss.jobs[*v].running.as_ref().is_some_and(|r| r.pods.iter().any(|p| usable(p.node))))
        .collect()
}

/// Every `size`-subset of `items`, in lexicographic order.
fn combinations(items: &[usize], size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut idx: Vec<usize> = (0..size).collect();
    if size == 0 || size > items.len() {
        return out;
    }
    loop {
        out.push(idx.iter().map(|i| items[*i]).collect());
        let mut k = size;
        while k > 0 && idx[k - 1] == items.len() - size + k - 1 {
            k -= 1;
        }
        if k == 0 {
            return out;
        }
        idx[k - 1] += 1;
        for m in k..size {
            idx[m] = idx[m - 1] + 1;
        }
    }
}

/// One round of `preempt` or `reclaim`: each waiting gang, in job order, may
/// evict running non-VIP gangs — of its own queue (preempt) or of other
/// queues (reclaim) — that the plugins vote for; the fewest that make it fit
/// go, in the same statement that places it. Reclaim never crosses a
/// parent-child line: victims come from queues outside the gang's own
/// branch (neither its ancestors nor its descendants).
pub(crate) fn evict_round(ss: &mut Session, kind: Evict) {
    // Only running gangs can be victims; without any there is nothing to do.
    if !ss.jobs.iter().any(|v| v.status == Status::Running && !v.is_vip) {
        return;
    }
    let mut seen = vec![false; ss.jobs.len()];
    let mut cursor = ss.job_cursor();
    while let Some(j) = ss
        .next_job(&mut cursor, |job| job.waiting() && !job.best_effort && !seen.get(job.order).copied().unwrap_or(true))
    {
        seen[ss.jobs[j].order] = true;
        let (queue, priority) = (ss.jobs[j].queue.clone(), ss.jobs[j].priority);
        if ss.queues.closed(&queue).is_some() || !ss.queues.by_name.contains_key(&queue) {
            continue;
        }
        // Reclaim is between queues that contend for the cluster: a queue
        // and its ancestor share one budget (the ancestor's usage holds the
        // child's), so neither reclaims from the other — Volcano's hierarchy
        // reclaims only across branches.
        let in_scope = |victim_queue: &str| match kind {
            Evict::Preempt => victim_queue == queue,
            Evict::Reclaim => !ss.queues.is_under(&queue, victim_queue) && !ss.queues.is_under(victim_queue, &queue),
        };
        let candidates: Vec<usize> = ss
            .jobs
            .iter()
            .enumerate()
            .filter(|(v, job)| {
                job.status == Status::Running && !job.is_vip && in_scope(&job.queue) && votes(ss, j, *v, kind)
            })
            .map(|(v, _)| v)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let allowed = |set: &[usize]| {
            admit(ss, j, set, Amount::Full, &Resources::default()).is_ok()
                && ss.plugins.iter().all(|p| p.allow_victims(ss, set, kind))
        };
        match choose(ss, j, candidates, &allowed) {
            Some(c) => {
                let why = match kind {
                    Evict::Preempt => format!("preempted by {} (priority {priority})", ss.jobs[j].key),
                    Evict::Reclaim => format!("reclaimed for queue {queue} by {}", ss.jobs[j].key),
                };
                ss.commit(j, c.statement, c.placements, &why);
            }
            None => match kind {
                Evict::Preempt => {
                    note(ss, j, &format!("preempt: no lower-priority gangs of queue {queue} to evict would make room"))
                }
                Evict::Reclaim => {
                    note(ss, j, "reclaim: no gangs of queues over their deserved share to evict would make room")
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::combinations;

    #[test]
    fn combinations_are_all_subsets_of_a_size() {
        assert_eq!(combinations(&[1, 2, 3], 2), vec![vec![1, 2], vec![1, 3], vec![2, 3]]);
        assert_eq!(combinations(&[1, 2, 3], 3), vec![vec![1, 2, 3]]);
        assert!(combinations(&[1], 2).is_empty());
    }
}
