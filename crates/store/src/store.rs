//! [`Store`]: the SQLite file, opened safely (one owner, a schema it knows,
//! a reserve against a full disk), its writes, reads, lists and watches.

use crate::seal::Sealer;
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
    /// The last committed version, readable without the lock.
    version: AtomicU64,
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
                version: AtomicU64::new(version),
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
        self.inner.write_error.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// An online backup of this store into `out` ([`backup`]).
    pub fn backup_to(&self, out: &Path) -> Result<u64, StoreError> {
        backup::backup(&self.inner.dir, out)
    }

    fn writer(&self) -> MutexGuard<'_, sqlite::Writer> {
        // A panic while holding the lock cannot leave SQLite half-written
        // (the transaction rolls back when dropped), so the writer stays usable.
        self.inner.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The version of the last committed write (0 for an empty store).
    pub fn version(&self) -> u64 {
        self.inner.version.load(Ordering::Acquire)
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

    /// All writes in one transaction (one fsync): all take effect or none
    /// does (the first failure is returned). Each write gets its own version.
    pub fn batch(&self, ops: Vec<Op>) -> Result<Vec<Stored>, StoreError> {
        Ok(self.batch_shared(ops)?.into_iter().map(Arc::unwrap_or_clone).collect())
    }

    /// [`Store::batch`] returning the results as shared with the watch
    /// events, without a copy (for writers that keep them, like a cache).
    pub fn batch_shared(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, StoreError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut writer = self.writer();
        // Deletions are how space is freed through the API: when the disk is
        // full they get the reserve file's room and are tried once more.
        let retry = ops.iter().all(|op| matches!(op, Op::Delete { .. })).then(|| ops.clone());
        let mut result = writer.write(ops);
        if let (Err(e), Some(ops)) = (&result, retry) {
            if e.is_disk_full() && self.release_reserve() {
                result = writer.write(ops);
            }
        }
        drop(writer);
        self.written(result)
    }

    /// [`Store::batch_shared`] that gives the ops back when the transaction
    /// fails, without a copy of them kept for that case: only the objects
    /// stored whole (creates, updates, applies) are copied, not the patches.
    pub fn batch_kept(&self, ops: Vec<Op>) -> Result<Vec<Arc<Stored>>, Box<Failed>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut writer = self.writer();
        let mut result = writer.write_borrowed(&ops);
        if let Err(e) = &result {
            if ops.iter().all(|op| matches!(op, Op::Delete { .. })) && e.is_disk_full() && self.release_reserve() {
                result = writer.write_borrowed(&ops);
            }
        }
        drop(writer);
        self.written(result).map_err(|error| Box::new(Failed { error, ops }))
    }

    /// Records a transaction's outcome: the write error shown by `/readyz`,
    /// the store's version, the reserve file.
    fn written(&self, result: Result<(Vec<Arc<Stored>>, u64), StoreError>) -> Result<Vec<Arc<Stored>>, StoreError> {
        let mut error = self.inner.write_error.lock().unwrap_or_else(PoisonError::into_inner);
        match &result {
            Ok(_) => *error = None,
            Err(e @ StoreError::Io(_)) => *error = Some(e.to_string()),
            Err(_) => {}
        }
        drop(error);
        let (out, version) = result?;
        self.inner.version.store(version, Ordering::Release);
        self.renew_reserve();
        Ok(out)
    }

    /// Frees the reserve file's room; `false` when it was not there.
    fn release_reserve(&self) -> bool {
        let reserve = safety::Files::of(&self.inner.dir).reserve;
        let removed = std::fs::remove_file(&reserve).is_ok();
        if removed {
            *self.inner.reserve_released.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        }
        removed
    }

    /// Writes the reserve file again once the disk has room (tried at most
    /// every [`RESERVE_RETRY`], after a successful write).
    fn renew_reserve(&self) {
        let mut released = self.inner.reserve_released.lock().unwrap_or_else(PoisonError::into_inner);
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
