//! [`AgentError`]: why the agent could not start or stopped.

use ringleader_store::StoreError;

/// Why the agent could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The configuration is unusable (the message names the field).
    #[error("agent configuration: {0}")]
    Config(String),
    /// A store call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file-system call failed.
    #[error("{path}: {source}")]
    Io {
        /// What was accessed.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The store's watch ended (the store shut down).
    #[error("the store's watch of {0} ended")]
    WatchClosed(&'static str),
    /// The container runtime could not be reached.
    #[error("container runtime: {0}")]
    Runtime(String),
    /// An agent task failed.
    #[error("agent task failed: {0}")]
    Task(String),
}
