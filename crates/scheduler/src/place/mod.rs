//! Gang placement: every pod of a job onto a node and exact devices, or
//! nothing. Tried on a copy of the device state (a statement) and committed
//! only when at least `minAvailable` pods fit.

pub mod handshake;
pub(crate) mod index;
pub mod network;
mod view;
pub mod vnpu;

use crate::cluster::{Cluster, Node};
use crate::predicates::Filtered;
use ringleader_api::ascend as keys;
use ringleader_api::model::Role;
use ringleader_api::{DeviceKind, Job};
use ringleader_topology::{
    Allocation, CardStrategy, DeviceRequest as TopoRequest, DeviceState, MemRequest, ShareRequest, Vendor, VnpuDvpp,
    VnpuLevel, VnpuRequest, WholeRequest,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use view::RoleView;
pub use view::TorOrder;

/// Pod annotation: when the scheduler chose the devices (comparable, not human time).
pub const PREDICATE_TIME: &str = "predicate-time";
/// Pod annotation on GPU pods: the allocated GPU IDs, as `CUDA_VISIBLE_DEVICES` takes them.
pub const VISIBLE_DEVICES: &str = "ringleader.io/visible-devices";
/// Pod annotation on shared-GPU pods: thousandths of the GPU.
pub const GPU_MILLI: &str = "ringleader.io/gpu-milli";
/// Job annotation the manager sets on the part of a gang still to place:
/// how many device pods the whole gang has. A pod replaced alone
/// (`huawei.com/recover_policy_path: pod`) is one pod of a distributed job,
/// so it must not get a chip whose network is down — counted from the part
/// alone it would, and land straight back on the faulty node.
pub const GANG_DEVICE_PODS: &str = "ringleader.io/gang-device-pods";

/// One pod bound to a node and devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodPlacement {
    /// `namespace/name` of the job.
    pub job: String,
    /// Pod name.
    pub pod: String,
    /// Node name.
    pub node: String,
    /// Physical device IDs.
    pub devices: Vec<u32>,
    /// Pod annotations the runtime reads (formats of `spec/ascend.md`).
    pub annotations: BTreeMap<String, String>,
}

/// A job that could not be placed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// `namespace/name` of the job.
    pub job: String,
    /// Explanation.
    pub reason: String,
}

/// Maps the job model's request to the allocator's, reading the job's labels
/// for multi-pod, `npu-310-strategy`, `vnpu-dvpp` and `vnpu-level`.
pub fn topology_request(job: &Job, req: &ringleader_api::DeviceRequest) -> TopoRequest {
    let label = |k: &str| job.labels.get(k).map(String::as_str);
    let part: u32 = job.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
    let gang = job.annotations.get(GANG_DEVICE_PODS).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
    let device_pods = part.max(gang);
    match &req.kind {
        DeviceKind::Whole => TopoRequest::Whole(WholeRequest {
            count: req.count,
            multi_pod: device_pods > 1,
            card_strategy: if label(keys::NPU_310_STRATEGY) == Some("card") {
                CardStrategy::Card
            } else {
                CardStrategy::Chip
            },
        }),
        DeviceKind::StaticVnpu { template } => TopoRequest::Vnpu(VnpuRequest::Static { template: template.clone() }),
        DeviceKind::DynamicVnpu => TopoRequest::Vnpu(VnpuRequest::Dynamic {
            cores: req.count,
            dvpp: match label(keys::VNPU_DVPP) {
                Some("yes") => VnpuDvpp::Yes,
                Some("no") => VnpuDvpp::No,
                _ => VnpuDvpp::Null,
            },
            level: if label(keys::VNPU_LEVEL) == Some("high") { VnpuLevel::High } else { VnpuLevel::Low },
        }),
        DeviceKind::GpuShare { milli } => TopoRequest::Share(ShareRequest { milli: *milli }),
        DeviceKind::GpuMem { mib, cores, .. } => {
            TopoRequest::Memory(MemRequest { gpus: req.count, mib: *mib, milli: cores.saturating_mul(10) })
        }
    }
}

