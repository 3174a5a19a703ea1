//! One role's view of the cluster while its pods are placed: an evaluation
//! per node (shared across nodes in identical states) and the candidates
//! ordered per ToR, so choosing a node is a lookup, not a scan.

use super::{topology_request, Gate};
use crate::cluster::{Cluster, Node};
use crate::explain::Explanation;
use crate::predicates::{labels_match, policy_matches, serves, Filtered};
use ringleader_api::model::Role;
use ringleader_api::Job;
use ringleader_topology::{allocate, Allocation, DeviceRequest as TopoRequest, DeviceState, NoFit, NodeScore};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Which ToR a multi-pod job moves into when the ToRs it uses are full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TorOrder {
    /// The ToR with the most candidates: fewest ToRs for the whole job
    /// (default, and `tor-affinity: large-model-schema`).
    #[default]
    MostCandidates,
    /// The ToR with the fewest candidates: fill leftover space
    /// (`tor-affinity` filler jobs).
    FewestCandidates,
}

/// How one node answers one role's pods.
pub(super) enum Eval {
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
pub(super) struct RoleView<'j> {
    pub(super) request: Option<(&'j ringleader_api::DeviceRequest, TopoRequest)>,
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
    pub(super) fn new(
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

    pub(super) fn allocation(&self, i: usize) -> Option<&Allocation> {
        match &self.evals[i] {
            Eval::Checked(Ok(a)) => Some(a),
            _ => None,
        }
    }

    /// Re-evaluates node `i` after its state changed.
    pub(super) fn refresh(&mut self, cluster: &Cluster, states: &[DeviceState], i: usize, used: &BTreeSet<usize>) {
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
    pub(super) fn choose(
        &self,
        used_tors: &BTreeSet<Option<String>>,
        multi_pod: bool,
        order: TorOrder,
    ) -> Option<usize> {
        let top = |set: &BTreeSet<Ranked>| set.last().map(|(_, Reverse(i))| *i);
        if multi_pod || self.request.is_none() {
            if let Some(i) = top(&self.on_used) {
                return Some(i);
            }
            let in_used_tor = used_tors.iter().filter_map(|t| self.by_tor.get(t)?.last()).max();
            if let Some((_, Reverse(i))) = in_used_tor {
                return Some(*i);
            }
            let sized = self.by_tor.iter().filter(|(t, set)| t.is_some() && !set.is_empty());
            let biggest = match order {
                TorOrder::MostCandidates => {
                    sized.max_by(|(_, a), (_, b)| a.len().cmp(&b.len()).then(a.last().cmp(&b.last())))
                }
                TorOrder::FewestCandidates => {
                    sized.max_by(|(_, a), (_, b)| b.len().cmp(&a.len()).then(a.last().cmp(&b.last())))
                }
            };
            if let Some((_, set)) = biggest {
                return top(set);
            }
            return self.by_tor.get(&None).and_then(top);
        }
        self.by_tor.values().filter_map(|set| set.last()).max().map(|(_, Reverse(i))| *i)
    }

    /// Why no node takes the next pod, counted over nodes.
    pub(super) fn explain(&self, nodes: usize) -> Explanation {
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
