//! [`Backend`]: what the controller manager reads and writes of the
//! cluster's state, implemented by the embedded [`Store`] here and by
//! kube-apiserver in `ringleader-kube`.

use crate::store::Store;
use crate::types::*;
use crate::watch::Watch;
use serde_json::Value;
use std::sync::Arc;

/// What the controller manager reads and writes, wherever the cluster's
/// state lives: the embedded [`Store`] under `ringleader up`, or a
/// kube-apiserver (`ringleader manager --kubeconfig`, crate
/// `ringleader-kube`). Calls block.
pub trait Backend: Send + Sync + 'static {
    /// One object, if it exists.
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError>;
    /// Creates an object (`AlreadyExists` when it is there).
    fn create(&self, object: Value) -> Result<Stored, StoreError>;
    /// Merge-patches an object, requiring version `expected` when given.
    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError>;
    /// Applies `ops`, one result per op. The embedded store applies all or
    /// none; a remote backend applies them in order and may stop part way
    /// (the manager then retries each write alone, which is safe: creates
    /// answer `AlreadyExists`, conditional writes `Conflict`).
    fn batch(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, StoreError>;
    /// [`Backend::batch`] that gives the ops back when it fails, for a
    /// caller that then tries them one by one.
    fn batch_or_back(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, Box<Failed>> {
        let copy = ops.clone();
        self.batch(ops).map_err(|error| Box::new(Failed { error, ops: copy }))
    }
    /// Every object the selector covers, and the version to watch from.
    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError>;
    /// Changes after version `from`, in order. A remote backend's stream
    /// ends when it cannot resume (the caller then lists again).
    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError>;
    /// A version at least as new as every write this backend returned.
    fn version(&self) -> u64;
}

impl Backend for Store {
    fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        Store::get(self, key)
    }

    fn create(&self, object: Value) -> Result<Stored, StoreError> {
        Store::create(self, object)
    }

    fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        Store::patch(self, key, patch, expected)
    }

    fn batch(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, StoreError> {
        Store::batch_shared(self, ops)
    }

    fn batch_or_back(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, Box<Failed>> {
        Store::batch_kept(self, ops)
    }

    fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError> {
        Store::list(self, selector)
    }

    fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        Store::watch(self, selector, from)
    }

    fn version(&self) -> u64 {
        Store::version(self)
    }
}
