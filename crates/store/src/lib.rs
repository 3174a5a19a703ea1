//! The durable object store of ringleader: Kubernetes-shaped JSON objects in
//! one SQLite file (WAL) keyed by apiVersion/kind/namespace/name, with a
//! cluster-wide monotonically increasing resourceVersion, optimistic
//! concurrency, JSON merge patches, batched transactions, key-ordered paged
//! lists and a resumable watch. A write returns only once its transaction is durable
//! (`synchronous=FULL`). See `docs/control-plane.md` for who writes what.
//!
//! The crate owns the file `<dir>/store.sqlite` and everything in it: the
//! objects, the version counter and the event history that watches replay;
//! beside it `store.open`, `store.lock` and `store.reserve` (the `safety`
//! module: a store that would lose data quietly is refused at open).
//! [`backup`] and [`restore`] copy it online and put a copy back.
//! One process should own a data directory: versions stay consistent if a
//! second one writes, but its writes reach only its own watches.
//!
//! Semantics worth knowing when coding against it:
//! * a write that changes nothing (an update, apply or patch whose result
//!   equals the stored object) is no write: it returns the stored object with
//!   its current version and no event, as Kubernetes does;
//! * a patch cannot change `apiVersion`, `kind`, `metadata.namespace`,
//!   `metadata.name`, `metadata.uid`, `metadata.creationTimestamp` or
//!   `metadata.resourceVersion`: such members of a patch are ignored;
//! * a deletion's result and event carry the last state with the deletion's
//!   version (`resource_version` and `metadata.resourceVersion`);
//! * watches replay history from SQLite, so they resume across a reopen, as
//!   long as the version asked for is within the retained history
//!   ([`Options::history`] events).

mod backup;
mod clock;
pub mod cluster;
mod safety;
mod sqlite;
mod watch;

pub use backup::{backup, restore};
pub use cluster::Cluster;
pub use safety::{set_aside, DB_FILE, SCHEMA_VERSION};

/// RFC 7386 JSON merge patch (the `json-patch` crate's), as the store applies it.
pub use json_patch::merge as merge_patch;
pub use watch::Watch;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How a full disk reads in a [`StoreError::Io`] message.
const DISK_FULL: &str = "the disk is full";
/// Least time between attempts to write the reserve file again once released.
const RESERVE_RETRY: Duration = Duration::from_secs(10);

/// Identity of an object. `namespace` is `""` for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// `apiVersion`, e.g. `v1`, `batch.volcano.sh/v1alpha1`.
    pub api_version: String,
    /// `kind`, e.g. `Pod`.
    pub kind: String,
    /// `metadata.namespace`, `""` when absent.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// A key from its four parts.
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of an object (`apiVersion`, `kind`, `metadata.namespace`,
    /// `metadata.name`); an error naming the missing field otherwise.
    pub fn of(object: &Value) -> Result<ObjectKey, StoreError> {
        let field = |path: &[&str]| -> Option<String> {
            let mut v = object;
            for p in path {
                v = v.get(p)?;
            }
            v.as_str().map(str::to_string)
        };
        let missing = |f: &str| StoreError::Invalid(format!("{f}: required"));
        Ok(ObjectKey {
            api_version: field(&["apiVersion"]).ok_or_else(|| missing("apiVersion"))?,
            kind: field(&["kind"]).ok_or_else(|| missing("kind"))?,
            namespace: field(&["metadata", "namespace"]).unwrap_or_default(),
            name: field(&["metadata", "name"]).filter(|n| !n.is_empty()).ok_or_else(|| missing("metadata.name"))?,
        })
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.kind, self.name)
        } else {
            write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// An object as stored. `object.metadata.resourceVersion` (a decimal string),
/// `metadata.uid` and `metadata.creationTimestamp` (RFC 3339) are set by the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Its key.
    pub key: ObjectKey,
    /// The version of its last write.
    pub resource_version: u64,
    /// The whole object.
    pub object: Value,
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated or patched.
    Modified,
    /// Deleted (the event carries the last state, with the deletion's version).
    Deleted,
}

impl EventType {
    /// `ADDED`, `MODIFIED`, `DELETED` as in a Kubernetes watch.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, in commit order; `object.resource_version` is the change's version.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// What happened.
    pub kind: EventType,
    /// The object after the change (before it, for a deletion); shared by
    /// every watch it goes to, so publishing does not copy it per watcher.
    pub object: std::sync::Arc<Stored>,
}

