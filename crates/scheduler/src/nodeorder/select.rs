//! Running a policy over a cluster: filter, score, normalise, break ties.
//!
//! A node's score for a pod depends only on the node's own state and the pod's
//! shape, so scores are cached per (shape, node) and a node's entries are
//! dropped when it changes; a replay then rescores one node per placement
//! instead of the whole cluster.

use rand::Rng;

use super::frag::node_frag;
use super::model::{GpuPick, NodeState, PodShape};
use super::policy::{Policy, Scored};
use super::typical::TypicalPods;

/// Where a pod goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Index of the chosen node.
    pub node: usize,
    /// GPUs the pod takes there.
    pub gpus: GpuPick,
}

#[derive(Clone, Copy)]
struct Entry {
    generation: u32,
    scored: Option<Scored>,
}

const EMPTY: Entry = Entry { generation: 0, scored: None };

/// A policy bound to a cluster's typical pods, with its caches.
pub struct NodeOrder {
    policy: Policy,
    typical: TypicalPods,
    nodes: usize,
    shapes: usize,
    generation: Vec<u32>,
    frag: Vec<Option<f64>>,
    cache: Vec<Entry>,
    scratch: Vec<(usize, f64)>,
}

impl NodeOrder {
    /// A node order for `nodes` nodes; pods passed with a shape id below
    /// `shapes` have their scores cached.
    pub fn new(policy: Policy, typical: TypicalPods, nodes: usize, shapes: usize) -> NodeOrder {
        let cached_shapes = if policy == Policy::Random { 0 } else { shapes };
        NodeOrder {
            policy,
            typical,
            nodes,
            shapes: cached_shapes,
            generation: vec![1; nodes],
            frag: vec![None; nodes],
            cache: vec![EMPTY; cached_shapes * nodes],
            scratch: Vec::with_capacity(nodes),
        }
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The typical pods fragmentation is measured against.
    pub fn typical(&self) -> &TypicalPods {
        &self.typical
    }

    /// Forgets what was cached about node `i`; call after it changed.
    pub fn node_changed(&mut self, i: usize) {
        if i < self.nodes {
            self.generation[i] = self.generation[i].wrapping_add(1).max(1);
            self.frag[i] = None;
        }
    }

    /// Current fragmentation of node `i` (cached until it changes).
    pub fn node_frag(&mut self, nodes: &[NodeState], i: usize) -> f64 {
        if let Some(f) = self.frag.get(i).copied().flatten() {
            return f;
        }
        let f = node_frag(&nodes[i], &self.typical);
        if let Some(slot) = self.frag.get_mut(i) {
            *slot = Some(f);
        }
        f
    }

    fn score_node(&mut self, nodes: &[NodeState], i: usize, pod: &PodShape, shape: Option<usize>) -> Option<Scored> {
        let slot = shape.filter(|&s| s < self.shapes).map(|s| s * self.nodes + i);
        if let Some(k) = slot {
            let e = self.cache[k];
            if e.generation == self.generation[i] {
                return e.scored;
            }
        }
        let node = &nodes[i];
        let scored = if node.fits(pod) {
            let before = if self.policy.uses_fragmentation() { self.node_frag(nodes, i) } else { 0.0 };
            self.policy.score(node, pod, &self.typical, before)
        } else {
            None
        };
        if let Some(k) = slot {
            self.cache[k] = Entry { generation: self.generation[i], scored };
        }
        scored
    }

    /// Chooses a node for `pod`, or None when no node fits.
    ///
    /// `rank` orders nodes for ties (lowest rank wins, as the reference's
    /// lowest node name); `shape` is the pod's shape id for the score cache;
    /// `rng` feeds the random policy.
    pub fn choose<R: Rng + ?Sized>(
        &mut self,
        nodes: &[NodeState],
        rank: &[u32],
        pod: &PodShape,
        shape: Option<usize>,
        rng: &mut R,
    ) -> Option<Decision> {
        debug_assert_eq!(nodes.len(), self.nodes);
        if self.policy == Policy::Random {
            return choose_random(nodes, pod, rng);
        }
        let rank_of = |i: usize| rank.get(i).copied().unwrap_or(u32::MAX);
        if self.policy.normalizes() {
            return self.choose_normalized(nodes, pod, shape, rank_of);
        }
        let mut best: Option<(usize, Scored)> = None;
        // ringleader trades fragmentation against a fixed fill order: a node
        // late in the order must save `weight` × rank/n more fragment milli.
        let fill = self.policy.fill_order_weight().map(|w| w / nodes.len().max(1) as f64);
        for i in 0..nodes.len() {
            let Some(mut s) = self.score_node(nodes, i, pod, shape) else { continue };
            if let Some(per_rank) = fill {
                s.score -= per_rank * f64::from(rank_of(i));
            }
            let better = match &best {
                None => true,
                Some((j, b)) => s.score > b.score || (s.score == b.score && rank_of(i) < rank_of(*j)),
            };
            if better {
                best = Some((i, s));
            }
        }
        best.map(|(node, s)| Decision { node, gpus: s.pick })
    }

    fn choose_normalized(
        &mut self,
        nodes: &[NodeState],
        pod: &PodShape,
        shape: Option<usize>,
        rank_of: impl Fn(usize) -> u32,
    ) -> Option<Decision> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut picks = Vec::new();
        for i in 0..nodes.len() {
            if let Some(s) = self.score_node(nodes, i, pod, shape) {
                scratch.push((i, s.score));
                picks.push(s.pick);
            }
        }
        let lo = scratch.iter().map(|&(_, s)| s as i64).min();
        let hi = scratch.iter().map(|&(_, s)| s as i64).max();
        let mut best: Option<(usize, i64, usize)> = None;
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let range = hi - lo;
            for (k, &(i, s)) in scratch.iter().enumerate() {
                // Kubernetes' integer min-max rescale; equal inputs all become 0.
                let norm = if range == 0 { 0 } else { (s as i64 - lo) * 100 / range };
                let better = match best {
                    None => true,
                    Some((j, b, _)) => norm > b || (norm == b && rank_of(i) < rank_of(j)),
                };
                if better {
                    best = Some((i, norm, k));
                }
            }
        }
        self.scratch = scratch;
        best.map(|(node, _, k)| Decision { node, gpus: picks[k] })
    }
}

