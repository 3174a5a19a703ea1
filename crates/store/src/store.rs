//! [`Store`]: the SQLite file, opened safely (one owner, a schema it knows,
//! a reserve against a full disk), its writes, reads, lists and watches.

use crate::seal::Sealer;
use crate::sqlite::Queued;
use crate::types::*;
use crate::watch::Watch;
use crate::{backup, safety, sqlite};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Least time between attempts to write the reserve file again once released.
const RESERVE_RETRY: Duration = Duration::from_secs(10);

/// How a store is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How many of the newest events are kept for watches to resume from
    /// (older ones are pruned in steps, so up to 10% more may be kept).
    pub history: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options { history: 100_000 }
    }
}

/// Handle to an open store; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

// Fields drop in order: the readers close before the writer, so the
// writer's is the last connection (SQLite then checkpoints and removes the
// WAL), and the guard last, which removes the open marker only then.
struct Inner {
    readers: sqlite::Readers,
    /// Every write and watch registration holds this lock, which is what
    /// orders events and keeps history and live streams seamless.
    writer: Mutex<sqlite::Writer>,
    /// Batches waiting for the writer (see [`Store::submit`]).
    queue: Mutex<Vec<Arc<Mutex<Queued>>>>,
    /// The last committed version, readable without the lock.
    version: AtomicU64,
    /// Transactions committed since the store was opened.
    commits: AtomicU64,
    dir: PathBuf,
    /// Why the last write failed on SQLite or the disk (`None` after a success).
    write_error: Mutex<Option<String>>,
    /// When the reserve file was released (`None`: in place, or never made).
    reserve_released: Mutex<Option<Instant>>,
    _guard: safety::OpenGuard,
}

/// The store holds every object, Secrets' and tokens' readers included:
/// its directory is made 0700 and the database file 0600 before SQLite
/// opens it (SQLite gives its -wal and -shm files the database's mode).
/// An existing directory or file is narrowed the same way.
fn private_files(dir: &Path, db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(db)?;
    std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o600))
}

