//! Store writes carried out from the manager's passes, their results put
//! into the cache at once so the next decision sees them.

use crate::cache::Cache;
use crate::ManagerError;
use ringleader_store::{Backend, ObjectKey, Op, StoreError};

/// Carries out writes in one transaction; when that fails because the cache
/// lagged (a pod already created or gone), each write alone, skipping those.
pub fn write(store: &dyn Backend, cache: &mut Cache, ops: Vec<Op>) -> Result<(), ManagerError> {
    if ops.is_empty() {
        return Ok(());
    }
    match batch(store, cache, ops.clone()) {
        Ok(()) => Ok(()),
        Err(StoreError::Io(e)) => Err(ManagerError::Store(StoreError::Io(e))),
        Err(_) => {
            for op in ops {
                let delete = match &op {
                    Op::Delete { key, .. } => Some(key.clone()),
                    _ => None,
                };
                match store.batch(vec![op]) {
                    Ok(mut r) => {
                        if let Some(r) = r.pop() {
                            match delete {
                                Some(key) => cache.remove(&key, r.resource_version),
                                None => cache.put_shared(r),
                            };
                        }
                    }
                    Err(StoreError::Io(e)) => return Err(ManagerError::Store(StoreError::Io(e))),
                    Err(e) => tracing::debug!("skipped a write: {e}"),
                }
            }
            Ok(())
        }
    }
}

/// One transaction, its results recorded in the cache (shared with the
/// watch events, not copied); on error nothing was written.
pub(crate) fn batch(store: &dyn Backend, cache: &mut Cache, ops: Vec<Op>) -> Result<(), StoreError> {
    let deletes: Vec<Option<ObjectKey>> = ops
        .iter()
        .map(|o| match o {
            Op::Delete { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect();
    for (r, d) in store.batch(ops)?.into_iter().zip(deletes) {
        match d {
            Some(key) => cache.remove(&key, r.resource_version),
            None => cache.put_shared(r),
        };
    }
    Ok(())
}