/// Which objects a list or watch covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// Only this apiVersion (`None`: all).
    pub api_version: Option<String>,
    /// Only this kind (`None`: all).
    pub kind: Option<String>,
    /// Only this namespace (`None`: all).
    pub namespace: Option<String>,
}

impl Selector {
    /// Every object.
    pub fn all() -> Selector {
        Selector::default()
    }

    /// Every object of one kind.
    pub fn kind(api_version: &str, kind: &str) -> Selector {
        Selector { api_version: Some(api_version.to_string()), kind: Some(kind.to_string()), namespace: None }
    }

    /// Narrowed to one namespace.
    pub fn in_namespace(mut self, namespace: &str) -> Selector {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Whether a key is covered.
    pub fn matches(&self, key: &ObjectKey) -> bool {
        self.api_version.as_ref().is_none_or(|v| *v == key.api_version)
            && self.kind.as_ref().is_none_or(|k| *k == key.kind)
            && self.namespace.as_ref().is_none_or(|n| *n == key.namespace)
    }
}

/// One page of a list ([`Store::list_page`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The objects, in key order.
    pub items: Vec<Stored>,
    /// The store version the page was read at.
    pub version: u64,
    /// The key to continue after, when rows remain past this page (they may
    /// all be filtered out by `keep`, as in Kubernetes).
    pub next: Option<ObjectKey>,
    /// How many rows the selector covers after this page, counted only when
    /// there is a next page and nothing was filtered out (counting is then
    /// one index scan; with a filter it would mean reading every object).
    pub remaining: Option<u64>,
}

/// What a streamed list knows before its first row ([`Store::list_stream`]):
/// the same `version`, `next` and `remaining` as a [`Page`]'s.
#[derive(Debug, Clone, PartialEq)]
pub struct ListHead {
    /// The store version the rows are read at.
    pub version: u64,
    /// The key to continue after, when rows remain past this page.
    pub next: Option<ObjectKey>,
    /// How many rows the selector covers after this page (as [`Page::remaining`]).
    pub remaining: Option<u64>,
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum Op {
    /// [`Store::create`].
    Create(Value),
    /// [`Store::update`].
    Update(Value),
    /// [`Store::apply`].
    Apply(Value),
    /// [`Store::patch`].
    Patch {
        /// Object.
        key: ObjectKey,
        /// RFC 7386 merge patch.
        patch: Value,
        /// Required current version, if any.
        expected: Option<u64>,
    },
    /// [`Store::delete`].
    Delete {
        /// Object.
        key: ObjectKey,
        /// Required current version, if any.
        expected: Option<u64>,
    },
}

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The object does not exist.
    #[error("{0} not found")]
    NotFound(ObjectKey),
    /// Create of an existing object.
    #[error("{0} already exists")]
    AlreadyExists(ObjectKey),
    /// The object changed since the version the caller read.
    #[error("{key}: the object has been modified (resourceVersion {expected} is stale, current is {actual}); read it again and retry")]
    Conflict {
        /// Object.
        key: ObjectKey,
        /// Version the caller expected.
        expected: u64,
        /// Version in the store.
        actual: u64,
    },
    /// A watch from a version older than the retained history.
    #[error(
        "resourceVersion {requested} is too old (expired): the oldest that can be watched from is {oldest}; list again"
    )]
    Expired {
        /// Version asked for.
        requested: u64,
        /// Oldest version a watch can start from.
        oldest: u64,
    },
    /// The object is not well-formed (message names the field).
    #[error("{0}")]
    Invalid(String),
    /// SQLite or file-system failure.
    #[error("store: {0}")]
    Io(String),
}

impl StoreError {
    /// A write failed for want of disk space (nothing of it was stored).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Io(m) if m.starts_with(DISK_FULL))
    }
}

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
        let writer = sqlite::Writer::open(&files.db, options.history)?;
        let version = writer.version()?;
        guard.mark_open()?;
        // Without room for it the store still opens: a full disk is for
        // readiness and the write errors to report, not a reason to stop.
        let reserved = safety::make_reserve(&files.reserve);
        Ok(Store {
            inner: Arc::new(Inner {
                readers: sqlite::Readers::new(files.db.clone()),
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
    /// error from a callback stops the scan and is returned.
    pub fn list_stream<E: From<StoreError>>(
        &self,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        keep: Option<&mut dyn FnMut(&Value) -> bool>,
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
