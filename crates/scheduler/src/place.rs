//! Gang placement: every pod of a job onto a node and exact devices, or
//! nothing. Tried on a copy of the device state (a statement) and committed
//! only when at least `minAvailable` pods fit.

use crate::cluster::{Cluster, Node};
use crate::explain::Explanation;
use crate::predicates::{labels_match, policy_matches, serves, Filtered};
use ringleader_api::ascend as keys;
use ringleader_api::model::Role;
use ringleader_api::{DeviceKind, Job};
use ringleader_topology::{
    allocate, Allocation, CardStrategy, DeviceRequest as TopoRequest, DeviceState, NoFit, NodeScore, ShareRequest,
    Vendor, VnpuDvpp, VnpuLevel, VnpuRequest, WholeRequest,
};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

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
    }
}

/// The pod annotations for an allocation on a node (`spec/ascend.md`):
/// `huawei.com/Ascend910: Ascend910-0,Ascend910-1` and `predicate-time` for
/// Ascend whole chips; `huawei.com/npu-core: <chip>-<template>` for dynamic
/// vNPU; the visible-device list for GPUs.
pub fn annotations(
    node: &Node,
    alloc: &Allocation,
    req: &ringleader_api::DeviceRequest,
    predicate_time: u64,
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

/// Decides, before anything else, whether a job may use node `i` at all
/// (reservations, VIP node lists). `Err` carries the reason counted in explanations.
pub type Gate<'a> = &'a dyn Fn(usize) -> Result<(), Filtered>;

/// Places one job on `cluster` as a gang. On success the cluster's device
/// state includes the job; on failure it is unchanged and the reason says
/// which constraint failed on how many nodes.
pub fn place_job(cluster: &mut Cluster, job: &Job, predicate_time: u64) -> Result<Vec<PodPlacement>, String> {
    place_job_gated(cluster, job, predicate_time, &|_| Ok(()))
}

/// [`place_job`] on the nodes `gate` lets through.
pub fn place_job_gated(
    cluster: &mut Cluster,
    job: &Job,
    predicate_time: u64,
    gate: Gate<'_>,
) -> Result<Vec<PodPlacement>, String> {
    // The statement: a working copy of every node's state, committed at the end.
    let mut states: Vec<DeviceState> = cluster.nodes.iter().map(|n| n.state.clone()).collect();
    let multi_pod = job.total_replicas() > 1;
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut used_tors: BTreeSet<Option<String>> = BTreeSet::new();
    let mut first_failure: Option<(String, Explanation)> = None;
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
        let mut view = RoleView::new(cluster, &states, job, role, &used, gate);
        for index in 0..role.replicas {
            let pod = format!("{}-{index}", role.pod_prefix);
            let Some(i) = view.choose(&used_tors, multi_pod) else {
                if first_failure.is_none() {
                    first_failure = Some((pod, view.explain(cluster.nodes.len())));
                }
                continue;
            };
            let node = &cluster.nodes[i];
            let rank = base + index as usize;
            let (devices, annotations) = match (view.allocation(i), &view.request) {
                (Some(a), Some((req, topo))) => {
                    let placed_devices = a.ids.clone();
                    let ann = annotations(node, a, req, predicate_time + rank as u64);
                    states[i].apply(&node.profile, topo, a);
                    (placed_devices, ann)
                }
                _ => (Vec::new(), BTreeMap::new()),
            };
            used.insert(i);
            if node.network.tor.is_some() {
                used_tors.insert(node.network.tor.clone());
            }
            view.refresh(cluster, &states, i, &used);
            placed.push((rank, PodPlacement { job: job.key(), pod, node: node.name.clone(), devices, annotations }));
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

/// How one node answers one role's pods.
enum Eval {
    /// Filtered out before devices were looked at.
    Filtered(Filtered),
    /// Devices checked: an allocation, or why none fits.
    Checked(Result<Allocation, NoFit>),
    /// The role asks for no devices and the node passes the filters.
    Open,
}

/// Ordered key of a candidate inside its group: the allocator's score
/// (for GPUs re-ordered so bin-packing across nodes comes before keeping
/// good sets free inside one, a term meant for choices within a node), then
/// cluster order.
type Ranked = (Option<NodeKey>, Reverse<usize>);

/// One role's view of the cluster, kept current as its pods are placed:
/// an evaluation per node (shared across nodes in identical states), and the
/// candidates ordered per ToR so choosing a node is a lookup, not a scan.
struct RoleView<'j> {
    request: Option<(&'j ringleader_api::DeviceRequest, TopoRequest)>,
    spec: Option<&'j k8s_openapi::api::core::v1::PodSpec>,
    job: &'j Job,
    evals: Vec<Eval>,
    /// Candidates per ToR (`None`: nodes without one).
    by_tor: BTreeMap<Option<String>, BTreeSet<Ranked>>,
    /// Candidates among the nodes the job already uses.
    on_used: BTreeSet<Ranked>,
    /// Allocation results of idle-partial states, by (profile, allocated, unhealthy, network-unhealthy).
    memo: HashMap<(usize, u64, u64, u64), Result<Allocation, NoFit>>,
    gate: Gate<'j>,
}

impl<'j> RoleView<'j> {
    fn new(
        cluster: &Cluster,
        states: &[DeviceState],
        job: &'j Job,
        role: &'j Role,
        used: &BTreeSet<usize>,
        gate: Gate<'j>,
    ) -> RoleView<'j> {
        let mut view = RoleView {
            request: role.device.as_ref().map(|d| (d, topology_request(job, d))),
            spec: role.template.spec.as_ref(),
            job,
            evals: Vec::with_capacity(cluster.nodes.len()),
            by_tor: BTreeMap::new(),
            on_used: BTreeSet::new(),
            memo: HashMap::new(),
            gate,
        };
        for (i, node) in cluster.nodes.iter().enumerate() {
            let eval = view.evaluate(i, node, &states[i]);
            view.evals.push(eval);
            if let Some(key) = view.ranked(i) {
                view.by_tor.entry(node.network.tor.clone()).or_default().insert(key);
                if used.contains(&i) {
                    view.on_used.insert(key);
                }
            }
        }
        view
    }

    fn evaluate(&mut self, i: usize, node: &Node, state: &DeviceState) -> Eval {
        if let Err(f) = (self.gate)(i) {
            return Eval::Filtered(f);
        }
        if let Err(f) = labels_match(self.spec, &node.labels) {
            return Eval::Filtered(f);
        }
        let Some((req, topo)) = &self.request else { return Eval::Open };
        if let Err(f) = serves(&node.profile, req).and_then(|_| policy_matches(&node.profile, self.job)) {
            return Eval::Filtered(f);
        }
        if !state.partial.iter().all(|u| u.is_idle()) {
            return Eval::Checked(allocate(&node.profile, state, topo));
        }
        let key =
            (Arc::as_ptr(&node.profile) as usize, state.allocated.0, state.unhealthy.0, state.network_unhealthy.0);
        let result = self.memo.entry(key).or_insert_with(|| allocate(&node.profile, state, topo));
        Eval::Checked(result.clone())
    }

    fn ranked(&self, i: usize) -> Option<Ranked> {
        match &self.evals[i] {
            Eval::Checked(Ok(a)) => Some((Some(node_key(a.score)), Reverse(i))),
            Eval::Open => Some((None, Reverse(i))),
            _ => None,
        }
    }

    fn allocation(&self, i: usize) -> Option<&Allocation> {
        match &self.evals[i] {
            Eval::Checked(Ok(a)) => Some(a),
            _ => None,
        }
    }

    /// Re-evaluates node `i` after its state changed.
    fn refresh(&mut self, cluster: &Cluster, states: &[DeviceState], i: usize, used: &BTreeSet<usize>) {
        let node = &cluster.nodes[i];
        if let Some(old) = self.ranked(i) {
            if let Some(set) = self.by_tor.get_mut(&node.network.tor) {
                set.remove(&old);
            }
            self.on_used.remove(&old);
        }
        self.evals[i] = self.evaluate(i, node, &states[i]);
        if let Some(new) = self.ranked(i) {
            self.by_tor.entry(node.network.tor.clone()).or_default().insert(new);
            if used.contains(&i) {
                self.on_used.insert(new);
            }
        }
    }

    /// The best node for the next pod. Multi-pod jobs stay on as few nodes
    /// and ToRs as possible: a node the job uses, else a ToR it uses, else
    /// the ToR with the most candidates (ties to the better top node), else
    /// nodes without a ToR. Device-less pods join the job's nodes.
    fn choose(&self, used_tors: &BTreeSet<Option<String>>, multi_pod: bool) -> Option<usize> {
        let top = |set: &BTreeSet<Ranked>| set.last().map(|(_, Reverse(i))| *i);
        if multi_pod || self.request.is_none() {
            if let Some(i) = top(&self.on_used) {
                return Some(i);
            }
            let in_used_tor = used_tors.iter().filter_map(|t| self.by_tor.get(t)?.last()).max();
            if let Some((_, Reverse(i))) = in_used_tor {
                return Some(*i);
            }
            let biggest = self
                .by_tor
                .iter()
                .filter(|(t, set)| t.is_some() && !set.is_empty())
                .max_by(|(_, a), (_, b)| a.len().cmp(&b.len()).then(a.last().cmp(&b.last())));
            if let Some((_, set)) = biggest {
                return top(set);
            }
            return self.by_tor.get(&None).and_then(top);
        }
        self.by_tor.values().filter_map(|set| set.last()).max().map(|(_, Reverse(i))| *i)
    }

    /// Why no node takes the next pod, counted over nodes.
    fn explain(&self, nodes: usize) -> Explanation {
        let mut why = Explanation::new(nodes);
        for eval in &self.evals {
            match eval {
                Eval::Filtered(f) => why.reject(f),
                Eval::Checked(Err(no_fit)) => why.reject(no_fit),
                _ => {}
            }
        }
        why
    }
}

fn node_key(score: NodeScore) -> NodeKey {
    match score {
        NodeScore::Gpu(g) => NodeKey::Gpu(g.bottleneck_mbps, g.total_mbps, Reverse(g.free_after), g.keep_free_mbps),
        other => NodeKey::Other(other),
    }
}

/// Cross-node order of allocator scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
