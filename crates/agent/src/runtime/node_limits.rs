//! [`NodeLimits`]: what the agent holds every pod to (pids, /tmp size, log
//! size, how long a deleted pod's files stay), with the defaults.

use super::cgroup;
use std::path::PathBuf;

/// Default size of a pod's `/tmp` (and `/dev/shm`) when it sets neither a
/// memory nor an ephemeral-storage limit.
pub const DEFAULT_TMP_SIZE: u64 = 1 << 30;

/// Default cap of a pod's log (the kubelet's `containerLogMaxSize`).
pub const DEFAULT_LOG_MAX: u64 = 10 << 20;

/// Default time the sandbox and log of a deleted pod are kept (for a look
/// at a job's logs after its cleanup deleted its pods).
pub const DEFAULT_DELETED_RETENTION: std::time::Duration = std::time::Duration::from_secs(600);

/// What a node enforces on every pod (`AgentConfig::pod_limits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLimits {
    /// Processes and threads per pod (the kubelet's `podPidsLimit`);
    /// `None`: unlimited.
    pub pids: Option<u64>,
    /// Size of `/tmp` and `/dev/shm` of a pod without memory or
    /// ephemeral-storage limits, and the most any pod gets.
    pub tmp_size: u64,
    /// Bytes of a pod's log before it is rotated (one older file is kept).
    pub log_max: u64,
    /// Where the cgroup hierarchies are mounted.
    pub cgroup_root: PathBuf,
    /// How long the sandbox and log of a deleted pod are kept.
    pub deleted_retention: std::time::Duration,
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits {
            pids: Some(cgroup::DEFAULT_PIDS_LIMIT),
            tmp_size: DEFAULT_TMP_SIZE,
            log_max: DEFAULT_LOG_MAX,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            deleted_retention: DEFAULT_DELETED_RETENTION,
        }
    }
}
