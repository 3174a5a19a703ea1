//! The network domains a gang or one of its parts may span: HyperNodes by
//! tier (ToR, spine), SuperPoDs in blocks of `sp-block` chips, and within
//! them the tightest one with room, so big groups stay whole for big jobs.

use super::request::{topology_request, Gate};
use crate::cluster::Cluster;
use crate::predicates::{node_admits, serves};
use ringleader_api::model::Role;
use ringleader_api::Job;
use ringleader_topology::{allocate, DeviceState, SchedulePolicy};
use std::collections::BTreeMap;

/// Logical SuperPoD blocks of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuperPodRule {
    /// Pods per logical block.
    pub block_pods: u32,
    /// `super-pod-affinity: soft`: a block that fits no SuperPoD may spread.
    pub soft: bool,
    /// `sp-block` in chips, for messages.
    pub sp_block: u32,
}

/// The job's SuperPoD rule: an `sp-block` annotation, or a multi-pod job
/// aimed at SuperPoD nodes (`accelerator-type: module-a3-16-super-pod` or
/// `schedule_policy: chip2-node16-sp`), whose block is then the whole job.
pub(super) fn super_pod_rule(job: &Job) -> Option<SuperPodRule> {
    let per_pod = job.roles.iter().filter_map(|r| r.device.as_ref().map(|d| d.count)).max().unwrap_or(0);
    let device_pods: u32 = job.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
    let aimed = job.topology.accelerator_type.as_deref() == Some("module-a3-16-super-pod")
        || job.topology.schedule_policy.as_deref() == Some(SchedulePolicy::Chip2Node16Sp.as_str());
    let sp_block = match job.topology.sp_block {
        Some(b) => b,
        None if aimed && device_pods > 1 => per_pod.saturating_mul(device_pods),
        None => return None,
    };
    if per_pod == 0 {
        return None;
    }
    Some(SuperPodRule {
        block_pods: (sp_block / per_pod).max(1),
        soft: job.topology.super_pod_affinity.as_deref() == Some("soft"),
        sp_block,
    })
}

/// The HyperNode of tier `tier` node `i` belongs to: its ToR (1), its spine
/// (2), or the whole cluster (3 and up).
fn hypernode_of(cluster: &Cluster, i: usize, tier: u32) -> Option<String> {
    let n = &cluster.nodes[i].network;
    match tier {
        1 => n.tor.clone(),
        2 => n.spine.clone(),
        _ => Some("cluster".to_string()),
    }
}

/// HyperNodes of a tier: groups of node indices, ascending.
pub(super) fn hypernodes(cluster: &Cluster, tier: u32) -> BTreeMap<String, Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for i in 0..cluster.nodes.len() {
        if let Some(k) = hypernode_of(cluster, i, tier) {
            groups.entry(k).or_default().push(i);
        }
    }
    groups
}

/// Devices the whole job asks for.
pub(super) fn devices_needed(job: &Job) -> u64 {
    job.roles.iter().filter_map(|r| r.device.as_ref().map(|d| u64::from(d.count) * u64::from(r.replicas))).sum()
}

/// Whole free devices on these nodes of the kind the job asks for; an upper
/// bound used only to skip HyperNodes that cannot possibly hold the job.
pub(super) fn free_devices(cluster: &Cluster, members: &[usize], job: &Job) -> u64 {
    let multi = job.total_replicas() > 1;
    let requests: Vec<_> = job.roles.iter().filter_map(|r| r.device.as_ref()).collect();
    members
        .iter()
        .map(|&i| &cluster.nodes[i])
        .filter(|n| requests.iter().any(|r| serves(n, r).is_ok()))
        .map(|n| u64::from(n.state.whole_free(&n.profile, multi).len()))
        .sum()
}

