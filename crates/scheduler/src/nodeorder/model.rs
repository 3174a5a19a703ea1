//! Resource model shared by every node-order policy: pod shapes, node state,
//! GPU model sets and the GPUs a placement takes.

/// One whole GPU in milli-GPU units.
pub const MILLI: u32 = 1000;

/// The most GPUs one node may carry (a [`GpuPick`] is a 64-bit mask).
pub const MAX_GPUS_PER_NODE: usize = 64;

/// Index of a GPU model in the caller's model table (for example `V100M32`).
pub type ModelId = u16;

/// The GPU models a pod accepts: any model, or a set of model ids.
///
/// A pod may name models that no node carries; `restricted` stays true and
/// the empty mask then matches no node, as in the reference simulator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModelSet {
    restricted: bool,
    mask: u64,
}

impl ModelSet {
    /// Accepts every GPU model.
    pub const ANY: ModelSet = ModelSet { restricted: false, mask: 0 };

    /// Accepts only the listed models (ids at or above 64 are ignored, so the
    /// set then matches fewer nodes rather than more).
    pub fn only(ids: impl IntoIterator<Item = ModelId>) -> ModelSet {
        let mut mask = 0u64;
        for id in ids {
            if (id as usize) < 64 {
                mask |= 1 << id;
            }
        }
        ModelSet { restricted: true, mask }
    }

    /// True when the pod names no model.
    pub fn is_any(&self) -> bool {
        !self.restricted
    }

    /// Whether a node with `model` (None: a node without GPUs) may host the pod.
    pub fn allows(&self, model: Option<ModelId>) -> bool {
        if !self.restricted {
            return true;
        }
        match model {
            Some(id) if (id as usize) < 64 => self.mask & (1 << id) != 0,
            _ => false,
        }
    }
}

/// What a pod asks for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodShape {
    /// CPU request in millicores.
    pub cpu_milli: u32,
    /// Memory request in MiB.
    pub mem_mib: u64,
    /// Number of GPUs (0 for a CPU-only pod).
    pub gpu_count: u32,
    /// Share of each GPU in milli-GPU (1000 for whole GPUs, 0 without GPUs).
    pub gpu_milli: u32,
    /// GPU models the pod accepts.
    pub models: ModelSet,
}

impl PodShape {
    /// Total GPU request in milli-GPU.
    pub fn total_gpu_milli(&self) -> u64 {
        u64::from(self.gpu_count) * u64::from(self.gpu_milli)
    }

    /// A pod that takes part of one GPU.
    pub fn is_shared(&self) -> bool {
        self.gpu_count == 1 && self.gpu_milli < MILLI
    }

    /// A pod that asks for GPUs at all.
    pub fn wants_gpu(&self) -> bool {
        self.gpu_count > 0 && self.gpu_milli > 0
    }

    /// The GpuClustering affinity tag of this pod.
    pub fn affinity(&self) -> Affinity {
        if !self.wants_gpu() {
            Affinity::NoGpu
        } else if self.is_shared() {
            Affinity::Shared
        } else {
            Affinity::Whole(self.gpu_count)
        }
    }
}

/// GpuClustering's grouping of pods: by how they use GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Affinity {
    /// CPU-only pod.
    NoGpu,
    /// Part of one GPU.
    Shared,
    /// This many whole GPUs.
    Whole(u32),
}

/// GPUs taken by a placement, as a bit mask over the node's GPU indices.
pub type GpuPick = u64;

/// The free and total resources of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeState {
    /// Allocatable CPU in millicores.
    pub cpu_cap: u32,
    /// CPU not yet requested.
    pub cpu_left: u32,
    /// Allocatable memory in MiB.
    pub mem_cap: u64,
    /// Memory not yet requested.
    pub mem_left: u64,
    /// GPU model (None for a node without GPUs).
    pub model: Option<ModelId>,
    /// Free milli-GPU per GPU index.
    pub gpu_left: Vec<u32>,
    /// Pods on the node per affinity tag (GPU pods only), for GpuClustering.
    pub affinity: Vec<(Affinity, u32)>,
}

impl NodeState {
    /// An empty node.
    pub fn new(cpu_milli: u32, mem_mib: u64, gpus: usize, model: Option<ModelId>) -> NodeState {
        NodeState {
            cpu_cap: cpu_milli,
            cpu_left: cpu_milli,
            mem_cap: mem_mib,
            mem_left: mem_mib,
            model,
            gpu_left: vec![MILLI; gpus.min(MAX_GPUS_PER_NODE)],
            affinity: Vec::new(),
        }
    }

    /// Free milli-GPU summed over the node's GPUs.
    pub fn gpu_left_total(&self) -> u64 {
        self.gpu_left.iter().map(|&g| u64::from(g)).sum()
    }

    /// Number of GPUs with nothing allocated.
    pub fn free_gpus(&self) -> usize {
        self.gpu_left.iter().filter(|&&g| g == MILLI).count()
    }

    /// Whether the GPU side of `pod` fits: enough GPUs each with `gpu_milli` free.
    pub fn gpus_fit(&self, pod: &PodShape) -> bool {
        if !pod.wants_gpu() {
            return true;
        }
        let fitting = self.gpu_left.iter().filter(|&&g| g >= pod.gpu_milli).count();
        fitting >= pod.gpu_count as usize
    }