/// The pod annotations for an allocation on a node (`spec/ascend.md`):
/// `huawei.com/Ascend910: Ascend910-0,Ascend910-1` and `predicate-time` for
/// Ascend whole chips, with the device plugin's handshake fields of
/// [`handshake`]; `huawei.com/npu-core: <chip>-<template>` for dynamic
/// vNPU; `huawei.com/Ascend310P-2c: Ascend310P-2c-<vNPU ID>-<chip>` for a
/// static vNPU ([`vnpu::static_name`]); the visible-device list for GPUs, with ACK's or HAMi's fields for
/// GPU memory. `rank` is the pod's rank in its job.
pub fn annotations(
    node: &Node,
    alloc: &Allocation,
    req: &ringleader_api::DeviceRequest,
    predicate_time: u64,
    rank: u64,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let ids = || alloc.ids.iter().map(u32::to_string).collect::<Vec<_>>();
    match node.profile.vendor {
        Vendor::Huawei => {
            let short = node.profile.resource_name.trim_start_matches("huawei.com/");
            match (&req.kind, &alloc.vnpu) {
                (DeviceKind::DynamicVnpu, Some(v)) => {
                    let chip = node.profile.devices.get(v.chip).map(|d| d.id).unwrap_or_default();
                    out.insert(keys::NPU_CORE.to_string(), format!("{chip}-{}", v.template));
                }
                (DeviceKind::StaticVnpu { .. }, Some(v)) => {
                    let chip = node.profile.devices.get(v.chip).map(|d| d.id).unwrap_or_default();
                    out.insert(req.resource.clone(), vnpu::static_name(&req.resource, chip, v.slot));
                }
                (DeviceKind::StaticVnpu { .. }, None) => {}
                _ => {
                    let chips = alloc.ids.iter().map(|id| format!("{short}-{id}")).collect::<Vec<_>>().join(",");
                    handshake::ascend(node, alloc, &chips, rank, &mut out);
                    out.insert(node.profile.resource_name.clone(), chips);
                }
            }
            out.insert(PREDICATE_TIME.to_string(), predicate_time.to_string());
        }
        Vendor::Nvidia => {
            out.insert(VISIBLE_DEVICES.to_string(), ids().join(","));
            match req.kind {
                DeviceKind::GpuShare { milli } => {
                    out.insert(GPU_MILLI.to_string(), milli.to_string());
                }
                DeviceKind::GpuMem { plugin, mib, cores } => {
                    handshake::gpu_memory(node, alloc, plugin, mib, cores, predicate_time, &mut out)
                }
                _ => {}
            }
        }
    }
    out
}

/// Decides, before anything else, whether a job may use node `i` at all
/// (reservations, VIP node lists). `Err` carries the reason counted in explanations.
pub type Gate<'a> = &'a dyn Fn(usize) -> Result<(), Filtered>;

/// Places one job on `cluster` as a gang. On success the cluster's device
/// state includes the job; on failure it is unchanged and the reason says
/// which constraint failed on how many nodes.
pub fn place_job(cluster: &mut Cluster, job: &Job, predicate_time: u64) -> Result<Vec<PodPlacement>, String> {
    place_job_gated(cluster, job, predicate_time, &|_| Ok(()))
}

/// [`place_job`] on the nodes `gate` lets through, following the job's
/// network-topology constraints (see [`network`]).
pub fn place_job_gated(
    cluster: &mut Cluster,
    job: &Job,
    predicate_time: u64,
    gate: Gate<'_>,
) -> Result<Vec<PodPlacement>, String> {
    network::place(cluster, job, predicate_time, gate)
}

/// How a gang is laid out beyond per-pod node choice.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GangOptions {
    /// Where a multi-pod job goes when its ToRs are full.
    pub tor_order: TorOrder,
    /// Logical SuperPoD blocks, in pods, each kept inside one SuperPoD.
    pub super_pod: Option<network::SuperPodRule>,
}

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
            let end = (start + block).min(role.replicas);
            let first_pod = format!("{}-{start}", role.pod_prefix);
            let pinned: Result<Option<(String, Vec<usize>)>, String> =
                match (&role.partitions, opts.super_pod, &role.device) {
                    (Some(p), _, _) => {
                        network::choose_hypernode(cl, &states, job, role, gate, end - start, p.network_topology)
                    }
                    (None, Some(rule), Some(_)) => {
                        network::choose_super_pod(cl, &states, job, role, gate, end - start, rule)
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

/// Places jobs in order, each on the state the previous ones left. The
/// result is that of [`place_job`] on each job in turn; plain jobs get there
/// through node groups kept across the jobs, as a 10,000-node cluster
/// otherwise costs every job a pass over every node.
pub fn plan(cluster: &mut Cluster, jobs: &[Job], now: u64) -> (Vec<PodPlacement>, Vec<Pending>) {
    let mut placements = Vec::new();
    let mut pending = Vec::new();
    let mut time = now;
    let mut index = index::Index::build(cluster);
    let unbarred = index::Barred::new();
    for job in jobs {
        let result = match index.place(cluster, job, time, &unbarred) {
            index::Tried::Placed(p) => Ok(p),
            index::Tried::Pending(reason) => Err(reason),
            index::Tried::Unsupported => {
                let result = place_job(cluster, job, time);
                // A job that does not fit leaves the cluster as it was, and
                // a resync walks every node.
                if result.is_ok() {
                    index.resync(cluster);
                }
                result
            }
        };
        match result {
            Ok(p) => {
                time += p.len() as u64;
                placements.extend(p);
            }
            Err(reason) => pending.push(Pending { job: job.key(), reason }),
        }
    }
    (placements, pending)
}
