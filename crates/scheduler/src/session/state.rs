//! The session's state: the snapshot it opened on, its jobs, queues and
//! cluster copy, statements, and the extension points plugins implement
//! ([`Plugin`], named in one place as in kube-scheduler's framework).

use crate::cluster::{Cluster, Node};
use crate::conf::SchedulerConf;
use crate::place::index::{Index, Tried};
use crate::place::{Pending, PodPlacement};
use crate::predicates::Filtered;
use crate::priority::PriorityClasses;
use crate::queue::{QueueInfo, Queues};
use crate::resources::{self, Resources};
use crate::vip::{self, Vip};
use crate::workload::{Running, RunningPod};
use ringleader_api::{FieldError, Job, Resource};
use ringleader_topology::DeviceSet;
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// What a session starts from.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Nodes and their device state (without the running workloads' devices,
    /// which the session takes itself).
    pub cluster: Cluster,
    /// Declared queues. When none are declared every queue a job names
    /// exists implicitly (weight 1, no bounds); `default` always does.
    pub queues: Vec<QueueInfo>,
    /// Priority classes.
    pub priority_classes: PriorityClasses,
    /// Jobs already running.
    pub running: Vec<Running>,
    /// Jobs waiting, in submission order.
    pub pending: Vec<Job>,
}

impl Snapshot {
    /// Builds a snapshot from the typed objects of a cluster file — Nodes,
    /// Volcano Queues, PriorityClasses and running Workloads; other kinds
    /// are ignored — and the pending jobs in submission order. Errors carry
    /// the index of the object they belong to.
    pub fn from_resources(objects: &[Resource], pending: Vec<Job>) -> Result<Snapshot, Vec<(usize, FieldError)>> {
        let mut errs = Vec::new();
        let mut snapshot = Snapshot { pending, ..Snapshot::default() };
        let mut classes = Vec::new();
        for (i, obj) in objects.iter().enumerate() {
            match obj {
                Resource::Node(n) => match Node::from_object(n) {
                    Ok(node) => snapshot.cluster.nodes.push(node),
                    Err(e) => errs.extend(e.into_iter().map(|e| (i, e))),
                },
                Resource::Queue(q) => snapshot.queues.push(QueueInfo::from_object(q)),
                Resource::PriorityClass(pc) => classes.push(pc.as_ref()),
                _ => {}
            }
        }
        snapshot.priority_classes = PriorityClasses::new(classes);
        for (i, obj) in objects.iter().enumerate() {
            if let Resource::Workload(w) = obj {
                match Running::from_object(w, &snapshot.cluster) {
                    Ok(r) => snapshot.running.push(r),
                    Err(e) => errs.extend(e.into_iter().map(|e| (i, e))),
                }
            }
        }
        if errs.is_empty() {
            Ok(snapshot)
        } else {
            Err(errs)
        }
    }
}

impl Snapshot {
    /// The snapshot of the next cycle once the outcome has been carried out:
    /// evicted workloads are gone, bound jobs run (as workloads holding their
    /// devices whole), and the jobs still pending wait on. Jobs that finish
    /// between cycles are for the caller to drop from `running`.
    pub fn after(mut self, outcome: &Outcome) -> Snapshot {
        let evicted: BTreeSet<&str> = outcome.evictions.iter().map(|e| e.job.as_str()).collect();
        self.running.retain(|r| !evicted.contains(r.key().as_str()));
        let mut by_job: BTreeMap<&str, Vec<&PodPlacement>> = BTreeMap::new();
        for b in &outcome.bindings {
            by_job.entry(b.job.as_str()).or_default().push(b);
        }
        let mut still = Vec::new();
        for job in std::mem::take(&mut self.pending) {
            let key = job.key();
            let Some(placements) = by_job.get(key.as_str()) else {
                still.push(job);
                continue;
            };
            let pods = placements
                .iter()
                .filter_map(|p| {
                    let n = self.cluster.nodes.iter().position(|node| node.name == p.node)?;
                    let profile = &self.cluster.nodes[n].profile;
                    let devices = DeviceSet::from_indices(
                        p.devices.iter().filter_map(|id| profile.devices.iter().position(|d| d.id == *id)),
                    );
                    let share = crate::place::vnpu::held_use(profile, &p.annotations);
                    let vnpu = crate::place::vnpu::mode_of(&p.annotations);
                    Some(RunningPod { name: p.pod.clone(), node: n, devices, share, vnpu })
                })
                .collect();
            self.running.push(Running {
                namespace: job.namespace.clone(),
                name: job.name.clone(),
                queue: job.scheduling.queue.clone(),
                priority_class: job.scheduling.priority_class.clone(),
                priority: None,
                vip: job.annotations.contains_key(vip::VIP),
                pods,
            });
        }
        self.pending = still;
        self
    }
}

