//! What the agent reads and writes of the cluster's state, wherever that
//! state lives: the embedded store when the agent runs inside `ringleader
//! up`, the API server over HTTPS when it runs on a host of its own
//! (`ringleader agent --kubeconfig`). Calls block; the agent makes them from
//! blocking threads (or, for a ConfigMap read as a pod starts, where a short
//! block is acceptable).

use crate::{Backend, ObjectKey, Op, Selector, StoreError, Stored, Watch};
use serde_json::Value;

/// The cluster state an agent works against.
pub trait Cluster: Send + Sync + 'static {
    /// One object, if it exists.
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError>;
    /// Creates an object (`AlreadyExists` when it is there).
    fn create(&self, object: Value) -> Result<Stored, StoreError>;
    /// Merge-patches an object, requiring version `expected` when given.
    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError>;
    /// Applies `ops` (in one transaction where the backend has them; a
    /// remote one applies them in order and stops at the first failure,
    /// which the writer's re-planning makes safe).
    fn batch(&self, ops: Vec<Op>) -> Result<(), StoreError>;
    /// Every object the selector covers, and the version they were read at.
    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError>;
    /// Changes after version `from`, in order. A remote backend's stream
    /// ends when it cannot resume (the agent then starts over).
    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError>;
}

/// Every backend the manager works against serves an agent too: the
/// embedded store, and kube-apiserver in Kubernetes mode.
impl<T: Backend> Cluster for T {
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        Backend::get(self, key)
    }

    fn create(&self, object: Value) -> Result<Stored, StoreError> {
        Backend::create(self, object)
    }

    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        Backend::patch(self, key, patch, expected)
    }

    fn batch(&self, ops: Vec<Op>) -> Result<(), StoreError> {
        Backend::batch(self, ops).map(|_| ())
    }

    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError> {
        Backend::list(self, selector)
    }

    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        Backend::watch(self, selector, from)
    }
}
