//! Resizing an elastic job once it has run: grow back when capacity
//! returns ([`grow`]), and shrink a job that restarts at a size which no
//! longer fits ([`refit`]). The size chosen at a fault is counted from what
//! was free then; when another job takes that capacity before the restarted
//! pods are placed, waiting at the old size would leave the job Pending for
//! as long as the other job runs, so it shrinks to what fits now, as at the
//! fault. With not even `minReplicas` fitting it stays Pending.

use super::run::Run;
use super::types::{DeleteMode, Observed, ObservedNode, ObservedPod, Phase, PodPhase};
use crate::elastic::{self, Scale};
use ringleader_api::model::Job;
use std::collections::BTreeSet;

/// Nodes that fit one pod of the job at full size, and the most usable
/// devices on one ready node (usable: see [`ObservedNode::usable_devices`]).
pub(super) fn capacity(job: &Job, nodes: &[ObservedNode]) -> (u32, u32) {
    let chips = elastic::requested_chips(job);
    let ready = nodes.iter().filter(|n| n.ready);
    let fitting = ready.clone().filter(|n| n.usable_devices >= chips).count() as u32;
    let best = ready.map(|n| n.usable_devices).max().unwrap_or(0);
    (fitting, best)
}

/// Grows an elastic job running below its size when capacity returned.
pub(super) fn grow(run: &mut Run<'_>, observed: &Observed, job: &Job, current: &[&ObservedPod]) -> bool {
    let (Some(el), Some(scale)) = (run.state.job.fault.elastic, run.st.scale) else { return false };
    if !run.state.config.elastic_grow {
        return false;
    }
    let (fitting, best) = capacity(&run.state.job, &observed.nodes);
    // Nodes already running the job count as capacity too.
    let own: BTreeSet<&str> = current.iter().filter_map(|p| p.node.as_deref()).collect();
    let fitting = fitting.max(own.len() as u32);
    let Some(target) = elastic::target(&run.state.job, el, fitting, best.max(scale.chips)) else { return false };
    if target.replicas <= scale.replicas && target.chips <= scale.chips {
        return false;
    }
    let full =
        target.replicas == run.state.job.total_replicas() && target.chips == elastic::requested_chips(&run.state.job);
    run.st.scale = if full { None } else { Some(target) };
    for p in current.iter().filter(|p| p.phase.is_live()) {
        run.delete(p, DeleteMode::Graceful, "elastic scale-up");
    }
    run.st.version += 1;
    let msg =
        format!("capacity returned: {} → {} replicas × {} chips", job.total_replicas(), target.replicas, target.chips);
    run.transition(Phase::Restarting, "ElasticScaleUp", &msg);
    true
}

/// Shrinks an elastic job that ran before and is Pending again (restarted
/// for a fault or to grow) with a pod still unplaced, when its size no
/// longer fits: its pods go and it restarts at the size that does. True
/// when it did.
pub(super) fn refit(run: &mut Run<'_>, observed: &Observed, current: &[&ObservedPod]) -> bool {
    let Some(el) = run.state.job.fault.elastic else { return false };
    if run.st.phase != Phase::Pending || run.st.start_time.is_none() {
        return false;
    }
    if !current.iter().any(|p| p.phase == PodPhase::Pending && p.node.is_none() && !p.deleting) {
        return false;
    }
    let job = &run.state.job;
    let full = Scale { replicas: job.total_replicas(), chips: elastic::requested_chips(job) };
    let size = run.st.scale.unwrap_or(full);
    let (fitting, best) = capacity(job, &observed.nodes);
    let Some(target) = elastic::target(job, el, fitting, best) else { return false };
    if target == size || target.replicas > size.replicas || target.chips > size.chips {
        return false;
    }
    run.st.scale = Some(target);
    for p in current.iter().filter(|p| p.phase.is_live()) {
        run.delete(p, DeleteMode::Graceful, "elastic scale-down");
    }
    run.st.version += 1;
    let msg = format!(
        "capacity taken while restarting: {} → {} replicas × {} chips",
        size.replicas, target.replicas, target.chips
    );
    run.transition(Phase::Restarting, "ElasticScaleDown", &msg);
    true
}
