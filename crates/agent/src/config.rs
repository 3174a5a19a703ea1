//! What an agent serves (its virtual nodes) and how it runs pods.

use crate::AgentError;
use ringleader_api::kinds::cluster::NodeNetwork;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

/// Lowest uid (and gid) a pod runs as; pod `n` of the agent gets `base + n`.
pub const DEFAULT_UID_BASE: u32 = 200_000;
/// How many pods of one agent may run at once in sandboxes (distinct uids).
pub const DEFAULT_UID_COUNT: u32 = 65_536;

/// How bound pods are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Runtime {
    /// Each pod is a real process (group) in a sandbox directory.
    #[default]
    Process,
    /// No process: a pod is Running at once and Succeeds after its
    /// `ringleader.io/duration` annotation (seconds); without one it runs
    /// until deleted.
    Simulated,
    /// Each pod is a container of a CRI runtime (containerd), from its image.
    Cri,
}

/// Where kubelet finds containerd by default.
pub const DEFAULT_CRI_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// One node the agent serves. Many can share one machine: each has its own
/// loopback address, hardware profile and sandbox directory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VirtualNode {
    /// Node name (`metadata.name` of the Node object).
    pub name: String,
    /// Built-in hardware profile (`ringleader profiles` lists them); empty
    /// when the hardware is given as `topology_text` or `npu_smi_text`.
    pub profile: String,
    /// `nvidia-smi topo -m` output describing the node's GPUs (`--detect`).
    pub topology_text: Option<String>,
    /// `npu-smi info` output describing the node's NPUs (`--detect`).
    pub npu_smi_text: Option<String>,
    /// Address pods on this node get as `podIP` / `hostIP`, e.g. `127.0.1.3`.
    pub address: String,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Position in the network (ToR, spine, SuperPoD).
    pub network: NodeNetwork,
}

impl VirtualNode {
    /// A node with no labels and no network position.
    pub fn new(name: &str, profile: &str, address: &str) -> VirtualNode {
        VirtualNode {
            name: name.to_string(),
            profile: profile.to_string(),
            address: address.to_string(),
            ..Default::default()
        }
    }

    /// `count` nodes `<prefix>-0` … `<prefix>-<count-1>` of one profile, with
    /// addresses [`loopback_address`]`(first_address_index + i)`.
    pub fn numbered(prefix: &str, profile: &str, count: usize, first_address_index: u32) -> Vec<VirtualNode> {
        (0..count)
            .map(|i| {
                let index = first_address_index.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
                VirtualNode::new(&format!("{prefix}-{i}"), profile, &loopback_address(index))
            })
            .collect()
    }

    /// With a label added.
    pub fn with_label(mut self, key: &str, value: &str) -> VirtualNode {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// With a network position.
    pub fn with_network(mut self, network: NodeNetwork) -> VirtualNode {
        self.network = network;
        self
    }

    /// With its hardware stated as `hardware` (replacing any other statement of it).
    pub fn with_hardware(mut self, hardware: Hardware) -> VirtualNode {
        (self.profile, self.topology_text, self.npu_smi_text) = match hardware {
            Hardware::Profile(p) => (p, None, None),
            Hardware::TopologyText(t) => (String::new(), Some(t), None),
            Hardware::NpuSmiText(t) => (String::new(), None, Some(t)),
        };
        self
    }

    /// Exactly one statement of the hardware, and a usable one: a built-in
    /// profile, or tool output the scheduler's parsers accept.
    fn validate_hardware(&self, i: usize) -> Result<(), AgentError> {
        use ringleader_topology::parse::{npu_smi, nvidia_smi};
        let bad = |m: String| Err(AgentError::Config(m));
        match (self.profile.as_str(), &self.topology_text, &self.npu_smi_text) {
            ("", None, None) => bad(format!("nodes[{i}].profile: required (or topologyText / npuSmiText)")),
            (p, None, None) => match ringleader_topology::profiles::builtin(p) {
                Some(_) => Ok(()),
                None => {
                    let known = ringleader_topology::profiles::builtin_names().join(", ");
                    bad(format!("nodes[{i}].profile: unknown profile {p:?} (built-in: {known})"))
                }
            },
            ("", Some(text), None) => {
                let speeds = ringleader_topology::LinkSpeeds::default();
                match nvidia_smi::profile_from_topo(&self.name, text, speeds, "NVIDIA GPU") {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        bad(format!("nodes[{i}].topologyText: not `nvidia-smi topo -m` output the parser accepts: {e}"))
                    }
                }
            }
            ("", None, Some(text)) => {
                match npu_smi::parse_info(text).and_then(|info| npu_smi::profile_from_info(&info)) {
                    Ok(_) => Ok(()),
                    Err(e) => bad(format!("nodes[{i}].npuSmiText: not `npu-smi info` output the parser accepts: {e}")),
                }
            }
            _ => bad(format!("nodes[{i}]: give exactly one of profile, topologyText or npuSmiText")),
        }
    }
}

