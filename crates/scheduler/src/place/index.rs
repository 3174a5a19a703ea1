//! Node groups kept across the jobs of one [`plan`](super::plan) or one
//! session: nodes of the same profile, labels, taints and device state answer every
//! filter and the allocator alike, so a job looks at each group once instead
//! of at every node. Only plain jobs take this path (one role with devices,
//! no network-topology, `tor-affinity` or SuperPoD rule; nodes barred by the
//! session's reservations are skipped member by member). Everything else goes
//! through [`place_gang`](super::place_gang), which stays the reference the
//! groups must agree with, pending reasons included.

use super::view::{node_key, NodeKey};
use super::{annotations, topology_request, PodPlacement};
use crate::cluster::Cluster;
use crate::explain::Explanation;
use crate::predicates::{node_admits, policy_matches, serves, welcome, Filtered};
use ringleader_api::ascend as keys;
use ringleader_api::Job;
use ringleader_topology::{allocate, Allocation, DeviceState, NoFit, Profile};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// What the groups made of one job.
pub(crate) enum Tried {
    /// Placed and committed into the cluster.
    Placed(Vec<PodPlacement>),
    /// Does not fit; the cluster is unchanged and the reason is word for
    /// word the one the per-node path gives.
    Pending(String),
    /// Not a job the groups place; the cluster is unchanged and the per-node path decides.
    Unsupported,
}

/// Nodes a job may not use (the session's reservations), each with the
/// reason it counts under in explanations.
pub(crate) type Barred = BTreeMap<usize, String>;

/// A set of nodes in one device state: every node of one profile and labels.
struct Class {
    /// Index into [`Index::kinds`].
    kind: usize,
    state: DeviceState,
    /// Nodes in this state, ascending, so the first is the tie-break winner.
    members: BTreeSet<usize>,
}

/// The device-state classes of a cluster and where their nodes sit.
pub(crate) struct Index {
    /// A node of each (profile, labels) pair; they read the same to filters.
    kinds: Vec<usize>,
    kind_of: Vec<usize>,
    /// ToR slot per node; [`Index::tor_names`] holds `None` for nodes without one.
    tor_of: Vec<usize>,
    tor_names: Vec<Option<String>>,
    classes: Vec<Class>,
    class_ids: HashMap<(usize, DeviceState), usize>,
    class_of: Vec<usize>,
    /// Per ToR slot: the nodes of each class in it.
    by_tor: Vec<BTreeMap<usize, BTreeSet<usize>>>,
}

/// One pod's choice: the allocator's cross-node key, then cluster order.
type Ranked = (NodeKey, Reverse<usize>);

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("nodes", &self.class_of.len()).field("classes", &self.classes.len()).finish()
    }
}

impl Index {
    pub(crate) fn build(cluster: &Cluster) -> Index {
        let mut index = Index {
            kinds: Vec::new(),
            kind_of: Vec::with_capacity(cluster.nodes.len()),
            tor_of: Vec::with_capacity(cluster.nodes.len()),
            tor_names: Vec::new(),
            classes: Vec::new(),
            class_ids: HashMap::new(),
            class_of: Vec::with_capacity(cluster.nodes.len()),
            by_tor: Vec::new(),
        };
        // Taints filter as labels do; most nodes have none, whose key costs nothing.
        let mut kind_ids: HashMap<(*const Profile, &BTreeMap<String, String>, String), usize> = HashMap::new();
        let mut tor_ids: HashMap<Option<&str>, usize> = HashMap::new();
        for (i, node) in cluster.nodes.iter().enumerate() {
            let taints = if node.taints.is_empty() { String::new() } else { format!("{:?}", node.taints) };
            let kind = *kind_ids.entry((Arc::as_ptr(&node.profile), &node.labels, taints)).or_insert_with(|| {
                index.kinds.push(i);
                index.kinds.len() - 1
            });
            let tor = *tor_ids.entry(node.network.tor.as_deref()).or_insert_with(|| {
                index.tor_names.push(node.network.tor.clone());
                index.by_tor.push(BTreeMap::new());
                index.tor_names.len() - 1
            });
            index.kind_of.push(kind);
            index.tor_of.push(tor);
            let class = index.class(kind, &node.state);
            index.class_of.push(class);
            index.join(i, class);
        }
        index
    }

