//! Store writes carried out from the manager's passes, their results put
//! into the cache at once so the next decision sees them.

use crate::cache::Cache;
use crate::ManagerError;
use ringleader_store::{Backend, Failed, ObjectKey, Op, StoreError, Stored};
use std::sync::Arc;

/// Carries out writes in one transaction; when that fails because the cache
/// lagged (a pod already created or gone), each write alone, skipping those.
pub fn write(store: &dyn Backend, cache: &mut Cache, ops: Vec<Op>) -> Result<(), ManagerError> {
    if ops.is_empty() {
        return Ok(());
    }
    // The ops come back only when the transaction fails: a 5,000-pod
    // batch is not copied for the rare retry.
    match batch_or_back(store, cache, ops).map_err(|failed| *failed) {
        Ok(()) => Ok(()),
        Err(Failed { error: StoreError::Io(e), .. }) => Err(ManagerError::Store(StoreError::Io(e))),
        Err(Failed { ops, .. }) => {
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
/// watch events, not copied); on error nothing was written and the ops
/// come back.
pub(crate) fn batch_or_back(store: &dyn Backend, cache: &mut Cache, ops: Vec<Op>) -> Result<(), Box<Failed>> {
    let deletes = deleted_keys(&ops);
    record(cache, store.batch_or_back(ops)?, deletes);
    Ok(())
}

/// Per op, the key it deletes (`None` for any other op).
fn deleted_keys(ops: &[Op]) -> Vec<Option<ObjectKey>> {
    ops.iter()
        .map(|o| match o {
            Op::Delete { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect()
}

fn record(cache: &mut Cache, results: Vec<Arc<Stored>>, deletes: Vec<Option<ObjectKey>>) {
    for (r, d) in results.into_iter().zip(deletes) {
        match d {
            Some(key) => cache.remove(&key, r.resource_version),
            None => cache.put_shared(r),
        };
    }
}
