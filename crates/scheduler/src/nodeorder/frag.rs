//! GPU fragmentation of a node against the typical pod shapes (FGD, §4 of the
//! paper; `NodeGpuShareFragAmount` in the reference simulator).
//!
//! For each typical shape with frequency `f`, the node's free GPU milli is
//! split into "usable" and "fragment":
//! * shape asks for no GPU: all free GPU counts as fragment (a CPU-only pod
//!   can never use it);
//! * the node's GPU model is not allowed, or too few GPUs fit, or the CPU
//!   does not fit: all free GPU is fragment;
//! * otherwise only GPUs with less free than the shape's per-GPU share are
//!   fragment.
//!
//! The node's fragmentation is the `f`-weighted sum over the shapes.

use super::model::NodeState;
use super::typical::TypicalPods;

/// Fragment and free GPU milli of a node or cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FragBreakdown {
    /// Expected fragmented GPU milli.
    pub frag_milli: f64,
    /// Free GPU milli.
    pub idle_milli: f64,
}

impl FragBreakdown {
    /// Fragmented share of the free GPU, in percent (0 when nothing is free).
    pub fn ratio_percent(&self) -> f64 {
        if self.idle_milli > 0.0 {
            100.0 * self.frag_milli / self.idle_milli
        } else {
            0.0
        }
    }
}

/// Expected fragmented GPU milli of `node` against `typical`.
pub fn node_frag(node: &NodeState, typical: &TypicalPods) -> f64 {
    frag_of(node.cpu_left, &node.gpu_left, node, typical)
}

/// Fragmentation of `node`'s GPU model with the given free CPU and GPUs
/// (lets policies try a placement without copying the node).
pub(crate) fn frag_of(cpu_left: u32, gpu_left: &[u32], node: &NodeState, typical: &TypicalPods) -> f64 {
    let total: u32 = gpu_left.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let total = f64::from(total);
    let mut frag = 0.0;
    for t in typical.pods() {
        if t.gpu_milli == 0 || t.gpu_count == 0 || !t.models.allows(node.model) {
            frag += t.freq * total;
            continue;
        }
        let mut fitting = 0u32;
        let mut short = 0u32;
        for &g in gpu_left {
            if g >= t.gpu_milli {
                fitting += 1;
            } else {
                short += g;
            }
        }
        if fitting >= t.gpu_count && cpu_left >= t.cpu_milli {
            frag += t.freq * f64::from(short);
        } else {
            frag += t.freq * total;
        }
    }
    frag
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodeorder::model::{ModelSet, PodShape};

    fn typical() -> TypicalPods {
        // 50% half-GPU pods with 4 cores, 30% one-GPU pods with 8 cores, 20% CPU pods.
        TypicalPods::from_weights([
            (PodShape { cpu_milli: 4000, mem_mib: 0, gpu_count: 1, gpu_milli: 500, models: ModelSet::ANY }, 0.5),
            (PodShape { cpu_milli: 8000, mem_mib: 0, gpu_count: 1, gpu_milli: 1000, models: ModelSet::ANY }, 0.3),
            (PodShape { cpu_milli: 2000, mem_mib: 0, gpu_count: 0, gpu_milli: 0, models: ModelSet::ANY }, 0.2),
        ])
    }

    #[test]
    fn hand_computed_fragmentation() {
        let mut n = NodeState::new(32000, 0, 2, Some(0));
        // Empty node: half pods see 0 fragment; whole pods 0; CPU pods all 2000.
        assert!((node_frag(&n, &typical()) - 0.2 * 2000.0).abs() < 1e-9);
        n.gpu_left = vec![300, 1000];
        // half: GPU0 (300 < 500) is fragment -> 0.5 * 300
        // whole: GPU0 (300 < 1000) is fragment -> 0.3 * 300
        // cpu: 0.2 * 1300
        let want = 0.5 * 300.0 + 0.3 * 300.0 + 0.2 * 1300.0;
        assert!((node_frag(&n, &typical()) - want).abs() < 1e-9);
        // CPU starved below 8 cores: whole pods count all free GPU.
        n.cpu_left = 6000;
        let want = 0.5 * 300.0 + 0.3 * 1300.0 + 0.2 * 1300.0;
        assert!((node_frag(&n, &typical()) - want).abs() < 1e-9);
    }

    #[test]
    fn disallowed_model_is_all_fragment() {
        let t = TypicalPods::from_weights([(
            PodShape { cpu_milli: 1000, mem_mib: 0, gpu_count: 1, gpu_milli: 500, models: ModelSet::only([3]) },
            1.0,
        )]);
        let n = NodeState::new(32000, 0, 2, Some(1));
        assert!((node_frag(&n, &t) - 2000.0).abs() < 1e-9);
    }
}
