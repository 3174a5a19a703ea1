//! The one task that writes to the store. Writes collected over a short
//! tick go in one transaction, so thousands of pods starting or ending at
//! once cost a handful of fsyncs. Pod writes name the pod's uid: a pod
//! deleted and recreated under the same name (a restarted job) never gets
//! its predecessor's status or deletion.

use ringleader_store::{ObjectKey, Op, Store, StoreError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// One write the agent wants.
#[derive(Debug, Clone)]
pub enum Write {
    /// Merge patch of the pod with this uid.
    Pod {
        /// Pod.
        key: ObjectKey,
        /// Its uid.
        uid: String,
        /// Merge patch.
        patch: Value,
    },
    /// Delete the pod with this uid.
    DeletePod {
        /// Pod.
        key: ObjectKey,
        /// Its uid.
        uid: String,
    },
    /// Merge patch of a node (skipped while the node does not exist).
    Node {
        /// Node.
        key: ObjectKey,
        /// Merge patch.
        patch: Value,
    },
    /// Create a node unless it exists.
    CreateNode(Value),
}

/// Counters of what the writer did.
#[derive(Debug, Default)]
pub struct Counters {
    /// Transactions committed.
    pub batches: AtomicU64,
    /// Writes committed.
    pub writes: AtomicU64,
    /// Writes that failed for a reason other than the object being gone.
    pub failures: AtomicU64,
}

/// Most writes in one transaction.
const MAX_BATCH: usize = 1000;

/// Runs until every sender is dropped and all queued writes are flushed.
pub async fn run(store: Store, mut rx: mpsc::UnboundedReceiver<Write>, tick: Duration, counters: Arc<Counters>) {
    while let Some(first) = rx.recv().await {
        let mut writes = vec![first];
        tokio::time::sleep(tick).await;
        loop {
            while writes.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(w) => writes.push(w),
                    Err(_) => break,
                }
            }
            let store = store.clone();
            let counters = counters.clone();
            let full = writes.len() >= MAX_BATCH;
            let chunk = std::mem::take(&mut writes);
            if let Err(e) = tokio::task::spawn_blocking(move || flush(&store, chunk, &counters)).await {
                tracing::error!(error = %e, "store writer thread failed");
            }
            if !full {
                break;
            }
        }
    }
}

/// The current version and uid of an object, read once per flush attempt.
struct Current {
    seen: HashMap<ObjectKey, Option<(u64, String)>>,
}

impl Current {
    fn get(&mut self, store: &Store, key: &ObjectKey) -> Result<Option<(u64, String)>, StoreError> {
        if let Some(c) = self.seen.get(key) {
            return Ok(c.clone());
        }
        let c = store.get(key)?.map(|s| {
            let uid = s.object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
            (s.resource_version, uid)
        });
        self.seen.insert(key.clone(), c.clone());
        Ok(c)
    }
}

/// The ops for `writes` given the store as it is now. Each object's first op
/// requires the version just read, so nothing can be recreated between the
/// read and the commit; later ops on it ride in the same transaction.
fn plan(store: &Store, writes: &[Write]) -> Result<Vec<Op>, StoreError> {
    let mut current = Current { seen: HashMap::new() };
    let mut touched: HashMap<ObjectKey, bool> = HashMap::new(); // key → deleted in this batch
    let mut ops = Vec::with_capacity(writes.len());
    for w in writes {
        match w {
            Write::Pod { key, uid, .. } | Write::DeletePod { key, uid } => {
                if touched.get(key) == Some(&true) {
                    continue;
                }
                let Some((version, cur_uid)) = current.get(store, key)? else { continue };
                if cur_uid != *uid {
                    continue;
                }
                let expected = if touched.contains_key(key) { None } else { Some(version) };
                let delete = matches!(w, Write::DeletePod { .. });
                touched.insert(key.clone(), delete);
                ops.push(match w {
                    Write::Pod { patch, .. } => Op::Patch { key: key.clone(), patch: patch.clone(), expected },
                    _ => Op::Delete { key: key.clone(), expected },
                });
            }
            Write::Node { key, patch } => {
                if current.get(store, key)?.is_some() {
                    ops.push(Op::Patch { key: key.clone(), patch: patch.clone(), expected: None });
                }
            }
            Write::CreateNode(object) => {
                let key = ObjectKey::of(object)?;
                if current.get(store, &key)?.is_none() {
                    current.seen.insert(key, Some((0, String::new())));
                    ops.push(Op::Create(object.clone()));
                }
            }
        }
    }
    Ok(ops)
}

fn flush(store: &Store, writes: Vec<Write>, counters: &Counters) {
    // Another writer (the manager, the CLI) may commit between our read and
    // our batch: re-read and retry a few times before going one by one.
    for _ in 0..4 {
        let ops = match plan(store, &writes) {
            Ok(ops) => ops,
            Err(e) => {
                tracing::warn!(error = %e, "reading the store before a write failed");
                break;
            }
        };
        if ops.is_empty() {
            return;
        }
        let n = ops.len() as u64;
        match store.batch(ops) {
            Ok(_) => {
                counters.batches.fetch_add(1, Ordering::Relaxed);
                counters.writes.fetch_add(n, Ordering::Relaxed);
                return;
            }
            Err(StoreError::Conflict { .. } | StoreError::NotFound(_) | StoreError::AlreadyExists(_)) => continue,
            Err(e) => {
                tracing::warn!(error = %e, writes = n, "batched write failed; writing one by one");
                break;
            }
        }
    }
    for w in writes {
        one_by_one(store, &w, counters);
    }
}

fn one_by_one(store: &Store, w: &Write, counters: &Counters) {
    for _ in 0..4 {
        let ops = match plan(store, std::slice::from_ref(w)) {
            Ok(ops) => ops,
            Err(e) => {
                tracing::warn!(error = %e, "reading the store before a write failed");
                counters.failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        if ops.is_empty() {
            return;
        }
        match store.batch(ops) {
            Ok(_) => {
                counters.batches.fetch_add(1, Ordering::Relaxed);
                counters.writes.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(StoreError::Conflict { .. } | StoreError::NotFound(_) | StoreError::AlreadyExists(_)) => continue,
            Err(e) => {
                tracing::warn!(error = %e, write = ?w, "store write failed");
                counters.failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
    tracing::warn!(write = ?w, "store write kept conflicting; given up");
    counters.failures.fetch_add(1, Ordering::Relaxed);
}
