//! Shared test helpers: loading example jobs, golden files, a small
//! simulated cluster that carries out the controller's actions.
#![allow(dead_code)]

use ringleader_api::document::{load_path, parse_str};
use ringleader_api::{check_documents, Job, Resource};
use ringleader_controller::lifecycle::{Action, DeleteMode, JobState, Observed, ObservedNode, ObservedPod, PodPhase};
use ringleader_controller::placement::{PlacedDevice, PodPlacement};
use ringleader_controller::JobExtras;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The repo's `examples/` directory.
pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn jobs_of(docs: &[ringleader_api::Document]) -> Vec<(Job, JobExtras, Resource)> {
    let reports = check_documents(docs);
    reports
        .into_iter()
        .filter_map(|r| {
            assert!(r.valid, "{} is invalid: {:?}", r.object(), r.errors);
            let res = r.resource?;
            let job = Job::from_resource(&res)?;
            Some((job, JobExtras::from_resource(&res), res))
        })
        .collect()
}

/// The job of an example file.
pub fn example(name: &str) -> (Job, JobExtras) {
    let path = examples().join(name);
    let docs: Vec<_> = load_path(&path).into_iter().flat_map(|r| r.expect("example loads")).collect();
    let (job, extras, _) = jobs_of(&docs).into_iter().next().expect("a job in the example");
    (job, extras)
}

/// The job of an inline YAML document.
pub fn inline(yaml: &str) -> (Job, JobExtras) {
    let docs = parse_str("inline.yaml", yaml).expect("inline YAML parses");
    let (job, extras, _) = jobs_of(&docs).into_iter().next().expect("a job inline");
    (job, extras)
}

/// Compares `actual` with `tests/golden/<name>`; `UPDATE_GOLDEN=1` rewrites it.
pub fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("missing golden {}", path.display()));
    assert!(expected == actual, "golden {name} differs:\n--- expected\n{expected}\n--- actual\n{actual}");
}

/// Placement of a pod with `n` chips starting at `first`, on a node whose
/// addresses derive from `host` (10.0.0.<host>); device IPs 192.168.<host>.<id>.
pub fn placed(node: u32, pod_ip: &str, first: u32, n: u32) -> PodPlacement {
    PodPlacement {
        node: format!("node-{node}"),
        host_ip: format!("10.0.0.{node}"),
        pod_ip: pod_ip.to_string(),
        devices: (first..first + n)
            .map(|id| PlacedDevice {
                id,
                device_ip: Some(format!("192.168.{node}.{}", 100 + id)),
                super_device_id: None,
            })
            .collect(),
        super_pod_id: None,
        port: None,
    }
}

/// A simulated cluster: carries out actions, places pods on free healthy
/// devices, and lets tests move pods and nodes.
pub struct Sim {
    pub state: JobState,
    pub pods: Vec<ObservedPod>,
    pub nodes: Vec<ObservedNode>,
    pub devices_per_node: u32,
    pub now: u64,
    pub log: Vec<String>,
    /// Devices other jobs' pods hold (node, device): neither usable nor free.
    pub foreign: BTreeSet<(String, u32)>,
    /// `hccl.json` of the last `rings-config-<job>` written (the status keeps only its digest).
    pub rank_table: Option<String>,
}

impl Sim {
    pub fn new(job: Job, extras: JobExtras, nodes: u32, devices_per_node: u32) -> Sim {
        Sim {
            state: JobState::new(job, extras),
            pods: Vec::new(),
            nodes: (0..nodes)
                .map(|i| ObservedNode {
                    name: format!("node-{i}"),
                    ready: true,
                    usable_devices: devices_per_node,
                    ..ObservedNode::default()
                })
                .collect(),
            devices_per_node,
            now: 0,
            log: Vec::new(),
            foreign: BTreeSet::new(),
            rank_table: None,
        }
    }

    pub fn observed(&self) -> Observed {
        Observed { pods: self.pods.clone(), nodes: self.nodes.clone() }
    }

    /// One reconcile; actions carried out (graceful deletes leave the pod terminating).
    pub fn tick(&mut self) -> Vec<Action> {
        self.refresh_usable();
        let actions = ringleader_controller::reconcile(&self.state, &self.observed(), self.now);
        self.state.apply(&actions);
        for a in &actions {
            match a {
                Action::CreatePod(plan) => {
                    assert!(
                        !self.pods.iter().any(|p| p.name == plan.name),
                        "created {} while a pod of that name exists",
                        plan.name
                    );
                    self.log.push(format!("{} create {}", self.now, plan.name));
                    self.pods.push(ObservedPod::created(plan, self.state.status.version, self.now));
                }
                Action::DeletePod { name, mode, .. } => {
                    self.log.push(format!("{} delete {name} {mode:?}", self.now));
                    match mode {
                        DeleteMode::Force => self.pods.retain(|p| &p.name != name),
                        DeleteMode::Graceful => {
                            if let Some(p) = self.pods.iter_mut().find(|p| &p.name == name) {
                                p.deleting = true;
                            }
                        }
                    }
                }
                Action::WriteConfigMap(cm)
                    if cm.metadata.name.as_deref().is_some_and(|n| n.starts_with("rings-config-")) =>
                {
                    self.rank_table = cm.data.as_ref().and_then(|d| d.get("hccl.json")).cloned();
                }
                Action::DeleteJob => self.log.push(format!("{} delete job", self.now)),
                Action::BackOff { pod, delay, .. } => self.log.push(format!("{} back-off {pod} {delay}", self.now)),
                Action::MarkPodLost { pod, node } => {
                    self.log.push(format!("{} lost {pod} on {node}", self.now));
                    let now = self.now;
                    if let Some(p) = self.pods.iter_mut().find(|p| &p.name == pod) {
                        p.phase = PodPhase::Failed;
                        p.node_lost = true;
                        p.phase_since = now;
                    }
                }
                _ => {}
            }
        }
        self.refresh_usable();
        actions
    }

