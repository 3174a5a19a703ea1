//! The one task that writes to the store. Writes collected over a short
//! tick go in one transaction, so thousands of pods starting or ending at
//! once cost a handful of fsyncs. Pod writes name the pod's uid: a pod
//! deleted and recreated under the same name (a restarted job) never gets
//! its predecessor's status or deletion.

use ringleader_store::Cluster;
use ringleader_store::{ObjectKey, Op, StoreError};
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
    /// Create an Event (its name is unique: no conflict to expect).
    Event(Value),
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

/// Runs until every sender is dropped and all queued writes are flushed (or,
/// once every sender is dropped, the cluster refused them [`STOPPING_TRIES`] more times).
pub async fn run(
    store: Arc<dyn Cluster>,
    mut rx: mpsc::UnboundedReceiver<Write>,
    tick: Duration,
    counters: Arc<Counters>,
) {
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
            let full = writes.len() >= MAX_BATCH;
            let mut chunk = std::mem::take(&mut writes);
            let mut wait = RETRY_FIRST;
            let mut stopping_tries = 0;
            loop {
                let (store, counters) = (store.clone(), counters.clone());
                match tokio::task::spawn_blocking(move || flush(store.as_ref(), chunk, &counters)).await {
                    Ok(None) => break,
                    // The cluster cannot be reached (a remote agent cut off
                    // from its API server): the same writes again, in order,
                    // once it can. Heartbeats queued meanwhile are merged.
                    Ok(Some(unsent)) => {
                        // Every sender gone: the agent is stopping. Its pods
                        // run on and the next agent reports them again, so a
                        // store that cannot take writes (a full disk, a lost
                        // API server) must not hold the stop.
                        if rx.is_closed() {
                            stopping_tries += 1;
                            if stopping_tries > STOPPING_TRIES {
                                tracing::warn!(
                                    writes = unsent.len(),
                                    "agent stopping: writes the cluster could not take are dropped"
                                );
                                return;
                            }
                        }
                        tracing::warn!(writes = unsent.len(), retry_in = ?wait, "cannot reach the cluster; holding writes");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(RETRY_MOST);
                        chunk = unsent;
                        while let Ok(w) = rx.try_recv() {
                            chunk.push(w);
                        }
                        chunk = collapse(chunk);
                    }
                    // The runtime is shutting down (the process stops): nothing failed.
                    Err(e) if e.is_cancelled() => {
                        tracing::debug!("store writes cancelled at shutdown");
                        break;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "store writer thread failed");
                        break;
                    }
                }
            }
            if !full {
                break;
            }
        }
    }
}

/// Tries left for held writes once the agent is stopping (about 1.4 s of waits).
const STOPPING_TRIES: u32 = 3;

/// How long writes wait after the cluster could not be reached (doubling up to the most).
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MOST: Duration = Duration::from_secs(5);

/// `writes` with each node's patches merged into one, at its first place
/// (they only ever set status fields, so the merge is their sum).
fn collapse(writes: Vec<Write>) -> Vec<Write> {
    let mut out: Vec<Write> = Vec::with_capacity(writes.len());
    let mut at: HashMap<ObjectKey, usize> = HashMap::new();
    for w in writes {
        if let Write::Node { key, patch } = &w {
            if let Some(&i) = at.get(key) {
                if let Write::Node { patch: first, .. } = &mut out[i] {
                    merge(first, patch.clone());
                    continue;
                }
            }
            at.insert(key.clone(), out.len());
        }
        out.push(w);
    }
    out
}

/// Whether a store error says the cluster could not be reached at all.
fn unreachable(e: &StoreError) -> bool {
    matches!(e, StoreError::Io(_))
}

/// The current version and uid of an object, read once per flush attempt.
struct Current {
    seen: HashMap<ObjectKey, Option<(u64, String)>>,
}

impl Current {
    fn get(&mut self, store: &dyn Cluster, key: &ObjectKey) -> Result<Option<(u64, String)>, StoreError> {
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
fn plan(store: &dyn Cluster, writes: &[Write]) -> Result<Vec<Op>, StoreError> {
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
            Write::Event(object) => {
                // One per pod: a pod that runs again in place (restart back-off) gets no second.
                let key = ObjectKey::of(object)?;
                if current.get(store, &key)?.is_none() {
                    current.seen.insert(key, Some((0, String::new())));
                    ops.push(Op::Create(object.clone()));
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

/// Commits `writes`; gives them back when the cluster cannot be reached.
fn flush(store: &dyn Cluster, writes: Vec<Write>, counters: &Counters) -> Option<Vec<Write>> {
    // Another writer (the manager, the CLI) may commit between our read and
    // our batch: re-read and retry a few times before going one by one.
    for _ in 0..4 {
        let ops = match plan(store, &writes) {
            Ok(ops) => ops,
            Err(e) if unreachable(&e) => return Some(writes),
            Err(e) => {
                tracing::warn!(error = %e, "reading the store before a write failed");
                break;
            }
        };
        if ops.is_empty() {
            return None;
        }
        let n = ops.len() as u64;
        match store.batch(ops) {
            Ok(_) => {
                counters.batches.fetch_add(1, Ordering::Relaxed);
                counters.writes.fetch_add(n, Ordering::Relaxed);
                return None;
            }
            Err(StoreError::Conflict { .. } | StoreError::NotFound(_) | StoreError::AlreadyExists(_)) => continue,
            Err(e) if unreachable(&e) => return Some(writes),
            Err(e) => {
                tracing::warn!(error = %e, writes = n, "batched write failed; writing one by one");
                break;
            }
        }
    }
    for w in writes {
        one_by_one(store, &w, counters);
    }
    None
}

fn one_by_one(store: &dyn Cluster, w: &Write, counters: &Counters) {
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

/// RFC 7386 merge of `patch` into `target`.
pub(crate) fn merge(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(&k);
                    } else {
                        merge(t.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other,
    }
}