    fn class(&mut self, kind: usize, state: &DeviceState) -> usize {
        if let Some(&c) = self.class_ids.get(&(kind, state.clone())) {
            return c;
        }
        self.classes.push(Class { kind, state: state.clone(), members: BTreeSet::new() });
        self.class_ids.insert((kind, state.clone()), self.classes.len() - 1);
        self.classes.len() - 1
    }

    fn join(&mut self, i: usize, class: usize) {
        self.class_of[i] = class;
        self.classes[class].members.insert(i);
        self.by_tor[self.tor_of[i]].entry(class).or_default().insert(i);
    }

    fn leave(&mut self, i: usize) {
        let class = self.class_of[i];
        self.classes[class].members.remove(&i);
        let tor = &mut self.by_tor[self.tor_of[i]];
        if let Some(set) = tor.get_mut(&class) {
            set.remove(&i);
            if set.is_empty() {
                tor.remove(&class);
            }
        }
    }

    /// Moves node `i` to the class of its new state.
    fn set_state(&mut self, i: usize, state: &DeviceState) {
        if self.classes[self.class_of[i]].state == *state {
            return;
        }
        self.leave(i);
        let class = self.class(self.kind_of[i], state);
        self.join(i, class);
    }

    /// Whether every node sits in the class of its state, and nowhere else.
    pub(crate) fn agrees(&self, cluster: &Cluster) -> bool {
        let members: usize = self.classes.iter().map(|c| c.members.len()).sum();
        let in_tors: usize = self.by_tor.iter().flat_map(|t| t.values()).map(BTreeSet::len).sum();
        members == cluster.nodes.len()
            && in_tors == cluster.nodes.len()
            && self.class_of.len() == cluster.nodes.len()
            && cluster.nodes.iter().enumerate().all(|(i, node)| {
                let c = self.class_of[i];
                self.classes[c].state == node.state
                    && self.classes[c].members.contains(&i)
                    && self.by_tor[self.tor_of[i]].get(&c).is_some_and(|m| m.contains(&i))
            })
    }

    /// Catches up with states changed outside the index (jobs placed by
    /// the reference path).
    pub(crate) fn resync(&mut self, cluster: &Cluster) {
        for (i, node) in cluster.nodes.iter().enumerate() {
            self.set_state(i, &node.state);
        }
    }

    /// Places a plain job (see the module docs) on the nodes `barred` leaves
    /// it and commits it into `cluster`.
    pub(crate) fn place(&mut self, cluster: &mut Cluster, job: &Job, t: u64, barred: &Barred) -> Tried {
        let [role] = job.roles.as_slice() else { return Tried::Unsupported };
        let Some(req) = role.device.as_ref() else { return Tried::Unsupported };
        if role.partitions.is_some()
            || job.topology.network_topology.is_some()
            || job.labels.contains_key(keys::TOR_AFFINITY)
            || super::domains::super_pod_rule(job).is_some()
            || cluster.nodes.len() != self.class_of.len()
        {
            return Tried::Unsupported;
        }
        let bars = Bars::new(self, barred);
        let mut evals =
            Evals { job, spec: role.template.spec.as_ref(), req, topo: topology_request(job, req), slots: Vec::new() };
        let multi_pod = job.total_replicas() > 1;
        // Candidates among the nodes the job uses, kept as pods land: only
        // the node a pod lands on changes, and a gang of thousands of pods
        // would otherwise look at all of its nodes for every pod.
        let mut on_used: BTreeSet<Ranked> = BTreeSet::new();
        let mut used_tors: BTreeSet<usize> = BTreeSet::new();
        let mut undo: Vec<(usize, DeviceState)> = Vec::new();
        let mut placed = Vec::new();
        let mut failure = None;
        for index in 0..role.replicas {
            let chosen = if multi_pod {
                self.choose_multi(cluster, &mut evals, &bars, &on_used, &used_tors)
            } else {
                self.choose_single(cluster, &mut evals, &bars)
            };
            let Some(i) = chosen else {
                // Nothing changes until a pod is placed, so no later pod fits
                // either; the reason is read off the states as they are now,
                // part of the gang applied, as the per-node path reads it.
                failure = Some((index, self.explain(cluster, &mut evals, &bars)));
                break;
            };
            // Choosing evaluated the chosen node's class to a fit; should it
            // not have, the reference path decides rather than a guess here.
            let Some(alloc) = evals.allocation(self.class_of[i]).cloned() else {
                self.roll_back(cluster, undo);
                return Tried::Unsupported;
            };
            let node = &cluster.nodes[i];
            let ann = annotations(node, &alloc, req, t + u64::from(index), u64::from(index));
            let mut state = node.state.clone();
            state.apply(&node.profile, &evals.topo, &alloc);
            let pod = format!("{}-{index}", role.pod_prefix);
            placed.push(PodPlacement {
                job: job.key(),
                pod,
                node: node.name.clone(),
                devices: alloc.ids,
                annotations: ann,
            });
            undo.push((i, std::mem::replace(&mut cluster.nodes[i].state, state.clone())));
            if let Some(key) = evals.key(self, cluster, self.class_of[i]) {
                on_used.remove(&(key, Reverse(i)));
            }
            self.set_state(i, &state);
            if multi_pod {
                if let Some(key) = evals.key(self, cluster, self.class_of[i]) {
                    on_used.insert((key, Reverse(i)));
                }
            }
            if self.tor_names[self.tor_of[i]].is_some() {
                used_tors.insert(self.tor_of[i]);
            }
        }
        let needed = job.scheduling.min_available.min(job.total_replicas());
        if (placed.len() as u32) < needed {
            self.roll_back(cluster, undo);
            let detail = failure.map(|(index, why)| format!("; pod {}-{index}: {why}", role.pod_prefix));
            return Tried::Pending(format!(
                "gang: only {} of minAvailable {needed} pods fit{}",
                placed.len(),
                detail.unwrap_or_default()
            ));
        }
        Tried::Placed(placed)
    }

