//! Sessions place plain jobs through node groups kept across the session
//! and pick the next job from buckets of alike jobs; `run_traced` with
//! `per_node` places every job node by node and scans every job for the
//! next, as sessions did before. Both must give exactly the same bindings
//! (nodes, devices, annotations), evictions, pending reasons, phases and
//! final device states, and the groups must end in step with the cluster.
//!
//! Random snapshots mix what sessions read: queues (weights, capabilities,
//! guarantees, parents, Closed, reclaimable), namespaces, PriorityClasses,
//! running workloads (VIP among them) to preempt and reclaim, VIP `wait` and
//! `kill` jobs, reservations for the first gang without room, best-effort
//! jobs, network topology, tor-affinity, second roles, selectors, elastic
//! gangs; each under several configurations, and for a second cycle.

mod rough;

use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use ringleader_api::model::{Job, NetworkTopologyConstraint};
use ringleader_scheduler::cluster::Cluster;
use ringleader_scheduler::conf::{Argument, SchedulerConf};
use ringleader_scheduler::priority::PriorityClasses;
use ringleader_scheduler::queue::{QueueInfo, QueueState};
use ringleader_scheduler::resources::Resources;
use ringleader_scheduler::scenarios::{a2_cluster, mixed_cluster, mixed_jobs, npu_job};
use ringleader_scheduler::session::{run_traced, Outcome, Snapshot};
use ringleader_scheduler::vip;
use ringleader_scheduler::workload::{Running, RunningPod};
use ringleader_topology::DeviceSet;
use rough::{rough_cluster, rough_min_available, rough_policy, rough_role};

/// Runs the snapshot both ways, asserts they agree, and returns the outcome.
fn assert_same(snapshot: &Snapshot, conf: &SchedulerConf, what: &str) -> Outcome {
    let (fast, fast_cluster, agree) = run_traced(snapshot.clone(), conf, 1000, false);
    let (slow, slow_cluster, _) = run_traced(snapshot.clone(), conf, 1000, true);
    for (k, (g, w)) in fast.bindings.iter().zip(&slow.bindings).enumerate() {
        assert_eq!(g, w, "{what}: binding {k} differs");
    }
    assert_eq!(fast.bindings.len(), slow.bindings.len(), "{what}: binding count");
    assert_eq!(fast.evictions, slow.evictions, "{what}: evictions");
    for (g, w) in fast.pending.iter().zip(&slow.pending) {
        assert_eq!(g, w, "{what}: pending");
    }
    assert_eq!(fast.pending.len(), slow.pending.len(), "{what}: pending count");
    assert_eq!(fast.phases, slow.phases, "{what}: phases");
    assert_eq!(fast_cluster.nodes.len(), slow_cluster.nodes.len(), "{what}: nodes");
    for (f, s) in fast_cluster.nodes.iter().zip(&slow_cluster.nodes) {
        assert_eq!(f.state, s.state, "{what}: device state of {}", f.name);
    }
    assert!(agree, "{what}: the node groups drifted from the cluster");
    fast
}

/// This cycle, then the next one on what it left.
fn assert_same_twice(snapshot: Snapshot, conf: &SchedulerConf, what: &str) {
    let outcome = assert_same(&snapshot, conf, what);
    let next = snapshot.after(&outcome);
    assert_same(&next, conf, &format!("{what}, second cycle"));
}

fn confs() -> Vec<(&'static str, SchedulerConf)> {
    let default = SchedulerConf::default();
    let mut no_reservation = default.clone();
    for p in no_reservation.tiers.iter_mut().flat_map(|t| &mut t.plugins) {
        if p.name == "gang" {
            p.arguments.insert("reservation".to_string(), Argument::Bool(false));
        }
    }
    let mut no_enqueue = default.clone();
    no_enqueue.actions = "allocate, backfill, preempt, reclaim".to_string();
    vec![
        ("default", default.clone()),
        ("without drf", default.without("drf")),
        ("without proportion", default.without("proportion")),
        ("without priority", default.without("priority")),
        ("no reservation", no_reservation),
        ("no enqueue", no_enqueue),
    ]
}

#[test]
fn bench_loads_match_reference() {
    let conf = SchedulerConf::default();
    let snapshot = |cluster: Cluster, pending: Vec<Job>| Snapshot { cluster, pending, ..Snapshot::default() };
    assert_same_twice(snapshot(mixed_cluster(300), mixed_jobs(1500)), &conf, "mixed 300x1500");
    assert_same_twice(snapshot(mixed_cluster(100), mixed_jobs(600)), &conf, "mixed 100x600");
    assert_same_twice(snapshot(a2_cluster(64, 3), mixed_jobs(400)), &conf, "a2 64x400");
    let singles = (0..100).map(|i| npu_job(&format!("job-{i}"), 1, 1)).collect();
    assert_same_twice(snapshot(a2_cluster(100, 1), singles), &conf, "concurrent 100");
}