impl Store {
    /// Opens (creating if needed) `<dir>/store.sqlite` with WAL and `synchronous=FULL`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(dir, Options::default())
    }

    /// [`Store::open`] with options. Refuses a store that would lose data
    /// quietly (see the `safety` module): empty, unreadable or damaged,
    /// missing its WAL after a crash, or of a newer schema.
    pub fn open_with(dir: &Path, options: Options) -> Result<Store, StoreError> {
        let files = safety::Files::of(dir);
        safety::check_files(&files)?;
        private_files(dir, &files.db).map_err(|e| StoreError::Io(format!("{}: {e}", dir.display())))?;
        let guard = safety::OpenGuard::acquire(&files)?;
        let sealer = Arc::new(Sealer::open(dir)?);
        let writer = sqlite::Writer::open(&files.db, options.history, sealer.clone())?;
        let version = writer.version()?;
        guard.mark_open()?;
        // Without room for it the store still opens: a full disk is for
        // readiness and the write errors to report, not a reason to stop.
        let reserved = safety::make_reserve(&files.reserve);
        Ok(Store {
            inner: Arc::new(Inner {
                readers: sqlite::Readers::new(files.db.clone(), sealer),
                writer: Mutex::new(writer),
                queue: Mutex::new(Vec::new()),
                version: AtomicU64::new(version),
                commits: AtomicU64::new(0),
                dir: dir.to_path_buf(),
                write_error: Mutex::new(None),
                reserve_released: Mutex::new((!reserved).then(Instant::now)),
                _guard: guard,
            }),
        })
    }

    /// Why the last write failed on SQLite or the disk, `None` once a write
    /// succeeded again (what readiness reports).
    pub fn write_error(&self) -> Option<String> {
        lock(&self.inner.write_error).clone()
    }

    /// An online backup of this store into `out` ([`backup`]).
    pub fn backup_to(&self, out: &Path) -> Result<u64, StoreError> {
        backup::backup(&self.inner.dir, out)
    }

    fn writer(&self) -> MutexGuard<'_, sqlite::Writer> {
        // A panic while holding the lock cannot leave SQLite half-written
        // (the transaction rolls back when dropped), so the writer stays usable.
        lock(&self.inner.writer)
    }

    /// The version of the last committed write (0 for an empty store).
    pub fn version(&self) -> u64 {
        self.inner.version.load(Ordering::Acquire)
    }

    /// Transactions committed since the store was opened (each an fsync):
    /// fewer than the batches written when group commit joined some.
    pub fn commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Acquire)
    }

    /// Creates an object; `AlreadyExists` if its key exists.
    pub fn create(&self, object: Value) -> Result<Stored, StoreError> {
        self.one(Op::Create(object))
    }

    /// Replaces an existing object. If `metadata.resourceVersion` is set and
    /// differs from the stored one: `Conflict`. `NotFound` if absent. `uid` and
    /// `creationTimestamp` are kept from the stored object.
    pub fn update(&self, object: Value) -> Result<Stored, StoreError> {
        self.one(Op::Update(object))
    }

    /// Creates or replaces, ignoring versions (what `kubectl apply` does here).
    pub fn apply(&self, object: Value) -> Result<Stored, StoreError> {
        self.one(Op::Apply(object))
    }

    /// Applies an RFC 7386 JSON merge patch to an existing object, atomically.
    /// `expected`: the version the caller read (`Conflict` when stale).
    /// A patch cannot change the key, uid or resourceVersion.
    pub fn patch(&self, key: &ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Stored, StoreError> {
        self.one(Op::Patch { key: key.clone(), patch: patch.clone(), expected })
    }

    /// Deletes an object and returns its last state.
    pub fn delete(&self, key: &ObjectKey, expected: Option<u64>) -> Result<Stored, StoreError> {
        self.one(Op::Delete { key: key.clone(), expected })
    }

    fn one(&self, op: Op) -> Result<Stored, StoreError> {
        self.batch(vec![op])?.pop().ok_or_else(|| StoreError::Io("a write returned no result".to_string()))
    }

    /// All writes in one transaction: all take effect or none does (the
    /// first failure is returned). Each write gets its own version.
    pub fn batch(&self, ops: Vec<Op>) -> Result<Vec<Stored>, StoreError> {
        Ok(self.batch_shared(ops)?.into_iter().map(Arc::unwrap_or_clone).collect())
    }

    /// [`Store::batch`] returning the results as shared with the watch
    /// events, without a copy (for writers that keep them, like a cache).
    pub fn batch_shared(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, StoreError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        self.submit(ops, false).0
    }

    /// [`Store::batch_shared`] that gives the ops back when the transaction
    /// fails, without a copy of them kept for that case: only the objects
    /// stored whole (creates, updates, applies) are copied, not the patches.
    pub fn batch_kept(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, Box<Failed>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let (result, ops) = self.submit(ops, true);
        result.map_err(|error| Box::new(Failed { error, ops }))
    }

    /// Group commit: the batch waits in the queue for the writer, and
    /// whoever holds the writer next runs every batch waiting then in one
    /// transaction, so writers arriving together (API requests, agents, the
    /// manager) share one fsync instead of queueing for one each, as etcd
    /// batches its proposals. Each batch still stands or falls alone.
    /// Returns the batch's outcome and, when `keep`, its ops.
    fn submit(&self, ops: Vec<Op>, keep: bool) -> (Result<Vec<Arc<Stored>>, StoreError>, Vec<Op>) {
        // Deletions are how space is freed through the API: when the disk is
        // full they get the reserve file's room and are tried once more.
        let deletes = ops.iter().all(|op| matches!(op, Op::Delete { .. }));
        let slot = Arc::new(Mutex::new(Queued { ops, keep: keep || deletes, outcome: None }));
        lock(&self.inner.queue).push(slot.clone());
        let mut writer = self.writer();
        // Whoever held the writer since may have carried this batch already.
        if lock(&slot).outcome.is_none() {
            let slots = std::mem::take(&mut *lock(&self.inner.queue));
            let mut group: Vec<Queued> = slots.iter().map(|s| std::mem::take(&mut *lock(s))).collect();
            self.run(&mut writer, &mut group);
            for (s, q) in slots.iter().zip(group) {
                *lock(s) = q;
            }
        }
        let Queued { mut ops, mut outcome, .. } = std::mem::take(&mut *lock(&slot));
        if deletes && matches!(&outcome, Some(Err(e)) if e.is_disk_full()) && self.release_reserve() {
            let mut again = [Queued { ops, keep: true, outcome: None }];
            self.run(&mut writer, &mut again);
            let [q] = again;
            (ops, outcome) = (q.ops, q.outcome);
        }
        drop(writer);
        let outcome = outcome.unwrap_or_else(|| Err(StoreError::Io("a write returned no result".to_string())));
        (outcome, if keep { ops } else { Vec::new() })
    }

    /// Runs one group and records its outcome: the write error shown by
    /// `/readyz` (cleared by a commit, set by a failure on SQLite or the
    /// disk, left as it was by a refused write), the store's version, the
    /// reserve file.
    fn run(&self, writer: &mut sqlite::Writer, group: &mut [Queued]) {
        let result = writer.write_group(group);
        if let Err(e) = &result {
            for q in group.iter_mut() {
                q.outcome = Some(Err(same_error(e)));
            }
        }
        let last_io = group.iter().rev().find_map(|q| match &q.outcome {
            Some(Err(e @ StoreError::Io(_))) => Some(e.to_string()),
            _ => None,
        });
        let committed = result.ok().flatten();
        if last_io.is_some() || committed.is_some() {
            *lock(&self.inner.write_error) = last_io;
        }
        if let Some(version) = committed {
            self.inner.commits.fetch_add(1, Ordering::AcqRel);
            self.inner.version.fetch_max(version, Ordering::AcqRel);
            self.renew_reserve();
        }
    }

    /// Frees the reserve file's room; `false` when it was not there.
    fn release_reserve(&self) -> bool {
        let reserve = safety::Files::of(&self.inner.dir).reserve;
        let removed = std::fs::remove_file(&reserve).is_ok();
        if removed {
            *lock(&self.inner.reserve_released) = Some(Instant::now());
        }
        removed
    }

    /// Writes the reserve file again once the disk has room (tried at most
    /// every [`RESERVE_RETRY`], after a successful write).
    fn renew_reserve(&self) {
        let mut released = lock(&self.inner.reserve_released);
        let Some(at) = *released else { return };
        if at.elapsed() < RESERVE_RETRY {
            return;
        }
        let reserve = safety::Files::of(&self.inner.dir).reserve;
        *released = if safety::make_reserve(&reserve) { None } else { Some(Instant::now()) };
    }

    /// [`Store::batch`] as a dry run (`dryRun=All`): every check runs and the
    /// results are the objects that would be stored (with the versions they
    /// would get), but the transaction is rolled back, so nothing is written
    /// and no watch sees an event.
    pub fn dry_run(&self, ops: Vec<Op>) -> Result<Vec<Stored>, StoreError> {
        self.writer().dry_run(ops)
    }

    /// One object, if it exists.
    pub fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        self.inner.readers.get(key)
    }

    /// Every namespace some object is in (unordered, each once): what a
    /// store written before namespaces were objects holds them as.
    pub fn namespaces_in_use(&self) -> Result<Vec<String>, StoreError> {
        self.inner.readers.namespaces()
    }

    /// Every object the selector covers, ordered by key, and the store
    /// version the list is consistent with (watch from it to follow on).
    pub fn list(&self, selector: &Selector) -> Result<(Vec<Stored>, u64), StoreError> {
        let page = self.inner.readers.page(selector, None, None, |_| true)?;
        Ok((page.items, page.version))
    }

    /// One page of a list: objects the selector covers whose key sorts after
    /// `after`, in key order, that `keep` accepts, at most `limit` of them.
    /// Only the rows a page needs are read (a range scan of the key index),
    /// so paging through a large collection costs one pass in all.
    pub fn list_page(
        &self,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        keep: impl FnMut(&Value) -> bool,
    ) -> Result<Page, StoreError> {
        self.inner.readers.page(selector, after, limit, keep)
    }

    /// [`Store::list_page`] without building the page: `head` gets the page's
    /// version and continue point before any row, then `row` gets each
    /// object's stored JSON text, one at a time, in one read snapshot. With
    /// `keep`, matching rows are found first (each parsed, tested and
    /// dropped), so memory stays at one object whatever the page's size. An
    /// error from a callback stops the scan and is returned. `keep.0`, when
    /// given, sees each object's stored text first (compact JSON, as
    /// `serde_json::to_string` writes it): false turns the row away without
    /// parsing it, which is most of what a selected list costs; without
    /// `keep.1` it alone decides.
    pub fn list_stream<E: From<StoreError>>(
        &self,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        keep: Option<Keep<'_>>,
        head: impl FnOnce(&ListHead) -> Result<(), E>,
        row: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        self.inner.readers.stream(selector, after, limit, keep, head, row)
    }

    /// Events with version > `from` that the selector covers: first the
    /// retained history, then live ones, without gap or duplicate. `Expired`
    /// when `from` is older than the history kept.
    pub fn watch(&self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        self.writer().watch(selector, from)
    }

    /// Ends every open watch stream (their receivers see the end); the store
    /// itself stays usable. For shutdown, when other clones may outlive it.
    pub fn close(&self) {
        self.writer().close_watches();
    }
}

