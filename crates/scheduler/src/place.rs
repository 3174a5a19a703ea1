//! Gang placement: every pod of a job onto a node and exact devices, or
//! nothing. Tried on a copy of the device state (a statement) and committed
//! only when at least `minAvailable` pods fit.

use crate::cluster::{Cluster, Node};
use crate::explain::Explanation;
use crate::predicates::{labels_match, policy_matches, serves};
use ringleader_api::ascend as keys;
use ringleader_api::{DeviceKind, Job};
use ringleader_topology::alloc::vnpu;
use ringleader_topology::{
    allocate, Allocation, CardStrategy, DeviceRequest as TopoRequest, DeviceState, DeviceUse, NodeScore, Profile,
    ShareRequest, Vendor, VnpuDvpp, VnpuLevel, VnpuRequest, WholeRequest,
};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// Pod annotation: when the scheduler chose the devices (comparable, not human time).
pub const PREDICATE_TIME: &str = "predicate-time";
/// Pod annotation on GPU pods: the allocated GPU IDs, as `CUDA_VISIBLE_DEVICES` takes them.
pub const VISIBLE_DEVICES: &str = "ringleader.io/visible-devices";
/// Pod annotation on shared-GPU pods: thousandths of the GPU.
pub const GPU_MILLI: &str = "ringleader.io/gpu-milli";

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
    let device_pods: u32 = job.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
    match &req.kind {
        DeviceKind::Whole => TopoRequest::Whole(WholeRequest {
            count: req.count,
            multi_pod: device_pods > 1,
            card_strategy: if label(keys::NPU_310_STRATEGY) == Some("card") { CardStrategy::Card } else { CardStrategy::Chip },
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
    }
}

/// The pod annotations for an allocation on a node (`spec/ascend.md`):
/// `huawei.com/Ascend910: Ascend910-0,Ascend910-1` and `predicate-time` for
/// Ascend whole chips; `huawei.com/npu-core: <chip>-<template>` for dynamic
/// vNPU; the visible-device list for GPUs.
pub fn annotations(node: &Node, alloc: &Allocation, req: &ringleader_api::DeviceRequest, predicate_time: u64) -> BTreeMap<String, String> {
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
                (DeviceKind::StaticVnpu { .. }, _) => {}
                _ => {
                    let chips: Vec<String> = alloc.ids.iter().map(|id| format!("{short}-{id}")).collect();
                    out.insert(node.profile.resource_name.clone(), chips.join(","));
                }
            }
            out.insert(PREDICATE_TIME.to_string(), predicate_time.to_string());
        }
        Vendor::Nvidia => {
            out.insert(VISIBLE_DEVICES.to_string(), ids().join(","));
            if let DeviceKind::GpuShare { milli } = req.kind {
                out.insert(GPU_MILLI.to_string(), milli.to_string());
            }
        }
    }
    out
}

/// Places one job on `cluster` as a gang. On success the cluster's device
/// state includes the job; on failure it is unchanged and the reason says
/// which constraint failed on how many nodes.
pub fn place_job(cluster: &mut Cluster, job: &Job, predicate_time: u64) -> Result<Vec<PodPlacement>, String> {
    // The statement: a working copy of every node's state, committed at the end.
    let mut states: Vec<DeviceState> = cluster.nodes.iter().map(|n| n.state.clone()).collect();
    let mut first_failure: Option<(String, Explanation)> = None;
    let mut used_nodes: BTreeSet<usize> = BTreeSet::new();
    let multi_pod = job.total_replicas() > 1;
    // Pods with devices first, so device-less pods (launchers, controllers)
    // can then join the nodes the job already uses; results keep rank order.
    let mut pods: Vec<(usize, &ringleader_api::model::Role, u32)> = Vec::new();
    for role in &job.roles {
        for index in 0..role.replicas {
            pods.push((pods.len(), role, index));
        }
    }
    pods.sort_by_key(|(rank, role, _)| (role.device.is_none(), *rank));
    let mut placed_ranked: Vec<(usize, PodPlacement)> = Vec::new();
    for (rank, role, index) in pods {
        let spec = role.template.spec.as_ref();
        let request = role.device.as_ref().map(|d| (d, topology_request(job, d)));
        let pod = format!("{}-{index}", role.pod_prefix);
        let mut why = Explanation::new(cluster.nodes.len());
        let mut candidates: Vec<(usize, Option<Allocation>)> = Vec::new();
        for (i, node) in cluster.nodes.iter().enumerate() {
            if let Err(f) = labels_match(spec, &node.labels) {
                why.reject(f);
                continue;
            }
            let Some((req, topo)) = &request else {
                candidates.push((i, None));
                continue;
            };
            if let Err(f) = serves(&node.profile, req).and_then(|_| policy_matches(&node.profile, job)) {
                why.reject(f);
                continue;
            }
            match allocate(&node.profile, &states[i], topo) {
                Ok(a) => candidates.push((i, Some(a))),
                Err(no_fit) => why.reject(no_fit),
            }
        }
        let Some((i, alloc)) = choose(cluster, &candidates, &used_nodes, multi_pod) else {
            if first_failure.is_none() {
                first_failure = Some((pod, why));
            }
            continue;
        };
        let node = &cluster.nodes[i];
        let (devices, annotations) = match (&alloc, &request) {
            (Some(a), Some((req, topo))) => {
                commit(&node.profile, &mut states[i], a, topo);
                (a.ids.clone(), annotations(node, a, req, predicate_time + rank as u64))
            }
            _ => (Vec::new(), BTreeMap::new()),
        };
        used_nodes.insert(i);
        placed_ranked.push((rank, PodPlacement { job: job.key(), pod, node: node.name.clone(), devices, annotations }));
    }
    placed_ranked.sort_by_key(|(rank, _)| *rank);
    let placed: Vec<PodPlacement> = placed_ranked.into_iter().map(|(_, p)| p).collect();
    let needed = job.scheduling.min_available.min(job.total_replicas());
    if (placed.len() as u32) < needed {
        let detail = first_failure.map(|(pod, why)| format!("; pod {pod}: {why}")).unwrap_or_default();
        return Err(format!("gang: only {} of minAvailable {needed} pods fit{detail}", placed.len()));
    }
    for (node, state) in cluster.nodes.iter_mut().zip(states) {
        node.state = state;
    }
    Ok(placed)
}