/// A pod evicted to make room, and who it made room for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Eviction {
    /// `namespace/name` of the evicted job.
    pub job: String,
    /// Pod name.
    pub pod: String,
    /// Node it ran on.
    pub node: String,
    /// `namespace/name` of the job that took its place.
    pub preempted_by: String,
    /// Why: preemption, reclaim or a VIP job's kill.
    pub reason: String,
}

/// Volcano PodGroup phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PodGroupPhase {
    /// Not admitted by its queue.
    Pending,
    /// Admitted, waiting for room.
    Inqueue,
    /// Placed (or already running).
    Running,
    /// Some pods running, fewer than minMember. A session never leaves a
    /// gang so (it places gangs whole), so it does not report this phase.
    Unknown,
}

/// The decisions of a session.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// Pods bound to nodes and devices, in the order they were decided.
    pub bindings: Vec<PodPlacement>,
    /// Pods evicted.
    pub evictions: Vec<Eviction>,
    /// Jobs still waiting, in submission order, with their explanations.
    pub pending: Vec<Pending>,
    /// The PodGroup phase of every job at the end of the session.
    pub phases: BTreeMap<String, PodGroupPhase>,
}

/// Where a job stands inside the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Not admitted.
    Pending,
    /// Admitted by its queue.
    Inqueue,
    /// Placed in this session.
    Bound,
    /// Running before the session.
    Running,
    /// Running before the session and evicted by it.
    Evicted,
}

/// A job of the session: a pending one (with its spec) or a running one.
#[derive(Debug, Clone)]
pub(crate) struct JobInfo {
    pub key: String,
    pub namespace: String,
    pub queue: String,
    pub priority: i32,
    /// Submission order (running workloads come before pending jobs).
    pub order: usize,
    /// VIP request (pending jobs).
    pub vip: Option<Vip>,
    /// Running VIP workload or VIP job: never a victim.
    pub is_vip: bool,
    pub spec: Option<Job>,
    pub running: Option<Running>,
    /// What it holds (running, bound) or asks for (pending).
    pub request: Resources,
    /// What its first minAvailable pods ask for.
    pub min_request: Resources,
    pub status: Status,
    pub reason: Option<String>,
    /// An action has considered it (each job is tried once per action).
    pub tried: bool,
    /// Every role asks for no device (Volcano's best-effort: backfill places it).
    pub best_effort: bool,
    /// Could never run in this session (unknown PriorityClass, bad VIP annotations).
    pub broken: bool,
}

impl JobInfo {
    /// Holds devices now.
    pub fn holds(&self) -> bool {
        matches!(self.status, Status::Bound | Status::Running)
    }

    /// Waits for room: pending, admissible in principle, not yet placed.
    pub fn waiting(&self) -> bool {
        self.spec.is_some() && !self.broken && matches!(self.status, Status::Pending | Status::Inqueue)
    }
}

/// Nodes kept for one job.
#[derive(Debug, Clone)]
pub(crate) struct Reservation {
    /// Index of the job.
    pub job: usize,
    /// Node indices.
    pub nodes: BTreeSet<usize>,
    /// A VIP `wait` reservation keeps every other job out; a gang reservation
    /// only jobs of lower priority.
    pub vip: bool,
}

/// What keeps a job off nodes: a VIP job's own node list, other jobs' reservations.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateData {
    only: Option<BTreeSet<usize>>,
    reserved: crate::place::index::Barred,
}

