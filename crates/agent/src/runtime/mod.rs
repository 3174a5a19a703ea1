//! The three ways a pod runs: as a process group ([`process`]) under its
//! [`shim`], sandboxed ([`isolate`], [`pod_init`]) or not; as a container
//! of a CRI runtime ([`cri`], its log copied by [`cri_log`], its ends learnt by
//! [`cri_relist`]); or as a timer
//! ([`sim`]).

pub mod cdi;
pub mod cgroup;
pub mod cri;
pub mod cri_log;
pub mod cri_relist;
pub mod cri_stats;
pub mod cri_volumes;
pub mod eviction;
pub mod image_gc;
pub mod isolate;
pub mod launch;
pub mod limits;
pub mod log_file;
mod memfd;
pub mod node_limits;
pub mod pod_init;
pub mod process;
pub mod shim;
pub mod sim;
