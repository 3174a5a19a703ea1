//! The node agent of ringleader. It owns, for the nodes it serves (one real
//! machine or many virtual nodes, each with its own loopback address,
//! hardware profile and sandbox directory):
//!
//! * registration of the `ringleader.io/v1alpha1 Node` objects and the
//!   agent's fields in them: heartbeats (`status.ready`,
//!   `status.lastHeartbeat`), the machine's `status.nodeInfo` (served as
//!   the core v1 Node's) and device health from the faults the CLI
//!   injects (`status.unhealthyDevices`, `status.networkUnhealthyDevices`);
//!   for detected devices, their utilisation, memory, temperature and power
//!   (`status.deviceTelemetry`, [`telemetry`]);
//! * the life of every pod bound to those nodes once the job controller
//!   releases it (`ringleader.io/start`): sandbox, files, hosts file, env,
//!   process group, log (with a stamp per line), phase, container statuses,
//!   conditions and exit code, graceful deletion — or, with
//!   the simulated runtime, a timer per pod with batched status writes;
//! * node stop/start as a power switch, re-adoption of the pods a previous
//!   agent left running under their shims (`runtime::shim`), and the
//!   restart rule for the others it left Running.
//!
//! It follows the store's watch and writes only merge patches of its own
//! fields (docs/control-plane.md, "A pod's life").

mod agent;
mod cri_pods;
mod cri_runtime;
mod error;
mod start;

pub mod command;
pub mod config;
pub mod detect;
pub mod device_env;
pub mod hosts;
pub mod node;
pub mod pod;
pub mod runtime;
pub mod sandbox;
pub mod service_account;
pub mod status;
pub mod telemetry;
pub mod usage;
pub mod volumes;
mod writer;

pub use config::{loopback_address, AgentConfig, Isolation, Runtime, VirtualNode};
pub use error::AgentError;
pub use node::node_object;
pub use ringleader_store::Cluster;
pub use start::{run, run_shared, sampling_interval, start, start_shared, AgentHandle, AgentStats};
