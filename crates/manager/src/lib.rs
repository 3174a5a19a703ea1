//! The controller manager of ringleader: the job controller, the scheduler
//! and the node lifecycle run as one watch-driven loop over the store. It
//! owns no logic of its own beyond wiring: the pure `controller` and
//! `scheduler` crates decide, this crate observes (a cache fed by the
//! store's watch, rebuilt from a list at start, so a restart resumes where
//! the store stands) and writes their decisions back as store batches.
//! Who writes which field is in `docs/control-plane.md`.

pub mod cache;
pub mod config;
pub mod control_loop;
pub mod deployments;
pub mod dirty;
pub mod disruption;
pub mod endpoints;
pub mod error;
pub mod events;
pub mod hot_reset;
pub mod invalid;
pub mod job_object;
mod job_services;
pub mod jobs;
pub mod mindie;
pub mod namespaces;
pub mod node_model;
pub mod node_view;
pub mod nodes;
pub mod placement;
pub mod platform;
pub mod pods;
pub mod ports;
pub mod schedule;
pub mod schedule_pass;
pub mod service_accounts;
pub mod taints;
pub mod writes;

pub use config::{Heartbeat, LatencyObserver, ManagerConfig, ObjectObserver, Observed, ScheduleObserver};
pub use control_loop::{pass, pass_dirty, run};
pub use dirty::Dirty;
pub use error::ManagerError;