    /// Terminating pods finish terminating (except on NotReady nodes, whose kubelet is gone).
    pub fn settle(&mut self) {
        let down: BTreeSet<String> = self.nodes.iter().filter(|n| !n.ready).map(|n| n.name.clone()).collect();
        self.pods.retain(|p| !p.deleting || p.node.as_ref().is_some_and(|n| down.contains(n)));
        self.refresh_usable();
    }

    /// Devices held by live pods.
    pub fn held(&self) -> BTreeSet<(String, u32)> {
        self.pods
            .iter()
            .filter(|p| p.phase.is_live())
            .flat_map(|p| p.devices.iter().map(move |d| (p.node.clone().unwrap_or_default(), *d)))
            .collect()
    }

    fn refresh_usable(&mut self) {
        // Every healthy device no other job holds is usable for this one.
        for n in &mut self.nodes {
            let taken = (0..self.devices_per_node)
                .filter(|d| n.unhealthy_devices.contains(d) || self.foreign.contains(&(n.name.clone(), *d)))
                .count() as u32;
            n.usable_devices = if n.ready { self.devices_per_node.saturating_sub(taken) } else { 0 };
        }
    }

    /// Binds pending unbound pods to free healthy non-isolated devices and starts them.
    pub fn schedule(&mut self) {
        let isolated = self.state.status.isolated.clone();
        let job = self.state.effective_job();
        for i in 0..self.pods.len() {
            if self.pods[i].node.is_some() || self.pods[i].deleting || self.pods[i].phase != PodPhase::Pending {
                continue;
            }
            let want = job
                .roles
                .iter()
                .find(|r| r.name == self.pods[i].role)
                .and_then(|r| r.device.as_ref())
                .map_or(0, |d| d.count);
            let held = self.held();
            let used_nodes: BTreeSet<String> = self.pods.iter().filter_map(|p| p.node.clone()).collect();
            for n in &self.nodes {
                if !n.ready || (want > 0 && used_nodes.contains(&n.name)) {
                    continue;
                }
                let free: Vec<u32> = (0..self.devices_per_node)
                    .filter(|d| {
                        !held.contains(&(n.name.clone(), *d))
                            && !self.foreign.contains(&(n.name.clone(), *d))
                            && !n.unhealthy_devices.contains(d)
                            && !isolated.iter().any(|x| x.node == n.name && x.device == *d)
                    })
                    .collect();
                if (free.len() as u32) < want {
                    continue;
                }
                let devices: Vec<u32> = free.into_iter().take(want as usize).collect();
                let node_no: u32 = n.name.trim_start_matches("node-").parse().unwrap_or(0);
                let p = &mut self.pods[i];
                p.node = Some(n.name.clone());
                p.placement = Some(PodPlacement {
                    node: n.name.clone(),
                    host_ip: format!("10.0.0.{node_no}"),
                    pod_ip: format!("10.1.{node_no}.{i}"),
                    devices: devices
                        .iter()
                        .map(|d| PlacedDevice { id: *d, device_ip: None, super_device_id: None })
                        .collect(),
                    super_pod_id: None,
                    port: None,
                });
                p.devices = devices;
                p.phase = PodPhase::Running;
                p.phase_since = self.now;
                break;
            }
        }
        self.refresh_usable();
    }

    /// Runs reconcile/settle/schedule until nothing changes (bounded).
    pub fn run(&mut self) {
        for _ in 0..20 {
            let before = (self.pods.clone(), self.state.status.clone());
            self.tick();
            self.settle();
            self.schedule();
            if before == (self.pods.clone(), self.state.status.clone()) {
                break;
            }
        }
    }

    /// Whether one more round of reconcile/settle/schedule changes nothing.
    pub fn run_is_quiet(&mut self) -> bool {
        let before = (self.pods.clone(), self.state.status.clone());
        self.tick();
        self.settle();
        self.schedule();
        before == (self.pods.clone(), self.state.status.clone())
    }

    /// Lets every restart back-off run out (time jumps to its end), then runs.
    pub fn after_backoff(&mut self) {
        if let Some(until) = self.state.status.backoff.values().map(|b| b.until).max() {
            self.now = self.now.max(until);
        }
        self.run();
    }

    pub fn pod(&mut self, name: &str) -> &mut ObservedPod {
        let now = self.now;
        let p = self.pods.iter_mut().find(|p| p.name == name).unwrap_or_else(|| panic!("no pod {name}"));
        p.phase_since = now;
        p
    }

    pub fn set_phase(&mut self, name: &str, phase: PodPhase, exit: Option<i32>) {
        let p = self.pod(name);
        p.phase = phase;
        p.exit_code = exit;
    }

    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.pods.iter().map(|p| p.name.clone()).collect();
        v.sort();
        v
    }
}

/// Deleting pods have not gone yet: keep a graceful mode visible in tests.
pub fn deletes(actions: &[Action]) -> Vec<(String, DeleteMode)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePod { name, mode, .. } => Some((name.clone(), *mode)),
            _ => None,
        })
        .collect()
}