/// Random: a uniformly drawn feasible node; a shared pod gets a uniformly
/// drawn fitting GPU there, whole GPUs the lowest-indexed free ones.
fn choose_random<R: Rng + ?Sized>(nodes: &[NodeState], pod: &PodShape, rng: &mut R) -> Option<Decision> {
    let feasible: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].fits(pod)).collect();
    if feasible.is_empty() {
        return None;
    }
    let node = feasible[rng.gen_range(0..feasible.len())];
    let n = &nodes[node];
    let gpus = if pod.is_shared() {
        let fitting: Vec<usize> = (0..n.gpu_left.len()).filter(|&g| n.gpu_left[g] >= pod.gpu_milli).collect();
        if fitting.is_empty() {
            return None;
        }
        1u64 << fitting[rng.gen_range(0..fitting.len())]
    } else {
        n.default_pick(pod)?
    };
    Some(Decision { node, gpus })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeorder::model::ModelSet;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn pod(cpu: u32, count: u32, milli: u32) -> PodShape {
        PodShape { cpu_milli: cpu, mem_mib: 1024, gpu_count: count, gpu_milli: milli, models: ModelSet::ANY }
    }

    fn node(cpu: u32, gpus: &[u32]) -> NodeState {
        let mut n = NodeState::new(cpu, 64 * 1024, gpus.len(), Some(0));
        n.gpu_left = gpus.to_vec();
        n
    }

    #[test]
    fn best_fit_picks_the_tightest_node_after_normalisation() {
        let nodes = vec![node(64000, &[1000, 1000]), node(8000, &[600, 0]), node(32000, &[1000, 1000])];
        let mut order = NodeOrder::new(Policy::BestFit, TypicalPods::default(), 3, 1);
        let mut rng = StdRng::seed_from_u64(1);
        let d = order.choose(&nodes, &[0, 1, 2], &pod(4000, 1, 500), Some(0), &mut rng);
        assert_eq!(d, Some(Decision { node: 1, gpus: 0b01 }));
    }

    #[test]
    fn ties_go_to_the_lowest_rank_and_the_cache_follows_changes() {
        let mut nodes = vec![node(32000, &[1000, 1000]); 3];
        let mut order = NodeOrder::new(Policy::GpuPacking, TypicalPods::default(), 3, 1);
        let mut rng = StdRng::seed_from_u64(1);
        let q = pod(1000, 1, 300);
        let d = order.choose(&nodes, &[2, 0, 1], &q, Some(0), &mut rng);
        assert_eq!(d, Some(Decision { node: 1, gpus: 0b01 }));
        nodes[2].place(&q, 0b10);
        order.node_changed(2);
        // Node 2 now has a partially used GPU (700 free): packing prefers it.
        let d = order.choose(&nodes, &[2, 0, 1], &q, Some(0), &mut rng);
        assert_eq!(d, Some(Decision { node: 2, gpus: 0b10 }));
    }

    #[test]
    fn filters_memory_and_reports_no_fit() {
        let nodes = vec![node(32000, &[1000])];
        let mut order = NodeOrder::new(Policy::Fgd, TypicalPods::default(), 1, 0);
        let mut rng = StdRng::seed_from_u64(1);
        let big = PodShape { mem_mib: 1 << 30, ..pod(1000, 1, 500) };
        assert_eq!(order.choose(&nodes, &[0], &big, None, &mut rng), None);
    }

    #[test]
    fn random_is_reproducible_per_seed() {
        let nodes = vec![node(32000, &[1000, 1000, 1000, 1000]); 50];
        let mut order = NodeOrder::new(Policy::Random, TypicalPods::default(), 50, 0);
        let ranks: Vec<u32> = (0..50).collect();
        let run = |order: &mut NodeOrder, seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..20).map(|_| order.choose(&nodes, &ranks, &pod(1000, 1, 300), None, &mut rng)).collect::<Vec<_>>()
        };
        let a = run(&mut order, 7);
        assert_eq!(a, run(&mut order, 7));
        assert_ne!(a, run(&mut order, 8));
    }
}
