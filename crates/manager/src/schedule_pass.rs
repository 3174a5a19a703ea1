//! What one scheduling pass did: the figures handed to the manager's
//! schedule observer (the API server's metrics) and used to re-reconcile.

/// What one pass did.
#[derive(Debug, Default)]
pub struct Pass {
    /// Pods bound.
    pub bound: usize,
    /// Pods evicted.
    pub evicted: usize,
    /// Jobs left pending.
    pub pending: usize,
    /// Pods of jobs the session left pending with a reason.
    pub unschedulable: usize,
    /// Scheduling sessions run (0 when no pod was waiting).
    pub sessions: usize,
    /// Seconds from creation to binding of each bound pod.
    pub latencies: Vec<f64>,
    /// Uids of the jobs that got bindings or evictions.
    pub jobs: std::collections::BTreeSet<String>,
}