/// A lock whose holder panicked is still good: the data it guards (a queue,
/// a slot, a message) is whole between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error a whole group failed with, for each of its batches.
fn same_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::Io(m) => StoreError::Io(m.clone()),
        other => StoreError::Io(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("v1", "ConfigMap", "default", name)
    }

    /// Writers that queue while the writer is busy are carried in one
    /// transaction, each batch still all or nothing on its own.
    #[test]
    fn batches_waiting_together_share_one_commit_and_stand_or_fall_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.create(map("taken")).unwrap();
        let before = (store.commits(), store.version());
        let mut events = store.watch(&Selector::all(), before.1).unwrap();
        // Holding the writer, as a long transaction would, while eight
        // writers queue behind it.
        let busy = store.writer();
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    let mut ops = vec![Op::Create(map(&format!("a-{i}"))), Op::Create(map(&format!("b-{i}")))];
                    if i == 3 {
                        // Fails on its second write: its first must not stand.
                        ops[1] = Op::Create(map("taken"));
                    }
                    if i == 5 {
                        return store.batch_kept(ops).map_err(|f| (f.error, f.ops.len()));
                    }
                    store.batch_shared(ops).map_err(|e| (e, 0))
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        while lock(&store.inner.queue).len() < 8 {
            assert!(Instant::now() < deadline, "the writers never queued");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(busy);
        let results: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(store.commits(), before.0 + 1, "eight queued batches, one transaction");
        for (i, result) in results.iter().enumerate() {
            let present = store.get(&key(&format!("a-{i}"))).unwrap().is_some();
            if i == 3 {
                assert!(matches!(result, Err((StoreError::AlreadyExists(k), 0)) if *k == key("taken")), "{result:?}");
                assert!(!present, "a failed batch's first write stood");
            } else {
                let written = result.as_ref().unwrap();
                assert_eq!(written.len(), 2);
                assert_eq!(written[1].resource_version, written[0].resource_version + 1);
                assert!(present);
            }
        }
        // Seven batches of two, with versions after one another and no gap
        // where the failed batch was rolled back.
        assert_eq!(store.version(), before.1 + 14);
        let mut seen = Vec::new();
        while let Ok(e) = events.events.try_recv() {
            seen.push(e.object.resource_version);
        }
        assert_eq!(seen, ((before.1 + 1)..=(before.1 + 14)).collect::<Vec<_>>());
        // A failing batch in a group of one is its own error, not the group's.
        let conflict = store.patch(&key("taken"), &json!({"data": {"x": "1"}}), Some(1_000));
        assert!(matches!(conflict, Err(StoreError::Conflict { .. })), "{conflict:?}");
        assert_eq!(store.commits(), before.0 + 1, "a refused lone write commits nothing");
        assert_eq!(store.write_error(), None);
    }
}
