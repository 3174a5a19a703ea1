//! The store's vocabulary: object keys, stored objects and their versions,
//! watch events, selectors, list pages, batched operations and errors.

use serde_json::Value;

/// How a full disk reads in a [`StoreError::Io`] message.
pub(crate) const DISK_FULL: &str = "the disk is full";

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

/// A batch that failed, with its ops given back for a caller that then
/// tries them one by one (see [`crate::Backend::batch_or_back`]).
#[derive(Debug)]
pub struct Failed {
    pub error: StoreError,
    pub ops: Vec<Op>,
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

/// What a streamed list keeps ([`Store::list_stream`]): a test on an
/// object's stored text, which turns it away unparsed, then one on the
/// parsed object (none: the text test decides alone).
pub type Keep<'a> = (Option<&'a dyn Fn(&str) -> bool>, Option<&'a mut dyn FnMut(&serde_json::Value) -> bool>);

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