/// A high-priority gang too big for the cluster reserves nodes; the
/// lower-priority jobs after it are kept off them, and those that do not
/// fit count the reserved nodes in their reasons.
#[test]
fn reservations_bar_lower_priority_jobs_alike() {
    let mut jobs = vec![npu_job("big", 120, 8)];
    jobs[0].scheduling.priority_class = Some("high".to_string());
    jobs.extend(mixed_jobs(900));
    let snapshot =
        Snapshot { cluster: mixed_cluster(150), priority_classes: classes(), pending: jobs, ..Snapshot::default() };
    for (name, conf) in confs() {
        assert_same_twice(snapshot.clone(), &conf, &format!("reservation, {name}"));
    }
}

fn classes() -> PriorityClasses {
    let class = |name: &str, value: i32| PriorityClass {
        metadata: ObjectMeta { name: Some(name.to_string()), ..Default::default() },
        value,
        ..Default::default()
    };
    let all = [class("low", 10), class("mid", 50), class("high", 100)];
    PriorityClasses::new(all.iter())
}

const QUEUES: [&str; 4] = ["default", "qa", "qb", "qc"];
const NAMESPACES: [&str; 3] = ["default", "ns-a", "ns-b"];

fn rough_queues(rng: &mut StdRng) -> Vec<QueueInfo> {
    if rng.gen_bool(0.3) {
        return Vec::new();
    }
    let mut queues = Vec::new();
    for name in QUEUES.iter().take(rng.gen_range(1..=4)) {
        let mut q = QueueInfo::implicit(name);
        q.weight = rng.gen_range(1..=4);
        if rng.gen_bool(0.3) {
            let resource = if rng.gen_bool(0.5) { "huawei.com/Ascend910" } else { "nvidia.com/gpu" };
            q.capability = Resources::one(resource, rng.gen_range(4..200) * 1000);
        }
        if rng.gen_bool(0.2) {
            q.guarantee = Resources::one("huawei.com/Ascend910", rng.gen_range(1..40) * 1000);
        }
        q.reclaimable = rng.gen_bool(0.7);
        if rng.gen_bool(0.08) {
            q.state = QueueState::Closed;
        }
        if *name == "qc" && rng.gen_bool(0.5) {
            q.parent = Some("qa".to_string());
        }
        queues.push(q);
    }
    queues
}

/// Running gangs on devices the cluster has free (the session takes them).
fn rough_running(rng: &mut StdRng, cluster: &Cluster) -> Vec<Running> {
    let mut taken: Vec<DeviceSet> = cluster.nodes.iter().map(|n| n.state.allocated).collect();
    let mut running = Vec::new();
    for k in 0..rng.gen_range(0..10) {
        let mut pods = Vec::new();
        for p in 0..rng.gen_range(1..=3) {
            let node = rng.gen_range(0..cluster.nodes.len());
            let n = &cluster.nodes[node];
            let free: Vec<usize> = n.state.healthy(&n.profile).minus(taken[node]).iter().collect();
            if free.is_empty() {
                continue;
            }
            let want = rng.gen_range(1..=free.len().min(4));
            let devices = DeviceSet::from_indices(free.choose_multiple(rng, want).copied());
            taken[node] = taken[node].or(devices);
            pods.push(RunningPod { name: format!("run-{k}-worker-{p}"), node, devices, share: None, vnpu: None });
        }
        if pods.is_empty() {
            continue;
        }
        running.push(Running {
            namespace: NAMESPACES.choose(rng).copied().unwrap_or("default").to_string(),
            name: format!("run-{k}"),
            queue: QUEUES.choose(rng).copied().unwrap_or("default").to_string(),
            priority_class: if rng.gen_bool(0.5) { Some("low".to_string()) } else { None },
            priority: if rng.gen_bool(0.5) { Some(rng.gen_range(0..80)) } else { None },
            vip: rng.gen_bool(0.1),
            pods,
        });
    }
    running
}