    /// The filter stage: CPU, memory, GPU model and GPU capacity.
    pub fn fits(&self, pod: &PodShape) -> bool {
        if self.cpu_left < pod.cpu_milli || self.mem_left < pod.mem_mib {
            return false;
        }
        if !pod.wants_gpu() {
            return true;
        }
        if self.gpu_left.is_empty() || !pod.models.allows(self.model) {
            return false;
        }
        self.gpus_fit(pod)
    }

    /// The lowest-indexed fully free GPUs for a whole-GPU pod (None if too few).
    pub fn exclusive_pick(&self, count: u32) -> Option<GpuPick> {
        let mut pick = 0u64;
        let mut need = count;
        for (i, &g) in self.gpu_left.iter().enumerate() {
            if need == 0 {
                break;
            }
            if g == MILLI {
                pick |= 1 << i;
                need -= 1;
            }
        }
        (need == 0).then_some(pick)
    }

    /// The tightest GPU that still fits a shared request (lowest index on ties).
    pub fn best_fit_gpu(&self, milli: u32) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, &g) in self.gpu_left.iter().enumerate() {
            let tighter = match best {
                None => true,
                Some(b) => g < self.gpu_left[b],
            };
            if g >= milli && tighter {
                best = Some(i);
            }
        }
        best
    }

    /// The GPUs the default (best-fit) GPU selection gives `pod` here.
    pub fn default_pick(&self, pod: &PodShape) -> Option<GpuPick> {
        if !pod.wants_gpu() {
            Some(0)
        } else if pod.is_shared() {
            self.best_fit_gpu(pod.gpu_milli).map(|i| 1u64 << i)
        } else {
            self.exclusive_pick(pod.gpu_count)
        }
    }

    /// Takes `pod`'s resources, its GPU share from each GPU in `pick`.
    ///
    /// The caller has checked the fit; amounts saturate rather than wrap.
    pub fn place(&mut self, pod: &PodShape, pick: GpuPick) {
        self.cpu_left = self.cpu_left.saturating_sub(pod.cpu_milli);
        self.mem_left = self.mem_left.saturating_sub(pod.mem_mib);
        for (i, g) in self.gpu_left.iter_mut().enumerate() {
            if pick & (1 << i) != 0 {
                *g = g.saturating_sub(pod.gpu_milli);
            }
        }
        let tag = pod.affinity();
        if tag != Affinity::NoGpu {
            match self.affinity.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, n)) => *n += 1,
                None => self.affinity.push((tag, 1)),
            }
        }
    }

    /// Gives back what [`NodeState::place`] took.
    pub fn remove(&mut self, pod: &PodShape, pick: GpuPick) {
        self.cpu_left = (self.cpu_left + pod.cpu_milli).min(self.cpu_cap);
        self.mem_left = (self.mem_left + pod.mem_mib).min(self.mem_cap);
        for (i, g) in self.gpu_left.iter_mut().enumerate() {
            if pick & (1 << i) != 0 {
                *g = (*g + pod.gpu_milli).min(MILLI);
            }
        }
        let tag = pod.affinity();
        if let Some(pos) = self.affinity.iter().position(|(t, _)| *t == tag) {
            self.affinity[pos].1 -= 1;
            if self.affinity[pos].1 == 0 {
                self.affinity.swap_remove(pos);
            }
        }
    }

    /// How many pods with this affinity tag run here.
    pub fn affinity_count(&self, tag: Affinity) -> u32 {
        self.affinity.iter().find(|(t, _)| *t == tag).map_or(0, |(_, n)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(cpu: u32, milli: u32) -> PodShape {
        PodShape { cpu_milli: cpu, mem_mib: 0, gpu_count: 1, gpu_milli: milli, models: ModelSet::ANY }
    }

    #[test]
    fn model_set_filters_by_model() {
        let any = ModelSet::ANY;
        assert!(any.allows(None) && any.allows(Some(3)));
        let only = ModelSet::only([1, 3]);
        assert!(only.allows(Some(1)) && only.allows(Some(3)));
        assert!(!only.allows(Some(2)) && !only.allows(None));
        assert!(!ModelSet::only([]).allows(Some(0)));
    }

    #[test]
    fn place_and_remove_round_trip() {
        let mut n = NodeState::new(8000, 1000, 2, Some(0));
        let pod = shared(2000, 300);
        let before = n.clone();
        n.place(&pod, 0b10);
        assert_eq!(n.gpu_left, vec![1000, 700]);
        assert_eq!(n.cpu_left, 6000);
        assert_eq!(n.affinity_count(Affinity::Shared), 1);
        n.remove(&pod, 0b10);
        assert_eq!(n, before);
    }

    #[test]
    fn picks_follow_the_reference_rules() {
        let mut n = NodeState::new(64000, 1 << 20, 4, Some(0));
        n.gpu_left = vec![1000, 400, 1000, 700];
        assert_eq!(n.best_fit_gpu(300), Some(1));
        assert_eq!(n.best_fit_gpu(500), Some(3));
        assert_eq!(n.exclusive_pick(2), Some(0b0101));
        assert_eq!(n.exclusive_pick(3), None);
        let two = PodShape { cpu_milli: 0, mem_mib: 0, gpu_count: 2, gpu_milli: 1000, models: ModelSet::ANY };
        assert!(n.fits(&two));
        let three = PodShape { gpu_count: 3, ..two };
        assert!(!n.fits(&three));
    }
}
