//! Queue admission: may a job's queue take it now? A job is refused when its
//! queue is unknown or Closed (itself or an ancestor), when it would take the
//! queue or an ancestor past its capability, or when a plugin refuses it
//! (proportion/capacity: past the queue's deserved share). The refusal is the job's explanation:
//! `queue team-a over capability: huawei.com/Ascend910 requested 16, used 120 of 128`.

use crate::resources::{format_milli, Resources};
use crate::session::{Amount, Session};
use ringleader_api::devices::classify;
use ringleader_api::DeviceKind;

/// Whether job `j` may be admitted with `victims` gone and `extra` already
/// promised to other jobs of its queue (enqueue's jobs not yet placed).
pub(crate) fn admit(
    ss: &Session,
    j: usize,
    victims: &[usize],
    amount: Amount,
    extra: &Resources,
) -> Result<(), String> {
    let job = &ss.jobs[j];
    let q = job.queue.as_str();
    if !ss.queues.by_name.contains_key(q) {
        return Err(format!("queue {q} not found"));
    }
    if let Some(closed) = ss.queues.closed(q) {
        return Err(format!("queue {closed} is Closed"));
    }
    vnpu_mode(ss, j)?;
    let request = match amount {
        Amount::Minimum => &job.min_request,
        Amount::Full => &job.request,
    };
    for anc in ss.queues.chain(q) {
        let used = ss.usage_under(&anc.name, victims).plus(extra);
        if let Some(r) = Resources::exceeds(&used, request, &anc.capability) {
            return Err(format!(
                "queue {} over capability: {r} requested {}, used {} of {}",
                anc.name,
                format_milli(request.get(&r)),
                format_milli(used.get(&r)),
                format_milli(anc.capability.get(&r))
            ));
        }
    }
    for p in &ss.plugins {
        p.admit(ss, j, victims, amount, extra)?;
    }
    Ok(())
}

/// Whether a resource is a static (`Some(true)`) or dynamic (`Some(false)`)
/// vNPU, or neither.
fn static_vnpu(resource: &str) -> Option<bool> {
    match classify(resource)?.1 {
        DeviceKind::StaticVnpu { .. } => Some(true),
        DeviceKind::DynamicVnpu => Some(false),
        _ => None,
    }
}

/// Static and dynamic vNPUs never share a cluster (seed 000: the device
/// plugin's `presetVirtualDevice` is one mode for all nodes): a job asking
/// for one mode waits while a job holds vNPUs of the other.
fn vnpu_mode(ss: &Session, j: usize) -> Result<(), String> {
    let Some((wanted, resource)) = ss.jobs[j].request.0.keys().find_map(|r| Some((static_vnpu(r)?, r))) else {
        return Ok(());
    };
    for other in ss.jobs.iter().filter(|o| o.holds()) {
        // A running job's pods say which vNPUs they hold; one placed in this
        // session holds what it asked for.
        let holds_other = match &other.running {
            Some(r) => r.pods.iter().any(|p| p.vnpu == Some(!wanted)),
            None => other.request.0.keys().any(|r| static_vnpu(r) == Some(!wanted)),
        };
        if holds_other {
            let (mode, other_mode) = if wanted { ("static", "dynamic") } else { ("dynamic", "static") };
            return Err(format!(
                "{mode} vNPU ({resource}) cannot run while {} holds {other_mode} vNPUs: a cluster uses one vNPU mode",
                other.key
            ));
        }
    }
    Ok(())
}
