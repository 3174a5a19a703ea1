//! Why the manager stopped: the one error its loop and passes return.

use ringleader_store::StoreError;

/// Why the manager stopped.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A bug or an impossible state, described.
    #[error("{0}")]
    Internal(String),
}
