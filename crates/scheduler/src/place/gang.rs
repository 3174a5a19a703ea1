//! One gang onto nodes and exact devices, on a copy of the device state (a
//! statement) committed only when at least `minAvailable` pods fit.

use super::request::{annotations, Gate, PodPlacement};
use super::view::{RoleView, TorOrder};
use crate::cluster::Cluster;
use crate::predicates::Filtered;
use ringleader_api::model::Role;
use ringleader_api::Job;
use ringleader_topology::DeviceState;
use std::collections::{BTreeMap, BTreeSet};

/// How a gang is laid out beyond per-pod node choice.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GangOptions {
    /// Where a multi-pod job goes when its ToRs are full.
    pub tor_order: TorOrder,
    /// Logical SuperPoD blocks, in pods, each kept inside one SuperPoD.
    pub super_pod: Option<super::domains::SuperPodRule>,
}

/// A block's domain: its name and member nodes, or `None` for anywhere.
type Pin = Option<(String, Vec<usize>)>;

/// Places the gang on a working copy of the device states (the statement)
/// and commits it only when at least `minAvailable` pods fit.
pub(crate) fn place_gang(
    cluster: &mut Cluster,
    job: &Job,
    predicate_time: u64,
    gate: Gate<'_>,
    opts: GangOptions,
) -> Result<Vec<PodPlacement>, String> {
    let mut states: Vec<DeviceState> = cluster.nodes.iter().map(|n| n.state.clone()).collect();
    let multi_pod = job.total_replicas() > 1;
    // Read-only during placement; the statement commits into `cluster` at the end.
    let cl: &Cluster = cluster;
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut used_tors: BTreeSet<Option<String>> = BTreeSet::new();
    let mut first_failure: Option<(String, String)> = None;
    let mut placed: Vec<(usize, PodPlacement)> = Vec::new();
    // Ranks in pod order; roles with devices first, so device-less pods
    // (launchers, controllers) can then join the nodes the job already uses.
    let mut rank_base = 0usize;
    let mut roles: Vec<(usize, &Role)> = Vec::new();
    for role in &job.roles {
        roles.push((rank_base, role));
        rank_base += role.replicas as usize;
    }
    roles.sort_by_key(|(base, role)| (role.device.is_none(), *base));
    // Logical SuperPoD blocks run over the job's device pods in rank order,
    // across roles (a Master and its Workers share a block): the SuperPoD
    // chosen for a block holds every pod of it, whichever role it is of.
    let device_pods: u32 = job.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
    let mut seen_device_pods = 0u32;
    let mut block_pin: Option<(u32, Pin)> = None;
    for (base, role) in roles {
        // Pods go in blocks: one per role, one per partition (placed whole),
        // or one per logical SuperPoD.
        let block = match (&role.partitions, opts.super_pod, &role.device) {
            (Some(p), _, _) => p.size.max(1),
            (None, Some(rule), Some(_)) => rule.block_pods.max(1),
            _ => role.replicas.max(1),
        };
        let mut start = 0;
        while start < role.replicas {
            let end = match (&role.partitions, opts.super_pod, &role.device) {
                (None, Some(_), Some(_)) => {
                    // Up to the end of the logical block this pod is in.
                    let g = seen_device_pods + start;
                    (start + (block - g % block)).min(role.replicas)
                }
                _ => (start + block).min(role.replicas),
            };
            let first_pod = format!("{}-{start}", role.pod_prefix);
            let pinned: Result<Pin, String> = match (&role.partitions, opts.super_pod, &role.device) {
                (Some(p), _, _) => {
                    super::domains::choose_hypernode(cl, &states, job, role, gate, end - start, p.network_topology)
                }
                (None, Some(rule), Some(_)) => {
                    let id = (seen_device_pods + start) / block;
                    match &block_pin {
                        Some((b, pin)) if *b == id => Ok(pin.clone()),
                        _ => {
                            let whole = block.min(device_pods.saturating_sub(id * block)).max(end - start);
                            let chosen = super::domains::choose_super_pod(cl, &states, job, role, gate, whole, rule);
                            if let Ok(pin) = &chosen {
                                block_pin = Some((id, pin.clone()));
                            }
                            chosen
                        }
                    }
                }
                _ => Ok(None),
            };
            let pinned = match pinned {
                Ok(p) => p,
                Err(why) => {
                    first_failure.get_or_insert((first_pod, why));
                    start = end;
                    continue;
                }
            };
            let block_gate = |i: usize| {
                gate(i)?;
                match &pinned {
                    Some((name, members)) if members.binary_search(&i).is_err() => {
                        Err(Filtered::Gated(format!("node(s) outside {name} chosen for this block")))
                    }
                    _ => Ok(()),
                }
            };
            // A partition is a sub-gang: keep what to restore if it is not placed whole.
            let undo = role.partitions.map(|_| (states.clone(), placed.len(), used.clone(), used_tors.clone()));
            let mut view = RoleView::new(cl, &states, job, role, &used, &block_gate, multi_pod);
            for index in start..end {
                let pod = format!("{}-{index}", role.pod_prefix);
                let Some(i) = view.choose(&used_tors, opts.tor_order) else {
                    if first_failure.is_none() {
                        first_failure = Some((pod, view.explain().to_string()));
                    }
                    continue;
                };
                let node = &cl.nodes[i];
                let rank = base + index as usize;
                let (devices, annotations) = match (view.allocation(i), &view.request) {
                    (Some(a), Some((req, topo))) => {
                        let placed_devices = a.ids.clone();
                        let ann = annotations(node, a, req, predicate_time + rank as u64, rank as u64);
                        states[i].apply(&node.profile, topo, a);
                        (placed_devices, ann)
                    }
                    _ => (Vec::new(), BTreeMap::new()),
                };
                used.insert(i);
                if node.network.tor.is_some() {
                    used_tors.insert(node.network.tor.clone());
                }
                view.refresh(&states, i, &used);
                placed
                    .push((rank, PodPlacement { job: job.key(), pod, node: node.name.clone(), devices, annotations }));
            }
            if let Some((s0, n0, u0, t0)) = undo {
                let got = placed.len() - n0;
                if got < (end - start) as usize {
                    first_failure.get_or_insert((
                        first_pod,
                        format!("partition: only {got} of its {} pods fit, so none are placed", end - start),
                    ));
                    (states, used, used_tors) = (s0, u0, t0);
                    placed.truncate(n0);
                }
            }
            start = end;
        }
        if role.device.is_some() {
            seen_device_pods += role.replicas;
        }
    }
    for role in &job.roles {
        let Some(p) = role.partitions.filter(|p| p.min > 0) else { continue };
        let prefix = format!("{}-", role.pod_prefix);
        let whole = placed.iter().filter(|(_, pp)| pp.pod.starts_with(&prefix)).count() as u32 / p.size.max(1);
        if whole < p.min {
            let detail = first_failure.map(|(pod, why)| format!("; pod {pod}: {why}")).unwrap_or_default();
            return Err(format!(
                "gang: only {whole} of minPartitions {} partitions of {} fit{detail}",
                p.min, role.name
            ));
        }
    }
    let needed = job.scheduling.min_available.min(job.total_replicas());
    if (placed.len() as u32) < needed {
        let detail = first_failure.map(|(pod, why)| format!("; pod {pod}: {why}")).unwrap_or_default();
        return Err(format!("gang: only {} of minAvailable {needed} pods fit{detail}", placed.len()));
    }
    for (node, state) in cluster.nodes.iter_mut().zip(states) {
        node.state = state;
    }
    placed.sort_by_key(|(rank, _)| *rank);
    Ok(placed.into_iter().map(|(_, p)| p).collect())
}