impl GateData {
    /// A VIP job's nodes (empty for other jobs).
    pub fn only_nodes(&self) -> BTreeSet<usize> {
        self.only.clone().unwrap_or_default()
    }

    /// Whether the job may use node `i`, and if not, why.
    pub fn check(&self, i: usize) -> Result<(), Filtered> {
        if let Some(only) = &self.only {
            if !only.contains(&i) {
                return Err(Filtered::Gated("node(s) not among the VIP job's nodes".to_string()));
            }
        }
        match self.reserved.get(&i) {
            Some(why) => Err(Filtered::Gated(why.clone())),
            None => Ok(()),
        }
    }
}

/// A transaction over a copy of the cluster: evictions and one gang's
/// placement, committed together or dropped.
#[derive(Debug, Clone)]
pub struct Statement {
    pub(crate) cluster: Cluster,
    pub(crate) evicted: Vec<usize>,
}

/// A scheduling cycle in progress.
#[derive(Debug)]
pub struct Session {
    pub(crate) conf: SchedulerConf,
    pub(crate) plugins: Vec<Box<dyn Plugin>>,
    /// Devices held per queue (jobs of that queue itself, not its children).
    queue_usage: BTreeMap<String, Resources>,
    /// Devices held per namespace.
    ns_usage: BTreeMap<String, Resources>,
    pub(crate) cluster: Cluster,
    pub(crate) queues: Queues,
    pub(crate) jobs: Vec<JobInfo>,
    /// Healthy devices of the whole cluster.
    pub(crate) total: Resources,
    /// Deserved share per queue (proportion), fixed when the session opens.
    pub(crate) deserved: BTreeMap<String, Resources>,
    pub(crate) reservations: Vec<Reservation>,
    bindings: Vec<PodPlacement>,
    evictions: Vec<Eviction>,
    /// `predicate-time` of the next pod bound.
    pub(crate) time: u64,
    /// Node groups over `cluster`, kept in step with every change to it;
    /// `None` places every job node by node (the reference path).
    pub(crate) groups: Option<Index>,
    /// Every namespace of the session's jobs, for the DRF shares.
    pub(crate) namespaces: Vec<String>,
    /// Pick the next job by a scan of every job (the reference path).
    pub(crate) scan_jobs: bool,
}

/// Jobs of one `next_job` loop, bucketed by everything the ordering reads
/// of a job besides the session's shares (VIP, queue, priority, namespace),
/// so that inside a bucket only submission order is left and the bucket's
/// first wanted job stands for it.
pub(crate) struct JobCursor {
    pub(crate) buckets: Vec<(Vec<usize>, usize)>,
}

