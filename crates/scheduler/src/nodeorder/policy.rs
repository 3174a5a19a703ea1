//! The node-order policies and how each scores one node for one pod.
//!
//! Baselines follow the FGD paper's simulator (hkust-adsl
//! kubernetes-scheduler-simulator) including its integer score truncation,
//! because the truncation decides which nodes tie and ties decide placements.

use std::fmt;
use std::str::FromStr;

use super::frag::frag_of;
use super::model::{Affinity, GpuPick, NodeState, PodShape, MILLI};
use super::typical::TypicalPods;

/// Largest CPU request of one pod the reference normalises by (128 cores).
const MAX_SPEC_CPU: f64 = 128_000.0;
/// Largest GPU request of one pod the reference normalises by (8 GPUs).
const MAX_SPEC_GPU: f64 = 8_000.0;
/// Kubernetes' maximum node score.
const MAX_NODE_SCORE: i64 = 100;

/// A node-order policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// A uniformly random feasible node (and random fitting GPU).
    Random,
    /// Tetris-style dot product of free and requested (CPU, GPU), smallest wins.
    DotProd,
    /// Keep pods with the same GPU usage together (GpuClustering).
    Clustering,
    /// Prefer partially used GPUs, then partially used nodes (GpuPacking).
    GpuPacking,
    /// Least free CPU+GPU left after placement, min-max normalised (BestFit).
    BestFit,
    /// Fragmentation gradient descent (Weng et al., ATC'23).
    Fgd,
    /// ringleader's default: FGD's fragmentation gradient, unquantised, traded
    /// against a fixed per-cluster fill order (see [`Policy::fill_order_weight`]).
    Ringleader,
}

/// The error for an unknown policy name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown policy `{}` (expected one of: {})", self.0, Policy::NAMES.join(", "))
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for Policy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Policy, UnknownPolicy> {
        Policy::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A feasible node's score for one pod and the GPUs the pod would take there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// Score, higher is better.
    pub score: f64,
    /// GPUs the pod takes on this node.
    pub pick: GpuPick,
}

impl Policy {
    /// Every policy, baselines first.
    pub const ALL: [Policy; 7] = [
        Policy::Random,
        Policy::DotProd,
        Policy::Clustering,
        Policy::GpuPacking,
        Policy::BestFit,
        Policy::Fgd,
        Policy::Ringleader,
    ];

    /// Command-line names, in [`Policy::ALL`] order.
    pub const NAMES: [&'static str; 7] =
        ["random", "dotprod", "clustering", "gpupacking", "bestfit", "fgd", "ringleader"];

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::DotProd => "dotprod",
            Policy::Clustering => "clustering",
            Policy::GpuPacking => "gpupacking",
            Policy::BestFit => "bestfit",
            Policy::Fgd => "fgd",
            Policy::Ringleader => "ringleader",
        }
    }

    /// Whether the policy scores against the typical pods' fragmentation.
    pub fn uses_fragmentation(&self) -> bool {
        matches!(self, Policy::Fgd | Policy::Ringleader)
    }

    /// Fragment milli-GPU a node at the end of the fill order must save over
    /// the first node to win (ringleader only; the penalty grows linearly with
    /// the node's rank).
    ///
    /// Why: the paper simulator's integer FGD scores tie often and ties go to
    /// the lowest-ranked node, so FGD silently fills nodes in a fixed order;
    /// measured on openb, that consolidation is worth more than the finer
    /// gradient (unquantised FGD alone loses ~2 points), and making the trade
    /// explicit beats both. 6000 won a sweep over 20..100000 on the default
    /// trace (see docs/sim-results.md).
    pub fn fill_order_weight(&self) -> Option<f64> {
        match self {
            Policy::Ringleader => Some(6000.0),
            _ => None,
        }
    }

    /// Whether raw scores are min-max rescaled to 0..=100 over the feasible
    /// nodes (with integer division) before the best is chosen.
    pub fn normalizes(&self) -> bool {
        matches!(self, Policy::BestFit)
    }

    /// Scores a node that passed the filter. `frag_before` is the node's
    /// current fragmentation (only read by fragmentation policies).
    ///
    /// Random has no score of its own: it returns 0 and the best-fit GPU; the
    /// selector draws among feasible nodes instead.
    pub fn score(&self, node: &NodeState, pod: &PodShape, typical: &TypicalPods, frag_before: f64) -> Option<Scored> {
        let plain = |score: i64| node.default_pick(pod).map(|pick| Scored { score: score as f64, pick });
        match self {
            Policy::Random => plain(0),
            Policy::DotProd => plain(dot_product_score(node, pod)),
            Policy::Clustering => plain(clustering_score(node, pod)),
            Policy::GpuPacking => plain(packing_score(node, pod)),
            Policy::BestFit => plain(best_fit_score(node, pod)),
            Policy::Fgd => fgd(node, pod, typical, frag_before, true),
            // Raw gradient in milli-GPU; the fill-order term is added by the selector.
            Policy::Ringleader => fgd(node, pod, typical, frag_before, false),
        }
    }
}

