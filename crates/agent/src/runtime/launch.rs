//! [`Launch`]: everything a pod's process needs to be spawned.

use std::path::PathBuf;

/// Everything a spawn needs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The complete environment (nothing is inherited from the agent).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Log file (created or truncated).
    pub log: PathBuf,
    /// Bytes of log kept before it rotates ([`super::limits::LogCap`]).
    pub log_max: u64,
}
