//! Saturation replay, the FGD paper's protocol: pods only arrive; each is
//! tried once and dropped if it does not fit; the GPU allocation ratio is
//! recorded against the GPU request that has arrived so far.
//!
//! Arrival order: pods sorted by name, shuffled with the seed, then followed
//! by seeded re-draws of the (name-sorted) pods until the total GPU request
//! would pass `inflate` × cluster GPU capacity.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use ringleader_scheduler::nodeorder::{node_frag, NodeOrder, Policy};

use super::experiment::Experiment;

/// Highest arrived-load percentage binned.
const MAX_PERCENT: usize = 400;

/// Knobs of a saturation replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SaturationConfig {
    /// Total GPU request to reach, as a multiple of cluster GPU capacity.
    pub inflate: f64,
}

impl Default for SaturationConfig {
    fn default() -> Self {
        SaturationConfig { inflate: 1.3 }
    }
}

/// One point of the allocation curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// Arrived GPU request, percent of capacity (integer bin).
    pub arrived_percent: u32,
    /// Mean GPU allocation ratio over the bin's events, percent.
    pub allocation_percent: f64,
    /// Mean fragmented share of the free GPU over the bin's events, percent.
    pub fragmentation_percent: f64,
}

/// The outcome of one policy on one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SaturationRun {
    /// The policy.
    pub policy: Policy,
    /// The seed.
    pub seed: u64,
    /// Allocation and fragmentation per integer percent of arrived load.
    pub curve: Vec<CurvePoint>,
    /// Pods that arrived.
    pub pods_arrived: usize,
    /// Pods placed.
    pub pods_placed: usize,
    /// Allocated GPU milli at the end.
    pub allocated_milli: u64,
    /// Sum of the requests of placed pods (must equal `allocated_milli`).
    pub placed_request_milli: u64,
    /// Wall time of the replay, seconds.
    pub seconds: f64,
    /// Scheduling time per arriving pod, microseconds.
    pub micros_per_pod: f64,
}

impl SaturationRun {
    /// The curve point at `percent` arrived load, if the run reached it.
    pub fn at(&self, percent: u32) -> Option<&CurvePoint> {
        self.curve.iter().find(|p| p.arrived_percent == percent)
    }
}

/// The arrival order for `seed`: indices into the workload. Returns the RNG
/// too, so the node ranks and the policy continue the same seeded stream.
pub fn arrival_order(exp: &Experiment, inflate: f64, seed: u64) -> (Vec<usize>, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let pods = &exp.workload.pods;
    let mut by_name: Vec<usize> = (0..pods.len()).collect();
    by_name.sort_by(|&a, &b| pods[a].name.cmp(&pods[b].name));
    let mut order = by_name.clone();
    order.shuffle(&mut rng);
    let target = inflate * exp.cluster.gpu_capacity_milli() as f64;
    let mut total: u64 = order.iter().map(|&i| pods[i].shape.total_gpu_milli()).sum();
    if by_name.is_empty() {
        return (order, rng);
    }
    let any_gpu = by_name.iter().any(|&i| pods[i].shape.total_gpu_milli() > 0);
    if (total as f64) < target && any_gpu {
        // Terminates: a GPU pod is drawn with positive probability and every
        // GPU draw brings the total closer to the target.
        loop {
            let i = by_name[rng.gen_range(0..by_name.len())];
            let next = total + pods[i].shape.total_gpu_milli();
            if next as f64 > target {
                break;
            }
            total = next;
            order.push(i);
        }
    } else {
        // A workload above the target is thinned by random removals, as the
        // reference's tune-down does.
        while total as f64 > target && !order.is_empty() {
            let k = rng.gen_range(0..order.len());
            total -= pods[order[k]].shape.total_gpu_milli();
            order.remove(k);
        }
    }
    (order, rng)
}

/// Python's `round()` (half to even), which the reference analysis bins with.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

#[derive(Clone, Copy, Default)]
struct Bin {
    alloc: f64,
    frag: f64,
    events: u64,
}

/// Replays the seeded arrival order against `policy`.
pub fn replay(exp: &Experiment, policy: Policy, seed: u64, config: SaturationConfig) -> SaturationRun {
    let (order, mut rng) = arrival_order(exp, config.inflate, seed);
    let ranks = exp.node_ranks(&mut rng);
    let mut nodes = exp.empty_nodes();
    let mut chooser = NodeOrder::new(policy, exp.typical.clone(), nodes.len(), exp.shapes.len());
    let capacity = exp.cluster.gpu_capacity_milli();
    let gpus = exp.cluster.gpu_count().max(1) as f64;
    let mut node_frags: Vec<f64> = nodes.iter().map(|n| node_frag(n, &exp.typical)).collect();
    let mut frag_total: f64 = node_frags.iter().sum();
    let mut bins = vec![Bin::default(); MAX_PERCENT + 1];
    let (mut arrived, mut allocated, mut placed_request, mut placed) = (0u64, 0u64, 0u64, 0usize);
    let started = Instant::now();
    for &p in &order {
        let pod = &exp.workload.pods[p].shape;
        arrived += pod.total_gpu_milli();
        if let Some(d) = chooser.choose(&nodes, &ranks, pod, Some(exp.shape_of[p]), &mut rng) {
            let before: u64 = nodes[d.node].gpu_left_total();
            nodes[d.node].place(pod, d.gpus);
            allocated += before - nodes[d.node].gpu_left_total();
            placed_request += pod.total_gpu_milli();
            placed += 1;
            chooser.node_changed(d.node);
            let f = node_frag(&nodes[d.node], &exp.typical);
            frag_total += f - node_frags[d.node];
            node_frags[d.node] = f;
        }
        let arrived_pct = round_half_even(arrived as f64 / gpus / 10.0);
        let idle = capacity.saturating_sub(allocated) as f64;
        let bin = &mut bins[(arrived_pct.max(0.0) as usize).min(MAX_PERCENT)];
        bin.alloc += allocated as f64 / gpus / 10.0;
        bin.frag += if idle > 0.0 { 100.0 * frag_total.max(0.0) / idle } else { 0.0 };
        bin.events += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let top = bins.iter().rposition(|b| b.events > 0).unwrap_or(0);
    let mut curve = Vec::new();
    for pct in 0..=top {
        // Like the reference analysis: a percent without events borrows the
        // events of its neighbours (±1).
        let window: &[Bin] = if bins[pct].events > 0 {
            &bins[pct..=pct]
        } else {
            &bins[pct.saturating_sub(1)..=(pct + 1).min(MAX_PERCENT)]
        };
        let events: u64 = window.iter().map(|b| b.events).sum();
        if events == 0 {
            continue;
        }
        curve.push(CurvePoint {
            arrived_percent: pct as u32,
            allocation_percent: window.iter().map(|b| b.alloc).sum::<f64>() / events as f64,
            fragmentation_percent: window.iter().map(|b| b.frag).sum::<f64>() / events as f64,
        });
    }
    SaturationRun {
        policy,
        seed,
        curve,
        pods_arrived: order.len(),
        pods_placed: placed,
        allocated_milli: allocated,
        placed_request_milli: placed_request,
        seconds,
        micros_per_pod: if order.is_empty() { 0.0 } else { seconds * 1e6 / order.len() as f64 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_like_python() {
        assert_eq!(round_half_even(0.5), 0.0);
        assert_eq!(round_half_even(1.5), 2.0);
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(2.6), 3.0);
        assert_eq!(round_half_even(129.49), 129.0);
    }
}