impl Session {
    /// Opens a session: takes the running workloads' devices, resolves
    /// priorities, queues and VIP requests, and computes each queue's deserved share.
    pub(crate) fn open(snapshot: Snapshot, conf: &SchedulerConf, now: u64, plugins: Vec<Box<dyn Plugin>>) -> Session {
        let Snapshot { mut cluster, queues, priority_classes, running, pending } = snapshot;
        let mut by_name: BTreeMap<String, QueueInfo> = queues.into_iter().map(|q| (q.name.clone(), q)).collect();
        let implicit_all = by_name.is_empty();
        by_name.entry("default".to_string()).or_insert_with(|| QueueInfo::implicit("default"));
        let mut jobs = Vec::new();
        for r in running {
            r.occupy(&mut cluster);
            let mut request = Resources::default();
            for pod in &r.pods {
                if let Some(node) = cluster.nodes.get(pod.node) {
                    request.add(&resources::held(node, pod.devices));
                }
            }
            let priority = match r.priority {
                Some(p) => p,
                None => priority_classes.value(r.priority_class.as_deref()).unwrap_or_default(),
            };
            jobs.push(JobInfo {
                key: r.key(),
                namespace: r.namespace.clone(),
                queue: r.queue.clone(),
                priority,
                order: jobs.len(),
                vip: None,
                is_vip: r.vip,
                spec: None,
                min_request: request.clone(),
                request,
                running: Some(r),
                status: Status::Running,
                reason: None,
                tried: true,
                best_effort: false,
                broken: false,
            });
        }
        for job in pending {
            let mut reasons = Vec::new();
            let priority = priority_classes.value(job.scheduling.priority_class.as_deref()).unwrap_or_else(|e| {
                reasons.push(e);
                0
            });
            let vip = vip::from_annotations(&job.annotations).unwrap_or_else(|e| {
                reasons.push(e);
                None
            });
            if let Some(v) = &vip {
                for n in v.nodes.iter().filter(|n| cluster.node(n).is_none()) {
                    reasons.push(format!("VIP node {n} is not in the cluster"));
                }
            }
            jobs.push(JobInfo {
                key: job.key(),
                namespace: job.namespace.clone(),
                queue: job.scheduling.queue.clone(),
                priority,
                order: jobs.len(),
                is_vip: vip.is_some(),
                vip,
                request: resources::job_request(&job),
                min_request: resources::job_min_request(&job),
                best_effort: job.roles.iter().all(|r| r.device.is_none()),
                spec: Some(job),
                running: None,
                status: Status::Pending,
                broken: !reasons.is_empty(),
                reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
                tried: false,
            });
        }
        if implicit_all {
            for j in &jobs {
                by_name.entry(j.queue.clone()).or_insert_with(|| QueueInfo::implicit(&j.queue));
            }
        }
        let queues = Queues { by_name };
        let mut total = Resources::default();
        for node in &cluster.nodes {
            total.add(&resources::capacity(node));
        }
        // What each queue asks for: what it holds plus what its admissible jobs want.
        let mut requests: BTreeMap<String, Resources> = BTreeMap::new();
        for j in &jobs {
            let admissible = queues.by_name.contains_key(&j.queue) && queues.closed(&j.queue).is_none() && !j.broken;
            if j.holds() || admissible {
                requests.entry(j.queue.clone()).or_default().add(&j.request);
            }
        }
        let deserved = queues.deserved(&total, &requests);
        let mut queue_usage: BTreeMap<String, Resources> = BTreeMap::new();
        let mut ns_usage: BTreeMap<String, Resources> = BTreeMap::new();
        for j in jobs.iter().filter(|j| j.holds()) {
            queue_usage.entry(j.queue.clone()).or_default().add(&j.request);
            ns_usage.entry(j.namespace.clone()).or_default().add(&j.request);
        }
        let namespaces: BTreeSet<&str> = jobs.iter().map(|j| j.namespace.as_str()).collect();
        let namespaces = namespaces.into_iter().map(str::to_string).collect();
        Session {
            groups: Some(Index::build(&cluster)),
            namespaces,
            scan_jobs: false,
            conf: conf.clone(),
            plugins,
            queue_usage,
            ns_usage,
            cluster,
            queues,
            jobs,
            total,
            deserved,
            reservations: Vec::new(),
            bindings: Vec::new(),
            evictions: Vec::new(),
            time: now,
        }
    }

    /// Closes the session into its decisions.
    pub fn close(self) -> Outcome {
        let mut pending = Vec::new();
        let mut phases = BTreeMap::new();
        for j in &self.jobs {
            let phase = match j.status {
                Status::Pending | Status::Evicted => PodGroupPhase::Pending,
                Status::Inqueue => PodGroupPhase::Inqueue,
                Status::Bound | Status::Running => PodGroupPhase::Running,
            };
            phases.insert(j.key.clone(), phase);
            if j.spec.is_some() && j.status != Status::Bound {
                let reason = j
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no action of the scheduler configuration considered the job".into());
                pending.push(Pending { job: j.key.clone(), reason });
            }
        }
        Outcome { bindings: self.bindings, evictions: self.evictions, pending, phases }
    }

    /// Devices held in queue `queue` or under it, less what `excluding` hold.
    pub(crate) fn usage_under(&self, queue: &str, excluding: &[usize]) -> Resources {
        let mut used = Resources::default();
        for (q, r) in &self.queue_usage {
            if self.queues.is_under(q, queue) {
                used.add(r);
            }
        }
        for j in excluding.iter().filter_map(|i| self.jobs.get(*i)) {
            if j.holds() && self.queues.is_under(&j.queue, queue) {
                used.sub(&j.request);
            }
        }
        used
    }