fn dot_product_score(node: &NodeState, pod: &PodShape) -> i64 {
    let free = [f64::from(node.cpu_left) / MAX_SPEC_CPU, node.gpu_left_total() as f64 / MAX_SPEC_GPU];
    let req = [f64::from(pod.cpu_milli) / MAX_SPEC_CPU, pod.total_gpu_milli() as f64 / MAX_SPEC_GPU];
    let dot = (free[0] * req[0] + free[1] * req[1]) / 2.0;
    (MAX_NODE_SCORE as f64 * (1.0 - dot)) as i64
}

fn clustering_score(node: &NodeState, pod: &PodShape) -> i64 {
    let tag = pod.affinity();
    if tag == Affinity::NoGpu {
        return 0;
    }
    let used = MAX_SPEC_GPU as i64 - node.gpu_left_total() as i64;
    let base = MAX_NODE_SCORE / 4 * used / MAX_SPEC_GPU as i64;
    let offset = if node.affinity_count(tag) > 0 {
        if node.affinity.len() == 1 {
            MAX_NODE_SCORE * 3 / 4
        } else {
            MAX_NODE_SCORE * 2 / 4
        }
    } else if node.affinity.is_empty() {
        MAX_NODE_SCORE / 4
    } else {
        0
    };
    base + offset
}

fn packing_score(node: &NodeState, pod: &PodShape) -> i64 {
    if !pod.wants_gpu() {
        return 0;
    }
    let free = node.free_gpus() as i64;
    if free == node.gpu_left.len() as i64 {
        return (MAX_NODE_SCORE / 3 - free).max(free);
    }
    let mut order: Vec<usize> = (0..node.gpu_left.len()).collect();
    order.sort_by_key(|&i| node.gpu_left[i]);
    let mut need = pod.gpu_count;
    let mut free_used = 0i64;
    let mut share_left = 0i64;
    for i in order {
        if need == 0 {
            break;
        }
        let left = node.gpu_left[i];
        if pod.gpu_milli <= left {
            need -= 1;
            if left == MILLI {
                free_used += 1;
            }
            share_left += i64::from(left) * 100 / i64::from(MILLI);
        }
    }
    if need != 0 {
        return 0;
    }
    if free_used > 0 {
        (MAX_NODE_SCORE / 2 - free_used).max(MAX_NODE_SCORE / 3)
    } else {
        (MAX_NODE_SCORE - share_left / 10).max(MAX_NODE_SCORE / 2)
    }
}