/// How a node's hardware is stated in its Node object (`spec.profile`,
/// `spec.topologyText` or `spec.npuSmiText`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hardware {
    /// A built-in profile name.
    Profile(String),
    /// `nvidia-smi topo -m` output.
    TopologyText(String),
    /// `npu-smi info` output.
    NpuSmiText(String),
}

/// The `n`-th virtual-node address: `127.0.1.n` for 1 ≤ n ≤ 254, then on
/// through `127.0.2.1` … so that thousands of nodes stay inside 127/8 (all
/// loopback on Linux) and never use a `.0` or `.255` host octet.
pub fn loopback_address(n: u32) -> String {
    let i = n.max(1) - 1;
    let fourth = i % 254 + 1;
    let block = i / 254 + 1;
    let third = block % 256;
    let second = (block / 256) % 256;
    format!("127.{second}.{third}.{fourth}")
}

/// Whether pods run in sandboxes (mount, PID, IPC and UTS namespaces, an
/// unprivileged user; `docs/sandbox.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Sandboxes where they work here; otherwise plain process groups, with
    /// a warning at start (the one-process `up` and `demo`).
    #[default]
    Auto,
    /// Sandboxes or no start: `start` fails naming `--unsafe-process-runtime`.
    Required,
    /// Plain process groups (`--unsafe-process-runtime`).
    Unsafe,
}