    /// Devices held by a namespace (DRF's user).
    pub(crate) fn namespace_usage(&self, namespace: &str) -> Resources {
        self.ns_usage.get(namespace).cloned().unwrap_or_default()
    }

    /// Counts (or, with `add` false, stops counting) what job `j` holds.
    fn account(&mut self, j: usize, add: bool) {
        let job = &self.jobs[j];
        for map in [
            self.queue_usage.entry(job.queue.clone()).or_default(),
            self.ns_usage.entry(job.namespace.clone()).or_default(),
        ] {
            if add {
                map.add(&job.request);
            } else {
                map.sub(&job.request);
            }
        }
    }

    /// The nodes job `j` may not use, and why.
    pub(crate) fn gate(&self, j: usize) -> GateData {
        let only = self.jobs[j].vip.as_ref().map(|v| {
            v.nodes.iter().filter_map(|n| self.cluster.nodes.iter().position(|node| node.name == *n)).collect()
        });
        let mut reserved = BTreeMap::new();
        for r in &self.reservations {
            let holder = &self.jobs[r.job];
            if r.job == j || holder.status == Status::Bound {
                continue;
            }
            if r.vip || self.jobs[j].priority < holder.priority {
                let why = if r.vip {
                    format!("node(s) reserved for VIP job {}", holder.key)
                } else {
                    format!("node(s) reserved for {}", holder.key)
                };
                for n in &r.nodes {
                    reserved.entry(*n).or_insert_with(|| why.clone());
                }
            }
        }
        GateData { only, reserved }
    }

    /// A statement over a copy of the cluster.
    pub(crate) fn statement(&self) -> Statement {
        Statement { cluster: self.cluster.clone(), evicted: Vec::new() }
    }

    /// Places job `j` on the live cluster (no evictions needed); on success
    /// the binding is recorded, on failure the explanation.
    pub(crate) fn allocate(&mut self, j: usize) -> bool {
        let gate = self.gate(j);
        let Some(spec) = self.jobs[j].spec.as_ref() else { return false };
        // A VIP job's own node list bars nearly every node; such jobs are few,
        // and the per-node path reads the list directly.
        let tried = match (&mut self.groups, &gate.only) {
            (Some(groups), None) => groups.place(&mut self.cluster, spec, self.time, &gate.reserved),
            _ => Tried::Unsupported,
        };
        let placed = match tried {
            Tried::Placed(p) => Ok(p),
            Tried::Pending(why) => Err(why),
            Tried::Unsupported => {
                let placed = crate::place::place_job_gated(&mut self.cluster, spec, self.time, &|i| gate.check(i));
                // A job that does not fit leaves the cluster as it was.
                if let (Ok(_), Some(groups)) = (&placed, &mut self.groups) {
                    groups.resync(&self.cluster);
                }
                placed
            }
        };
        match placed {
            Ok(placements) => {
                self.bind(j, placements);
                true
            }
            Err(reason) => {
                self.jobs[j].reason = Some(reason);
                false
            }
        }
    }

    /// Tries job `j` inside a statement after evicting `victims`: the
    /// statement with the gang placed, or the placement's explanation.
    pub(crate) fn try_with(&self, j: usize, victims: &[usize]) -> Result<(Statement, Vec<PodPlacement>), String> {
        let mut st = self.statement();
        for v in victims {
            if let Some(r) = &self.jobs[*v].running {
                r.release(&mut st.cluster);
            }
            st.evicted.push(*v);
        }
        let gate = self.gate(j);
        let spec = self.jobs[j].spec.as_ref().ok_or_else(|| "not a pending job".to_string())?;
        let placements = crate::place::place_job_gated(&mut st.cluster, spec, self.time, &|i| gate.check(i))?;
        Ok((st, placements))
    }

