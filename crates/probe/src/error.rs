//! [`ProbeError`]: everything that can go wrong in a probe run, each naming
//! the env var, file or peer.

use std::io;
use std::net::SocketAddr;

/// Everything that can go wrong, each naming the env var, file or peer.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("env {var} is not set{hint}")]
    MissingEnv { var: &'static str, hint: String },
    #[error("env {var}={value:?} is invalid: {reason}")]
    BadEnv { var: &'static str, value: String, reason: String },
    #[error("cannot read {what} {path}: {cause}")]
    File { what: &'static str, path: String, cause: io::Error },
    #[error("{what} {path}: {reason}")]
    BadFile { what: &'static str, path: String, reason: String },
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("{peer}: {action}: {cause}")]
    Peer { peer: String, action: &'static str, cause: io::Error },
    #[error("{peer}: {reason}")]
    Protocol { peer: String, reason: String },
    #[error("cannot listen on {addr}: {cause}")]
    Listen { addr: SocketAddr, cause: io::Error },
    #[error("rendezvous: {0}")]
    Rendezvous(String),
    #[error("{0}")]
    Invalid(String),
}

impl ProbeError {
    pub(crate) fn peer(peer: &str, action: &'static str, source: io::Error) -> ProbeError {
        ProbeError::Peer { peer: peer.to_string(), action, cause: source }
    }

    pub(crate) fn protocol(peer: &str, reason: String) -> ProbeError {
        ProbeError::Protocol { peer: peer.to_string(), reason }
    }
}
