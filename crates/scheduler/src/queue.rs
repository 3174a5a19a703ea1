//! Volcano queues: weight, capability, guarantee, deserved, reclaimable,
//! state (Open / Closed) and parent, and the proportion plugin's
//! water-filling of capacity between queues by weight.
//!
//! A Closed (locked) queue admits no new jobs; its running jobs continue. A
//! queue is closed when its `status.state` is `Closed` or `Closing`, or when
//! an ancestor is. Capabilities hold along the parent chain: a child's jobs
//! count against every ancestor's capability.

use crate::resources::Resources;
use ringleader_api::kinds::Queue;
use std::collections::BTreeMap;

/// Whether a queue admits new jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Admits jobs.
    Open,
    /// Locked: no new jobs; running ones continue.
    Closed,
}

/// One queue as the scheduler reads it.
#[derive(Debug, Clone)]
pub struct QueueInfo {
    /// Name.
    pub name: String,
    /// Share of spare capacity (at least 1).
    pub weight: u64,
    /// Upper bound (resources it does not name are unbounded).
    pub capability: Resources,
    /// Reserved for the queue whatever others ask for.
    pub guarantee: Resources,
    /// Fixed deserved share, where the queue states one (capacity plugin);
    /// otherwise water-filled by weight.
    pub deserved: Resources,
    /// Whether other queues may reclaim what it uses beyond its deserved share.
    pub reclaimable: bool,
    /// Open or Closed.
    pub state: QueueState,
    /// Parent queue.
    pub parent: Option<String>,
}

impl QueueInfo {
    /// The queue a job may name without it being declared (Volcano's `default`,
    /// or any queue when the snapshot declares none): weight 1, no bounds.
    pub fn implicit(name: &str) -> QueueInfo {
        QueueInfo {
            name: name.to_string(),
            weight: 1,
            capability: Resources::default(),
            guarantee: Resources::default(),
            deserved: Resources::default(),
            reclaimable: true,
            state: QueueState::Open,
            parent: None,
        }
    }

    /// Reads a Volcano Queue object; `status.state` carries Open / Closed.
    pub fn from_object(q: &Queue) -> QueueInfo {
        let state = q.status.as_ref().and_then(|s| s.get("state")).and_then(|s| s.as_str());
        QueueInfo {
            name: q.metadata.name.clone().unwrap_or_default(),
            weight: q.spec.weight.unwrap_or(1).max(1) as u64,
            capability: Resources::from_quantities(&q.spec.capability),
            guarantee: q.spec.guarantee.as_ref().map(|g| Resources::from_quantities(&g.resource)).unwrap_or_default(),
            deserved: Resources::from_quantities(&q.spec.deserved),
            reclaimable: q.spec.reclaimable.unwrap_or(true),
            state: if matches!(state, Some("Closed") | Some("Closing")) {
                QueueState::Closed
            } else {
                QueueState::Open
            },
            parent: q.spec.parent.clone().filter(|p| !p.is_empty() && p != "root"),
        }
    }
}

/// The queues of a session by name.
#[derive(Debug, Clone, Default)]
pub struct Queues {
    /// Queues by name.
    pub by_name: BTreeMap<String, QueueInfo>,
}

impl Queues {
    /// The queue and its ancestors, nearest first (a cycle stops at the repeat).
    pub fn chain(&self, name: &str) -> Vec<&QueueInfo> {
        let mut out: Vec<&QueueInfo> = Vec::new();
        let mut next = Some(name.to_string());
        while let Some(n) = next {
            let Some(q) = self.by_name.get(&n) else { break };
            if out.iter().any(|seen| seen.name == q.name) {
                break;
            }
            out.push(q);
            next = q.parent.clone();
        }
        out
    }

    /// Whether `name` is `ancestor` or lies under it.
    pub fn is_under(&self, name: &str, ancestor: &str) -> bool {
        self.chain(name).iter().any(|q| q.name == ancestor)
    }

    /// The closed queue (itself or an ancestor) that keeps new jobs out.
    pub fn closed(&self, name: &str) -> Option<&str> {
        self.chain(name).into_iter().find(|q| q.state == QueueState::Closed).map(|q| q.name.as_str())
    }

    /// Whether some queue names this one as its parent.
    pub fn has_children(&self, name: &str) -> bool {
        self.by_name.values().any(|q| q.parent.as_deref() == Some(name) && q.name != name)
    }

