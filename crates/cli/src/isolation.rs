//! How the agents `ringleader up` and `ringleader agent` start isolate pods.

use ringleader_agent::config::Isolation;
use ringleader_agent::AgentConfig;
use std::path::PathBuf;

/// Who runs the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// The one-process cluster (`up`, `demo`): sandboxes where this machine
    /// allows them, plain processes with a warning where it does not (a
    /// developer's laptop without root).
    OneProcess,
    /// A standalone agent: sandboxes, or it refuses to run pods unless the
    /// operator said `--unsafe-process-runtime`.
    Standalone {
        /// `--unsafe-process-runtime`.
        unsafe_runtime: bool,
    },
}

/// Sets `config`'s pod isolation for `host`; `hide` lists files pods must
/// not see besides the data dir (the agent's kubeconfig).
pub fn configure(config: &mut AgentConfig, host: Host, hide: &[PathBuf]) {
    config.isolation = match host {
        Host::OneProcess => Isolation::Auto,
        Host::Standalone { unsafe_runtime: true } => Isolation::Unsafe,
        Host::Standalone { unsafe_runtime: false } => Isolation::Required,
    };
    config.hidden_paths.extend(hide.iter().filter_map(|p| std::path::absolute(p).ok()));
}