    /// Why no node takes the next pod, counted over nodes as
    /// `RoleView::explain` counts them: barred nodes by their bar, every
    /// other node by its class's verdict.
    fn explain(&self, cluster: &Cluster, evals: &mut Evals<'_>, bars: &Bars<'_>) -> Explanation {
        let mut why = Explanation::new(cluster.nodes.len());
        for (c, class) in self.classes.iter().enumerate() {
            let open = class.members.len() - bars.in_class(c);
            if open == 0 {
                continue;
            }
            match evals.verdict(self, cluster, c) {
                Err(Miss::Filtered(f)) => why.reject_many(f, open),
                Err(Miss::NoFit(no_fit)) => why.reject_many(no_fit, open),
                Ok(_) => {}
            }
        }
        for text in bars.nodes.range(..cluster.nodes.len()).map(|(_, text)| text) {
            why.reject(Filtered::Gated(text.clone()));
        }
        why
    }

    /// Puts back the states a job changed before it turned out not to fit.
    fn roll_back(&mut self, cluster: &mut Cluster, undo: Vec<(usize, DeviceState)>) {
        for (i, state) in undo.into_iter().rev() {
            self.set_state(i, &state);
            cluster.nodes[i].state = state;
        }
    }

    /// A single-pod job's node: the best fit over the whole cluster.
    fn choose_single(&self, cluster: &Cluster, evals: &mut Evals<'_>, bars: &Bars<'_>) -> Option<usize> {
        let mut best: Option<Ranked> = None;
        for (c, class) in self.classes.iter().enumerate() {
            let Some(first) = bars.first(&class.members) else { continue };
            if let Some(key) = evals.key(self, cluster, c) {
                best = best.max(Some((key, Reverse(first))));
            }
        }
        best.map(|(_, Reverse(i))| i)
    }

    /// The best candidate of a ToR slot and how many candidates it has.
    fn tor_top(
        &self,
        cluster: &Cluster,
        evals: &mut Evals<'_>,
        bars: &Bars<'_>,
        tor: usize,
    ) -> (usize, Option<Ranked>) {
        let mut count = 0;
        let mut top: Option<Ranked> = None;
        for (&c, members) in &self.by_tor[tor] {
            let Some(first) = bars.first(members) else { continue };
            let Some(key) = evals.key(self, cluster, c) else { continue };
            count += members.len() - bars.in_tor_class(tor, c);
            top = top.max(Some((key, Reverse(first))));
        }
        (count, top)
    }

