//! The agent's state machine: one task owns every node's and pod's state
//! and is driven by the store's watch (pods and nodes), child exits,
//! heartbeat ticks and timers (simulated completions, grace periods). It
//! never blocks on the store: writes go to the batching writer.

use crate::config::{AgentConfig, Runtime, VirtualNode};
use crate::hosts::Directory;
use crate::node::{self, Faults};
use crate::pod::{self, PodInfo};
use crate::runtime::{cgroup, eviction, isolate, limits, process, shim, sim};
use crate::sandbox;
use crate::status::{self, Exit};
use crate::telemetry;
use crate::usage;
use crate::writer::{merge, Write};
use crate::{command, AgentError};
use ringleader_api::{configmap_file, time};
use ringleader_store::Cluster;
use ringleader_store::{Event, EventType, ObjectKey, Stored, Watch};
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

struct NodeState {
    vnode: VirtualNode,
    stopped: bool,
    /// Faults written but not yet seen back in the node's status.
    faults_sent: Option<Faults>,
    /// Faults injected by the operator, as last seen in the Node.
    injected: Faults,
    /// Devices discovery found unhealthy.
    detected: Vec<u32>,
}

pub(crate) enum PodState {
    /// Released to start on a stopped node: starts (from this latest
    /// object) when the node is started again.
    Waiting(Box<Value>),
    /// A process group, or a simulated pod (`None`).
    Running { pgid: Option<i32> },
    /// SIGTERM sent (a container: asked to stop); the object is deleted
    /// once the process is gone.
    Terminating { pgid: Option<i32> },
    /// Its node was stopped under it; settled when the node comes back.
    Lost { deleting: bool },
    /// Its end is written; kept until the object is deleted so that a stale
    /// event never starts it twice.
    Finished { delete_sent: bool },
}

pub(crate) struct PodEntry {
    pub(crate) uid: String,
    pub(crate) node: String,
    /// Devices it holds while its processes may run.
    devices: Vec<u32>,
    /// It holds shares of those devices (vNPUs, GPU shares), not the devices whole.
    shares: bool,
    pub(crate) container: status::Containers,
    pub(crate) started: Option<f64>,
    pub(crate) state: PodState,
    /// Runs under its shim: it outlives this agent.
    detached: bool,
    /// Files it takes from ConfigMaps: pod path → (ConfigMap, key).
    config_files: BTreeMap<String, (String, String)>,
    /// Its ephemeral-storage limits and sandbox, when it has limits.
    storage: Option<(eviction::StorageLimits, std::path::PathBuf)>,
    /// Its container, when the CRI runtime runs it.
    pub(crate) cri: Option<crate::cri_runtime::CriPod>,
}

pub(crate) enum TimerAction {
    /// A simulated pod is done at this Unix time.
    SimDone { key: ObjectKey, uid: String, at: f64 },
    /// The grace period of a deleted pod is over.
    GraceKill { key: ObjectKey, uid: String },
    /// A deleted pod's sandbox and log have been kept long enough; its log
    /// stays while `owner` (its job: key and uid) does.
    RemoveSandbox { key: ObjectKey, node: String, owner: Option<(ObjectKey, String)> },
    /// A pod whose image pull failed shows `ImagePullBackOff` while it waits.
    CriBackOff { key: ObjectKey, uid: String },
    /// A pod whose image pull failed tries again.
    CriRetry { key: ObjectKey, uid: String },
}

/// A child process ended.
pub(crate) struct Exited {
    key: ObjectKey,
    uid: String,
    status: std::io::Result<process::Ended>,
    /// The OOM killer killed a process of the pod.
    oom_killed: bool,
}

/// What the initial lists and watches give the loop.
pub(crate) struct Feeds {
    pub nodes: Vec<Stored>,
    pub pods: Vec<Stored>,
    pub node_watch: Watch,
    pub pod_watch: Watch,
    pub config_watch: Watch,
}

pub(crate) struct Agent {
    pub(crate) cfg: AgentConfig,
    nodes: HashMap<String, NodeState>,
    /// Address of every node in the cluster (ours and others'), for hosts files.
    addresses: HashMap<String, String>,
    pub(crate) pods: HashMap<ObjectKey, PodEntry>,
    /// The ServiceAccount tokens mounted into running pods, renewed on heartbeats.
    sa_mounts: HashMap<ObjectKey, crate::service_account::Mounted>,
    directory: Directory,
    /// Last hosts-file text written per namespace.
    hosts_written: HashMap<String, String>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    timer_actions: HashMap<u64, TimerAction>,
    next_timer: u64,
    writes: mpsc::UnboundedSender<Write>,
    exits_tx: mpsc::UnboundedSender<Exited>,
    /// Read (never written) for the ConfigMaps a starting pod takes files from.
    pub(crate) store: Arc<dyn Cluster>,
    /// Pod sandboxes, when the process runtime uses them.
    sandboxing: Option<isolate::Sandboxing>,
    /// The program run as each pod's shim (`None`: pods are the agent's children).
    shim: Option<std::path::PathBuf>,
    /// Pods' cgroups, when sandboxes and cgroups work here.
    cgroups: Option<cgroup::Cgroups>,
    /// CPU and memory last published per running pod, and per node.
    usage_pods: HashMap<ObjectKey, usage::Published>,
    usage_nodes: HashMap<String, usage::Published>,
    /// CPU of each node's pods since this agent started (pods that ended included).
    node_cpu_nanos: HashMap<String, u64>,
    units: usage::Units,
    started_at: f64,
    /// Device figures last written per node, and readings since.
    telemetry_sent: HashMap<String, (Vec<telemetry::DeviceFigures>, u32)>,
    /// The last telemetry read failed (logged once per failure spell).
    telemetry_failing: bool,
    /// The CRI runtime, its news of containers, and the containers a
    /// previous agent left (by pod UID), when pods run as containers.
    pub(crate) cri: Option<crate::cri_runtime::CriRuntime>,
}

