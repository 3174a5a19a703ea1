//! What the bulk apply behind `apply -f` answers, one entry per object: the
//! server writes it, the client reads it.

use serde::{Deserialize, Serialize};

/// What applying did to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApplyAction {
    /// It did not exist.
    Created,
    /// It existed and was replaced.
    Configured,
    /// It existed exactly so; nothing was written.
    Unchanged,
}

impl std::fmt::Display for ApplyAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ApplyAction::Created => "created",
            ApplyAction::Configured => "configured",
            ApplyAction::Unchanged => "unchanged",
        })
    }
}

/// One object of an applied stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyResult {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Namespace (`""` for cluster-scoped kinds).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// What happened.
    pub action: ApplyAction,
}
