//! Node groups kept across the jobs of one [`plan`](super::plan): nodes of
//! the same profile, labels and device state answer every filter and the
//! allocator alike, so a job looks at each group once instead of at every
//! node. Only plain jobs take this path (one role with devices, no gate, no
//! network-topology, `tor-affinity` or SuperPoD rule); everything else, and
//! every job that does not fit, goes through [`place_gang`](super::place_gang),
//! which stays the reference the groups must agree with.

use super::view::{node_key, NodeKey};
use super::{annotations, network, topology_request, PodPlacement};
use crate::cluster::Cluster;
use crate::predicates::{labels_match, policy_matches, serves};
use ringleader_api::ascend as keys;
use ringleader_api::Job;
use ringleader_topology::{allocate, Allocation, DeviceState, Profile};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// A set of nodes in one device state: every node of one profile and labels.
struct Class {
    /// Index into [`Index::kinds`].
    kind: usize,
    state: DeviceState,
    /// Nodes in this state, ascending, so the first is the tie-break winner.
    members: BTreeSet<usize>,
}

/// The device-state classes of a cluster and where their nodes sit.
pub(super) struct Index {
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

impl Index {
    pub(super) fn build(cluster: &Cluster) -> Index {
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
        let mut kind_ids: HashMap<(*const Profile, &BTreeMap<String, String>), usize> = HashMap::new();
        let mut tor_ids: HashMap<Option<&str>, usize> = HashMap::new();
        for (i, node) in cluster.nodes.iter().enumerate() {
            let kind = *kind_ids.entry((Arc::as_ptr(&node.profile), &node.labels)).or_insert_with(|| {
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

    /// Catches up with states changed outside the index (jobs placed by
    /// the reference path).
    pub(super) fn resync(&mut self, cluster: &Cluster) {
        for (i, node) in cluster.nodes.iter().enumerate() {
            self.set_state(i, &node.state);
        }
    }

    /// Places a plain job (see the module docs) and commits it into
    /// `cluster`. `None`: not a plain job, or it did not fit; `cluster` is
    /// then unchanged and the reference path decides (and explains).
    pub(super) fn place(&mut self, cluster: &mut Cluster, job: &Job, t: u64) -> Option<Vec<PodPlacement>> {
        let [role] = job.roles.as_slice() else { return None };
        let req = role.device.as_ref()?;
        if role.partitions.is_some()
            || job.topology.network_topology.is_some()
            || job.labels.contains_key(keys::TOR_AFFINITY)
            || network::super_pod_rule(job).is_some()
            || cluster.nodes.len() != self.class_of.len()
        {
            return None;
        }
        let mut evals =
            Evals { job, spec: role.template.spec.as_ref(), req, topo: topology_request(job, req), slots: Vec::new() };
        let multi_pod = job.total_replicas() > 1;
        let mut used: BTreeSet<usize> = BTreeSet::new();
        let mut used_tors: BTreeSet<usize> = BTreeSet::new();
        let mut undo: Vec<(usize, DeviceState)> = Vec::new();
        let mut placed = Vec::new();
        for index in 0..role.replicas {
            let chosen = if multi_pod {
                self.choose_multi(cluster, &mut evals, &used, &used_tors)
            } else {
                self.choose_single(cluster, &mut evals)
            };
            // Nothing changes until a pod is placed, so no later pod fits either.
            let Some(i) = chosen else { break };
            // Choosing evaluated the chosen node's class to a fit; should it
            // not have, the reference path decides rather than a guess here.
            let Some(alloc) = evals.allocation(self.class_of[i]).cloned() else {
                return self.roll_back(cluster, undo);
            };
            let node = &cluster.nodes[i];
            let ann = annotations(node, &alloc, req, t + u64::from(index));
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
            self.set_state(i, &state);
            used.insert(i);
            if self.tor_names[self.tor_of[i]].is_some() {
                used_tors.insert(self.tor_of[i]);
            }
        }
        let needed = job.scheduling.min_available.min(job.total_replicas());
        if (placed.len() as u32) < needed {
            return self.roll_back(cluster, undo);
        }
        Some(placed)
    }

    /// Puts back the states a job changed before it turned out not to fit.
    fn roll_back(&mut self, cluster: &mut Cluster, undo: Vec<(usize, DeviceState)>) -> Option<Vec<PodPlacement>> {
        for (i, state) in undo.into_iter().rev() {
            self.set_state(i, &state);
            cluster.nodes[i].state = state;
        }
        None
    }

    /// A single-pod job's node: the best fit over the whole cluster.
    fn choose_single(&self, cluster: &Cluster, evals: &mut Evals<'_>) -> Option<usize> {
        let mut best: Option<Ranked> = None;
        for (c, class) in self.classes.iter().enumerate() {
            let Some(&first) = class.members.first() else { continue };
            if let Some(key) = evals.key(self, cluster, c) {
                best = best.max(Some((key, Reverse(first))));
            }
        }
        best.map(|(_, Reverse(i))| i)
    }

    /// The best candidate of a ToR slot and how many candidates it has.
    fn tor_top(&self, cluster: &Cluster, evals: &mut Evals<'_>, tor: usize) -> (usize, Option<Ranked>) {
        let mut count = 0;
        let mut top: Option<Ranked> = None;
        for (&c, members) in &self.by_tor[tor] {
            let Some(key) = evals.key(self, cluster, c) else { continue };
            count += members.len();
            if let Some(&first) = members.first() {
                top = top.max(Some((key, Reverse(first))));
            }
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
        used: &BTreeSet<usize>,
        used_tors: &BTreeSet<usize>,
    ) -> Option<usize> {
        let on_used =
            used.iter().filter_map(|&i| Some((evals.key(self, cluster, self.class_of[i])?, Reverse(i)))).max();
        if let Some((_, Reverse(i))) = on_used {
            return Some(i);
        }
        let in_used_tor = used_tors.iter().filter_map(|&t| self.tor_top(cluster, evals, t).1).max();
        if let Some((_, Reverse(i))) = in_used_tor {
            return Some(i);
        }
        let mut biggest: Option<(usize, Ranked)> = None;
        let mut untored = None;
        for tor in 0..self.by_tor.len() {
            let (count, top) = self.tor_top(cluster, evals, tor);
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

/// One job's answers per class, each worked out once.
struct Evals<'j> {
    job: &'j Job,
    spec: Option<&'j k8s_openapi::api::core::v1::PodSpec>,
    req: &'j ringleader_api::DeviceRequest,
    topo: ringleader_topology::DeviceRequest,
    /// Per class: `None` until looked at, then the allocation if the class takes a pod.
    slots: Vec<Option<Option<(NodeKey, Allocation)>>>,
}

impl Evals<'_> {
    fn key(&mut self, index: &Index, cluster: &Cluster, c: usize) -> Option<NodeKey> {
        if self.slots.len() <= c {
            self.slots.resize(index.classes.len().max(c + 1), None);
        }
        let slot = self.slots[c].get_or_insert_with(|| {
            let class = &index.classes[c];
            let node = &cluster.nodes[index.kinds[class.kind]];
            labels_match(self.spec, &node.labels).ok()?;
            serves(&node.profile, self.req).and_then(|_| policy_matches(&node.profile, self.job)).ok()?;
            allocate(&node.profile, &class.state, &self.topo).ok().map(|a| (node_key(a.score), a))
        });
        slot.as_ref().map(|(k, _)| *k)
    }

    fn allocation(&self, c: usize) -> Option<&Allocation> {
        self.slots.get(c)?.as_ref()?.as_ref().map(|(_, a)| a)
    }
}