    /// Commits a statement: its evictions (caused by job `j`, for `why`) and `j`'s placement.
    pub(crate) fn commit(&mut self, j: usize, st: Statement, placements: Vec<PodPlacement>, why: &str) {
        self.cluster = st.cluster;
        if let Some(groups) = &mut self.groups {
            groups.resync(&self.cluster);
        }
        let by = self.jobs[j].key.clone();
        for v in st.evicted {
            self.account(v, false);
            self.jobs[v].status = Status::Evicted;
            self.jobs[v].reason = Some(format!("evicted for {by}: {why}"));
            let victim = &self.jobs[v];
            if let Some(r) = &victim.running {
                for pod in &r.pods {
                    self.evictions.push(Eviction {
                        job: victim.key.clone(),
                        pod: pod.name.clone(),
                        node: self.cluster.nodes.get(pod.node).map(|n| n.name.clone()).unwrap_or_default(),
                        preempted_by: by.clone(),
                        reason: why.to_string(),
                    });
                }
            }
        }
        // The gang no longer needs the nodes kept for it.
        self.bind(j, placements);
    }

    fn bind(&mut self, j: usize, placements: Vec<PodPlacement>) {
        self.time += placements.len() as u64;
        let job = &mut self.jobs[j];
        if let Some(spec) = &job.spec {
            // Count what was placed: an elastic gang may start with fewer pods than it asked for.
            let mut held = Resources::default();
            for p in &placements {
                let role = spec
                    .roles
                    .iter()
                    .find(|r| p.pod.strip_prefix(r.pod_prefix.as_str()).is_some_and(|rest| rest.starts_with('-')));
                if let Some(d) = role.and_then(|r| r.device.as_ref()) {
                    held.add(&resources::pod_request(d));
                }
            }
            job.request = held;
        }
        job.status = Status::Bound;
        job.reason = None;
        self.account(j, true);
        self.bindings.extend(placements);
    }

    /// A cursor for one loop of [`Session::next_job`].
    pub(crate) fn job_cursor(&self) -> JobCursor {
        let mut buckets: BTreeMap<(bool, &str, i32, &str), Vec<usize>> = BTreeMap::new();
        for (i, j) in self.jobs.iter().enumerate() {
            buckets.entry((j.is_vip, &j.queue, j.priority, &j.namespace)).or_default().push(i);
        }
        JobCursor { buckets: buckets.into_values().map(|jobs| (jobs, 0)).collect() }
    }
}

/// Why a victim is being considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evict {
    /// Inside the preemptor's queue.
    Preempt,
    /// From another queue.
    Reclaim,
}

/// Shares of every queue and namespace, computed once per ordering pass.
#[derive(Debug, Clone, Default)]
pub struct Shares {
    /// Queue use over its deserved share.
    pub queue: BTreeMap<String, f64>,
    /// Namespace dominant share of the cluster.
    pub namespace: BTreeMap<String, f64>,
}

/// What admission counts a job by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Amount {
    /// The gang's minimum (enqueue, Volcano's minResources).
    Minimum,
    /// Every pod (allocate).
    Full,
}

/// One plugin's extension points; each defaults to "no opinion".
pub(crate) trait Plugin: std::fmt::Debug {
    /// Orders two queues (`Less`: `a` first).
    fn order_queues(&self, _shares: &Shares, _a: &str, _b: &str) -> Ordering {
        Ordering::Equal
    }

    /// Orders two jobs of the session (`Less`: `a` first).
    fn order_jobs(&self, _ss: &Session, _shares: &Shares, _a: usize, _b: usize) -> Ordering {
        Ordering::Equal
    }

    /// Whether `order_jobs` reads the jobs' namespaces (the job order's
    /// bucketing must then watch for ties between queues).
    fn orders_by_namespace(&self) -> bool {
        false
    }

    /// Whether job `j`'s queue may take it with `victims` gone and `extra`
    /// promised to its queue; the refusal is the job's explanation.
    fn admit(
        &self,
        _ss: &Session,
        _j: usize,
        _victims: &[usize],
        _amount: Amount,
        _extra: &Resources,
    ) -> Result<(), String> {
        Ok(())
    }

    /// A vote on evicting `victim` for job `j`: `None` abstains.
    fn may_evict(&self, _ss: &Session, _j: usize, _victim: usize, _why: Evict) -> Option<bool> {
        None
    }

    /// Whether evicting the whole set keeps the plugin's invariants.
    fn allow_victims(&self, _ss: &Session, _set: &[usize], _why: Evict) -> bool {
        true
    }
}