/// Everything the agent needs to start.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Data directory; sandboxes live under `<data_dir>/nodes/<node>/pods/`.
    pub data_dir: PathBuf,
    /// The nodes this agent serves.
    pub nodes: Vec<VirtualNode>,
    /// Process or simulated runtime.
    pub runtime: Runtime,
    /// How often each running node reports `status.lastHeartbeat`.
    pub heartbeat_interval: Duration,
    /// How long status writes are collected before they go to the store in
    /// one transaction.
    pub flush_interval: Duration,
    /// Grace period between SIGTERM and SIGKILL when a deleted pod does not
    /// say (`metadata.deletionGracePeriodSeconds`).
    pub default_grace_period: Duration,
    /// `PATH` given to pod processes (the container env may override it),
    /// after [`AgentConfig::program_dir`].
    pub path_env: String,
    /// The agent's own program directory (pods run `ringleader probe`): first
    /// on the pods' `PATH`. Sandboxed pods see it read-only at a fixed path
    /// (`/run/ringleader/bin`), so it works from a directory the pods' uids
    /// cannot enter; others at its own path.
    pub program_dir: Option<PathBuf>,
    /// Where a standalone agent serves its pods' logs (written into each
    /// node's `status.agentEndpoint` for the API server to proxy to);
    /// `None` inside `up`, where the server reads the sandboxes itself.
    pub endpoint: Option<ringleader_api::kinds::cluster::AgentEndpoint>,
    /// Devices found unhealthy by discovery (`--detect`), by node name, as
    /// they change; reported with the injected faults.
    pub detected_faults: Option<tokio::sync::watch::Receiver<BTreeMap<String, Vec<u32>>>>,
    /// Readings of the machine's detected devices (`--detect`,
    /// [`crate::telemetry::spawn`]), published on every node served;
    /// `None` (virtual nodes): no figures are published.
    pub device_telemetry: Option<tokio::sync::watch::Receiver<Option<crate::telemetry::figures::Reading>>>,
    /// Pod sandboxes (process runtime only).
    pub isolation: Isolation,
    /// Paths hidden from sandboxed pods besides the data dir (a kubeconfig
    /// or token file kept elsewhere).
    pub hidden_paths: Vec<PathBuf>,
    /// The program that builds a sandbox when run with
    /// `runtime::isolate::INIT_ARG` (it calls
    /// `runtime::pod_init::run_if_invoked` first in `main`); `None`: this
    /// program.
    pub init_program: Option<PathBuf>,
    /// Sandboxed pods run as uid and gid `pod_uid_base + n`, n below
    /// `pod_uid_count`, one per running pod.
    pub pod_uid_base: u32,
    /// How many uids from `pod_uid_base` are the agent's.
    pub pod_uid_count: u32,
    /// Limits on every pod (pids, `/tmp`, log size).
    pub pod_limits: crate::runtime::node_limits::NodeLimits,
    /// The CRI runtime's socket ([`Runtime::Cri`]).
    pub cri_endpoint: String,
    /// Where containers' `hostPath` volumes may lie (empty: anywhere but
    /// the host's system directories and the agent's own files).
    pub allowed_host_paths: Vec<PathBuf>,
    /// Image garbage collection (CRI): past `.0` percent of the image
    /// filesystem used, unused images go until `.1` percent (kubelet's
    /// `--image-gc-high-threshold` / `--image-gc-low-threshold`, 85 / 80).
    pub image_gc_thresholds: (u8, u8),
    /// Containers get a network namespace and an address of their own on
    /// the runtime's pod network (CNI), unless `hostNetwork: true`; false:
    /// every pod shares its node's network, as process pods do.
    pub pod_network: bool,
    /// Containers may share the node's PID and IPC namespaces (`hostPID`,
    /// `hostIPC`): a container seeing the node's processes could signal
    /// them, the agent's included, so only where the operator allows it.
    pub allow_host_namespaces: bool,
    /// Where CDI specs are: NVIDIA GPUs one declares go to containers as
    /// CDI devices (`nvidia.com/gpu=N`), others as device nodes.
    pub cdi_spec_dirs: Vec<PathBuf>,
    /// Where the node's device files are (`/dev`; tests use a directory of
    /// their own): a container gets those of its chips at `/dev/<name>`.
    pub device_dir: PathBuf,
    /// How pods reach the API as their ServiceAccount (`None`: no token is
    /// mounted and no `KUBERNETES_SERVICE_*` is set).
    pub api_access: Option<crate::service_account::ApiAccess>,
}

