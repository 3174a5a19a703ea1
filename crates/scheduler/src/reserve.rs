//! Reservations against starvation. When a gang that asks for devices cannot
//! be placed, the first such gang of the session (the one the job order puts
//! first, so the highest priority of its queue) gets the nodes it would need:
//! those serving its devices and passing its selectors, most free devices
//! first, until their healthy devices hold all its device pods. Jobs of
//! lower priority tried later in the session may not use them, so small
//! jobs cannot keep nibbling the room a large gang waits for; jobs of equal
//! priority keep FIFO/DRF order. One gang reservation per session; the gang
//! plugin's `reservation: false` argument turns it off.

use crate::conf::Argument;
use crate::predicates::{node_admits, policy_matches, serves};
use crate::session::{Reservation, Session};
use ringleader_api::DeviceKind;
use std::collections::BTreeSet;

/// Reserves nodes for job `j` if it is the session's first gang to go
/// without room; returns whether it did.
pub(crate) fn reserve_for(ss: &mut Session, j: usize) -> bool {
    if ss.conf.argument("gang", "reservation") == Some(&Argument::Bool(false))
        || ss.reservations.iter().any(|r| !r.vip)
        || ss.jobs[j].best_effort
        || ss.jobs[j].vip.is_some()
    {
        return false;
    }
    let Some(nodes) = nodes_for(ss, j) else { return false };
    let mut names: Vec<&str> =
        nodes.iter().take(5).filter_map(|i| ss.cluster.nodes.get(*i)).map(|n| n.name.as_str()).collect();
    let more = nodes.len().saturating_sub(names.len());
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    names.sort_unstable();
    let what = format!("reserved {}{more} for it against lower-priority jobs", names.join(", "));
    crate::victims::note(ss, j, &what);
    ss.reservations.push(Reservation { job: j, nodes, vip: false });
    true
}

fn nodes_for(ss: &Session, j: usize) -> Option<BTreeSet<usize>> {
    let spec = ss.jobs[j].spec.as_ref()?;
    let gate = ss.gate(j);
    let mut chosen = BTreeSet::new();
    for role in &spec.roles {
        let Some(req) = &role.device else { continue };
        let per_pod = match req.kind {
            DeviceKind::Whole => req.count.max(1),
            _ => 1,
        };
        let mut candidates: Vec<(u32, u32, usize)> = ss
            .cluster
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| {
                !chosen.contains(i)
                    && gate.check(*i).is_ok()
                    && node_admits(role.template.spec.as_ref(), n).is_ok()
                    && serves(n, req).is_ok()
                    && policy_matches(&n.profile, spec).is_ok()
            })
            .map(|(i, n)| {
                let healthy = n.state.healthy(&n.profile);
                (healthy.minus(n.state.allocated).len(), healthy.len(), i)
            })
            .collect();
        candidates.sort_by_key(|(free, _, i)| (std::cmp::Reverse(*free), *i));
        let mut left = role.replicas;
        for (_, healthy, i) in candidates {
            if left == 0 {
                break;
            }
            let pods = healthy / per_pod;
            if pods == 0 {
                continue;
            }
            chosen.insert(i);
            left = left.saturating_sub(pods);
        }
        if left > 0 {
            return None;
        }
    }
    (!chosen.is_empty()).then_some(chosen)
}