/// Mixed jobs varied in what placement and the session read.
fn rough_jobs(rng: &mut StdRng, pods: u32, cluster: &Cluster) -> Vec<Job> {
    let mut jobs = mixed_jobs(pods);
    for job in &mut jobs {
        rough_min_available(rng, job);
        job.namespace = NAMESPACES.choose(rng).copied().unwrap_or("default").to_string();
        job.scheduling.queue = match rng.gen_range(0..30) {
            0 => "nowhere".to_string(),
            _ => QUEUES.choose(rng).copied().unwrap_or("default").to_string(),
        };
        job.scheduling.priority_class = match rng.gen_range(0..40) {
            0 => Some("missing".to_string()),
            1..=8 => Some("high".to_string()),
            9..=16 => Some("mid".to_string()),
            17..=24 => Some("low".to_string()),
            _ => None,
        };
        rough_role(rng, job, 0.05);
        let roll = rng.gen_range(0..60);
        if rough_policy(job, roll) {
            continue;
        }
        match roll {
            4 | 5 => {
                job.topology.network_topology = Some(NetworkTopologyConstraint {
                    hard: rng.gen_bool(0.5),
                    highest_tier_allowed: Some(rng.gen_range(1..=2)),
                });
            }
            6 | 7 => {
                let mode = if rng.gen_bool(0.5) { "wait" } else { "kill" };
                let mut nodes: Vec<String> = (0..rng.gen_range(1..=3))
                    .filter_map(|_| cluster.nodes.choose(rng).map(|n| n.name.clone()))
                    .collect();
                if rng.gen_bool(0.1) {
                    nodes.push("node-absent".to_string());
                }
                job.annotations.insert(vip::VIP.to_string(), mode.to_string());
                job.annotations.insert(vip::VIP_NODES.to_string(), nodes.join(","));
            }
            _ => {}
        }
    }
    jobs
}

fn rough_snapshot(seed: u64) -> Snapshot {
    let mut rng = StdRng::seed_from_u64(seed);
    let nodes = rng.gen_range(20..160);
    let pods = rng.gen_range(nodes as u32..nodes as u32 * 5);
    let cluster = rough_cluster(&mut rng, nodes);
    let queues = rough_queues(&mut rng);
    let running = rough_running(&mut rng, &cluster);
    let mut pending = rough_jobs(&mut rng, pods, &cluster);
    // Now and then a gang too big for the cluster, early and important, so
    // a reservation bars the jobs after it.
    if rng.gen_bool(0.5) {
        let mut big = npu_job("big", (nodes as u32).max(2), rng.gen_range(4..=8));
        big.scheduling.priority_class = Some("high".to_string());
        big.scheduling.queue = QUEUES.choose(&mut rng).copied().unwrap_or("default").to_string();
        pending.insert(rng.gen_range(0..pending.len().min(5) + 1), big);
    }
    Snapshot { cluster, queues, priority_classes: classes(), running, pending }
}

#[test]
fn rough_sessions_match_reference() {
    let confs = confs();
    let mut seen = Seen::default();
    for seed in 0..36u64 {
        let (name, conf) = &confs[seed as usize % confs.len()];
        let snapshot = rough_snapshot(seed);
        let outcome = assert_same(&snapshot, conf, &format!("seed {seed}, {name}"));
        seen.count(&outcome);
        let next = snapshot.after(&outcome);
        seen.count(&assert_same(&next, conf, &format!("seed {seed}, {name}, second cycle")));
    }
    // The mix reaches what the groups must get right, or the match says little.
    assert!(seen.bindings > 1000, "{seen:?}");
    assert!(seen.preempted > 0 && seen.reclaimed > 0 && seen.killed > 0, "{seen:?}");
    assert!(seen.barred_reasons > 0 && seen.vip_reasons > 0 && seen.node_reasons > 100, "{seen:?}");
}

/// What the random sessions did, summed.
#[derive(Debug, Default)]
struct Seen {
    bindings: usize,
    preempted: usize,
    reclaimed: usize,
    killed: usize,
    /// Pending reasons counting nodes reserved for another job.
    barred_reasons: usize,
    vip_reasons: usize,
    /// Pending reasons that count nodes at all.
    node_reasons: usize,
}

impl Seen {
    fn count(&mut self, outcome: &Outcome) {
        self.bindings += outcome.bindings.len();
        for e in &outcome.evictions {
            match e.reason.split(' ').next() {
                Some("preempted") => self.preempted += 1,
                Some("reclaimed") => self.reclaimed += 1,
                _ => self.killed += 1,
            }
        }
        for p in &outcome.pending {
            self.barred_reasons += usize::from(p.reason.contains("node(s) reserved for"));
            self.vip_reasons += usize::from(p.reason.contains("VIP"));
            self.node_reasons += usize::from(p.reason.contains("nodes are available"));
        }
    }
}

/// The benchmark's 10,000 × 50,000 session, once each way (about a minute
/// on the per-node path in release): `cargo test --release -p
/// ringleader-scheduler --test session_index -- --ignored`.
#[test]
#[ignore]
fn full_scale_bench_load_matches_reference() {
    let snapshot = Snapshot { cluster: mixed_cluster(10_000), pending: mixed_jobs(50_000), ..Snapshot::default() };
    assert_same(&snapshot, &SchedulerConf::default(), "mixed 10000x50000");
}