    /// The order of `RoleView::choose` for multi-pod jobs: a node the job
    /// uses, else a ToR it uses, else the ToR with the most candidates
    /// (ties to the better top node), else nodes without a ToR.
    fn choose_multi(
        &self,
        cluster: &Cluster,
        evals: &mut Evals<'_>,
        bars: &Bars<'_>,
        on_used: &BTreeSet<Ranked>,
        used_tors: &BTreeSet<usize>,
    ) -> Option<usize> {
        if let Some((_, Reverse(i))) = on_used.last() {
            return Some(*i);
        }
        let in_used_tor = used_tors.iter().filter_map(|&t| self.tor_top(cluster, evals, bars, t).1).max();
        if let Some((_, Reverse(i))) = in_used_tor {
            return Some(i);
        }
        let mut biggest: Option<(usize, Ranked)> = None;
        let mut untored = None;
        for tor in 0..self.by_tor.len() {
            let (count, top) = self.tor_top(cluster, evals, bars, tor);
            let Some(top) = top else { continue };
            if self.tor_names[tor].is_none() {
                untored = Some(top);
            } else {
                biggest = biggest.max(Some((count, top)));
            }
        }
        biggest.map(|(_, top)| top).or(untored).map(|(_, Reverse(i))| i)
    }
}

/// One job's bars, counted per class and per ToR slot and class. Barred
/// nodes are never placed on, so they keep their class while the job is placed.
struct Bars<'b> {
    nodes: &'b Barred,
    per_class: HashMap<usize, usize>,
    per_tor_class: HashMap<(usize, usize), usize>,
}

impl<'b> Bars<'b> {
    fn new(index: &Index, nodes: &'b Barred) -> Bars<'b> {
        let mut bars = Bars { nodes, per_class: HashMap::new(), per_tor_class: HashMap::new() };
        for &i in nodes.keys().take_while(|&&i| i < index.class_of.len()) {
            let class = index.class_of[i];
            *bars.per_class.entry(class).or_default() += 1;
            *bars.per_tor_class.entry((index.tor_of[i], class)).or_default() += 1;
        }
        bars
    }

    /// The first member the job may use: the tie-break winner among them.
    fn first(&self, members: &BTreeSet<usize>) -> Option<usize> {
        if self.nodes.is_empty() {
            return members.first().copied();
        }
        members.iter().copied().find(|i| !self.nodes.contains_key(i))
    }

    fn in_class(&self, class: usize) -> usize {
        self.per_class.get(&class).copied().unwrap_or(0)
    }

    fn in_tor_class(&self, tor: usize, class: usize) -> usize {
        self.per_tor_class.get(&(tor, class)).copied().unwrap_or(0)
    }
}

/// Why a class takes no pod of the job.
#[derive(Clone)]
enum Miss {
    Filtered(Filtered),
    NoFit(NoFit),
}

type Verdict = Result<(NodeKey, Allocation), Miss>;

/// One job's answers per class, each worked out once.
struct Evals<'j> {
    job: &'j Job,
    spec: Option<&'j k8s_openapi::api::core::v1::PodSpec>,
    req: &'j ringleader_api::DeviceRequest,
    topo: ringleader_topology::DeviceRequest,
    /// Per class: `None` until looked at, then the class's verdict.
    slots: Vec<Option<Verdict>>,
}

impl Evals<'_> {
    /// The class's verdict, in the order `RoleView::evaluate` checks
    /// (labels, then the device kind and schedule policy, then the allocator).
    fn verdict(&mut self, index: &Index, cluster: &Cluster, c: usize) -> &Verdict {
        if self.slots.len() <= c {
            self.slots.resize(index.classes.len().max(c + 1), None);
        }
        self.slots[c].get_or_insert_with(|| {
            let class = &index.classes[c];
            let node = &cluster.nodes[index.kinds[class.kind]];
            node_admits(self.spec, node).map_err(Miss::Filtered)?;
            serves(node, self.req).and_then(|_| policy_matches(&node.profile, self.job)).map_err(Miss::Filtered)?;
            let welcome = welcome(self.spec, node);
            allocate(&node.profile, &class.state, &self.topo)
                .map(|a| (node_key(a.score, welcome), a))
                .map_err(Miss::NoFit)
        })
    }

    fn key(&mut self, index: &Index, cluster: &Cluster, c: usize) -> Option<NodeKey> {
        self.verdict(index, cluster, c).as_ref().ok().map(|(k, _)| *k)
    }

    fn allocation(&self, c: usize) -> Option<&Allocation> {
        self.slots.get(c)?.as_ref()?.as_ref().ok().map(|(_, a)| a)
    }
}