/// Records an allocation in a node's state: whole devices become
/// allocated; a vNPU or a GPU share adds to its device's partial use.
fn commit(profile: &Profile, state: &mut DeviceState, alloc: &Allocation, req: &TopoRequest) {
    let grow = |state: &mut DeviceState, i: usize| {
        if state.partial.len() <= i {
            state.partial.resize(i + 1, DeviceUse::default());
        }
    };
    match (req, &alloc.vnpu) {
        (TopoRequest::Vnpu(_), Some(v)) => {
            let template = profile.vnpu.as_ref().and_then(|spec| Some((spec, spec.template(&v.template)?)));
            if let Some((spec, t)) = template {
                grow(state, v.chip);
                state.partial[v.chip] = vnpu::add(spec, &state.partial[v.chip], t);
            }
        }
        (TopoRequest::Share(s), _) => {
            for i in alloc.devices.iter() {
                grow(state, i);
                state.partial[i].gpu_milli += s.milli;
            }
        }
        _ => state.allocated = state.allocated.or(alloc.devices),
    }
}

/// Picks the best candidate node. Multi-pod jobs stay on as few nodes and
/// ToRs as possible: first a node, then a ToR the job already uses, then the
/// ToR where most of the candidates are. Then the allocator's node score —
/// for GPUs re-ordered so bin-packing across nodes comes before keeping good
/// sets free inside one (that last term compares choices within a node).
/// Then cluster order.
fn choose(
    cluster: &Cluster,
    candidates: &[(usize, Option<Allocation>)],
    used: &BTreeSet<usize>,
    multi_pod: bool,
) -> Option<(usize, Option<Allocation>)> {
    let tor = |i: usize| cluster.nodes[i].network.tor.as_deref();
    let used_tors: BTreeSet<&str> = used.iter().filter_map(|&i| tor(i)).collect();
    let mut per_tor: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, _) in candidates {
        if let Some(t) = tor(*i) {
            *per_tor.entry(t).or_default() += 1;
        }
    }
    candidates
        .iter()
        .max_by_key(|(i, alloc)| {
            let (same_node, same_tor, tor_size) = match (multi_pod, tor(*i)) {
                (true, Some(t)) => (used.contains(i), used_tors.contains(t), per_tor.get(t).copied().unwrap_or(0)),
                (true, None) => (used.contains(i), false, 0),
                (false, _) => (false, false, 0),
            };
            // Device-less pods (launchers, controllers) go next to the job's other pods.
            let with_job = alloc.is_none() && used.contains(i);
            let score = alloc.as_ref().map(|a| match a.score {
                NodeScore::Gpu(g) => NodeKey::Gpu(g.bottleneck_mbps, g.total_mbps, Reverse(g.free_after), g.keep_free_mbps),
                other => NodeKey::Other(other),
            });
            (same_node, same_tor, tor_size, with_job, score, Reverse(*i))
        })
        .cloned()
}

/// Cross-node order of allocator scores.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum NodeKey {
    Gpu(u32, u64, Reverse<u32>, u64),
    Other(NodeScore),
}

/// Places jobs in order, each on the state the previous ones left.
pub fn plan(cluster: &mut Cluster, jobs: &[Job], now: u64) -> (Vec<PodPlacement>, Vec<Pending>) {
    let mut placements = Vec::new();
    let mut pending = Vec::new();
    let mut time = now;
    for job in jobs {
        match place_job(cluster, job, time) {
            Ok(p) => {
                time += p.len() as u64;
                placements.extend(p);
            }
            Err(reason) => pending.push(Pending { job: job.key(), reason }),
        }
    }
    (placements, pending)
}