fn best_fit_score(node: &NodeState, pod: &PodShape) -> i64 {
    let cpu = (f64::from(node.cpu_left) - f64::from(pod.cpu_milli)) / MAX_SPEC_CPU * 0.5;
    let gpu = (node.gpu_left_total() as f64 - pod.total_gpu_milli() as f64) / MAX_SPEC_GPU * 0.5;
    ((1.0 - (cpu + gpu)) * MAX_NODE_SCORE as f64) as i64
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// FGD: the fragmentation decrease a placement causes. With `quantize` the
/// score is the reference's `int(sigmoid(Δ/1000)·100)`, and a shared pod takes
/// the lowest-indexed GPU among equal truncated scores; without it the raw
/// decrease (milli-GPU) is the score.
fn fgd(node: &NodeState, pod: &PodShape, typical: &TypicalPods, before: f64, quantize: bool) -> Option<Scored> {
    let cpu_after = node.cpu_left.saturating_sub(pod.cpu_milli);
    let to_score = |after: f64| {
        let delta = before - after;
        if quantize {
            (sigmoid(delta / 1000.0) * MAX_NODE_SCORE as f64).trunc()
        } else {
            delta
        }
    };
    if pod.is_shared() {
        let mut gpus = node.gpu_left.clone();
        let mut best: Option<Scored> = None;
        for i in 0..gpus.len() {
            if gpus[i] < pod.gpu_milli {
                continue;
            }
            gpus[i] -= pod.gpu_milli;
            let score = to_score(frag_of(cpu_after, &gpus, node, typical));
            gpus[i] += pod.gpu_milli;
            // Strictly better only: equal scores keep the lowest GPU index.
            let better = match &best {
                None => true,
                Some(b) => score > b.score,
            };
            if better {
                best = Some(Scored { score, pick: 1 << i });
            }
        }
        best
    } else {
        let pick = node.default_pick(pod)?;
        let mut gpus = node.gpu_left.clone();
        for (i, g) in gpus.iter_mut().enumerate() {
            if pick & (1 << i) != 0 {
                *g -= pod.gpu_milli.min(*g);
            }
        }
        Some(Scored { score: to_score(frag_of(cpu_after, &gpus, node, typical)), pick })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeorder::frag::node_frag;
    use crate::nodeorder::model::ModelSet;

    fn pod(cpu: u32, count: u32, milli: u32) -> PodShape {
        PodShape { cpu_milli: cpu, mem_mib: 0, gpu_count: count, gpu_milli: milli, models: ModelSet::ANY }
    }

    fn node(cpu: u32, gpus: &[u32]) -> NodeState {
        let mut n = NodeState::new(cpu, 1 << 20, gpus.len(), Some(0));
        n.gpu_left = gpus.to_vec();
        n
    }

    fn score(p: Policy, n: &NodeState, q: &PodShape) -> f64 {
        let t = TypicalPods::default();
        p.score(n, q, &t, node_frag(n, &t)).map(|s| s.score).unwrap_or(f64::NAN)
    }

    #[test]
    fn names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        assert!("tetris".parse::<Policy>().is_err());
    }

    #[test]
    fn best_fit_prefers_the_tightest_node() {
        let q = pod(4000, 1, 500);
        let loose = node(64000, &[1000, 1000]);
        let tight = node(8000, &[600, 0]);
        // loose: 1 - (60000/128000 + 1500/8000)/2 = 0.671875 -> 67
        assert_eq!(score(Policy::BestFit, &loose, &q), 67.0);
        // tight: 1 - (4000/128000 + 100/8000)/2 = 0.978125 -> 97
        assert_eq!(score(Policy::BestFit, &tight, &q), 97.0);
    }

    #[test]
    fn gpu_packing_prefers_partially_used_gpus() {
        let q = pod(1000, 1, 300);
        let shared = node(32000, &[400, 1000]);
        let used_node = node(32000, &[0, 1000]);
        let empty = node(32000, &[1000, 1000]);
        // Case 1: tightest fitting GPU has 400 free -> 100 - (40/10) = 96.
        assert_eq!(score(Policy::GpuPacking, &shared, &q), 96.0);
        // Case 2: must open a free GPU on a used node -> 50 - 1.
        assert_eq!(score(Policy::GpuPacking, &used_node, &q), 49.0);
        // Case 3: idle node with two free GPUs -> 33 - 2.
        assert_eq!(score(Policy::GpuPacking, &empty, &q), 31.0);
    }

    #[test]
    fn dot_product_prefers_the_least_aligned_node() {
        let q = pod(16000, 1, 1000);
        let a = node(128000, &[1000; 8]);
        // dot = (1 * 0.125 + 1 * 0.125) / 2 = 0.125 -> 87
        assert_eq!(score(Policy::DotProd, &a, &q), 87.0);
        let b = node(32000, &[1000, 0]);
        // dot = (0.25 * 0.125 + 0.125 * 0.125)/2 = 0.0234375 -> 97
        assert_eq!(score(Policy::DotProd, &b, &q), 97.0);
    }

    #[test]
    fn clustering_groups_by_affinity() {
        let q = pod(1000, 1, 500);
        let mut same = node(32000, &[500, 1000]);
        same.affinity = vec![(Affinity::Shared, 1)];
        // 25 * (8000 - 1500) / 8000 = 20 (integer) + 75
        assert_eq!(score(Policy::Clustering, &same, &q), 95.0);
        let mut mixed = same.clone();
        mixed.affinity.push((Affinity::Whole(1), 1));
        assert_eq!(score(Policy::Clustering, &mixed, &q), 70.0);
        let idle = node(32000, &[1000, 1000]);
        // 25 * 6000 / 8000 = 18 + 25
        assert_eq!(score(Policy::Clustering, &idle, &q), 43.0);
        let mut other = idle.clone();
        other.affinity = vec![(Affinity::Whole(8), 1)];
        assert_eq!(score(Policy::Clustering, &other, &q), 18.0);
    }

    #[test]
    fn fgd_picks_the_gpu_with_least_fragmentation_increase() {
        // Typical workload: all pods want 600 milli-GPU and 1 core.
        let t = TypicalPods::from_weights([(pod(1000, 1, 600), 1.0)]);
        let q = pod(1000, 1, 400);
        let n = node(32000, &[1000, 1000]);
        let before = node_frag(&n, &t);
        assert_eq!(before, 0.0);
        // Either GPU: [600, 1000] -> no GPU below 600 -> frag 0 -> sigmoid(0) = 0.5 -> 50.
        let s = Policy::Fgd.score(&n, &q, &t, before).unwrap_or(Scored { score: -1.0, pick: 0 });
        assert_eq!((s.score, s.pick), (50.0, 0b01));
        // With [1000, 700]: GPU1 -> [1000, 300]: frag 300 -> sigmoid(-0.3)*100 = 42.56 -> 42;
        // GPU0 -> [600, 700]: frag 0, but before = 0 as well -> 50: FGD takes GPU0.
        let n = node(32000, &[1000, 700]);
        let before = node_frag(&n, &t);
        let s = Policy::Fgd.score(&n, &q, &t, before).unwrap_or(Scored { score: -1.0, pick: 0 });
        assert_eq!((s.score, s.pick), (50.0, 0b01));
        // Ringleader sees the same gradient, unquantised.
        let s = Policy::Ringleader.score(&n, &q, &t, before).unwrap_or(Scored { score: -1.0, pick: 0 });
        assert_eq!((s.score, s.pick), (0.0, 0b01));
    }
}
