//! Elastic training (`elastic-scheduling: on`, `minReplicas`, `maxRetry: 0`):
//! when capacity is lost the job is rescaled to the nodes available within
//! `[minReplicas, replicas]` and restarted from its checkpoint; a single-node
//! job steps down 8 → 4 → 2 → 1 chips; with capacity back it grows again.
//! The resized job is a plain [`Job`] with fewer replicas or chips, so
//! expansion, env and rank tables are rebuilt for the new size unchanged.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ringleader_api::model::{Elastic, Job};

/// Size of an elastic job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Scale {
    /// Total replicas.
    pub replicas: u32,
    /// Chips per pod.
    pub chips: u32,
}

/// Chips per pod the job asks for (0 without devices).
pub fn requested_chips(job: &Job) -> u32 {
    job.roles.iter().filter_map(|r| r.device.as_ref()).map(|d| d.count).max().unwrap_or(0)
}

/// The size to run at given `nodes_fitting` (ready nodes that can take one
/// pod at full chips) and, for a single-node job, `best_free` (most usable
/// chips on one node). `None`: not even the minimum fits — stay Pending.
pub fn target(job: &Job, elastic: Elastic, nodes_fitting: u32, best_free: u32) -> Option<Scale> {
    let full = job.total_replicas();
    let chips = requested_chips(job);
    if full <= 1 {
        // Single node: full size first, then halve the chips.
        let mut c = chips;
        while c > 0 {
            if c <= best_free {
                return Some(Scale { replicas: 1, chips: c });
            }
            c /= 2;
        }
        return if chips == 0 { Some(Scale { replicas: 1, chips: 0 }) } else { None };
    }
    let max = elastic.max_replicas.min(full).max(1);
    let min = elastic.min_replicas.clamp(1, max);
    let n = nodes_fitting.min(max);
    (n >= min).then_some(Scale { replicas: n, chips })
}

/// The job at `scale`: the last role (the workers) absorbs the replica
/// change; every device request and container limit/request becomes `chips`.
pub fn resized(job: &Job, scale: Scale) -> Job {
    let mut job = job.clone();
    let full = job.total_replicas();
    if scale.replicas != full {
        let others: u32 = job.roles.iter().rev().skip(1).map(|r| r.replicas).sum();
        if let Some(last) = job.roles.last_mut() {
            last.replicas = scale.replicas.saturating_sub(others);
        }
    }
    if scale.chips != requested_chips(&job) {
        for role in &mut job.roles {
            let Some(dev) = role.device.as_mut() else { continue };
            dev.count = scale.chips;
            let resource = dev.resource.clone();
            let Some(spec) = role.template.spec.as_mut() else { continue };
            for c in &mut spec.containers {
                let Some(res) = c.resources.as_mut() else { continue };
                for map in [res.limits.as_mut(), res.requests.as_mut()].into_iter().flatten() {
                    if let Some(q) = map.get_mut(&resource) {
                        *q = Quantity(scale.chips.to_string());
                    }
                }
            }
        }
    }
    job.scheduling.min_available = job.scheduling.min_available.min(job.total_replicas());
    job
}