impl AgentConfig {
    /// Defaults: process runtime, 10 s heartbeats, 25 ms write batches, 30 s
    /// grace, the agent's own `PATH`, sandboxes where they work
    /// ([`Isolation::Auto`]) with pods from uid 200000.
    pub fn new(data_dir: impl Into<PathBuf>, nodes: Vec<VirtualNode>) -> AgentConfig {
        AgentConfig {
            data_dir: data_dir.into(),
            nodes,
            runtime: Runtime::Process,
            heartbeat_interval: Duration::from_secs(10),
            flush_interval: Duration::from_millis(25),
            default_grace_period: Duration::from_secs(30),
            path_env: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_string()),
            program_dir: None,
            endpoint: None,
            detected_faults: None,
            device_telemetry: None,
            isolation: Isolation::Auto,
            hidden_paths: Vec::new(),
            init_program: None,
            pod_uid_base: DEFAULT_UID_BASE,
            pod_uid_count: DEFAULT_UID_COUNT,
            pod_limits: crate::runtime::node_limits::NodeLimits::default(),
            cri_endpoint: DEFAULT_CRI_ENDPOINT.to_string(),
            allowed_host_paths: Vec::new(),
            image_gc_thresholds: (85, 80),
            pod_network: false,
            allow_host_namespaces: false,
            cdi_spec_dirs: crate::runtime::cdi::default_spec_dirs(),
            device_dir: PathBuf::from("/dev"),
            api_access: None,
        }
    }

    /// Pods run as containers of the CRI runtime at `endpoint`.
    pub fn with_cri(mut self, endpoint: impl Into<String>) -> AgentConfig {
        self.runtime = Runtime::Cri;
        self.cri_endpoint = endpoint.into();
        self
    }

    /// With another sandboxing choice.
    pub fn with_isolation(mut self, isolation: Isolation) -> AgentConfig {
        self.isolation = isolation;
        self
    }

    /// With another runtime.
    pub fn with_runtime(mut self, runtime: Runtime) -> AgentConfig {
        self.runtime = runtime;
        self
    }

    /// With another heartbeat interval.
    pub fn with_heartbeat_interval(mut self, interval: Duration) -> AgentConfig {
        self.heartbeat_interval = interval;
        self
    }

    /// Names unique and usable as directory names, hardware a built-in
    /// profile or parseable tool output,
    /// addresses present, intervals non-zero.
    pub fn validate(&self) -> Result<(), AgentError> {
        let bad = |m: String| Err(AgentError::Config(m));
        if self.heartbeat_interval.is_zero() {
            return bad("heartbeat_interval: must be greater than zero".into());
        }
        if self.flush_interval.is_zero() {
            return bad("flush_interval: must be greater than zero".into());
        }
        if self.pod_uid_count == 0
            || self.pod_uid_base == 0
            || self.pod_uid_base.checked_add(self.pod_uid_count).is_none()
        {
            return bad(format!(
                "pod_uid_base, pod_uid_count: {} and {} must be non-zero and end below 2^32 (uid 0 is root)",
                self.pod_uid_base, self.pod_uid_count
            ));
        }
        let mut seen = HashSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() || n.name == "." || n.name == ".." || n.name.contains('/') {
                return bad(format!("nodes[{i}].name: {:?} is not a valid node name", n.name));
            }
            if !seen.insert(n.name.as_str()) {
                return bad(format!("nodes[{i}].name: {} appears twice", n.name));
            }
            n.validate_hardware(i)?;
            if n.address.trim().is_empty() {
                return bad(format!("nodes[{i}].address: required"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_nodes_get_consecutive_loopback_addresses() {
        let nodes = VirtualNode::numbered("node", "hgx-h100-8", 3, 1);
        let names: Vec<_> = nodes.iter().map(|n| (n.name.as_str(), n.address.as_str())).collect();
        assert_eq!(names, [("node-0", "127.0.1.1"), ("node-1", "127.0.1.2"), ("node-2", "127.0.1.3")]);
        assert_eq!(loopback_address(254), "127.0.1.254");
        assert_eq!(loopback_address(255), "127.0.2.1");
        assert_eq!(loopback_address(254 * 255 + 1), "127.1.0.1");
    }

    #[test]
    fn validation_names_the_field() {
        let mut c = AgentConfig::new("/tmp/x", VirtualNode::numbered("n", "hgx-h100-8", 2, 1));
        assert!(c.validate().is_ok());
        c.nodes[1].name = "n-0".into();
        assert!(c.validate().unwrap_err().to_string().contains("nodes[1].name"));
        c.nodes[1].name = "n-1".into();
        c.nodes[1].profile = "nope".into();
        assert!(c.validate().unwrap_err().to_string().contains("nodes[1].profile"));
    }
}
