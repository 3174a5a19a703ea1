//! `ringleader.io/v1alpha1` CheckRun: one run of a one-click check (seed
//! 003, spec/platform.md "One-click checks") on chosen nodes — a server
//! check, a network check (bandwidth and latency between nodes) or a
//! collective-communication check (the nccl-tests table per operation and
//! message size). The objects are the checks' history: listed by creation
//! time, re-run by copying the spec, deleted like any object. The rules on
//! the spec are in [`crate::validate`]; the manager writes the status.

use super::object::Object;
use serde::{Deserialize, Serialize};

/// `apiVersion` of a CheckRun.
pub const API_VERSION: &str = "ringleader.io/v1alpha1";
/// Its kind.
pub const KIND: &str = "CheckRun";
/// Check types.
pub const TYPES: &[&str] = &["server", "network", "collective"];
/// Collective operations, as nccl-tests names them.
pub const OPERATIONS: &[&str] = &["all_reduce", "all_gather", "reduce_scatter", "all_to_all"];
/// Phases, in the order a run goes through them.
pub const PHASES: &[&str] = &["Pending", "Running", "Succeeded", "Failed", "Terminated"];
/// Transports a network pair may be measured over.
pub const TRANSPORTS: &[&str] = &["tcp", "rdma"];
/// Most nodes one check may span.
pub const MAX_NODES: usize = 64;
/// Most ranks (devices) per node of a collective check.
pub const MAX_DEVICES_PER_NODE: u32 = 16;
/// Largest message size, in bytes (each process holds a few buffers of it).
pub const MAX_BYTES: u64 = 1 << 30;
/// Most timed iterations per size.
pub const MAX_ITERATIONS: u32 = 10_000;
/// Most warm-up iterations per size.
pub const MAX_WARMUP: u32 = 1_000;
/// Defaults of a collective or network check.
pub const DEFAULT_MIN_BYTES: u64 = 1 << 20;
/// Default largest size.
pub const DEFAULT_MAX_BYTES: u64 = 16 << 20;
/// Default timed iterations.
pub const DEFAULT_ITERATIONS: u32 = 20;
/// Default warm-up iterations.
pub const DEFAULT_WARMUP: u32 = 5;

/// `ringleader.io/v1alpha1` CheckRun (cluster-scoped).
pub type CheckRun = Object<CheckRunSpec>;

/// `CheckRun` spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckRunSpec {
    /// `server`, `network` or `collective`.
    #[serde(default, rename = "type")]
    pub check_type: String,
    /// The nodes checked (collective and network: at least two for a transfer between nodes).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Collective: operations run, a subset of `all_reduce`, `all_gather`,
    /// `reduce_scatter`, `all_to_all` (default `[all_reduce]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// Collective: ranks per node, 1–16 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_per_node: Option<u32>,
    /// Collective and network: smallest message, bytes, a multiple of 4 (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_bytes: Option<u64>,
    /// Collective: largest message (sizes double from minBytes up to it; default 16 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Timed iterations per size (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Untimed (but checked) iterations first (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u32>,
    /// Server: the node the others are compared with (one of `nodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_node: Option<String>,
    /// Set to stop a running check: its probe pods are stopped and the phase becomes `Terminated`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
}

impl CheckRunSpec {
    /// The operations in force.
    pub fn effective_operations(&self) -> Vec<String> {
        if self.operations.is_empty() {
            vec!["all_reduce".to_string()]
        } else {
            self.operations.clone()
        }
    }

    /// Ranks per node in force.
    pub fn effective_devices_per_node(&self) -> u32 {
        self.devices_per_node.unwrap_or(1)
    }

    /// Smallest size in force.
    pub fn effective_min_bytes(&self) -> u64 {
        self.min_bytes.unwrap_or(DEFAULT_MIN_BYTES)
    }

    /// Largest size in force (never below the smallest).
    pub fn effective_max_bytes(&self) -> u64 {
        self.max_bytes.unwrap_or_else(|| DEFAULT_MAX_BYTES.max(self.effective_min_bytes()))
    }

    /// Timed iterations in force.
    pub fn effective_iterations(&self) -> u32 {
        self.iterations.unwrap_or(DEFAULT_ITERATIONS)
    }

    /// Warm-up iterations in force.
    pub fn effective_warmup(&self) -> u32 {
        self.warmup.unwrap_or(DEFAULT_WARMUP)
    }
}

/// One item of a server check (or one consistency comparison).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckItem {
    /// The node it is about.
    #[serde(default)]
    pub node: String,
    /// e.g. `cpu`, `memory`, `driver`, `consistency:cpu-model`.
    #[serde(default)]
    pub name: String,
    /// How it was measured.
    #[serde(default)]
    pub method: String,
    /// What passes.
    #[serde(default)]
    pub criterion: String,
    /// What to do when it fails.
    #[serde(default)]
    pub advice: String,
    /// What was found.
    #[serde(default)]
    pub result: String,
    /// Whether it met the criterion.
    #[serde(default)]
    pub pass: bool,
}

/// One row of a collective check: one operation at one message size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectiveRow {
    /// `all_reduce`, `all_gather`, `reduce_scatter` or `all_to_all`.
    #[serde(default)]
    pub operation: String,
    /// Bytes per rank.
    #[serde(default)]
    pub data_size: u64,
    /// Mean time of one operation (slowest process), microseconds.
    #[serde(default)]
    pub aveg_time_us: f64,
    /// data_size / time, GB/s.
    #[serde(default)]
    pub alg_bandwidth: f64,
    /// Bus bandwidth by spec/platform.md's formula for the operation, GB/s.
    #[serde(default)]
    pub bus_bandwidth: f64,
    /// `success` or `fail` (every rank got the exact expected data).
    #[serde(default)]
    pub check_result: String,
}

/// One measured pair of a network check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkPair {
    /// Sending node.
    #[serde(default)]
    pub from: String,
    /// Receiving node.
    #[serde(default)]
    pub to: String,
    /// `tcp` or `rdma`: what the figures were measured over.
    #[serde(default)]
    pub transport: String,
    /// Message size of the bandwidth test, bytes.
    #[serde(default)]
    pub bytes: u64,
    /// One-way bandwidth, GB/s.
    #[serde(default)]
    pub bandwidth_gbps: f64,
    /// Half the mean round trip of an 8-byte message, microseconds.
    #[serde(default)]
    pub latency_us: f64,
    /// Whether every byte arrived as sent.
    #[serde(default)]
    pub pass: bool,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// Server: every item of every node, then the consistency items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<CheckItem>,
    /// Collective: one row per operation and size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<CollectiveRow>,
    /// Network: one entry per measured pair.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<NetworkPair>,
    /// One line: items passed, best bandwidth.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

/// `CheckRun` status (manager-written).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckRunStatus {
    /// One of [`PHASES`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// When its probes were created (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    /// When it ended (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub finish_time: String,
    /// Why the phase is what it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Collective and network: the rendezvous port on the first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Nodes whose probe finished, of the nodes listed (`1/2`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nodes_done: String,
    /// What it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<CheckReport>,
}
