//! One role's view of the cluster while its pods are placed: an evaluation
//! per node (shared across nodes in identical states) and the candidates
//! ordered per ToR, so choosing a node is a lookup, not a scan.

use super::{topology_request, Gate};
use crate::cluster::{Cluster, Node};
use crate::explain::Explanation;
use crate::predicates::{node_admits, policy_matches, serves, welcome, Filtered};
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
    /// Devices checked: an index into the view's allocation results.
    Checked(usize),
    /// The role asks for no devices and the node passes the filters.
    Open,
}

/// Ordered key of a candidate inside its group: the allocator's score
/// (for GPUs re-ordered so bin-packing across nodes comes before keeping
/// good sets free inside one, a term meant for choices within a node), then
/// cluster order.
type Ranked = (Option<NodeKey>, Reverse<usize>);

/// One role's view of the cluster, kept current as its pods are placed:
/// an evaluation per node (allocation results shared across nodes in
/// identical states), and — for multi-pod jobs — the candidates ordered per
/// ToR, so choosing a node is a lookup, not a scan.
pub(super) struct RoleView<'c, 'j> {
    pub(super) request: Option<(&'j ringleader_api::DeviceRequest, TopoRequest)>,
    cluster: &'c Cluster,
    spec: Option<&'j k8s_openapi::api::core::v1::PodSpec>,
    job: &'j Job,
    evals: Vec<Eval>,
    /// Allocation results, referenced by [`Eval::Checked`].
    results: Vec<Result<Allocation, NoFit>>,
    /// Result index of idle-partial states, by (profile, allocated, unhealthy, network-unhealthy).
    memo: HashMap<(usize, u64, u64, u64), usize>,
    /// Whether candidates are kept per ToR (multi-pod and device-less roles).
    grouped: bool,
    /// Candidates per ToR (`None`: nodes without one).
    by_tor: BTreeMap<Option<&'c str>, BTreeSet<Ranked>>,
    /// Candidates among the nodes the job already uses.
    on_used: BTreeSet<Ranked>,
    /// The best candidate, for single-pod jobs (no groups kept).
    best: Option<Ranked>,
    gate: Gate<'j>,
}

impl<'c, 'j> RoleView<'c, 'j> {
    pub(super) fn new(
        cluster: &'c Cluster,
        states: &[DeviceState],
        job: &'j Job,
        role: &'j Role,
        used: &BTreeSet<usize>,
        gate: Gate<'j>,
        multi_pod: bool,
    ) -> RoleView<'c, 'j> {
        let mut view = RoleView {
            request: role.device.as_ref().map(|d| (d, topology_request(job, d))),
            cluster,
            spec: role.template.spec.as_ref(),
            job,
            evals: Vec::with_capacity(cluster.nodes.len()),
            results: Vec::new(),
            memo: HashMap::new(),
            grouped: multi_pod || role.device.is_none(),
            by_tor: BTreeMap::new(),
            on_used: BTreeSet::new(),
            best: None,
            gate,
        };
        for (i, state) in states.iter().enumerate().take(cluster.nodes.len()) {
            let eval = view.evaluate(i, state);
            view.evals.push(eval);
            view.insert(i, used);
        }
        view
    }

    fn evaluate(&mut self, i: usize, state: &DeviceState) -> Eval {
        let node: &Node = &self.cluster.nodes[i];
        if let Err(f) = (self.gate)(i) {
            return Eval::Filtered(f);
        }
        if let Err(f) = node_admits(self.spec, node) {
            return Eval::Filtered(f);
        }
        let Some((req, topo)) = &self.request else { return Eval::Open };
        if let Err(f) = serves(node, req).and_then(|_| policy_matches(&node.profile, self.job)) {
            return Eval::Filtered(f);
        }
        if !state.partial.iter().all(|u| u.is_idle()) {
            self.results.push(allocate(&node.profile, state, topo));
            return Eval::Checked(self.results.len() - 1);
        }
        let key =
            (Arc::as_ptr(&node.profile) as usize, state.allocated.0, state.unhealthy.0, state.network_unhealthy.0);
        if let Some(&r) = self.memo.get(&key) {
            return Eval::Checked(r);
        }
        self.results.push(allocate(&node.profile, state, topo));
        self.memo.insert(key, self.results.len() - 1);
        Eval::Checked(self.results.len() - 1)
    }

