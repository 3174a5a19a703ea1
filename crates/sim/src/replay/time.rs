//! Time replay: pods arrive at `creation_time` and leave at `deletion_time`.
//! A pod that does not fit waits in a FIFO queue and is retried, in queue
//! order, whenever a departure frees resources; a queued pod whose deletion
//! time passes leaves unplaced. Arriving pods are tried at once, so a small
//! pod may start ahead of a queued big one (no head-of-line blocking).

use std::collections::VecDeque;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use ringleader_scheduler::nodeorder::{GpuPick, NodeOrder, NodeState, Policy};

use super::experiment::Experiment;

/// Samples kept of the utilisation curve.
const MAX_SAMPLES: usize = 500;

/// Why a time replay cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeReplayError {
    /// A pod lacks `creation_time`.
    #[error("pod `{0}` has no creation_time; time replay needs arrival times (the multigpu traces have none)")]
    NoArrival(String),
}

/// The outcome of one policy on the time-ordered trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeRun {
    /// The policy.
    pub policy: Policy,
    /// Seed of the tie-break ranks.
    pub seed: u64,
    /// Pods in the trace.
    pub pods: usize,
    /// Pods that ran at some point.
    pub placed: usize,
    /// Pods that never ran.
    pub never_placed: usize,
    /// Mean wait from arrival to placement over placed pods, seconds.
    pub mean_queue_delay_s: f64,
    /// 99th percentile of that wait, seconds.
    pub p99_queue_delay_s: f64,
    /// Time-weighted mean GPU allocation, percent of capacity.
    pub mean_utilisation_percent: f64,
    /// `(time, GPU allocation %)` samples after events.
    pub utilisation: Vec<(u64, f64)>,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Scheduling time per pod, microseconds.
    pub micros_per_pod: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    // Departures sort first at equal times so their resources are free.
    Depart,
    Arrive,
}

/// Replays the trace in time order against `policy`.
pub fn replay(exp: &Experiment, policy: Policy, seed: u64) -> Result<TimeRun, TimeReplayError> {
    let pods = &exp.workload.pods;
    let mut events: Vec<(u64, Kind, usize)> = Vec::with_capacity(pods.len() * 2);
    for (i, p) in pods.iter().enumerate() {
        let c = p.creation.ok_or_else(|| TimeReplayError::NoArrival(p.name.clone()))?;
        events.push((c, Kind::Arrive, i));
        if let Some(d) = p.deletion {
            events.push((d, Kind::Depart, i));
        }
    }
    events.sort();
    let mut rng = StdRng::seed_from_u64(seed);
    let ranks = exp.node_ranks(&mut rng);
    let nodes = exp.empty_nodes();
    let chooser = NodeOrder::new(policy, exp.typical.clone(), nodes.len(), exp.shapes.len());
    let capacity = exp.cluster.gpu_capacity_milli().max(1) as f64;
    let mut st =
        State { exp, ranks, rng, nodes, chooser, placement: vec![None; pods.len()], delays: Vec::new(), allocated: 0 };
    let mut departed = vec![false; pods.len()];
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut samples: Vec<(u64, f64)> = Vec::new();
    let (mut area, mut last_t) = (0.0f64, events.first().map_or(0, |e| e.0));
    let started = Instant::now();
    for &(t, kind, i) in &events {
        area += (t - last_t) as f64 * st.allocated as f64;
        last_t = t;
        match kind {
            Kind::Arrive => {
                if !departed[i] && !st.try_place(i, t) {
                    queue.push_back(i);
                }
            }
            Kind::Depart => {
                departed[i] = true;
                let Some(n) = st.remove(i) else { continue };
                // Every queued pod fitted nowhere before this departure, so
                // only the freed node can take one now: check it first.
                let mut k = 0;
                while k < queue.len() {
                    let q = queue[k];
                    if departed[q] || (st.nodes[n].fits(&pods[q].shape) && st.try_place(q, t)) {
                        queue.remove(k);
                    } else {
                        k += 1;
                    }
                }
            }
        }
        samples.push((t, 100.0 * st.allocated as f64 / capacity));
    }
    let mut delays = st.delays;
    let seconds = started.elapsed().as_secs_f64();
    let span = events.last().map_or(0, |e| e.0).saturating_sub(events.first().map_or(0, |e| e.0));
    delays.sort_unstable();
    let placed = delays.len();
    let mean_delay = if placed > 0 { delays.iter().map(|&d| d as f64).sum::<f64>() / placed as f64 } else { 0.0 };
    let p99 =
        if placed > 0 { delays[((placed as f64 * 0.99).ceil() as usize).clamp(1, placed) - 1] as f64 } else { 0.0 };
    let step = samples.len().div_ceil(MAX_SAMPLES).max(1);
    let utilisation = samples.iter().step_by(step).copied().collect();
    Ok(TimeRun {
        policy,
        seed,
        pods: pods.len(),
        placed,
        never_placed: pods.len() - placed,
        mean_queue_delay_s: mean_delay,
        p99_queue_delay_s: p99,
        mean_utilisation_percent: if span > 0 { 100.0 * area / span as f64 / capacity } else { 0.0 },
        utilisation,
        seconds,
        micros_per_pod: if pods.is_empty() { 0.0 } else { seconds * 1e6 / pods.len() as f64 },
    })
}

struct State<'a> {
    exp: &'a Experiment,
    ranks: Vec<u32>,
    rng: StdRng,
    nodes: Vec<NodeState>,
    chooser: NodeOrder,
    placement: Vec<Option<(usize, GpuPick)>>,
    delays: Vec<u64>,
    allocated: u64,
}

impl State<'_> {
    fn try_place(&mut self, i: usize, now: u64) -> bool {
        let pod = &self.exp.workload.pods[i];
        let Some(d) =
            self.chooser.choose(&self.nodes, &self.ranks, &pod.shape, Some(self.exp.shape_of[i]), &mut self.rng)
        else {
            return false;
        };
        self.nodes[d.node].place(&pod.shape, d.gpus);
        self.chooser.node_changed(d.node);
        self.allocated += pod.shape.total_gpu_milli();
        self.placement[i] = Some((d.node, d.gpus));
        self.delays.push(now.saturating_sub(pod.creation.unwrap_or(now)));
        true
    }

    fn remove(&mut self, i: usize) -> Option<usize> {
        let (n, gpus) = self.placement[i].take()?;
        let shape = &self.exp.workload.pods[i].shape;
        self.nodes[n].remove(shape, gpus);
        self.chooser.node_changed(n);
        self.allocated -= shape.total_gpu_milli();
        Some(n)
    }
}