fn uid_of(obj: &Value) -> &str {
    obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

impl Agent {
    pub(crate) fn new(
        cfg: AgentConfig,
        writes: mpsc::UnboundedSender<Write>,
        exits_tx: mpsc::UnboundedSender<Exited>,
        store: Arc<dyn Cluster>,
    ) -> Agent {
        let nodes = cfg
            .nodes
            .iter()
            .map(|n| {
                let state = NodeState {
                    vnode: n.clone(),
                    stopped: false,
                    faults_sent: None,
                    injected: Faults::default(),
                    detected: Vec::new(),
                };
                (n.name.clone(), state)
            })
            .collect();
        let addresses = cfg.nodes.iter().map(|n| (n.name.clone(), n.address.clone())).collect();
        Agent {
            cfg,
            nodes,
            addresses,
            pods: HashMap::new(),
            directory: Directory::default(),
            hosts_written: HashMap::new(),
            timers: BinaryHeap::new(),
            timer_actions: HashMap::new(),
            next_timer: 0,
            writes,
            exits_tx,
            store,
            sandboxing: None,
            shim: None,
            cgroups: None,
            usage_pods: HashMap::new(),
            sa_mounts: HashMap::new(),
            usage_nodes: HashMap::new(),
            node_cpu_nanos: HashMap::new(),
            units: usage::Units::host(),
            started_at: time::now(),
            telemetry_sent: HashMap::new(),
            telemetry_failing: false,
            cri: None,
        }
    }

    /// With pods run as containers of this CRI runtime.
    pub(crate) fn with_cri(mut self, cri: Option<crate::cri_runtime::CriRuntime>) -> Agent {
        self.cri = cri;
        self
    }

    /// With pods started in sandboxes (`None`: plain process groups).
    pub(crate) fn with_sandboxing(mut self, sandboxing: Option<isolate::Sandboxing>) -> Agent {
        if sandboxing.is_some() {
            self.cgroups = limits::cgroups(&self.cfg.pod_limits);
        }
        self.sandboxing = sandboxing;
        self
    }

    /// With pods started under shims run from `program` (`None`: as the
    /// agent's children).
    pub(crate) fn with_shim(mut self, program: Option<std::path::PathBuf>) -> Agent {
        self.shim = program;
        self
    }

    /// Whether the object at `key` with `uid` is in the store (an error
    /// reading it counts as yes: nothing is removed on a guess).
    fn exists(&self, key: &ObjectKey, uid: &str) -> bool {
        match self.store.get(key) {
            Ok(found) => found.is_some_and(|o| o.object.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid)),
            Err(_) => true,
        }
    }

    /// The files a pod takes from ConfigMaps, read as the pod starts (the
    /// manager wrote them before it released the pod); a missing one stops
    /// the start, as `CreateContainerConfigError` does in Kubernetes.
    pub(crate) fn config_files(
        &self,
        ns: &str,
        obj: &Value,
    ) -> Result<BTreeMap<String, String>, (&'static str, String)> {
        let wanted = pod::config_files(obj).map_err(|m| ("InvalidPod", m))?;
        let mut out = BTreeMap::new();
        let ns = if ns.is_empty() { "default" } else { ns };
        for (path, (map, key)) in wanted {
            let stored = self
                .store
                .get(&ObjectKey::new("v1", "ConfigMap", ns, &map))
                .map_err(|e| ("CreateContainerConfigError", format!("reading configmap {ns}/{map}: {e}")))?;
            // A large file is gzip-packed in `binaryData` (`configmap_file`).
            let what = match stored.as_ref().map(|cm| configmap_file::read(&cm.object, &key)) {
                Some(Ok(Some(text))) => {
                    out.insert(path, text);
                    continue;
                }
                None => "not found".to_string(),
                Some(Err(e)) => e.to_string(),
                Some(Ok(None)) => format!("has no key {key:?}"),
            };
            return Err(("CreateContainerConfigError", format!("{path}: configmap {ns}/{map} {what}")));
        }
        Ok(out)
    }

    pub(crate) fn write(&self, w: Write) {
        // The writer only stops after the agent does; a failed send means
        // the agent is shutting down and the write no longer matters.
        let _ = self.writes.send(w);
    }

    /// The containers of a pod as this agent's runtime reports them.
    pub(crate) fn containers(&self, obj: &Value) -> status::Containers {
        let runtime = match self.cfg.runtime {
            Runtime::Process => "process",
            Runtime::Simulated => "simulated",
            Runtime::Cri => "containerd",
        };
        status::Containers::of(obj, runtime)
    }

    pub(crate) fn write_pod(&self, key: &ObjectKey, uid: &str, patch: Value) {
        self.write(Write::Pod { key: key.clone(), uid: uid.to_string(), patch });
    }

    pub(crate) fn delete_pod(&self, key: &ObjectKey, uid: &str) {
        self.write(Write::DeletePod { key: key.clone(), uid: uid.to_string() });
    }

    pub(crate) fn add_timer(&mut self, after: Duration, action: TimerAction) {
        let id = self.next_timer;
        self.next_timer += 1;
        self.timers.push(Reverse((Instant::now() + after, id)));
        self.timer_actions.insert(id, action);
    }

    /// Processes the initial lists: node states first (stopped, addresses),
    /// then every pod, applying the restart rule to pods left Running.
    pub(crate) fn initial(&mut self, nodes: &[Stored], pods: &[Stored]) {
        for n in nodes {
            self.on_node(&n.key.name, &n.object);
        }
        for p in pods {
            self.directory.upsert(&PodInfo::of(&p.key, &p.object));
        }
        if self.cfg.runtime == Runtime::Process {
            // Before any pod starts: a replacement of the same name would
            // take its predecessor's state directory.
            self.stop_orphans(pods);
        }
        for p in pods {
            let info = PodInfo::of(&p.key, &p.object);
            self.reconcile(&info, &p.object, true);
        }
    }

    /// Stops the pods a previous agent left running whose objects are gone,
    /// bound elsewhere or ended by the control plane now (SIGTERM, SIGKILL
    /// after the default grace period), and forgets the state of those
    /// that ended.
    fn stop_orphans(&self, pods: &[Stored]) {
        let live: std::collections::HashSet<(&str, &str)> = pods
            .iter()
            .filter(|p| !PodInfo::of(&p.key, &p.object).is_terminal())
            .filter_map(|p| Some((p.object.pointer("/spec/nodeName")?.as_str()?, uid_of(&p.object))))
            .collect();
        for node in self.nodes.keys() {
            let Ok(dirs) = std::fs::read_dir(shim::states_dir(&self.cfg.data_dir, node)) else { continue };
            for dir in dirs.flatten().map(|d| d.path()) {
                let Some(record) = shim::read_any_pod(&dir) else { continue };
                if live.contains(&(node.as_str(), record.uid.as_str())) {
                    continue;
                }
                if !record.shim.alive() || !record.pod.alive() {
                    let _ = std::fs::remove_dir_all(&dir);
                    continue;
                }
                let pgid = record.pod.pid;
                tracing::info!(pgid, state = %dir.display(), "stopping a pod whose object is gone or bound elsewhere");
                process::signal_group(pgid, libc::SIGTERM);
                let grace = self.cfg.default_grace_period;
                tokio::spawn(async move {
                    let deadline = Instant::now() + grace;
                    while record.pod.alive() && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    if record.pod.alive() {
                        process::signal_group(pgid, libc::SIGKILL);
                    }
                    for _ in 0..50 {
                        if !record.shim.alive() {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    // A replacement of the same name may have the directory now.
                    if shim::read_any_pod(&dir).is_some_and(|r| r.uid == record.uid) {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                });
            }
        }
    }

    /// Runs until `stop` says so (or the store's watch ends); on the way out
    /// kills the pods attached to it (pods under shims run on).
    pub(crate) async fn run(
        mut self,
        mut node_watch: Watch,
        mut pod_watch: Watch,
        mut config_watch: Watch,
        mut exits: mpsc::UnboundedReceiver<Exited>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), AgentError> {
        let mut heartbeat = tokio::time::interval(self.cfg.heartbeat_interval);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Registration already heartbeated: skip the immediate first tick.
        heartbeat.tick().await;
        let mut usage_tick = tokio::time::interval(usage_interval(self.cfg.heartbeat_interval));
        usage_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut detected = self.cfg.detected_faults.clone();
        if let Some(d) = &mut detected {
            let now = d.borrow_and_update().clone();
            self.on_detected(&now);
        }
        let mut readings = self.cfg.device_telemetry.clone();
        let result = loop {
            let next = self.timers.peek().map(|Reverse((at, _))| *at);
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break Ok(());
                    }
                }
                ev = pod_watch.events.recv() => match ev {
                    Some(ev) => {
                        self.on_pod_event(ev);
                        // Drain what is already queued before looking at timers again.
                        for _ in 0..1024 {
                            match pod_watch.events.try_recv() {
                                Ok(ev) => self.on_pod_event(ev),
                                Err(_) => break,
                            }
                        }
                    }
                    None => break Err(AgentError::WatchClosed("pods")),
                },
                ev = node_watch.events.recv() => match ev {
                    Some(ev) => self.on_node_event(ev),
                    None => break Err(AgentError::WatchClosed("nodes")),
                },
                ev = config_watch.events.recv() => match ev {
                    Some(ev) => self.on_config_map(&ev),
                    None => break Err(AgentError::WatchClosed("configmaps")),
                },
                Some(exit) = exits.recv() => self.on_exit(exit),
                Some(news) = crate::cri_runtime::next_news(&mut self.cri) => self.on_cri_news(news),
                Some(now) = next_detected(&mut detected) => self.on_detected(&now),
                _ = heartbeat.tick() => {
                    self.heartbeat();
                    self.renew_service_account_tokens();
                }
                _ = usage_tick.tick() => {
                    self.sample_usage();
                    self.evict_over_storage();
                    crate::cri_runtime::collect_images(self.cri.as_ref(), self.cfg.image_gc_thresholds);
                }
                Some(reading) = next_reading(&mut readings) => self.on_telemetry(reading),
                _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => self.fire_timers(),
            }
        };
        self.shutdown();
        result
    }

    fn shutdown(&mut self) {
        // A pod under its shim runs on, for the next agent to adopt (its
        // object stays Running). One attached to the agent cannot outlive
        // it: nobody would reap it or report its end; the next agent
        // applies the restart rule to it.
        let (mut killed, mut kept) = (0, 0);
        for e in self.pods.values() {
            if e.cri.is_some() && matches!(e.state, PodState::Running { .. } | PodState::Terminating { .. }) {
                // Containers belong to the runtime: they run on.
                kept += 1;
                continue;
            }
            if let PodState::Running { pgid: Some(p) } | PodState::Terminating { pgid: Some(p) } = e.state {
                if e.detached {
                    kept += 1;
                } else {
                    process::signal_group(p, libc::SIGKILL);
                    killed += 1;
                }
            }
        }
        if killed + kept > 0 {
            tracing::info!(killed, kept, "agent stopping: pods under their shims run on, others are killed");
        }
    }

    // ----- nodes -----

    fn heartbeat(&self) {
        let now = time::now();
        for (name, n) in &self.nodes {
            if !n.stopped {
                self.write(Write::Node { key: node::node_key(name), patch: node::heartbeat_patch(now) });
            }
        }
    }

    /// Publishes the CPU and memory of every running pod (its processes'
    /// from `/proc`, its containers' from the CRI runtime) and their sum
    /// per node; a pod or node is written only when its figures moved, so
    /// idle pods cost no writes.
    fn sample_usage(&mut self) {
        // Process pods are read here; containers come measured by the runtime.
        let (procs, containers) = match (self.cfg.runtime, &self.cri) {
            (Runtime::Process, _) => (Some(usage::ProcTree::new(usage::proc_table(Path::new("/proc")))), None),
            (Runtime::Cri, Some(cri)) => (None, Some(cri.stats.by_uid())),
            _ => return,
        };
        let now = time::now();
        let mut writes = Vec::new();
        let mut node_memory: HashMap<&str, u64> = HashMap::new();
        let mut live: Vec<&ObjectKey> = Vec::new();
        for (key, e) in &self.pods {
            let PodState::Running { pgid } = e.state else { continue };
            let u = match (&procs, &containers, pgid) {
                (Some(procs), _, Some(pgid)) => procs.group_usage(pgid, self.units),
                (_, Some(by_uid), _) => match by_uid.get(&e.uid) {
                    Some(u) => *u,
                    None => continue,
                },
                _ => continue,
            };
            live.push(key);
            let prev = self.usage_pods.get(key);
            let cpu = self.node_cpu_nanos.entry(e.node.clone()).or_default();
            *cpu = cpu.saturating_add(u.cpu_nanos.saturating_sub(prev.map_or(0, |p| p.usage.cpu_nanos)));
            let memory = node_memory.entry(e.node.as_str()).or_default();
            *memory = memory.saturating_add(u.memory_bytes);
            if prev.is_none_or(|p| p.stale(u)) {
                let next = usage::Published::next(prev, e.started.unwrap_or(now), u, now);
                writes.push(Write::Pod { key: key.clone(), uid: e.uid.clone(), patch: next.pod_patch() });
                self.usage_pods.insert(key.clone(), next);
            }
        }
        let live: std::collections::HashSet<ObjectKey> = live.into_iter().cloned().collect();
        self.usage_pods.retain(|k, _| live.contains(k));
        for (name, n) in &self.nodes {
            if n.stopped {
                continue;
            }
            let u = usage::Usage {
                cpu_nanos: self.node_cpu_nanos.get(name).copied().unwrap_or(0),
                memory_bytes: node_memory.get(name.as_str()).copied().unwrap_or(0),
            };
            let prev = self.usage_nodes.get(name);
            if prev.is_none_or(|p| p.stale(u)) {
                let next = usage::Published::next(prev, self.started_at, u, now);
                writes.push(Write::Node { key: node::node_key(name), patch: next.node_patch() });
                self.usage_nodes.insert(name.clone(), next);
            }
        }
        for w in writes {
            self.write(w);
        }
    }

    /// Publishes a device reading on every running node when it moved
    /// enough ([`telemetry::due`]); a failed read removes the figures
    /// published before, which would no longer be true.
    fn on_telemetry(&mut self, reading: telemetry::Reading) {
        let mut writes = Vec::new();
        match &reading.devices {
            Ok(devices) => {
                if std::mem::take(&mut self.telemetry_failing) {
                    tracing::info!(devices = devices.len(), "device telemetry readable again");
                }
                for (name, n) in &self.nodes {
                    if n.stopped {
                        // Started again, it publishes at once.
                        self.telemetry_sent.remove(name);
                        continue;
                    }
                    let sent = self.telemetry_sent.get_mut(name);
                    let (last, rounds) = match &sent {
                        Some((d, r)) => (Some(d.as_slice()), *r),
                        None => (None, 0),
                    };
                    if telemetry::due(last, rounds, devices) {
                        let patch = telemetry::node_patch(Some(devices), reading.at);
                        writes.push(Write::Node { key: node::node_key(name), patch });
                        self.telemetry_sent.insert(name.clone(), (devices.clone(), 0));
                    } else if let Some((_, r)) = sent {
                        *r = r.saturating_add(1);
                    }
                }
            }
            Err(why) => {
                if !std::mem::replace(&mut self.telemetry_failing, true) {
                    tracing::warn!(%why, "device telemetry unreadable; its figures are withdrawn");
                }
                for name in self.telemetry_sent.keys() {
                    let patch = telemetry::node_patch(None, reading.at);
                    writes.push(Write::Node { key: node::node_key(name), patch });
                }
                self.telemetry_sent.clear();
            }
        }
        for w in writes {
            self.write(w);
        }
    }

    fn on_node_event(&mut self, ev: Event) {
        let name = ev.object.key.name.clone();
        if ev.kind == EventType::Deleted {
            let Some(n) = self.nodes.get_mut(&name) else {
                self.addresses.remove(&name);
                return;
            };
            // Like a kubelet, re-register a node deleted from under us.
            n.faults_sent = None;
            let mut obj = node::node_object(&n.vnode);
            if !n.stopped {
                merge(&mut obj, node::heartbeat_patch(time::now()));
            }
            self.write(Write::CreateNode(obj));
            return;
        }
        self.on_node(&name, &ev.object.object);
    }

    fn on_node(&mut self, name: &str, obj: &Value) {
        if !self.nodes.contains_key(name) {
            if let Some(a) = node::address(obj) {
                self.addresses.insert(name.to_string(), a.to_string());
            }
            return;
        }
        let stopped = node::is_stopped(obj);
        let was = self.nodes.get(name).is_some_and(|n| n.stopped);
        if stopped && !was {
            self.stop_node(name);
        } else if !stopped && was {
            self.resume_node(name);
        }
        if stopped {
            return;
        }
        let reported = node::reported_faults(obj);
        let Some(n) = self.nodes.get_mut(name) else { return };
        n.injected = node::injected_faults(obj);
        let desired = node::merged_faults(&n.injected, &n.detected);
        if desired == reported {
            n.faults_sent = None;
        } else if n.faults_sent.as_ref() != Some(&desired) {
            let patch = node::faults_patch(&desired);
            n.faults_sent = Some(desired);
            self.write(Write::Node { key: node::node_key(name), patch });
        }
    }

    /// Discovery's view of device health changed: report it with the
    /// injected faults.
    fn on_detected(&mut self, detected: &BTreeMap<String, Vec<u32>>) {
        let mut writes = Vec::new();
        for (name, n) in &mut self.nodes {
            let now = detected.get(name).cloned().unwrap_or_default();
            if now == n.detected {
                continue;
            }
            tracing::warn!(node = %name, unhealthy = ?now, "device health changed");
            n.detected = now;
            let desired = node::merged_faults(&n.injected, &n.detected);
            if !n.stopped && n.faults_sent.as_ref() != Some(&desired) {
                writes.push(Write::Node { key: node::node_key(name), patch: node::faults_patch(&desired) });
                n.faults_sent = Some(desired);
            }
        }
        for w in writes {
            self.write(w);
        }
    }

    fn stop_node(&mut self, name: &str) {
        if let Some(n) = self.nodes.get_mut(name) {
            n.stopped = true;
        }
        let mut killed = 0;
        for e in self.pods.values_mut().filter(|e| e.node == name) {
            match e.state {
                PodState::Running { pgid } => {
                    if let Some(p) = pgid {
                        process::signal_group(p, libc::SIGKILL);
                        killed += 1;
                    }
                    killed += usize::from(crate::cri_runtime::kill(self.cri.as_ref(), e.cri.as_ref()));
                    e.state = PodState::Lost { deleting: false };
                }
                PodState::Terminating { pgid } => {
                    if let Some(p) = pgid {
                        process::signal_group(p, libc::SIGKILL);
                    }
                    crate::cri_runtime::kill(self.cri.as_ref(), e.cri.as_ref());
                    killed += 1;
                    e.state = PodState::Lost { deleting: true };
                }
                _ => {}
            }
        }
        tracing::info!(node = name, killed, "node stopped: its processes are killed and it stops heartbeating");
    }

    fn resume_node(&mut self, name: &str) {
        let Some(n) = self.nodes.get_mut(name) else { return };
        n.stopped = false;
        let address = n.vnode.address.clone();
        self.write(Write::Node { key: node::node_key(name), patch: node::heartbeat_patch(time::now()) });
        let now = time::now();
        let mut writes = Vec::new();
        for (key, e) in self.pods.iter_mut().filter(|(_, e)| e.node == name) {
            match &mut e.state {
                PodState::Lost { deleting: true } => {
                    writes.push(Write::DeletePod { key: key.clone(), uid: e.uid.clone() });
                    e.state = PodState::Finished { delete_sent: true };
                }
                PodState::Lost { deleting: false } => {
                    let exit = Exit::agent(137, "NodeStopped", "the node was stopped while the pod ran");
                    let patch = status::terminated(&e.container, &address, e.started, now, &exit);
                    writes.push(Write::Pod { key: key.clone(), uid: e.uid.clone(), patch });
                    e.state = PodState::Finished { delete_sent: false };
                }
                _ => {}
            }
        }
        for w in writes {
            self.write(w);
        }
        self.start_waiting(name);
        tracing::info!(node = name, "node started again");
    }

    // ----- pods -----

    fn on_pod_event(&mut self, ev: Event) {
        let key = &ev.object.key;
        let obj = &ev.object.object;
        if ev.kind == EventType::Deleted {
            let uid = uid_of(obj);
            self.directory.remove(&key.namespace, &key.name, uid);
            if self.pods.get(key).is_some_and(|e| e.uid == uid) {
                if let Some(e) = self.pods.remove(key) {
                    forget(&e);
                    crate::cri_runtime::remove(self.cri.as_ref(), e.cri.as_ref());
                    self.forget_state(key, &e);
                    if self.cfg.runtime != Runtime::Simulated {
                        let (key, node, owner) =
                            (key.clone(), e.node.clone(), pod::controller_owner(obj, &key.namespace));
                        let action = TimerAction::RemoveSandbox { key, node, owner };
                        self.add_timer(self.cfg.pod_limits.deleted_retention, action);
                    }
                }
            }
            return;
        }
        let info = PodInfo::of(key, obj);
        let moved = info.pod_ip.is_some() && self.directory.address_of(&info) != info.pod_ip.as_deref();
        self.directory.upsert(&info);
        if moved && self.cfg.pod_network {
            // A peer got its own address: running pods of its namespace learn it.
            let content = self.directory.content(&info.key.namespace, &self.addresses);
            self.refresh_hosts(&info.key.namespace, content);
        }
        self.reconcile(&info, obj, false);
    }

    /// Brings one pod of ours to where its object says it should be.
    pub(crate) fn reconcile(&mut self, info: &PodInfo, obj: &Value, initial: bool) {
        let Some(node) = info.node_name.as_deref().filter(|n| self.nodes.contains_key(*n)) else { return };
        if self.pods.get(&info.key).is_some_and(|e| e.uid != info.uid) {
            // Its predecessor of the same name is gone (we missed nothing:
            // the watch delivers the deletion first), so this is defensive.
            if let Some(e) = self.pods.remove(&info.key) {
                forget(&e);
            }
        }
        let stopped = self.nodes.get(node).is_some_and(|n| n.stopped);
        let Some(entry) = self.pods.get_mut(&info.key) else {
            self.first_sight(info, obj, node, stopped, initial);
            return;
        };
        match &mut entry.state {
            PodState::Waiting(_) | PodState::Lost { deleting: false } if !info.deleting && info.is_terminal() => {
                // The control plane ended it while its node was away (node
                // lifecycle: NodeLost); its verdict stands, nothing starts.
                entry.state = PodState::Finished { delete_sent: false };
            }
            PodState::Running { pgid } if !info.deleting && info.is_terminal() => {
                // Ended by the control plane while we still run it (we were
                // cut off past the not-ready toleration and its devices may
                // already be someone else's): stop it now, keep the verdict.
                if let Some(p) = *pgid {
                    process::signal_group(p, libc::SIGKILL);
                }
                crate::cri_runtime::kill(self.cri.as_ref(), entry.cri.as_ref());
                tracing::warn!(pod = %info.key.name, node, "pod ended by the control plane while running here: killed its processes");
                entry.state = PodState::Finished { delete_sent: false };
            }
            PodState::Waiting(latest) => {
                if info.deleting {
                    entry.state = PodState::Lost { deleting: true };
                } else {
                    **latest = obj.clone();
                }
            }
            PodState::Running { pgid: None } if info.deleting && entry.cri.is_some() => {
                let grace = info.grace(self.cfg.default_grace_period);
                if crate::cri_runtime::stop(self.cri.as_ref(), entry.cri.as_mut(), grace) {
                    entry.state = PodState::Terminating { pgid: None };
                } else {
                    // Never started (its image still pulling): nothing runs.
                    entry.state = PodState::Finished { delete_sent: true };
                    self.delete_pod(&info.key, &info.uid);
                }
            }
            PodState::Running { pgid } if info.deleting => match *pgid {
                Some(p) => {
                    process::signal_group(p, libc::SIGTERM);
                    entry.state = PodState::Terminating { pgid: Some(p) };
                    let grace = info.grace(self.cfg.default_grace_period);
                    let action = TimerAction::GraceKill { key: info.key.clone(), uid: info.uid.clone() };
                    self.add_timer(grace, action);
                }
                None => {
                    entry.state = PodState::Finished { delete_sent: true };
                    self.delete_pod(&info.key, &info.uid);
                }
            },
            PodState::Lost { deleting } => *deleting |= info.deleting,
            PodState::Finished { delete_sent } if info.deleting && !*delete_sent => {
                *delete_sent = true;
                self.delete_pod(&info.key, &info.uid);
            }
            _ => {}
        }
    }

    pub(crate) fn track(&mut self, info: &PodInfo, obj: &Value, node: &str, started: Option<f64>, state: PodState) {
        let entry = PodEntry {
            uid: info.uid.clone(),
            node: node.to_string(),
            devices: pod::devices(obj).unwrap_or_default(),
            shares: pod::holds_share(obj),
            container: self.containers(obj),
            started,
            state,
            detached: false,
            config_files: pod::config_files(obj).unwrap_or_default(),
            storage: sandbox::sandbox_dir(&self.cfg.data_dir, node, &info.key.namespace, &info.key.name)
                .ok()
                .and_then(|dir| Some((eviction::limits_of(obj, &dir)?, dir))),
            cri: None,
        };
        self.pods.insert(info.key.clone(), entry);
    }

    /// A pod of ours the agent has no state for.
    fn first_sight(&mut self, info: &PodInfo, obj: &Value, node: &str, stopped: bool, initial: bool) {
        let was_running = initial && info.is_running();
        // Not only Running ones: a pod started just before its agent died
        // may have lost its Running write.
        if initial && !info.is_terminal() && self.cfg.runtime == Runtime::Cri && self.cri_adopt(info, obj, node) {
            return;
        }
        if initial && !info.is_terminal() && self.cfg.runtime == Runtime::Process {
            if self.adopt_process(info, obj, node, stopped) {
                return;
            }
            if was_running {
                kill_leftover(info, obj);
            }
        }
        if info.deleting {
            if stopped {
                self.track(info, obj, node, None, PodState::Lost { deleting: true });
            } else {
                self.delete_pod(&info.key, &info.uid);
                self.track(info, obj, node, None, PodState::Finished { delete_sent: true });
            }
            return;
        }
        if info.is_terminal() {
            return;
        }
        if info.is_running() {
            // Running without us: only at start, left by a previous agent.
            if !initial {
                return;
            }
            let started = pod::start_time(obj);
            if stopped {
                self.track(info, obj, node, started, PodState::Lost { deleting: false });
                return;
            }
            match self.cfg.runtime {
                Runtime::Process | Runtime::Cri => {
                    let exit = Exit::agent(137, "AgentRestarted", "the agent restarted while the pod ran");
                    let address = self.address_of(node);
                    let patch = status::terminated(&self.containers(obj), &address, started, time::now(), &exit);
                    self.write_pod(&info.key, &info.uid, patch);
                    self.track(info, obj, node, started, PodState::Finished { delete_sent: false });
                }
                Runtime::Simulated => self.adopt_simulated(info, obj, node, started),
            }
            return;
        }
        if !info.start {
            return;
        }
        if stopped {
            self.track(info, obj, node, None, PodState::Waiting(Box::new(obj.clone())));
            return;
        }
        self.start(info, obj, node);
    }

    /// Removes the state a deleted pod's shim kept (its sandbox and log stay).
    fn forget_state(&self, key: &ObjectKey, e: &PodEntry) {
        let Ok(dir) = shim::state_dir(&self.cfg.data_dir, &e.node, &key.namespace, &key.name) else { return };
        if shim::read_any_pod(&dir).is_some_and(|r| r.uid == e.uid) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// Re-attaches to a pod a previous agent started under a shim: still
    /// running, it is watched again (a deleted one then stopped with its
    /// grace period); ended meanwhile, its real exit is reported. False
    /// when it did not run under a shim, or its shim died with no record.
    fn adopt_process(&mut self, info: &PodInfo, obj: &Value, node: &str, stopped: bool) -> bool {
        let Ok(state) = shim::state_dir(&self.cfg.data_dir, node, &info.key.namespace, &info.key.name) else {
            return false;
        };
        let started = pod::start_time(obj);
        match process::adopt(&state, &info.uid, self.sandboxing.as_ref(), self.cgroups.as_ref()) {
            process::Left::Nothing | process::Left::Lost => false,
            process::Left::Ended(ended) => {
                tracing::info!(pod = %info.key, code = ended.exit.code, "pod ended while no agent watched it");
                if info.deleting {
                    self.delete_pod(&info.key, &info.uid);
                    self.track(info, obj, node, started, PodState::Finished { delete_sent: true });
                } else {
                    let address = self.address_of(node);
                    let at = ended.at.unwrap_or_else(time::now);
                    let containers = self.containers(obj);
                    let exit = termination_message(&self.cfg.data_dir, node, &info.key, &containers, ended.exit);
                    let patch = status::terminated(&containers, &address, started, at, &exit);
                    self.write_pod(&info.key, &info.uid, patch);
                    self.track(info, obj, node, started, PodState::Finished { delete_sent: false });
                }
                true
            }
            process::Left::Running(running) => {
                let Some(pgid) = running.id().and_then(|p| i32::try_from(p).ok()) else { return false };
                if stopped {
                    // Its node was stopped while no agent ran: the switch is off.
                    process::signal_group(pgid, libc::SIGKILL);
                    self.track(info, obj, node, started, PodState::Lost { deleting: info.deleting });
                    return true;
                }
                tracing::info!(pod = %info.key, pgid, "adopted the pod a previous agent started");
                let started = match started.filter(|_| info.is_running()) {
                    Some(t) => Some(t),
                    None => {
                        // Its Running write was lost with the agent.
                        let (now, address) = (time::now(), self.address_of(node));
                        let mut annotations = vec![(pod::PID, pgid.to_string())];
                        if let Some(log) = running.log() {
                            annotations.push((pod::LOG_PATH, log.to_string_lossy().into_owned()));
                        }
                        let patch = status::running(&self.containers(obj), &address, now, &annotations);
                        self.write_pod(&info.key, &info.uid, patch);
                        Some(now)
                    }
                };
                self.track(info, obj, node, started, PodState::Running { pgid: Some(pgid) });
                self.watch_exit(info, running);
                if info.deleting {
                    self.reconcile(info, obj, false);
                }
                true
            }
        }
    }

    /// Reports the pod's end once its process (or its shim) says so.
    fn watch_exit(&mut self, info: &PodInfo, mut running: process::Running) {
        if let Some(e) = self.pods.get_mut(&info.key) {
            e.detached = running.detached();
        }
        let tx = self.exits_tx.clone();
        let (key, uid) = (info.key.clone(), info.uid.clone());
        tokio::spawn(async move {
            let status = running.wait().await;
            // Read before the drop, which removes the pod's cgroup.
            let oom_killed = running.oom_killed();
            drop(running);
            let _ = tx.send(Exited { key, uid, status, oom_killed });
        });
    }

    pub(crate) fn address_of(&self, node: &str) -> String {
        self.nodes.get(node).map(|n| n.vnode.address.clone()).unwrap_or_default()
    }

    fn adopt_simulated(&mut self, info: &PodInfo, obj: &Value, node: &str, started: Option<f64>) {
        let now = time::now();
        let started = started.unwrap_or(now);
        match pod::duration(obj) {
            Ok(d) => {
                self.track(info, obj, node, Some(started), PodState::Running { pgid: None });
                if let Some(d) = d {
                    let action = TimerAction::SimDone { key: info.key.clone(), uid: info.uid.clone(), at: started + d };
                    self.add_timer(sim::remaining(now, started, d), action);
                }
            }
            Err(msg) => self.fail_unstarted(info, obj, node, "InvalidPod", msg),
        }
    }

    /// Ends a pod that could not be started, with the reason in its status.
    /// `KUBERNETES_SERVICE_*` for a pod (nothing when pods are not given the API).
    pub(crate) fn api_env(&self) -> Vec<(String, String)> {
        self.cfg.api_access.as_ref().map(crate::service_account::ApiAccess::env).unwrap_or_default()
    }

    /// Writes the pod's ServiceAccount token, the CA and its namespace into
    /// `dir` unless `automountServiceAccountToken` turns that off (on the
    /// pod, else its account), and keeps the token renewed; whether it did.
    /// A pod whose token cannot be had does not start, as the kubelet's
    /// projected volume fails to mount.
    pub(crate) fn mount_service_account(
        &mut self,
        info: &PodInfo,
        obj: &Value,
        dir: &Path,
    ) -> Result<bool, (&'static str, String)> {
        use ringleader_api::kinds::service_account as sa;
        let Some(access) = self.cfg.api_access.clone() else { return Ok(false) };
        let ns = if info.key.namespace.is_empty() { "default" } else { info.key.namespace.as_str() };
        let account = sa::of_pod(obj).to_string();
        let stored = self
            .store
            .get(&ObjectKey::new(sa::API_VERSION, sa::KIND, ns, &account))
            .map_err(|e| ("FailedMount", format!("reading serviceaccount {ns}/{account}: {e}")))?;
        if !sa::automount(obj, stored.as_ref().map(|s| &s.object)) {
            return Ok(false);
        }
        let now = time::now();
        let (token, expires) = access
            .tokens
            .token(ns, &account, &info.key.name, &info.uid, crate::service_account::TOKEN_SECONDS, now)
            .map_err(|m| ("FailedMount", format!("serviceaccount token for {ns}/{account}: {m}")))?;
        crate::service_account::write_dir(dir, &token, &access.ca_pem, ns).map_err(|m| ("SandboxError", m))?;
        let mounted = crate::service_account::Mounted {
            dir: dir.to_path_buf(),
            namespace: ns.to_string(),
            account,
            pod: info.key.name.clone(),
            pod_uid: info.uid.clone(),
            issued: now,
            expires,
        };
        self.sa_mounts.insert(info.key.clone(), mounted);
        Ok(true)
    }

    /// Renews the tokens past 80% of their life; forgets those of pods gone.
    fn renew_service_account_tokens(&mut self) {
        let Some(access) = self.cfg.api_access.clone() else { return };
        let pods = &self.pods;
        self.sa_mounts.retain(|key, m| pods.get(key).is_some_and(|e| e.uid == m.pod_uid));
        let now = time::now();
        for m in self.sa_mounts.values_mut().filter(|m| m.due(now)) {
            let renewed = access
                .tokens
                .token(&m.namespace, &m.account, &m.pod, &m.pod_uid, crate::service_account::TOKEN_SECONDS, now)
                .and_then(|(token, expires)| {
                    crate::service_account::write_dir(&m.dir, &token, &access.ca_pem, &m.namespace).map(|()| expires)
                });
            match renewed {
                Ok(expires) => (m.issued, m.expires) = (now, expires),
                // Tried again next heartbeat; the old token works until it expires.
                Err(e) => {
                    tracing::warn!(pod = %m.pod, namespace = %m.namespace, "renewing the serviceaccount token: {e}")
                }
            }
        }
    }

    pub(crate) fn fail_unstarted(&mut self, info: &PodInfo, obj: &Value, node: &str, reason: &str, message: String) {
        tracing::warn!(pod = %info.key, reason, %message, "pod cannot start");
        let address = self.address_of(node);
        let exit = Exit::agent(128, reason, message);
        let patch = status::terminated(&self.containers(obj), &address, None, time::now(), &exit);
        self.write_pod(&info.key, &info.uid, patch);
        self.track(info, obj, node, None, PodState::Finished { delete_sent: false });
    }

    /// Why this pod may not take its devices: they are not device IDs, or a
    /// pod of ours on the node still holds one whole (the scheduler never
    /// does that, so a pod that does was bound around it; defence in depth).
    /// vNPU pods share their chips with one another: the scheduler counts
    /// the chip's AI cores.
    fn device_conflict(&self, info: &PodInfo, obj: &Value, node: &str) -> Option<(&'static str, String)> {
        let wanted = match pod::devices(obj) {
            Ok(d) => d,
            Err(msg) => return Some(("InvalidDevices", msg)),
        };
        let shares = pod::holds_share(obj);
        self.pods.iter().find_map(|(key, e)| {
            // The cheap tests first: an agent serving thousands of virtual
            // nodes runs this over every pod it has for each pod it starts.
            let holds =
                matches!(e.state, PodState::Running { .. } | PodState::Terminating { .. }) && !(shares && e.shares);
            if !holds || e.node != node || key == &info.key {
                return None;
            }
            let shared: Vec<String> =
                wanted.iter().filter(|d| e.devices.contains(d)).map(ToString::to_string).collect();
            (!shared.is_empty()).then(|| {
                let holder = format!("{}/{}", key.namespace, key.name);
                (
                    "DeviceConflict",
                    format!("device(s) {} of node {node} are held by running pod {holder}", shared.join(",")),
                )
            })
        })
    }

    /// Whether every pod holding one of `obj`'s devices on `node` is being
    /// stopped: a preemption's or a VIP job's victims still exiting. The
    /// pod then waits for them instead of failing.
    fn held_only_by_leaving(&self, info: &PodInfo, obj: &Value, node: &str) -> bool {
        let Ok(wanted) = pod::devices(obj) else { return false };
        let shares = pod::holds_share(obj);
        let holders: Vec<&PodEntry> = self
            .pods
            .iter()
            .filter(|(key, e)| {
                e.node == node
                    && *key != &info.key
                    && matches!(e.state, PodState::Running { .. } | PodState::Terminating { .. })
                    && !(shares && e.shares)
                    && wanted.iter().any(|d| e.devices.contains(d))
            })
            .map(|(_, e)| e)
            .collect();
        !holders.is_empty() && holders.iter().all(|e| matches!(e.state, PodState::Terminating { .. }))
    }

    /// Starts the pods of `node` that waited for devices (or for the node).
    pub(crate) fn start_waiting(&mut self, node: &str) {
        let waiting: Vec<(ObjectKey, Value)> = self
            .pods
            .iter_mut()
            .filter(|(_, e)| e.node == node)
            .filter_map(|(key, e)| match &mut e.state {
                PodState::Waiting(obj) => Some((key.clone(), std::mem::take(&mut **obj))),
                _ => None,
            })
            .collect();
        for (key, obj) in waiting {
            self.pods.remove(&key);
            let info = PodInfo::of(&key, &obj);
            self.reconcile(&info, &obj, false);
        }
    }

    pub(crate) fn start(&mut self, info: &PodInfo, obj: &Value, node: &str) {
        if let Some((reason, message)) = self.device_conflict(info, obj, node) {
            if self.held_only_by_leaving(info, obj, node) {
                tracing::info!(pod = %info.key, node, "waiting for the pods leaving its devices to exit");
                self.track(info, obj, node, None, PodState::Waiting(Box::new(obj.clone())));
                return;
            }
            return self.fail_unstarted(info, obj, node, reason, message);
        }
        let address = self.address_of(node);
        let container = self.containers(obj);
        match self.cfg.runtime {
            Runtime::Simulated => match pod::duration(obj) {
                Ok(d) => {
                    let now = time::now();
                    self.track(info, obj, node, Some(now), PodState::Running { pgid: None });
                    self.write_pod(&info.key, &info.uid, status::running(&container, &address, now, &[]));
                    if let Some(d) = d {
                        let action = TimerAction::SimDone { key: info.key.clone(), uid: info.uid.clone(), at: now + d };
                        self.add_timer(sim::remaining(now, now, d), action);
                    }
                }
                Err(msg) => self.fail_unstarted(info, obj, node, "InvalidPod", msg),
            },
            Runtime::Cri => self.cri_start(info, obj, node),
            Runtime::Process => match self.spawn(info, obj, node, &address) {
                Ok((child, log)) => {
                    let now = time::now();
                    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
                    let mut annotations = vec![(pod::LOG_PATH, log.to_string_lossy().into_owned())];
                    if let Some(p) = pgid {
                        annotations.push((pod::PID, p.to_string()));
                    }
                    self.track(info, obj, node, Some(now), PodState::Running { pgid });
                    self.write_pod(&info.key, &info.uid, status::running(&container, &address, now, &annotations));
                    if let Some(event) = node::image_not_used_event(&info.key, &info.uid, obj, node, now) {
                        self.write(Write::Event(event));
                    }
                    tracing::debug!(pod = %info.key, node, pgid, "pod started");
                    self.watch_exit(info, child);
                }
                Err((reason, message)) => self.fail_unstarted(info, obj, node, reason, message),
            },
        }
    }

    /// Sandbox, files, hosts file, env, command; then the process.
    fn spawn(
        &mut self,
        info: &PodInfo,
        obj: &Value,
        node: &str,
        address: &str,
    ) -> Result<(process::Running, std::path::PathBuf), (&'static str, String)> {
        let invalid = |m: String| ("InvalidPod", m);
        let (ns, name) = (info.key.namespace.as_str(), info.key.name.as_str());
        let container = pod::first_container(obj, &pod::Placement { node, address }).map_err(invalid)?;
        let mut files = pod::files(obj).map_err(invalid)?;
        files.extend(self.config_files(ns, obj)?);
        let dir = sandbox::sandbox_dir(&self.cfg.data_dir, node, ns, name).map_err(invalid)?;
        for path in files.keys() {
            sandbox::in_sandbox(&dir, path).map_err(|e| invalid(format!("annotation {}: {e}", pod::FILES)))?;
        }
        if let Some(w) = &container.working_dir {
            sandbox::in_sandbox(&dir, w).map_err(|e| invalid(format!("spec.containers[0].workingDir: {e}")))?;
        }
        let cwd = sandbox::prepare(&dir, &files, container.working_dir.as_deref()).map_err(|m| ("SandboxError", m))?;
        let hosts = dir.join(sandbox::HOSTS_FILE);
        self.write_hosts(ns, &hosts).map_err(|m| ("SandboxError", m))?;
        let account_dir = dir.join(crate::service_account::sandbox_relative());
        let mounted = self.mount_service_account(info, obj, &account_dir)?;

        // The agent writes at host paths; the pod is told the paths it sees
        // (a sandboxed pod sees its sandbox and the agent's programs at fixed
        // paths its uid can reach, wherever they lie on the host).
        let (pod_dir, program_dir) = match &self.sandboxing {
            Some(s) => (s.view.pod.clone(), s.program_dir_view().or(self.cfg.program_dir.as_deref())),
            None => (dir.clone(), self.cfg.program_dir.as_deref()),
        };
        let seen = |p: &Path| match p.strip_prefix(&dir) {
            Ok(rest) => pod_dir.join(rest),
            Err(_) => p.to_path_buf(),
        };
        let mut env = self.api_env();
        env.extend(crate::device_env::of(obj));
        env.extend(container.env.iter().cloned());
        let mut env = command::expand_env(&env);
        sandbox::rewrite_env(&mut env, &files, &pod_dir);
        if mounted {
            env.push((crate::service_account::DIR_ENV.into(), seen(&account_dir).to_string_lossy().into_owned()));
        }
        let path_env = match program_dir {
            Some(d) => format!("{}:{}", d.display(), self.cfg.path_env),
            None => self.cfg.path_env.clone(),
        };
        let (home, hosts_seen) = (pod_dir.to_string_lossy(), seen(&hosts));
        let hosts_str = hosts_seen.to_string_lossy();
        let agent_env = command::AgentEnv {
            node,
            pod: name,
            namespace: if ns.is_empty() { "default" } else { ns },
            pod_ip: address,
            hosts: &hosts_str,
            home: &home,
            path: &path_env,
            hostname: info.hostname.as_deref().unwrap_or(name),
        };
        let env = command::process_env(&env, &agent_env);
        let argv = command::argv(&container.command, &container.args, &env).map_err(invalid)?;
        let log = dir.join(sandbox::LOG_FILE);
        crate::runtime::log_file::keep_previous(&log);
        let log_max = self.cfg.pod_limits.log_max;
        let mut launch = process::Launch { argv, env, cwd: seen(&cwd), log: log.clone(), log_max };
        let confined = match &self.sandboxing {
            Some(s) => {
                let mut c = isolate::confine(s, obj, &mut launch, &dir, info.hostname.as_deref().unwrap_or(name))?;
                c.cgroup = limits::confine(self.cgroups.as_ref(), &self.cfg.pod_limits, obj, &info.uid, &mut c.spec)?;
                Some(c)
            }
            None => None,
        };
        let target = match &self.shim {
            Some(program) => Some(process::ShimTarget {
                program: program.clone(),
                uid: info.uid.clone(),
                state: shim::state_dir(&self.cfg.data_dir, node, ns, name).map_err(invalid)?,
            }),
            None => None,
        };
        let child = process::spawn_in(&launch, confined, target.as_ref()).map_err(|e| {
            let program = launch.argv.first().map(String::as_str).unwrap_or_default();
            ("StartError", format!("{program}: {e}"))
        })?;
        Ok((child, log))
    }

    /// Writes the namespace's hosts file for a starting pod; when the
    /// namespace's names changed since last time, rewrites the hosts files of
    /// its running pods too (a grown elastic job's new members resolve).
    pub(crate) fn write_hosts(&mut self, namespace: &str, path: &Path) -> Result<(), String> {
        let content = self.directory.content(namespace, &self.addresses);
        sandbox::write_file(path, content.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
        self.refresh_hosts(namespace, content);
        Ok(())
    }

    /// Rewrites the hosts files of the namespace's running pods when its
    /// names changed: a grown elastic job's new members, or a peer that got
    /// its address on a pod network, resolve.
    fn refresh_hosts(&mut self, namespace: &str, content: String) {
        if self.hosts_written.get(namespace) == Some(&content) {
            return;
        }
        for (key, e) in &self.pods {
            let live = matches!(e.state, PodState::Running { pgid: Some(_) } | PodState::Terminating { .. })
                || (e.cri.is_some() && matches!(e.state, PodState::Running { .. }));
            if !live || key.namespace != namespace {
                continue;
            }
            if let Ok(dir) = sandbox::sandbox_dir(&self.cfg.data_dir, &e.node, &key.namespace, &key.name) {
                if let Err(err) = rewrite(e, &dir.join(sandbox::HOSTS_FILE), content.as_bytes()) {
                    tracing::debug!(pod = %key, error = %err, "refreshing a hosts file failed");
                }
            }
        }
        self.hosts_written.insert(namespace.to_string(), content);
    }

    /// Rewrites the files running pods take from this ConfigMap (a deleted
    /// ConfigMap leaves them as they are, as the kubelet does).
    fn on_config_map(&self, ev: &Event) {
        if ev.kind == EventType::Deleted {
            return;
        }
        let key = &ev.object.key;
        let ns_of = |ns: &str| if ns.is_empty() { "default".to_string() } else { ns.to_string() };
        let map_ns = ns_of(&key.namespace);
        // Each key is read (and a packed one unpacked) once, not once per pod.
        let mut read: BTreeMap<&str, Option<String>> = BTreeMap::new();
        for (pod_key, e) in &self.pods {
            let running = matches!(e.state, PodState::Running { pgid: Some(_) })
                || (e.cri.is_some() && matches!(e.state, PodState::Running { .. }));
            if !running || ns_of(&pod_key.namespace) != map_ns {
                continue;
            }
            for (path, (map, data_key)) in &e.config_files {
                if map != &key.name {
                    continue;
                }
                let content = read.entry(data_key.as_str()).or_insert_with(|| {
                    configmap_file::read(&ev.object.object, data_key).unwrap_or_else(|err| {
                        tracing::warn!(configmap = %key, key = data_key, error = %err, "configmap file unreadable");
                        None
                    })
                });
                let Some(content) = content.as_deref() else { continue };
                let Ok(dir) = sandbox::sandbox_dir(&self.cfg.data_dir, &e.node, &pod_key.namespace, &pod_key.name)
                else {
                    continue;
                };
                // A container's files are mounted from `files/` of its sandbox.
                let root = if e.cri.is_some() { dir.join("files") } else { dir };
                let Ok(at) = sandbox::in_sandbox(&root, path) else { continue };
                if std::fs::read(&at).is_ok_and(|old| old == content.as_bytes()) {
                    continue;
                }
                match rewrite(e, &at, content.as_bytes()) {
                    Ok(()) => {
                        tracing::debug!(pod = %pod_key, path, configmap = %key.name, "file updated from its configmap")
                    }
                    Err(err) => {
                        tracing::warn!(pod = %pod_key, path, error = %err, "updating a file from its configmap failed")
                    }
                }
            }
        }
    }

    /// Evicts every running pod past its ephemeral-storage limits: killed,
    /// Failed with reason `Evicted`, and an Event saying why.
    fn evict_over_storage(&mut self) {
        let mut evicted = Vec::new();
        for (key, e) in &self.pods {
            let (PodState::Running { pgid: Some(pgid) }, Some((limits, dir))) = (&e.state, &e.storage) else {
                continue;
            };
            if let Some(message) = eviction::over(limits, dir) {
                evicted.push((key.clone(), *pgid, message));
            }
        }
        for (key, pgid, message) in evicted {
            process::signal_group(pgid, libc::SIGKILL);
            let Some(e) = self.pods.get_mut(&key) else { continue };
            e.state = PodState::Finished { delete_sent: false };
            let now = time::now();
            tracing::warn!(pod = %key, %message, "pod evicted");
            let patch = eviction::status(&e.container, e.started, now, &message);
            let event = eviction::event(&key.namespace, &key.name, &e.uid, &e.node, &message, now);
            let uid = e.uid.clone();
            self.write_pod(&key, &uid, patch);
            self.write(Write::Event(event));
        }
    }

    fn on_exit(&mut self, exit: Exited) {
        let Some(e) = self.pods.get_mut(&exit.key) else { return };
        if e.uid != exit.uid {
            return;
        }
        match e.state {
            PodState::Running { pgid: Some(p) } => {
                // The leader is gone; stragglers of its group go with it.
                process::signal_group(p, libc::SIGKILL);
                let (end, at) = match exit.status {
                    Ok(ended) => {
                        let end = limits::exit_with_oom(ended.exit, exit.oom_killed);
                        let end = with_termination_message(&self.cfg.data_dir, &exit.key, e, end);
                        (end, ended.at.unwrap_or_else(time::now))
                    }
                    Err(err) => {
                        (Exit::agent(128, "Unknown", format!("waiting for the process failed: {err}")), time::now())
                    }
                };
                let patch = status::terminated(&e.container, "", e.started, at, &end);
                e.state = PodState::Finished { delete_sent: false };
                tracing::debug!(pod = %exit.key, code = end.code, "pod process ended");
                self.write_pod(&exit.key, &exit.uid, patch);
            }
            PodState::Terminating { pgid } => {
                if let Some(p) = pgid {
                    process::signal_group(p, libc::SIGKILL);
                }
                e.state = PodState::Finished { delete_sent: true };
                let node = e.node.clone();
                self.delete_pod(&exit.key, &exit.uid);
                // Its devices are free: pods bound to them start now.
                self.start_waiting(&node);
            }
            _ => {}
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((at, id))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            match self.timer_actions.remove(&id) {
                Some(TimerAction::SimDone { key, uid, at }) => {
                    let Some(e) = self.pods.get_mut(&key).filter(|e| e.uid == uid) else { continue };
                    if !matches!(e.state, PodState::Running { pgid: None }) {
                        continue;
                    }
                    let end = Exit::from_wait(Some(0), None);
                    let patch = status::terminated(&e.container, "", e.started, at, &end);
                    e.state = PodState::Finished { delete_sent: false };
                    self.write_pod(&key, &uid, patch);
                }
                Some(TimerAction::GraceKill { key, uid }) => {
                    if let Some(PodEntry { state: PodState::Terminating { pgid: Some(p) }, .. }) =
                        self.pods.get(&key).filter(|e| e.uid == uid)
                    {
                        tracing::info!(pod = %key, "grace period over: SIGKILL");
                        process::signal_group(*p, libc::SIGKILL);
                    }
                }
                Some(TimerAction::RemoveSandbox { key, node, owner }) => {
                    // A new pod of the name runs in that directory now.
                    if self.pods.contains_key(&key) {
                        continue;
                    }
                    let Ok(dir) = sandbox::sandbox_dir(&self.cfg.data_dir, &node, &key.namespace, &key.name) else {
                        continue;
                    };
                    // Its job's runs stay readable until the job is deleted
                    // (a pod of the name started later shows it as its
                    // previous run); the rest of the sandbox goes now.
                    if owner.as_ref().is_some_and(|(k, uid)| self.exists(k, uid)) {
                        limits::strip_to_logs(&dir);
                        let action = TimerAction::RemoveSandbox { key, node, owner };
                        // At least a second between looks (a retention of 0 would spin).
                        let again = self.cfg.pod_limits.deleted_retention.max(std::time::Duration::from_secs(1));
                        self.add_timer(again, action);
                    } else {
                        limits::remove_sandbox(&dir);
                    }
                }
                Some(TimerAction::CriBackOff { key, uid }) => self.cri_back_off(&key, &uid),
                Some(TimerAction::CriRetry { key, uid }) => self.cri_retry(&key, &uid),
                None => {}
            }
        }
    }
}

/// Drops a pod whose object is gone: its process must not live on.
/// The next report of discovery; never, once it has stopped (its last
/// report stands).
async fn next_detected(
    detected: &mut Option<watch::Receiver<BTreeMap<String, Vec<u32>>>>,
) -> Option<BTreeMap<String, Vec<u32>>> {
    let Some(d) = detected else { return std::future::pending().await };
    if d.changed().await.is_err() {
        *detected = None;
        return std::future::pending().await;
    }
    Some(d.borrow_and_update().clone())
}

/// The next device reading; never, once the reader has stopped.
async fn next_reading(
    readings: &mut Option<watch::Receiver<Option<telemetry::Reading>>>,
) -> Option<telemetry::Reading> {
    let Some(r) = readings else { return std::future::pending().await };
    loop {
        if r.changed().await.is_err() {
            *readings = None;
            return std::future::pending().await;
        }
        if let Some(reading) = r.borrow_and_update().clone() {
            return Some(reading);
        }
    }
}

/// How often pods' CPU and memory are sampled: every 10 s as metrics-server
/// scrapes, sooner where heartbeats are faster (a test cluster), never more
/// than once a second.
pub(crate) fn usage_interval(heartbeat: Duration) -> Duration {
    heartbeat.clamp(Duration::from_secs(1), Duration::from_secs(10))
}

fn forget(e: &PodEntry) {
    if let PodState::Running { pgid: Some(p) } | PodState::Terminating { pgid: Some(p) } = e.state {
        process::signal_group(p, libc::SIGKILL);
    }
}

/// Writes a file a running pod reads. A container's files are bind mounted
/// one by one, so it is rewritten in place (a rename would leave the
/// container the old inode); a process pod's is replaced whole, so it never
/// reads half a file.
fn rewrite(e: &PodEntry, path: &Path, content: &[u8]) -> std::io::Result<()> {
    if e.cri.is_some() {
        std::fs::write(path, content)
    } else {
        sandbox::write_file(path, content)
    }
}

/// Kills a process group a previous agent recorded for this pod, if it is
/// still alive and still this pod's.
fn kill_leftover(info: &PodInfo, obj: &Value) {
    let Some(pgid) = pod::annotation(obj, pod::PID).and_then(|p| p.trim().parse::<i32>().ok()) else { return };
    let ns = if info.key.namespace.is_empty() { "default" } else { info.key.namespace.as_str() };
    if process::is_pod_group(pgid, ns, &info.key.name) {
        tracing::info!(pod = %info.key, pgid, "killing the process group a previous agent left behind");
        process::signal_group(pgid, libc::SIGKILL);
    }
}

/// [`termination_message`] of a tracked pod.
fn with_termination_message(data_dir: &Path, key: &ObjectKey, e: &PodEntry, exit: Exit) -> Exit {
    termination_message(data_dir, &e.node, key, &e.container, exit)
}

/// The exit with the message the kubelet would report: the file at the
/// container's `terminationMessagePath`, which a process pod has no `/dev`
/// of its own for, so the path is taken in its sandbox (as its files are),
/// else with `FallbackToLogsOnError` the tail of a failed pod's log.
fn termination_message(
    data_dir: &Path,
    node: &str,
    key: &ObjectKey,
    containers: &status::Containers,
    exit: Exit,
) -> Exit {
    let Ok(dir) = sandbox::sandbox_dir(data_dir, node, &key.namespace, &key.name) else { return exit };
    let Ok(file) = sandbox::in_sandbox(&dir, &containers.termination_path) else { return exit };
    let log = dir.join(sandbox::LOG_FILE);
    match crate::runtime::cri::termination_message(&file, &log, exit.code != 0, containers.fallback_to_logs) {
        Some(message) => Exit { message: Some(message), ..exit },
        None => exit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn containers(path: &str, fallback: bool) -> status::Containers {
        let pod = serde_json::json!({"spec": {"containers": [{"name": "c", "terminationMessagePath": path,
            "terminationMessagePolicy": if fallback { "FallbackToLogsOnError" } else { "File" }}]}});
        status::Containers::of(&pod, "process")
    }

    #[test]
    fn a_process_pods_termination_message_comes_from_its_sandbox_or_its_log() {
        let data = tempfile::tempdir().unwrap();
        let key = ObjectKey::new("v1", "Pod", "default", "p");
        let dir = sandbox::sandbox_dir(data.path(), "n1", "default", "p").unwrap();
        std::fs::create_dir_all(dir.join("dev")).unwrap();
        std::fs::write(dir.join(sandbox::LOG_FILE), "step 1\nboom\n").unwrap();
        let failed = || Exit::from_wait(Some(3), None);

        let plain = termination_message(data.path(), "n1", &key, &containers("/dev/termination-log", false), failed());
        assert_eq!(plain.message, None, "no file and no fallback asked");
        let tail = termination_message(data.path(), "n1", &key, &containers("/dev/termination-log", true), failed());
        assert_eq!(tail.message.as_deref(), Some("step 1\nboom"));
        assert_eq!((tail.code, tail.reason.as_str()), (3, "Error"));

        std::fs::write(dir.join("dev/termination-log"), "disk full").unwrap();
        let file = termination_message(data.path(), "n1", &key, &containers("/dev/termination-log", true), failed());
        assert_eq!(file.message.as_deref(), Some("disk full"), "the file wins over the log");
    }
}