    fn ranked(&self, i: usize) -> Option<Ranked> {
        match &self.evals[i] {
            Eval::Checked(r) => {
                let welcome = welcome(self.spec, &self.cluster.nodes[i]);
                self.results[*r].as_ref().ok().map(|a| (Some(node_key(a.score, welcome)), Reverse(i)))
            }
            Eval::Open => Some((None, Reverse(i))),
            Eval::Filtered(_) => None,
        }
    }

    fn tor(&self, i: usize) -> Option<&'c str> {
        self.cluster.nodes[i].network.tor.as_deref()
    }

    fn insert(&mut self, i: usize, used: &BTreeSet<usize>) {
        let Some(key) = self.ranked(i) else { return };
        if !self.grouped {
            self.best = self.best.max(Some(key));
            return;
        }
        self.by_tor.entry(self.tor(i)).or_default().insert(key);
        if used.contains(&i) {
            self.on_used.insert(key);
        }
    }

    pub(super) fn allocation(&self, i: usize) -> Option<&Allocation> {
        match &self.evals[i] {
            Eval::Checked(r) => self.results[*r].as_ref().ok(),
            _ => None,
        }
    }

    /// Re-evaluates node `i` after its state changed.
    pub(super) fn refresh(&mut self, states: &[DeviceState], i: usize, used: &BTreeSet<usize>) {
        if let Some(old) = self.ranked(i) {
            if let Some(set) = self.by_tor.get_mut(&self.tor(i)) {
                set.remove(&old);
            }
            self.on_used.remove(&old);
        }
        self.evals[i] = self.evaluate(i, &states[i]);
        if self.grouped {
            self.insert(i, used);
        } else {
            // A single-pod job places once; keep `best` right all the same.
            self.best = (0..self.evals.len()).filter_map(|j| self.ranked(j)).max();
        }
    }

    /// The best node for the next pod. Multi-pod jobs stay on as few nodes
    /// and ToRs as possible: a node the job uses, else a ToR it uses, else
    /// the ToR with the most candidates (ties to the better top node), else
    /// nodes without a ToR. Device-less pods join the job's nodes.
    pub(super) fn choose(&self, used_tors: &BTreeSet<Option<String>>, order: TorOrder) -> Option<usize> {
        let top = |set: &BTreeSet<Ranked>| set.last().map(|(_, Reverse(i))| *i);
        if !self.grouped {
            return self.best.map(|(_, Reverse(i))| i);
        }
        if let Some(i) = top(&self.on_used) {
            return Some(i);
        }
        let in_used_tor = used_tors.iter().filter_map(|t| self.by_tor.get(&t.as_deref())?.last()).max();
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
        self.by_tor.get(&None).and_then(top)
    }

    /// Why no node takes the next pod, counted over nodes.
    pub(super) fn explain(&self) -> Explanation {
        let mut why = Explanation::new(self.cluster.nodes.len());
        for eval in &self.evals {
            match eval {
                Eval::Filtered(f) => why.reject(f),
                Eval::Checked(r) => {
                    if let Err(no_fit) = &self.results[*r] {
                        why.reject(no_fit)
                    }
                }
                Eval::Open => {}
            }
        }
        why
    }
}

pub(super) fn node_key(score: NodeScore, welcome: bool) -> NodeKey {
    let fit = match score {
        NodeScore::Gpu(g) => FitKey::Gpu(g.bottleneck_mbps, g.total_mbps, Reverse(g.free_after), g.keep_free_mbps),
        other => FitKey::Other(other),
    };
    (welcome, fit)
}

/// Cross-node order: a node with no `PreferNoSchedule` taint the pod does
/// not tolerate first (see [`crate::predicates::welcome`]), then the
/// allocator's score.
pub(super) type NodeKey = (bool, FitKey);

/// Cross-node order of allocator scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum FitKey {
    Gpu(u32, u64, Reverse<u32>, u64),
    Other(NodeScore),
}