/// Pods of `role` node `i` can take now: for whole devices, its usable
/// free devices over the per-pod count; otherwise 1 if one fits.
fn room_on(cluster: &Cluster, states: &[DeviceState], job: &Job, role: &Role, gate: Gate<'_>, i: usize) -> u32 {
    let node = &cluster.nodes[i];
    let spec = role.template.spec.as_ref();
    if gate(i).is_err() || node_admits(spec, node).is_err() {
        return 0;
    }
    let Some(req) = role.device.as_ref() else { return u32::MAX };
    if serves(node, req).is_err() {
        return 0;
    }
    let topo = topology_request(job, req);
    if allocate(&node.profile, &states[i], &topo).is_err() {
        return 0;
    }
    match topo {
        ringleader_topology::DeviceRequest::Whole(w) if w.count > 0 => {
            states[i].whole_free(&node.profile, w.multi_pod).len() / w.count
        }
        _ => 1,
    }
}

/// The tightest group of nodes (grouped by `key`) whose room holds `pods`
/// pods, each node counting for at most `per_node_cap` pods. Members come
/// in ascending order.
#[allow(clippy::too_many_arguments)]
pub(super) fn tightest_group(
    cluster: &Cluster,
    states: &[DeviceState],
    job: &Job,
    role: &Role,
    gate: Gate<'_>,
    pods: u32,
    per_node_cap: u32,
    key: impl Fn(usize) -> Option<String>,
) -> Option<(String, Vec<usize>)> {
    let mut groups: BTreeMap<String, (u64, Vec<usize>)> = BTreeMap::new();
    for i in 0..cluster.nodes.len() {
        let Some(k) = key(i) else { continue };
        let room = room_on(cluster, states, job, role, gate, i).min(per_node_cap);
        let entry = groups.entry(k).or_default();
        entry.1.push(i);
        entry.0 += u64::from(room);
    }
    groups
        .into_iter()
        .filter(|(_, (room, _))| *room >= u64::from(pods))
        .min_by(|(an, (ar, _)), (bn, (br, _))| ar.cmp(br).then(an.cmp(bn)))
        .map(|(name, (_, members))| (name, members))
}

/// Picks the SuperPoD for a block of `pods` pods of `role`: the one with the
/// least room that still holds the block (each node counts for one pod, as
/// SuperPoD jobs take whole nodes). `Ok(None)`: no SuperPoD holds it and the
/// job's affinity is soft, so the block may spread.
pub(super) fn choose_super_pod(
    cluster: &Cluster,
    states: &[DeviceState],
    job: &Job,
    role: &Role,
    gate: Gate<'_>,
    pods: u32,
    rule: SuperPodRule,
) -> Result<Option<(String, Vec<usize>)>, String> {
    if role.device.is_none() {
        return Ok(None);
    }
    let key = |i: usize| cluster.nodes[i].network.super_pod.clone();
    match tightest_group(cluster, states, job, role, gate, pods, 1, key) {
        Some((name, members)) => Ok(Some((format!("SuperPoD {name}"), members))),
        None if rule.soft => Ok(None),
        None => Err(format!(
            "super-pod: no SuperPoD has {pods} free nodes for a logical block of sp-block {} (super-pod-affinity: hard)",
            rule.sp_block
        )),
    }
}

/// Picks the HyperNode for one partition of `pods` pods: the tightest that
/// holds it, lowest tier first, up to the partition's `highestTierAllowed`
/// (default 1, a ToR). No constraint: `Ok(None)`; none holds it: an error
/// when hard, `Ok(None)` (spread) when soft.
pub(super) fn choose_hypernode(
    cluster: &Cluster,
    states: &[DeviceState],
    job: &Job,
    role: &Role,
    gate: Gate<'_>,
    pods: u32,
    constraint: Option<ringleader_api::model::NetworkTopologyConstraint>,
) -> Result<Option<(String, Vec<usize>)>, String> {
    let Some(nt) = constraint else { return Ok(None) };
    let highest = nt.highest_tier_allowed.unwrap_or(1).max(1);
    for tier in 1..=highest {
        let key = |i: usize| hypernode_of(cluster, i, tier);
        if let Some((name, members)) = tightest_group(cluster, states, job, role, gate, pods, u32::MAX, key) {
            return Ok(Some((format!("tier-{tier} HyperNode {name}"), members)));
        }
    }
    if nt.hard {
        Err(format!("partition: no HyperNode of tier ≤ {highest} can hold a partition of {pods} pods"))
    } else {
        Ok(None)
    }
}
