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

/// The node's limits on every pod (`up` and `agent`).
#[derive(Debug, Clone, clap::Args)]
pub struct PodLimitArgs {
    /// Processes and threads one pod may have (the kubelet's
    /// `podPidsLimit`); 0: unlimited. Enforced where the agent can make
    /// cgroups (root); a pod cannot raise it.
    #[arg(long, default_value_t = ringleader_agent::runtime::cgroup::DEFAULT_PIDS_LIMIT)]
    pub pod_pids_limit: u64,
    /// Size of a pod's log before it is rotated (the kubelet's
    /// `containerLogMaxSize`); one older file is kept.
    #[arg(long, default_value = "10Mi")]
    pub container_log_max_size: String,
    /// Size of a sandboxed pod's `/tmp` and `/dev/shm` when it sets no
    /// memory or ephemeral-storage limit, and the most any pod gets.
    #[arg(long, default_value = "1Gi")]
    pub pod_tmp_size: String,
    /// Seconds the sandbox and log of a deleted pod are kept on the node.
    #[arg(long, default_value_t = 600.0)]
    pub deleted_pod_retention: f64,
}

impl Default for PodLimitArgs {
    fn default() -> PodLimitArgs {
        PodLimitArgs {
            pod_pids_limit: ringleader_agent::runtime::cgroup::DEFAULT_PIDS_LIMIT,
            container_log_max_size: "10Mi".into(),
            pod_tmp_size: "1Gi".into(),
            deleted_pod_retention: 600.0,
        }
    }
}

impl PodLimitArgs {
    /// Sets `config`'s pod limits; a size that is not a quantity is an
    /// error naming the flag.
    pub fn apply(&self, config: &mut AgentConfig) -> anyhow::Result<()> {
        let size = |flag: &str, v: &str| {
            ringleader_api::quantity::whole(v)
                .and_then(|b| u64::try_from(b).ok())
                .filter(|b| *b > 0)
                .ok_or_else(|| anyhow::anyhow!("--{flag} {v:?}: not a positive size (e.g. 10Mi, 1Gi)"))
        };
        let limits = &mut config.pod_limits;
        limits.pids = Some(self.pod_pids_limit).filter(|p| *p > 0);
        limits.log_max = size("container-log-max-size", &self.container_log_max_size)?;
        limits.tmp_size = size("pod-tmp-size", &self.pod_tmp_size)?;
        let r = self.deleted_pod_retention;
        if !(r.is_finite() && (0.0..=1e9).contains(&r)) {
            anyhow::bail!("--deleted-pod-retention {r}: not a number of seconds from 0 to 1e9");
        }
        limits.deleted_retention = std::time::Duration::from_secs_f64(r);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_limit_flags_are_checked_naming_the_flag() {
        let mut config = AgentConfig::new("/tmp/x", vec![]);
        let args = PodLimitArgs { pod_pids_limit: 0, container_log_max_size: "1Mi".into(), ..Default::default() };
        args.apply(&mut config).unwrap();
        assert_eq!((config.pod_limits.pids, config.pod_limits.log_max), (None, 1 << 20));
        let bad = PodLimitArgs { pod_tmp_size: "lots".into(), ..Default::default() };
        let err = bad.apply(&mut config).unwrap_err().to_string();
        assert!(err.contains("--pod-tmp-size \"lots\""), "{err}");
    }
}