    /// Deserved share of every queue. Leaf queues (the ones jobs run in)
    /// share the cluster: a queue that states `deserved` gets that; the rest
    /// (less every guarantee) is water-filled among the others by weight,
    /// each capped by its capability (and its ancestors') and by what it asks
    /// for (running + pending), and never below its guarantee. A parent
    /// deserves the sum of its leaves; its own weight and guarantee are not
    /// used (its capability and state are).
    pub fn deserved(&self, total: &Resources, requests: &BTreeMap<String, Resources>) -> BTreeMap<String, Resources> {
        let mut out: BTreeMap<String, Resources> =
            self.by_name.keys().map(|k| (k.clone(), Resources::default())).collect();
        let leaves: Vec<&QueueInfo> = self.by_name.values().filter(|q| !self.has_children(&q.name)).collect();
        for resource in total.0.keys() {
            let total_r = total.get(resource);
            let mut deserved: BTreeMap<&str, u64> = BTreeMap::new();
            let mut targets: BTreeMap<&str, u64> = BTreeMap::new();
            let mut fixed = 0u64;
            for q in leaves.iter().copied() {
                let cap = self
                    .chain(&q.name)
                    .iter()
                    .filter_map(|a| a.capability.0.get(resource).copied())
                    .min()
                    .unwrap_or(u64::MAX);
                if let Some(d) = q.deserved.0.get(resource) {
                    fixed = fixed.saturating_add(*d);
                    for a in self.chain(&q.name) {
                        *out.entry(a.name.clone()).or_default().0.entry(resource.clone()).or_default() += *d;
                    }
                    continue;
                }
                let asked = requests.get(&q.name).map(|r| r.get(resource)).unwrap_or(0);
                let guarantee = q.guarantee.get(resource).min(cap);
                deserved.insert(&q.name, guarantee);
                targets.insert(&q.name, asked.min(cap).max(guarantee));
            }
            let mut remaining = total_r.saturating_sub(fixed).saturating_sub(deserved.values().sum());
            loop {
                let active: Vec<&str> = deserved.iter().filter(|(q, d)| **d < targets[*q]).map(|(q, _)| *q).collect();
                let weight: u64 = active.iter().map(|q| self.by_name[*q].weight).sum();
                if remaining == 0 || active.is_empty() || weight == 0 {
                    break;
                }
                let mut given = 0u64;
                for q in &active {
                    // At least one thousandth each, so rounding never stalls the fill.
                    let share =
                        (u128::from(remaining) * u128::from(self.by_name[*q].weight) / u128::from(weight)) as u64;
                    let room = targets[*q] - deserved[*q];
                    let inc = share.max(1).min(room).min(remaining - given);
                    *deserved.entry(q).or_default() += inc;
                    given += inc;
                }
                if given == 0 {
                    break;
                }
                remaining -= given;
            }
            // Zero is a bound too: a queue that asked for nothing deserves nothing.
            for (q, d) in deserved {
                for a in self.chain(q) {
                    *out.entry(a.name.clone()).or_default().0.entry(resource.clone()).or_default() += d;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str, weight: u64) -> QueueInfo {
        QueueInfo { weight, ..QueueInfo::implicit(name) }
    }

    #[test]
    fn water_fills_by_weight_within_requests_and_guarantees() {
        let mut queues = Queues::default();
        queues.by_name.insert("a".into(), queue("a", 1));
        queues.by_name.insert("b".into(), queue("b", 3));
        let mut c = queue("c", 1);
        c.guarantee = Resources::one("huawei.com/Ascend910", 4000);
        queues.by_name.insert("c".into(), c);
        let npu = |n: u64| Resources::one("huawei.com/Ascend910", n * 1000);
        let requests = BTreeMap::from([("a".to_string(), npu(100)), ("b".to_string(), npu(100))]);
        let d = queues.deserved(&npu(36), &requests);
        // c keeps its guarantee though it asks for nothing; a and b split 32 as 1:3.
        assert_eq!(d["c"].get("huawei.com/Ascend910"), 4000);
        assert_eq!(d["a"].get("huawei.com/Ascend910"), 8000);
        assert_eq!(d["b"].get("huawei.com/Ascend910"), 24000);
        // A queue that asks for less than its share leaves the rest to the others.
        let requests = BTreeMap::from([("a".to_string(), npu(2)), ("b".to_string(), npu(100))]);
        let d = queues.deserved(&npu(36), &requests);
        assert_eq!(d["a"].get("huawei.com/Ascend910"), 2000);
        assert_eq!(d["b"].get("huawei.com/Ascend910"), 30000);
    }

    #[test]
    fn parents_sum_their_leaves_and_cap_them() {
        let mut queues = Queues::default();
        let mut org = queue("org", 5);
        org.capability = Resources::one("nvidia.com/gpu", 6000);
        org.guarantee = Resources::one("nvidia.com/gpu", 4000);
        queues.by_name.insert("org".into(), org);
        queues.by_name.insert("org-a".into(), QueueInfo { parent: Some("org".into()), ..queue("org-a", 1) });
        queues.by_name.insert("org-b".into(), QueueInfo { parent: Some("org".into()), ..queue("org-b", 1) });
        queues.by_name.insert("solo".into(), queue("solo", 1));
        let gpu = |n: u64| Resources::one("nvidia.com/gpu", n * 1000);
        let requests = BTreeMap::from([
            ("org-a".to_string(), gpu(10)),
            ("org-b".to_string(), gpu(1)),
            ("solo".to_string(), gpu(10)),
        ]);
        let d = queues.deserved(&gpu(16), &requests);
        // org-a is capped by org's capability (6), org-b asks for 1, solo takes the rest.
        assert_eq!(d["org-a"].get("nvidia.com/gpu"), 6000);
        assert_eq!(d["org-b"].get("nvidia.com/gpu"), 1000);
        assert_eq!(d["org"].get("nvidia.com/gpu"), 7000);
        assert_eq!(d["solo"].get("nvidia.com/gpu"), 9000);
    }
}
