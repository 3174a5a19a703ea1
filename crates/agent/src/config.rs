//! What an agent serves (its virtual nodes) and how it runs pods.

use crate::AgentError;
use ringleader_api::kinds::cluster::NodeNetwork;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

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
}

/// One node the agent serves. Many can share one machine: each has its own
/// loopback address, hardware profile and sandbox directory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VirtualNode {
    /// Node name (`metadata.name` of the Node object).
    pub name: String,
    /// Built-in hardware profile (`ringleader profiles` lists them).
    pub profile: String,
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
    /// `PATH` given to pod processes (the container env may override it).
    pub path_env: String,
}

impl AgentConfig {
    /// Defaults: process runtime, 10 s heartbeats, 25 ms write batches, 30 s
    /// grace, the agent's own `PATH`.
    pub fn new(data_dir: impl Into<PathBuf>, nodes: Vec<VirtualNode>) -> AgentConfig {
        AgentConfig {
            data_dir: data_dir.into(),
            nodes,
            runtime: Runtime::Process,
            heartbeat_interval: Duration::from_secs(10),
            flush_interval: Duration::from_millis(25),
            default_grace_period: Duration::from_secs(30),
            path_env: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_string()),
        }
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

    /// Names unique and usable as directory names, profiles built in,
    /// addresses present, intervals non-zero.
    pub fn validate(&self) -> Result<(), AgentError> {
        let bad = |m: String| Err(AgentError::Config(m));
        if self.heartbeat_interval.is_zero() {
            return bad("heartbeat_interval: must be greater than zero".into());
        }
        if self.flush_interval.is_zero() {
            return bad("flush_interval: must be greater than zero".into());
        }
        let mut seen = HashSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() || n.name == "." || n.name == ".." || n.name.contains('/') {
                return bad(format!("nodes[{i}].name: {:?} is not a valid node name", n.name));
            }
            if !seen.insert(n.name.as_str()) {
                return bad(format!("nodes[{i}].name: {} appears twice", n.name));
            }
            if ringleader_topology::profiles::builtin(&n.profile).is_none() {
                let known = ringleader_topology::profiles::builtin_names().join(", ");
                return bad(format!("nodes[{i}].profile: unknown profile {:?} (built-in: {known})", n.profile));
            }
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
