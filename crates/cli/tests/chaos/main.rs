//! Disk and process faults: a store that is empty or damaged, a disk that
//! fills, an agent or control plane killed under running pods, pods that
//! exceed their limits. Each module breaks one thing for real and asserts
//! the cluster neither stops nor loses what it acknowledged.

#[path = "../common/mod.rs"]
mod common;

mod adopt;
mod disk_full;
mod limits;
mod store;
