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
//! module: a store that would lose data quietly is refused at open) and
//! `encryption.key`, with which Secrets are encrypted at rest (`seal`).
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

mod backend;
mod backup;
mod clock;
pub mod cluster;
mod safety;
mod seal;
mod sqlite;
mod store;
mod types;
mod watch;

pub use backend::Backend;
pub use backup::{backup, restore};
pub use cluster::Cluster;
pub use safety::{set_aside, DB_FILE, SCHEMA_VERSION};
pub use seal::{Sealer, KEY_FILE as ENCRYPTION_KEY_FILE};

/// RFC 7386 JSON merge patch (the `json-patch` crate's), as the store applies it.
pub use json_patch::merge as merge_patch;
pub use store::{Options, Store};
pub use types::{Event, EventType, Failed, Keep, ListHead, ObjectKey, Op, Page, Selector, StoreError, Stored};
pub use watch::Watch;
